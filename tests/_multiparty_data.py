"""Shared test data for the multiparty tests: rows in the unit ball, split into shards, written as a
party's CSV file; the vectors of a secure sum."""

import csv

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


def write_shard(path, X, y, header=None):
    """A party's CSV shard: ``x0..x{d-1},label`` (or ``header``), exact floats, labels as 0/1."""
    header = header or [f"x{j}" for j in range(X.shape[1])] + ["label"]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row, label in zip(X, y):
            writer.writerow([repr(float(v)) for v in row] + [int(label > 0)])  # labels as 0/1
    return path


def plain_vectors(n_parties=4, dimension=50, low=-7.0, high=7.0, seed=0):
    """``{"p0": v0, ...}``: one uniform vector per party, the inputs of a secure sum."""
    rng = np.random.default_rng(seed)
    return {f"p{k}": rng.uniform(low, high, size=dimension) for k in range(n_parties)}
