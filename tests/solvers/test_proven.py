"""The proven completion (issue 28): once budget is spent, a fit always releases.

Whether a fit released used to depend on the solver converging within ``max_iter``:
on neighbours D, D' (one row replaced by a long row clipped onto the norm bound) the
old code raised ``CertificateError`` on one and released on the other. These tests
check the completion's theorems against exact minimisers, and that every estimator
family releases on both neighbours at every ``max_iter`` from 1 to 20.
"""

import warnings

import numpy as np
import pytest

from dperm import (
    PrivateKernelSVC,
    PrivateLinearSVC,
    PrivateLogisticRegression,
    PrivatePredictor,
    PrivateQuantileRegressor,
)
from dperm.losses import HuberLoss, LogisticLoss
from dperm.solvers import RegularizedERMObjective, minimize_certified, solve_hinge_svm
from dperm.solvers.kernel import kernel_hinge_duality_gap, solve_kernel_hinge
from dperm.solvers.proven import (
    accelerated_completion,
    accelerated_iterations,
    fista_box_completion,
    fista_box_iterations,
)


def _rows(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _exact(objective):
    return minimize_certified(objective, 1e-15, 100_000).coef


# ---------------------------------------------------------------------------
# The theorems behind the completion, against exact minimisers
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [1e-1, 1e-3])
def test_accelerated_count_proves_the_radius_on_quadratics(seed, alpha):
    """Thm 2.2.3's count: with the gradient check disabled, x_K is within tol / mu of x*."""
    rng = np.random.default_rng(seed)
    d = 6
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    eigenvalues = np.linspace(alpha, 1.0, d)  # condition number 1 / alpha
    H = basis @ np.diag(eigenvalues) @ basis.T
    b = rng.normal(size=d)
    x_star = np.linalg.solve(H, b)
    tol = 1e-6

    def value_and_gradient(w):
        return 0.5 * w @ H @ w - b @ w, H @ w - b

    w0 = np.zeros(d)
    w, certificate, steps = accelerated_completion(value_and_gradient, w0, -b, alpha, 1.0, tol)
    # the gradient bound is tight along the smallest eigenvector: allow x_star's own rounding
    assert np.linalg.norm(w - x_star) <= certificate / alpha * (1 + 1e-6)
    # the theorem alone: run the full count by asking for a gradient the loop cannot reach early
    K = accelerated_iterations(alpha, 1.0, np.linalg.norm(b), tol)
    x = y = w0
    for _ in range(K):
        x_next = y - (H @ y - b)
        y = x_next + (1 - np.sqrt(alpha)) / (1 + np.sqrt(alpha)) * (x_next - x)
        x = x_next
    assert 0.5 * (x - x_star) @ H @ (x - x_star) <= tol**2 / (2 * alpha)
    assert np.linalg.norm(x - x_star) <= tol / alpha
    assert steps <= K


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(h=0.1)])
@pytest.mark.parametrize("seed", [0, 1])
def test_accelerated_completion_reaches_the_logistic_and_huber_minimiser(loss, seed):
    X, y = _rows(300, 4, seed)
    alpha, tol = 1e-3, 1e-9
    objective = RegularizedERMObjective(loss, X, y, alpha)
    start = np.zeros(4)
    w, certificate, steps = accelerated_completion(
        objective.value_and_gradient, start, objective.gradient(start), alpha, objective.smoothness(), tol)
    assert steps > 0 and certificate <= tol
    assert np.linalg.norm(w - _exact(objective)) <= tol / alpha


def test_smoothness_bounds_the_hessian():
    X, y = _rows(200, 5, 3)
    objective = RegularizedERMObjective(LogisticLoss(), X, y, 1e-2)
    rng = np.random.default_rng(0)
    for _ in range(20):
        top = np.linalg.eigvalsh(objective.hessian(rng.normal(size=5) * 3))[-1]
        assert top <= objective.smoothness()


