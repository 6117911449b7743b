"""Issue 31, finding 7 for PSGD: what the answered rounds of a PSGD run cost a party (round_charges' PSGD note).

The charge after r rounds is monotone in r, costs nothing at r = 0, is exactly the set-up's guarantee
(``party_view``) at r = T for 004's scheme and the RDP accountant, dp-accounting's RDP conversion at T for the
PLD accountant (more than the record's PLD epsilon: stated and measured), and is checked against dp-accounting.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dperm.losses import get_loss
from dperm.multiparty.privacy import calibrate_psgd, party_view
from dperm.privacy.psgd import PartyFloor
from dperm.privacy.round_charges import (
    psgd_charge_order,
    psgd_prefix_guarantee,
    psgd_round_charges,
)
from tests._reference_formulas import psgd_run_cost

dp_accounting = pytest.importorskip("dp_accounting")

MAX_DELTA = 1e-5
#: dp-accounting's PLD discretisation in the comparisons (pessimistic: it rounds each round's loss up by < STEP).
STEP = 1e-4


def calibration(n_rounds, *, round_epsilon=None, coordinator_dp=False, accountant="pld", epsilon=1.0,
                collusion_threshold=1):
    return calibrate_psgd(epsilon=epsilon, delta=1e-5, alpha=0.05, n_samples=120, n_parties=3, n_features=4,
                          n_rounds=n_rounds, loss=get_loss("logistic"), data_norm=1.0, round_epsilon=round_epsilon,
                          coordinator_dp=coordinator_dp, coordinator_accountant=accountant,
                          collusion_threshold=collusion_threshold)


def floor(run):
    return PartyFloor(1e3, MAX_DELTA, run.n_rounds)


CASES = {
    "004-basic": dict(n_rounds=5, round_epsilon=0.2),  # basic composition is the tighter: delta 0
    "004-advanced": dict(n_rounds=60, round_epsilon=0.05),  # advanced composition at the party's max_delta
    "dp-rdp": dict(n_rounds=12, coordinator_dp=True, accountant="rdp"),
    "dp-rdp-t2": dict(n_rounds=7, coordinator_dp=True, accountant="rdp", epsilon=2.0, collusion_threshold=2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_charge_is_monotone_costs_nothing_at_zero_and_is_the_set_up_guarantee_at_t(case):
    run = calibration(**CASES[case])
    charges = psgd_round_charges(run, slack=MAX_DELTA)
    assert len(charges) == run.n_rounds and psgd_prefix_guarantee(run, 0, slack=MAX_DELTA) == (0.0, 0.0)
    epsilons, deltas = np.array(charges).T
    assert np.all(np.diff(epsilons) >= 0) and np.all(np.diff(deltas) >= 0)
    assert epsilons[0] > 0 and epsilons[0] < epsilons[-1]
    view = party_view(run, floor(run))
    assert charges[-1] == (view.epsilon, view.delta) == psgd_run_cost(run, slack=MAX_DELTA)  # bit for bit


def test_004_charges_basic_composition_of_the_rounds_answered_until_the_whole_runs_guarantee():
    run = calibration(**CASES["004-advanced"])
    view = party_view(run, floor(run))
    assert view.composition == "advanced" and view.delta == MAX_DELTA
    for rounds, (epsilon, delta) in enumerate(psgd_round_charges(run, slack=MAX_DELTA), start=1):
        assert delta == MAX_DELTA  # delta_T is charged whole from the first round
        assert epsilon == pytest.approx(min(rounds * 0.05, view.epsilon), rel=1e-12)
    assert psgd_prefix_guarantee(run, 10, slack=MAX_DELTA)[0] == pytest.approx(0.5)  # 10 of 60 rounds
    basic = calibration(**CASES["004-basic"])
    assert [charge for charge in psgd_round_charges(basic, slack=MAX_DELTA)] == [
        pytest.approx((0.2 * r, 0.0), rel=1e-12) for r in range(1, 6)]


def test_004_charges_are_never_below_dp_accountings_optimal_fixed_horizon_composition():
    """Randomized response is the worst (eps, 0)-DP pair (Kairouz, Oh & Viswanath 2015), so dp-accounting's PLD of r
    such rounds at the run's delta is the tight fixed-horizon epsilon: a charge valid at a stopping time, checked
    against it, is never smaller; with advanced composition's slack it is within the DRV gap of it at T."""
    run = calibration(**CASES["004-advanced"])
    charges = psgd_round_charges(run, slack=MAX_DELTA)
    flip = 2.0 / (1.0 + math.exp(0.05))  # P(uniform answer) of binary randomized response at eps = 0.05
    replace_one = dp_accounting.NeighboringRelation.REPLACE_ONE  # dperm's relation (a record replaced)
    for rounds in (1, 5, 20, 60):
        accountant = dp_accounting.pld.PLDAccountant(replace_one, value_discretization_interval=STEP)
        for _ in range(rounds):  # one event a round: this dp-accounting's PLD drops a SelfComposedDpEvent's count
            accountant.compose(dp_accounting.RandomizedResponseDpEvent(flip, 2))
        optimal = accountant.get_epsilon(MAX_DELTA)
        epsilon, _ = charges[rounds - 1]
        assert optimal <= epsilon + rounds * STEP, (rounds, optimal, epsilon)  # PLD rounds up by a step a round
        if rounds == 60:
            assert epsilon < 1.6 * optimal  # advanced composition, not a loose bound
    one = dp_accounting.pld.PLDAccountant(replace_one).compose(dp_accounting.RandomizedResponseDpEvent(flip, 2))
    assert one.get_epsilon(MAX_DELTA) == pytest.approx(charges[0][0], abs=STEP)  # one round: eps_round, tight


