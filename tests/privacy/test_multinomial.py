"""Multinomial objective perturbation's privacy arithmetic against the exact density of the release.

docs/design/multinomial.md derives, for W of shape (d, K) released as the minimiser of
(1/n) sum loss + alpha/2 ||W||^2 + b.W / n with noise density nu(b) ~ exp(-eps' ||b|| / (2 sqrt(2) R)),

    log f_D(W) - log f_D'(W) <= eps' + (K - 1) log(1 + R^2 / (K n alpha)),

from the change of variables f_D(W) = nu(b_D(W)) |det grad b_D(W)|. Here both densities are
computed exactly (d = 2, K = 3: W in R^6) and their log-ratio compared with the bound over many
W and adversarial neighbours; the Jacobian term is shown tight.
"""

import math

import numpy as np
import pytest

from dperm.losses_multinomial import MultinomialLogisticLoss, MultinomialObjective
from dperm.privacy.multinomial import (
    check_n_classes,
    multinomial_dimension,
    multinomial_jacobian_epsilon,
    multinomial_noise_sensitivity,
    multinomial_objective_slack,
)
from dperm.solvers import minimize_certified


def _noise_of(X, labels, W, alpha):
    """b_D(W): the noise that makes W the exact minimiser on (X, labels) (flat, row-major)."""
    K = W.shape[1]
    n = X.shape[0]
    grad = MultinomialLogisticLoss(K).gradient_sum(X, labels, W)
    return -(grad + n * alpha * W).ravel()


def _log_jacobian(X, W, alpha):
    """log |det grad_W b_D(W)| = log det(sum_i (x_i x_i^T) kron (diag p_i - p_i p_i^T) + n alpha I)."""
    hess = MultinomialLogisticLoss(W.shape[1]).hessian_sum(X, W)
    hess[np.diag_indices_from(hess)] += X.shape[0] * alpha
    sign, logdet = np.linalg.slogdet(hess)
    assert sign > 0
    return logdet


def _log_density(X, labels, W, alpha, epsilon_noise, R):
    """log f_D(W) up to the constant shared by neighbours (the noise law's normaliser)."""
    b = _noise_of(X, labels, W, alpha)
    return -epsilon_noise * np.linalg.norm(b) / multinomial_noise_sensitivity(R) + _log_jacobian(X, W, alpha)


def _minimiser(X, labels, K, alpha):
    """The exact (noise-free) minimiser on (X, labels): there b_D(W) = 0."""
    objective = MultinomialObjective(MultinomialLogisticLoss(K), X, labels, alpha)
    solve = minimize_certified(objective, tol=1e-12, max_iter=1000, w0=np.zeros(X.shape[1] * K))
    return solve.coef.reshape(X.shape[1], K)


