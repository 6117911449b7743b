"""Private prediction (000 Lemma 1, Prop. 1; 002 eq. 2; notes 5-6): noise, sensitivity, budget, secrecy."""

import copy
import math
import pickle
import threading
import time

import joblib
import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.kernel_ridge import KernelRidge
from threadpoolctl import threadpool_limits

from dperm.exceptions import BudgetExceededError, DataClippingWarning
from dperm.kernels import kernel_matrix
from dperm.losses import get_loss
from dperm.mechanisms.output import NONSMOOTH_RADIUS_FRACTION
from dperm.mechanisms.prediction import (
    CLOSED_FORM_RADIUS_FRACTION,
    PREDICTION_LOSSES,
    prediction_sensitivity,
    solution_radius_allowance,
)
from dperm.prediction import PrivatePredictor
from dperm.privacy.accounting import BudgetAccountant
from dperm.solvers import solve_hinge_svm
from dperm.solvers.kernel import fit_exact_kernel_model, solve_kernel_hinge


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """Small matrix products are much slower with two BLAS threads on a busy machine."""
    with threadpool_limits(1):
        yield


def _regression_data(m=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(m, 2))
    return X, 0.6 * np.sin(2.0 * X[:, 0]) * np.cos(X[:, 1])


def _classification_data(m=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(m, 2))
    return X, np.where(X[:, 0] + 0.4 * rng.standard_normal(m) > 0.0, "yes", "no")


# ---------------------------------------------------------------------------
# The noise of each answer
# ---------------------------------------------------------------------------
def test_least_squares_model_is_kernel_ridge_with_lambda_m():
    """alpha/2 ||f||^2 = lambda ||f||^2 (note 7): scikit-learn's KernelRidge(alpha = lambda m)."""
    X, y = _regression_data()
    alpha, gamma = 0.5, 2.0
    predictor = PrivatePredictor(1.0, 0.1, alpha=alpha, gamma=gamma, random_state=0).fit(X, y)
    reference = KernelRidge(alpha=alpha / 2 * X.shape[0], kernel="rbf", gamma=gamma).fit(X, y)
    queries = np.random.default_rng(1).uniform(-1, 1, size=(20, 2))
    np.testing.assert_allclose(predictor._exact_model.values(queries), reference.predict(queries),
                               rtol=1e-10, atol=1e-12)


def test_answers_are_laplace_with_scale_b_delta_over_epsilon():
    """KS test of repeated answers at one x against the exact pi(f(x)) and scale B_Delta / eps."""
    X, y = _regression_data()
    n_answers, epsilon_per_query = 3000, 0.5
    predictor = PrivatePredictor(n_answers * epsilon_per_query, epsilon_per_query, alpha=0.5,
                                 gamma=2.0, random_state=3).fit(X, y)
    query = np.array([[0.3, -0.2]])
    exact = KernelRidge(alpha=0.25 * X.shape[0], kernel="rbf", gamma=2.0).fit(X, y).predict(query)[0]
    noise = predictor.predict(np.repeat(query, n_answers, axis=0)) - np.clip(exact, -1.0, 1.0)
    scale = predictor.privacy_.noise_scale
    # the grid adds at most one step of 1/1024 of the sensitivity (float-safe noise)
    assert scale == pytest.approx(predictor.privacy_.sensitivity / epsilon_per_query, rel=1 / 1024)
    assert stats.kstest(noise, "laplace", args=(0.0, scale)).pvalue > 1e-3
    # Power: the half scale printed in 000 Prop. 1 (note 5) is rejected.
    assert stats.kstest(noise, "laplace", args=(0.0, scale / 2)).pvalue < 1e-6


def test_hinge_answers_are_laplace_around_the_secret_value():
    X, y = _classification_data()
    predictor = PrivatePredictor(2000 * 0.2, 0.2, loss="hinge", alpha=0.2, random_state=5).fit(X, y)
    query = np.array([[-0.1, 0.4]])
    exact = predictor._exact_model.values(query)[0]
    noise = predictor.decision_function(np.repeat(query, 2000, axis=0)) - exact
    assert stats.kstest(noise, "laplace", args=(0.0, predictor.privacy_.noise_scale)).pvalue > 1e-3


def test_repeated_query_gets_fresh_noise_and_costs_twice():
    X, y = _regression_data()
    predictor = PrivatePredictor(1.0, 0.25, alpha=1.0, random_state=0).fit(X, y)
    first = predictor.predict(X[:1])
    second = predictor.predict(X[:1])
    assert first[0] != second[0]
    assert predictor.queries_answered_ == 2
    assert predictor.epsilon_spent_ == pytest.approx(0.5)


