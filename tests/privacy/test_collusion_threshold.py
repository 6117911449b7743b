"""The public collusion threshold t (issue 31): share sizes, the party's refusal, the guarantee by colluders.

Every Gaussian share is sized so that any K - t parties' shares meet the
calibration (dperm.privacy.collusion); these tests check the share formulas
for several (K, t), that a party refuses a t below its floor before drawing
anything, and that the record's epsilon with c colluders matches a
computation made here independently with dp-accounting.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from dperm.exceptions import CalibrationRefusedError
from dperm.losses import get_loss
from dperm.multiparty import NewtonClassifier, PSGDClassifier, calibrate_psgd
from dperm.multiparty.newton import NewtonParty
from dperm.multiparty.newton_privacy import calibrate_newton, check_newton_calibration
from dperm.multiparty.privacy import check_psgd_calibration
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.collusion import check_collusion_threshold
from dperm.privacy.newton import collusion_guarantee, rounds_epsilon, view_guarantee
from dperm.privacy.psgd import PartyFloor, psgd_collusion_guarantee, psgd_coordinator_view
from tests._multiparty_data import make_data, split

LOGISTIC = get_loss("logistic")
SHARES = [(2, 0), (2, 1), (3, 1), (5, 0), (5, 1), (5, 2), (5, 4), (20, 1), (20, 19)]


def _psgd(n_parties, t, **kw):
    return calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=60 * n_parties, n_parties=n_parties,
                          n_features=4, n_rounds=kw.pop("n_rounds", 20), loss=LOGISTIC, data_norm=1.0,
                          collusion_threshold=t, **kw)


def _newton(n_parties, t, n_rounds=5, d=4):
    return calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=n_rounds,
                            n_samples_by_party=(60,) * n_parties, n_features=d, loss=LOGISTIC, data_norm=1.0,
                            collusion_threshold=t)


# -- share sizes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_parties, t", SHARES)
def test_psgd_one_time_share_is_sigma_over_root_k_minus_t(n_parties, t):
    calibration = _psgd(n_parties, t)
    assert calibration.collusion_threshold == t
    assert calibration.noise_sigma == _psgd(n_parties, 0).noise_sigma  # GOP's total does not depend on t
    assert calibration.party_noise_sigma == pytest.approx(calibration.noise_sigma / math.sqrt(n_parties - t),
                                                          rel=1e-12)
    # any K - t shares sum to N(0, sigma^2): the honest variance is GOP's
    assert (n_parties - t) * calibration.party_noise_sigma**2 == pytest.approx(calibration.noise_sigma**2, rel=1e-12)
    # the per-round discrete Laplace carries the whole sensitivity in every share: not split
    assert calibration.round_noise_scale == _psgd(n_parties, 0).round_noise_scale


@pytest.mark.parametrize("n_parties", [2, 5, 20])
def test_t0_is_004s_split_bit_for_bit(n_parties):
    """t = 0 is the split dperm used before the threshold: sigma / sqrt(K) exactly (the audits run it)."""
    calibration = _psgd(n_parties, 0)
    assert calibration.party_noise_sigma == calibration.noise_sigma / math.sqrt(n_parties)
    gaussian = _psgd(n_parties, 0, coordinator_dp=True)
    assert gaussian.round_noise_scale == gaussian.round_noise_sigma / math.sqrt(n_parties)


@pytest.mark.parametrize("n_parties, t", SHARES)
def test_coordinator_dp_share_is_sigma_over_root_k_minus_t(n_parties, t):
    calibration = _psgd(n_parties, t, coordinator_dp=True)
    reference = _psgd(2, 0, coordinator_dp=True)  # z depends on (epsilon, delta, T) only
    assert calibration.noise_multiplier == reference.noise_multiplier
    assert calibration.round_noise_sigma == pytest.approx(calibration.noise_multiplier * 2.0, rel=1e-12)  # z 2 L R
    assert calibration.round_noise_scale == pytest.approx(calibration.round_noise_sigma / math.sqrt(n_parties - t),
                                                          rel=1e-12)


@pytest.mark.parametrize("n_parties, t", [(2, 0), (2, 1), (5, 0), (5, 1), (5, 2), (5, 4), (20, 1)])
def test_newton_share_meets_the_target_with_k_minus_t_parties_and_no_less_noise_would(n_parties, t):
    calibration = _newton(n_parties, t)
    honest = n_parties - t
    epsilon = rounds_epsilon(calibration.sensitivity_steps, calibration.party_sigma_squared, honest,
                             calibration.dimension, calibration.n_rounds, calibration.rdp_delta)
    assert epsilon == pytest.approx(calibration.rdp_epsilon) and epsilon <= 1.0
    weaker = rounds_epsilon(calibration.sensitivity_steps, 0.98 * calibration.party_sigma_squared, honest,
                            calibration.dimension, calibration.n_rounds, calibration.rdp_delta)
    assert weaker > 1.0
    # tau vanishes at dperm's grids, so the honest sum's variance (K - t) sigma^2 is the same for every t
    # at the same grid: the share is the K - t split of one total
    untouched = _newton(n_parties, 0)
    if untouched.grid_step == calibration.grid_step:
        assert honest * calibration.party_sigma_squared == pytest.approx(
            n_parties * untouched.party_sigma_squared, rel=1e-5)


def test_newton_party_draws_shares_of_the_sized_variance():
    """Sampled: one party's noise has variance sigma^2 (K - t sizing), measured on its replies at w = 0."""
    X, y = make_data(n=40, d=2, seed=3)
    calibration = calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=400, n_samples_by_party=(40, 40),
                                   n_features=2, loss=LOGISTIC, data_norm=1.0, collusion_threshold=1)
    party = NewtonParty(X, y, loss=LOGISTIC, data_norm=1.0, random_state=7, max_epsilon=1.0, max_delta=1e-5,
                        max_rounds=400, min_collusion_threshold=1)
    party.setup(calibration)
    replies = np.array([party.reply(np.zeros(2)) for _ in range(400)])
    steps = (replies - replies.mean(axis=0)) / calibration.grid_step
    variance = steps.var(ddof=1)  # 400 x 5 draws
    assert variance == pytest.approx(calibration.party_sigma_squared, rel=0.1)
    # the K = 2, t = 0 share would be half of it: the sized share is distinguishable from it
    half = calibrate_newton(
        epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=400, n_samples_by_party=(40, 40), n_features=2, loss=LOGISTIC,
        data_norm=1.0, collusion_threshold=0).party_sigma_squared
    assert abs(variance - half) > 0.3 * half


