"""Sensitivity bounds of regularised ERM, in the papers' own parameters.

How far can the regularised minimiser move when one training record is
replaced? Each function below answers for one set of assumptions, cites the
theorem and names its parameters as the paper does. Every bound is checked
against brute-force measurement in ``tests/test_sensitivity_api.py``.

**Conventions (shared papers README, note 7).** Chaudhuri et al. (003) and
Rajkumar & Agarwal (004) regularise with ``Lambda/2 ||f||^2`` (a 1-strongly
convex ``N``); dperm's ``alpha`` is that ``Lambda``. Nie & Wang (000, 002)
regularise with ``lambda Omega(f)``, ``Omega`` ``gamma``-strongly convex; for
``Omega(f) = ||f||_K^2``, ``gamma = 2``. The two meet at ``lambda gamma =
Lambda``: ``lambda = alpha / 2`` for the squared norm
(:func:`lambda_from_alpha`). ``m`` (000/002) and ``n`` (003) both count
training records. For a linear model ``f(x) = w.x`` the RKHS norm
``||f||_K`` is ``||w||_2`` and ``kappa = sup sqrt(K(x, x))`` is the bound
``R`` on ``||x||`` (the intercept feature included).

The formulas that the mechanisms also use are owned by
:mod:`dperm.privacy.sensitivity` (in dperm's ``alpha`` convention) and
re-exported here; the functions in the papers' parameters call them.
"""

from __future__ import annotations

import math

from dperm.privacy.sensitivity import (
    erm_l2_sensitivity,
    least_squares_lipschitz,
    least_squares_solution_norm,
    output_perturbation_sensitivity,
)
from dperm.validation import check_positive, check_positive_int

#: ``gamma`` of ``Omega(f) = ||f||_K^2``: ``Omega(t f + (1 - t) g) = t Omega(f)
#: + (1 - t) Omega(g) - t (1 - t) ||f - g||^2``, i.e. 2-strongly convex in
#: 000's definition (000 Sec. 5.1).
SQUARED_NORM_GAMMA = 2.0

__all__ = [
    "SQUARED_NORM_GAMMA",
    "alpha_from_lambda",
    "convex_loss_sensitivity",
    "erm_l2_sensitivity",
    "lambda_from_alpha",
    "least_squares_lipschitz",
    "least_squares_loss_bound",
    "least_squares_norm_bound",
    "least_squares_sensitivity",
    "least_squares_solution_norm",
    "lipschitz_loss_sensitivity",
    "output_perturbation_sensitivity",
]


def lambda_from_alpha(alpha: float) -> float:
    """Nie & Wang's ``lambda`` for dperm's ``alpha``: ``lambda = alpha / 2`` (note 7).

    ``alpha/2 ||w||^2 = lambda ||w||^2`` with ``Omega = ||.||^2`` (``gamma = 2``).
    """
    return check_positive(alpha, "alpha") / SQUARED_NORM_GAMMA


def alpha_from_lambda(lam: float) -> float:
    """dperm's ``alpha`` (003's ``Lambda``) for Nie & Wang's ``lambda``: ``2 lambda``."""
    return SQUARED_NORM_GAMMA * check_positive(lam, "lam")


def convex_loss_sensitivity(B: float, lam: float, m: int, gamma: float = SQUARED_NORM_GAMMA) -> float:
    """``||f_z - f_zbar||_K <= sqrt(16 B / (lambda gamma m))`` (Nie & Wang 2017, 000 Thm 1).

    Assumptions: the loss is convex in the prediction (not necessarily
    Lipschitz or differentiable); ``Omega`` is ``gamma``-strongly convex; and
    ``B`` bounds, for every data set ``S`` of every size and every point
    ``(x, y)`` of the domain, both the regulariser at the minimiser,
    ``lambda Omega(f_S) <= B``, and the loss at the minimiser,
    ``|L(f_S(x), y)| <= B``. (For the squared loss see
    :func:`least_squares_loss_bound`.) The bound decays like ``1/sqrt(m)``,
    slower than the ``1/m`` of :func:`lipschitz_loss_sensitivity`; use it when
    no Lipschitz constant is available.

    Parameters
    ----------
    B : float
        The bound above.
    lam : float
        ``lambda`` (dperm: ``alpha / 2``, see :func:`lambda_from_alpha`).
    m : int
        Number of training records.
    gamma : float, default=2
        Strong-convexity modulus of ``Omega`` (2 for ``||f||_K^2``).

    Returns
    -------
    float
        A bound on the RKHS (for linear models: L2) distance of the minimisers
        on two data sets that differ in one record.
    """
    B = check_positive(B, "B", "B bounds lambda Omega(f_S) and |L(f_S(x), y)| (000 Thm 1).")
    lam = check_positive(lam, "lam")
    gamma = check_positive(gamma, "gamma")
    m = check_positive_int(m, "m")
    return math.sqrt(16.0 * B / (lam * gamma * m))