def test_coordinator_dp_charges_are_dp_accountings_rdp_at_one_order_and_exact_at_t():
    run = calibration(**CASES["dp-rdp"])
    order = psgd_charge_order(run)
    charges = psgd_round_charges(run, slack=MAX_DELTA)
    for rounds in (1, 4, 12):
        accountant = dp_accounting.rdp.RdpAccountant().compose(
            dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(run.noise_multiplier), rounds))
        fixed_horizon, best_order = accountant.get_epsilon_and_optimal_order(run.delta)
        epsilon, delta = charges[rounds - 1]
        assert delta == run.delta and epsilon >= fixed_horizon  # valid at a stopping time: never tighter
        # the charge is CKS 2020 Prop. 12's conversion of r alpha / (2 z^2) at the fixed order
        rdp = rounds * order / (2.0 * run.noise_multiplier**2)
        expected = rdp + math.log1p(-1.0 / order) - math.log(run.delta * order) / (order - 1.0)
        assert epsilon == pytest.approx(expected, rel=1e-12)
        if rounds == run.n_rounds:
            assert (epsilon, best_order) == (fixed_horizon, order)  # exactly dp-accounting's whole run
    assert charges[0][0] < charges[-1][0] / 2  # an abort after one of 12 rounds costs well under the run


def test_with_the_pld_accountant_t_rounds_book_the_rdp_conversion_a_stated_amount_above_the_records_epsilon():
    """round_charges' PSGD note: 1.093 booked for the record's 1.000 at (1, 1e-5), whatever T."""
    for n_rounds in (3, 20):
        run = calibration(n_rounds, coordinator_dp=True, accountant="pld")
        view = party_view(run, floor(run))
        booked = psgd_run_cost(run, slack=MAX_DELTA)
        accountant = dp_accounting.rdp.RdpAccountant().compose(
            dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(run.noise_multiplier), n_rounds))
        assert booked == (accountant.get_epsilon(run.delta), run.delta)
        assert view.epsilon <= 1.0 < booked[0]
        assert booked[0] == pytest.approx(1.093, abs=5e-4)
        epsilons = [epsilon for epsilon, _ in psgd_round_charges(run, slack=MAX_DELTA)]
        assert epsilons == sorted(epsilons) and epsilons[-1] == booked[0]


@pytest.mark.parametrize("rounds", [-1, 6, 2.0, True, "3"])
def test_rounds_outside_the_run_are_refused(rounds):
    with pytest.raises(ValueError, match=r"rounds must be an integer in \[0, 5\]"):
        psgd_prefix_guarantee(calibration(**CASES["004-basic"]), rounds, slack=MAX_DELTA)


def test_psgd_charge_order_is_for_gaussian_rounds_only():
    with pytest.raises(ValueError, match="coordinator_dp"):
        psgd_charge_order(calibration(**CASES["004-basic"]))