# ---------------------------------------------------------------------------
# B_Delta: the formula and brute force
# ---------------------------------------------------------------------------
def test_b_delta_against_hand_computation():
    # Hinge (000 Sec. 5.2): C_L = 1, kappa = 1, gamma = 2, lambda = alpha / 2 = 0.05, m = 100:
    # B_Delta = 2 * 1 * 1 / (0.05 * 2 * 100) = 0.2.
    assert prediction_sensitivity(1.0, 1.0, 0.05, 100) == pytest.approx(0.2)
    # Least squares (000 Sec. 5.1), M = 1, alpha = 0.5 (lambda = 0.25):
    # C_L = 2 (M + kappa M / sqrt(lambda)) = 2 (1 + 2) = 6; B_Delta = 2 * 6 / (0.25 * 2 * 100) = 0.24.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(100, 2))
    squared = PrivatePredictor(1.0, 0.1, alpha=0.5, y_bound=1.0, random_state=0)
    squared.fit(X, 0.5 * X[:, 0])
    assert squared.privacy_.lipschitz == pytest.approx(6.0)
    assert squared.privacy_.sensitivity == pytest.approx(0.24)
    assert squared.privacy_.calibrated_sensitivity == pytest.approx(
        0.24 * (1 + 2 * CLOSED_FORM_RADIUS_FRACTION))
    assert squared.privacy_.noise_scale == pytest.approx(squared.privacy_.calibrated_sensitivity / 0.1,
                                                         rel=1 / 1024)
    hinge = PrivatePredictor(1.0, 0.1, loss="hinge", alpha=0.1, random_state=0)
    hinge.fit(X, np.where(X[:, 0] > 0, 1, -1))
    assert hinge.privacy_.sensitivity == pytest.approx(0.2)
    assert hinge.privacy_.calibrated_sensitivity == pytest.approx(0.2 * (1 + 2 * NONSMOOTH_RADIUS_FRACTION))
    assert "solution_radius" not in hinge.privacy_.to_dict()  # achieved radius: not released


def _secret_values(X, y, loss, alpha, gamma, queries):
    """The exact (projected) values and B_Delta for one data set, without any noise."""
    m = X.shape[0]
    loss = get_loss(loss, y_bound=1.0)
    lipschitz = loss.solution_lipschitz(1.0, alpha)
    b_delta = prediction_sensitivity(1.0, lipschitz, alpha / 2, m)
    radius = solution_radius_allowance(loss, b_delta, 1.0)
    model, _ = fit_exact_kernel_model(X, y, loss, "rbf", gamma, alpha, radius, 1000)
    return model.values(queries), b_delta


def _neighbours(X, y, j, rng):
    """Random and adversarial replacements of record j (label flips, far points, duplicates)."""
    other = (j + 1) % X.shape[0]
    yield rng.uniform(-1, 1, size=X.shape[1]), -y[j]  # random point, opposite extreme label
    yield X[j], -y[j]  # same point, label flipped: the worst case for the hinge
    yield np.full(X.shape[1], 5.0), y[j]  # far away: the record vanishes from the data
    yield X[other], -y[other]  # duplicate of another record with the opposite label


@pytest.mark.parametrize("loss", PREDICTION_LOSSES)
@pytest.mark.parametrize("alpha, gamma", [(0.1, 1.0), (1.0, 0.5), (2.0, 3.0)])
def test_empirical_sensitivity_never_exceeds_b_delta(loss, alpha, gamma):
    rng = np.random.default_rng(7)
    m = 25
    worst_ratio = 0.0
    for _ in range(4):
        X = rng.uniform(-1, 1, size=(m, 2))
        y = np.where(rng.uniform(size=m) < 0.5, 1.0, -1.0)  # extreme labels |y| = M
        queries = np.vstack([X, rng.uniform(-1.5, 1.5, size=(100, 2))])
        values, b_delta = _secret_values(X, y, loss, alpha, gamma, queries)
        j = int(rng.integers(m))
        for x_new, y_new in _neighbours(X, y, j, rng):
            X_nb, y_nb = X.copy(), y.copy()
            X_nb[j], y_nb[j] = x_new, y_new
            values_nb, _ = _secret_values(X_nb, y_nb, loss, alpha, gamma, queries)
            worst_ratio = max(worst_ratio, float(np.max(np.abs(values - values_nb))) / b_delta)
    assert worst_ratio <= 1.0 + 1e-9
    if loss == "hinge" and alpha >= 1.0:
        # Every record is a bound support vector: flipping one label moves f(x_j) by exactly
        # 2 / (alpha m) = B_Delta, so the bound is tight and the check has power.
        assert worst_ratio == pytest.approx(1.0, abs=1e-9)


def test_kernel_hinge_solve_agrees_with_liblinear_on_explicit_features():
    """f(x_i) of the kernel dual solve equals the linear SVM on a Cholesky factor of K."""
    X, labels = _classification_data(m=40)
    y = np.where(labels == "yes", 1.0, -1.0)
    alpha, gamma = 0.05, 4.0
    K = kernel_matrix("rbf", X, X, gamma)
    kernel_solve = solve_kernel_hinge(K, y, alpha, radius_tol=1e-3, max_iter=1000)
    features = np.linalg.cholesky(K)  # rows phi_i with phi_i . phi_j = K_ij, ||phi_i|| = 1
    linear_solve = solve_hinge_svm(features, y, alpha, radius_tol=1e-3, max_iter=100000)
    assert kernel_solve.certified and linear_solve.certified
    tolerance = kernel_solve.solution_radius + linear_solve.solution_radius + 1e-9
    np.testing.assert_allclose(K @ kernel_solve.coef, features @ linear_solve.coef, atol=tolerance)


