"""Tests of the engine-free multiparty protocols (004 Alg. 1, Procs. 2-3, eq. 5)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone

from dperm.exceptions import DataClippingWarning
from dperm.losses import get_loss
from dperm.mechanisms.noise import discrete_laplace_calibration
from dperm.multiparty import (
    CalibrationRefusedError,
    DropoutError,
    GradientSumNetwork,
    InProcessNetwork,
    LocalAggregationClassifier,
    MalformedReplyError,
    MaskedAggregator,
    MaskedSecureSum,
    Party,
    PartyUnavailableError,
    PSGDClassifier,
    SecureSum,
    SecureSumClippingWarning,
    SecureSumReport,
    calibrate_coordinator_gaussian,
    calibrate_psgd,
    coordinator_view_guarantee,
    gaussian_rounds_epsilon,
    local_aggregation_sensitivity,
    psgd,
)
from dperm.multiparty.protocol import psgd_clipping_range
from dperm.multiparty.secure_sum import pairwise_masks, quantize
from dperm.privacy.accounting import Spend, advanced_composition
from dperm.privacy.sensitivity import gaussian_objective_sigma, objective_perturbation_slack
from dperm.solvers import RegularizedERMObjective, minimize_certified
from tests._multiparty_data import make_data, plain_vectors, split

LOGISTIC = get_loss("logistic")
#: A floor loose enough for every run below (the floor itself is tested with tight ones).
LOOSE_FLOOR = {"max_epsilon": 1e4, "max_delta": 0.1, "max_rounds": 10_000}


def make_parties(shards, party_class=Party, seed=100, data_norm=1.0, floor=None):
    return [
        party_class(X, y, loss=LOGISTIC, data_norm=data_norm, party_id=k, random_state=seed + k,
                    **(floor or LOOSE_FLOOR))
        for k, (X, y) in enumerate(shards)
    ]


class QuietParty(Party):
    """Test only: rho_t^k = 0, so PSGD is deterministic gradient descent on GOP's objective."""

    def _release_round(self, gradient):
        return gradient


class RecordingAggregator(MaskedAggregator):
    """Keeps every aggregator it builds, so a test can read each round's transcript."""

    instances: list = []

    def __init__(self, *args):
        super().__init__(*args)
        RecordingAggregator.instances.append(self)


@pytest.fixture
def recording_aggregator():
    RecordingAggregator.instances = []
    return RecordingAggregator


# -- secure sum ------------------------------------------------------------------------


def test_secure_sum_equals_plain_sum_within_quantisation_bound():
    vectors = plain_vectors()
    engine = MaskedSecureSum(clipping_range=8.0, quantization_range=2**10, random_state=1)
    total, report = engine.sum(vectors, dimension=50)
    error = np.abs(total - sum(vectors.values()))
    bound = 4 * 2 * 8.0 / 2**10  # K * 2C / Q: each party's rounding moves it < one grid step
    assert report.error_bound == pytest.approx(bound)
    assert report.coordinates_clipped == 0
    assert error.max() < bound
    assert error.max() > 0  # the grid is coarse enough that rounding is visible


def test_stochastic_rounding_is_unbiased():
    vectors = plain_vectors(n_parties=3, dimension=20)
    engine = MaskedSecureSum(clipping_range=8.0, quantization_range=2**8, random_state=2)
    errors = np.array([engine.sum(vectors, 20)[0] - sum(vectors.values()) for _ in range(400)])
    step = 2 * 8.0 / 2**8
    # per-coordinate error has mean 0 and std <= sqrt(3) * step / 2; 400 repeats
    assert np.abs(errors.mean(axis=0)).max() < 5 * math.sqrt(3) * step / 2 / math.sqrt(400)


def test_clipping_is_counted_and_the_sum_is_of_clipped_values():
    vectors = {"a": np.array([10.0, -0.5, -20.0]), "b": np.array([1.0, 9.0, 0.0])}
    engine = MaskedSecureSum(clipping_range=8.0, random_state=3)
    total, report = engine.sum(vectors, 3)
    assert report.coordinates_clipped == 3
    expected = np.clip(vectors["a"], -8, 8) + np.clip(vectors["b"], -8, 8)
    assert np.abs(total - expected).max() < report.error_bound


def test_pairwise_masks_cancel_and_hide_each_input():
    rng = np.random.default_rng(4)
    modulus = 2**32
    masks = pairwise_masks(["a", "b", "c", "d"], 30, modulus, rng)
    total = np.zeros(30, dtype=np.uint64)
    for mask in masks.values():
        total = (total + mask) % np.uint64(modulus)
    assert np.all(total == 0)
    assert all(np.any(mask != 0) for mask in masks.values())


def test_aggregator_receives_only_masked_vectors(recording_aggregator):
    vectors = plain_vectors(n_parties=3, dimension=40)
    quantization_range = 2**22
    engine = MaskedSecureSum(random_state=5, aggregator_factory=recording_aggregator)
    total, _ = engine.sum(vectors, 40)
    (aggregator,) = recording_aggregator.instances
    assert set(aggregator.received) == set(vectors)
    for party_id, masked in aggregator.received.items():
        # an unmasked encoding lies in [0, Q]; a masked one is uniform on [0, 2^32)
        assert masked.max() > quantization_range
        decoded_alone = masked.astype(float) * (16.0 / quantization_range) - 8.0
        assert np.abs(decoded_alone - vectors[party_id]).max() > 1.0
    modulus = np.uint64(2**32)
    masked_sum = np.zeros(40, dtype=np.uint64)
    for masked in aggregator.received.values():
        masked_sum = (masked_sum + masked) % modulus
    decoded = masked_sum.astype(float) * (16.0 / quantization_range) - 3 * 8.0
    assert np.allclose(decoded, total)


