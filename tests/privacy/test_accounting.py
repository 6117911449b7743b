"""Budget accountant: composition rules, check first and spend last, atomic spends, no copies."""

import copy
import math
import pickle
import threading
import time

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification

from dperm import PrivateLinearSVC, PrivateLogisticRegression
from dperm.exceptions import BudgetExceededError
from dperm.privacy.accounting import (
    BudgetAccountant,
    Spend,
    advanced_composition,
    advanced_filter_epsilon,
    basic_composition,
)


def _data():
    X, y = make_classification(300, 5, random_state=0)
    return X / np.linalg.norm(X, axis=1).max(), y


def test_sequential_composition_adds_up():
    acc = BudgetAccountant(1.0, 1e-5)
    acc.spend(0.3, label="a")
    acc.spend(0.2, 4e-6, label="b")
    assert acc.spent == pytest.approx((0.5, 4e-6))
    assert acc.remaining == pytest.approx((0.5, 6e-6))
    assert [s.label for s in acc.ledger] == ["a", "b"]


def test_overspending_raises_and_records_nothing():
    acc = BudgetAccountant(1.0)
    acc.spend(0.8)
    with pytest.raises(BudgetExceededError, match="over the budget"):
        acc.spend(0.3, label="too much")
    assert len(acc.ledger) == 1
    with pytest.raises(BudgetExceededError):
        BudgetAccountant(1.0, 0.0).spend(0.1, 1e-9)  # no delta budget at all
    acc.spend(0.2)  # exactly the rest is fine
    assert acc.remaining[0] == pytest.approx(0.0, abs=1e-12)


def test_parallel_composition_costs_the_largest_part():
    acc = BudgetAccountant(1.0, 1e-5)
    acc.spend_parallel([(0.5, 1e-6), (0.3, 2e-6), (0.5, 0.0)], label="tuning")
    assert acc.spent == pytest.approx((0.5, 2e-6))
    assert "parallel over 3 disjoint parts" in acc.ledger[0].label


def test_advanced_composition_matches_the_formula_and_never_exceeds_basic():
    spends = [Spend(0.05, 0.0, "")] * 200
    slack = 1e-6
    epsilon, delta = advanced_composition(spends, slack)
    expected = math.sqrt(2 * 200 * math.log(1 / slack)) * 0.05 + 200 * 0.05 * math.expm1(0.05)
    assert epsilon == pytest.approx(expected)
    assert epsilon < 10.0 and delta == pytest.approx(slack)
    few = [Spend(1.0, 0.0, "")] * 2
    assert advanced_composition(few, slack) == basic_composition(few)  # basic is smaller here


def test_advanced_accountant_admits_more_small_spends():
    basic = BudgetAccountant(5.0, 1e-5)
    advanced = BudgetAccountant(5.0, 1e-5, composition="advanced", slack=1e-6)
    count_basic = count_advanced = 0
    for accountant in (basic, advanced):
        while True:
            try:
                accountant.spend(0.05)
            except BudgetExceededError:
                break
    count_basic, count_advanced = len(basic.ledger), len(advanced.ledger)
    assert count_basic == 100
    assert count_advanced > 2 * count_basic


def test_advanced_filter_total_is_whitehouse_et_al_formula():
    # sqrt(2 ln(1/delta') sum eps_i^2) + sum eps_i^2 / 2, by hand: ln(1e6) = 13.815510557964274;
    # three spends of 0.1: S = 0.03, sqrt(2 * 13.8155 * 0.03) = 0.910456, + 0.015.
    spends = [Spend(0.1, 0.0, "")] * 3
    assert advanced_filter_epsilon(spends, 1e-6) == pytest.approx(0.925456, abs=1e-6)
    # Unequal epsilons: S = 0.25 + 0.04 + 0.01 = 0.3; sqrt(2 * ln(1e3) * 0.3) = 2.035842, + 0.15.
    mixed = [Spend(0.5, 0.0, ""), Spend(0.2, 0.0, ""), Spend(0.1, 0.0, "")]
    assert advanced_filter_epsilon(mixed, 1e-3) == pytest.approx(2.185842, abs=1e-6)
    assert advanced_filter_epsilon([], 1e-6) == 0.0
    with pytest.raises(ValueError, match="slack"):
        advanced_filter_epsilon(spends, 0.0)


def test_advanced_filter_stops_where_the_theorem_says():
    # Budget epsilon 1, delta' = 1e-6: three spends of 0.1 reach 0.925 <= 1, a fourth 1.0713 > 1.
    acc = BudgetAccountant(1.0, 1e-5, composition="advanced", slack=1e-6)
    for _ in range(3):
        acc.spend(0.1)
    assert acc.spent[0] == pytest.approx(0.925456, abs=1e-6)
    assert acc.spent[1] == pytest.approx(1e-6)
    with pytest.raises(BudgetExceededError):
        acc.spend(0.1)
    assert len(acc.ledger) == 3