# ---------------------------------------------------------------------------
# The budget
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon_total, epsilon_per_query, answerable",
                         [(1.0, 0.1, 10), (1.0, 0.3, 3), (0.5, 0.5, 1), (2.0, 0.7, 2)])
def test_exact_number_of_answerable_queries(epsilon_total, epsilon_per_query, answerable):
    X, y = _regression_data()
    predictor = PrivatePredictor(epsilon_total, epsilon_per_query, alpha=1.0, random_state=0).fit(X, y)
    assert predictor.answers_remaining_ == answerable
    for _ in range(answerable):
        predictor.predict(X[:1])
    assert predictor.queries_answered_ == answerable
    assert predictor.answers_remaining_ == 0
    with pytest.raises(BudgetExceededError):
        predictor.predict(X[:1])
    assert predictor.queries_answered_ == answerable


def test_batch_that_does_not_fit_answers_nothing_and_spends_nothing():
    X, y = _regression_data()
    predictor = PrivatePredictor(1.0, 0.1, alpha=1.0, random_state=0).fit(X, y)
    for _ in range(3):
        assert predictor.predict(X[:3]).shape == (3,)
    noise_state = predictor._noise_rng.bit_generator.state
    with pytest.raises(BudgetExceededError, match="would bring the total"):
        predictor.predict(X[:2])  # 0.9 + 0.2 > 1
    assert predictor.queries_answered_ == 9
    assert predictor.epsilon_spent_ == pytest.approx(0.9)
    assert predictor._noise_rng.bit_generator.state == noise_state  # not a single draw
    assert predictor.predict(X[:1]).shape == (1,)  # the last answer still fits
    assert predictor.budget_remaining_ == pytest.approx(0.0, abs=1e-12)


def test_shared_accountant_ledger():
    X, y = _regression_data()
    shared = BudgetAccountant(epsilon=0.5)
    predictor = PrivatePredictor(1.0, 0.1, alpha=1.0, accountant=shared, random_state=0).fit(X, y)
    assert shared.ledger == ()  # fitting releases nothing and spends nothing
    predictor.predict(X[:2])
    assert len(shared.ledger) == 1
    assert shared.ledger[0].epsilon == pytest.approx(0.2)
    assert "PrivatePredictor: 2 answer(s)" in shared.ledger[0].label
    with pytest.raises(BudgetExceededError):
        predictor.predict(X[:4])  # within epsilon_total, over the shared budget
    assert len(shared.ledger) == 1
    assert predictor.queries_answered_ == 2
    assert predictor.epsilon_spent_ == pytest.approx(0.2)
    assert predictor.answers_remaining_ == 3
    predictor.predict(X[:3])
    assert shared.spent[0] == pytest.approx(0.5)
    assert predictor.budget_remaining_ == pytest.approx(0.0, abs=1e-12)
    assert "Shared accountant" in predictor.privacy_summary()