def test_dropout_aborts_the_round_and_reveals_nothing(recording_aggregator):
    vectors = plain_vectors(n_parties=3, dimension=40)
    vectors["p1"] = None  # dropped after the setup
    engine = MaskedSecureSum(random_state=6, aggregator_factory=recording_aggregator)
    with pytest.raises(DropoutError, match=r"2 of 3 parties.*nothing is revealed") as caught:
        engine.sum(vectors, 40)
    assert not any(isinstance(arg, np.ndarray) for arg in caught.value.args)
    (aggregator,) = recording_aggregator.instances
    assert set(aggregator.received) == {"p0", "p2"}
    # what the aggregator holds is useless: the survivors' masks do not cancel
    masked_sum = (aggregator.received["p0"] + aggregator.received["p2"]) % np.uint64(2**32)
    decoded = masked_sum.astype(float) * (16.0 / 2**22) - 2 * 8.0
    assert np.abs(decoded - (vectors["p0"] + vectors["p2"])).max() > 1.0


@pytest.mark.parametrize(
    "bad, message",
    [(np.zeros(3), r"party 'p1'.*shape \(3,\), expected \(40,\)"),
     (np.full(40, np.nan), r"party 'p1'.*non-finite"),
     ("garbage", r"party 'p1'.*not a numeric vector")],
)
def test_malformed_replies_are_rejected(bad, message):
    vectors = plain_vectors(n_parties=3, dimension=40)
    vectors["p1"] = bad
    with pytest.raises(MalformedReplyError, match=message):
        MaskedSecureSum(random_state=7).sum(vectors, 40)


def test_secure_sum_parameter_checks():
    with pytest.raises(ValueError, match="modulus_range"):
        MaskedSecureSum(quantization_range=2**22, modulus_range=2**23).sum(plain_vectors(3, 5), 5)
    with pytest.raises(ValueError, match="at least 2 parties"):
        MaskedSecureSum().sum({"a": np.zeros(2)}, 2)
    with pytest.raises(ValueError, match="clipping_range"):
        MaskedSecureSum(clipping_range=0.0)


def test_quantize_stays_on_the_grid():
    rng = np.random.default_rng(8)
    encoded, clipped = quantize(np.array([-8.0, 8.0, 0.0, 100.0]), 8.0, 16, rng)
    assert clipped == 1
    assert encoded.dtype == np.uint64 and encoded[0] == 0 and encoded[1] == 16 and encoded[3] == 16


# -- PSGD: calibration and convergence -------------------------------------------------


def psgd_setup(sizes, party_class=Party, epsilon=1.0, alpha=0.05, n_rounds=100, seed=100, **kwargs):
    X, y = make_data(n=sum(sizes))
    parties = make_parties(split(X, y, sizes), party_class, seed=seed)
    calibration = calibrate_psgd(epsilon=epsilon, delta=1e-5, alpha=alpha, n_samples=len(y),
                                 n_parties=len(sizes), n_features=X.shape[1], n_rounds=n_rounds,
                                 loss=LOGISTIC, data_norm=1.0, **kwargs)
    engine = MaskedSecureSum(clipping_range=psgd_clipping_range(calibration, sizes), random_state=5)
    return X, y, parties, calibration, engine


def gop_minimiser(X, y, parties, calibration):
    """Exact argmin of J(w) + eta.w/N + Delta/2 ||w||^2 with eta = sum_k eta^k (004 Alg. 4)."""
    eta = sum(party._one_time_noise for party in parties)
    objective = RegularizedERMObjective(LOGISTIC, X, y, calibration.strong_convexity, linear_term=eta)
    return minimize_certified(objective, tol=1e-10, max_iter=1000).coef


def test_calibration_reuses_compute_slack_and_sigma_star():
    calibration = calibrate_psgd(epsilon=0.4, delta=1e-5, alpha=0.01, n_samples=90, n_parties=3,
                                 n_features=4, n_rounds=10, loss=LOGISTIC, data_norm=2.0)
    slack = objective_perturbation_slack(0.4, 90, 0.01, 0.25, 2.0)
    assert slack.extra_regularization > 0  # this case exercises Delta
    assert calibration.epsilon_tilde == slack.epsilon_noise
    assert calibration.extra_regularization == slack.extra_regularization
    sigma = gaussian_objective_sigma(4, slack.epsilon_noise, 1e-5, 1.0, 2.0)
    assert calibration.noise_sigma == sigma
    assert calibration.party_noise_sigma == pytest.approx(sigma / math.sqrt(3 - 1))  # K - t, t = 1 by default
    assert calibration.round_sensitivity == 4.0  # 2 L R
    # float-safe 004 eq. 2: per-coordinate discrete Laplace for the L1 bound sqrt(d) 2 L R (+ d steps)
    grid = discrete_laplace_calibration(4.0, 4, 0.4)
    assert calibration.round_noise_scale == grid.noise_scale
    assert calibration.round_noise_scale == pytest.approx(math.sqrt(4) * 4.0 / 0.4, rel=2e-3)


@pytest.mark.parametrize("sizes, epsilon, alpha", [((50, 100, 150), 1.0, 0.05), ((20, 30, 40), 0.4, 0.01)])
def test_psgd_converges_to_gop_minimiser_without_round_noise(sizes, epsilon, alpha):
    errors = []
    for n_rounds in (100, 400, 1600):
        X, y, parties, calibration, engine = psgd_setup(sizes, QuietParty, epsilon, alpha, n_rounds)
        result = psgd(InProcessNetwork(parties, engine), calibration)
        target = gop_minimiser(X, y, parties, calibration)  # same eta: same seeds
        errors.append(np.linalg.norm(result.coef - target) / np.linalg.norm(target))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.01


@pytest.mark.slow  # many noisy PSGD runs: ~22 s on a loaded 2-core machine
def test_psgd_with_round_noise_approaches_gop_minimiser():
    X, y, parties, calibration, engine = psgd_setup((50, 100, 150), n_rounds=3000)
    result = psgd(InProcessNetwork(parties, engine), calibration)
    target = gop_minimiser(X, y, parties, calibration)
    assert np.linalg.norm(result.coef - target) < 0.02 * np.linalg.norm(target)
    assert result.record.gop_equivalent


