"""Integrity (issue 31): a party refuses to send a broken reply; the coordinator checks each secure sum.

The lying parties here bypass the party's own checks (they override the
reply), as a party running edited code would; the coordinator must catch
them from the sum alone. Honest seeded runs never trip the checks.
"""

from __future__ import annotations

import numpy as np
import pytest

from dperm.exceptions import MalformedReplyError, SecureSumIntegrityError
from dperm.losses import get_loss
from dperm.multiparty import calibrate_psgd
from dperm.multiparty.integrity import (
    check_sum,
    newton_party_bound,
    newton_sum_bound,
    psgd_party_bound,
    psgd_sum_bound,
    refuse_reply,
    subgaussian_norm_bound,
)
from dperm.multiparty.newton import InProcessNewtonNetwork, NewtonParty, pack, party_reply, private_newton
from dperm.multiparty.newton_privacy import calibrate_newton
from dperm.multiparty.protocol import InProcessNetwork, Party, psgd, psgd_clipping_range
from dperm.multiparty.secure_sum import MaskedSecureSum, SecureSumReport
from dperm.solvers import loss_sums
from tests._multiparty_data import make_data, split

LOGISTIC = get_loss("logistic")
FLOOR = {"max_epsilon": 1e4, "max_delta": 0.1, "max_rounds": 1000}
SIZES = (200, 200, 200)
BAD_VALUES = [np.nan, np.inf, -np.inf]


def _separable(n=600, d=4, seed=3):
    return make_data(n=n, d=d, seed=seed, noise=0.0)  # a strong signal: a -50x reply is far out


# -- PSGD ---------------------------------------------------------------------------------------


def _psgd_run(party_classes, epsilon=10.0, seed=0, n_rounds=20, d=4, **kwargs):
    X, y = _separable(d=d)
    calibration = calibrate_psgd(epsilon=epsilon, delta=1e-5, alpha=0.05, n_samples=len(y), n_parties=len(SIZES),
                                 n_features=X.shape[1], n_rounds=n_rounds, loss=LOGISTIC, data_norm=1.0, **kwargs)
    parties = [cls(Xk, yk, loss=LOGISTIC, party_id=k, random_state=seed + k, **FLOOR)
               for k, ((Xk, yk), cls) in enumerate(zip(split(X, y, SIZES), party_classes))]
    engine = MaskedSecureSum(clipping_range=psgd_clipping_range(calibration, SIZES), random_state=seed)
    return psgd(InProcessNetwork(parties, engine), calibration)


class LyingParty(Party):
    """Edited code: sends -50 times its honest reply, skipping the party's own checks."""

    factor = -50.0

    def noisy_gradient(self, coef):
        self.rounds_answered += 1
        return self.factor * (self._release_round(self.local_gradient(coef)) + self._one_time_noise)


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_psgd_party_refuses_a_non_finite_gradient_and_sends_nothing(monkeypatch, bad):
    sent = []
    monkeypatch.setattr(Party, "local_gradient", lambda self, coef: np.full(self.n_features, bad))
    monkeypatch.setattr(MaskedSecureSum, "sum", lambda *args, **kwargs: sent.append(args))
    with pytest.raises(MalformedReplyError, match=r"round 0: party 0 refuses to send its gradient sum: 4 value"):
        _psgd_run([Party] * 3)
    assert not sent


def test_a_psgd_party_refuses_a_gradient_beyond_its_public_bound(monkeypatch):
    honest = Party.local_gradient
    monkeypatch.setattr(Party, "local_gradient", lambda self, coef: -50.0 * honest(self, coef))
    with pytest.raises(MalformedReplyError, match="exceeds the public bound 200 that every honest gradient sum"):
        _psgd_run([Party] * 3)


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_psgd_party_refuses_a_non_finite_noise_draw(monkeypatch, bad):
    monkeypatch.setattr(Party, "_release_round", lambda self, gradient: gradient + bad)
    with pytest.raises(MalformedReplyError, match="refuses to send its reply: 4 value"):
        _psgd_run([Party] * 3)


@pytest.mark.parametrize("kwargs", [{}, {"coordinator_dp": True}])
def test_the_coordinator_catches_a_psgd_party_sending_minus_50_times_its_reply(kwargs):
    if kwargs:
        pytest.importorskip("dp_accounting")
    with pytest.raises(SecureSumIntegrityError, match=r"PSGD round [0-2]: the secure sum has L2 norm .* above the public"):
        _psgd_run([Party, LyingParty, Party], d=16, epsilon=1.0 if kwargs else 10.0, **kwargs)


def test_the_coordinator_refuses_a_non_finite_psgd_reply_in_the_secure_sum():
    class NaNParty(LyingParty):
        factor = np.nan

    with pytest.raises(MalformedReplyError, match="round 0: party 1 replied with 4 non-finite"):
        _psgd_run([Party, NaNParty, Party])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("epsilon", [0.5, 10.0, 100.0])
def test_honest_psgd_runs_never_trip_the_checks(seed, epsilon):
    """Noise-dominated (small epsilon) and signal-dominated (large epsilon) runs."""
    result = _psgd_run([Party] * 3, epsilon=epsilon, seed=10 * seed)
    assert np.all(np.isfinite(result.coef))


