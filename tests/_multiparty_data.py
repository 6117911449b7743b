"""Shared test data for the multiparty tests: rows in the unit ball, split into shards."""

import numpy as np


def make_data(n=300, d=4, seed=1, noise=0.3):
    """Rows in the unit ball, labels from a noisy linear rule."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ rng.normal(size=d) + noise * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def split(X, y, sizes):
    """Consecutive shards of the given sizes."""
    bounds = np.cumsum((0,) + tuple(sizes))
    return [(X[a:b], y[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