# -- PSGD: what the coordinator sees ---------------------------------------------------


class SpyNetwork(GradientSumNetwork):
    """Instrumented transport: records everything handed to the coordinator."""

    def __init__(self, inner):
        self.inner = inner
        self.delivered = []

    n_samples_by_party = property(lambda self: self.inner.n_samples_by_party)
    n_features = property(lambda self: self.inner.n_features)

    def setup(self, calibration):
        self.inner.setup(calibration)

    def gradient_sum(self, coef, scale, round_index):
        answer = self.inner.gradient_sum(coef, scale, round_index)
        self.delivered.append(answer)
        return answer


def test_coordinator_path_never_receives_an_individual_vector(recording_aggregator):
    X, y, parties, calibration, _ = psgd_setup((30, 40, 50), n_rounds=20)
    engine = MaskedSecureSum(random_state=9, aggregator_factory=recording_aggregator)
    network = SpyNetwork(InProcessNetwork(parties, engine))
    psgd(network, calibration)
    assert len(network.delivered) == 20
    for total, report in network.delivered:  # one sum and its report per round, nothing else
        assert isinstance(report, SecureSumReport) and report.n_parties == 3
        assert total.shape == (4,)
    assert len(recording_aggregator.instances) == 20
    for aggregator in recording_aggregator.instances:
        assert set(aggregator.received) == {0, 1, 2}
        assert all(masked.max() > 2**22 for masked in aggregator.received.values())


class DroppingParty(Party):
    def noisy_gradient(self, coef):
        if self.rounds_answered == 3:
            raise PartyUnavailableError("offline")
        return super().noisy_gradient(coef)


class WrongDimensionParty(Party):
    def noisy_gradient(self, coef):
        return np.append(super().noisy_gradient(coef), 0.0)


class NaNParty(Party):
    def noisy_gradient(self, coef):
        reply = super().noisy_gradient(coef)
        reply[0] = np.nan
        return reply


def mixed_parties(bad_class, sizes=(30, 40, 50)):
    X, y = make_data(n=sum(sizes))
    shards = split(X, y, sizes)
    parties = make_parties(shards)
    parties[1] = bad_class(*shards[1], loss=LOGISTIC, party_id=1, random_state=1, **LOOSE_FLOOR)
    return X, parties


def run_psgd(parties, n_rounds=10):
    calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=120, n_parties=3,
                                 n_features=4, n_rounds=n_rounds, loss=LOGISTIC, data_norm=1.0)
    return psgd(InProcessNetwork(parties, MaskedSecureSum(random_state=0)), calibration)


def test_psgd_aborts_when_a_party_drops_out():
    _, parties = mixed_parties(DroppingParty)
    with pytest.raises(DropoutError, match=r"round 3: 2 of 3 parties .*missing: \[1\]"):
        run_psgd(parties)


@pytest.mark.parametrize("bad_class, message", [
    (WrongDimensionParty, r"round 0: party 1 replied with a vector of shape \(5,\), expected \(4,\)"),
    (NaNParty, r"round 0: party 1 replied with 1 non-finite"),
])
def test_psgd_rejects_malformed_replies(bad_class, message):
    _, parties = mixed_parties(bad_class)
    with pytest.raises(MalformedReplyError, match=message):
        run_psgd(parties)


def test_party_draws_eta_once_and_answers_at_most_n_rounds():
    X, y, parties, calibration, engine = psgd_setup((30, 40), n_rounds=2)
    party = parties[0]
    party.setup(calibration)
    eta = party._one_time_noise.copy()
    with pytest.raises(RuntimeError, match="one-time noise"):
        party.setup(calibration)
    assert np.array_equal(party._one_time_noise, eta)
    party.noisy_gradient(np.zeros(4))
    party.noisy_gradient(np.zeros(4))
    with pytest.raises(RuntimeError, match="n_rounds=2"):
        party.noisy_gradient(np.zeros(4))


def test_clipping_in_the_secure_sum_is_reported():
    X, y, parties, calibration, _ = psgd_setup((30, 40, 50), n_rounds=5)
    with pytest.warns(SecureSumClippingWarning, match="clipped"):
        result = psgd(InProcessNetwork(parties, MaskedSecureSum(clipping_range=1e-3, random_state=0)),
                      calibration)
    assert result.record.secure_sum.coordinates_clipped > 0
    assert result.record.secure_sum.sums_with_clipping == 5
    assert not result.record.gop_equivalent
    assert any("equivalence with GOP fails" in note for note in result.record.notes)


# -- PSGD: the privacy record ----------------------------------------------------------


def test_privacy_record_states_both_guarantees():
    X, y = make_data(n=120)
    model = PSGDClassifier(epsilon=0.5, delta=1e-6, alpha=0.05, n_rounds=40, round_epsilon=0.01,
                           composition_slack=1e-7, random_state=0).fit(split(X, y, (30, 40, 50)))
    record = model.privacy_
    assert (record.target_epsilon, record.target_delta) == (0.5, 1e-6)  # 004 Thm 4.2's, for the limit point
    assert (record.epsilon, record.delta) == (record.coordinator_epsilon, record.coordinator_delta)  # headline
    assert record.round_epsilon == 0.01
    assert record.coordinator_epsilon_basic == pytest.approx(40 * 0.01)
    assert record.coordinator_delta_basic == 0.0
    expected = advanced_composition([Spend(0.01, 0.0, "")] * 40, 1e-7)
    assert (record.coordinator_epsilon, record.coordinator_delta) == pytest.approx(expected)
    assert record.coordinator_composition == "advanced"
    assert record.coordinator_epsilon < record.coordinator_epsilon_basic
    assert record.composition_slack == 1e-7
    assert record.n_samples_by_party == (30, 40, 50)
    assert record.round_noise_scale == pytest.approx(math.sqrt(model.coef_.shape[1]) * 2.0 / 0.01, rel=2e-3)
    text = str(record)
    headline = text.splitlines()[0]
    assert headline.startswith(f"Released model (w_T after 40 rounds): ({record.epsilon:g}, 1e-07)-DP")
    assert "post-processing of the coordinator's view" in headline and "Thm 4.2" not in headline
    assert "Coordinator's view over 40 rounds" in text
    assert any(note.startswith("004 Thm 4.2") and "(0.5, 1e-06)-DP" in note and "not proven" in note
               for note in record.notes)
    assert record.to_dict()["secure_sum"]["n_sums"] == 40
    assert '"coordinator_epsilon"' in record.to_json()


