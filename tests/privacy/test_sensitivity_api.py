"""dperm.privacy.sensitivity: every bound against brute-force measurement on neighbouring data sets.

Nie & Wang's bounds the library does not compute (000 Thm 1, 002 Lemma 2) are in
tests/_reference_formulas.py and checked the same way.

For each theorem: draw many pairs of data sets that differ in one record (random
replacements, and adversarial ones at the norm bound with flipped or extreme
labels), solve both to a certified accuracy, and check that the measured
||w(D) - w(D')|| never exceeds the bound (plus the two certified solve radii),
while the adversarial pairs reach a good fraction of it, so the test can fail.
"""

import math

import numpy as np
import pytest

import tests._reference_formulas as reference
from dperm.losses import HingeLoss, LogisticLoss, PinballLoss, SquaredLoss
from dperm.mechanisms import ERMProblem
from dperm.mechanisms.output import NONSMOOTH_RADIUS_FRACTION, certified_minimiser
from dperm.privacy import sensitivity
from dperm.solvers import RegularizedERMObjective, minimize_certified, solve_nonsmooth

ROUNDING = 1e-9  # relative slack for floating-point ties (the pinball bound is attained exactly)
N_TRIALS = 40


def _rows(rng, n, d, data_norm):
    X = rng.normal(size=(n, d))
    return X * (data_norm * rng.uniform(0.2, 1.0, size=n) / np.linalg.norm(X, axis=1))[:, None]


def _unit(rng, d):
    u = rng.normal(size=d)
    return u / np.linalg.norm(u)


def _classification_pair(rng, n, d, data_norm, adversarial):
    X = _rows(rng, n, d, data_norm)
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    X2, y2 = X.copy(), y.copy()
    if adversarial:  # the same record at the norm bound with the other label
        X[-1] = X2[-1] = data_norm * _unit(rng, d)
        y2[-1] = -y[-1]
    else:
        X2[-1] = data_norm * rng.uniform() * _unit(rng, d)
        y2[-1] = rng.choice([-1.0, 1.0])
    return X, y, X2, y2


def _regression_pair(rng, n, d, data_norm, y_bound, adversarial, extreme_label):
    X = _rows(rng, n, d, data_norm)
    y = np.clip(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n), -y_bound, y_bound)
    X2, y2 = X.copy(), y.copy()
    direction = data_norm * _unit(rng, d)
    if adversarial == "flip_label":  # same x at the norm bound, label from +M to -M
        X[-1] = X2[-1] = direction
        y[-1], y2[-1] = extreme_label, -extreme_label
    elif adversarial == "flip_row":  # same extreme label, x from +u to -u at the norm bound
        X[-1], X2[-1] = direction, -direction
        y[-1] = y2[-1] = extreme_label
    else:
        X2[-1] = rng.uniform() * direction
        y2[-1] = rng.uniform(-y_bound, y_bound)
    return X, y, X2, y2


def _least_squares(X, y, alpha):
    """Exact minimiser of (1/n) sum (y - w.x)^2 + alpha/2 ||w||^2 (normal equations)."""
    n, d = X.shape
    return np.linalg.solve(2.0 * X.T @ X / n + alpha * np.eye(d), 2.0 * X.T @ y / n), 0.0


def _smooth(loss, X, y, alpha):
    solve = minimize_certified(RegularizedERMObjective(loss, X, y, alpha), 1e-11, 2000)
    assert solve.certified
    return solve.coef, solve.solution_radius


def _nonsmooth(loss, X, y, alpha, radius_tol):
    solve = solve_nonsmooth(loss, X, y, alpha, radius_tol, 2000)
    assert solve.certified
    return solve.coef, solve.solution_radius


def _check(distance, bound, radius_1, radius_2):
    assert distance <= (bound + radius_1 + radius_2) * (1 + ROUNDING)
    return distance / bound


