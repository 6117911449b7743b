"""``sample_weight`` in [0, 1] (issue 32): the weighted objective, its sensitivity, what is released.

The semantics: ``J(w) = (1/n) sum_i v_i loss_i + alpha/2 ||w||^2`` with the public ``n``;
a weight is part of its row (neighbours replace ``(x, y, v)`` together); every mechanism
keeps its calibration because ``v_i <= 1`` (paper note 15).
"""

import math
import warnings

import numpy as np
import pytest

from dperm import (
    DataClippingWarning,
    PrivateKernelLogisticRegression,
    PrivateKernelSVC,
    PrivateLeastSquares,
    PrivateLinearSVC,
    PrivateLogisticRegression,
    PrivateParameterSearch,
    PrivatePredictor,
    PrivateQuantileRegressor,
    WeakGuaranteeWarning,
)
from dperm.losses import HuberLoss, LogisticLoss, SquaredLoss
from dperm.losses_multinomial import MultinomialLogisticLoss, MultinomialObjective
from dperm.mechanisms import sufficient_statistics as adassp_module
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.record import PrivacyRecord
from dperm.privacy.sensitivity import erm_l2_sensitivity, glm_jacobian_epsilon
from dperm.privacy.sufficient_statistics import (
    gram_l2_sensitivity,
    min_eigenvalue_sensitivity,
    moment_l2_sensitivity,
    symmetric_to_vector,
    vector_to_symmetric,
)
from dperm.solvers import minimize_erm
from dperm.solvers.erm import RegularizedERMObjective
from tests._release_checks import non_noised

R = 1.0
#: The unpatched noise step of AdaSSP's statistics (each capture wraps this one, not the last).
_RELEASE = adassp_module.StatisticRelease.release


def _rows(n, d, seed, norm=R):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= norm * rng.uniform(0.2, 1.0, size=(n, 1)) / np.linalg.norm(X, axis=1, keepdims=True)
    return X


def _classification(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = _rows(n, d, seed)
    y = np.where(X @ np.linspace(1.0, -0.5, d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    v = rng.uniform(size=n)
    return X, y, v


# -- the weighted objective: derivatives against finite differences ------------------------
@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5), SquaredLoss(1.0)],
                         ids=lambda loss: loss.name)
def test_weighted_objective_derivatives_match_finite_differences(loss):
    X, y, v = _classification(n=60, d=4, seed=1)
    b = np.random.default_rng(2).normal(size=4)
    objective = RegularizedERMObjective(loss, X, y, 0.1, linear_term=b, sample_weight=v)
    w = np.random.default_rng(3).normal(size=4)
    value, grad = objective.value_and_gradient(w)
    n = X.shape[0]
    scores = X @ w
    exact = (v * loss.value(loss.argument(y, scores))).sum() / n + 0.05 * w @ w + b @ w / n
    assert value == pytest.approx(exact, rel=1e-12)
    step = 1e-6
    for j in range(4):
        e = np.zeros(4)
        e[j] = step
        numeric = (objective.value_and_gradient(w + e)[0]
                   - objective.value_and_gradient(w - e)[0]) / (2 * step)
        assert grad[j] == pytest.approx(numeric, rel=1e-6, abs=1e-8)
        column = (objective.gradient(w + e) - objective.gradient(w - e)) / (2 * step)
        np.testing.assert_allclose(objective.hessian(w)[:, j], column, rtol=1e-5, atol=1e-8)
    assert objective.smoothness() >= np.linalg.eigvalsh(objective.hessian(w))[-1]


