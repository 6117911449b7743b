"""The multinomial (softmax) logistic loss of K classes, with the constants privacy needs.

For a row ``x`` in R^d, a label ``y`` in ``{0, ..., K-1}`` and a weight matrix ``W`` of
shape ``(d, K)`` (one column per class, scores ``s = W^T x``),

    loss(W; x, y) = log sum_k exp(s_k) - s_y,     p = softmax(s),

    gradient:  x (p - e_y)^T                          (a d x K matrix)
    Hessian:   (x x^T) kron (diag(p) - p p^T)         (on vec(W) in row-major order)

The constants (derived in docs/design/multinomial.md, checked in
``tests/test_losses_multinomial.py``):

- ``||x (p - e_y)^T||_F = ||x|| ||p - e_y|| <= sqrt(2) ||x||``
  (:data:`GRADIENT_FROBENIUS_BOUND`): ``||p - e_y||^2 = (1 - p_y)^2 + sum_{k != y} p_k^2
  <= 2 (1 - p_y)^2``;
- ``diag(p) - p p^T`` is the covariance of a one-hot draw from ``p``: positive
  semi-definite, ``1`` in its kernel (rank ``<= K - 1``), trace ``1 - ||p||^2 <= 1 - 1/K``
  (``||p||^2 >= 1/K`` on the simplex, equality at the uniform ``p``) and largest eigenvalue ``<= 1/2``
  (:data:`HESSIAN_EIGENVALUE_BOUND`, reached at ``p = (1/2, 1/2, 0, ...)``).

dperm fits all K columns (the symmetric parametrisation of scikit-learn's multinomial
logistic regression): the loss is unchanged by adding a vector to every column, and the
ridge term makes the objective strongly convex, so the minimiser is unique and its
columns sum to zero (docs/design/multinomial.md, "Identifiability").

This module is separate from :mod:`dperm.losses` (whose losses take one scalar
argument per row) because its argument is a K-vector per row.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp, softmax

from dperm.validation import ROW_BLOCK

#: ``sup ||x (p - e_y)^T||_F / ||x||`` over every probability vector ``p`` and label ``y``.
GRADIENT_FROBENIUS_BOUND = math.sqrt(2.0)
#: ``sup lambda_max(diag(p) - p p^T)`` over the probability simplex (any K >= 2).
HESSIAN_EIGENVALUE_BOUND = 0.5

__all__ = [
    "GRADIENT_FROBENIUS_BOUND",
    "HESSIAN_EIGENVALUE_BOUND",
    "MultinomialLogisticLoss",
    "MultinomialObjective",
]


class MultinomialLogisticLoss:
    """``log sum_k exp(s_k) - s_y`` for scores ``s = W^T x``; K classes, no scalar argument.

    Attributes
    ----------
    name : str
        ``"multinomial_logistic"`` (the privacy record's ``loss``).
    lipschitz : float
        ``sqrt(2)``: the per-row gradient's Frobenius norm per unit row norm.
    curvature : float
        ``1/2``: the largest eigenvalue of ``diag(p) - p p^T``, i.e. of the per-row
        Hessian per unit squared row norm. The privacy calibration uses the sharper
        trace bound ``1 - 1/K`` (module note), see
        :func:`dperm.privacy.multinomial.multinomial_jacobian_epsilon`.
    """

    name = "multinomial_logistic"
    kind = "multinomial"
    lipschitz = GRADIENT_FROBENIUS_BOUND
    curvature = HESSIAN_EIGENVALUE_BOUND
    twice_differentiable = True

    def __init__(self, n_classes: int):
        if int(n_classes) < 2:
            raise ValueError(f"the multinomial loss needs at least 2 classes; got {n_classes!r}.")
        self.n_classes = int(n_classes)

    @staticmethod
    def probabilities(scores):
        """``softmax`` of each row of ``scores`` (shape ``(n, K)``)."""
        return softmax(np.asarray(scores, dtype=float), axis=1)

    def value_sum(self, X, labels, W) -> float:
        """``sum_i loss(W; x_i, y_i)``."""
        return self.value_and_gradient_sums(X, labels, W)[0]

    def gradient_sum(self, X, labels, W):
        """``sum_i x_i (p_i - e_{y_i})^T``, shape ``(d, K)``."""
        return self.value_and_gradient_sums(X, labels, W)[1]

    def value_and_gradient_sums(self, X, labels, W, sample_weight=None):
        """Both sums from one pass over the scores (each row's term times its weight, if any)."""
        scores = X @ W
        rows = np.arange(len(labels))
        values = logsumexp(scores, axis=1) - scores[rows, labels]
        residual = self.probabilities(scores)
        residual[rows, labels] -= 1.0
        if sample_weight is not None:
            values = values * sample_weight
            residual = residual * sample_weight[:, None]
        value = float(np.sum(values))
        return value, X.T @ residual

    def hessian_sum(self, X, W, sample_weight=None):
        """``sum_i v_i (x_i x_i^T) kron (diag(p_i) - p_i p_i^T)``: ``(dK, dK)`` on ``W.ravel()``.

        Entry ``[(j, k), (l, m)]`` is ``sum_i v_i x_ij x_il (p_ik [k = m] - p_ik p_im)``
        (``v_i = 1`` without ``sample_weight``).
        Summed in row blocks so the ``n x dK`` products stay small.
        """
        d, K = W.shape
        hess = np.zeros((d, K, d, K))
        for start in range(0, X.shape[0], ROW_BLOCK):
            block = X[start:start + ROW_BLOCK]
            p = self.probabilities(block @ W)
            weighted = (block[:, :, None] * p[:, None, :]).reshape(block.shape[0], d * K)
            if sample_weight is None:
                diagonal = np.einsum("ij,ik,il->jkl", block, p, block)  # sum x_j p_k x_l
                hess -= (weighted.T @ weighted).reshape(d, K, d, K)
            else:
                v = sample_weight[start:start + ROW_BLOCK]
                diagonal = np.einsum("ij,ik,il->jkl", block, p * v[:, None], block)
                hess -= (weighted.T @ (weighted * v[:, None])).reshape(d, K, d, K)
            for k in range(K):
                hess[:, k, :, k] += diagonal[:, k, :]
        return hess.reshape(d * K, d * K)

    def params(self) -> dict:
        return {"n_classes": self.n_classes}

    def __repr__(self) -> str:
        return f"MultinomialLogisticLoss(n_classes={self.n_classes})"


class MultinomialObjective:
    """``J(W) = (1/n) sum loss + alpha/2 ||W||_F^2 + b.W / n`` on the flat vector ``W.ravel()``.

    The interface :func:`dperm.solvers.minimize_certified` reads (value and gradient,
    gradient, Hessian, ``smoothness``, ``alpha``, ``loss``, ``X``), so the multinomial
    fit gets the same certified solve as every objective mechanism (L-BFGS, Newton
    polish, proven accelerated completion). Pass ``w0`` of length ``d K``.

    Parameters
    ----------
    loss : MultinomialLogisticLoss
    X : ndarray of shape (n, d)
    labels : ndarray of shape (n,)
        Integers in ``{0, ..., K-1}``.
    alpha : float
        Total ridge strength (``alpha + Delta``).
    linear_term : ndarray of shape (d K,), optional
        The noise ``b`` (flat, row-major like ``W.ravel()``).
    sample_weight : ndarray of shape (n,), optional
        Row weights in [0, 1]: ``(1/n) sum v_i loss`` with the public ``n``.
    """

    def __init__(self, loss: MultinomialLogisticLoss, X, labels, alpha: float, linear_term=None,
                 sample_weight=None):
        self.loss = loss
        self.X = X
        self.labels = np.asarray(labels, dtype=np.intp)
        self.alpha = float(alpha)
        self.n_samples = X.shape[0]
        self.shape = (X.shape[1], loss.n_classes)
        self.linear_term = None if linear_term is None else np.asarray(linear_term, dtype=float)
        self.sample_weight = sample_weight

    def value_and_gradient(self, w):
        W = w.reshape(self.shape)
        value, grad = self.loss.value_and_gradient_sums(self.X, self.labels, W, self.sample_weight)
        n = self.n_samples
        value = value / n + 0.5 * self.alpha * float(w @ w)
        grad = grad.ravel() / n + self.alpha * w
        if self.linear_term is not None:
            value += float(self.linear_term @ w) / n
            grad = grad + self.linear_term / n
        return value, grad

    def gradient(self, w):
        return self.value_and_gradient(w)[1]

    def hessian(self, w):
        hess = self.loss.hessian_sum(self.X, w.reshape(self.shape),
                                     self.sample_weight) / self.n_samples
        hess[np.diag_indices_from(hess)] += self.alpha
        return hess

    def smoothness(self) -> float:
        """``max_i ||x_i||^2 / 2 + alpha`` bounds the Hessian's largest eigenvalue.

        Each row's term has eigenvalues ``||x_i||^2`` times those of
        ``diag(p) - p p^T``, at most ``1/2`` (:data:`HESSIAN_EIGENVALUE_BOUND`).
        """
        max_row_norm_sq = float(np.max(np.einsum("ij,ij->i", self.X, self.X), initial=0.0))
        return HESSIAN_EIGENVALUE_BOUND * max_row_norm_sq + self.alpha
