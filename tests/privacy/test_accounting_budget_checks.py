"""Check first, spend last (issue 14, finding 6): a configuration or data error costs no budget.

Every estimator family runs its parameter, compatibility and data checks before it
touches the accountant. Each case below fits with an accountant that already holds one
spend, expects the error that names the problem, and then requires the accountant's
``spent`` and ``ledger`` to be exactly what they were. A valid fit of the same family
(``test_a_valid_fit_of_each_family_spends_once``) shows that the accountant is charged
at all, so the unchanged ledger is not vacuous.
"""

import math

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dperm import (
    BudgetAccountant,
    PrivateKernelLogisticRegression,
    PrivateKernelSVC,
    PrivateLeastSquares,
    PrivateLinearSVC,
    PrivateLogisticRegression,
    PrivateQuantileRegressor,
)
from dperm.losses import SquaredLoss, get_loss
from dperm.mechanisms import ERMProblem, run_mechanism
from dperm.multiparty import LocalAggregationClassifier, PSGDClassifier
from dperm.prediction import PrivatePredictor
from dperm.tuning import PrivateParameterSearch
from tests.conftest import unit_rows


def _classification(n=120, d=3, seed=0):
    X, y = make_classification(n, d, n_informative=d, n_redundant=0, random_state=seed)
    return X / np.linalg.norm(X, axis=1).max(), y


def _with_nan(X):
    X = X.copy()
    X[5, 1] = np.nan
    return X


def _shards(n=120, d=3, seed=0):
    X, y = _classification(n, d, seed)
    return [(X[:60], y[:60]), (X[60:], y[60:])]


def _accountant():
    """A budget with one spend already on its ledger, so that 'unchanged' means something."""
    accountant = BudgetAccountant(epsilon=100.0, delta=1e-3)
    accountant.spend(0.25, 1e-6, label="an earlier release")
    return accountant


def _assert_untouched(accountant):
    assert accountant.spent == (0.25, 1e-6)
    assert [(s.epsilon, s.delta, s.label) for s in accountant.ledger] == [
        (0.25, 1e-6, "an earlier release")
    ]


X, Y = _classification()
Y_REAL = X @ np.array([0.5, -0.3, 0.2])