# -- the party's refusal -----------------------------------------------------------------------------


def test_a_psgd_party_with_floor_t1_refuses_an_announced_t0_calibration():
    floor = PartyFloor(1e4, 0.1, 10_000, min_collusion_threshold=1)
    announced = _psgd(3, 0)
    with pytest.raises(CalibrationRefusedError, match="collusion_threshold=0.*min_collusion_threshold=1"):
        check_psgd_calibration(announced, floor, loss=LOGISTIC, data_norm=1.0, n_samples=60, n_features=4)
    check_psgd_calibration(_psgd(3, 1), floor, loss=LOGISTIC, data_norm=1.0, n_samples=60, n_features=4)
    check_psgd_calibration(announced, PartyFloor(1e4, 0.1, 10_000, min_collusion_threshold=0), loss=LOGISTIC,
                           data_norm=1.0, n_samples=60, n_features=4)


def test_a_psgd_party_refuses_a_t_whose_shares_were_not_resized():
    """t = 1 announced, but the t = 0 shares sent: the recomputation for t = 1 has more noise."""
    from dataclasses import replace

    floor = PartyFloor(1e4, 0.1, 10_000)
    for options in ({}, {"coordinator_dp": True}):
        lying = replace(_psgd(3, 0, **options), collusion_threshold=1)
        with pytest.raises(CalibrationRefusedError, match="too little noise"):
            check_psgd_calibration(lying, floor, loss=LOGISTIC, data_norm=1.0, n_samples=60, n_features=4)


