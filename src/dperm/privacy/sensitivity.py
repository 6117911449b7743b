"""Privacy calibration as pure functions, each citing the theorem it implements.

Notation: ``n`` training rows, ``alpha`` the regularisation strength of
``J(w) = (1/n) sum_i loss(y_i w.x_i) + alpha/2 ||w||^2`` (the papers' Lambda;
paper note 7 relates it to Nie & Wang's lambda),
``data_norm`` R a public bound on ``||x_i||``, ``lipschitz`` L a bound on
``|loss'|`` and ``curvature`` c a bound on ``|loss''|``. The papers take
R = L = 1; the general forms are paper note 2.

The last section restates the bounds in Nie & Wang's parameters
(``lam``, ``gamma``, ``kappa``, ``m``); every bound is checked against
brute-force measurement in ``tests/privacy/test_sensitivity_api.py``.

The functions a mechanism's calibration calls (the epsilon split, the slack, the
Gaussian sigmas) trust their epsilon and delta: a fit or a mechanism checked them once
where the user's value entered (:meth:`dperm.mechanisms.catalog.Mechanism.run`, the
estimators' parameter constraints). They still refuse ``delta == 0``, where their
formulas have no value.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction

from scipy.optimize import brentq, minimize_scalar
from scipy.special import log_ndtr
from scipy.stats import chi2

from dperm.validation import check_delta, check_epsilon, check_positive, check_positive_int

__all__ = [
    "GAUSSIAN_OBJECTIVE_CALIBRATIONS", "ObjectiveSlack", "SENSITIVITY_ROUNDING_MARGIN",
    "AMP_OUTPUT_SHIFT_RATIO", "SQUARED_NORM_GAMMA",
    "amp_output_sensitivity", "amp_solution_radius", "amp_solve_tolerance",
    "discrete_gaussian_sigma_steps", "discrete_objective_noise_steps",
    "erm_l2_sensitivity", "gaussian_objective_sigma", "gaussian_sigma_star",
    "glm_jacobian_epsilon", "glm_objective_slack", "gradient_sum_sensitivity",
    "grid_l1_sensitivity", "grid_l2_sensitivity", "lambda_from_alpha", "least_squares_lipschitz",
    "least_squares_solution_norm", "lipschitz_loss_sensitivity", "local_aggregation_sensitivity",
    "objective_noise_grid", "objective_perturbation_slack", "output_perturbation_sensitivity",
    "split_epsilon_for_amp", "subgaussian_norm_quantile",
    "tight_discrete_gaussian_sigma_steps", "tight_gaussian_objective_calibration",
    "tight_gaussian_objective_delta",
]


#: Relative allowance for rounding in the float computation of a sensitivity
#: before it enters exact arithmetic (the sensitivity formulas are evaluated in floats).
SENSITIVITY_ROUNDING_MARGIN = 1e-9


def grid_l1_sensitivity(l2_sensitivity: float, dimension: int, step: float) -> int:
    """Integer bound on ``||round(a/g) - round(a'/g)||_1`` when ``||a - a'||_2 <= S``.

    Each coordinate moves by at most ``ceil(|a_i - a'_i| / g)`` grid steps, so the
    total is at most ``floor(||a - a'||_1 / g) + d <= floor(sqrt(d) S / g) + d``
    (``||v||_1 <= sqrt(d) ||v||_2``). Computed exactly: ``floor(sqrt(x)) =
    isqrt(floor(x))``, with ``S`` enlarged by :data:`SENSITIVITY_ROUNDING_MARGIN`.
    """
    ratio = Fraction(l2_sensitivity * (1 + SENSITIVITY_ROUNDING_MARGIN)) / Fraction(step)
    squared = dimension * ratio * ratio
    return math.isqrt(squared.numerator // squared.denominator) + dimension


def grid_l2_sensitivity(l2_sensitivity: float, dimension: int, step: float) -> Fraction:
    """Rational bound on ``||round(a/g) - round(a'/g)||_2`` when ``||a - a'||_2 <= S``.

    The rounding errors differ by less than one step per coordinate, so the
    rounded points are at most ``S / g + sqrt(d)`` steps apart (clamping each
    coordinate, :func:`dperm.mechanisms.noise.to_grid`, is 1-Lipschitz and only
    shrinks it). ``sqrt(d)`` is bounded above by a dyadic rational and ``S`` is
    enlarged by :data:`SENSITIVITY_ROUNDING_MARGIN`.
    """
    ratio = Fraction(l2_sensitivity * (1 + SENSITIVITY_ROUNDING_MARGIN)) / Fraction(step)
    root_upper = Fraction(math.isqrt(dimension << 20) + 1, 1 << 10)  # >= sqrt(d)
    return ratio + root_upper


def erm_l2_sensitivity(n_samples: int, alpha: float, lipschitz: float, data_norm: float) -> float:
    """L2 sensitivity ``2 L R / (n alpha)`` of the regularised ERM minimiser.

    003 Corollary 1 (``L = R = 1``: ``2 / (n Lambda)``), generalised in paper note 2;
    the same bound is Nie & Wang (000) Thm 2 with ``kappa = R``, ``C_L = L`` and
    ``lambda gamma = alpha`` (paper note 7). It needs only a convex loss that is
    L-Lipschitz in the prediction ``w.x`` (over the predictions the minimisers
    can make) and the 1-strongly convex regulariser ``alpha/2 ||w||^2``: no
    differentiability. This is the one owner of the formula.
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    alpha = check_positive(alpha, "alpha")
    lipschitz = check_positive(lipschitz, "lipschitz")
    data_norm = check_positive(data_norm, "data_norm")
    return 2.0 * lipschitz * data_norm / (n_samples * alpha)


def output_perturbation_sensitivity(
    n_samples: int, alpha: float, lipschitz: float, data_norm: float, solution_radius: float
) -> float:
    """L2 sensitivity ``2 L R / (n alpha) + 2 r`` of a *certified approximate* minimiser.

    If each released vector is within a radius ``r`` (fixed in advance and
    certified by the solver) of the exact minimiser, the triangle inequality
    adds ``r`` on each side of :func:`erm_l2_sensitivity`. The output noise of
    003 Alg. 1 / 000 Lemma 1 is calibrated to this number.
    """
    radius = float(solution_radius)
    if not math.isfinite(radius) or radius < 0:
        raise ValueError(f"solution_radius must be a finite number >= 0; got {solution_radius!r}.")
    return erm_l2_sensitivity(n_samples, alpha, lipschitz, data_norm) + 2.0 * radius


def least_squares_solution_norm(y_bound: float, alpha: float) -> float:
    """Bound ``M sqrt(2 / alpha)`` on ``||w||`` for regularised least squares.

    002 Lemma 2 / Thm 3 (and 000 Sec. 5.1): with ``|y_i| <= M`` the minimiser of
    ``(1/n) sum (y_i - w.x_i)^2 + alpha/2 ||w||^2`` satisfies
    ``alpha/2 ||w||^2 <= J(w) <= J(0) = (1/n) sum y_i^2 <= M^2``, i.e.
    ``||w|| <= M sqrt(2/alpha) = M / sqrt(lambda)`` with the papers'
    ``lambda = alpha / 2`` (paper note 7). This is the papers' ``R = M / sqrt(lambda)``.
    """
    y_bound = check_positive(y_bound, "y_bound", "y_bound is a public bound M on |y|.")
    alpha = check_positive(alpha, "alpha")
    return y_bound * math.sqrt(2.0 / alpha)


def least_squares_lipschitz(y_bound: float, data_norm: float, alpha: float) -> float:
    """``C_L = 2 (M + kappa M / sqrt(lambda))`` for least squares, ``lambda = alpha/2``.

    000 Sec. 5.1: every minimiser has ``||w|| <= M/sqrt(lambda)``
    (:func:`least_squares_solution_norm`), so on rows with ``||x|| <= kappa``
    it predicts ``|w.x| <= kappa M / sqrt(lambda)``. For such predictions
    ``t1, t2`` and ``|y| <= M``,
    ``|(t1 - y)^2 - (t2 - y)^2| = |t1 + t2 - 2y| |t1 - t2|
    <= 2 (kappa M/sqrt(lambda) + M) |t1 - t2|``.
    000 prints ``2 M (kappa + 1) / sqrt(lambda)``, which is this number
    relaxed by ``M <= M / sqrt(lambda)``: true only for ``lambda <= 1`` (002
    Lemma 2 assumes ``0 < lambda <= 1``). dperm uses the unrelaxed constant,
    valid for every ``alpha`` and never larger than the printed one when
    ``lambda <= 1``.
    """
    data_norm = check_positive(data_norm, "data_norm")
    solution_norm = least_squares_solution_norm(y_bound, alpha)
    return 2.0 * (float(y_bound) + data_norm * solution_norm)


@dataclass(frozen=True)
class ObjectiveSlack:
    """Result of 003 Alg. 2 lines 1-2 (004 Proc. 2, typo fixed per paper note 4).

    Attributes
    ----------
    epsilon_noise : float
        ``eps'``, the part of epsilon left for the noise term ``b.w / n``.
    extra_regularization : float
        ``Delta`` >= 0, added as ``Delta/2 ||w||^2`` when the slack alone fails.
    """

    epsilon_noise: float
    extra_regularization: float


def objective_perturbation_slack(
    epsilon: float, n_samples: int, alpha: float, curvature: float, data_norm: float
) -> ObjectiveSlack:
    """Split epsilon between the Jacobian term and the noise as 003 Alg. 2 prints it (two factors).

    Kept for 004's calibration (the reproduction) and the multiparty baselines; dperm's
    pure and Gaussian objective perturbation use :func:`glm_objective_slack`,
    whose Jacobian term is one factor of this.

    ``eps' = eps - 2 log(1 + c R^2 / (n alpha))`` (003 Alg. 2 line 1 writes
    ``log(1 + 2c/(n L) + c^2/(n L)^2)``, the same number for ``R = 1``; paper note 2).
    If ``eps' > 0`` then ``Delta = 0``; otherwise
    ``Delta = c R^2 / (n (e^(eps/4) - 1)) - alpha`` and ``eps' = eps / 2``
    (003 Alg. 2 line 2; 004 Proc. 2 prints ``exp(c/4)``, a typo: paper note 4).
    With ``alpha + Delta`` the Jacobian ratio is at most
    ``(1 + c R^2 / (n (alpha + Delta)))^2 = e^(eps/2)``, and the noise spends
    the other ``eps / 2``.
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    alpha = check_positive(alpha, "alpha")
    jacobian_term = curvature * data_norm**2 / (n_samples * alpha)
    epsilon_noise = epsilon - 2.0 * math.log1p(jacobian_term)
    if epsilon_noise > 0:
        return ObjectiveSlack(epsilon_noise=epsilon_noise, extra_regularization=0.0)
    extra = curvature * data_norm**2 / (n_samples * math.expm1(epsilon / 4.0)) - alpha
    return ObjectiveSlack(epsilon_noise=epsilon / 2.0, extra_regularization=max(extra, 0.0))


def gaussian_sigma_star(dimension: int, epsilon_tilde: float, delta: float) -> float:
    """``sigma*(d, eps~, delta)`` of 004 Proc. 3 in closed form (paper note 3).

    ``sigma*`` solves ``P(U <= ((sigma^2 eps~ - 2) / (2 sigma))^2) = 1 - delta``
    for ``U ~ chi^2_d``. With ``q = sqrt(chi2.ppf(1 - delta, d))`` this is the
    positive root of ``eps~ sigma^2 - 2 q sigma - 2 = 0``:
    ``sigma* = (q + sqrt(q^2 + 2 eps~)) / eps~``.
    """
    dimension = check_positive_int(dimension, "dimension")
    epsilon_tilde = check_epsilon(epsilon_tilde, "epsilon_tilde")
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError(
            "delta must be > 0 for Gaussian objective perturbation: it is "
            "(epsilon, delta)-DP (004 Thm 4.1) and gives no guarantee at delta = 0."
        )
    q = math.sqrt(chi2.ppf(1.0 - delta, dimension))
    return (q + math.sqrt(q * q + 2.0 * epsilon_tilde)) / epsilon_tilde


def gaussian_objective_sigma(
    dimension: int, epsilon_tilde: float, delta: float, lipschitz: float, data_norm: float
) -> float:
    """Standard deviation ``L R sigma*`` of each coordinate of GOP's noise (004 Alg. 4, paper note 2).

    004's proof bounds ``||eta_D - eta_D'|| <= 2``; with sensitivity ``s = 2 L R``
    the condition ``||eta|| <= (2 sigma^2 eps~ - s^2) / (2 s)`` holds with
    probability ``1 - delta`` exactly when ``sigma = (s / 2) sigma*``.
    """
    return lipschitz * data_norm * gaussian_sigma_star(dimension, epsilon_tilde, delta)


# -- float-safe objective perturbation (approximate minima perturbation) ----------------
#: Share of epsilon that approximate minima perturbation gives its output stage.
_AMP_OUTPUT_FRACTION = 0.01


def split_epsilon_for_amp(epsilon: float) -> tuple[float, float]:
    """``(epsilon_objective, epsilon_output)``: the output stage gets :data:`_AMP_OUTPUT_FRACTION`.

    Approximate minima perturbation (Iyengar, Near, Song, Thakkar, Thakurta &
    Wang 2019, Alg. 1) releases an approximate minimiser of the perturbed
    objective plus output noise; by adaptive composition the two parts' epsilons
    add up to the guarantee (Dwork & Roth 2014, Thm 3.16).
    """
    output = epsilon * _AMP_OUTPUT_FRACTION
    return epsilon - output, output


def objective_noise_grid(n_samples: int, tol: float, dimension: int) -> float:
    """The power-of-two grid ``h <= n tol / sqrt(d)`` of objective perturbation's noise ``b``.

    dperm draws ``b = h z`` with ``z`` an exact integer vector and analyses the
    ideal noise ``h (z + u)``, ``u`` uniform in the unit cube: its density is
    piecewise constant and obeys the same ratio bound (see
    :func:`discrete_objective_noise_steps`). The minimiser moves by at most
    ``||h u|| / (n (alpha + Delta)) <= h sqrt(d) / (2 n (alpha + Delta))`` between
    the two, at most half the solver's radius ``tol / (alpha + Delta)``.
    """
    target = n_samples * check_positive(tol, "tol") / math.sqrt(dimension)
    return math.ldexp(1.0, math.floor(math.log2(target)))


def amp_solution_radius(tol: float, noise_grid: float, n_samples: int, dimension: int,
                        regularization: float) -> float:
    """Radius ``(tol + h sqrt(d) / (2 n)) / (alpha + Delta)`` around the ideal perturbed minimiser.

    A gradient norm ``<= tol`` puts the released point within ``tol / (alpha + Delta)``
    of the minimiser for the noise ``h z`` (strong convexity), and that is within
    ``h sqrt(d) / (2 n (alpha + Delta))`` of the minimiser for ``h (z + u)``
    (:func:`objective_noise_grid`). Fixed before the data is solved.
    """
    return (tol + noise_grid * math.sqrt(dimension) / (2.0 * n_samples)) / regularization


#: ``rho``: AMP's output noise may add at most this fraction of the objective noise's RMS
#: shift of the minimiser. The released error's RMS is at most ``(1 + rho)`` times
#: the objective stage's own (triangle inequality), so the output stage costs at most
#: 5% of the error bound; a smaller ``rho`` buys little and costs solver steps.
AMP_OUTPUT_SHIFT_RATIO = 0.05
#: The certified gradient check compares an ``n``-term float64 mean: its rounding is
#: of order ``eps_machine sqrt(n)`` per unit of gradient (a random walk of ``n``
#: roundings; pairwise and blocked BLAS sums do better), so the solve is never asked
#: for less than this many times that (:func:`amp_solve_tolerance`). 16 keeps the
#: floor below the ``rho`` target up to ``n ~ 10^8`` at ``d = 20``, ``eps = 0.1``.
_AMP_TOLERANCE_FLOOR_ULPS = 16.0


def amp_solve_tolerance(tol: float, objective_rms_noise_norm: float, n_samples: int,
                        output_rms_per_sensitivity: float, gradient_scale: float = 1.0) -> float:
    """The gradient tolerance the certified solve must reach, from public quantities only.

    The objective noise ``b`` moves the minimiser by ``||b|| / (n (alpha + Delta))``
    (strong convexity), RMS ``B / (n (alpha + Delta))`` with ``B = sqrt(E||b||^2)``.
    AMP's output noise has RMS norm ``u * 2 r`` for sensitivity ``2 r``
    (``u`` = ``output_rms_per_sensitivity``, the output law's RMS norm per unit
    sensitivity), with ``r = (t + h sqrt(d) / (2 n)) / (alpha + Delta) <= 1.5 t / (alpha + Delta)``
    when the grid is :func:`objective_noise_grid` at ``t`` (:func:`amp_solution_radius`).
    So ``t <= rho B / (3 n u)`` (``rho`` = :data:`AMP_OUTPUT_SHIFT_RATIO`) keeps the
    output stage's RMS at most ``rho`` times the objective stage's shift, for any
    ``alpha + Delta`` (it cancels) and any ``n``: the output noise falls like ``1/n``
    with the objective noise's effect instead of staying fixed by the user's ``tol``.

    Returns ``min(tol, max(that, floor))`` with
    ``floor = _AMP_TOLERANCE_FLOOR_ULPS * eps_machine * sqrt(max(1, n)) * gradient_scale``
    (``gradient_scale`` a public bound on one example's gradient, ``L R``), above the
    rounding of the certified ``n``-term gradient check; where the floor binds the
    output stage's share is above ``rho`` but still certified. A solve that does not
    reach the tolerance is completed by a proven number of accelerated steps
    (:func:`dperm.solvers.minimize_certified`), so every fit releases.
    """
    tol = check_positive(tol, "tol")
    if not output_rms_per_sensitivity > 0:
        return tol  # an epsilon so large the output noise underflows to nothing: no trade-off
    target = (AMP_OUTPUT_SHIFT_RATIO * objective_rms_noise_norm
              / (3.0 * n_samples * output_rms_per_sensitivity))
    floor = (_AMP_TOLERANCE_FLOOR_ULPS * sys.float_info.epsilon * math.sqrt(max(1, n_samples))
             * max(1.0, gradient_scale))
    return min(tol, max(target, floor))


def amp_output_sensitivity(solution_radius: float) -> float:
    """L2 sensitivity ``2 r`` of AMP's output stage, given the ideal perturbed minimiser.

    Conditioned on the ideal minimiser ``w*`` (Iyengar et al. 2019, Thm 1's
    argument), the released approximate point lies within ``r`` of ``w*`` on
    either neighbouring data set, so the two differ by at most ``2 r``.
    """
    return 2.0 * check_positive(solution_radius, "solution_radius")


def subgaussian_norm_quantile(dimension: int, delta: float) -> float:
    """``q`` with ``P(||z|| > q sigma) <= delta`` for ``z`` with independent ``sigma``-subgaussian coordinates.

    Hsu, Kakade & Zhang (2012), Thm 1 with ``A = I``:
    ``P(||z||^2 > sigma^2 (d + 2 sqrt(d t) + 2 t)) <= e^-t``, ``t = ln(1/delta)``.
    The discrete Gaussian ``N_Z(0, sigma^2)`` is ``sigma``-subgaussian
    (Canonne, Kamath & Steinke 2020, Cor. 9), so this replaces the chi-square
    quantile of paper note 3 for the discrete noise.
    """
    t = math.log(1.0 / delta)
    return math.sqrt(dimension + 2.0 * math.sqrt(dimension * t) + 2.0 * t)


def discrete_objective_noise_steps(lipschitz: float, data_norm: float, dimension: int,
                                   noise_grid: float) -> tuple[int, float]:
    """Bounds on how far the noise must move on the grid to give a neighbour the same minimiser.

    003 Thm 2's proof needs noises ``b, b'`` with ``||b - b'||_2 <= 2 L R``
    (paper note 2). On the grid ``h`` the cells ``z = round(b/h)`` and
    ``z' = round(b'/h)`` differ per coordinate by at most ``|b_i - b'_i| / h + 1``, so

    - in L1 by at most ``floor(sqrt(d) 2 L R / h) + d`` (an integer, returned first);
    - in L2 by at most ``2 L R / h + sqrt(d)`` (returned second).
    """
    sensitivity = 2.0 * lipschitz * data_norm
    l1_steps = grid_l1_sensitivity(sensitivity, dimension, noise_grid)
    l2_steps = sensitivity * (1 + 1e-9) / noise_grid + math.sqrt(dimension)
    return l1_steps, l2_steps


def discrete_gaussian_sigma_steps(l2_steps: float, dimension: int, epsilon_tilde: float,
                                  delta: float) -> float:
    """Std (in grid steps) of the discrete Gaussian noise of float-safe GOP.

    The privacy loss of the noise term is ``(||z'||^2 - ||z||^2) / (2 sigma^2)
    <= (2 ||z|| s + s^2) / (2 sigma^2)`` with ``s`` the L2 bound in steps
    (:func:`discrete_objective_noise_steps`); it is at most ``eps~`` when
    ``||z|| <= q sigma``, which fails with probability ``<= delta``
    (:func:`subgaussian_norm_quantile`). The smallest such sigma is
    ``s (q + sqrt(q^2 + 2 eps~)) / (2 eps~)``: 004 Proc. 3's rule (paper note 3)
    with the subgaussian quantile for the chi-square one.
    """
    if delta == 0:
        raise ValueError("delta must be > 0 for Gaussian objective perturbation (004 Thm 4.1).")
    q = subgaussian_norm_quantile(dimension, delta)
    return l2_steps * (q + math.sqrt(q * q + 2.0 * epsilon_tilde)) / (2.0 * epsilon_tilde)


# -- Gaussian objective perturbation, default calibration ----------------------------
#: The calibrations of ``mechanism="gaussian_objective"``: ``"tight"`` (the default,
#: :func:`tight_discrete_gaussian_sigma_steps`) and ``"004"`` (004 Proc. 3,
#: :func:`discrete_gaussian_sigma_steps`, kept for the reproduction of 004).
#: "tight" is a historical name, kept because it is a public parameter value and
#: function names use it: the calibration is not tight (its sigma is 1.17-1.30x the
#: analytic Gaussian mechanism's at delta 1e-5, 1.35-2.3x at 1e-2;
#: docs/design/gaussian_objective.md, "How far from the Gaussian mechanism").
GAUSSIAN_OBJECTIVE_CALIBRATIONS = ("tight", "004")


def glm_jacobian_epsilon(n_samples: int, regularization: float, curvature: float,
                         data_norm: float) -> float:
    """``log(1 + c R^2 / (n (alpha + Delta)))``: the Jacobian term of objective perturbation for a GLM.

    The noise ``b`` that makes ``w`` the minimiser is ``b_D(w) = -(sum_j l'_j y_j x_j
    + n (alpha + Delta) w)``, with Jacobian ``-(H + l''_i x_i x_i^T)``, ``H`` the part
    shared by neighbours (the other rows and the regulariser, ``H >= n (alpha + Delta) I``).
    By the matrix determinant lemma ``det(H + a x x^T) = det(H) (1 + a x^T H^-1 x)`` with
    ``0 <= a x^T H^-1 x <= c R^2 / (n (alpha + Delta))``, so the ratio of the two
    neighbours' Jacobians lies within ``exp(+-)`` of this value: one factor, not 003
    Thm 2's square (docs/design/gaussian_objective.md, step 2).
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    regularization = check_positive(regularization, "regularization")
    return math.log1p(curvature * data_norm**2 / (n_samples * regularization))


def glm_objective_slack(epsilon: float, n_samples: int, alpha: float, curvature: float,
                        data_norm: float) -> ObjectiveSlack:
    """Split epsilon between the Jacobian term (:func:`glm_jacobian_epsilon`) and the noise.

    Used by pure objective perturbation (003 Alg. 2 with the one-factor Jacobian bound)
    and by the Gaussian one: the Jacobian argument does not depend on the noise law.
    003 Alg. 2's rule with the single Jacobian factor: ``Delta = 0`` and
    ``eps~ = eps - log(1 + c R^2 / (n alpha))`` when that leaves the noise at least
    half of ``eps``; otherwise ``Delta = c R^2 / (n (e^(eps/2) - 1)) - alpha`` makes the
    Jacobian term exactly ``eps / 2`` and the noise gets the other half.
    """
    alpha = check_positive(alpha, "alpha")
    jacobian = glm_jacobian_epsilon(n_samples, alpha, curvature, data_norm)
    if epsilon - jacobian >= epsilon / 2.0:
        return ObjectiveSlack(epsilon_noise=epsilon - jacobian, extra_regularization=0.0)
    # the margin keeps the Jacobian term at most eps / 2 after floating-point rounding
    extra = (curvature * data_norm**2 * (1 + SENSITIVITY_ROUNDING_MARGIN)
             / (n_samples * math.expm1(epsilon / 2.0)) - alpha)
    return ObjectiveSlack(epsilon_noise=epsilon / 2.0, extra_regularization=max(extra, 0.0))


def _log_normal_tail(x: float) -> float:
    """``log P(N(0, 1) > x)``, accurate far in the tail."""
    return float(log_ndtr(-x))


def tight_gaussian_objective_delta(sigma: float, span_steps: float, dimension: int,
                                   epsilon_tilde: float, norm_delta: float,
                                   tail_factor: float = 4.0) -> float:
    """The delta that float-safe Gaussian objective perturbation spends for ``eps~``.

    An upper bound, not the exact profile ("tight" in the name is historical).

    Setting (docs/design/gaussian_objective.md): noise ``z`` with independent
    ``N_Z(0, sigma^2)`` coordinates (grid steps). For a GLM the neighbours' noises that
    give the same minimiser differ, in steps, by ``V + e``: ``V`` in the span of the two
    differing rows ``x, x'`` with ``|<z, V>| <= (s/2)(|<z, u>| + |<z, u'>|)``
    (``u, u'`` their unit vectors, ``s = 2 L R / h``, ``span_steps``) and the rounding
    ``e`` with ``||e||_inf <= 1``. On the event ``||z|| <= q sigma`` (probability
    ``>= 1 - norm_delta``, :func:`subgaussian_norm_quantile`) the noise's privacy loss is
    at most ``mu M + kappa`` with ``mu = s / sigma``, ``M = max(|<z,u>|, |<z,u'>|) / sigma``,
    ``kappa = q sqrt(d) / sigma + (s + sqrt(d))^2 / (2 sigma^2)``; ``P(M > t) <= 4 e^(-t^2/2)``
    (each projection is ``sigma``-subgaussian: Canonne, Kamath & Steinke 2020, Cor. 9).
    The hockey-stick divergence is then at most

        ``norm_delta + int_0^inf e^-y min(1, 4 exp(-((eps~ - kappa + y) / mu)^2 / 2)) dy``

    (``E[(1 - e^(eps~ - loss))_+] = int_0^inf e^-y P(loss - eps~ > y) dy``), computed in
    closed form with the normal tail. This is the 1-D Gaussian-mechanism profile argument
    of Redberg, Koskela & Wang (2023) carried to replace-one neighbours and to the grid.

    ``tail_factor`` is the ``4`` of ``P(M > t) <= 4 e^(-t^2/2)`` (two directions, two
    tails each). Multinomial logistic regression of ``K`` classes bounds ``M`` by the
    largest of ``K (K - 1)`` such pairs (one per pair of classes and row,
    docs/design/gaussian_multinomial.md), ``tail_factor = 2 K (K - 1)``; the closed form
    is the same with ``4`` replaced (``K = 2`` gives 4).
    """
    check_positive(sigma, "sigma")
    root_d = math.sqrt(dimension)
    q = subgaussian_norm_quantile(dimension, norm_delta)
    mu = span_steps / sigma
    kappa = q * root_d / sigma + (span_steps + root_d) ** 2 / (2.0 * sigma**2)
    c = (epsilon_tilde - kappa) / mu
    t_star = math.sqrt(2.0 * math.log(tail_factor))  # where tail_factor e^(-t^2/2) = 1
    y_star = max(0.0, mu * (t_star - c))
    u_star = max(c, t_star)
    # tail_factor mu e^(mu c + mu^2/2) sqrt(2 pi) P(N > u* + mu), in logs
    log_tail = (math.log(tail_factor * mu * math.sqrt(2.0 * math.pi)) + mu * c + mu * mu / 2.0
                + _log_normal_tail(u_star + mu))
    return norm_delta + (-math.expm1(-y_star)) + math.exp(log_tail)


def tight_gaussian_objective_calibration(span_steps: float, dimension: int, epsilon_tilde: float,
                                         delta: float, tail_factor: float = 4.0) -> tuple[float, float]:
    """``(sigma, norm_delta)``: the smallest std (grid steps) whose bound meets ``delta``, and its split.

    For each split of ``delta`` between the norm event (``norm_delta``) and the
    profile integral, :func:`tight_gaussian_objective_delta` is decreasing in
    ``sigma`` and is solved by bisection (``brentq``); the split that gives the
    smallest ``sigma`` is found by a bounded search over ``log(norm_delta / delta)``.
    Any split gives a valid guarantee, so the search only affects the noise.
    ``tail_factor``: as in :func:`tight_gaussian_objective_delta` (4 for a GLM).
    """
    if delta == 0:
        raise ValueError("delta must be > 0 for Gaussian objective perturbation.")
    span_steps = check_positive(span_steps, "span_steps")

    def sigma_for(log_fraction: float) -> float:
        norm_delta = delta * math.exp(log_fraction)

        def excess(log_sigma: float) -> float:
            return tight_gaussian_objective_delta(math.exp(log_sigma), span_steps, dimension,
                                                  epsilon_tilde, norm_delta, tail_factor) - delta

        low = math.log(span_steps * 1e-3)
        high = math.log(span_steps * 1e3 / epsilon_tilde + dimension)
        while excess(low) <= 0:  # a very large eps~ allows a very small sigma
            low -= 2.0
        while excess(high) > 0:
            high += 2.0
        # the root is multiplied by (1 + 1e-9) below, so that the bound holds at the returned sigma
        root = brentq(excess, low, high, xtol=1e-13, rtol=1e-13)
        return math.exp(root) * (1 + 1e-9)

    best = minimize_scalar(sigma_for, bounds=(math.log(1e-6), math.log(0.999)), method="bounded",
                           options={"xatol": 1e-4})
    candidates = [best.x, math.log(0.5), math.log(0.01)]
    sigma, log_fraction = min((sigma_for(x), x) for x in candidates)
    return sigma, delta * math.exp(log_fraction)


def tight_discrete_gaussian_sigma_steps(span_steps: float, dimension: int, epsilon_tilde: float,
                                        delta: float) -> float:
    """Std (grid steps) of float-safe Gaussian objective perturbation's noise, default calibration
    (historically named ``"tight"``; an upper bound, not tight).

    ``span_steps`` is ``2 L R / h``; see :func:`tight_gaussian_objective_calibration`.
    """
    return tight_gaussian_objective_calibration(span_steps, dimension, epsilon_tilde, delta)[0]


# -- multiparty (004) ------------------------------------------------------------------
def gradient_sum_sensitivity(lipschitz: float, data_norm: float) -> float:
    """L2 sensitivity ``2 L R`` of a party's summed gradient ``grad G_k(w)`` (004 eq. 8).

    004 Prop. 3.1 proves ``2 L`` for rows in the unit ball: replacing one
    record changes one term ``phi'(y w.x) y x``, of norm at most ``L R``, on
    each side. With data norm ``R`` it is ``2 L R`` (paper note 2; paper note 13).
    """
    lipschitz = check_positive(lipschitz, "lipschitz")
    data_norm = check_positive(data_norm, "data_norm")
    return 2.0 * lipschitz * data_norm


def local_aggregation_sensitivity(
    n_samples_by_party, alpha: float, lipschitz: float, data_norm: float, solution_radius: float
) -> float:
    """L2 sensitivity ``(2 L R / (n_min lambda) + 2 r) / K`` of the averaged classifier (004 eq. 5).

    Replacing one record changes one party's local minimiser ``w_k`` by at
    most ``2 L R / (N_k lambda)`` (003 Cor. 1, paper note 2), at most
    ``2 L R / (n_min lambda)`` whichever party holds it, and the average
    ``(1/K) sum_k w_k`` by ``1/K`` of that (paper note 12: Pathak et al. 2010). A
    certified solve within radius ``r`` of each exact minimiser adds ``2 r``
    before averaging (:func:`~dperm.privacy.sensitivity.output_perturbation_sensitivity`).
    """
    sizes = [check_positive_int(n, "party size") for n in n_samples_by_party]
    if len(sizes) < 2:
        raise ValueError(f"local aggregation needs at least 2 parties; got {len(sizes)}.")
    per_party = output_perturbation_sensitivity(min(sizes), alpha, lipschitz, data_norm, solution_radius)
    return per_party / len(sizes)

# --- The same bounds in Nie & Wang's parameters (000, 002) ---------------------------
# Conventions (paper note 7): 003/004 regularise with Lambda/2 ||f||^2 and dperm's alpha is that
# Lambda; 000/002 regularise with lambda Omega(f), Omega gamma-strongly convex (gamma = 2 for
# ||f||_K^2), so lambda gamma = Lambda and lambda = alpha / 2. m (000/002) and n (003) both
# count records; kappa = sup sqrt(K(x, x)) is R for a linear model. These functions use the
# papers' names (lam, gamma, kappa, C_L, m) and call the alpha-convention bounds above.

#: ``gamma`` of ``Omega(f) = ||f||_K^2``: ``Omega(t f + (1 - t) g) = t Omega(f)
#: + (1 - t) Omega(g) - t (1 - t) ||f - g||^2``, i.e. 2-strongly convex in
#: 000's definition (000 Sec. 5.1).
SQUARED_NORM_GAMMA = 2.0



def lambda_from_alpha(alpha: float) -> float:
    """Nie & Wang's ``lambda`` for dperm's ``alpha``: ``lambda = alpha / 2`` (paper note 7).

    ``alpha/2 ||w||^2 = lambda ||w||^2`` with ``Omega = ||.||^2`` (``gamma = 2``).
    """
    return check_positive(alpha, "alpha") / SQUARED_NORM_GAMMA


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
    Corollary 1 with paper note 2, ``2 L R / (n Lambda)``
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