def test_invalid_query_costs_nothing():
    X, y = _regression_data()
    predictor = PrivatePredictor(1.0, 0.1, alpha=1.0, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        predictor.predict(np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="features"):
        predictor.predict(np.zeros((1, 3)))
    assert predictor.queries_answered_ == 0


def _yield_inside_the_check(accountant):
    """Give up the GIL inside every budget total, so that an unlocked check-then-spend races."""
    total = accountant._total

    def slow_total(spends):
        time.sleep(0)
        return total(spends)

    accountant._total = slow_total


def _answer_from_threads(predictor, X, n_threads, n_calls, rows):
    barrier = threading.Barrier(n_threads)
    answered = [0] * n_threads

    def worker(index):
        barrier.wait()  # all threads start together: maximal contention
        for _ in range(n_calls):
            try:
                answered[index] += predictor.predict(X[:rows]).shape[0]
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(answered)


@pytest.mark.parametrize("rows", [1, 3])
def test_concurrent_predictions_never_answer_more_than_the_budget(rows):
    X, y = _regression_data()
    predictor = PrivatePredictor(1.0, 0.01, alpha=1.0, random_state=0).fit(X, y)
    _yield_inside_the_check(predictor._own_budget)
    affordable = predictor.answers_remaining_  # 100
    answered = _answer_from_threads(predictor, X, 16, 20, rows)  # 320 or 960 rows asked
    assert answered == predictor.queries_answered_ == rows * (affordable // rows)
    assert predictor.epsilon_spent_ <= 1.0 + 1e-12
    assert len(predictor._own_budget.ledger) == answered // rows


@pytest.mark.parametrize("epsilon_total, shared_epsilon", [(1.0, 0.5), (0.5, 1.0)],
                         ids=["shared-budget-binds", "own-budget-binds"])
def test_concurrent_predictions_with_a_shared_accountant_spend_both_budgets_alike(epsilon_total,
                                                                                 shared_epsilon):
    X, y = _regression_data()
    shared = BudgetAccountant(epsilon=shared_epsilon)
    _yield_inside_the_check(shared)
    predictor = PrivatePredictor(epsilon_total, 0.01, alpha=1.0, accountant=shared,
                                 random_state=0).fit(X, y)
    _yield_inside_the_check(predictor._own_budget)
    answered = _answer_from_threads(predictor, X, 16, 10, 1)
    assert answered == predictor.queries_answered_ == len(shared.ledger) == 50
    assert shared.spent[0] <= shared_epsilon + 1e-12 and predictor.epsilon_spent_ <= epsilon_total + 1e-12
    assert predictor.epsilon_spent_ == pytest.approx(shared.spent[0])


# ---------------------------------------------------------------------------
# Persistence: a fitted predictor is never copied
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("copier", [pickle.dumps, copy.deepcopy, copy.copy,
                                    lambda p: joblib.dump(p, "/dev/null")],
                         ids=["pickle", "deepcopy", "copy", "joblib"])
def test_a_fitted_predictor_refuses_to_be_pickled_or_copied(copier):
    X, y = _regression_data(m=20)
    predictor = PrivatePredictor(1.0, 0.1, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match="training rows.*unspent answer budget"):
        copier(predictor)


def test_an_unfitted_predictor_pickles_and_clone_works_when_fitted():
    X, y = _regression_data(m=20)
    unfitted = PrivatePredictor(1.0, 0.1, alpha=0.5)
    assert pickle.loads(pickle.dumps(unfitted)).get_params() == unfitted.get_params()
    fitted = PrivatePredictor(1.0, 0.1, alpha=0.5, random_state=0).fit(X, y)
    fresh = clone(fitted)  # parameters only: no rows, no budget
    assert fresh.get_params() == fitted.get_params()
    assert not hasattr(fresh, "_exact_model") and not hasattr(fresh, "privacy_")


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("params, message", [
    ({"epsilon_total": 1.0, "epsilon_per_query": 2.0}, "exceeds epsilon_total"),
    ({"epsilon_total": 1.0, "epsilon_per_query": 0.0}, "epsilon_per_query"),
    ({"epsilon_total": 1.0, "epsilon_per_query": -0.1}, "epsilon_per_query"),
    ({"epsilon_total": 0.0, "epsilon_per_query": 0.1}, "epsilon_total"),
    ({"epsilon_total": math.nan, "epsilon_per_query": 0.1}, "epsilon_total"),
    ({"epsilon_total": math.inf, "epsilon_per_query": 0.1}, "epsilon_total"),
    ({"kernel": "poly"}, "'kernel' parameter of PrivatePredictor"),
    ({"loss": "logistic"}, "'loss' parameter of PrivatePredictor"),
    ({"y_bound": 0.0}, "y_bound"),
    ({"y_bound": -1.0}, "y_bound"),
    ({"gamma": 0.0}, "gamma"),
    ({"alpha": -1.0}, "alpha"),
    ({"accountant": "budget"}, "accountant"),
    ({"y_bound": None}, "needs y_bound"),
    ({"max_iter": 0}, "max_iter"),
])
def test_bad_parameters_raise_value_error_naming_the_problem(params, message):
    X, y = _regression_data(m=20)
    arguments = {"epsilon_total": 1.0, "epsilon_per_query": 0.1, **params}
    with pytest.raises(ValueError, match=message):
        PrivatePredictor(**arguments).fit(X, y)


def test_nan_training_data_raises():
    X, y = _regression_data(m=20)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PrivatePredictor(1.0, 0.1).fit(X, y)


def test_hinge_needs_two_classes():
    X, _ = _regression_data(m=30)
    with pytest.raises(ValueError, match="exactly two classes"):
        PrivatePredictor(1.0, 0.1, loss="hinge").fit(X, np.arange(30) % 3)


def test_decision_function_is_for_the_hinge_only():
    X, y = _regression_data(m=20)
    predictor = PrivatePredictor(1.0, 0.1, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="loss='hinge'"):
        predictor.decision_function(X[:1])
    assert predictor.queries_answered_ == 0


def test_labels_clipped_to_y_bound_with_a_warning():
    X, y = _regression_data(m=30)
    y[:4] = 3.0
    with pytest.warns(DataClippingWarning, match="some labels"):
        predictor = PrivatePredictor(1.0, 0.1, y_bound=1.0, random_state=0).fit(X, y)
    assert not hasattr(predictor, "labels_clipped_")


def test_hinge_predicts_classes():
    X, y = _classification_data(m=80)
    predictor = PrivatePredictor(10.0, 5.0, loss="hinge", alpha=0.05, random_state=0).fit(X, y)
    assert set(predictor.predict(X[:2])) <= {"no", "yes"}
    assert list(predictor.classes_) == ["no", "yes"]


# ---------------------------------------------------------------------------
# Secrecy of the fitted object
# ---------------------------------------------------------------------------
def _arrays_in(value):
    if isinstance(value, np.ndarray):
        yield value
    elif hasattr(value, "to_dict"):
        for item in value.to_dict().values():
            yield from _arrays_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _arrays_in(item)


@pytest.mark.parametrize("loss", PREDICTION_LOSSES)
def test_no_public_attribute_exposes_training_rows_or_coefficients(loss):
    X, y = _classification_data(m=50) if loss == "hinge" else _regression_data(m=50)
    predictor = PrivatePredictor(1.0, 0.1, loss=loss, alpha=0.5, random_state=0).fit(X, y)
    public = [name for name in dir(predictor) if not name.startswith("_")]
    for name in public:
        value = getattr(predictor, name)
        if callable(value):
            continue
        for array in _arrays_in(value):
            assert array.size < X.shape[0], f"public attribute {name!r} holds an array of size {array.size}"
    assert not hasattr(predictor, "coef_") and not hasattr(predictor, "dual_coef_")
    assert "<secret>" in repr(predictor._exact_model)
    assert all(not isinstance(v, np.ndarray) or v.size <= 2 for k, v in vars(predictor).items()
               if not k.startswith("_"))


# ---------------------------------------------------------------------------
# Real sizes (issue 19): never crash; the random-feature path (000 Thm 2 for k_z)
# ---------------------------------------------------------------------------
def _no_gram_matrix(monkeypatch):
    """Make any m x m Gram matrix an error, so a refusal is proven to come first."""
    import dperm.solvers.kernel as exact_path

    def refuse(*args, **kwargs):
        raise AssertionError("an m x m kernel matrix was allocated")

    monkeypatch.setattr(exact_path, "kernel_matrix", refuse)


def test_the_crash_size_gets_a_clear_error_before_anything_is_allocated_or_spent(monkeypatch):
    """Issue 19: 20,000 rows on the exact path took 10 GB and segfaulted; now refused up front."""
    _no_gram_matrix(monkeypatch)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(20_000, 2))
    shared = BudgetAccountant(epsilon=5.0)
    predictor = PrivatePredictor(5.0, 0.5, solver="exact", accountant=shared, random_state=0)
    with pytest.raises(ValueError, match=r"solver='exact' .* m=20000 rows needs an estimated 12\.8 GB"
                                         r".*over max_memory_gb=2.*solver='features'") as refused:
        predictor.fit(X, 0.5 * X[:, 0])
    assert "\n" not in str(refused.value)
    assert shared.ledger == () and not hasattr(predictor, "privacy_")


def test_the_crash_size_fits_on_the_features_path_with_auto(monkeypatch):
    _no_gram_matrix(monkeypatch)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(20_000, 2))
    shared = BudgetAccountant(epsilon=5.0)
    predictor = PrivatePredictor(5.0, 0.5, accountant=shared, random_state=0).fit(X, 0.5 * X[:, 0])
    assert predictor.privacy_.solver == "features"
    assert shared.ledger == ()  # fitting spends nothing
    assert predictor.predict(X[:10]).shape == (10,)