def test_advanced_filter_refuses_what_the_old_either_rule_accepted():
    # The old rule accepted a spend when basic OR Dwork-Rothblum-Vadhan composition stayed
    # under the budget: the fourth 0.1 (basic sum 0.4 <= 1) was accepted. No theorem covers
    # that stopping rule for adaptively chosen spends; the filter refuses it.
    acc = BudgetAccountant(1.0, 1e-5, composition="advanced", slack=1e-6)
    for _ in range(3):
        acc.spend(0.1)
    assert sum(s.epsilon for s in acc.ledger) + 0.1 <= 1.0  # the old rule's basic branch
    with pytest.raises(BudgetExceededError):
        acc.spend(0.1)


def test_advanced_filter_leaves_delta_minus_slack_for_the_spends():
    acc = BudgetAccountant(10.0, 1e-5, composition="advanced", slack=4e-6)
    acc.spend(0.1, 6e-6)  # sum delta_i = 6e-6 = delta - delta'
    with pytest.raises(BudgetExceededError):
        acc.spend(0.1, 1e-9)
    with pytest.raises(ValueError, match="slack delta' > 0"):
        BudgetAccountant(1.0, 1e-5, composition="advanced")


def test_basic_composition_unchanged_by_the_filter():
    acc = BudgetAccountant(1.0, 1e-5)
    for _ in range(10):
        acc.spend(0.1, 1e-6)
    assert acc.spent == pytest.approx((1.0, 1e-5))
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-6)


def test_estimators_spend_before_touching_data():
    acc = BudgetAccountant(1.0, 1e-5)
    X, y = _data()
    PrivateLogisticRegression(epsilon=0.4, accountant=acc, random_state=0).fit(X, y)
    PrivateLinearSVC(epsilon=0.3, delta=1e-6, mechanism="gaussian_objective", accountant=acc,
                     random_state=0).fit(X, y)
    assert acc.spent == pytest.approx((0.7, 1e-6))
    assert "PrivateLinearSVC(mechanism='gaussian_objective', loss='huber')" in acc.summary()
    model = PrivateLogisticRegression(epsilon=0.5, accountant=acc)
    with pytest.raises(BudgetExceededError, match="Nothing was fitted"):
        model.fit(X, y)
    assert not hasattr(model, "coef_")
    # an exhausted budget is reported before the data is even looked at (an early check
    # that spends nothing; the spend itself comes after every check)
    with pytest.raises(BudgetExceededError):
        model.fit("not data", None)
    assert acc.spent == pytest.approx((0.7, 1e-6))


def test_pure_mechanisms_spend_no_delta():
    acc = BudgetAccountant(1.0, 1e-5)
    X, y = _data()
    PrivateLogisticRegression(epsilon=0.5, delta=1e-5, accountant=acc, random_state=0).fit(X, y)
    assert acc.spent == (0.5, 0.0)


def test_clones_share_the_accountant():
    acc = BudgetAccountant(1.0)
    model = PrivateLogisticRegression(epsilon=0.6, accountant=acc)
    copy = clone(model)
    assert copy.get_params()["accountant"] is acc
    X, y = _data()
    copy.fit(X, y)
    with pytest.raises(BudgetExceededError):
        clone(model).fit(X, y)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"epsilon": -1}, "epsilon must be a number >= 0"),
        ({"delta": 1.5}, "delta must be"),
        ({"composition": "rdp"}, "composition must be one of"),
        ({"slack": 1e-6}, "use composition='advanced'"),
        ({"composition": "advanced", "delta": 1e-7, "slack": 1e-6}, "exceeds the total delta"),
    ],
)
def test_bad_accountant_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BudgetAccountant(**kwargs)


def test_estimator_rejects_a_non_accountant():
    X, y = _data()
    with pytest.raises(ValueError, match="'accountant' parameter of PrivateLogisticRegression must be None or an instance"):
        PrivateLogisticRegression(accountant={"epsilon": 1}).fit(X, y)


def test_kernel_estimators_spend_through_their_linear_model():
    from dperm import PrivateKernelSVC

    acc = BudgetAccountant(1.0)
    X, y = _data()
    PrivateKernelSVC(epsilon=0.7, n_components=20, accountant=acc, random_state=0,
                     feature_random_state=1).fit(X, y)
    assert acc.spent == (0.7, 0.0)
    with pytest.raises(BudgetExceededError):
        PrivateKernelSVC(epsilon=0.7, n_components=20, accountant=acc).fit(X, y)