def test_weighted_multinomial_objective_derivatives_match_finite_differences():
    rng = np.random.default_rng(4)
    X = _rows(40, 3, seed=4)
    labels = rng.integers(0, 3, size=40)
    v = rng.uniform(size=40)
    objective = MultinomialObjective(MultinomialLogisticLoss(3), X, labels, 0.2,
                                     sample_weight=v)
    w = rng.normal(size=9)
    value, grad = objective.value_and_gradient(w)
    scores = X @ w.reshape(3, 3)
    per_row = np.log(np.exp(scores).sum(axis=1)) - scores[np.arange(40), labels]
    assert value == pytest.approx((v * per_row).sum() / 40 + 0.1 * w @ w, rel=1e-12)
    step = 1e-6
    hessian = objective.hessian(w)
    for j in range(9):
        e = np.zeros(9)
        e[j] = step
        numeric = (objective.value_and_gradient(w + e)[0]
                   - objective.value_and_gradient(w - e)[0]) / (2 * step)
        assert grad[j] == pytest.approx(numeric, rel=1e-6, abs=1e-8)
        column = (objective.gradient(w + e) - objective.gradient(w - e)) / (2 * step)
        np.testing.assert_allclose(hessian[:, j], column, rtol=1e-5, atol=1e-8)


# -- sensitivity of the weighted minimiser (output perturbation's bound) -------------------
def _exact_minimiser(loss, X, y, alpha, v):
    return minimize_erm(loss, X, y, alpha, 1e-12, 1000, sample_weight=v).coef


def _neighbour(X, y, v, rng, adversarial):
    """Replace one ``(x, y, v)`` row: random, or long and flipped with its weight swapped 0 <-> 1."""
    i = int(rng.integers(X.shape[0]))
    X2, y2, v2 = X.copy(), y.copy(), v.copy()
    if adversarial:
        X2[i] = -X[i] / np.linalg.norm(X[i]) * R
        y2[i] = -y[i]
        v2[i] = 1.0 - np.round(v[i])
        X[i] = X[i] / np.linalg.norm(X[i]) * R
        v[i] = np.round(v[i])
    else:
        X2[i] = _rows(1, X.shape[1], int(rng.integers(1 << 30)))[0]
        y2[i] = rng.choice([-1.0, 1.0])
        v2[i] = rng.uniform()
    return (X, y, v), (X2, y2, v2)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)], ids=lambda loss: loss.name)
def test_weighted_minimiser_sensitivity_within_the_bound(loss):
    """2 L R / (n alpha) (003 Cor. 1, 000 Thm 2) over random and adversarial weighted neighbours."""
    n, d, alpha = 40, 3, 0.05
    rng = np.random.default_rng(5)
    bound = erm_l2_sensitivity(n, alpha, loss.lipschitz, R)
    largest = 0.0
    for trial in range(60):
        X, y, v = _classification(n=n, d=d, seed=100 + trial)
        if trial % 3 == 0:
            v = np.ones(n)  # full weights: the unweighted case is the worst one
        (X, y, v), (X2, y2, v2) = _neighbour(X, y, v, rng, adversarial=trial % 2 == 0)
        gap = np.linalg.norm(_exact_minimiser(loss, X, y, alpha, v)
                             - _exact_minimiser(loss, X2, y2, alpha, v2))
        largest = max(largest, gap)
        assert gap <= bound * (1 + 1e-9), (trial, gap, bound)
    assert largest > 0.2 * bound  # the adversarial pairs come near the bound: the test has teeth


def test_the_bound_is_attained_at_weight_one_and_broken_above_it():
    """Why weights stop at 1: with a large alpha every margin is near 0, where the Huber
    loss's slope is 1, so flipping one row moves the minimiser by almost exactly
    ``2 v L R / (n alpha)``: the bound at ``v = 1``, twice it at ``v = 2``."""
    loss, n, alpha = HuberLoss(0.1), 10, 10.0
    X = _rows(n, 2, seed=13, norm=R)
    X[0] = [R, 0.0]
    y = np.ones(n)
    X2 = X.copy()
    X2[0] = -X[0]
    bound = erm_l2_sensitivity(n, alpha, loss.lipschitz, R)
    for weight, low, high in ((1.0, 0.95, 1.0 + 1e-9), (2.0, 1.9, 2.0 + 1e-9)):
        v = np.ones(n)
        v[0] = weight
        gap = np.linalg.norm(_exact_minimiser(loss, X, y, alpha, v)
                             - _exact_minimiser(loss, X2, y, alpha, v))
        assert low * bound <= gap <= high * bound, (weight, gap / bound)