@pytest.mark.parametrize("loss, m_exact_max", [("squared", 7905), ("hinge", 6454)])
def test_auto_switches_at_the_documented_size(loss, m_exact_max):
    from dperm.solvers.kernel import plan_prediction_solver

    loss = get_loss(loss)
    assert plan_prediction_solver("auto", loss, m_exact_max, 14, 256, 2.0).solver == "exact"
    assert plan_prediction_solver("auto", loss, m_exact_max + 1, 14, 256, 2.0).solver == "features"


def test_a_lowered_memory_cap_reproduces_the_refusal_cheaply(monkeypatch):
    X, y = _regression_data(m=200)
    cap = 4 * 8 * 200**2 / 1e9 * 0.99  # just under the exact path's estimate
    with pytest.raises(ValueError, match="over max_memory_gb"):
        PrivatePredictor(1.0, 0.1, solver="exact", max_memory_gb=cap).fit(X, y)
    auto = PrivatePredictor(1.0, 0.1, max_memory_gb=cap, n_components=32, random_state=0).fit(X, y)
    assert auto.privacy_.solver == "features" and auto.privacy_.max_memory_gb == pytest.approx(cap)
    Xc, yc = _classification_data(m=200)
    with pytest.raises(ValueError, match="solver='features'.*lower n_components"):
        PrivatePredictor(1.0, 0.1, loss="hinge", solver="features", max_memory_gb=1e-4).fit(Xc, yc)