def test_a_party_recomputes_for_the_announced_t_not_its_floors():
    """t = 2 announced over a floor of 1, with shares sized for t = 1: refused (too little noise for t = 2)."""
    from dataclasses import replace

    floor = PartyFloor(1e4, 0.1, 10_000, min_collusion_threshold=1)
    for options in ({}, {"coordinator_dp": True}):
        lying = replace(_psgd(5, 1, **options), collusion_threshold=2)
        with pytest.raises(CalibrationRefusedError, match="too little noise"):
            check_psgd_calibration(lying, floor, loss=LOGISTIC, data_norm=1.0, n_samples=60, n_features=4)
    lying = replace(_newton(5, 1), collusion_threshold=2)
    with pytest.raises(CalibrationRefusedError, match="too little noise|differs"):
        check_newton_calibration(lying, floor, loss=LOGISTIC, data_norm=1.0, n_samples=60, n_features=4)


def test_a_newton_party_with_floor_t1_refuses_an_announced_t0_calibration_before_drawing():
    X, y = make_data(n=60, d=4, seed=1)
    party = NewtonParty(X, y, loss=LOGISTIC, data_norm=1.0, random_state=0, max_epsilon=1.0, max_delta=1e-5,
                        max_rounds=5)
    state = party._rng.bit_generator.state
    with pytest.raises(CalibrationRefusedError, match="collusion_threshold=0.*min_collusion_threshold=1"):
        party.setup(_newton(3, 0))
    assert party._rng.bit_generator.state == state and party.rounds_answered == 0
    from dataclasses import replace

    lying = replace(_newton(3, 0), collusion_threshold=1)  # t = 1 announced, t = 0 shares (and grid)
    with pytest.raises(CalibrationRefusedError, match="too little noise|grid_step=.* differs"):
        check_newton_calibration(lying, party.floor, loss=LOGISTIC, data_norm=1.0, n_samples=60, n_features=4)
    party.setup(_newton(3, 1))


def test_a_floor_above_k_minus_1_cannot_be_met():
    floor = PartyFloor(1e4, 0.1, 10_000, min_collusion_threshold=3)
    with pytest.raises(CalibrationRefusedError, match="no set-up tolerates"):
        check_psgd_calibration(_psgd(3, 2), floor, loss=LOGISTIC, data_norm=1.0, n_samples=60, n_features=4)


def test_the_guarantee_at_t_is_checked_against_the_floor():
    """A floor between the guarantee at 0 colluders and at t: refused (the party judges at the announced t)."""
    calibration = _newton(5, 2)
    at_zero = collusion_guarantee(calibration).epsilon_by_colluders[0]
    epsilon_t, delta_t = view_guarantee(calibration)
    assert at_zero < epsilon_t
    floor = PartyFloor(0.5 * (at_zero + epsilon_t), 1e-5, 10, min_collusion_threshold=1)
    with pytest.raises(CalibrationRefusedError, match="with 2 colluding parties"):
        check_newton_calibration(calibration, floor, loss=LOGISTIC, data_norm=1.0, n_samples=60, n_features=4)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1", 5])
def test_the_threshold_is_validated(bad):
    with pytest.raises(ValueError, match="collusion_threshold"):
        check_collusion_threshold(bad, 5)
    with pytest.raises(ValueError, match="min_collusion_threshold") if bad != 5 else _nothing():
        PartyFloor(1.0, 1e-5, 10, min_collusion_threshold=bad)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("estimator", [NewtonClassifier, PSGDClassifier])
