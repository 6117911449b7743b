"""Privacy arithmetic of multinomial (softmax) logistic regression under objective perturbation.

Pure functions of public quantities, each with the step of the derivation it implements
(docs/design/multinomial.md: 003 Alg. 2 / Thm 2 carried to a matrix parameter).
Notation: ``n`` rows, ``K`` classes, ``d`` columns of a row (the intercept's included),
``R`` the public bound on ``||x_i||``, ``alpha`` the ridge strength of
``J(W) = (1/n) sum_i loss(W; x_i, y_i) + alpha/2 ||W||_F^2``, ``W`` of shape ``(d, K)``.

The loss's constants (:mod:`dperm.losses_multinomial`) enter as numbers:
``sqrt(2)`` (per-row gradient norm per unit row norm) and ``1 - 1/K`` (trace of the
per-row Hessian factor ``diag(p) - p p^T``).
"""

from __future__ import annotations

import math

from dperm.privacy.sensitivity import (
    SENSITIVITY_ROUNDING_MARGIN,
    ObjectiveSlack,
    tight_gaussian_objective_calibration,
)
from dperm.validation import check_positive, check_positive_int

#: ``sup ||x (p - e_y)^T||_F`` per unit ``||x||`` (:data:`dperm.losses_multinomial.GRADIENT_FROBENIUS_BOUND`).
MULTINOMIAL_GRADIENT_BOUND = math.sqrt(2.0)

__all__ = [
    "MULTINOMIAL_GRADIENT_BOUND",
    "check_n_classes",
    "gaussian_multinomial_sigma_steps",
    "multinomial_dimension",
    "multinomial_gaussian_tail_factor",
    "multinomial_jacobian_epsilon",
    "multinomial_noise_sensitivity",
    "multinomial_objective_slack",
]


def check_n_classes(n_classes) -> int:
    """``K >= 2`` as an int (a public input: the size of the public label set)."""
    n_classes = check_positive_int(n_classes, "n_classes")
    if n_classes < 2:
        raise ValueError(f"n_classes must be >= 2 for a multinomial model; got {n_classes}.")
    return n_classes


def multinomial_dimension(n_features: int, n_classes: int) -> int:
    """``d K``: the length of the noise vector ``b`` and of ``W.ravel()`` (all K columns are fitted)."""
    return check_positive_int(n_features, "n_features") * check_n_classes(n_classes)


def multinomial_noise_sensitivity(data_norm: float) -> float:
    """``2 sqrt(2) R``: the bound on ``||b_D(W) - b_D'(W)||_F`` (step 1 of the derivation).

    The noise that makes ``W`` the minimiser of the perturbed objective on ``D`` is
    ``b_D(W) = -(sum_j x_j (p_j - e_{y_j})^T + n (alpha + Delta) W)``. Neighbours
    differ in one row, so ``b_D(W) - b_D'(W) = x'_i (p'_i - e_{y'_i})^T - x_i (p_i - e_{y_i})^T``,
    two terms of Frobenius norm at most ``sqrt(2) R`` each: ``||p - e_y||^2 =
    (1 - p_y)^2 + sum_{k != y} p_k^2 <= 2 (1 - p_y)^2 <= 2``. This is 003 Thm 2's
    ``||b - b'|| <= 2`` (paper note 2's ``2 L R``) with ``L = sqrt(2)``. For ``d >= 2`` it is
    reached in the limit (rows of norm ``R`` nearly opposite, both far on one class's side,
    the same other label), so no smaller constant holds.
    """
    return 2.0 * MULTINOMIAL_GRADIENT_BOUND * check_positive(data_norm, "data_norm")