def test_objective_perturbation_noise_gap_and_jacobian_within_the_bounds():
    """The two facts 003 Thm 2's proof uses, for weighted neighbours at random points w.

    For ``w`` to be the perturbed minimiser the noise must be ``b_D(w) = -(sum v_i l'_i y_i x_i
    + n alpha w)``; neighbours' noises differ by at most ``2 L R`` and the Jacobians' ratio
    is within ``exp(glm_jacobian_epsilon)``.
    """
    loss = LogisticLoss()
    n, d, alpha = 30, 3, 0.05
    rng = np.random.default_rng(6)
    jacobian_bound = glm_jacobian_epsilon(n, alpha, loss.curvature, R)
    for trial in range(60):
        X, y, v = _classification(n=n, d=d, seed=200 + trial)
        (X, y, v), (X2, y2, v2) = _neighbour(X, y, v, rng, adversarial=trial % 2 == 0)
        w = rng.normal(size=d) * 3
        noises, log_dets = [], []
        for A, b, weights in ((X, y, v), (X2, y2, v2)):
            objective = RegularizedERMObjective(loss, A, b, alpha, sample_weight=weights)
            noises.append(-n * objective.gradient(w))  # the b making w stationary
            log_dets.append(np.linalg.slogdet(n * objective.hessian(w))[1])
        assert np.linalg.norm(noises[0] - noises[1]) <= 2 * loss.lipschitz * R * (1 + 1e-9)
        assert abs(log_dets[0] - log_dets[1]) <= jacobian_bound * (1 + 1e-9)


def test_multinomial_noise_gap_and_jacobian_within_the_bounds():
    """The multinomial mechanism's two bounds for weighted neighbours (3 classes, random W)."""
    from dperm.privacy.multinomial import (
        multinomial_jacobian_epsilon,
        multinomial_noise_sensitivity,
    )

    n, d, K, alpha = 30, 3, 3, 0.05
    rng = np.random.default_rng(12)
    jacobian_bound = multinomial_jacobian_epsilon(n, alpha, K, R)
    worst_gap = 0.0
    for trial in range(40):
        X = _rows(n, d, seed=400 + trial)
        labels = rng.integers(0, K, size=n)
        v = rng.uniform(size=n)
        i = int(rng.integers(n))
        X2, labels2, v2 = X.copy(), labels.copy(), v.copy()
        X[i] = X[i] / np.linalg.norm(X[i]) * R
        X2[i] = -X[i] if trial % 2 == 0 else _rows(1, d, seed=500 + trial)[0]
        labels2[i] = (labels[i] + 1) % K
        v[i], v2[i] = (1.0, 0.0) if trial % 4 == 0 else (v[i], rng.uniform())
        W = rng.normal(size=d * K) * 3
        noises, log_dets = [], []
        for A, lab, weights in ((X, labels, v), (X2, labels2, v2)):
            objective = MultinomialObjective(MultinomialLogisticLoss(K), A, lab, alpha,
                                             sample_weight=weights)
            noises.append(-n * objective.gradient(W))
            log_dets.append(np.linalg.slogdet(n * objective.hessian(W))[1])
        gap = np.linalg.norm(noises[0] - noises[1])
        worst_gap = max(worst_gap, gap)
        assert gap <= multinomial_noise_sensitivity(R) * (1 + 1e-9)
        assert abs(log_dets[0] - log_dets[1]) <= jacobian_bound * (1 + 1e-9)
    assert worst_gap > 0.3 * multinomial_noise_sensitivity(R)


# -- AdaSSP: the statistics the mechanism computes keep their sensitivities -----------------
def _adassp_statistics(monkeypatch, X, y, v, intercept=None):
    """The three statistics ``release`` hands to its noise (captured), for rows X, y and weights v."""
    captured = {}

    def capture(self, values, rng):
        captured[self.name] = np.array(values, dtype=float)
        return _RELEASE(self, values, rng)

    monkeypatch.setattr(adassp_module.StatisticRelease, "release", capture)
    d = X.shape[1]
    from dperm.mechanisms import ERMProblem, PublicProblem

    calibration = adassp_module.calibrate(PublicProblem(X.shape[0], d, SquaredLoss(1.0), 0.0, R),
                                          1.0, 0.0, intercept=intercept)
    adassp_module.release(ERMProblem(X, y, SquaredLoss(1.0), 0.0, R, sample_weight=v),
                          calibration, np.random.default_rng(0))
    return captured


