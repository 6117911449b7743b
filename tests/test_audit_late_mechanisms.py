"""Audits of the mechanisms that wrap others: kernel models (003 Alg. 3) and private prediction.

Same standard as tests/test_audit.py: the real mechanism passes (eps_lower <= claimed
epsilon at 95 % confidence) and a copy with a quarter of the noise is caught.
"""

import warnings

import numpy as np
import pytest

from dperm import PrivateKernelSVC, PrivatePredictor, RandomFourierFeatures
from dperm.audit import ScaledNoiseGenerator, audit

EPSILON = 1.0
RUNS = 1500


def _pair(seed=0, n=20, canary=None):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 1))
    y = np.where(X[:, 0] > 0, 1, -1)
    canary = np.array([0.05]) if canary is None else np.asarray(canary, dtype=float)
    X[-1] = canary
    y_prime = y.copy()
    y_prime[-1] = -y[-1]  # D' replaces the last record by the same point with the other label
    return X, y, y_prime, canary


FEATURE_SEED = 12345


def _strongest_kernel_canary():
    """The input whose (public, fixed) random features have the largest norm, near sqrt(2).

    The margin statistic shifts by ``2 ||v(x_c)||^2 / (n alpha)`` against noise of scale
    ``||v(x_c)|| S / epsilon``, so the audit is sharpest where ``||v(x_c)||`` is largest.
    """
    grid = np.linspace(-1, 1, 4001)[:, None]
    features = RandomFourierFeatures(n_components=2, gamma=1.0, random_state=FEATURE_SEED).fit(grid)
    return grid[np.argmax(np.linalg.norm(features.transform(grid), axis=1))]


def _kernel_run(X, y, canary, noise_factor):
    def run(rng):
        noise = rng if noise_factor == 1 else ScaledNoiseGenerator(rng, noise_factor)
        model = PrivateKernelSVC(loss="huber", mechanism="output", epsilon=EPSILON, alpha=5.0,
                                 n_components=2, gamma=1.0, feature_random_state=FEATURE_SEED,
                                 random_state=noise)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y)
        return float(model.decision_function(canary[None])[0])
    return run


def _prediction_run(X, y, canary, noise_factor):
    def run(rng):
        noise = rng if noise_factor == 1 else ScaledNoiseGenerator(rng, noise_factor)
        predictor = PrivatePredictor(epsilon_total=EPSILON, epsilon_per_query=EPSILON, loss="hinge",
                                     alpha=2.0, gamma=1.0, random_state=noise)
        return float(predictor.fit(X, y).decision_function(canary[None])[0])
    return run


@pytest.mark.parametrize("make_run", [_kernel_run, _prediction_run], ids=["kernel", "prediction"])
def test_late_mechanisms_pass_and_under_noised_copies_are_caught(make_run):
    canary = _strongest_kernel_canary() if make_run is _kernel_run else None
    X, y, y_prime, canary = _pair(canary=canary)
    honest = audit(make_run(X, y, canary, 1), make_run(X, y_prime, canary, 1), None, EPSILON,
                   n_runs=RUNS, random_state=1)
    assert honest.passed, honest.summary()
    weak = audit(make_run(X, y, canary, 0.25), make_run(X, y_prime, canary, 0.25), None, EPSILON,
                 n_runs=RUNS, random_state=2)
    assert not weak.passed and weak.eps_lower > EPSILON, weak.summary()