def test_an_estimator_refuses_t_of_k_or_more_before_spending(estimator):
    X, y = make_data(n=90, d=3, seed=0)
    shards = split(X, y, (30, 30, 30))
    accountant = BudgetAccountant(10.0, 1e-3)
    with pytest.raises(ValueError, match=r"collusion_threshold=3 is outside \[0, K - 1\] = \[0, 2\]"):
        estimator(collusion_threshold=3, n_rounds=3, accountant=accountant, classes=[-1, 1],
                  random_state=0).fit(shards)
    with pytest.raises(InvalidParameterError):
        estimator(collusion_threshold=-1, n_rounds=3, accountant=accountant, classes=[-1, 1]).fit(shards)
    assert accountant.spent == (0.0, 0.0)


# -- the guarantee by colluders ---------------------------------------------------------------------


@pytest.mark.parametrize("n_parties, t", [(3, 0), (5, 1), (5, 2), (4, 3)])
def test_coordinator_dp_epsilon_by_colluders_matches_dp_accounting(n_parties, t):
    import dp_accounting

    calibration = _psgd(n_parties, t, coordinator_dp=True, n_rounds=30)
    collusion = psgd_collusion_guarantee(calibration, psgd_coordinator_view(calibration))
    assert collusion.collusion_threshold == t and len(collusion.epsilon_by_colluders) == n_parties
    for c, epsilon in enumerate(collusion.epsilon_by_colluders):
        # independently: the honest parties' K - c shares of std round_noise_scale each, on sensitivity 2 L R
        z = calibration.round_noise_scale * math.sqrt(n_parties - c) / calibration.round_sensitivity
        event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), 30)
        reference = dp_accounting.pld.PLDAccountant().compose(event).get_epsilon(1e-5)
        assert epsilon == pytest.approx(reference, rel=1e-9)
    assert collusion.epsilon_by_colluders[t] <= 1.0 + 1e-9
    assert list(collusion.epsilon_by_colluders) == sorted(collusion.epsilon_by_colluders)


@pytest.mark.parametrize("n_parties, t", [(3, 0), (5, 1), (5, 3)])
def test_newton_epsilon_by_colluders_matches_dp_accounting(n_parties, t):
    """tau vanishes at dperm's grids, so K - c shares are a Gaussian of multiplier sqrt((K - c) sigma^2) / Delta."""
    import dp_accounting

    calibration = _newton(n_parties, t, n_rounds=7)
    collusion = collusion_guarantee(calibration)
    for c, epsilon in enumerate(collusion.epsilon_by_colluders):
        z = math.sqrt((n_parties - c) * calibration.party_sigma_squared) / calibration.sensitivity_steps
        event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), 7)
        reference = dp_accounting.rdp.RdpAccountant().compose(event).get_epsilon(calibration.rdp_delta)
        assert epsilon == pytest.approx(reference, rel=2e-3)
    assert collusion.threshold_epsilon == collusion.epsilon_by_colluders[t] <= 1.0


def test_psgd_paper_scheme_view_is_the_same_for_every_number_of_colluders():
    calibration = _psgd(5, 1)
    view = psgd_coordinator_view(calibration)
    assert psgd_collusion_guarantee(calibration, view).epsilon_by_colluders == (view.epsilon,) * 5


@pytest.mark.parametrize("estimator, options", [(NewtonClassifier, {}), (PSGDClassifier, {"coordinator_dp": True})])
def test_the_record_states_t_and_the_guarantee_at_t(estimator, options):
    X, y = make_data(n=150, d=3, seed=2)
    shards = split(X, y, (50, 50, 50))
    model = estimator(collusion_threshold=2, n_rounds=4, classes=[-1, 1], random_state=0, **options).fit(shards)
    record = model.privacy_
    assert record.collusion_threshold == 2 and record.collusion.collusion_threshold == 2
    assert (record.epsilon, record.delta) == (record.threshold_epsilon, record.threshold_delta)
    assert record.threshold_epsilon == record.epsilon_by_colluders[2] or options  # PSGD: view at t
    assert len(record.epsilon_by_colluders) == 3
    data = record.to_dict()
    assert data["collusion_threshold"] == 2 and len(data["epsilon_by_colluders"]) == 3
    assert type(record).from_dict(data).to_dict() == data
    assert "Collusion threshold t = 2" in str(record)