@pytest.mark.parametrize("seed", [0, 1])
def test_fista_count_proves_the_dual_suboptimality_of_the_kernel_hinge(seed):
    rng = np.random.default_rng(seed)
    m, alpha = 40, 0.05
    X = rng.uniform(-1, 1, size=(m, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    K = np.exp(-np.sum((X[:, None] - X[None]) ** 2, axis=2))
    Q = (y[:, None] * y[None, :]) * K
    linear = alpha * m
    reference = solve_kernel_hinge(K, y, alpha, 1e-9, 100_000)
    target = 1e-3
    suboptimality = 0.5 * (alpha * m * target) ** 2
    smoothness = np.linalg.eigvalsh(Q)[-1]
    a, proven, steps = fista_box_completion(Q, linear, np.zeros(m), smoothness, suboptimality,
                                            lambda a: False)  # no early stop: the theorem alone
    assert proven and steps == fista_box_iterations(smoothness, m, suboptimality)
    _, coef = kernel_hinge_duality_gap(K, y, alpha, a)
    distance = np.sqrt((coef - reference.coef) @ K @ (coef - reference.coef))
    assert distance <= target + reference.solution_radius


def test_kernel_hinge_certifies_with_a_single_fast_iteration():
    rng = np.random.default_rng(4)
    m, alpha = 60, 0.01
    X = rng.uniform(-1, 1, size=(m, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=m) > 0, 1.0, -1.0)
    K = np.exp(-np.sum((X[:, None] - X[None]) ** 2, axis=2))
    solve = solve_kernel_hinge(K, y, alpha, 1e-4, 1)
    assert solve.certified and solve.solution_radius <= 1e-4


def test_hinge_svm_certifies_with_a_single_fast_iteration():
    X, y = _rows(400, 3, 5)
    solve = solve_hinge_svm(X, y, 1e-2, 1e-5, 1)
    assert solve.certified and solve.solution_radius <= 1e-5


# ---------------------------------------------------------------------------
# Neighbours at every max_iter: the release never depends on convergence
# ---------------------------------------------------------------------------
def _neighbours(seed, n=400, d=3, regression=False):
    """D and D' with row 0 replaced by a long row (clipped onto the norm bound) and a flipped label."""
    X, y = _rows(n, d, seed)
    X_prime, y_prime = X.copy(), y.copy()
    X_prime[0] = np.array([1e6, -1e6, 1e6])[:d]
    y_prime[0] = -y[0]
    if regression:
        return (X, 0.5 * y), (X_prime, 0.5 * y_prime)
    return (X, (y > 0).astype(int)), (X_prime, (y_prime > 0).astype(int))


ESTIMATORS = {
    "output": lambda m, s: PrivateLogisticRegression(
        epsilon=1, alpha=1e-2, mechanism="output", max_iter=m, random_state=s, classes=[0, 1]),
    "objective": lambda m, s: PrivateLogisticRegression(
        epsilon=1, alpha=1e-2, mechanism="objective", max_iter=m, random_state=s, classes=[0, 1]),
    "gaussian_objective": lambda m, s: PrivateLogisticRegression(
        epsilon=1, delta=1e-5, alpha=1e-2, mechanism="gaussian_objective", max_iter=m,
        random_state=s, classes=[0, 1]),
    "hinge_output": lambda m, s: PrivateLinearSVC(
        epsilon=1, alpha=1e-2, loss="hinge", mechanism="output", max_iter=m, random_state=s,
        classes=[0, 1]),
    "kernel_svc": lambda m, s: PrivateKernelSVC(
        epsilon=1, alpha=1e-2, n_components=10, max_iter=m, random_state=s,
        feature_random_state=0, classes=[0, 1]),
}


def _release_on_both_at_every_max_iter(name, seed, n):
    first, second = _neighbours(seed, n=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for max_iter in range(1, 21):
            for data in (first, second):
                model = ESTIMATORS[name](max_iter, seed).fit(*data)
                assert np.all(np.isfinite(model.decision_function(data[0][:5])))
                assert model.privacy_.epsilon == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(set(ESTIMATORS) - {"hinge_output"}))
def test_neighbours_release_at_every_max_iter(name, seed):
    _release_on_both_at_every_max_iter(name, seed, n=400)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hinge_neighbours_release_at_every_max_iter(seed):
    """The hinge's proven completion costs steps in proportion to n: n = 100 here, 400 in the slow test."""
    _release_on_both_at_every_max_iter("hinge_output", seed, n=100)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hinge_neighbours_release_at_every_max_iter_n400(seed):
    _release_on_both_at_every_max_iter("hinge_output", seed, n=400)


@pytest.mark.slow  # the pinball's smoothing stages finish by AGD when max_iter is tiny: ~12 s a seed
@pytest.mark.parametrize("seed", [0, 1])
def test_quantile_regressor_neighbours_release_at_every_max_iter(seed):
    first, second = _neighbours(seed, regression=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for max_iter in range(1, 21):
            for data in (first, second):
                model = PrivateQuantileRegressor(epsilon=1, alpha=1e-2, max_iter=max_iter,
                                                 random_state=seed).fit(*data)
                assert np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize("solver", ["exact", "features"])
@pytest.mark.parametrize("loss", ["squared", "hinge"])
@pytest.mark.filterwarnings("ignore::dperm.PrivacyLeakWarning")
def test_private_predictor_neighbours_fit_at_every_max_iter(solver, loss):
    first, second = _neighbours(0, n=120, d=2, regression=(loss == "squared"))
    for max_iter in range(1, 21):
        for X, y in (first, second):
            y = np.where(y > 0, 1.0, -1.0) if loss == "hinge" else y
            predictor = PrivatePredictor(1.0, 0.1, loss=loss, solver=solver, max_iter=max_iter,
                                         n_components=16, random_state=0).fit(X, y)
            assert np.all(np.isfinite(predictor.predict(X[:2])))