def multinomial_jacobian_epsilon(n_samples: int, regularization: float, n_classes: int,
                                 data_norm: float) -> float:
    """``(K - 1) log(1 + R^2 / (K n (alpha + Delta)))``: the Jacobian term (step 2 of the derivation).

    The Jacobian of ``W -> b_D(W)`` is ``-(H + M_i)`` with ``H`` shared by neighbours
    (the other rows and ``n (alpha + Delta) I``, so ``H >= n (alpha + Delta) I``) and
    ``M_i = (x_i x_i^T) kron (diag(p_i) - p_i p_i^T)`` the differing row's term: positive
    semi-definite, rank at most ``K - 1``, eigenvalues ``||x_i||^2 a_k`` with ``a_k`` those
    of ``diag(p_i) - p_i p_i^T``. Then

        det(H + M_i) / det(H) = det(I + M_i^(1/2) H^-1 M_i^(1/2))
                              <= det(I + M_i / (n (alpha + Delta)))
                              =  prod_k (1 + a_k ||x_i||^2 / (n (alpha + Delta))),

    and with ``a_k >= 0``, at most ``K - 1`` of them nonzero and ``sum_k a_k = 1 - ||p||^2
    <= 1 - 1/K``, the AM-GM inequality bounds the product by
    ``(1 + R^2 / (K n (alpha + Delta)))^(K - 1)``, reached at ``x_i`` of norm ``R`` and the
    uniform ``p`` (the bound is tight). Both neighbours' determinants lie between
    ``det(H)`` and ``det(H)`` times that bound, so their ratio is within ``exp(+-)`` of this
    value: one factor, as in :func:`~dperm.privacy.sensitivity.glm_jacobian_epsilon`.
    ``K = 2`` gives ``log(1 + R^2 / (2 n alpha))``: the two columns' difference
    ``w = w_1 - w_0`` solves binary logistic regression at ``alpha_b = alpha / 2`` (the
    minimiser has ``w_0 = -w_1``), whose term is ``log(1 + c R^2 / (n alpha_b))`` with
    ``c = 1/4``. The per-eigenvalue cap ``1/2`` alone would give
    ``(K - 1) log(1 + R^2 / (2 n alpha))``, about ``K / 2`` times this term.
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    regularization = check_positive(regularization, "regularization")
    n_classes = check_n_classes(n_classes)
    data_norm = check_positive(data_norm, "data_norm")
    return (n_classes - 1) * math.log1p(data_norm**2 / (n_classes * n_samples * regularization))


def multinomial_objective_slack(epsilon: float, n_samples: int, alpha: float, n_classes: int,
                                data_norm: float) -> ObjectiveSlack:
    """Split epsilon between the Jacobian term and the noise (003 Alg. 2 lines 1-2, K classes).

    As :func:`~dperm.privacy.sensitivity.glm_objective_slack`: ``Delta = 0`` and
    ``eps' = eps - J(alpha)`` (:func:`multinomial_jacobian_epsilon`) when that leaves the
    noise at least half of ``eps``; otherwise ``Delta`` solves ``J(alpha + Delta) = eps / 2``,
    ``Delta = R^2 / (K n (e^(eps / (2 (K - 1))) - 1)) - alpha`` (enlarged by the rounding
    margin so the Jacobian term stays at most ``eps / 2``), and the noise gets ``eps / 2``.
    ``epsilon`` is trusted (checked once at the boundary: the row's run or the estimator).
    """
    alpha = check_positive(alpha, "alpha")
    n_classes = check_n_classes(n_classes)
    jacobian = multinomial_jacobian_epsilon(n_samples, alpha, n_classes, data_norm)
    if epsilon - jacobian >= epsilon / 2.0:
        return ObjectiveSlack(epsilon_noise=epsilon - jacobian, extra_regularization=0.0)
    extra = (data_norm**2 * (1 + SENSITIVITY_ROUNDING_MARGIN)
             / (n_classes * n_samples * math.expm1(epsilon / (2.0 * (n_classes - 1)))) - alpha)
    return ObjectiveSlack(epsilon_noise=epsilon / 2.0, extra_regularization=max(extra, 0.0))


def multinomial_gaussian_tail_factor(n_classes: int) -> float:
    """``2 K (K - 1)``: the constant of ``P(M > t) <= 2 K (K - 1) e^(-t^2/2)`` (Gaussian form, step G2).

    The noise shift at ``W`` is ``(x' g'^T - x g^T) / h`` with ``g = p - e_y`` a convex
    combination of the ``e_k - e_y``, so ``|<Z, x g^T>| = ||x|| |<Z^T u, g>| <= ||x||
    max_{k < l} |w_k - w_l|`` with ``w = Z^T u`` (``u = x / ||x||``). Each
    ``(w_k - w_l) / (sqrt(2) sigma)`` is a unit-vector projection of the independent
    ``sigma``-subgaussian coordinates over ``sqrt(2) sigma``: 1-subgaussian, two tails
    ``2 e^(-t^2/2)``. A union over the ``K (K - 1) / 2`` pairs and the two rows gives
    ``2 K (K - 1)``; ``K = 2`` gives the GLM's ``4``
    (:func:`~dperm.privacy.sensitivity.tight_gaussian_objective_delta`).
    """
    n_classes = check_n_classes(n_classes)
    return 2.0 * n_classes * (n_classes - 1)


def gaussian_multinomial_sigma_steps(span_steps: float, dimension: int, epsilon_tilde: float,
                                     delta: float, n_classes: int) -> float:
    """Std (grid steps) of Gaussian multinomial objective perturbation's discrete Gaussian noise.

    The smallest sigma whose bound :func:`~dperm.privacy.sensitivity.tight_gaussian_objective_delta`
    with ``tail_factor = 2 K (K - 1)`` (:func:`multinomial_gaussian_tail_factor`) meets
    ``delta`` at ``eps~`` (:func:`~dperm.privacy.sensitivity.tight_gaussian_objective_calibration`).
    ``span_steps = 2 sqrt(2) R / h`` (with the rounding margin), ``dimension = d K``
    (docs/design/gaussian_multinomial.md). Trusts its inputs.
    """
    factor = multinomial_gaussian_tail_factor(n_classes)
    return tight_gaussian_objective_calibration(span_steps, dimension, epsilon_tilde, delta,
                                                tail_factor=factor)[0]