def lipschitz_loss_sensitivity(
    kappa: float, C_L: float, lam: float, m: int, gamma: float = SQUARED_NORM_GAMMA
) -> float:
    """``||f_z - f_zbar||_K <= 2 kappa C_L / (lambda gamma m)`` (Nie & Wang 2017, 000 Thm 2).

    Assumptions: the loss is convex in the prediction and
    ``|L(t1, y) - L(t2, y)| <= C_L |t1 - t2|`` for the predictions ``t`` that
    the minimisers can make (globally: hinge ``C_L = 1``, pinball
    ``C_L = max(tau, 1 - tau)``, logistic ``C_L = 1``); ``Omega`` is
    ``gamma``-strongly convex; ``kappa = sup_x sqrt(K(x, x))`` (linear
    model: the bound on ``||x||``). No differentiability is needed, which is
    what lets output perturbation release a hinge SVM or a quantile regression.
    With ``lambda gamma = Lambda`` and ``kappa = R``, ``C_L = L`` it is 003
    Corollary 1 with note 2, ``2 L R / (n Lambda)``
    (:func:`~dperm.privacy.sensitivity.erm_l2_sensitivity`, which computes it).

    Parameters
    ----------
    kappa : float
        Bound on ``sqrt(K(x, x))`` (the data norm ``R`` for a linear model).
    C_L : float
        Lipschitz constant of the loss in the prediction.
    lam : float
        ``lambda`` (dperm: ``alpha / 2``).
    m : int
        Number of training records.
    gamma : float, default=2
        Strong-convexity modulus of ``Omega``.

    Returns
    -------
    float
        A bound on the RKHS (linear models: L2) distance of neighbouring minimisers.
    """
    lam = check_positive(lam, "lam")
    gamma = check_positive(gamma, "gamma")
    return erm_l2_sensitivity(m, lam * gamma, C_L, kappa)


def least_squares_norm_bound(M: float, lam: float) -> float:
    """``||f_z||_K <= M / sqrt(lambda)`` for least squares with ``|y| <= M`` (002 Thm 3's ``R``).

    ``lambda ||f_z||^2 <= E_z(f_z) + lambda ||f_z||^2 <= E_z(0) <= M^2``
    (000 Sec. 5.1). Computed by
    :func:`~dperm.privacy.sensitivity.least_squares_solution_norm` as
    ``M sqrt(2 / alpha)`` with ``alpha = 2 lambda``.
    """
    return least_squares_solution_norm(M, alpha_from_lambda(lam))


def least_squares_loss_bound(M: float, kappa: float, lam: float) -> float:
    """``B = M^2 (1 + kappa / sqrt(lambda))^2`` for 000 Thm 1 with the squared loss.

    With ``|y| <= M`` and ``||f_S||_K <= M / sqrt(lambda)``
    (:func:`least_squares_norm_bound`): ``lambda Omega(f_S) <= M^2`` and
    ``(f_S(x) - y)^2 <= (kappa M / sqrt(lambda) + M)^2``; the second is the larger.
    """
    M = check_positive(M, "M", "M is a public bound on |y|.")
    kappa = check_positive(kappa, "kappa")
    return (M + kappa * least_squares_norm_bound(M, lam)) ** 2


def least_squares_sensitivity(M: float, kappa: float, lam: float, m: int) -> float:
    """``||f_z - f_z'||_K <= kappa (2 R kappa + 2 M) / (lambda m)``, ``R = M / sqrt(lambda)`` (002 Lemma 2).

    Assumptions: least squares ``(1/m) sum (f(x_i) - y_i)^2 + lambda ||f||_K^2``
    with ``|y| <= M`` and ``sqrt(K(x, x)) <= kappa``. 002's proof reaches this
    line and then uses ``M <= R`` (Lemma 2 assumes ``R >= M``, i.e.
    ``lambda <= 1``) to print ``2 R kappa (kappa + 1) / (lambda m)``; dperm
    returns the unrelaxed bound, valid for every ``lambda`` and never larger. It equals :func:`lipschitz_loss_sensitivity` with ``gamma = 2``
    and 000 Sec. 5.1's ``C_L = 2 (M + kappa R)``
    (:func:`~dperm.privacy.sensitivity.least_squares_lipschitz`), which is how
    it is computed. The projection ``pi`` onto ``[-M, M]`` (002 eq. 2) only
    shrinks differences of predictions, so the released, projected model has
    the same sensitivity. In dperm's convention (``alpha = 2 lambda``):
    ``4 kappa M (1 + kappa sqrt(2/alpha)) / (n alpha)``.

    Returns
    -------
    float
        A bound on the RKHS (linear models: L2) distance of neighbouring minimisers.
    """
    C_L = least_squares_lipschitz(M, kappa, alpha_from_lambda(lam))
    return lipschitz_loss_sensitivity(kappa, C_L, lam, m, gamma=SQUARED_NORM_GAMMA)