def test_conventions():
    assert sensitivity.lambda_from_alpha(0.1) == pytest.approx(0.05)
    assert reference.alpha_from_lambda(0.05) == pytest.approx(0.1)
    # 000 Thm 2 with kappa = R, C_L = L, lambda gamma = Lambda is 003 Cor. 1 with note 2
    assert sensitivity.lipschitz_loss_sensitivity(3.0, 2.0, 0.05, 100) == pytest.approx(
        sensitivity.erm_l2_sensitivity(100, 0.1, 2.0, 3.0)
    )


def test_formulas_against_hand_computation():
    # 000 Thm 1: sqrt(16 B / (lambda gamma m))
    assert reference.convex_loss_sensitivity(2.0, 0.1, 50, gamma=2.0) == pytest.approx(
        math.sqrt(16 * 2.0 / (0.1 * 2.0 * 50))
    )
    # 000 Thm 2: 2 kappa C_L / (lambda gamma m)
    assert sensitivity.lipschitz_loss_sensitivity(1.5, 0.9, 0.02, 300, gamma=3.0) == pytest.approx(
        2 * 1.5 * 0.9 / (0.02 * 3.0 * 300)
    )
    # 002 Lemma 2 before its lambda <= 1 relaxation: kappa (2 R kappa + 2 M) / (lambda m)
    M, kappa, lam, m = 2.0, 1.5, 0.25, 40
    R = M / math.sqrt(lam)
    expected = kappa * (2 * R * kappa + 2 * M) / (lam * m)
    assert reference.least_squares_norm_bound(M, lam) == pytest.approx(R)
    assert reference.least_squares_sensitivity(M, kappa, lam, m) == pytest.approx(expected)
    # ... which never exceeds the printed 2 R kappa (kappa + 1) / (lambda m) when lambda <= 1
    assert expected <= 2 * R * kappa * (kappa + 1) / (lam * m)
    assert reference.least_squares_loss_bound(M, kappa, lam) == pytest.approx((M + kappa * R) ** 2)
    # the radius of a certified solve adds twice
    assert sensitivity.output_perturbation_sensitivity(10, 0.5, 1.0, 2.0, 0.01) == pytest.approx(
        2 * 2.0 / (10 * 0.5) + 0.02
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: sensitivity.lipschitz_loss_sensitivity(1.0, np.inf, 0.1, 10),
        lambda: sensitivity.lipschitz_loss_sensitivity(0.0, 1.0, 0.1, 10),
        lambda: sensitivity.output_perturbation_sensitivity(10, 0.1, 1.0, 1.0, -1e-3),
        lambda: sensitivity.lambda_from_alpha(0.0),
    ],
)
def test_bad_arguments_raise_value_error(call):
    with pytest.raises(ValueError, match="must be"):
        call()


def test_corollary_1_logistic_regression():
    """003 Cor. 1 (note 2): 2 L R / (n Lambda) for a differentiable Lipschitz loss."""
    rng = np.random.default_rng(1)
    n, d, data_norm = 30, 4, 2.0
    ratios = []
    for trial in range(N_TRIALS):
        alpha = 2.0 if trial % 3 == 0 else 0.05  # strong regularisation makes the bound tight
        bound = sensitivity.erm_l2_sensitivity(n, alpha, LogisticLoss.lipschitz, data_norm)
        X, y, X2, y2 = _classification_pair(rng, n, d, data_norm, adversarial=trial % 2 == 0)
        w1, r1 = _smooth(LogisticLoss(), X, y, alpha)
        w2, r2 = _smooth(LogisticLoss(), X2, y2, alpha)
        ratios.append(_check(np.linalg.norm(w1 - w2), bound, r1, r2))
    assert max(ratios) > 0.4