# (id, factory(accountant) -> estimator, fit arguments, expected exception, message)
CLASSIFIER_CASES = [
    ("svc-hinge-objective", lambda a: PrivateLinearSVC(loss="hinge", mechanism="objective", accountant=a),
     (X, Y), ValueError, "twice-differentiable"),
    ("svc-hinge-gaussian-objective",
     lambda a: PrivateLinearSVC(loss="hinge", mechanism="gaussian_objective", delta=1e-5, accountant=a),
     (X, Y), ValueError, "twice-differentiable"),
    ("gaussian-objective-delta-0",
     lambda a: PrivateLogisticRegression(mechanism="gaussian_objective", delta=0.0, accountant=a),
     (X, Y), ValueError, "needs delta > 0"),
    ("gaussian-objective-004-delta-0",
     lambda a: PrivateLogisticRegression(mechanism="gaussian_objective_004", delta=0.0, accountant=a),
     (X, Y), ValueError, "needs delta > 0"),
    ("svc-hinge-gaussian-objective-004",
     lambda a: PrivateLinearSVC(loss="hinge", mechanism="gaussian_objective_004", delta=1e-5, accountant=a),
     (X, Y), ValueError, "twice-differentiable"),
    ("unknown-mechanism", lambda a: PrivateLogisticRegression(mechanism="laplace", accountant=a),
     (X, Y), ValueError, r"'mechanism' parameter of \w+ must be a str among"),
    ("epsilon-negative", lambda a: PrivateLogisticRegression(epsilon=-1.0, accountant=a),
     (X, Y), ValueError, "'epsilon' parameter"),
    ("epsilon-nan", lambda a: PrivateLogisticRegression(epsilon=math.nan, accountant=a),
     (X, Y), ValueError, "'epsilon' parameter"),
    ("delta-one", lambda a: PrivateLogisticRegression(delta=1.0, accountant=a),
     (X, Y), ValueError, "'delta' parameter"),
    ("data-norm-zero", lambda a: PrivateLogisticRegression(data_norm=0.0, accountant=a),
     (X, Y), ValueError, "data_norm"),
    ("data-norm-infinite", lambda a: PrivateLinearSVC(data_norm=math.inf, accountant=a),
     (X, Y), ValueError, "data_norm"),
    ("bad-random-state", lambda a: PrivateLogisticRegression(random_state="seed", accountant=a),
     (X, Y), ValueError, "random_state"),
    ("nan-in-X", lambda a: PrivateLogisticRegression(accountant=a),
     (_with_nan(X), Y), ValueError, "NaN"),
    ("one-class", lambda a: PrivateLogisticRegression(accountant=a),
     (X, np.zeros(X.shape[0])), ValueError, "at least two"),
    ("continuous-labels", lambda a: PrivateLinearSVC(accountant=a),
     (X, Y_REAL), ValueError, "Unknown label type"),
    ("rows-and-labels-differ", lambda a: PrivateLogisticRegression(accountant=a),
     (X, Y[:-1]), ValueError, "inconsistent numbers of samples"),
    ("kernel-hinge-objective",
     lambda a: PrivateKernelSVC(loss="hinge", mechanism="objective", n_components=10, accountant=a),
     (X, Y), ValueError, "twice-differentiable"),
    ("kernel-bad-gamma", lambda a: PrivateKernelLogisticRegression(gamma=-1.0, accountant=a),
     (X, Y), ValueError, "gamma"),
    ("kernel-one-class", lambda a: PrivateKernelSVC(n_components=10, accountant=a),
     (X, np.ones(X.shape[0])), ValueError, "at least two"),
]

REGRESSOR_CASES = [
    ("string-labels", lambda a: PrivateQuantileRegressor(accountant=a),
     (X, np.where(Y == 1, "yes", "no")), ValueError, "could not convert"),
    ("nan-labels", lambda a: PrivateLeastSquares(accountant=a),
     (X, np.where(np.arange(X.shape[0]) == 3, np.nan, Y_REAL)), ValueError, "NaN"),
    ("two-column-labels", lambda a: PrivateLeastSquares(accountant=a),
     (X, np.column_stack([Y_REAL, Y_REAL])), ValueError, "1d array|1-d|shape"),
    ("nan-in-X", lambda a: PrivateQuantileRegressor(accountant=a),
     (_with_nan(X), Y_REAL), ValueError, "NaN"),
    ("quantile-outside-0-1", lambda a: PrivateQuantileRegressor(quantile=1.5, accountant=a),
     (X, Y_REAL), ValueError, "quantile"),
    ("y-bound-zero", lambda a: PrivateLeastSquares(y_bound=0.0, accountant=a),
     (X, Y_REAL), ValueError, "y_bound"),
    ("epsilon-zero", lambda a: PrivateLeastSquares(epsilon=0.0, accountant=a),
     (X, Y_REAL), ValueError, "'epsilon' parameter"),
    ("data-norm-negative", lambda a: PrivateQuantileRegressor(data_norm=-1.0, accountant=a),
     (X, Y_REAL), ValueError, "data_norm"),
]

PREDICTOR_CASES = [
    ("bad-kernel", lambda a: PrivatePredictor(1.0, 0.1, kernel="poly", accountant=a),
     (X, Y_REAL), ValueError, "'kernel' parameter"),
    ("bad-loss", lambda a: PrivatePredictor(1.0, 0.1, loss="logistic", accountant=a),
     (X, Y_REAL), ValueError, "'loss' parameter"),
    ("hinge-three-classes", lambda a: PrivatePredictor(1.0, 0.1, loss="hinge", accountant=a),
     (X, np.arange(X.shape[0]) % 3), ValueError, "exactly two classes"),
    ("per-query-over-total", lambda a: PrivatePredictor(1.0, 2.0, accountant=a),
     (X, Y_REAL), ValueError, "exceeds epsilon_total"),
]