def test_coordinator_view_uses_basic_composition_when_it_is_tighter():
    view = coordinator_view_guarantee(1.0, 5, 1e-5)
    assert (view.epsilon, view.delta, view.composition) == (5.0, 0.0, "basic")
    assert view.epsilon_basic == 5.0


# -- estimators ------------------------------------------------------------------------


def test_psgd_classifier_fits_predicts_and_is_reproducible():
    X, y = make_data(n=600, d=3, noise=0.0)
    labels = np.where(y > 0, "yes", "no")
    shards = split(X, labels, (100, 200, 300))
    model = PSGDClassifier(epsilon=1.0, alpha=0.05, n_rounds=500, random_state=3).fit(shards)
    assert list(model.classes_) == ["no", "yes"]
    assert model.coef_.shape == (1, 3) and model.n_features_in_ == 3
    assert model.score(X, labels) > 0.8
    again = clone(model).fit(shards)
    assert np.array_equal(again.coef_, model.coef_)


def test_clipped_rows_are_warned_by_their_party_and_not_released():
    X, y = make_data(n=120)
    X[0] *= 10.0
    with pytest.warns(DataClippingWarning, match="some rows"):
        model = PSGDClassifier(n_rounds=5, random_state=0).fit(split(X, y, (30, 40, 50)))
    assert "rows_clipped" not in model.privacy_.to_dict()
    assert "rows clipped" not in model.privacy_.summary()


def test_local_aggregation_sensitivity_uses_the_smallest_party():
    alpha, radius = 0.1, 1e-6
    sensitivity = local_aggregation_sensitivity((10, 200, 300), alpha, 1.0, 2.0, radius)
    assert sensitivity == pytest.approx((2 * 2.0 / (10 * alpha) + 2 * radius) / 3)
    larger_others = local_aggregation_sensitivity((10, 900, 900), alpha, 1.0, 2.0, radius)
    assert larger_others == pytest.approx(sensitivity)
    assert local_aggregation_sensitivity((5, 200, 300), alpha, 1.0, 2.0, radius) > sensitivity
    X, y = make_data(n=300)
    model = LocalAggregationClassifier(epsilon=1.0, alpha=alpha, tol=1e-8, random_state=0)
    model.fit(split(X, y, (20, 80, 200)))
    record = model.privacy_
    assert record.n_min == 20 and record.delta == 0.0
    assert record.sensitivity == pytest.approx((2.0 / (20 * alpha) + 2 * 1e-8 / alpha) / 3)
    # float-safe eq. 5: per-coordinate discrete Laplace for the L1 bound sqrt(d) S (+ d grid steps)
    d = model.coef_.shape[1]
    assert record.noise_scale == discrete_laplace_calibration(record.sensitivity, d, 1.0).noise_scale
    assert record.noise_scale == pytest.approx(math.sqrt(d) * record.sensitivity, rel=2e-3)
    assert record.noise_distribution == "discrete-laplace"
    assert record.coordinator_epsilon == 1.0
    assert record.tol == 1e-8 and record.solution_radius_allowance == pytest.approx(1e-8 / alpha)


def test_local_aggregation_releases_the_average_of_local_minimisers():
    X, y = make_data(n=300)
    shards = split(X, y, (50, 100, 150))
    alpha = 0.1
    model = LocalAggregationClassifier(epsilon=1e7, alpha=alpha, random_state=0).fit(shards)
    local = [minimize_certified(RegularizedERMObjective(LOGISTIC, Xk, yk, alpha), 1e-10, 1000).coef
             for Xk, yk in shards]
    assert np.abs(model.coef_.ravel() - np.mean(local, axis=0)).max() < 1e-4
    assert model.score(X, y) > 0.7


@pytest.mark.parametrize("params, shards_kind, message", [
    ({"epsilon": 0.0}, "ok", r"'epsilon' parameter of \w+ must be a float in the range \(0.0, inf\)"),
    ({"epsilon": -1.0}, "ok", r"'epsilon' parameter of \w+ must be a float in the range \(0.0, inf\)"),
    ({"epsilon": float("inf")}, "ok", r"'epsilon' parameter of \w+ must be a float in the range \(0.0, inf\)"),
    ({"delta": 0.0}, "ok", r"'delta' parameter of PSGDClassifier must be a float in the range \(0.0, 1.0\)"),
    ({"delta": 1.0}, "ok", r"'delta' parameter of PSGDClassifier must be a float in the range \(0.0, 1.0\)"),
    ({"delta": -0.1}, "ok", r"'delta' parameter of PSGDClassifier must be a float in the range \(0.0, 1.0\)"),
    ({"loss": "hinge"}, "ok", r"'loss' parameter of \w+ must be a str among"),
    ({}, "one", "at least 2 parties"),
    ({}, "empty", "shard 1 is empty"),
    ({}, "widths", "different numbers of features"),
    ({}, "single_class", "single class"),
    ({}, "three_classes", "exactly two classes"),
])
def test_bad_input_raises_value_error_naming_the_problem(params, shards_kind, message):
    X, y = make_data(n=60)
    shards = {
        "ok": split(X, y, (30, 30)),
        "one": [(X, y)],
        "empty": [(X, y), (X[:0], y[:0])],
        "widths": [(X, y), (X[:, :3], y)],
        "single_class": [(X[:10], np.ones(10)), (X[10:20], np.ones(10))],
        "three_classes": [(X[:10], np.arange(10) % 3), (X[10:20], np.ones(10))],
    }[shards_kind]
    with pytest.raises(ValueError, match=message):
        PSGDClassifier(n_rounds=3, random_state=0, **params).fit(shards)
    if "delta" not in params:
        with pytest.raises(ValueError, match=message):
            LocalAggregationClassifier(random_state=0, **params).fit(shards)


