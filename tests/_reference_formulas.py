"""Formulas the tests check dperm against, which the library itself does not compute.

Each was public API of :mod:`dperm.privacy`, :mod:`dperm.tuning`, :mod:`dperm.losses_multinomial` or
:mod:`dperm.mechanisms.noise` until issue 29 (formulas used only by
tests moved out of the library): a published bound or profile that a test uses
as a reference (dp-accounting's Gaussian profile against Redberg, Koskela &
Wang's; dperm's zCDP conversion against Bun & Steinke's; the L1 sensitivities
AdaSSP's noise is never worse than) or checks against brute-force measurement
(Nie & Wang's bounds of 000 Thm 1 and 002 Lemma 2, the neighbours' minimisers),
or checks a private parameter search's draws and record against (003 Alg. 4's selection
probabilities and utility bound, Papernot & Steinke's random-stopping guarantee), or names
a number the library computes as part of another (the multinomial Hessian factor's trace
bound, a PSGD run's last prefix charge, the joint L2 lattice law on its own grid).
The text of each is as it was in the library.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp, ndtr

from dperm.mechanisms.noise import GridCalibration, grid_step
from dperm.mechanisms.noise._grid import _l2_on_grid
from dperm.privacy.psgd import PSGDCalibration
from dperm.privacy.round_charges import psgd_prefix_guarantee
from dperm.privacy.sensitivity import (
    SQUARED_NORM_GAMMA,
    least_squares_lipschitz,
    least_squares_solution_norm,
    lipschitz_loss_sensitivity,
)
from dperm.privacy.sufficient_statistics import moment_l2_sensitivity
from dperm.tuning import _check_shape, _check_stopping, truncated_negative_binomial_mean
from dperm.validation import check_delta, check_epsilon, check_positive, check_positive_int

# -- Gaussian objective perturbation (docs/design/gaussian_objective.md) ----------------------


def redberg_gaussian_objective_delta(epsilon: float, sigma: float, shift: float,
                                     epsilon_jacobian: float) -> float:
    """Privacy profile of objective perturbation with continuous Gaussian noise, add/remove neighbours.

    Redberg, Koskela & Wang (NeurIPS 2023), the profile of objective perturbation for
    GLMs with ``b ~ N(0, sigma^2 I)`` (stated here as implemented in the authors' code,
    ``compute_delta`` in github.com/rredberg/better-objpert, and re-derived in
    docs/design/gaussian_objective.md): with ``eps0`` the Jacobian term, ``Delta`` the
    noise shift's norm bound and ``delta_G`` the Gaussian mechanism's exact profile
    (Balle & Wang 2018, Thm 8) for sensitivity ``Delta`` and noise ``sigma``,

    - ``delta(eps) = 2 delta_G(eps - eps0)`` when ``eps >= eps0 + Delta^2 / (2 sigma^2)``;
    - else ``(1 - e^eh) + 2 e^eh delta_G(Delta^2 / (2 sigma^2))``, ``eh = eps - eps0 - Delta^2 / (2 sigma^2)``.

    The shift lies along one fixed row ``x`` (add/remove), so the noise's loss is that of
    a Gaussian mechanism with ``|<b, x>|`` for ``<b, x>``: two tails, hence the 2. dperm's
    neighbours replace a row (two directions) and its noise is on a grid, which is why
    the mechanism uses :func:`tight_gaussian_objective_delta`; this function is the
    continuous reference (tests compare it with dp-accounting).
    """
    def gaussian_delta(e: float) -> float:
        a = shift / (2.0 * sigma)
        b = e * sigma / shift
        return float(ndtr(a - b) - math.exp(e) * ndtr(-a - b))

    floor = shift**2 / (2.0 * sigma**2)
    epsilon_gaussian = epsilon - epsilon_jacobian
    if epsilon_gaussian >= floor:
        return 2.0 * gaussian_delta(epsilon_gaussian)
    e_hat = epsilon_gaussian - floor
    return -math.expm1(e_hat) + 2.0 * math.exp(e_hat) * gaussian_delta(floor)


# -- AdaSSP (dperm.privacy.sufficient_statistics) -------------------------------------------


def gram_l1_sensitivity(data_norm: float, dimension: int) -> float:
    """``sqrt(d (d + 1)) R^2``: L1 sensitivity of the plain upper triangle of ``sum_i z_i z_i^T``.

    ``D = d (d + 1) / 2`` entries, ``||upper(M)||_1 <= sqrt(D) ||upper(M)||_2 <= sqrt(D) sqrt(2) R^2``
    (module docstring). For ``d = 2`` the exact maximum is ``sqrt(5) R^2`` against ``sqrt(6) R^2``.
    """
    data_norm = check_positive(data_norm, "data_norm")
    dimension = check_positive_int(dimension, "dimension")
    return math.sqrt(dimension * (dimension + 1.0)) * data_norm**2


def moment_l1_sensitivity(data_norm: float, target_bound: float, dimension: int) -> float:
    """``2 sqrt(d) R B``: L1 sensitivity of ``sum_i y_i z_i`` (``||z||_1 <= sqrt(d) ||z||_2``)."""
    dimension = check_positive_int(dimension, "dimension")
    return math.sqrt(dimension) * moment_l2_sensitivity(data_norm, target_bound)


def bun_steinke_rho(epsilon: float, delta: float) -> float:
    """``rho`` from the classical conversion ``epsilon = rho + 2 sqrt(rho log(1/delta))``.

    Bun & Steinke (2016), Prop. 1.3; :func:`zcdp_rho` is never smaller (tests check).
    """
    log_inverse = math.log(1.0 / check_delta(delta))
    return (math.sqrt(log_inverse + check_epsilon(epsilon)) - math.sqrt(log_inverse)) ** 2


# -- Nie & Wang's parameters (000, 002; paper note 7) -----------------------------------------


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
    returns the unrelaxed bound, valid for every ``lambda`` and never larger. It equals
    :func:`lipschitz_loss_sensitivity` with ``gamma = 2``
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


# -- Private parameter search (dperm.tuning) ---------------------------------------------------


def exponential_mechanism_probabilities(mistakes, epsilon: float) -> np.ndarray:
    """Selection probabilities ``q_i ~ exp(-epsilon z_i / 2)`` (003 eq. 123).

    Parameters
    ----------
    mistakes : array-like of shape (m,)
        ``z_i``, the number of validation mistakes of candidate ``i`` (a score
        of sensitivity 1).
    epsilon : float
    """
    epsilon = check_epsilon(epsilon)
    scores = -0.5 * epsilon * np.asarray(mistakes, dtype=float)
    if scores.ndim != 1 or scores.size == 0 or not np.isfinite(scores).all():
        raise ValueError("mistakes must be a non-empty 1-D array of finite counts.")
    return np.exp(scores - logsumexp(scores))


def utility_bound(min_mistakes: float, n_candidates: int, epsilon: float, failure_probability: float) -> float:
    """003 Thm 9: with probability ``1 - failure_probability`` the selected model makes at most
    ``z_min + 2 log(m / failure_probability) / epsilon`` validation mistakes."""
    return min_mistakes + 2.0 * np.log(n_candidates / failure_probability) / check_epsilon(epsilon)


def random_stopping_rdp(epsilon: float, order: float, epsilon_hat: float, order_hat: float,
                        gamma: float, shape: float) -> float:
    """Papernot & Steinke (2022) Thm 2: ``eps'`` of the best of ``K ~ D_{eta, gamma}`` runs at order ``lambda``.

    ``eps' = eps + (1 + eta)(1 - 1/lambda_hat) eps_hat + (1 + eta) log(1/gamma)/lambda_hat
    + log(E[K]) / (lambda - 1)`` for a base algorithm that is
    ``(lambda, eps)``- and ``(lambda_hat, eps_hat)``-RDP.
    """
    gamma, shape = _check_stopping(gamma, shape)
    if not order > 1 or not order_hat >= 1:
        raise ValueError(f"Thm 2 needs lambda > 1 and lambda_hat >= 1; got {order}, {order_hat}.")
    mean = truncated_negative_binomial_mean(gamma, shape)
    return (epsilon + (1 + shape) * (1 - 1 / order_hat) * epsilon_hat
            + (1 + shape) * math.log(1 / gamma) / order_hat + math.log(mean) / (order - 1))


def random_stopping_epsilon(per_repetition_epsilon: float, shape: float) -> float:
    """Pure-DP form of Thm 2 (``lambda = lambda_hat -> inf``): an ``eps``-DP base gives ``(2 + eta) eps``-DP."""
    return (2.0 + _check_shape(shape)) * check_epsilon(per_repetition_epsilon)


# -- multinomial logistic loss (dperm.losses_multinomial; docs/design/multinomial.md) ---------


def covariance_trace_bound(n_classes: int) -> float:
    """``sup trace(diag(p) - p p^T) = 1 - 1/K``, reached at the uniform ``p``.

    ``trace = sum p_k - sum p_k^2 = 1 - ||p||^2`` and ``||p||^2 >= 1/K`` on the simplex
    (Cauchy-Schwarz).
    """
    return 1.0 - 1.0 / n_classes


# -- the joint L2 lattice Laplace law (dperm.mechanisms.noise; docs/design/noise.md) ----------


def l2_laplace_calibration(l2_sensitivity: float, dimension: int, epsilon: float,
                           value_bound: float | None = None) -> GridCalibration:
    """The grid, the L2 bound ``k2`` in steps (:func:`~dperm.mechanisms.noise.grid_l2_sensitivity`) and the
    scale ``k2 / epsilon``.

    For one joint release of a ``dimension``-vector with L2 sensitivity ``S``
    (:func:`~dperm.mechanisms.noise.release_on_grid`): ``epsilon``-DP because the noise's mass changes by
    at most ``exp(||c - c'||_2 / scale) <= exp(epsilon)`` between neighbours' centres.
    """
    step = grid_step(l2_sensitivity, dimension, epsilon, value_bound)
    return _l2_on_grid(step, l2_sensitivity, dimension, epsilon)


# -- a party's PSGD charges (dperm.privacy.round_charges) --------------------------------------


def psgd_run_cost(calibration: PSGDCalibration, *, slack: float) -> tuple[float, float]:
    """``(epsilon, delta)`` the ledger books for a whole PSGD run:
    :func:`~dperm.privacy.round_charges.psgd_prefix_guarantee` at ``T``.

    ``slack`` is the advanced composition's ``delta'`` of 004's scheme (the
    party's ``max_delta``, as in :func:`dperm.multiparty.privacy.party_view`).
    004's scheme and ``coordinator_accountant="rdp"``: exactly ``party_view``;
    ``"pld"``: dp-accounting's RDP conversion of the ``T`` rounds (round_charges' module note).
    """
    return psgd_prefix_guarantee(calibration, calibration.n_rounds, slack=slack)
