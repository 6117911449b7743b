"""A party's own spending ledger (issue 15, faults): charge, refuse, idempotence, locking, corruption."""

from __future__ import annotations

import json
import multiprocessing
import time

import pytest

from dperm.exceptions import BudgetExceededError
from dperm.multiparty.ledger import LedgerError, PartyLedger, check_run_id

RUN_A, RUN_B, RUN_C = "a" * 32, "b" * 32, "0123456789abcdef" * 2
BUDGET = {"budget_epsilon": 2.0, "budget_delta": 1e-5}


def test_charges_add_up_and_a_charge_over_budget_is_refused_and_recorded_nowhere(tmp_path):
    ledger = PartyLedger(tmp_path / "ledger.json")
    assert ledger.spent() == (0.0, 0.0) and not ledger.path.exists()
    assert ledger.charge(RUN_A, "psgd-004", 1.25, 4e-6, **BUDGET) is True
    assert ledger.spent() == (1.25, 4e-6)
    before = ledger.path.read_bytes()
    with pytest.raises(BudgetExceededError, match=rf"run {RUN_B} .* over its budget \(2, 1e-05\).*ledger.json"):
        ledger.charge(RUN_B, "psgd-004", 1.0, 1e-6, **BUDGET)  # epsilon: 2.25 > 2
    with pytest.raises(BudgetExceededError, match="over its budget"):
        ledger.charge(RUN_B, "psgd-004", 0.5, 7e-6, **BUDGET)  # delta: 1.1e-5 > 1e-5
    assert ledger.path.read_bytes() == before  # nothing recorded
    assert ledger.charge(RUN_B, "newton", 0.75, 6e-6, **BUDGET) is True  # exactly the budget fits
    assert ledger.spent() == pytest.approx((2.0, 1e-5), rel=1e-12, abs=0)
    assert set(ledger.charges()) == {RUN_A, RUN_B} and ledger.charges()[RUN_B].mechanism == "newton"
    assert ledger.path.stat().st_mode & 0o077 == 0  # the party's own file


def test_the_same_run_is_never_charged_twice_and_cannot_change_its_cost(tmp_path):
    ledger = PartyLedger(tmp_path / "ledger.json")
    assert ledger.charge(RUN_A, "psgd-004", 1.5, 1e-6, **BUDGET) is True
    assert ledger.charge(RUN_A, "psgd-004", 1.5, 1e-6, **BUDGET) is False  # a second set-up: no charge
    assert ledger.spent() == (1.5, 1e-6)
    with pytest.raises(ValueError, match=r"was charged .* \(a new training needs a new run id\)"):
        ledger.charge(RUN_A, "psgd-004", 0.5, 1e-6, **BUDGET)
    assert ledger.spent() == (1.5, 1e-6)


@pytest.mark.parametrize("text, problem", [
    ("{not json", "not JSON"),
    ('{"format": "something else", "version": 1, "runs": {}}', "no format"),
    ('{"format": "dperm-party-ledger", "version": 1, "runs": {"' + "a" * 32 + '": {"mechanism": "m"}}}',
     "run 'a{32}'"),
    ('{"format": "dperm-party-ledger", "version": 1, "runs": {"' + "a" * 32
     + '": {"mechanism": "m", "epsilon": -1, "delta": 0}}}', "epsilon"),
])
def test_a_corrupt_ledger_is_refused_naming_the_file(tmp_path, text, problem):
    path = tmp_path / "ledger.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LedgerError, match=rf"{path}.*{problem}"):
        PartyLedger(path).charge(RUN_C, "psgd-004", 0.1, 0.0, **BUDGET)
    assert path.read_text(encoding="utf-8") == text  # left for the party to restore


def test_bad_arguments_are_refused_before_the_file_is_touched(tmp_path):
    ledger = PartyLedger(tmp_path / "ledger.json")
    for run_id in ("A" * 32, "a" * 31, "../" + "a" * 29, 12):
        with pytest.raises(ValueError, match="is not 32 lowercase hex digits"):
            ledger.charge(run_id, "psgd-004", 0.1, 0.0, **BUDGET)
    with pytest.raises(ValueError, match="budget_epsilon"):
        ledger.charge(RUN_A, "psgd-004", 0.1, 0.0, budget_epsilon=0.0, budget_delta=0.0)
    assert not ledger.path.exists()
    assert check_run_id(RUN_C) == RUN_C


