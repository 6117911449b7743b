"""The multinomial logistic loss: value, gradient and Hessian against finite differences, and its constants."""

import numpy as np
import pytest
from scipy.special import softmax

from dperm.losses_multinomial import (
    GRADIENT_FROBENIUS_BOUND,
    HESSIAN_EIGENVALUE_BOUND,
    MultinomialLogisticLoss,
    MultinomialObjective,
)
from tests._reference_formulas import covariance_trace_bound


def _data(n=7, d=3, K=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    labels = rng.integers(0, K, n)
    W = rng.normal(size=(d, K))
    return X, labels, W


@pytest.mark.parametrize("K", [2, 3, 5])
def test_gradient_and_hessian_match_finite_differences(K):
    X, labels, W = _data(K=K)
    b = np.random.default_rng(1).normal(size=W.size)
    objective = MultinomialObjective(MultinomialLogisticLoss(K), X, labels, 0.3, linear_term=b)
    w = W.ravel()
    _, grad = objective.value_and_gradient(w)
    hess = objective.hessian(w)
    step = 1e-6
    numeric_grad = np.empty_like(w)
    numeric_hess = np.empty((w.size, w.size))
    for j in range(w.size):
        e = np.zeros_like(w)
        e[j] = step
        numeric_grad[j] = (objective.value_and_gradient(w + e)[0]
                           - objective.value_and_gradient(w - e)[0]) / (2 * step)
        numeric_hess[:, j] = (objective.gradient(w + e) - objective.gradient(w - e)) / (2 * step)
    np.testing.assert_allclose(grad, numeric_grad, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hess, numeric_hess, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hess, hess.T, atol=1e-12)


def test_value_is_the_cross_entropy():
    X, labels, W = _data()
    p = softmax(X @ W, axis=1)
    expected = -np.log(p[np.arange(len(labels)), labels]).sum()
    assert MultinomialLogisticLoss(4).value_sum(X, labels, W) == pytest.approx(expected, rel=1e-12)


def test_per_row_hessian_is_the_kronecker_product():
    """One row: (x x^T) kron (diag(p) - p p^T) on W.ravel() (row-major)."""
    X, labels, W = _data(n=1)
    p = softmax(X @ W, axis=1)[0]
    expected = np.kron(np.outer(X[0], X[0]), np.diag(p) - np.outer(p, p))
    np.testing.assert_allclose(MultinomialLogisticLoss(4).hessian_sum(X, W), expected, atol=1e-14)


def _random_simplex(rng, K, size):
    """Probability vectors from the interior, the faces and near the vertices."""
    p = rng.dirichlet(np.full(K, 0.3), size=size)
    p[: size // 4] = softmax(rng.normal(scale=30, size=(size // 4, K)), axis=1)  # near vertices
    return p


@pytest.mark.parametrize("K", [2, 3, 4, 7, 10])
def test_covariance_constants(K):
    """diag(p) - p p^T: PSD, 1 in its kernel, trace <= 1 - 1/K, largest eigenvalue <= 1/2."""
    rng = np.random.default_rng(K)
    for p in _random_simplex(rng, K, 400):
        A = np.diag(p) - np.outer(p, p)
        eig = np.linalg.eigvalsh(A)
        assert eig.min() > -1e-12
        np.testing.assert_allclose(A @ np.ones(K), 0.0, atol=1e-12)
        assert np.trace(A) <= covariance_trace_bound(K) + 1e-12
        assert eig.max() <= HESSIAN_EIGENVALUE_BOUND + 1e-12
    # both bounds are reached: the uniform p (trace) and two classes at 1/2 (eigenvalue)
    uniform = np.full(K, 1.0 / K)
    assert np.trace(np.diag(uniform) - np.outer(uniform, uniform)) == pytest.approx(covariance_trace_bound(K))
    half = np.zeros(K)
    half[:2] = 0.5
    assert np.linalg.eigvalsh(np.diag(half) - np.outer(half, half)).max() == pytest.approx(0.5)


@pytest.mark.parametrize("K", [2, 3, 6])
def test_gradient_norm_bound_on_random_and_adversarial_rows(K):
    """||x (p - e_y)^T||_F <= sqrt(2) ||x||, approached when p sits on a wrong class."""
    rng = np.random.default_rng(0)
    loss = MultinomialLogisticLoss(K)
    worst = 0.0
    for _ in range(300):
        x = rng.normal(size=(1, 4))
        x /= np.linalg.norm(x)
        W = rng.normal(scale=rng.choice([0.1, 3.0, 50.0]), size=(4, K))
        y = rng.integers(0, K, 1)
        ratio = np.linalg.norm(loss.gradient_sum(x, y, W))
        assert ratio <= GRADIENT_FROBENIUS_BOUND + 1e-12
        worst = max(worst, ratio)
    # adversarial: all the mass on class 1, label 0
    x = np.array([[1.0, 0.0, 0.0, 0.0]])
    W = np.zeros((4, K))
    W[0, 1] = 60.0
    adversarial = np.linalg.norm(loss.gradient_sum(x, np.array([0]), W))
    assert adversarial == pytest.approx(GRADIENT_FROBENIUS_BOUND, rel=1e-12)
    assert worst > 1.3


def test_smoothness_bounds_the_hessian():
    X, labels, W = _data(n=30, K=3)
    objective = MultinomialObjective(MultinomialLogisticLoss(3), X, labels, 0.1)
    for scale in (0.0, 0.5, 5.0):
        hess = objective.hessian(scale * W.ravel())
        assert np.linalg.eigvalsh(hess).max() <= objective.smoothness() + 1e-12
        assert np.linalg.eigvalsh(hess).min() >= 0.1 - 1e-12  # the ridge: strongly convex


def test_fewer_than_two_classes_are_refused():
    with pytest.raises(ValueError, match="at least 2 classes"):
        MultinomialLogisticLoss(1)