def test_adassp_weighted_statistics_are_the_weighted_sums(monkeypatch):
    X, y, v = _classification(n=50, d=3, seed=7)
    y = y * 0.7
    stats = _adassp_statistics(monkeypatch, X, y, v)
    np.testing.assert_allclose(vector_to_symmetric(stats["gram"], 3), X.T @ (v[:, None] * X),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(stats["moment"], X.T @ (v * y), rtol=1e-12, atol=1e-12)


def test_adassp_weighted_sensitivities_within_the_bounds(monkeypatch):
    rng = np.random.default_rng(8)
    worst = dict.fromkeys(("gram", "moment", "min_eigenvalue"), 0.0)
    bounds = {"gram": gram_l2_sensitivity(R), "moment": moment_l2_sensitivity(R, 1.0),
              "min_eigenvalue": min_eigenvalue_sensitivity(R)}
    for trial in range(40):
        X, y, v = _classification(n=20, d=3, seed=300 + trial)
        (X, y, v), (X2, y2, v2) = _neighbour(X, y, v, rng, adversarial=trial % 2 == 0)
        a = _adassp_statistics(monkeypatch, X, y, v)
        b = _adassp_statistics(monkeypatch, X2, y2, v2)
        for name, bound in bounds.items():
            gap = float(np.linalg.norm(a[name] - b[name]))
            worst[name] = max(worst[name], gap)
            assert gap <= bound * (1 + 1e-9), (name, trial, gap, bound)
    assert all(worst[name] > 0.3 * bounds[name] for name in bounds), worst  # it has teeth


def test_adassp_with_weights_does_not_use_the_public_gram_corner():
    """With weights the corner is ``c^2 sum v_i`` (private): its released value is kept."""
    calibration = adassp_module.calibrate(
        adassp_module_problem(40, 3), 1.0, 0.0, intercept=1.0)
    gram = symmetric_to_vector(np.eye(3) * 7.0)
    public, _ = adassp_module.solve_released(calibration, gram, np.ones(3), 7.0, 1.0)
    released, _ = adassp_module.solve_released(calibration, gram, np.ones(3), 7.0, 1.0,
                                               public_corner=False)
    assert not np.allclose(public, released)


def adassp_module_problem(n, d):
    from dperm.mechanisms import PublicProblem

    return PublicProblem(n, d, SquaredLoss(1.0), 0.0, R)


# -- zero weights and the equivalences that hold -------------------------------------------
def test_zero_weight_removes_the_row_from_the_exact_solution():
    X, y, v = _classification(n=80, d=3, seed=9)
    v[5] = 0.0
    X2, y2 = X.copy(), y.copy()
    X2[5], y2[5] = -X[5], -y[5]
    for loss in (LogisticLoss(), HuberLoss(0.5)):
        np.testing.assert_allclose(_exact_minimiser(loss, X, y, 0.05, v),
                                   _exact_minimiser(loss, X2, y2, 0.05, v), atol=1e-10)


def test_weighted_minimiser_equals_repeated_rows():
    """scikit-learn's weight/repetition equivalence, in the form the public ``n`` allows.

    Weights ``v_i = k_i / K`` at ``alpha`` minimise ``(nK/N) [(1/N) sum_rows loss + alpha' / 2
    ||w||^2]`` over the ``N = sum k_i`` rows with row ``i`` repeated ``k_i`` times and
    ``alpha' = alpha n K / N``: the same minimiser (``k_i = 0`` removes the row).
    """
    rng = np.random.default_rng(10)
    X, y, _ = _classification(n=30, d=3, seed=10)
    K = 4
    counts = rng.integers(0, K + 1, size=30)
    v = counts / K
    alpha = 0.05
    repeated_alpha = alpha * 30 * K / counts.sum()
    for loss in (LogisticLoss(), SquaredLoss(1.0)):
        target = y if loss.name == "logistic" else 0.5 * y
        weighted = _exact_minimiser(loss, X, target, alpha, v)
        repeated = minimize_erm(loss, np.repeat(X, counts, axis=0), np.repeat(target, counts),
                                repeated_alpha, 1e-12, 1000).coef
        np.testing.assert_allclose(weighted, repeated, atol=1e-9)


# -- estimators: ones == none, the record, the neighbour swap -------------------------------
CONFIGURATIONS = [
    (PrivateLogisticRegression, dict(classes=[0, 1]), "binary"),
    (PrivateLogisticRegression, dict(classes=[0, 1], mechanism="output"), "binary"),
    (PrivateLogisticRegression, dict(classes=[0, 1], delta=1e-5, mechanism="gaussian_objective"),
     "binary"),
    (PrivateLogisticRegression, dict(classes=[0, 1, 2], multi_class="multinomial"), "multi"),
    (PrivateLogisticRegression, dict(classes=[0, 1, 2], multi_class="ovr"), "multi"),
    (PrivateLinearSVC, dict(classes=[0, 1], loss="smooth_hinge"), "binary"),
    (PrivateLeastSquares, dict(y_bounds=(-2, 2)), "regression"),
    (PrivateLeastSquares, dict(y_bounds=(-2, 2), fit_intercept=False), "regression"),
    (PrivateLeastSquares, dict(y_bounds=(-2, 2), delta=1e-5, mechanism="gaussian_adassp"),
     "regression"),
    (PrivateLeastSquares, dict(y_bounds=(-2, 2), alpha=0.1), "regression"),
    (PrivateKernelLogisticRegression, dict(classes=[0, 1], n_components=20,
                                           feature_random_state=3), "binary"),
]
IDS = [f"{cls.__name__}-{'-'.join(f'{k}={v}' for k, v in params.items())}"
       for cls, params, _ in CONFIGURATIONS]


def _task_data(task, n=300, seed=11):
    rng = np.random.default_rng(seed)
    X = _rows(n, 3, seed)
    score = X @ np.array([1.0, -1.0, 0.5])
    if task == "binary":
        y = (score + 0.2 * rng.normal(size=n) > 0).astype(int)
    elif task == "multi":
        y = np.digitize(score, [-0.2, 0.2])
    else:
        y = score + 0.1 * rng.normal(size=n)
    return X, y, rng.uniform(size=n)


def _fit(cls, params, X, y, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        return cls(random_state=5, **params).fit(X, y, **fit_params)


def _linear(model):
    return getattr(model, "linear_model_", model)


def _public_corner_used(params):
    """AdaSSP with an intercept replaces the Gram corner by the public ``n c^2`` only unweighted."""
    return "y_bounds" in params and "alpha" not in params and params.get("fit_intercept", True)


@pytest.mark.parametrize(("cls", "params", "task"), CONFIGURATIONS, ids=IDS)
def test_all_ones_weights_release_what_no_weights_release(cls, params, task):
    X, y, _ = _task_data(task)
    plain = _fit(cls, params, X, y)
    ones = _fit(cls, params, X, y, sample_weight=np.ones(len(y)))
    assert "sample_weighted" not in plain.privacy_.to_dict()
    assert plain.privacy_.sample_weighted is False and ones.privacy_.sample_weighted is True
    assert ones.privacy_.to_dict() == {**plain.privacy_.to_dict(), "sample_weighted": True}
    if _public_corner_used(params):
        # with weights the intercept's Gram corner c^2 sum v_i is private, so the released one
        # is used even when every weight is 1 (which weights are is not public)
        assert not np.array_equal(_linear(ones).coef_, _linear(plain).coef_)
        return
    assert _linear(ones).coef_.tobytes() == _linear(plain).coef_.tobytes()
    assert np.asarray(_linear(ones).intercept_).tobytes() == \
        np.asarray(_linear(plain).intercept_).tobytes()


@pytest.mark.parametrize(("cls", "params", "task"), CONFIGURATIONS, ids=IDS)
def test_neighbour_swap_changes_only_noised_values(cls, params, task):
    """Replace one ``(x, y, v)`` row (weight 0 <-> 1): every non-noised released value is equal."""
    X, y, v = _task_data(task)
    X2, y2, v2 = X.copy(), y.copy(), v.copy()
    v[7], v2[7] = 0.0, 1.0
    X2[7] = -X[7] * 5  # clipped onto the bound
    y2[7] = y[0] if task != "regression" else 1e6  # another label, or a clipped target
    a, b = _fit(cls, params, X, y, sample_weight=v), _fit(cls, params, X2, y2, sample_weight=v2)
    first, second = non_noised(a), non_noised(b)
    assert first.keys() == second.keys()
    assert {k for k in first if repr(first[k]) != repr(second[k])} == set()
    assert first["privacy_.sample_weighted"] is True


@pytest.mark.parametrize("mechanism", [dict(mechanism="objective"), dict(mechanism="output"),
                                       dict(mechanism="gaussian_objective", delta=1e-5)],
                         ids=lambda params: params["mechanism"])
def test_weights_change_the_exact_solution_the_mechanism_solves(mechanism):
    """Every mechanism solves the weighted objective: at negligible noise it is the exact
    weighted minimiser and far from the unweighted one."""
    X, y, v = _task_data("binary")
    v[: len(v) // 2] = 0.0
    model = PrivateLogisticRegression(classes=[0, 1], epsilon=1e6, alpha=0.01, random_state=0,
                                      **mechanism)
    warnings.simplefilter("ignore", WeakGuaranteeWarning)
    weighted = model.fit(X, y, sample_weight=v).coef_
    unweighted = model.fit(X, y).coef_
    signs = np.where(y == 1, 1.0, -1.0)
    Xi = np.hstack([X, np.ones((len(y), 1))])
    exact = _exact_minimiser(LogisticLoss(), Xi, signs, 0.01, v)
    assert np.linalg.norm(weighted.ravel() - exact[:-1]) < 1e-3
    assert np.linalg.norm(unweighted.ravel() - exact[:-1]) > 1e-2


def test_weighted_multinomial_and_adassp_follow_the_weights():
    X, y, v = _task_data("multi")
    warnings.simplefilter("ignore", WeakGuaranteeWarning)
    v[y == 2] = 0.0  # class 2's rows carry no weight: its column gets no push from them
    model = PrivateLogisticRegression(classes=[0, 1, 2], multi_class="multinomial",
                                      epsilon=1e6, alpha=0.01, random_state=0)
    weighted = model.fit(X, y, sample_weight=v).predict_proba(X)[:, 2].mean()
    assert weighted < model.fit(X, y).predict_proba(X)[:, 2].mean()
    X, y, v = _task_data("regression", n=4000)
    y_shifted = np.where(np.arange(len(y)) % 2 == 0, y, y + 1.0)
    v = np.where(np.arange(len(y)) % 2 == 0, 1.0, 0.0)  # the shifted half has weight 0
    fit = PrivateLeastSquares(y_bounds=(-3, 3), epsilon=1e4, random_state=0)
    assert abs(fit.fit(X, y_shifted, sample_weight=v).intercept_) < 0.1
    assert abs(fit.fit(X, y_shifted).intercept_ - 0.5) < 0.1


# -- validation before any budget, and refusals ---------------------------------------------
@pytest.mark.parametrize(("weights", "message"), [
    (lambda v: np.r_[v[:-1], 2.0], r"sample_weight\[299\] = 2.0 is outside \[0, 1\]"),
    (lambda v: np.r_[-0.5, v[1:]], r"sample_weight\[0\] = -0.5 is outside"),
    (lambda v: np.r_[v[:3], np.nan, v[4:]], r"sample_weight\[3\] = nan"),
    (lambda v: np.r_[v[:3], np.inf, v[4:]], r"sample_weight\[3\] = inf"),
    (lambda v: np.r_[v[:3], 1 + 1e-15, v[4:]], r"sample_weight\[3\]"),
    (lambda v: v[:10], r"shape \(300,\)"),
    (lambda v: np.c_[v, v], r"shape \(300,\)"),
    (lambda v: ["a"] * 300, "must hold numbers"),
])
def test_bad_weights_are_refused_naming_the_row_before_any_spend(weights, message):
    X, y, v = _task_data("binary")
    accountant = BudgetAccountant(epsilon=5.0)
    model = PrivateLogisticRegression(classes=[0, 1], accountant=accountant)
    with pytest.raises(ValueError, match=message) as error:
        model.fit(X, y, sample_weight=weights(v))
    assert "PrivateLogisticRegression" in str(error.value) and "\n" not in str(error.value)
    assert accountant.spent == (0.0, 0.0)
    assert not hasattr(model, "coef_")


def test_weights_of_zero_and_one_are_accepted_exactly():
    X, y, v = _task_data("binary")
    v[:10], v[10:20] = 0.0, 1.0
    model = _fit(PrivateLogisticRegression, dict(classes=[0, 1]), X, y, sample_weight=list(v))
    assert model.privacy_.sample_weighted is True


@pytest.mark.parametrize("make", [
    lambda acc: PrivateLinearSVC(classes=[0, 1], loss="hinge", accountant=acc),
    lambda acc: PrivateQuantileRegressor(accountant=acc),
    lambda acc: PrivateKernelSVC(classes=[0, 1], loss="hinge", mechanism="output",
                                 n_components=10, accountant=acc),
    lambda acc: PrivatePredictor(epsilon_total=1.0, epsilon_per_query=0.1),
    lambda acc: PrivateParameterSearch(PrivateLogisticRegression(classes=[0, 1]),
                                       {"alpha": [0.1, 1.0]}, accountant=acc),
], ids=["hinge", "pinball", "kernel-hinge", "PrivatePredictor", "PrivateParameterSearch"])
def test_unsupported_fits_refuse_sample_weight_before_any_spend(make):
    X, y, v = _task_data("binary")
    accountant = BudgetAccountant(epsilon=5.0)
    model = make(accountant)
    with pytest.raises(ValueError, match="does not support sample_weight: .*Nothing was spent"):
        model.fit(X, y, sample_weight=v)
    assert accountant.spent == (0.0, 0.0)


def test_dask_input_refuses_sample_weight_before_any_spend():
    class FakeDask:  # the collection protocol is all dperm looks at before refusing
        shape = (300, 3)

        def __dask_graph__(self):
            return {}

    accountant = BudgetAccountant(epsilon=5.0)
    model = PrivateLogisticRegression(classes=[0, 1], accountant=accountant)
    with pytest.raises(ValueError, match="PrivateLogisticRegression does not support "
                                         "sample_weight: Dask input"):
        model.fit(FakeDask(), FakeDask(), sample_weight=np.ones(300))
    assert accountant.spent == (0.0, 0.0)


def test_record_round_trips_and_says_weights_were_used():
    X, y, v = _task_data("binary")
    record = _fit(PrivateLogisticRegression, dict(classes=[0, 1]), X, y, sample_weight=v).privacy_
    assert PrivacyRecord.from_dict(record.to_dict()) == record
    assert "Weighted rows" in str(record)
    assert math.isfinite(record.noise_scale)


def test_weighted_model_file_loads_with_its_flag(tmp_path):
    from dperm.model_io import load_model, save_model
    from dperm.tabular import NumericColumn, TabularSpec

    X, y, v = _task_data("binary")
    model = _fit(PrivateLogisticRegression, dict(classes=[0, 1]), X, y, sample_weight=v)
    path = tmp_path / "weighted.json"
    save_model(path, model, TabularSpec([NumericColumn(f"x{i}", -1, 1) for i in range(3)]),
               "label")
    assert '"sample_weighted": true' in path.read_text()
    loaded, _, _ = load_model(path)
    assert loaded.privacy_.sample_weighted is True
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