TUNING_CASES = [
    ("grid-bad-alpha",
     lambda a: PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [1e-2, -1.0]}, accountant=a),
     (X, Y), ValueError, "'alpha' parameter"),
    ("grid-hinge-with-objective",
     lambda a: PrivateParameterSearch(PrivateLinearSVC(mechanism="objective"),
                                      {"loss": ["huber", "hinge"]}, accountant=a),
     (X, Y), ValueError, "twice-differentiable"),
    ("grid-unknown-parameter",
     lambda a: PrivateParameterSearch(PrivateLogisticRegression(), {"lambda": [1.0]}, accountant=a),
     (X, Y), ValueError, "Invalid parameter"),
    ("grid-empty", lambda a: PrivateParameterSearch(PrivateLogisticRegression(), [], accountant=a),
     (X, Y), ValueError, "at least one candidate"),
    ("grid-sets-epsilon",
     lambda a: PrivateParameterSearch(PrivateLogisticRegression(), {"epsilon": [1.0]}, accountant=a),
     (X, Y), ValueError, "may not set"),
    ("kernel-candidate-bad-gamma",
     lambda a: PrivateParameterSearch(PrivateKernelSVC(n_components=10), {"gamma": [1.0, 0.0]},
                                      accountant=a),
     (X, Y), ValueError, "gamma"),
    ("one-class", lambda a: PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [0.1]},
                                                   accountant=a),
     (X, np.zeros(X.shape[0], dtype=int)), ValueError, "at least two"),
    ("nan-in-X", lambda a: PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [0.1]},
                                                  accountant=a),
     (_with_nan(X), Y), ValueError, "NaN"),
    ("too-many-candidates",
     lambda a: PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": list(np.logspace(-3, 0, 70))},
                                      accountant=a),
     (X, Y), ValueError, "cannot be split"),
]

SHARDS = _shards()
MULTIPARTY_CASES = [
    ("psgd-one-shard", lambda a: PSGDClassifier(n_rounds=5, accountant=a),
     (SHARDS[:1],), ValueError, "at least 2"),
    ("psgd-shard-other-width", lambda a: PSGDClassifier(n_rounds=5, accountant=a),
     ([SHARDS[0], (SHARDS[1][0][:, :2], SHARDS[1][1])],), ValueError, "different numbers of features"),
    ("psgd-nan-in-shard", lambda a: PSGDClassifier(n_rounds=5, accountant=a),
     ([SHARDS[0], (_with_nan(SHARDS[1][0]), SHARDS[1][1])],), ValueError, "shard 1"),
    ("psgd-empty-shard", lambda a: PSGDClassifier(n_rounds=5, accountant=a),
     ([SHARDS[0], (np.empty((0, 3)), np.empty(0))],), ValueError, "empty"),
    ("psgd-one-class", lambda a: PSGDClassifier(n_rounds=5, accountant=a),
     ([(SHARDS[0][0], np.ones(60)), (SHARDS[1][0], np.ones(60))],), ValueError, "single class"),
    ("psgd-bad-step-size", lambda a: PSGDClassifier(n_rounds=5, step_size="fast", accountant=a),
     (SHARDS,), ValueError, "step_size"),
    ("psgd-bad-composition-slack",
     lambda a: PSGDClassifier(n_rounds=5, composition_slack=2.0, accountant=a),
     (SHARDS,), ValueError, "composition_slack"),
    ("psgd-bad-secure-sum", lambda a: PSGDClassifier(n_rounds=5, secure_sum="tcp", accountant=a),
     (SHARDS,), ValueError, "secure_sum"),
    ("psgd-hinge", lambda a: PSGDClassifier(n_rounds=5, loss="hinge", accountant=a),
     (SHARDS,), ValueError, "'loss' parameter of PSGDClassifier must be a str among"),
    ("psgd-delta-zero", lambda a: PSGDClassifier(n_rounds=5, delta=0.0, accountant=a),
     (SHARDS,), ValueError, "delta"),
    ("local-aggregation-one-shard", lambda a: LocalAggregationClassifier(accountant=a),
     (SHARDS[:1],), ValueError, "at least 2"),
    ("local-aggregation-nan-in-shard", lambda a: LocalAggregationClassifier(accountant=a),
     ([(_with_nan(SHARDS[0][0]), SHARDS[0][1]), SHARDS[1]],), ValueError, "shard 0"),
    ("local-aggregation-bad-tol", lambda a: LocalAggregationClassifier(tol=0.0, accountant=a),
     (SHARDS,), ValueError, "tol"),
]

