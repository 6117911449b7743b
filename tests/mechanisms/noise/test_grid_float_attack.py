"""Floating-point attacks (Mironov 2012) by exact replay against every noise sampler.

An observer who knows every record but one can compute the un-noised value
under each hypothesis ``D`` and ``D'``. With a float sampler the set of outputs
a hypothesis can produce is a sparse, irregular set of floats; replaying the
sampler's float computation tells whether an observed output is *possible* under
``D``. An output drawn under ``D'`` that is impossible under ``D`` identifies
``D'`` with certainty: no epsilon holds. dperm's grid samplers release
``g * integer`` whose support is the whole grid under every hypothesis.
"""

import math
import struct

import numpy as np
import pytest

from dperm.mechanisms.noise import discrete_laplace_calibration, release_on_grid
from dperm.mechanisms.prediction import answer_queries, prediction_noise_calibration

N_DRAWS = 20000


def _float_key(x: float) -> int:
    """An integer that orders floats like their values (for a binary search over floats)."""
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _from_key(key: int) -> float:
    bits = key if key >= 0 else (-key) | (1 << 63)
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _noise_interval(observed: float, value: float) -> tuple[float, float]:
    """All floats ``n`` with ``value + n == observed`` in float arithmetic (a contiguous range)."""
    centre = _float_key(observed - value)
    bounds = []
    for direction in (-1, 1):
        inside, outside = centre, centre + direction
        while value + _from_key(outside) == observed:  # exponential search outwards
            inside, outside = outside, centre + 2 * (outside - centre)
        while abs(outside - inside) > 1:  # then bisect the boundary
            middle = (inside + outside) // 2
            if value + _from_key(middle) == observed:
                inside = middle
            else:
                outside = middle
        bounds.append(_from_key(inside))
    return bounds[0], bounds[1]


def _laplace_draw_index(noise: float, scale: float) -> int:
    """``k`` with ``U = k 2^-53`` that numpy maps near ``noise`` (the inverse of its formula)."""
    u = math.exp(noise / scale) / 2 if noise <= 0 else 1 - math.exp(-noise / scale) / 2
    return round(u * 2.0**53)


def _possible_under_numpy_laplace(observed: float, value: float, scale: float) -> bool:
    """Replay ``value + Generator.laplace(0, scale)`` exactly: can it output ``observed``?

    numpy draws ``U = k 2^-53`` and returns ``scale log(U + U)`` for ``U < 1/2``
    and ``-scale log((2 - U) - U)`` otherwise (numpy's ``random_laplace``); the
    answer is the float sum. The map from ``k`` to the noise is monotone, so
    only the ``k`` between the inverses of the feasible noise interval are tried.
    """
    low, high = _noise_interval(observed, value)
    first = max(_laplace_draw_index(low, scale) - 4, 1)
    last = min(_laplace_draw_index(high, scale) + 4, 2**53 - 1)
    for k in range(first, last + 1):
        draw = k / 2.0**53
        noise = scale * math.log(draw + draw) if draw < 0.5 else -scale * math.log(2.0 - draw - draw)
        if value + noise == observed:
            return True
    return False


def _possible_on_grid(observed: float, value: float, step: float) -> bool:
    """The grid mechanism's support under any value: every ``g * integer`` below ``2**53 g``."""
    steps = observed / step
    return steps == math.floor(steps) and abs(steps) < 2**53


def test_the_replay_attack_finds_impossible_answers_of_numpy_laplace():
    """The attack works: the old float sampler gives itself away on a large share of draws."""
    rng = np.random.default_rng(0)
    value_d, value_d_prime, scale = 0.5, 0.5 + 0.37, 0.74
    draws = value_d_prime + rng.laplace(0.0, scale, size=2000)
    impossible = sum(not _possible_under_numpy_laplace(o, value_d, scale) for o in draws)
    assert impossible / draws.size > 0.2
    # and the replay is exact: every draw is possible under the value it was drawn from
    assert all(_possible_under_numpy_laplace(o, value_d_prime, scale) for o in draws[:200])


