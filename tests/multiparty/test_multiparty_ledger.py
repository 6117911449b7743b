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