ALL_CASES = [(f"{family}-{case[0]}", *case[1:]) for family, cases in (
    ("classifier", CLASSIFIER_CASES), ("regressor", REGRESSOR_CASES), ("predictor", PREDICTOR_CASES),
    ("tuning", TUNING_CASES), ("multiparty", MULTIPARTY_CASES)) for case in cases]


@pytest.mark.parametrize("factory, arguments, error, message",
                         [case[1:] for case in ALL_CASES], ids=[case[0] for case in ALL_CASES])
def test_a_configuration_error_spends_nothing(factory, arguments, error, message):
    accountant = _accountant()
    with pytest.raises(error, match=message):
        factory(accountant).fit(*arguments)
    _assert_untouched(accountant)


VALID_FITS = [
    ("linear", lambda a: PrivateLogisticRegression(epsilon=0.5, accountant=a, random_state=0), (X, Y)),
    ("svc-hinge-output",
     lambda a: PrivateLinearSVC(loss="hinge", mechanism="output", epsilon=0.5, accountant=a, random_state=0),
     (X, Y)),
    ("kernel", lambda a: PrivateKernelSVC(epsilon=0.5, n_components=10, accountant=a, random_state=0,
                                          feature_random_state=1), (X, Y)),
    ("regressor", lambda a: PrivateLeastSquares(epsilon=0.5, accountant=a, random_state=0), (X, Y_REAL)),
    ("tuning", lambda a: PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [0.1, 1.0]},
                                                epsilon=0.5, accountant=a, random_state=0), (X, Y)),
    ("psgd", lambda a: PSGDClassifier(epsilon=0.5, n_rounds=5, accountant=a, random_state=0), (SHARDS,)),
    ("local-aggregation", lambda a: LocalAggregationClassifier(epsilon=0.5, accountant=a, random_state=0),
     (SHARDS,)),
]


@pytest.mark.parametrize("factory, arguments", [case[1:] for case in VALID_FITS],
                         ids=[case[0] for case in VALID_FITS])
def test_a_valid_fit_of_each_family_spends_once(factory, arguments):
    accountant = _accountant()
    factory(accountant).fit(*arguments)
    assert len(accountant.ledger) == 2
    assert accountant.ledger[-1].epsilon == 0.5


def test_psgd_spends_its_delta_and_local_aggregation_none():
    psgd_budget, local_budget = BudgetAccountant(1.0, 1e-3), BudgetAccountant(1.0, 1e-3)
    PSGDClassifier(epsilon=0.5, delta=1e-5, n_rounds=5, accountant=psgd_budget, random_state=0).fit(SHARDS)
    LocalAggregationClassifier(epsilon=0.5, accountant=local_budget, random_state=0).fit(SHARDS)
    assert psgd_budget.spent == pytest.approx((0.5, 1e-5))
    assert local_budget.spent == (0.5, 0.0)
    assert "PSGDClassifier" in psgd_budget.ledger[0].label


def test_multiparty_results_do_not_depend_on_the_accountant():
    """Spending moved ahead of the party set-up; the seeded random streams are unchanged."""
    plain = PSGDClassifier(n_rounds=5, random_state=3).fit(SHARDS)
    charged = PSGDClassifier(n_rounds=5, random_state=3, accountant=BudgetAccountant(1.0, 1e-3)).fit(SHARDS)
    np.testing.assert_array_equal(plain.coef_, charged.coef_)


