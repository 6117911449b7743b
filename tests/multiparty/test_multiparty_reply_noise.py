"""What one party sends, in process: its reply minus the exact statistic follows the calibrated law.

Issue 31 (finding 4): a party that sends no noise, a negated statistic or half its noise must fail a
test. Each test below plays one party of the in-process protocols exactly as their networks call it
(``NewtonParty.reply`` for :class:`~dperm.multiparty.newton.InProcessNewtonNetwork`,
``Party.noisy_gradient`` for :class:`~dperm.multiparty.protocol.InProcessNetwork`), recomputes the
noise-free statistic from the party's shard and the public broadcast ``w_t`` (``_reply_noise``, not
dperm's code), and checks the residual's centre, scale and shape against the calibration
(:mod:`dperm.privacy.newton`, :mod:`dperm.privacy.psgd`): the scale must be one party's share, and the
``K``-party total is refused. The mutations these tests were run against are listed in
``docs/testing.md`` ("Mutation checks of the multiparty replies").
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dperm.losses import get_loss
from dperm.multiparty import Party, calibrate_psgd
from dperm.multiparty.newton import NewtonParty
from dperm.multiparty.newton_privacy import calibrate_newton
from dperm.multiparty.privacy import round_noise_calibration
from dperm.privacy.newton import view_guarantee
from dperm.privacy.psgd import accepting_floor
from tests.multiparty._reply_noise import (
    FALSE_ALARM,
    broadcasts,
    discrete_gaussian_report,
    discrete_laplace_report,
    gaussian_report,
    gaussian_scale_p,
    logistic_sums,
    newton_residual_steps,
    newton_statistic,
    rows_on_norm,
    shard,
)

LOGISTIC = get_loss("logistic")
#: Party sizes: the party under test is the first; K = 3, so the total noise is 3 party shares.
SIZES = (200, 150, 250)
#: Replies per test: about 2,000 noise draws for Newton (D = 14), 1,200 for PSGD (d = 4).
NEWTON_ROUNDS, PSGD_ROUNDS = 150, 300


# -- Newton (dperm.multiparty.newton) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def newton_calibration():
    return calibrate_newton(epsilon=2.0, delta=1e-5, alpha=0.05, n_rounds=NEWTON_ROUNDS, n_samples_by_party=SIZES,
                            n_features=4, loss=LOGISTIC, data_norm=1.0)


def newton_party_residuals(calibration, seed=2031):
    """``NEWTON_ROUNDS`` replies of one in-process Newton party, minus the test's own statistic, in steps."""
    X, y = shard()
    epsilon, delta = view_guarantee(calibration)
    party = NewtonParty(X, y, loss=LOGISTIC, data_norm=1.0, party_id="p0", random_state=seed,
                        max_epsilon=max(epsilon, calibration.epsilon), max_delta=delta,
                        max_rounds=calibration.n_rounds)
    party.setup(calibration)
    rows = rows_on_norm(X, 1.0)
    ws = broadcasts(calibration.n_rounds)
    replies = np.array([party.reply(w) for w in ws])
    statistics = np.array([newton_statistic(rows, y, w, calibration) for w in ws])
    return newton_residual_steps(replies, statistics, calibration.grid_step)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")  # the party's own log
def test_an_in_process_newton_party_sends_one_share_of_discrete_gaussian_noise(newton_calibration):
    residual = newton_party_residuals(newton_calibration)
    report = discrete_gaussian_report(residual, newton_calibration.party_sigma_squared)
    assert report.passes(), report
    # the scale is one party's share sigma^2, not the K-party total K sigma^2 the secure sum carries
    total = math.sqrt(newton_calibration.n_parties * newton_calibration.party_sigma_squared)
    assert gaussian_scale_p(residual, total) < FALSE_ALARM
    assert abs(report.scale_ratio - 1.0) < 0.05


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
@pytest.mark.parametrize("mutation", ["no noise", "negated statistic", "half noise"])
def test_the_newton_check_catches_a_broken_party(newton_calibration, monkeypatch, mutation):
    """The check above can fail: a party edited to cheat (here by patching its module's names) is caught."""
    from dperm.multiparty import newton

    sampler, pack = newton.sample_discrete_gaussian_vector, newton.pack
    if mutation == "no noise":
        monkeypatch.setattr(newton, "sample_discrete_gaussian_vector", lambda dimension, *_: [0] * dimension)
    elif mutation == "negated statistic":
        monkeypatch.setattr(newton, "pack", lambda *args: -pack(*args))
    else:
        monkeypatch.setattr(newton, "sample_discrete_gaussian_vector",
                            lambda dimension, sigma_squared, rng: sampler(dimension, sigma_squared / 4, rng))
    report = discrete_gaussian_report(newton_party_residuals(newton_calibration),
                                      newton_calibration.party_sigma_squared)
    assert not report.passes(), report


