"""Audits of the multiparty classifiers (004 Alg. 1 and the local-aggregation baseline).

The real mechanism passes (eps_lower <= claimed epsilon at 95 % confidence) and a copy
with a quarter of every noise (rho, eta and the output noise) is caught.
"""

import warnings

import numpy as np
import pytest

from dperm import LocalAggregationClassifier, PSGDClassifier
from dperm.audit import ScaledNoiseGenerator, audit

RUNS = 1200


def _shards(flip_canary):
    """Two parties of 10 rows in 1-D; the canary is the last row of party 0."""
    rng = np.random.default_rng(0)
    shards = []
    for _ in range(2):
        X = rng.uniform(-1, 1, size=(10, 1))
        y = np.where(X[:, 0] > 0, 1, 0)
        shards.append([X, y])
    shards[0][0][-1] = [1.0]  # on the norm bound
    shards[0][1][-1] = 0 if flip_canary else 1
    return [tuple(shard) for shard in shards]


def _run(make_model, flip_canary, noise_factor):
    shards = _shards(flip_canary)

    def run(rng):
        noise = rng if noise_factor == 1 else ScaledNoiseGenerator(rng, noise_factor)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make_model(noise).fit(shards)
        return float(model.decision_function(np.array([[1.0]]))[0])
    return run


def _local_aggregation(noise):
    return LocalAggregationClassifier(epsilon=1.0, alpha=5.0, loss="huber", random_state=noise)


def _psgd(noise):
    return PSGDClassifier(epsilon=3.0, delta=0.05, alpha=5.0, n_rounds=20, loss="huber",
                          random_state=noise)


@pytest.mark.parametrize("make_model,epsilon,delta", [(_local_aggregation, 1.0, 0.0), (_psgd, 3.0, 0.05)],
                         ids=["local_aggregation", "psgd"])
def test_multiparty_mechanisms_pass_and_under_noised_copies_are_caught(make_model, epsilon, delta):
    honest = audit(_run(make_model, False, 1), _run(make_model, True, 1), None, epsilon, delta,
                   n_runs=RUNS, random_state=1)
    assert honest.passed, honest.summary()
    weak = audit(_run(make_model, False, 0.25), _run(make_model, True, 0.25), None, epsilon, delta,
                 n_runs=RUNS, random_state=2)
    assert not weak.passed and weak.eps_lower > epsilon, weak.summary()