class ExactSum(SecureSum):
    """Test only: an engine without encoding, to check that any SecureSum plugs in."""

    name = "exact_for_tests"

    def sum(self, vectors_by_party, dimension, *, count_clipped=True):
        vectors = [np.asarray(v, dtype=float) for v in vectors_by_party.values()]
        report = SecureSumReport(self.name, len(vectors), dimension, 0.0, 0, 0, 0 if count_clipped else None, 0.0)
        return np.sum(vectors, axis=0), report


def test_any_secure_sum_engine_plugs_in_and_huber_loss_works():
    X, y = make_data(n=200, d=3, noise=0.0)
    model = PSGDClassifier(alpha=0.05, n_rounds=200, loss="huber", h=0.5, secure_sum=ExactSum(),
                           random_state=0).fit(split(X, y, (80, 120)))
    assert model.privacy_.secure_sum.engine == "exact_for_tests"
    assert model.privacy_.curvature == pytest.approx(1.0)  # c = 1 / (2h)
    assert model.score(X, y) > 0.7


# -- beyond 004: per-round Gaussian noise with an (epsilon, delta) coordinator view ----------

@pytest.fixture
def dp_accounting():
    """Google's dp-accounting (extra ``dperm[multiparty]``); the tests below skip without it."""
    return pytest.importorskip("dp_accounting")


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
@pytest.mark.parametrize("epsilon, delta, n_rounds", [
    (0.1, 0.05, 1000), (1.0, 1e-5, 200),
    pytest.param(4.0, 1e-6, 50, marks=pytest.mark.slow),  # PLD at delta 1e-6: ~20 s on a loaded machine
])
def test_calibrated_noise_spends_the_budget_per_dp_accounting(dp_accounting, accountant, epsilon, delta,
                                                              n_rounds):
    rounds = calibrate_coordinator_gaussian(epsilon, delta, n_rounds, accountant)
    z = rounds.noise_multiplier
    # dp-accounting itself, on a fresh accountant, says the view is (epsilon, delta)-DP, and barely
    fresh = (dp_accounting.pld.PLDAccountant() if accountant == "pld" else dp_accounting.rdp.RdpAccountant())
    spent = fresh.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), n_rounds))
    assert spent.get_epsilon(delta) <= epsilon
    assert rounds.epsilon == pytest.approx(spent.get_epsilon(delta))
    assert gaussian_rounds_epsilon(z * 0.99, n_rounds, delta, accountant) > epsilon  # 1 % less noise fails
    assert rounds.epsilon > 0.99 * epsilon


@pytest.mark.slow  # PLD calibrations over several round counts: ~15 s each on a loaded machine
@pytest.mark.parametrize("epsilon, delta", [(0.1, 0.05), (1.0, 1e-5)])
def test_pld_calibration_matches_the_exact_gaussian_mechanism(dp_accounting, epsilon, delta):
    """T Gaussian rounds with multiplier z are one Gaussian with z / sqrt(T) (Balle & Wang 2018)."""
    exact = dp_accounting.get_sigma_gaussian(epsilon, delta)
    for n_rounds in (1, 100, 2000):
        z = calibrate_coordinator_gaussian(epsilon, delta, n_rounds, "pld").noise_multiplier
        assert z / math.sqrt(n_rounds) == pytest.approx(exact, rel=2e-3)
        assert calibrate_coordinator_gaussian(epsilon, delta, n_rounds, "rdp").noise_multiplier >= z


@pytest.mark.parametrize("accountant", [pytest.param("pld", marks=pytest.mark.slow), "rdp"])  # pld: ~16 s loaded
def test_calibrated_noise_grows_with_the_number_of_rounds(dp_accounting, accountant):
    multipliers = [calibrate_coordinator_gaussian(0.5, 1e-5, n, accountant).noise_multiplier
                   for n in (1, 10, 100, 1000, 5000)]
    assert all(a < b for a, b in zip(multipliers, multipliers[1:]))
    ratios = [z / math.sqrt(n) for z, n in zip(multipliers, (1, 10, 100, 1000, 5000))]
    assert max(ratios) / min(ratios) < 1.5  # ~ sqrt(T): composition of Gaussians


def test_coordinator_dp_record_states_which_guarantee_holds(dp_accounting):
    X, y = make_data(n=120)
    model = PSGDClassifier(epsilon=0.5, delta=1e-5, alpha=0.05, n_rounds=40, coordinator_dp=True,
                           data_norm=2.0, random_state=0).fit(split(X, y, (30, 40, 50)))
    record = model.privacy_
    rounds = calibrate_coordinator_gaussian(0.5, 1e-5, 40, "pld")
    assert record.coordinator_dp and record.round_noise == "gaussian"
    assert (record.target_epsilon, record.target_delta) == (0.5, 1e-5)
    assert (record.epsilon, record.delta) == (record.coordinator_epsilon, 1e-5)  # the headline is the view's
    assert record.noise_multiplier == rounds.noise_multiplier
    assert record.round_sensitivity == 4.0  # 2 L R
    assert record.round_noise_sigma == pytest.approx(rounds.noise_multiplier * 4.0)
    assert record.round_noise_scale == pytest.approx(record.round_noise_sigma / math.sqrt(3 - 1))  # K - t
    assert record.coordinator_epsilon == pytest.approx(rounds.epsilon) and record.coordinator_epsilon <= 0.5
    assert (record.coordinator_delta, record.coordinator_composition) == (1e-5, "pld")
    assert record.round_epsilon == pytest.approx(rounds.round_epsilon) and record.round_delta == 1e-5 / 40
    assert record.coordinator_epsilon_basic == pytest.approx(40 * rounds.round_epsilon)
    assert record.coordinator_epsilon_basic > record.coordinator_epsilon
    assert record.noise_sigma == 0.0 and record.party_noise_sigma == 0.0 and record.extra_regularization == 0.0
    assert not record.gop_equivalent and "dp-accounting" in record.reference
    text = record.summary()
    assert "Coordinator's view over 40 rounds" in text and "PLD" in text
    assert text.splitlines()[0].startswith(f"Released model (w_T after 40 rounds): ({record.epsilon:g}, 1e-05)-DP")
    assert "post-processing of the coordinator's view" in text and "not 004 Thm 4.2" in text
    assert record.secure_sum.coordinates_clipped is None  # not covered by the accounting: not revealed
    assert "clipping is not counted" in text
    assert any("sigma / sqrt(K - t)" in note and "t = 1 colluding" in note for note in record.notes)
    assert json.loads(record.to_json())["coordinator_dp"] is True