# -- PSGD (dperm.multiparty.protocol, 004 Proc. 3) ------------------------------------------------------


def psgd_calibration(coordinator_dp=False):
    return calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=sum(SIZES), n_parties=len(SIZES),
                          n_features=4, n_rounds=PSGD_ROUNDS // 3 if coordinator_dp else PSGD_ROUNDS, loss=LOGISTIC,
                          data_norm=1.0,
                          coordinator_dp=coordinator_dp,
                          coordinator_accountant="rdp")  # the same noise law as PLD's; 10x faster to calibrate


def psgd_party(calibration, seed):
    X, y = shard()
    floor = accepting_floor(calibration)
    party = Party(X, y, loss=LOGISTIC, data_norm=1.0, party_id="p0", random_state=seed,
                  max_epsilon=floor.max_epsilon, max_delta=floor.max_delta, max_rounds=floor.max_rounds)
    party.setup(calibration)
    return party, rows_on_norm(X, 1.0), y


def psgd_residuals(calibration, seed=4099):
    """``grad^G_k(w_t) - grad G_k(w_t)`` over ``PSGD_ROUNDS`` requests, and the party's ``eta^k``."""
    party, rows, y = psgd_party(calibration, seed)
    ws = broadcasts(calibration.n_rounds)
    replies = np.array([party.noisy_gradient(w) for w in ws])
    gradients = np.array([logistic_sums(rows, y, w)[0] for w in ws])
    return replies, gradients, party.one_time_noise


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_an_in_process_psgd_party_sends_its_gradient_with_discrete_laplace_noise_and_its_eta():
    """004 Proc. 3: ``grad G_k(w_t) + rho_t^k + eta^k``; ``rho`` exact discrete Laplace on the round's grid."""
    calibration = psgd_calibration()
    replies, gradients, eta = psgd_residuals(calibration)
    grid = round_noise_calibration(calibration.round_epsilon, calibration.lipschitz, calibration.data_norm, 4)
    steps = (replies - eta) / grid.step  # the release on the grid: exact up to the float sum with eta
    np.testing.assert_allclose(steps, np.round(steps), rtol=0, atol=1e-6)
    rho = np.round(steps) - np.round(gradients / grid.step)
    report = discrete_laplace_report(rho, grid.scale_in_steps)
    assert report.passes(), report
    assert grid.noise_scale == calibration.round_noise_scale  # the law tested is the calibration's


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_in_process_psgd_parties_draw_eta_with_one_share_of_the_objective_noise():
    """``eta^k ~ N(0, sigma^2 / (K - t) I)`` (004 Proc. 3 with the collusion threshold t), over 300 set-ups; not ``sigma^2``."""
    calibration = psgd_calibration()
    etas = np.array([psgd_party(calibration, seed)[0].one_time_noise for seed in range(300)])
    report = gaussian_report(etas, calibration.party_noise_sigma)
    assert report.passes(), report
    assert calibration.collusion_threshold == 1  # the default: any K - 1 shares meet the calibration
    assert calibration.party_noise_sigma == pytest.approx(
        calibration.noise_sigma / math.sqrt(len(SIZES) - calibration.collusion_threshold))
    assert gaussian_scale_p(etas, calibration.noise_sigma) < FALSE_ALARM


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_an_in_process_coordinator_dp_party_sends_one_share_of_the_gaussian_noise():
    """``coordinator_dp``: no ``eta``; ``rho_t^k ~ N(0, sigma^2 / K)`` per coordinate, not ``sigma^2``."""
    pytest.importorskip("dp_accounting")
    calibration = psgd_calibration(coordinator_dp=True)
    replies, gradients, eta = psgd_residuals(calibration)
    assert not eta.any()
    report = gaussian_report(replies - gradients, calibration.round_noise_scale)
    assert report.passes(), report
    assert gaussian_scale_p(replies - gradients, calibration.round_noise_sigma) < FALSE_ALARM