@pytest.mark.parametrize("params, message", [
    ({"solver": "cg"}, "'solver' parameter of PrivatePredictor"),
    ({"n_components": 0}, "n_components"),
    ({"feature_seed": -1}, "feature_seed"),
    ({"feature_seed": 1.5}, "feature_seed"),
    ({"max_memory_gb": 0.0}, "max_memory_gb"),
])
def test_bad_path_parameters_raise_value_error(params, message):
    X, y = _regression_data(m=20)
    with pytest.raises(ValueError, match=message):
        PrivatePredictor(1.0, 0.1, **params).fit(X, y)


def _feature_values(X, y, loss, alpha, frequencies, queries):
    """The secret values of the features path and B_Delta (kappa = 1 for k_z)."""
    from dperm.solvers.kernel import fit_random_feature_model

    loss = get_loss(loss, y_bound=1.0)
    lipschitz = loss.solution_lipschitz(1.0, alpha)
    b_delta = prediction_sensitivity(1.0, lipschitz, alpha / 2, X.shape[0])
    radius = solution_radius_allowance(loss, b_delta, 1.0)
    model = fit_random_feature_model(X, y, loss, frequencies, alpha, radius, 100_000)
    return model.values(queries), b_delta


@pytest.mark.parametrize("loss", PREDICTION_LOSSES)
@pytest.mark.parametrize("alpha, gamma", [(0.1, 1.0), (1.0, 0.5), (2.0, 3.0)])
def test_features_path_sensitivity_never_exceeds_b_delta(loss, alpha, gamma):
    from dperm.solvers.kernel import feature_frequencies

    rng = np.random.default_rng(11)
    m = 25
    frequencies = feature_frequencies("rbf", gamma, 32, 2, feature_seed=3)
    worst_ratio = 0.0
    for _ in range(4):
        X = rng.uniform(-1, 1, size=(m, 2))
        y = np.where(rng.uniform(size=m) < 0.5, 1.0, -1.0)
        queries = np.vstack([X, rng.uniform(-1.5, 1.5, size=(100, 2))])
        values, b_delta = _feature_values(X, y, loss, alpha, frequencies, queries)
        j = int(rng.integers(m))
        for x_new, y_new in _neighbours(X, y, j, rng):
            X_nb, y_nb = X.copy(), y.copy()
            X_nb[j], y_nb[j] = x_new, y_new
            values_nb, _ = _feature_values(X_nb, y_nb, loss, alpha, frequencies, queries)
            worst_ratio = max(worst_ratio, float(np.max(np.abs(values - values_nb))) / b_delta)
    assert worst_ratio <= 1.0 + 1e-6
    if loss == "hinge" and alpha >= 1.0:
        # All rows bound support vectors: a label flip moves f(x_j) by 2 ||z(x_j)||^2 / (alpha m)
        # = B_Delta exactly (||z|| = 1), so the check has power.
        assert worst_ratio == pytest.approx(1.0, abs=1e-3)


def test_pair_features_have_unit_norm_and_approximate_the_kernel():
    from dperm.kernels import random_fourier_pair_map
    from dperm.solvers.kernel import feature_frequencies

    X = np.random.default_rng(0).uniform(-3, 3, size=(50, 3)) * np.array([1.0, 10.0, 1e3])
    Z = random_fourier_pair_map(X, feature_frequencies("rbf", 0.5, 64, 3, feature_seed=0))
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-12)
    near = np.array([[0.0, 0.0], [0.3, 0.0]])
    Z2 = random_fourier_pair_map(near, feature_frequencies("rbf", 0.5, 20_000, 2, feature_seed=0))
    assert Z2[0] @ Z2[1] == pytest.approx(np.exp(-0.5 * 0.09), abs=0.02)


def test_features_least_squares_certificate_bounds_the_distance_to_the_minimiser():
    from dperm.kernels import random_fourier_pair_map
    from dperm.solvers.kernel import feature_frequencies, solve_feature_least_squares

    X, y = _regression_data(m=300)
    alpha = 0.05
    frequencies = feature_frequencies("rbf", 2.0, 40, 2, feature_seed=1)
    coef, radius = solve_feature_least_squares(X, y, frequencies, alpha)
    Z = random_fourier_pair_map(X, frequencies)
    # the minimiser by an independent route: least squares on the stacked system
    stacked = np.vstack([Z, math.sqrt(alpha * 300 / 2) * np.eye(Z.shape[1])])
    reference = np.linalg.lstsq(stacked, np.concatenate([y, np.zeros(Z.shape[1])]), rcond=None)[0]
    assert np.linalg.norm(coef - reference) <= radius + 1e-12
    assert radius < 1e-10


def test_least_squares_proven_completion_reaches_the_minimiser_from_a_bad_start():
    """Issue 28: where rounding leaves a closed-form solve uncertified, AGD in the RKHS finishes it."""
    from dperm.kernels import kernel_matrix
    from dperm.solvers.kernel import _proven_least_squares, solve_kernel_least_squares

    X, y = _regression_data(m=120)
    alpha, radius_tol = 1e-3, 1e-6
    K = kernel_matrix("rbf", X, X, 1.0)
    exact = solve_kernel_least_squares(K, y, alpha, radius_tol)
    start = exact.coef + np.random.default_rng(0).normal(size=exact.coef.shape)  # far from certified
    coef, radius, steps = _proven_least_squares(K, y, alpha, start, radius_tol)
    gap = coef - exact.coef
    assert steps > 0 and radius <= radius_tol
    assert math.sqrt(gap @ K @ gap) <= radius_tol + exact.solution_radius