def test_mechanisms_refuse_a_loss_before_spending():
    """The mechanisms called directly: least squares has no global Lipschitz bound, hinge no curvature."""
    accountant = _accountant()
    rng = np.random.default_rng(0)
    labels = np.where(Y == 1, 1.0, -1.0)
    squared = ERMProblem(X, Y_REAL, SquaredLoss(y_bound=1.0), 0.1, 1.0)
    hinge = ERMProblem(X, labels, get_loss("hinge"), 0.1, 1.0)
    for mechanism, delta in (("objective", 0.0), ("gaussian_objective", 1e-5)):
        with pytest.raises(ValueError, match="globally Lipschitz"):
            run_mechanism(mechanism, squared, 0.1, delta, rng, 1e-8, 100, accountant=accountant)
        with pytest.raises(ValueError, match="twice-differentiable"):
            run_mechanism(mechanism, hinge, 0.1, delta, rng, 1e-8, 100, accountant=accountant)
    _assert_untouched(accountant)


def test_an_exhausted_budget_is_refused_before_the_data_is_read():
    """The early, spend-nothing budget check: a long data pass is not wasted on a refused fit."""
    from dperm.exceptions import BudgetExceededError

    accountant = BudgetAccountant(epsilon=0.1)
    for model in (PrivateLogisticRegression(epsilon=0.5, accountant=accountant),
                  PrivateLeastSquares(epsilon=0.5, accountant=accountant),
                  PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [0.1]}, epsilon=0.5,
                                         accountant=accountant),
                  PSGDClassifier(epsilon=0.5, accountant=accountant)):
        with pytest.raises(BudgetExceededError):
            model.fit("not data", None)
    assert accountant.ledger == ()


# -- the Dask path: the validating scan runs before the spend ------------------------
def _dask(X, y, chunks=40):
    da = pytest.importorskip("dask.array")
    return da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=(chunks,))


@pytest.mark.parametrize("X_bad, y_bad, message", [
    (_with_nan(X), Y, "NaN"),
    (X, np.zeros(X.shape[0], dtype=int), "at least two"),
    (X, Y_REAL, "Unknown label type"),
], ids=["nan-in-a-chunk", "one-class", "continuous-labels"])
def test_dask_scan_errors_spend_nothing(X_bad, y_bad, message):
    accountant = _accountant()
    model = PrivateLogisticRegression(accountant=accountant, scheduler="synchronous")
    with pytest.raises(ValueError, match=message):
        model.fit(*_dask(X_bad, y_bad))
    _assert_untouched(accountant)


def test_dask_hinge_with_objective_spends_nothing():
    accountant = _accountant()
    with pytest.raises(ValueError, match="twice-differentiable"):
        PrivateLinearSVC(loss="hinge", mechanism="objective", accountant=accountant, scheduler="synchronous").fit(*_dask(X, Y))
    _assert_untouched(accountant)


def test_dask_fit_spends_once_after_the_scan():
    accountant = _accountant()
    PrivateLogisticRegression(epsilon=0.5, accountant=accountant, scheduler="synchronous",
                              random_state=0).fit(*_dask(X, Y))
    assert len(accountant.ledger) == 2 and accountant.ledger[-1].epsilon == 0.5


# ---------------------------------------------------------------------------
# Issue 28 B: budget sanity at public n, before anything is spent
# ---------------------------------------------------------------------------
import re  # noqa: E402
import warnings  # noqa: E402

from dperm import WeakGuaranteeWarning  # noqa: E402
from dperm.validation import WEAK_EPSILON, check_budget_for_data  # noqa: E402


def _unit_rows(n=2000, d=5, seed=0):
    return unit_rows(n, d, seed)