def test_coordinator_dp_parties_draw_gaussian_round_noise_and_no_one_time_noise(dp_accounting):
    X, y, parties, calibration, _ = psgd_setup((30, 40, 50), n_rounds=10, coordinator_dp=True)
    assert calibration.round_noise == "gaussian" and calibration.n_parties == 3
    party = parties[0]
    party.setup(calibration)
    assert np.array_equal(party.one_time_noise, np.zeros(4))
    draws = np.array([party._round_noise() for _ in range(3000)]).ravel()
    scale = calibration.round_noise_scale
    assert stats.kstest(draws, "norm", args=(0.0, scale)).pvalue > 1e-3
    assert stats.kstest(draws, "laplace", args=(0.0, scale / math.sqrt(2))).pvalue < 1e-3  # power
    # any K - t = 2 parties' noise sums to N(0, sigma^2 I), sigma = z * 2 L R
    assert 2 * scale**2 == pytest.approx(calibration.round_noise_sigma**2)
    assert calibration.round_noise_sigma == pytest.approx(calibration.noise_multiplier * 2.0)


def test_coordinator_dp_learns_and_rejects_conflicting_options(dp_accounting):
    X, y = make_data(n=600, d=3, noise=0.0)
    shards = split(X, y, (100, 200, 300))
    model = PSGDClassifier(epsilon=2.0, delta=1e-5, alpha=0.05, n_rounds=300, coordinator_dp=True,
                           coordinator_accountant="rdp", random_state=1).fit(shards)
    assert model.score(X, y) > 0.8 and model.privacy_.coordinator_composition == "rdp"
    with pytest.raises(ValueError, match="round_epsilon.*coordinator_dp"):
        PSGDClassifier(n_rounds=5, coordinator_dp=True, round_epsilon=0.1, random_state=0).fit(shards)
    with pytest.raises(ValueError, match="'coordinator_accountant' parameter of PSGDClassifier must be a str among"):
        PSGDClassifier(n_rounds=5, coordinator_dp=True, coordinator_accountant="moments").fit(shards)
    with pytest.raises(ValueError, match="'coordinator_dp' parameter of PSGDClassifier must be an instance of 'bool'"):
        PSGDClassifier(n_rounds=5, coordinator_dp="yes").fit(shards)
    with pytest.raises(ValueError, match="composition_slack"):
        PSGDClassifier(n_rounds=5, coordinator_dp=True, composition_slack=1e-6, random_state=0).fit(shards)


def test_missing_dp_accounting_gives_a_clear_import_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "dp_accounting", None)
    with pytest.raises(ImportError, match=r"dperm\[multiparty\]"):
        gaussian_rounds_epsilon(10.0, 5, 1e-5)


# -- what is released: nothing computed from the rows (issue 14) ---------------------------


def neighbouring_shards(sizes=(30, 40, 50), index=45, seed=3):
    """D and D': party 1's row ``index`` is inside the unit ball in D and of norm 4 in D' (> data_norm)."""
    X, y = make_data(n=sum(sizes), seed=seed)
    X_prime = X.copy()
    X_prime[index] = np.full(X.shape[1], 2.0)  # norm 4: its party scales it onto R = 1
    assert np.linalg.norm(X[index]) <= 1.0
    return split(X, y, sizes), split(X_prime, y, sizes)


def released_besides_coef(model):
    """Every fitted attribute but the noised ``coef_``, with ``privacy_`` as its full dict."""
    released = {}
    for name, value in vars(model).items():
        if name.endswith("_") and not name.startswith("_") and name != "coef_":
            released[name] = value.to_dict() if name == "privacy_" else np.asarray(value).tolist()
    return released


@pytest.mark.parametrize("make_model", [
    lambda: PSGDClassifier(epsilon=1.0, alpha=0.05, n_rounds=30, round_epsilon=0.2, random_state=7),
    lambda: PSGDClassifier(epsilon=1.0, alpha=0.05, n_rounds=30, coordinator_dp=True, random_state=7),
    lambda: LocalAggregationClassifier(epsilon=1.0, alpha=0.1, random_state=7),
], ids=["psgd", "psgd_coordinator_dp", "local_aggregation"])
def test_neighbour_swap_changes_nothing_released_but_the_noised_coefficients(make_model):
    if make_model().get_params().get("coordinator_dp"):
        pytest.importorskip("dp_accounting")
    shards, shards_prime = neighbouring_shards()
    model = make_model().fit(shards)
    with pytest.warns(DataClippingWarning, match="some rows"):  # party 1's own log, on D' only
        model_prime = make_model().fit(shards_prime)
    assert released_besides_coef(model) == released_besides_coef(model_prime)
    assert set(released_besides_coef(model)) >= {"classes_", "intercept_", "n_features_in_", "privacy_"}
    assert model.privacy_.summary() == model_prime.privacy_.summary()
    assert not np.array_equal(model.coef_, model_prime.coef_)  # same noise, different data: the test can fail