@pytest.mark.parametrize(("epsilon", "round_epsilon"), [(0.05, 50.0), (10.0, 0.01)])
def test_honest_psgd_runs_dominated_by_one_noise_never_trip_the_checks(epsilon, round_epsilon):
    """Small shards: the one-time noise eta (first) or the round noise rho (second) dominates the sum."""
    for seed in range(3):
        X, y = _separable(n=60)
        calibration = calibrate_psgd(epsilon=epsilon, delta=1e-5, alpha=0.05, n_samples=60, n_parties=3, n_features=4,
                                     n_rounds=20, loss=LOGISTIC, data_norm=1.0, round_epsilon=round_epsilon)
        parties = [Party(Xk, yk, loss=LOGISTIC, party_id=k, random_state=seed + k, **FLOOR)
                   for k, (Xk, yk) in enumerate(split(X, y, (20, 20, 20)))]
        engine = MaskedSecureSum(clipping_range=psgd_clipping_range(calibration, (20, 20, 20)), random_state=seed)
        psgd(InProcessNetwork(parties, engine), calibration)


def test_honest_psgd_coordinator_dp_runs_never_trip_the_checks():
    pytest.importorskip("dp_accounting")
    for seed in range(3):
        _psgd_run([Party] * 3, epsilon=1.0, seed=seed, coordinator_dp=True)  # (PLD calibration is slow at 10)


def test_the_psgd_party_bound_holds_for_every_row_at_the_loss_extremes():
    """||grad G_k|| <= N_k L R is attained (rows on the sphere, all aligned, phi' at its bound)."""
    X = np.tile([[0.6, 0.8]], (50, 1))
    y = np.ones(50)
    calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=100, n_parties=2, n_features=2,
                                 n_rounds=2, loss=LOGISTIC, data_norm=1.0)
    gradient = X.T @ LOGISTIC.score_derivative(y, X @ np.array([-300.0, -400.0]))  # phi' -> -1 = -L
    assert np.linalg.norm(gradient) == pytest.approx(psgd_party_bound(calibration, 50), rel=1e-9)
    refuse_reply("p", gradient, what="gradient sum", norm_bound=psgd_party_bound(calibration, 50))


# -- Newton -------------------------------------------------------------------------------------


def _newton_calibration(epsilon=10.0, d=8, n_rounds=4, sizes=SIZES):
    return calibrate_newton(epsilon=epsilon, delta=1e-5, alpha=0.05, n_rounds=n_rounds, n_samples_by_party=sizes,
                            n_features=d, loss=LOGISTIC, data_norm=1.0)


def _newton_run(party_classes, epsilon=10.0, seed=0, d=8, n_rounds=4, sizes=SIZES):
    X, y = _separable(n=sum(sizes), d=d)
    calibration = _newton_calibration(epsilon, d, n_rounds, sizes)
    parties = [cls(Xk, yk, loss=LOGISTIC, party_id=k, random_state=seed + k, **FLOOR)
               for k, ((Xk, yk), cls) in enumerate(zip(split(X, y, sizes), party_classes))]
    engine = MaskedSecureSum(calibration.clipping_range, calibration.quantization_range, calibration.modulus_range,
                             random_state=seed)
    return private_newton(InProcessNewtonNetwork(parties, engine), calibration)


class LyingNewtonParty(NewtonParty):
    """Edited code: sends -50 times its honest reply (the secure sum's encoding still clips it)."""

    factor = -50.0

    def reply(self, coef):
        self.rounds_answered += 1
        X, y = self._X, self._y
        return self.factor * party_reply(X, y, self.loss, self._calibration, coef, self._rng)


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_newton_party_refuses_non_finite_sums(monkeypatch, bad):
    from dperm.multiparty import newton

    def broken(loss, X, y, coef, with_hessian):
        value, gradient, hessian = loss_sums(loss, X, y, coef, with_hessian=with_hessian)
        return value, gradient, np.where(np.eye(len(gradient)) > 0, bad, hessian)

    monkeypatch.setattr(newton, "loss_sums", broken)
    with pytest.raises(MalformedReplyError, match="party 0 refuses to send its packed sums: 8 value"):
        _newton_run([NewtonParty] * 3)


def test_a_newton_party_refuses_sums_beyond_their_public_bound(monkeypatch):
    from dperm.multiparty import newton

    monkeypatch.setattr(newton, "pack", lambda g, h, calibration: -50.0 * pack(g, h, calibration))
    with pytest.raises(MalformedReplyError, match="refuses to send its packed sums: its L2 norm exceeds"):
        _newton_run([NewtonParty] * 3)


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_newton_party_refuses_a_reply_outside_the_encoding_range(monkeypatch, bad):
    from dperm.multiparty import newton

    monkeypatch.setattr(newton, "grid_vector", lambda values, step: np.full(len(values), bad))
    with pytest.raises(MalformedReplyError, match="party 0 refuses to send its reply"):
        _newton_run([NewtonParty] * 3)