def test_features_are_public_fixed_by_the_seed_not_the_data_or_the_noise():
    X, y = _regression_data(m=80)
    X2, y2 = _regression_data(m=80, seed=5)
    fit = lambda X, y, **kw: PrivatePredictor(1.0, 0.1, solver="features", **kw).fit(X, y)  # noqa: E731
    first = fit(X, y, random_state=0, feature_seed=7)
    other_data_other_noise = fit(X2, y2, random_state=7, feature_seed=7)
    np.testing.assert_array_equal(first._exact_model._frequencies,
                                  other_data_other_noise._exact_model._frequencies)
    assert not np.array_equal(first._exact_model._frequencies,
                              fit(X, y, random_state=0, feature_seed=8)._exact_model._frequencies)
    # the noise stream seeded with the same integer is not the frequencies' stream
    same_seed = np.random.default_rng(7).normal(0, math.sqrt(2.0), size=(256, 2))
    assert not np.allclose(first._exact_model._frequencies, same_seed)
    record = first.privacy_.to_dict()
    assert (record["solver"], record["n_components"], record["feature_seed"]) == ("features", 256, 7)


@pytest.mark.parametrize("loss", PREDICTION_LOSSES)
def test_features_path_releases_the_same_record_on_neighbours(loss):
    from tests._release_checks import non_noised

    X, y = _classification_data(m=80) if loss == "hinge" else _regression_data(m=80)
    X2, y2 = X.copy(), y.copy()
    X2[0] = [0.9, -0.9]
    y2[0] = ("no" if y[0] == "yes" else "yes") if loss == "hinge" else -y[0]
    kwargs = {"classes": ["no", "yes"]} if loss == "hinge" else {}
    fits = [PrivatePredictor(2.0, 0.5, loss=loss, solver="features", random_state=3, **kwargs).fit(A, b)
            for A, b in ((X, y), (X2, y2))]
    assert repr(non_noised(fits[0])) == repr(non_noised(fits[1]))
    assert fits[0].privacy_.to_dict() == fits[1].privacy_.to_dict()
    assert "n_samples" in fits[0].privacy_.to_dict()
    assert all(not isinstance(v, np.ndarray) or v.size <= 2 for k, v in vars(fits[0]).items()
               if not k.startswith("_"))


@pytest.mark.parametrize("solver", ["exact", "features"])
def test_answers_lie_on_the_noise_grid(solver):
    X, y = _regression_data(m=100)
    predictor = PrivatePredictor(50.0, 0.5, solver=solver, random_state=0).fit(X, y)
    answers = predictor.predict(np.random.default_rng(1).uniform(-1, 1, size=(100, 2)))
    steps = answers / predictor.privacy_.noise_grid
    np.testing.assert_array_equal(steps, np.round(steps))
    assert np.unique(answers).size > 50


def _feature_audit(noise_factor, random_state):
    """Label-flip canary on the features path: a bound support vector moves by B_Delta."""
    from dperm.audit import audit
    from dperm.audit._composite import _label_flip_pair
    from dperm.audit._noise import under_noised_epsilon

    canary = np.array([0.05])
    X, y, y_prime = _label_flip_pair(canary)

    def runner(labels):
        def run(rng):
            epsilon = under_noised_epsilon(1.0, noise_factor)
            predictor = PrivatePredictor(epsilon, epsilon, loss="hinge", alpha=2.0, solver="features",
                                         n_components=8, classes=[-1, 1], random_state=rng)
            return float(predictor.fit(X, labels).decision_function(canary[None])[0])
        return run

    return audit(runner(y), runner(y_prime), None, 1.0, n_runs=1200, random_state=random_state,
                 label="PrivatePredictor(solver='features')")


@pytest.mark.slow  # two audits: ~23 s on a loaded 2-core machine
def test_features_path_passes_the_audit_and_an_under_noised_copy_is_caught():
    honest = _feature_audit(1.0, random_state=1)
    assert honest.passed, honest.summary()
    weak = _feature_audit(0.25, random_state=2)
    assert not weak.passed and weak.eps_lower > 1.0, weak.summary()