def test_local_aggregation_record_holds_only_public_numbers():
    X, y = make_data(n=300)
    record = LocalAggregationClassifier(epsilon=1.0, alpha=0.1, tol=1e-6, random_state=0).fit(
        split(X, y, (50, 100, 150))).privacy_
    data = record.to_dict()
    assert not {"solution_radius", "certified", "rows_clipped"} & set(data)
    assert (data["tol"], data["solution_radius_allowance"]) == (1e-6, pytest.approx(1e-5))
    assert data["secure_sum"]["coordinates_clipped"] is None  # noise-free contributions: no count leaves
    assert "within r = 1e-05 of its minimiser" in record.summary()


def test_uncounted_clipping_stays_in_each_partys_log():
    vectors = {"a": np.array([10.0, 0.0, 0.0]), "b": np.array([0.0, -9.0, 20.0])}
    with pytest.warns(SecureSumClippingWarning) as caught:
        total, report = MaskedSecureSum(clipping_range=8.0, random_state=0).sum(vectors, 3, count_clipped=False)
    assert report.coordinates_clipped is None
    messages = sorted(str(w.message) for w in caught)
    assert messages[0].startswith("party 'a': the secure sum clipped 1 coordinate(s)")
    assert messages[1].startswith("party 'b': the secure sum clipped 2 coordinate(s)")
    assert np.abs(total - np.array([8.0, -8.0, 8.0])).max() < report.error_bound


# -- a party's own floor against a rogue coordinator ------------------------------------------

TIGHT_FLOOR = {"max_epsilon": 2.0, "max_delta": 1e-5, "max_rounds": 4}


def floor_setup(**calibration_kwargs):
    """Three parties with a tight floor and a calibration they accept: 4 rounds of 0.5 = 2-DP view."""
    X, y = make_data(n=120)
    parties = make_parties(split(X, y, (30, 40, 50)), floor=TIGHT_FLOOR)
    params = dict(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=120, n_parties=3, n_features=4, n_rounds=4,
                  loss=LOGISTIC, data_norm=1.0, round_epsilon=0.5)
    return parties, calibrate_psgd(**{**params, **calibration_kwargs})


def rogue(calibration, **changes):
    return dataclasses.replace(calibration, **changes)


@pytest.mark.parametrize("tamper, message", [
    (lambda c: rogue(c, round_noise_scale=c.round_noise_scale / 2), r"round_noise_scale=.* is smaller .*too little noise"),
    (lambda c: rogue(c, party_noise_sigma=c.party_noise_sigma * 0.9), r"party_noise_sigma=.*too little noise"),
    (lambda c: rogue(c, noise_sigma=c.noise_sigma / 10), r"noise_sigma=.*too little noise"),
    (lambda c: rogue(c, n_rounds=5), r"n_rounds=5 .*at most max_rounds=4"),
    (lambda c: floor_setup(epsilon=3.0)[1], r"targets \(3, 1e-05\)-DP .*max_epsilon=2"),
    (lambda c: floor_setup(delta=1e-4)[1], r"targets \(1, 0.0001\)-DP .*max_delta=1e-05"),
    # consistent noise for a larger round_epsilon: the view, 4 x 2 = 8-DP, is what the party refuses
    (lambda c: floor_setup(round_epsilon=2.0)[1], r"view over its 4 rounds.*\(8, 0\)-DP by basic .*max_epsilon=2"),
    (lambda c: rogue(c, epsilon_tilde=c.epsilon_tilde * 2), r"epsilon_tilde=.* differs"),
    (lambda c: rogue(c, lipschitz=0.5), r"lipschitz=0.5 differs from 1.0"),
    (lambda c: rogue(c, n_samples=51), r"N=51 over K=3 parties cannot include this party's 50 rows"),
    (lambda c: rogue(c, n_samples=60), r"noise_sigma=.*too little noise"),  # recomputed for N = 60
], ids=["rho", "eta", "sigma", "rounds", "epsilon", "delta", "round_epsilon", "eps_tilde", "L", "N", "N_noise"])
def test_a_party_refuses_a_weaker_setup_before_drawing_anything(tamper, message):
    parties, honest = floor_setup()
    party = parties[2]
    generator_state = party._rng.bit_generator.state
    with pytest.raises(CalibrationRefusedError, match=f"party 2 refuses the coordinator's set-up: .*{message}"):
        party.setup(tamper(honest))
    assert party._rng.bit_generator.state == generator_state  # no eta^k, no rho: nothing drawn
    with pytest.raises(RuntimeError, match="no calibration"):
        party.noisy_gradient(np.zeros(4))  # and it answers nothing
    party.setup(honest)  # the honest set-up is still accepted
    assert party._rng.bit_generator.state != generator_state


def test_a_refused_setup_aborts_psgd_before_any_secure_sum(recording_aggregator):
    parties, honest = floor_setup()
    engine = MaskedSecureSum(random_state=0, aggregator_factory=recording_aggregator)
    with pytest.raises(CalibrationRefusedError, match="too little noise"):
        psgd(InProcessNetwork(parties, engine), rogue(honest, round_noise_scale=1.0))
    assert recording_aggregator.instances == []  # no party sent anything
    result = psgd(InProcessNetwork(floor_setup()[0], engine), honest)
    assert (result.record.epsilon, result.record.delta) == (2.0, 0.0)  # within every party's floor


def test_a_party_answers_at_most_its_own_max_rounds():
    parties, honest = floor_setup()
    party = parties[0]
    party.setup(honest)
    for _ in range(4):
        party.noisy_gradient(np.zeros(4))
    with pytest.raises(RuntimeError, match=r"answered the 4 gradient requests .*max_rounds=4"):
        party.noisy_gradient(np.zeros(4))