@pytest.mark.parametrize("mechanism", ["gaussian_objective", "auto"])
def test_delta_of_one_over_n_is_refused_before_spending(mechanism):
    X, y = _unit_rows(2000)
    acc = BudgetAccountant(np.inf, 0.9)
    with pytest.raises(ValueError, match=r"delta=0.0005 is at least 1/n = 1/2000.*Dwork & Roth"):
        PrivateLogisticRegression(delta=1 / 2000, mechanism=mechanism, classes=[0, 1],
                                  accountant=acc, random_state=0).fit(X, y)
    assert acc.ledger == ()
    fitted = PrivateLogisticRegression(delta=0.99 / 2000, mechanism="gaussian_objective",
                                       classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    assert fitted.privacy_.delta == 0.99 / 2000  # just below 1/n: allowed


def test_delta_is_checked_against_a_search_candidates_part_size():
    X, y = _unit_rows(4000)  # 3 parts of 1,333 or 1,334 rows: delta = 1e-3 >= 1/1,334
    acc = BudgetAccountant(np.inf, 0.5)
    search = PrivateParameterSearch(
        PrivateLogisticRegression(delta=1e-3, mechanism="gaussian_objective", classes=[0, 1]),
        {"alpha": [1e-2, 1e-1]}, accountant=acc, random_state=0)
    with pytest.raises(ValueError, match="is at least 1/n = 1/133"):
        search.fit(X, y)
    assert acc.ledger == ()


def test_multiparty_refuses_delta_of_one_over_n():
    X, y = _unit_rows(120)
    shards = [(X[:60], y[:60]), (X[60:], y[60:])]
    acc = BudgetAccountant(np.inf, 0.5)
    with pytest.raises(ValueError, match="is at least 1/n = 1/120"):
        PSGDClassifier(delta=0.01, n_rounds=5, accountant=acc, classes=[0, 1],
                       random_state=0).fit(shards)
    assert acc.ledger == ()


def test_an_epsilon_above_ten_warns_and_ten_does_not():
    X, y = _unit_rows()
    with warnings.catch_warnings():
        warnings.simplefilter("error", WeakGuaranteeWarning)
        PrivateLogisticRegression(epsilon=WEAK_EPSILON, classes=[0, 1], random_state=0).fit(X, y)
    with pytest.warns(WeakGuaranteeWarning, match=r"epsilon=1e\+300 is above 10"):
        model = PrivateLogisticRegression(epsilon=1e300, classes=[0, 1], random_state=0).fit(X, y)
    assert model.privacy_.epsilon == 1e300  # a warning, not a refusal: the record states it
    with pytest.warns(WeakGuaranteeWarning):
        check_budget_for_data(11.0, 0.0, 100)
    with pytest.warns(WeakGuaranteeWarning):
        PrivatePredictor(epsilon_total=20.0, epsilon_per_query=1.0).fit(X[:200], X[:200, 0])


@pytest.mark.parametrize("mechanism,delta", [("objective", 0.0), ("output", 0.0),
                                             ("gaussian_objective", 1e-6)])
def test_an_epsilon_whose_noise_swamps_every_coefficient_is_refused_with_one_that_works(
        mechanism, delta):
    X, y = _unit_rows(2000)
    acc = BudgetAccountant(np.inf, 0.5)
    with pytest.raises(ValueError, match="would swamp every coefficient") as refused:
        PrivateLogisticRegression(epsilon=1e-9, delta=delta, mechanism=mechanism, classes=[0, 1],
                                  accountant=acc, random_state=0).fit(X, y)
    assert acc.ledger == ()
    suggested = float(re.search(r"Epsilon >= ([0-9.e+-]+) would", str(refused.value)).group(1))
    with pytest.raises(ValueError, match="would swamp every coefficient"):
        PrivateLogisticRegression(epsilon=suggested / 1.05, delta=delta, mechanism=mechanism,
                                  classes=[0, 1], random_state=0).fit(X, y)
    model = PrivateLogisticRegression(epsilon=suggested, delta=delta, mechanism=mechanism,
                                      classes=[0, 1], random_state=0).fit(X, y)
    assert np.isfinite(model.coef_).all() and model.alpha_ < 1e6
