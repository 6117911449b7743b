"""Privacy arithmetic of sufficient-statistics linear regression (AdaSSP), as pure functions.

AdaSSP (Wang 2018, "Revisiting differentially private linear regression: optimal and
adaptive prediction & estimation in unbounded domain", UAI, Alg. 2) releases three
statistics of rows ``z_i`` (``||z_i|| <= R``) and targets ``y_i`` (``|y_i| <= B``):

1. the Gram matrix ``G = sum_i z_i z_i^T`` (symmetric noise: one draw per entry of its
   upper triangle),
2. the moment vector ``m = sum_i y_i z_i``,
3. the smallest eigenvalue ``lambda_min(G)``,

each with a share of the budget (Wang 2018, Alg. 2, lines 1-4, uses equal thirds; see Budget
below), and returns
``(G~ + lambda I)^-1 m~`` with ``lambda = max(0, t - lambda~_min)`` (Alg. 2, line 5-6;
post-processing). dperm's neighbours *replace* one record (the paper's add/remove
sensitivities ``R^2``, ``R B`` change as derived below).

Sensitivities (replace one ``(z, y)`` by ``(z', y')``; :func:`gram_l2_sensitivity` ...):

- **Gram, L2.** ``G - G' = z z^T - z' z'^T =: M``. The half-vectorisation
  :func:`symmetric_to_vector` (diagonal, then ``sqrt(2)`` times each entry above it) is
  an isometry for the Frobenius norm, and ``||M||_F^2 = ||z||^4 + ||z'||^4 -
  2 (z.z')^2 <= 2 R^4``: sensitivity ``sqrt(2) R^2`` (attained by orthogonal rows of
  norm ``R``).
- **Gram, L1 of the plain upper triangle.** ``sum_{i<=j} |M_ij| <= sqrt(D) ||upper(M)||_2``
  with ``D = d (d + 1) / 2`` entries and ``||upper(M)||_2^2 = (||M||_F^2 + sum_i M_ii^2) / 2
  <= (2 R^4 + 2 R^4) / 2`` (``sum_i (a_i - b_i)^2 <= sum a_i^2 + b_i^2`` for
  ``a_i, b_i >= 0``), so ``sqrt(2 D) R^2 = sqrt(d (d + 1)) R^2``
  (the tests' reference ``gram_l1_sensitivity``; the direct bound ``sum |z_i z_j| + |z'_i z'_j| <= (d + 1) R^2``
  is never smaller). dperm's pure form does not add independent Laplace noise at this L1
  bound directly: :func:`dperm.mechanisms.noise.vector_laplace_calibration` compares it
  (in its grid form) with the lattice L2 Laplace vector at the L2 bound and draws the one
  with the smaller noise.
- **Moment.** ``||y z - y' z'||_2 <= 2 R B`` (L1: ``2 sqrt(d) R B``).
- **Smallest eigenvalue.** ``G' = G - z z^T + z' z'^T``, so by Weyl's inequality
  ``lambda_min(G) - ||z||^2 <= lambda_min(G') <= lambda_min(G) + ||z'||^2``:
  sensitivity ``R^2`` (:func:`min_eigenvalue_sensitivity`).

Budget. Pure form: the shares :data:`PURE_SHARES` of ``epsilon`` (49 / 49 / 2 per cent for
the Gram matrix, the moment vector and ``lambda_min``), basic composition (Dwork & Roth 2014,
Thm 3.16: the releases' epsilons add up; Wang 2018, Alg. 2 splits ``(epsilon, delta)`` in three
equal parts, but any split whose parts add up to at most ``epsilon`` gives the same guarantee).
Each part is rounded *down* to a float, so the three floats, as exact rationals, add up to at
most ``epsilon`` (:func:`pure_release_epsilons`). Why 2 per cent for the eigenvalue: it only
ever *lowers* the ridge below ``t`` (``lambda = max(0, t - lambda~)``), and on the tables
measured its lower bound is far below ``t`` (the uncentred mean direction and rare one-hot
levels make ``lambda_min(G)`` small), so a third of the budget bought almost nothing while the
Gram matrix's noise sets ``t``; the shares were fitted on issue 30's FITTING regression tables
only (``benchmarks/_tables.py``; docs/regression.md has the numbers). Gaussian form: the discrete Gaussian
with L2 sensitivity ``k`` (grid steps) and std ``sigma`` is ``k^2 / (2 sigma^2)``-zCDP
(Canonne, Kamath & Steinke 2020, Thm 4, per coordinate; coordinates compose additively,
Bun & Steinke 2016, Lemma 2.3), the three releases get a third of the total ``rho`` each
(zCDP composes exactly), and ``rho`` is the largest whose conversion
(:func:`zcdp_delta`, CKS 2020 Sec. 2.3, Cor. 13) meets ``(epsilon, delta)``. This is the
paper's three-way split in the currency where composition is exact, and its sigma is
below the classical ``sqrt(2 log(1.25 / (delta/3))) / (epsilon/3)`` the paper uses.

This module imports NumPy, the standard library and :mod:`dperm.validation` only.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from dperm.validation import check_delta, check_epsilon, check_positive, check_positive_int

#: The three releases of AdaSSP, in the order the budget is split (Wang 2018, Alg. 2).
RELEASES = ("gram", "moment", "min_eigenvalue")
#: Wang 2018's failure probability ``rho`` of the eigenvalue bound and of the noise-norm bound
#: in the rule for ``lambda`` (Alg. 2, line 5; the paper's experiments use 0.05). Only the
#: accuracy depends on it: ``lambda`` is post-processing of released values.
FAILURE_PROBABILITY = 0.05
#: The pure form's split of ``epsilon`` over :data:`RELEASES` (exact fractions adding up to 1):
#: fitted on issue 30's FITTING regression tables (module docstring). The Gaussian form keeps
#: Wang 2018's equal split of ``rho``.
PURE_SHARES = (Fraction(49, 100), Fraction(49, 100), Fraction(2, 100))
#: Relative margin by which a computed ``rho`` is shrunk so float rounding cannot exceed delta.
_RHO_SAFETY_MARGIN = 1e-9


# ---------------------------------------------------------------------------
# Sensitivities (replace-one neighbours)
# ---------------------------------------------------------------------------
def gram_l2_sensitivity(data_norm: float) -> float:
    """``sqrt(2) R^2``: L2 sensitivity of :func:`symmetric_to_vector` of ``sum_i z_i z_i^T``.

    ``||z z^T - z' z'^T||_F^2 = ||z||^4 + ||z'||^4 - 2 (z.z')^2 <= 2 R^4`` and the
    half-vectorisation is a Frobenius isometry (module docstring).
    """
    data_norm = check_positive(data_norm, "data_norm")
    return math.sqrt(2.0) * data_norm**2


def moment_l2_sensitivity(data_norm: float, target_bound: float) -> float:
    """``2 R B``: L2 sensitivity of ``sum_i y_i z_i`` (``||y z - y' z'|| <= |y| ||z|| + |y'| ||z'||``)."""
    return 2.0 * check_positive(data_norm, "data_norm") * check_positive(target_bound, "target_bound")


def min_eigenvalue_sensitivity(data_norm: float) -> float:
    """``R^2``: sensitivity of ``lambda_min(sum_i z_i z_i^T)`` under replacement (Weyl's inequality)."""
    return check_positive(data_norm, "data_norm") ** 2


#: Unit roundoff of float64, ``u = 2^-53``.
_UNIT_ROUNDOFF = 2.0**-53
#: ``p(d) = _EIGENVALUE_ERROR_FACTOR d^2`` in LAPACK's bound ``|lambda^ - lambda| <= p(d) u ||A||_2`` on
#: the computed eigenvalues of a symmetric matrix (LAPACK Users' Guide, 3rd ed., Sec. 4.7: ``p`` a
#: "modestly growing function" of ``d``); taken generously, it costs a relative ``1e-9`` or less.
_EIGENVALUE_ERROR_FACTOR = 100.0
#: Rows an estimator clipped may exceed the bound by this relative rounding (the mechanism's check).
ROW_NORM_ROUNDING = 1e-12


def _gamma(n_terms: int) -> float:
    """``gamma_n = n u / (1 - n u)`` (Higham 2002, Lemma 3.1)."""
    nu = n_terms * _UNIT_ROUNDOFF
    if nu >= 0.5:
        raise ValueError(f"n_samples={n_terms!r} is too large for a float64 sum with a rounding bound.")
    return nu / (1.0 - nu)


def float_allowances(n_samples: int, dimension: int, data_norm: float,
                     target_bound: float) -> tuple[float, float, float]:
    """Additive allowances for floating point in the three sensitivities: ``(gram, moment, eigenvalue)``.

    The sensitivities above are for exact sums; the mechanism computes ``X^T X``, ``X^T y`` and
    ``lambda_min`` in float64. A computed inner product of ``n`` terms is within
    ``gamma_n sum |x_i y_i| <= gamma_n n R^2`` of the exact one (Higham 2002, eq. 3.5; any
    summation order), so each neighbour's computed statistic is within that of its exact value
    and their difference within the exact sensitivity plus twice it: ``2 gamma_n n R^2`` per
    Gram entry (L2 over the ``D`` numbers of the half-vectorisation, ``sqrt(2)`` for the
    off-diagonal ones: ``2 sqrt(2 D) gamma_n n R^2``), ``2 sqrt(d) gamma_n n R B`` for the moment.
    ``lambda_min`` of the computed Gram matrix moves by at most its spectral error (Weyl;
    ``<= d gamma_n n R^2``) plus the eigensolver's ``p(d) u ||G||_2 <= p(d) u n R^2``, on each side.
    Rows up to :data:`ROW_NORM_ROUNDING` longer than ``R`` are covered by evaluating everything at
    ``R (1 + ROW_NORM_ROUNDING)``. Every allowance is far below the grids' own rounding.
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    dimension = check_positive_int(dimension, "dimension")
    R = check_positive(data_norm, "data_norm") * (1 + ROW_NORM_ROUNDING)
    B = check_positive(target_bound, "target_bound")
    gamma = _gamma(n_samples)
    size = gram_vector_length(dimension)
    gram = 2.0 * math.sqrt(2.0 * size) * gamma * n_samples * R * R
    moment = 2.0 * math.sqrt(dimension) * gamma * n_samples * R * B
    eigen = 2.0 * (dimension * gamma + _EIGENVALUE_ERROR_FACTOR * dimension**2 * _UNIT_ROUNDOFF) \
        * n_samples * R * R
    return gram, moment, eigen


def computed_sensitivities(n_samples: int, dimension: int, data_norm: float,
                           target_bound: float) -> tuple[float, float, float]:
    """The L2 sensitivities the mechanism calibrates to: exact bound (rows at ``R (1 + ROW_NORM_ROUNDING)``)
    plus :func:`float_allowances`, for ``(gram, moment, min_eigenvalue)``."""
    R = check_positive(data_norm, "data_norm") * (1 + ROW_NORM_ROUNDING)
    exact = (gram_l2_sensitivity(R), moment_l2_sensitivity(R, target_bound),
             min_eigenvalue_sensitivity(R))
    return tuple(e + a for e, a in zip(exact, float_allowances(n_samples, dimension, data_norm,
                                                                target_bound)))


def symmetric_to_vector(matrix) -> np.ndarray:
    """The Frobenius-isometric half-vectorisation: the diagonal, then ``sqrt(2) M_ij`` for ``i < j``."""
    matrix = np.asarray(matrix, dtype=np.float64)
    rows, columns = np.triu_indices(matrix.shape[0], k=1)
    return np.concatenate([np.diag(matrix), math.sqrt(2.0) * matrix[rows, columns]])


def vector_to_symmetric(vector, dimension: int) -> np.ndarray:
    """The inverse of :func:`symmetric_to_vector`: a symmetric ``dimension x dimension`` matrix."""
    vector = np.asarray(vector, dtype=np.float64)
    matrix = np.diag(vector[:dimension])
    rows, columns = np.triu_indices(dimension, k=1)
    off = vector[dimension:] / math.sqrt(2.0)
    matrix[rows, columns] = off
    matrix[columns, rows] = off
    return matrix


def gram_vector_length(dimension: int) -> int:
    """``D = d (d + 1) / 2``: how many numbers the Gram release noises."""
    return dimension * (dimension + 1) // 2


# ---------------------------------------------------------------------------
# Budget
# ---------------------------------------------------------------------------
def zcdp_delta(rho: float, epsilon: float) -> float:
    """The ``delta`` at which ``rho``-zCDP implies ``(epsilon, delta)``-DP (CKS 2020, Sec. 2.3, Cor. 13).

    ``delta = inf_{a > 1} exp((a - 1)(a rho - epsilon)) / (a - 1) * (1 - 1/a)^a``. Every
    ``a > 1`` gives a valid bound; the exponent is convex in ``a`` and its stationary point
    (``(2a - 1) rho - epsilon + log(1 - 1/a) = 0``) is found by bisection.
    """
    if rho <= 0:
        return 0.0
    epsilon = float(epsilon)

    def log_delta(a: float) -> float:
        return (a - 1.0) * (a * rho - epsilon) + a * math.log1p(-1.0 / a) - math.log(a - 1.0)

    low, high = 1.0 + 1e-9, max((epsilon + 1.0) / (2.0 * rho), 2.0) + 2.0
    for _ in range(80):
        middle = 0.5 * (low + high)
        if (2.0 * middle - 1.0) * rho - epsilon + math.log1p(-1.0 / middle) < 0:
            low = middle
        else:
            high = middle
    return min(1.0, math.exp(min(log_delta(0.5 * (low + high)), 0.0)))


@functools.lru_cache(maxsize=256)
def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ``rho`` whose ``rho``-zCDP implies ``(epsilon, delta)``-DP by :func:`zcdp_delta`.

    Bisection on ``rho`` (``zcdp_delta`` increases with ``rho``), then shrunk by
    :data:`_RHO_SAFETY_MARGIN`; the returned ``rho`` satisfies ``zcdp_delta(rho, epsilon) <= delta``
    (checked).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian form (zCDP gives (epsilon, delta)-DP "
                         "only for delta > 0); use the pure form with delta=0.")
    low, high = 0.0, epsilon + 1.0
    for _ in range(80):
        middle = 0.5 * (low + high)
        if zcdp_delta(middle, epsilon) <= delta:
            low = middle
        else:
            high = middle
    rho = low * (1.0 - _RHO_SAFETY_MARGIN)
    if not (rho > 0 and zcdp_delta(rho, epsilon) <= delta):  # pragma: no cover - bisection invariant
        raise ArithmeticError(f"no rho > 0 found for epsilon={epsilon!r}, delta={delta!r}.")
    return rho


def _float_at_most(value: Fraction) -> float:
    """The largest float ``<= value`` (a float's exact rational never exceeds ``value``)."""
    result = float(value)
    return math.nextafter(result, -math.inf) if Fraction(result) > value else result


def pure_release_epsilons(epsilon: float) -> tuple[float, float, float]:
    """The pure form's ``(epsilon_gram, epsilon_moment, epsilon_min_eigenvalue)``: :data:`PURE_SHARES` of ``epsilon``.

    Each part is the largest float at most its exact share ``epsilon * share``, so the three
    add up (as exact rationals) to at most ``epsilon``: basic composition then gives
    ``epsilon``-DP whatever the rounding.
    """
    epsilon = Fraction(check_epsilon(epsilon))
    return tuple(_float_at_most(epsilon * share) for share in PURE_SHARES)


def release_budgets(epsilon: float, delta: float, gaussian: bool) -> tuple[float, float]:
    """``(epsilon_each, rho_each)``: each release's budget under Wang 2018, Alg. 2's equal split.

    Pure form: ``(epsilon / 3, 0)`` (the mechanism now uses :func:`pure_release_epsilons`
    instead). Gaussian form: ``(0, rho / 3)`` with ``rho =`` :func:`zcdp_rho` ``(epsilon, delta)``.
    """
    epsilon = check_epsilon(epsilon)
    share = len(RELEASES)
    if not gaussian:
        return epsilon / share, 0.0
    return 0.0, zcdp_rho(epsilon, delta) / share


def discrete_gaussian_sigma_steps(sensitivity_steps: float, rho: float) -> float:
    """``sigma = k / sqrt(2 rho)``: the std (grid steps) giving ``rho``-zCDP at L2 sensitivity ``k`` steps.

    CKS 2020, Thm 4: the discrete Gaussian shifted by an integer vector ``v`` has Renyi
    divergence at most ``a ||v||^2 / (2 sigma^2)`` of every order ``a``.
    """
    check_positive(rho, "rho")
    return float(sensitivity_steps) / math.sqrt(2.0 * rho)


# ---------------------------------------------------------------------------
# The adaptive regularisation (post-processing; Wang 2018, Alg. 2, lines 3 and 5)
# ---------------------------------------------------------------------------
def ridge_target(gram_noise_std: float, dimension: int,
                 failure_probability: float = FAILURE_PROBABILITY) -> float:
    """``t = s sqrt(d log(2 d^2 / rho))``: Wang 2018, Alg. 2, line 5's bound on the Gram noise's norm.

    ``s`` is the per-entry standard deviation of the noise on the Gram matrix's diagonal
    (the paper's ``sqrt(log(6/delta)) / (epsilon/3) ||X||^2``).
    """
    dimension = check_positive_int(dimension, "dimension")
    return gram_noise_std * math.sqrt(dimension * math.log(2.0 * dimension**2 / failure_probability))


#: The pure default's switch to the intercept-only model (:func:`slopes_swamped`): Wang's ridge
#: target at or above this fraction of ``n R^2``. Fitted on issue 30's FITTING regression
#: tables only (``benchmarks/regression_candidates.py``): every value in (0.33, 0.68) makes
#: the same choices there, 0.5 is inside that range; docs/regression.md has the numbers.
INTERCEPT_ONLY_RIDGE_FRACTION = 0.5


def slopes_swamped(ridge_target: float, n_samples: int, data_norm: float,
                   fraction: float = INTERCEPT_ONLY_RIDGE_FRACTION) -> bool:
    """Whether Wang's ridge target ``t`` is at least ``fraction`` of ``n R^2``: public inputs only.

    ``n R^2`` bounds the trace of the Gram matrix ``sum_i z_i z_i^T`` (``||z_i|| <= R``), so
    it bounds the sum of all its eigenvalues; a ridge of half that shrinks every direction
    of the slopes by at least a factor of about two and the noise decides the rest. There
    the pure default fits the intercept's column alone (the private mean of the targets),
    which is never worse than a constant by more than its own noise. A function of public
    ``n``, ``d`` (through ``t``), ``R`` and epsilon only, so choosing by it spends nothing.
    """
    check_positive(ridge_target, "ridge_target")
    n_samples = check_positive_int(n_samples, "n_samples")
    return ridge_target >= fraction * n_samples * check_positive(data_norm, "data_norm") ** 2


def adaptive_ridge(target: float, min_eigenvalue_lower: float) -> float:
    """``lambda = max(0, t - lambda~_min)`` (Wang 2018, Alg. 2, line 5): a function of released values."""
    return max(0.0, float(target) - max(0.0, float(min_eigenvalue_lower)))


__all__ = [
    "FAILURE_PROBABILITY", "INTERCEPT_ONLY_RIDGE_FRACTION", "RELEASES", "adaptive_ridge",
    "computed_sensitivities",
    "float_allowances",
    "discrete_gaussian_sigma_steps",
    "gram_l2_sensitivity", "gram_vector_length", "min_eigenvalue_sensitivity",
    "moment_l2_sensitivity", "PURE_SHARES", "pure_release_epsilons",
    "release_budgets", "ridge_target", "slopes_swamped",
    "symmetric_to_vector", "vector_to_symmetric", "zcdp_delta", "zcdp_rho",
]