def _neighbours(rng, n, d, K, R):
    X = rng.normal(size=(n, d))
    X *= (R * rng.uniform(0.0, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    labels = rng.integers(0, K, n)
    X2, labels2 = X.copy(), labels.copy()
    direction = rng.normal(size=d)
    X2[0] = R * direction / np.linalg.norm(direction) * rng.choice([1.0, rng.uniform()])
    labels2[0] = (labels[0] + rng.integers(1, K)) % K
    if rng.uniform() < 0.3:
        X[0] = -X2[0]  # opposite rows: near the noise shift's worst case
    if rng.uniform() < 0.2:
        X[0] = 0.0  # a zero row against a full one: the Jacobian's worst case
    return (X, labels), (X2, labels2)


@pytest.mark.parametrize("n, alpha", [(5, 0.05), (10, 0.01), (4, 0.5)])
def test_exact_density_ratio_is_within_the_bound(n, alpha):
    d, K, R, epsilon_noise = 2, 3, 1.0, 0.7
    bound = epsilon_noise + multinomial_jacobian_epsilon(n, alpha, K, R)
    rng = np.random.default_rng(n)
    worst = 0.0
    for _ in range(300):
        (X, labels), (X2, labels2) = _neighbours(rng, n, d, K, R)
        for W in [scale * rng.normal(size=(d, K)) for scale in (0.0, 0.3, 3.0, 30.0)] + [
                _minimiser(X2, labels2, K, alpha)]:  # b_D'(W) = 0: the noise term's worst case
            ratio = (_log_density(X, labels, W, alpha, epsilon_noise, R)
                     - _log_density(X2, labels2, W, alpha, epsilon_noise, R))
            assert abs(ratio) <= bound + 1e-9, (ratio, bound)
            worst = max(worst, abs(ratio))
    assert worst > 0.4 * bound  # not vacuous (the two terms are shown tight separately below)


@pytest.mark.parametrize("K", [2, 3, 5])
@pytest.mark.parametrize("n, alpha", [(3, 0.1), (20, 0.002)])
def test_jacobian_term_is_tight(K, n, alpha):
    """At W = 0 (uniform p) with the other rows orthogonal to x_i and x'_i = 0 the ratio is the bound."""
    d, R = 2, 1.0
    X = np.zeros((n, d))
    X[1:, 1] = 0.5  # the other rows along e_2
    X[0, 0] = R  # the differing row along e_1, its neighbour the zero row
    X2 = X.copy()
    X2[0] = 0.0
    W = np.zeros((d, K))
    exact = _log_jacobian(X, W, alpha) - _log_jacobian(X2, W, alpha)
    assert exact == pytest.approx(multinomial_jacobian_epsilon(n, alpha, K, R), rel=1e-10)


def test_jacobian_bound_holds_at_random_points_for_larger_k():
    rng = np.random.default_rng(5)
    for _ in range(200):
        K = int(rng.integers(2, 8))
        d, n, alpha, R = 3, int(rng.integers(2, 12)), float(rng.uniform(0.005, 0.5)), 1.0
        (X, _), (X2, _) = _neighbours(rng, n, d, K, R)
        W = rng.normal(scale=rng.choice([0.0, 1.0, 10.0]), size=(d, K))
        exact = _log_jacobian(X, W, alpha) - _log_jacobian(X2, W, alpha)
        assert abs(exact) <= multinomial_jacobian_epsilon(n, alpha, K, R) + 1e-9


def test_noise_shift_bound_is_reached():
    """||b_D(W) - b_D'(W)|| <= 2 sqrt(2) R on random neighbours, and reached by opposite rows."""
    rng = np.random.default_rng(0)
    d, K, R, n, alpha = 2, 3, 1.0, 6, 0.1
    for _ in range(500):
        (X, labels), (X2, labels2) = _neighbours(rng, n, d, K, R)
        W = rng.normal(scale=rng.choice([0.1, 5.0, 100.0]), size=(d, K))
        shift = np.linalg.norm(_noise_of(X, labels, W, alpha) - _noise_of(X2, labels2, W, alpha))
        assert shift <= multinomial_noise_sensitivity(R) + 1e-9
    # Reached in the limit: x and x' nearly opposite, both far on class 0's side (p = p' -> e_0),
    # the same wrong label 1: b_D - b_D' -> -2 x (e_0 - e_1)^T, of norm 2 sqrt(2) R.
    tilt = 1e-3
    X = np.zeros((n, d))
    X[0] = R * np.array([tilt, 1.0]) / math.hypot(tilt, 1.0)
    X2 = X.copy()
    X2[0] = R * np.array([tilt, -1.0]) / math.hypot(tilt, 1.0)
    W = np.zeros((d, K))
    W[0, 0] = 1e7
    labels = np.zeros(n, int)
    labels[0] = 1
    shift = np.linalg.norm(_noise_of(X, labels, W, alpha) - _noise_of(X2, labels, W, alpha))
    assert shift == pytest.approx(multinomial_noise_sensitivity(R), rel=1e-5)


@pytest.mark.parametrize("K", [2, 3, 10])
def test_slack_keeps_the_jacobian_term_within_half_of_epsilon(K):
    for epsilon in (0.05, 0.5, 1.0, 3.0):
        for n_alpha in (0.01, 0.3, 3.0, 300.0):
            n = 100
            alpha = n_alpha / n
            slack = multinomial_objective_slack(epsilon, n, alpha, K, 1.0)
            jacobian = multinomial_jacobian_epsilon(n, alpha + slack.extra_regularization, K, 1.0)
            assert slack.epsilon_noise + jacobian <= epsilon * (1 + 1e-12)
            assert slack.epsilon_noise >= epsilon / 2.0 - 1e-15
            if slack.extra_regularization > 0:
                assert jacobian == pytest.approx(epsilon / 2.0, rel=1e-6)


def test_two_classes_match_the_binary_logistic_term():
    """K = 2: the binary logistic term log(1 + c R^2 / (n alpha_b)), c = 1/4, at alpha_b = alpha / 2."""
    n, alpha, R = 50, 0.02, 1.3
    assert multinomial_jacobian_epsilon(n, alpha, 2, R) == pytest.approx(
        math.log1p(0.25 * R**2 / (n * alpha / 2)), rel=1e-14)


def test_public_inputs_are_checked():
    assert multinomial_dimension(4, 3) == 12
    with pytest.raises(ValueError, match="n_classes"):
        check_n_classes(1)
    with pytest.raises(ValueError):
        multinomial_jacobian_epsilon(0, 0.1, 3, 1.0)