def _readme_predictor_example() -> str:
    """The docs' PrivatePredictor code block (docs/regression.md, once the README's), as written."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "regression.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", page, flags=re.S)
              if "PrivatePredictor(" in b and "import" in b]
    assert len(blocks) == 1, "expected one docs/regression.md example of PrivatePredictor"
    return blocks[0]


def test_the_readme_example_runs_as_written(capsys):
    """Issue 19: the example at the size it shows (20,000 rows), the refusal shown, not crashed into."""
    namespace = {}
    exec(compile(_readme_predictor_example(), "docs/regression.md", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "features"
    assert printed[1].startswith("refused:")
    assert namespace["answers"].shape == (10,)
    assert namespace["predictor"].queries_answered_ == 10


@pytest.mark.parametrize("name", PREDICTION_LOSSES)
def test_each_prediction_loss_is_solved_for_its_own_objective(name):
    """The kernel path asks the loss object its kind; whatever it solves must minimise *this* loss.

    ``J(c) = (1/m) sum loss(argument(y_i, (K c)_i)) + (alpha/2) c^T K c`` at the
    certified coefficients is no larger than at any small perturbation of them
    (a loss marked ``prediction=True`` in the table but solved as another would fail).
    """
    rng = np.random.default_rng(3)
    X = rng.uniform(-1.0, 1.0, size=(40, 2))
    loss = get_loss(name, y_bound=1.0)
    y = np.sin(2.0 * X[:, 0]) * 0.8 if loss.kind == "residual" else np.where(X[:, 0] > 0.1, 1.0, -1.0)
    alpha, gamma = 0.1, 1.0
    model, solve = fit_exact_kernel_model(X, y, loss, "rbf", gamma, alpha, 1e-9, 10_000)
    K = kernel_matrix("rbf", X, X, gamma)

    def objective(c):
        return float(np.mean(loss.value(loss.argument(y, K @ c))) + 0.5 * alpha * c @ K @ c)

    best = objective(solve.coef)
    for _ in range(50):
        step = rng.normal(size=X.shape[0])
        step *= 1e-3 / math.sqrt(max(float(step @ K @ step), 1e-300))  # RKHS norm 1e-3
        assert objective(solve.coef + step) >= best - 1e-12


def test_auto_alpha_is_public_and_nearer_the_truth_than_the_old_default():
    """alpha="auto" (issue 30): a function of public m and epsilon_per_query only (neighbouring and
    unrelated data give the same alpha_), and its answers are nearer the TRUE function, not only the
    exact model, than those of the old default alpha = 0.1 (which shrinks them toward 0)."""
    from dperm.privacy.alpha import prediction_default_alpha

    rng = np.random.default_rng(0)
    m, eps = 400, 1.0
    X = rng.uniform(-1, 1, size=(m, 2))

    def truth(Z):
        return 0.8 * np.sin(2 * Z[:, 0]) * np.cos(Z[:, 1])

    y = np.clip(truth(X) + 0.2 * rng.normal(size=m), -1, 1)
    queries = rng.uniform(-1, 1, size=(1000, 2))
    auto = PrivatePredictor(1000 * eps, eps, random_state=1).fit(X, y)
    assert auto.get_params()["alpha"] == "auto"
    assert auto.alpha_ == prediction_default_alpha(m, eps, "squared") == 16.0 * (m * eps) ** -0.5
    assert auto.privacy_.alpha == auto.alpha_
    X_nb, y_nb = X.copy(), y.copy()
    X_nb[7], y_nb[7] = [0.9, -0.9], -y[7]  # a neighbour: one row replaced
    other = PrivatePredictor(1000 * eps, eps, random_state=1).fit(rng.normal(size=(m, 2)), -y)
    neighbour = PrivatePredictor(1000 * eps, eps, random_state=1).fit(X_nb, y_nb)
    assert other.alpha_ == neighbour.alpha_ == auto.alpha_  # the data do not enter
    old = PrivatePredictor(1000 * eps, eps, alpha=0.1, random_state=1).fit(X, y)
    truth_q = truth(queries)
    answers_auto, answers_old = auto.predict(queries), old.predict(queries)
    rmse_auto = np.sqrt(np.mean((answers_auto - truth_q) ** 2))
    rmse_old = np.sqrt(np.mean((answers_old - truth_q) ** 2))
    assert rmse_auto < 0.6 * rmse_old, (rmse_auto, rmse_old)
    # with much budget (m eps = 40,000) the rule regularises less than 0.1: answers less shrunk, nearer the truth
    rich = PrivatePredictor(1000 * 100.0, 100.0, random_state=1).fit(X, y)
    rich_old = PrivatePredictor(1000 * 100.0, 100.0, alpha=0.1, random_state=1).fit(X, y)
    assert rich.alpha_ < 0.1
    answers_rich, answers_rich_old = rich.predict(queries), rich_old.predict(queries)
    assert np.polyfit(truth_q, answers_rich_old, 1)[0] < np.polyfit(truth_q, answers_rich, 1)[0]
    assert np.sqrt(np.mean((answers_rich - truth_q) ** 2)) < np.sqrt(np.mean((answers_rich_old - truth_q) ** 2))
    hinge = PrivatePredictor(10.0, 0.5, loss="hinge", classes=[-1, 1], random_state=0).fit(X, np.sign(y + 1e-9))
    assert hinge.alpha_ == prediction_default_alpha(m, 0.5, "hinge") == 4.0 * (m * 0.5) ** (-2 / 3)