@pytest.mark.parametrize("floor, message", [
    ({"max_epsilon": 0.0, "max_delta": 1e-5, "max_rounds": 3}, "max_epsilon must be a finite number > 0"),
    ({"max_epsilon": 1.0, "max_delta": 1.0, "max_rounds": 3}, r"max_delta must be a number in \[0, 1\)"),
    ({"max_epsilon": 1.0, "max_delta": 0.0, "max_rounds": 0}, "max_rounds must be an integer >= 1"),
])
def test_a_party_needs_a_valid_floor(floor, message):
    X, y = make_data(n=20)
    with pytest.raises(ValueError, match=message):
        Party(X, y, loss=LOGISTIC, **floor)
    with pytest.raises(TypeError, match="max_epsilon"):
        Party(X, y, loss=LOGISTIC)  # no default: every party states its own floor


@pytest.mark.slow  # PLD calibrations: ~17 s on a loaded 2-core machine
def test_coordinator_dp_party_refuses_a_smaller_noise_multiplier(dp_accounting):
    parties, honest = floor_setup(coordinator_dp=True, round_epsilon=None, epsilon=2.0)
    weaker = rogue(honest, noise_multiplier=honest.noise_multiplier * 0.9,
                   round_noise_sigma=honest.round_noise_sigma * 0.9, round_noise_scale=honest.round_noise_scale * 0.9)
    with pytest.raises(CalibrationRefusedError, match="round_noise_scale=.*too little noise"):
        parties[0].setup(weaker)
    parties[0].setup(honest)


def test_local_aggregation_parties_refuse_a_weaker_setup(recording_aggregator):
    from dperm.multiparty import calibrate_local_aggregation, local_aggregation

    X, y = make_data(n=120)
    parties = make_parties(split(X, y, (30, 40, 50)), floor={"max_epsilon": 1.0, "max_delta": 0.0, "max_rounds": 1})
    honest = calibrate_local_aggregation(epsilon=1.0, alpha=0.1, n_samples_by_party=(30, 40, 50), n_features=4,
                                         loss=LOGISTIC, data_norm=1.0, tol=1e-8)
    engine = MaskedSecureSum(random_state=0, aggregator_factory=recording_aggregator)
    for weaker, message in [
        (dataclasses.replace(honest, noise_scale=honest.noise_scale / 2), "noise_scale=.*too little noise"),
        (calibrate_local_aggregation(epsilon=2.0, alpha=0.1, n_samples_by_party=(30, 40, 50), n_features=4,
                                     loss=LOGISTIC, data_norm=1.0, tol=1e-8), "epsilon=2 is above .*max_epsilon=1"),
        (dataclasses.replace(honest, n_min=45), "n_min=45"),
    ]:
        with pytest.raises(CalibrationRefusedError, match=f"party 0 refuses the local-aggregation set-up: .*{message}"):
            local_aggregation(parties, engine, weaker, random_state=0)
    assert recording_aggregator.instances == []
    assert local_aggregation(parties, engine, honest, random_state=0).record.epsilon == 1.0


# -- one fit skeleton, keyword-only parameters, one party-network base (issue 29) -------------------


def test_the_multiparty_estimators_share_one_fit_and_take_keyword_only_parameters():
    import dperm
    from dperm.multiparty import LocalAggregationClassifier, NewtonClassifier, PSGDClassifier
    from dperm.multiparty.estimator import _MultipartyClassifierBase

    assert dperm.NewtonClassifier is NewtonClassifier  # the default protocol of `dperm coordinate`
    for cls in (PSGDClassifier, LocalAggregationClassifier, NewtonClassifier):
        assert cls.fit is _MultipartyClassifierBase.fit, cls.__name__
        with pytest.raises(TypeError):
            cls(1.0)  # epsilon is keyword-only, as in the single-party estimators


def test_every_network_is_a_party_network():
    from dperm.multiparty import InProcessNetwork, InProcessNewtonNetwork
    from dperm.multiparty.newton import NewtonNetwork
    from dperm.multiparty.protocol import GradientSumNetwork, InProcessParties, PartyNetwork

    for network in (InProcessNetwork, InProcessNewtonNetwork):
        assert issubclass(network, InProcessParties) and issubclass(network, PartyNetwork)
    assert issubclass(GradientSumNetwork, PartyNetwork) and issubclass(NewtonNetwork, PartyNetwork)
    X, y = make_data(n=40)
    floor = dict(max_epsilon=1.0, max_delta=1e-5, max_rounds=1)
    parties = [Party(Xk, yk, loss=get_loss("logistic"), party_id=0, **floor) for Xk, yk in split(X, y, (20, 20))]
    with pytest.raises(ValueError, match="party ids must be distinct"):
        InProcessNewtonNetwork(parties, MaskedSecureSum(random_state=0))


def test_psgd_calibration_has_one_owner_under_privacy_and_the_boundary_only_checks():
    """dperm.privacy.psgd computes (trusting its inputs); calibrate_psgd checks them and adds the grid's noise scale."""
    from dperm.multiparty.privacy import calibrate_psgd, round_noise_scale
    from dperm.privacy.psgd import PSGDCalibration as Owned
    from dperm.privacy.psgd import coordinator_dp_calibration, psgd_calibration

    loss = get_loss("logistic")
    public = dict(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=120, n_parties=3, n_features=4, n_rounds=20,
                  loss=loss, data_norm=1.0)
    constants = (1.0, 1e-5, 0.05, 120, 3, 4, 20, float(loss.lipschitz), float(loss.curvature), 1.0, "logistic")
    checked = calibrate_psgd(**public, round_epsilon=0.5)
    assert isinstance(checked, Owned)
    assert checked == psgd_calibration(*constants, 0.5, round_noise_scale(0.5, float(loss.lipschitz), 1.0, 4))
    assert calibrate_psgd(**public, coordinator_dp=True) == coordinator_dp_calibration(*constants, "pld")
    with pytest.raises(ValueError, match="at least 2 parties"):
        calibrate_psgd(**{**public, "n_parties": 1})