def test_a_reply_outside_the_encoding_range_is_refused():
    """Newton's last check: a reply the clip did not bring into [-C, C] (broken code) is not sent."""
    refuse_reply("p", np.array([-4.0, 4.0]), what="reply", range_bound=4.0)
    with pytest.raises(MalformedReplyError, match=r"party 'p' refuses to send its reply: .* \[-4, 4\]"):
        refuse_reply("p", np.array([-4.0, 4.5]), what="reply", range_bound=4.0)


def test_the_coordinator_catches_a_newton_party_sending_minus_50_times_its_reply():
    with pytest.raises(SecureSumIntegrityError, match=r"Newton round 0: the secure sum has L2 norm"):
        _newton_run([NewtonParty, LyingNewtonParty, NewtonParty])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("epsilon", "sizes"), [(1e3, SIZES), (0.1, (20, 20, 20)), (1.0, (20, 20, 20))])
def test_honest_newton_runs_never_trip_the_checks(seed, epsilon, sizes):
    """Signal-dominated (large epsilon) and noise-dominated (60 rows, small epsilon) runs."""
    result = _newton_run([NewtonParty] * 3, epsilon=epsilon, seed=10 * seed, sizes=sizes)
    assert np.all(np.isfinite(result.coef))


def test_the_newton_party_bound_is_attained():
    """Rows all equal on the sphere, phi' = -L and phi'' = c cannot both hold, so check each block's bound."""
    calibration = _newton_calibration(d=2)
    X = np.tile([[0.6, 0.8]], (50, 1))
    y = np.ones(50)
    _, gradient, hessian = loss_sums(LOGISTIC, X, y, np.zeros(2), with_hessian=True)  # phi'' = 1/4 = c at 0
    packed = pack(np.zeros(2), hessian, calibration)
    assert np.linalg.norm(packed) == pytest.approx(50 * calibration.hessian_scale * 0.25, rel=1e-9)
    assert np.linalg.norm(packed) <= newton_party_bound(calibration, 50)


# -- the coordinator's check, on its own --------------------------------------------------------


def _report(n_parties=3, clipping_range=8.0, error_bound=1e-6):
    return SecureSumReport(engine="test", n_parties=n_parties, dimension=4, clipping_range=clipping_range,
                           quantization_range=2**22, modulus_range=2**32, coordinates_clipped=None,
                           error_bound=error_bound)


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_check_sum_refuses_a_non_finite_sum_and_names_the_round(bad):
    with pytest.raises(SecureSumIntegrityError, match="PSGD round 7: the secure sum has 1 non-finite"):
        check_sum(np.array([0.0, bad, 0.0, 0.0]), _report(), norm_bound=1e9, round_index=7, protocol="PSGD")


def test_check_sum_refuses_a_sum_outside_k_times_the_encoding_range():
    """A party that skips the encoding (masked junk) leaves K C: caught whatever the norm bound."""
    total = np.array([0.0, 24.0 + 1e-4, 0.0, 0.0])
    with pytest.raises(SecureSumIntegrityError, match="Newton round 2: 1 coordinate.* outside"):
        check_sum(total, _report(), norm_bound=1e9, round_index=2, protocol="Newton")
    check_sum(np.array([24.0, -24.0, 0.0, 0.0]), _report(), norm_bound=1e9, round_index=2, protocol="Newton")


def test_check_sum_allows_the_encoding_error_and_no_more():
    report = _report(error_bound=0.5)
    at_bound = np.array([1.0, 0.0, 0.0, 0.0]) * (3.0 + 2 * 0.5)  # norm bound 3 plus sqrt(D) e = 1
    check_sum(at_bound, report, norm_bound=3.0, round_index=0, protocol="PSGD")
    with pytest.raises(SecureSumIntegrityError, match="above the public bound 4"):
        check_sum(at_bound * 1.001, report, norm_bound=3.0, round_index=0, protocol="PSGD")


def test_subgaussian_norm_bound_holds_at_its_stated_rate():
    """Hsu-Kakade-Zhang at failure 1e-2 on Gaussian vectors: about 1% or less exceed it (seeded)."""
    rng = np.random.default_rng(0)
    for dimension in (1, 5, 50):
        bound = subgaussian_norm_bound(4.0, dimension, 1e-2)
        norms = np.linalg.norm(rng.normal(scale=2.0, size=(20_000, dimension)), axis=1)
        assert np.mean(norms > bound) <= 1e-2
        assert np.mean(norms > 0.7 * bound) > 0  # not vacuous
    assert subgaussian_norm_bound(0.0, 5, 1e-9) == 0.0


def test_the_sum_bounds_cover_the_worst_honest_signal():
    psgd_calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=600, n_parties=3, n_features=4,
                                      n_rounds=5, loss=LOGISTIC, data_norm=1.0)
    assert psgd_sum_bound(psgd_calibration) > psgd_calibration.lipschitz * psgd_calibration.data_norm
    newton_calibration = _newton_calibration()
    assert newton_sum_bound(newton_calibration) > newton_party_bound(newton_calibration, 600)