def test_theorem_2_hinge_svm():
    """000 Thm 2: 2 kappa C_L / (lambda gamma m), C_L = 1, for the non-differentiable hinge."""
    rng = np.random.default_rng(2)
    n, d, data_norm = 30, 3, 1.5
    ratios = []
    for trial in range(N_TRIALS):
        alpha = 2.0 if trial % 3 == 0 else 0.05
        bound = sensitivity.lipschitz_loss_sensitivity(
            data_norm, HingeLoss.lipschitz, sensitivity.lambda_from_alpha(alpha), n
        )
        X, y, X2, y2 = _classification_pair(rng, n, d, data_norm, adversarial=trial % 2 == 0)
        w1, r1 = _nonsmooth(HingeLoss(), X, y, alpha, 1e-4 * bound)
        w2, r2 = _nonsmooth(HingeLoss(), X2, y2, alpha, 1e-4 * bound)
        ratios.append(_check(np.linalg.norm(w1 - w2), bound, r1, r2))
    assert max(ratios) > 0.4


@pytest.mark.parametrize("quantile", [0.5, 0.9, 0.2])
def test_theorem_2_pinball_loss(quantile):
    """000 Thm 2 with C_L = max(tau, 1 - tau) for quantile regression."""
    rng = np.random.default_rng(3)
    n, d, data_norm = 30, 3, 2.0
    loss = PinballLoss(quantile)
    # an extreme label on the side of the steeper slope makes the replaced gradient largest
    extreme = 10.0 if quantile >= 0.5 else -10.0
    ratios = []
    for trial in range(N_TRIALS // 2):
        alpha = 2.0 if trial % 3 == 0 else 0.05
        bound = sensitivity.lipschitz_loss_sensitivity(
            data_norm, loss.lipschitz, sensitivity.lambda_from_alpha(alpha), n
        )
        kind = "flip_row" if trial % 2 == 0 else None
        X, y, X2, y2 = _regression_pair(rng, n, d, data_norm, 10.0, kind, extreme)
        w1, r1 = _nonsmooth(loss, X, y, alpha, 1e-4 * bound)
        w2, r2 = _nonsmooth(loss, X2, y2, alpha, 1e-4 * bound)
        ratios.append(_check(np.linalg.norm(w1 - w2), bound, r1, r2))
    assert max(ratios) > 0.9  # with every residual on a linear piece the bound is attained


def test_lemma_2_least_squares():
    """002 Lemma 2 (R = M / sqrt(lambda)) = 000 Thm 2 with C_L = 2 (M + kappa R)."""
    rng = np.random.default_rng(4)
    n, d, data_norm, y_bound = 30, 3, 1.0, 2.0
    ratios = []
    for trial in range(N_TRIALS):
        alpha = 8.0 if trial % 3 == 0 else 0.3
        lam = sensitivity.lambda_from_alpha(alpha)
        bound = reference.least_squares_sensitivity(y_bound, data_norm, lam, n)
        kind = ("flip_label", "flip_row", None)[trial % 3]
        X, y, X2, y2 = _regression_pair(rng, n, d, data_norm, y_bound, kind, y_bound)
        w1, _ = _least_squares(X, y, alpha)
        w2, _ = _least_squares(X2, y2, alpha)
        for w in (w1, w2):  # 002 Thm 3's R: every minimiser has ||w|| <= M / sqrt(lambda)
            assert np.linalg.norm(w) <= reference.least_squares_norm_bound(y_bound, lam)
        ratios.append(_check(np.linalg.norm(w1 - w2), bound, 0.0, 0.0))
    assert max(ratios) > 0.4


def test_least_squares_lipschitz_constant_holds_on_the_minimisers_predictions():
    """000 Sec. 5.1: |d/dt (t - y)^2| <= C_L for every prediction t = w.x a minimiser makes."""
    rng = np.random.default_rng(5)
    data_norm, y_bound = 1.0, 1.0
    worst, worst_norm = 0.0, 0.0
    for trial in range(60):
        alpha = [0.05, 0.5, 2.0, 8.0][trial % 4]
        n = int(rng.integers(1, 20))
        X = _rows(rng, n, 2, data_norm)
        if trial % 2 == 0:  # the norm bound is nearest when every label is +M along one direction
            X = np.abs(X) * data_norm / np.linalg.norm(X, axis=1, keepdims=True)
            y = np.full(n, y_bound)
        else:
            y = rng.uniform(-y_bound, y_bound, size=n)
        w, _ = _least_squares(X, y, alpha)
        norm_bound = sensitivity.least_squares_solution_norm(y_bound, alpha)
        c_l = SquaredLoss(y_bound).solution_lipschitz(data_norm, alpha)
        assert c_l == sensitivity.least_squares_lipschitz(y_bound, data_norm, alpha)
        # the steepest slope over the domain: |y| = M and x at the norm bound along w
        steepest = 2.0 * (y_bound + data_norm * np.linalg.norm(w))
        assert np.linalg.norm(w) <= norm_bound and steepest <= c_l
        worst = max(worst, steepest / c_l)
        worst_norm = max(worst_norm, np.linalg.norm(w) / norm_bound)
    assert worst_norm > 0.4 and worst > 0.6


def test_theorem_1_least_squares_without_a_lipschitz_constant():
    """000 Thm 1 with B = M^2 (1 + kappa / sqrt(lambda))^2 for the squared loss.

    Thm 1 decays like 1/sqrt(m) where the truth decays like 1/m, so it is only
    close to tight for tiny m; with m = 2 adversarial pairs reach ~15 % of it.
    """
    rng = np.random.default_rng(6)
    n, d, data_norm, y_bound = 2, 1, 1.0, 1.0
    ratios = []
    for trial in range(N_TRIALS):
        alpha = [1.0, 2.0, 4.0][trial % 3]
        lam = sensitivity.lambda_from_alpha(alpha)
        B = reference.least_squares_loss_bound(y_bound, data_norm, lam)
        bound = reference.convex_loss_sensitivity(B, lam, n)
        kind = "flip_label" if trial % 2 == 0 else None
        X, y, X2, y2 = _regression_pair(rng, n, d, data_norm, y_bound, kind, y_bound)
        w1, _ = _least_squares(X, y, alpha)
        w2, _ = _least_squares(X2, y2, alpha)
        ratios.append(_check(np.linalg.norm(w1 - w2), bound, 0.0, 0.0))
    assert max(ratios) > 0.1


@pytest.mark.parametrize("loss", [HingeLoss(), PinballLoss(0.7)], ids=repr)
def test_released_vectors_of_certified_solves_respect_output_sensitivity(loss):
    """What output perturbation adds noise to: approximate minimisers within the allowed radius."""
    rng = np.random.default_rng(7)
    n, d, data_norm, alpha = 40, 3, 1.0, 0.5
    lipschitz = loss.solution_lipschitz(data_norm, alpha)
    exact = sensitivity.erm_l2_sensitivity(n, alpha, lipschitz, data_norm)
    radius = NONSMOOTH_RADIUS_FRACTION * exact
    bound = sensitivity.output_perturbation_sensitivity(n, alpha, lipschitz, data_norm, radius)
    ratios = []
    for trial in range(N_TRIALS // 4):
        if loss.kind == "margin":
            X, y, X2, y2 = _classification_pair(rng, n, d, data_norm, adversarial=trial % 2 == 0)
        else:
            kind = "flip_row" if trial % 2 == 0 else None
            X, y, X2, y2 = _regression_pair(rng, n, d, data_norm, 10.0, kind, 10.0)
        w1 = certified_minimiser(ERMProblem(X, y, loss, alpha, data_norm), radius, 1000)
        w2 = certified_minimiser(ERMProblem(X2, y2, loss, alpha, data_norm), radius, 1000)
        assert w1.certified and w2.certified
        ratios.append(_check(np.linalg.norm(w1.coef - w2.coef), bound, 0.0, 0.0))
    assert max(ratios) > 0.4