def _charge_slowly(path, run_id, barrier, results):
    """Charge with a pause between reading the ledger and writing it, so that races overlap."""
    real = PartyLedger.charges

    def slow(self):
        charges = real(self)
        time.sleep(0.3)
        return charges

    PartyLedger.charges = slow
    barrier.wait()
    try:
        PartyLedger(path).charge(run_id, "psgd-004", 1.5, 0.0, **BUDGET)
        results.put((run_id, "charged"))
    except BudgetExceededError:
        results.put((run_id, "refused"))


def test_two_processes_cannot_both_spend_the_last_of_the_budget(tmp_path):
    path = tmp_path / "ledger.json"
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(2), context.Queue()
    workers = [context.Process(target=_charge_slowly, args=(path, run_id, barrier, results))
               for run_id in (RUN_A, RUN_B)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    outcomes = dict(results.get(timeout=5) for _ in workers)
    assert sorted(outcomes.values()) == ["charged", "refused"]  # only one run fits in 2.0
    charged = [run_id for run_id, outcome in outcomes.items() if outcome == "charged"]
    document = json.loads(path.read_text(encoding="utf-8"))
    assert list(document["runs"]) == charged and PartyLedger(path).spent() == (1.5, 0.0)


# -- per-round runs (issue 31, finding 7: an abort costs the rounds answered) -----------------------


def test_a_per_round_run_books_nothing_at_set_up_and_each_answered_round_its_prefix_cost(tmp_path):
    ledger = PartyLedger(tmp_path / "ledger.json")
    budget = {"budget_epsilon": 1.5, "budget_delta": 3e-5}
    opened = ledger.open_run(RUN_A, "multiparty-newton", n_rounds=3, epsilon=1.0, delta=1e-5, **budget)
    assert (opened.rounds, opened.epsilon, opened.delta) == (0, 0.0, 0.0) and ledger.spent() == (0.0, 0.0)
    assert ledger.charge_round(RUN_A, 1, 0.6, 1e-5, **budget).rounds == 1
    assert ledger.spent() == (0.6, 1e-5)
    # only the next round: never the same round twice, never a skipped one
    for rounds in (1, 3):
        with pytest.raises(ValueError, match=r"has 1 of its 3 rounds charged .* \(only round 2"):
            ledger.charge_round(RUN_A, rounds, 0.8, 1e-5, **budget)
    with pytest.raises(ValueError, match="not between what it has cost"):
        ledger.charge_round(RUN_A, 2, 1.2, 1e-5, **budget)  # above the whole run's cost
    with pytest.raises(ValueError, match="not between what it has cost"):
        ledger.charge_round(RUN_A, 2, 0.5, 1e-5, **budget)  # below what round 1 already cost
    # a second run fits only while the first has cost little; its rounds are refused once they would not fit
    ledger.open_run(RUN_B, "multiparty-newton", n_rounds=2, epsilon=0.9, delta=1e-5, **budget)  # 0.6 + 0.9 fits
    ledger.charge_round(RUN_A, 2, 0.8, 1e-5, **budget)
    before = ledger.path.read_bytes()
    with pytest.raises(BudgetExceededError, match=rf"run {RUN_B} .*round 1 of 2.* over its budget \(1.5, 3e-05\)"):
        ledger.charge_round(RUN_B, 1, 0.75, 1e-5, **budget)  # 0.8 + 0.75 > 1.5
    assert ledger.path.read_bytes() == before
    with pytest.raises(BudgetExceededError, match=rf"run {RUN_C} .*over 2 rounds"):
        ledger.open_run(RUN_C, "multiparty-newton", n_rounds=2, epsilon=0.8, delta=1e-5, **budget)  # whole: 1.6
    ledger.charge_round(RUN_A, 3, 1.0, 1e-5, **budget)
    with pytest.raises(ValueError, match="3 of its 3 rounds charged"):
        ledger.charge_round(RUN_A, 4, 1.0, 1e-5, **budget)
    assert ledger.charges()[RUN_A].epsilon == 1.0 and ledger.spent() == (1.0, 1e-5)


def test_a_resumed_per_round_run_continues_its_count_and_a_changed_set_up_is_refused(tmp_path):
    ledger = PartyLedger(tmp_path / "ledger.json")
    ledger.open_run(RUN_A, "multiparty-newton", n_rounds=4, epsilon=1.0, delta=1e-5, **BUDGET)
    ledger.charge_round(RUN_A, 1, 0.5, 1e-5, **BUDGET)
    again = PartyLedger(ledger.path).open_run(RUN_A, "multiparty-newton", n_rounds=4, epsilon=1.0, delta=1e-5,
                                              **BUDGET)  # a restarted party, a resumed coordinator
    assert (again.rounds, again.epsilon) == (1, 0.5)
    with pytest.raises(ValueError, match="over 5 rounds .* is refused"):
        ledger.open_run(RUN_A, "multiparty-newton", n_rounds=5, epsilon=1.0, delta=1e-5, **BUDGET)
    with pytest.raises(ValueError, match="was charged"):
        ledger.charge(RUN_A, "multiparty-newton", 1.0, 1e-5, **BUDGET)  # not a whole-run charge
    with pytest.raises(ValueError, match="not an open per-round run"):
        ledger.charge_round(RUN_B, 1, 0.5, 1e-5, **BUDGET)


def test_a_version_1_ledger_still_loads_and_its_runs_stay_whole_run_charges(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps({"format": "dperm-party-ledger", "version": 1, "runs": {
        RUN_A: {"mechanism": "multiparty-newton", "epsilon": 1.0, "delta": 1e-6, "charged_at": "2026-11-20"}}}))
    ledger = PartyLedger(path)
    assert ledger.spent() == (1.0, 1e-6) and not ledger.charges()[RUN_A].per_round
    # the same run's set-up again (an old run resumed): it owes nothing more; its count is the party's run state
    assert not ledger.open_run(RUN_A, "multiparty-newton", n_rounds=2, epsilon=1.0, delta=1e-6,
                               budget_epsilon=2.0, budget_delta=1e-5).per_round
    ledger.open_run(RUN_B, "multiparty-newton", n_rounds=2, epsilon=1.0, delta=1e-6, budget_epsilon=2.0,
                    budget_delta=1e-5)
    assert json.loads(path.read_text())["version"] == 2 and ledger.charges()[RUN_A].epsilon == 1.0
    path.write_text(json.dumps({"format": "dperm-party-ledger", "version": 3, "runs": {}}))
    with pytest.raises(LedgerError, match=rf"{path} .*version 3, which this dperm does not read"):
        ledger.spent()


def test_newton_prefix_charges_grow_to_exactly_the_whole_run_and_use_one_fixed_order():
    """privacy.round_charges: 0 at r=0, the calibration's view at r=T, increasing, at the order found for T."""
    from dperm.losses import get_loss
    from dperm.multiparty.newton_privacy import calibrate_newton
    from dperm.privacy.collusion import honest_parties
    from dperm.privacy.newton import RDP_ORDERS, round_rdp, rounds_epsilon, view_guarantee
    from dperm.privacy.round_charges import newton_charge_order, newton_prefix_guarantee

    for n_rounds, epsilon in ((2, 1.0), (10, 1.0), (10, 4.0)):
        calibration = calibrate_newton(epsilon=epsilon, delta=1e-5, alpha=0.05, n_rounds=n_rounds,
                                       n_samples_by_party=(300, 300, 300), n_features=4, loss=get_loss("logistic"),
                                       data_norm=1.0)
        charges = [newton_prefix_guarantee(calibration, r) for r in range(n_rounds + 1)]
        assert charges[0] == (0.0, 0.0) and charges[-1] == view_guarantee(calibration)
        assert all(0 < a[0] < b[0] for a, b in zip(charges[1:], charges[2:]))
        assert {delta for _, delta in charges[1:]} == {view_guarantee(calibration)[1]}
        # each prefix charge is at least the fixed-horizon optimum of its rounds (never an under-charge),
        # and equals dp-accounting's conversion at the one order the whole run's optimum uses
        order = newton_charge_order(calibration)
        honest = honest_parties(calibration.n_parties, calibration.collusion_threshold)  # K - t shares
        rho = round_rdp([order], calibration.sensitivity_steps, calibration.party_sigma_squared,
                        honest, calibration.dimension)[0]
        for r, (charged, _) in enumerate(charges[1:], start=1):
            assert charged >= rounds_epsilon(calibration.sensitivity_steps, calibration.party_sigma_squared,
                                             honest, calibration.dimension, r,
                                             calibration.rdp_delta) - 1e-12
            from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

            assert charged == pytest.approx(compute_epsilon([order], [r * rho], calibration.rdp_delta)[0],
                                            rel=1e-12)
        assert order in RDP_ORDERS
    with pytest.raises(ValueError, match=r"rounds must be in \[0, 10\]"):
        newton_prefix_guarantee(calibration, 11)