def test_private_prediction_answers_are_never_impossible_under_a_neighbour():
    sensitivity, epsilon = 0.37, 0.5
    value_d, value_d_prime = 0.5, 0.5 + sensitivity
    calibration = prediction_noise_calibration(sensitivity, epsilon)
    answers = answer_queries(np.full(N_DRAWS, value_d_prime), calibration, np.random.default_rng(1))
    impossible = sum(not _possible_on_grid(o, value_d, calibration.step) for o in answers)
    assert impossible == 0
    # sanity: the replay rejects off-grid outputs
    assert not _possible_on_grid(answers[0] + calibration.step / 3, value_d, calibration.step)


@pytest.mark.parametrize("dimension", [1, 4])
def test_vector_releases_are_never_impossible_under_a_neighbour(dimension):
    """Output perturbation and AMP's output stage: released coordinates all lie on the grid."""
    sensitivity = 0.05
    calibration = discrete_laplace_calibration(sensitivity, dimension, 1.0)
    centre_d_prime = np.linspace(-0.3, 0.7, dimension) + sensitivity / math.sqrt(dimension)
    rng = np.random.default_rng(2)
    draws = [release_on_grid(centre_d_prime, calibration, rng) for _ in range(N_DRAWS // dimension)]
    impossible = sum(not _possible_on_grid(o, 0.0, calibration.step) for draw in draws for o in draw)
    assert impossible == 0


@pytest.mark.parametrize("mechanism,delta", [("output", 0.0), ("objective", 0.0),
                                             ("gaussian_objective", 1e-5)])
def test_estimator_coefficients_lie_on_the_released_grid(mechanism, delta):
    from dperm import PrivateLogisticRegression

    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    model = PrivateLogisticRegression(epsilon=1.0, delta=delta, mechanism=mechanism,
                                      random_state=4).fit(X, y)
    record = model.privacy_
    grid = record.noise_grid if mechanism == "output" else record.output_grid
    released = np.append(model.coef_.ravel(), model.intercept_ / 1.0)
    steps = released / grid
    np.testing.assert_array_equal(steps, np.round(steps))


def test_psgd_party_round_releases_lie_on_the_round_grid():
    """004's scheme: every round a party releases its gradient sum on the grid (exact integer noise)."""
    from dperm.losses import get_loss
    from dperm.multiparty import calibrate_psgd
    from dperm.multiparty.privacy import round_noise_calibration
    from dperm.multiparty.protocol import Party

    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3)) / 3
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    loss = get_loss("logistic")
    calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.1, n_samples=80, n_parties=2,
                                 n_features=3, n_rounds=2000, loss=loss, data_norm=1.0)
    party = Party(X, y, loss=loss, random_state=6, max_epsilon=1e6, max_delta=0.5, max_rounds=2000)
    party.setup(calibration)
    grid = round_noise_calibration(1.0, loss.lipschitz, 1.0, 3)
    coef = np.array([0.3, -0.1, 0.2])
    draws = [party._release_round(party.local_gradient(coef)) for _ in range(2000)]
    steps = np.array(draws) / grid.step
    np.testing.assert_array_equal(steps, np.round(steps))
    # the replay finds no output of a neighbour's gradient impossible under D
    impossible = sum(not _possible_on_grid(o, 0.0, grid.step) for draw in draws for o in draw)
    assert impossible == 0


def test_local_aggregation_release_lies_on_its_grid():
    from dperm.multiparty import LocalAggregationClassifier

    rng = np.random.default_rng(7)
    shards = []
    for _ in range(3):
        X = rng.normal(size=(60, 3)) / 3
        shards.append((X, (X[:, 0] > 0).astype(int)))
    model = LocalAggregationClassifier(epsilon=1.0, alpha=0.1, classes=[0, 1], random_state=8).fit(shards)
    steps = model.coef_.ravel() / model.privacy_.noise_grid
    np.testing.assert_array_equal(steps, np.round(steps))