def test_mechanisms_and_regressors_spend_too():
    from dperm import PrivateLeastSquares, PrivateQuantileRegressor
    from dperm.losses import get_loss
    from dperm.mechanisms import ERMProblem, run_mechanism

    X, y = _data()
    acc = BudgetAccountant(2.0, 1e-5)
    problem = ERMProblem(X, np.where(y == 1, 1.0, -1.0), get_loss("logistic"), 0.1, 1.0)
    rng = np.random.default_rng(0)
    run_mechanism("output", problem, 0.3, 0.0, rng, 1e-8, 1000, accountant=acc)
    run_mechanism("objective", problem, 0.3, 0.0, rng, 1e-8, 1000, accountant=acc)
    run_mechanism("gaussian_objective", problem, 0.3, 1e-6, rng, 1e-8, 1000, accountant=acc)
    PrivateQuantileRegressor(epsilon=0.3, accountant=acc, random_state=0).fit(X, y.astype(float))
    PrivateLeastSquares(epsilon=0.3, accountant=acc, random_state=0).fit(X, y.astype(float))
    assert acc.spent == pytest.approx((1.5, 1e-6))
    with pytest.raises(BudgetExceededError):
        run_mechanism("output", problem, 0.6, 0.0, rng, 1e-8, 1000, accountant=acc)
    hinge = ERMProblem(X, problem.y, get_loss("hinge"), 0.1, 1.0)
    with pytest.raises(ValueError, match="mechanism='output'"):
        run_mechanism("objective", hinge, 0.1, 0.0, rng, 1e-8, 1000, accountant=acc)
    assert acc.spent == pytest.approx((1.5, 1e-6))  # a refused loss spends nothing


# ---------------------------------------------------------------------------
# Check-and-spend is atomic
# ---------------------------------------------------------------------------
def _yield_inside_the_check(accountant):
    """Make every composition total give up the GIL, so that an unlocked check-then-append races.

    Without the lock, a thread that has just passed the check is switched out
    here and another thread passes the same check: the budget is overspent in
    almost every run. With the lock the switch is harmless.
    """
    total = accountant._total

    def slow_total(spends):
        time.sleep(0)
        return total(spends)

    accountant._total = slow_total
    return accountant


def _spend_from_threads(accountant, n_threads, n_spends, spend):
    barrier = threading.Barrier(n_threads)
    successes = [0] * n_threads

    def worker(index):
        barrier.wait()  # all threads start together: maximal contention
        for _ in range(n_spends):
            try:
                spend(accountant, index)
            except BudgetExceededError:
                continue
            successes[index] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(successes)


def _serial_count(epsilon, step):
    """How many spends of ``step`` fit one after the other (the answer concurrency must match)."""
    accountant = BudgetAccountant(epsilon)
    count = 0
    while True:
        try:
            accountant.spend(step)
        except BudgetExceededError:
            return count
        count += 1


@pytest.mark.parametrize("yield_in_check", [False, True], ids=["plain", "gil-yield-in-check"])
def test_concurrent_spends_never_exceed_the_budget(yield_in_check):
    accountant = BudgetAccountant(epsilon=10.0)
    if yield_in_check:
        _yield_inside_the_check(accountant)
    successes = _spend_from_threads(accountant, 32, 100, lambda acc, _: acc.spend(0.01, label="thread"))
    ledger = accountant.ledger
    assert successes == len(ledger) == _serial_count(10.0, 0.01)  # 3200 tried, exactly these fit
    assert sum(s.epsilon for s in ledger) == pytest.approx(successes * 0.01)
    assert accountant.spent[0] <= 10.0 + 1e-12


def test_concurrent_parallel_and_sequential_spends_never_exceed_the_budget():
    accountant = _yield_inside_the_check(BudgetAccountant(epsilon=2.0, delta=1e-3))

    def spend(acc, index):
        if index % 2:
            acc.spend_parallel([(0.01, 1e-6), (0.005, 0.0)], label="parallel")
        else:
            acc.spend(0.01, 1e-6, label="sequential")

    successes = _spend_from_threads(accountant, 16, 40, spend)
    assert successes == len(accountant.ledger) == _serial_count(2.0, 0.01)  # both cost 0.01
    assert {s.label for s in accountant.ledger} == {"sequential", "parallel (parallel over 2 disjoint parts)"}
    epsilon, delta = accountant.spent
    assert epsilon <= 2.0 + 1e-12 and delta <= 1e-3 + 1e-12


def test_concurrent_estimator_fits_never_exceed_the_budget():
    X, y = _data()
    accountant = _yield_inside_the_check(BudgetAccountant(epsilon=1.0))
    fitted = _spend_from_threads(
        accountant, 8, 1,
        lambda acc, _: PrivateLogisticRegression(epsilon=0.3, accountant=acc, random_state=0).fit(X, y),
    )
    assert fitted == len(accountant.ledger) == 3


# ---------------------------------------------------------------------------
# One accountant, one budget: shared by copies, never pickled
# ---------------------------------------------------------------------------
def test_copies_are_the_same_accountant_and_pickling_is_refused():
    accountant = BudgetAccountant(1.0)
    assert copy.copy(accountant) is accountant and copy.deepcopy(accountant) is accountant
    with pytest.raises(TypeError, match="second, independent budget"):
        pickle.dumps(accountant)
    model = PrivateLogisticRegression(accountant=accountant)
    assert clone(model).accountant is accountant  # clone deep-copies parameters: shared
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(model)
    pickle.dumps(PrivateLogisticRegression())  # without an accountant an estimator pickles as before
