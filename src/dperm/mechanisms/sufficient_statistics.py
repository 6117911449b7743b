"""Sufficient-statistics perturbation with adaptive ridge: AdaSSP (Wang 2018, Alg. 2), float-safe.

Least squares only. The mechanism releases, on power-of-two grids with exact integer noise
(:mod:`dperm.mechanisms.noise`):

1. the Gram matrix ``G = sum_i z_i z_i^T`` of the rows (its Frobenius-isometric
   half-vectorisation, so the noise on ``G`` is symmetric),
2. the moment vector ``m = sum_i y_i z_i``,
3. ``lambda_min(G)``,

each with a share of the budget (Wang 2018, Alg. 2, lines 1-4; sensitivities and the
budget split in :mod:`dperm.privacy.sufficient_statistics`), and then computes, from
the released values only, ``lambda~ = max(0, lambda_min~ - q)`` (``q`` the eigenvalue
noise's upper ``1 - rho`` quantile: a lower bound with probability ``1 - rho``),
``lambda = max(0, t - lambda~)`` with ``t`` the paper's bound on the Gram noise's norm,
and ``w = (G~ + lambda P)^-1 m~`` (Alg. 2, lines 5-6). ``P`` is the identity, except that
with ``intercept=c`` the last coordinate (the constant column ``c``) is not penalised: the
intercept is not shrunk toward zero; the Gram matrix's corner ``n c^2`` is public and
replaces its noised value. Everything after the three releases is
post-processing, so the guarantee is the composition of the three:

- ``"adassp"``: pure ``epsilon``-DP, discrete Laplace-type noise (per coordinate at the L1
  bound, or the lattice L2 Laplace vector at the L2 bound, whichever is smaller:
  :func:`~dperm.mechanisms.noise.vector_laplace_calibration`), 49 / 49 / 2 per cent of ``epsilon``
  (:func:`~dperm.privacy.sufficient_statistics.pure_release_epsilons`);
- ``"gaussian_adassp"``: ``(epsilon, delta)``-DP, exact discrete Gaussian noise, ``rho / 3``
  each with ``rho`` the zCDP budget that converts to ``(epsilon, delta)``.

Post-processing the paper does not state: the noised Gram matrix is projected onto the
positive semidefinite cone (:func:`nearest_psd`; never farther from the true ``G``) before the
ridge is added; eigenvalues of
``G~ + lambda P`` below the Gram noise's per-entry standard deviation are raised to it
before the inverse (the paper's rule makes the matrix positive definite only with
probability ``1 - rho``), and the row norms and targets are clipped to their public bounds
again inside the mechanism (a per-record map; a no-op for an estimator's input).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.noise import (
    grid_step,
    grid_vector,
    release_on_grid,
    sample_discrete_gaussian_vector,
    to_grid,
    vector_laplace_calibration,
)
from dperm.privacy.sensitivity import SENSITIVITY_ROUNDING_MARGIN, grid_l2_sensitivity
from dperm.privacy.sufficient_statistics import (
    FAILURE_PROBABILITY,
    ROW_NORM_ROUNDING,
    adaptive_ridge,
    computed_sensitivities,
    discrete_gaussian_sigma_steps,
    gram_vector_length,
    pure_release_epsilons,
    release_budgets,
    ridge_target,
    symmetric_to_vector,
    vector_to_symmetric,
)
from dperm.validation import clip_rows_to_norm

#: The discrete Gaussian's ``sigma^2`` (grid steps squared) is a multiple of one over this.
_SIGMA_SQUARED_DENOMINATOR = 1024


@dataclass(frozen=True)
class StatisticRelease:
    """How one of AdaSSP's three statistics is released: public quantities only.

    Attributes
    ----------
    name : {"gram", "moment", "min_eigenvalue"}
    dimension : int
        How many numbers are noised (``d (d + 1) / 2`` for the Gram matrix).
    sensitivity : float
        L2 sensitivity in the statistic's units (:mod:`dperm.privacy.sufficient_statistics`).
    grid : float
        The power-of-two grid the values are rounded to.
    noise_distribution : str
        ``"discrete-laplace"``, ``"discrete-l2-laplace"`` or ``"discrete-gaussian"``.
    noise_scale : float
        Laplace-type: the law's scale ``g k / epsilon``; Gaussian: its ``g sigma``.
    entry_std : float
        A bound on the noise's standard deviation per number (for the diagonal, for the Gram).
    upper_quantile : float
        A bound ``q`` with ``P(noise > q) <= rho`` for one coordinate
        (:data:`~dperm.privacy.sufficient_statistics.FAILURE_PROBABILITY`).
    epsilon, rho : float
        The share of the budget: :func:`~dperm.privacy.sufficient_statistics.pure_release_epsilons`
        (pure) or ``rho / 3`` zCDP (Gaussian), the other 0.
    """

    name: str
    dimension: int
    sensitivity: float
    grid: float
    noise_distribution: str
    noise_scale: float
    entry_std: float
    upper_quantile: float
    epsilon: float
    rho: float
    _noise: object = field(repr=False, compare=False, default=None)

    def release(self, values, rng) -> np.ndarray:
        """``g (round(values / g) + z)`` with the exact integer noise ``z`` of this calibration."""
        values = np.asarray(values, dtype=np.float64)
        if self.noise_distribution == "discrete-gaussian":
            centres = to_grid(values.ravel(), self.grid)
            noise = sample_discrete_gaussian_vector(len(centres), self._noise, rng)
            return grid_vector([c + z for c, z in zip(centres, noise)], self.grid).reshape(values.shape)
        return release_on_grid(values, self._noise, rng)


def _laplace_release(name, sensitivity, dimension, epsilon, value_bound) -> StatisticRelease:
    noise = vector_laplace_calibration(sensitivity, dimension, epsilon, value_bound=value_bound)
    if noise.norm == "l1":
        # discrete Laplace of scale t steps: variance <= 2 t^2, P(Z >= k) <= exp(-k / t)
        entry_std = math.sqrt(2.0) * noise.noise_scale
        quantile = noise.noise_scale * math.log(1.0 / FAILURE_PROBABILITY)
    else:
        entry_std = noise.rms_noise_norm(dimension) / math.sqrt(dimension)
        quantile = entry_std * math.sqrt(1.0 / FAILURE_PROBABILITY)  # Chebyshev on one coordinate
    return StatisticRelease(name, dimension, sensitivity, noise.step, noise.noise_distribution,
                            noise.noise_scale, entry_std, quantile, epsilon, 0.0, noise)


def _gaussian_release(name, sensitivity, dimension, rho, value_bound) -> StatisticRelease:
    step = grid_step(sensitivity, dimension, math.sqrt(2.0 * rho), value_bound)
    steps = grid_l2_sensitivity(sensitivity, dimension, step)  # rounding included
    sigma_steps = discrete_gaussian_sigma_steps(steps, rho) * (1 + SENSITIVITY_ROUNDING_MARGIN)
    # sigma^2 rounded *up* to a multiple of 1/1024: the exact sampler's arithmetic stays on
    # small integers (a float's Fraction squared has a 2^104 denominator), the noise only grows
    sigma_squared = Fraction(math.ceil(sigma_steps * sigma_steps * _SIGMA_SQUARED_DENOMINATOR) + 1,
                             _SIGMA_SQUARED_DENOMINATOR)
    sigma = math.sqrt(sigma_squared) * step
    # the discrete Gaussian's variance is at most sigma^2 and it is sigma-subgaussian (CKS 2020, Cor. 9)
    quantile = sigma * math.sqrt(2.0 * math.log(1.0 / FAILURE_PROBABILITY))
    return StatisticRelease(name, dimension, sensitivity, step, "discrete-gaussian", sigma, sigma,
                            quantile, 0.0, rho, sigma_squared)


@dataclass(frozen=True)
class SufficientStatisticsCalibration:
    """Every public number of one AdaSSP run (Wang 2018, Alg. 2), from public inputs only.

    Attributes
    ----------
    epsilon, delta : float
        The guarantee (``delta = 0``: pure).
    rho : float
        The zCDP budget of the Gaussian form (0 for the pure form).
    n_samples, dimension : int
        ``n`` and ``d`` (with the intercept's column).
    data_norm, target_bound : float
        ``R`` (row norm, with the intercept's column) and ``B`` (``|y| <= B``).
    gram, moment, min_eigenvalue : StatisticRelease
    ridge_target : float
        ``t`` of :func:`~dperm.privacy.sufficient_statistics.ridge_target`.
    failure_probability : float
        Wang 2018's ``rho`` in the ridge rule.
    intercept : float or None
        The public value ``c`` of the constant last column (the intercept feature), whose
        coordinate is not penalised and whose Gram corner ``n c^2`` is known exactly; ``None``
        without an intercept.
    """

    epsilon: float
    delta: float
    rho: float
    n_samples: int
    dimension: int
    data_norm: float
    target_bound: float
    gram: StatisticRelease
    moment: StatisticRelease
    min_eigenvalue: StatisticRelease
    ridge_target: float
    failure_probability: float = FAILURE_PROBABILITY
    intercept: float | None = None

    @property
    def releases(self) -> tuple:
        return (self.gram, self.moment, self.min_eigenvalue)


def calibrate_sufficient_statistics(n_samples: int, dimension: int, data_norm: float,
                                    target_bound: float, epsilon: float, delta: float,
                                    gaussian: bool, intercept: float | None = None
                                    ) -> SufficientStatisticsCalibration:
    """The three releases' grids and noise, and the ridge target, for ``(epsilon, delta)``.

    Pure form (``gaussian=False``): :func:`~dperm.privacy.sufficient_statistics.pure_release_epsilons`
    (49 / 49 / 2 per cent) and ``delta`` unused (recorded as 0).
    Gaussian form: ``rho / 3`` each (:func:`~dperm.privacy.sufficient_statistics.release_budgets`).
    Trusts its inputs (the row's :meth:`~dperm.mechanisms.catalog.Mechanism.run` or the
    estimator checked them).
    """
    delta = float(delta) if gaussian else 0.0
    epsilon_each, rho_each = release_budgets(epsilon, delta, gaussian)
    epsilons = (0.0, 0.0, 0.0) if gaussian else pure_release_epsilons(epsilon)
    gram_s, moment_s, eigen_s = computed_sensitivities(n_samples, dimension, data_norm, target_bound)
    specs = (
        ("gram", gram_s, gram_vector_length(dimension), math.sqrt(2.0) * n_samples * data_norm**2),
        ("moment", moment_s, dimension, n_samples * data_norm * target_bound),
        ("min_eigenvalue", eigen_s, 1, n_samples * data_norm**2),
    )
    if gaussian:
        releases = [_gaussian_release(name, s, size, rho_each, bound) for name, s, size, bound in specs]
    else:
        releases = [_laplace_release(name, s, size, share, bound)
                    for (name, s, size, bound), share in zip(specs, epsilons)]
    gram, moment, eigen = releases
    return SufficientStatisticsCalibration(
        epsilon=epsilon, delta=delta, rho=3 * rho_each, n_samples=int(n_samples),
        dimension=int(dimension), data_norm=float(data_norm), target_bound=float(target_bound),
        gram=gram, moment=moment, min_eigenvalue=eigen,
        ridge_target=ridge_target(gram.entry_std, dimension),
        intercept=None if intercept is None else float(intercept))


def calibrate(problem, epsilon: float, delta: float, tol: float = 0.0, *, gaussian: bool = False,
              intercept: float | None = None) -> SufficientStatisticsCalibration:
    """The row's ``calibrate``: :func:`calibrate_sufficient_statistics` for a public ``problem``.

    ``B = problem.loss.y_bound`` (the row declares the squared loss only, so
    :meth:`~dperm.mechanisms.catalog.Mechanism.refusal` has refused every other loss before
    this runs); ``problem.alpha`` is not used (the ridge is chosen adaptively); ``tol`` is
    not used (no iterative solve). ``gaussian`` is the row's option; ``intercept`` the
    caller's (the public value of a constant last column).
    """
    return calibrate_sufficient_statistics(problem.n_samples, problem.n_features, problem.data_norm,
                                           float(problem.loss.y_bound), epsilon, delta, gaussian,
                                           intercept)


@dataclass(frozen=True)
class SufficientStatisticsOutput:
    """What one AdaSSP run releases.

    ``gram`` (half-vectorised), ``moment`` and ``min_eigenvalue`` are the three noised
    releases; ``ridge`` (``lambda``) and ``coef`` are functions of them only. Estimators
    keep ``coef``; the audit reads the releases.
    """

    coef: np.ndarray
    ridge: float
    gram: np.ndarray
    moment: np.ndarray
    min_eigenvalue: float
    calibration: SufficientStatisticsCalibration

    @property
    def epsilon(self) -> float:
        return self.calibration.epsilon

    @property
    def delta(self) -> float:
        return self.calibration.delta


def nearest_psd(matrix) -> np.ndarray:
    """The positive semidefinite matrix nearest to a symmetric ``matrix`` in Frobenius norm.

    ``V max(Lambda, 0) V^T`` for ``matrix = V Lambda V^T`` (Higham 1988, "Computing a nearest
    symmetric positive semidefinite matrix", Thm 2.1, for a symmetric argument). Post-processing.
    """
    values, vectors = np.linalg.eigh(np.asarray(matrix, dtype=np.float64))
    projected = (vectors * np.maximum(values, 0.0)) @ vectors.T
    return (projected + projected.T) / 2.0


def solve_released(calibration: SufficientStatisticsCalibration, gram, moment, min_eigenvalue,
                   intercept: float | None = None, *,
                   public_corner: bool = True) -> tuple[np.ndarray, float]:
    """``((G~ + lambda P)^-1 m~, lambda)`` from the released values (Wang 2018, Alg. 2, lines 5-6).

    Post-processing only. With ``intercept = c`` (the public value of the last, constant
    column) ``P`` leaves that coordinate unpenalised and the Gram matrix's corner
    ``sum_i c^2 = n c^2``, public, replaces its noised value (``public_corner``; with row
    weights the corner is ``c^2 sum_i v_i``, private, and its released value is kept). ``lambda_min(G_full) <=
    lambda_min`` of the Schur complement the slopes see (interlacing of the inverse), so the
    eigenvalue bound stays conservative with the unpenalised intercept.

    The noised Gram matrix is then projected onto the cone of positive semidefinite matrices
    (:func:`nearest_psd`) before the ridge is added: the true ``G`` is in that closed convex
    cone, so the projection is never farther from it in Frobenius norm than the release was
    (projection onto a closed convex set is non-expansive). Measured on issue 30's FITTING
    regression tables (``benchmarks/adassp_split.py``): mean R^2 -0.018 without, -0.008 with.
    """
    d = calibration.dimension
    lower = max(0.0, float(min_eigenvalue) - calibration.min_eigenvalue.upper_quantile)
    ridge = adaptive_ridge(calibration.ridge_target, lower)
    penalty = np.ones(d)
    matrix = vector_to_symmetric(gram, d)
    if intercept is not None:
        penalty[-1] = 0.0
        if public_corner:
            matrix[-1, -1] = calibration.n_samples * float(intercept) ** 2
    matrix = nearest_psd(matrix) + ridge * np.diag(penalty)
    values, vectors = np.linalg.eigh(matrix)
    values = np.maximum(values, calibration.gram.entry_std)  # the safeguard (module docstring)
    coef = vectors @ ((vectors.T @ np.asarray(moment, dtype=np.float64)) / values)
    return coef, ridge




def _rows_within(X, data_norm: float):
    """``X`` with every row of norm above ``data_norm`` scaled onto it (a per-record map).

    One fast pass of squared norms; the overflow-safe clip of :mod:`dperm.validation` runs
    only when some row is longer (an overflowing square is ``inf`` and triggers it).
    """
    squared = np.einsum("ij,ij->i", X, X)
    # rows up to ROW_NORM_ROUNDING longer (an estimator's clip, rounded) are covered by the
    # sensitivities (computed_sensitivities evaluates them at R (1 + ROW_NORM_ROUNDING))
    if np.all(squared <= (data_norm * data_norm) * (1 + ROW_NORM_ROUNDING)):
        return X
    return clip_rows_to_norm(X, data_norm)[0]


def release(problem, calibration: SufficientStatisticsCalibration, rng, tol: float = 0.0,
            max_iter: int = 0) -> "SufficientStatisticsOutput":
    """The three releases under ``calibration`` and the coefficients from them (spends nothing).

    Rows and targets are clipped to the calibration's public bounds again (a per-record
    map; a no-op for an estimator's input), the constant column set to the public
    ``calibration.intercept`` when there is one, then Alg. 2, lines 1-6. ``tol`` and
    ``max_iter`` are not used (no iterative solve).

    Row weights (``problem.sample_weight``, ``v_i`` in [0, 1]): weighted least squares
    ``sum_i v_i (y_i - w.z_i)^2`` is least squares on the rows ``(sqrt(v_i) z_i,
    sqrt(v_i) y_i)``, which stay within the public bounds ``R`` and ``B`` (``sqrt(v_i)
    <= 1``, and a float product by a factor ``<= 1`` never grows). The three statistics
    are computed from those rows, so every sensitivity (Gram, moment, smallest
    eigenvalue, each bound for any rows within ``R`` and ``B``) and the calibration are
    unchanged; only the Gram corner ``c^2 sum_i v_i`` is no longer public, so its released
    value is used.
    """
    intercept = calibration.intercept
    X = np.array(problem.X, dtype=np.float64)
    if intercept is not None:
        X[:, -1] = intercept  # the public constant column the corner n c^2 assumes
    X = _rows_within(X, calibration.data_norm)
    y = np.clip(np.asarray(problem.y, dtype=np.float64), -calibration.target_bound,
                calibration.target_bound)
    weights = getattr(problem, "sample_weight", None)
    if weights is not None:
        root = np.sqrt(np.asarray(weights, dtype=np.float64))
        X = X * root[:, None]
        y = y * root
    gram_matrix = X.T @ X
    gram = calibration.gram.release(symmetric_to_vector(gram_matrix), rng)
    moment = calibration.moment.release(X.T @ y, rng)
    smallest = float(np.linalg.eigvalsh(gram_matrix)[0])
    min_eigenvalue = float(calibration.min_eigenvalue.release(np.array([smallest]), rng)[0])
    coef, ridge = solve_released(calibration, gram, moment, min_eigenvalue, intercept,
                                 public_corner=weights is None)
    return SufficientStatisticsOutput(coef, ridge, gram, moment, min_eigenvalue, calibration)


def expected_perturbation(problem, calibration: SufficientStatisticsCalibration) -> float:
    """``sqrt(E ||noise of m~||^2) / n``: the noise's RMS size in the normal equations' right-hand side.

    Public quantities only (the calibration's).
    """
    moment = calibration.moment
    return moment.entry_std * math.sqrt(moment.dimension) / calibration.n_samples


def sufficient_statistics_perturbation(problem, epsilon: float, delta: float, rng, tol: float = 0.0,
                                       max_iter: int = 0, accountant=None, *,
                                       intercept: float | None = None):
    """AdaSSP, pure ``epsilon``-DP (Wang 2018, Alg. 2 with Laplace-type noise; ``delta`` unused).

    Parameters
    ----------
    problem : ERMProblem
        Rows ``z_i`` with ``||z_i|| <= problem.data_norm`` and targets ``|y_i| <= B`` for the
        least-squares loss ``problem.loss`` (``B = loss.y_bound``); ``problem.alpha`` is not
        used (the ridge is chosen adaptively).
    epsilon, delta : float
        Split 49 / 49 / 2 per cent over the releases; ``delta`` is ignored (pure).
    rng : numpy Generator
        Only bits are read (:class:`~dperm.mechanisms.noise.BitSource`).
    tol, max_iter
        Not used (no iterative solve); accepted for the table's common signature.
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, 0)`` before any statistic is computed.
    intercept : float or None, default=None
        The public value ``c`` of a constant last column (the intercept feature): that
        coordinate is not penalised and the Gram corner ``n c^2`` is known exactly.
        The column is set to ``c`` (a per-record map of public values).

    Returns
    -------
    SufficientStatisticsOutput
        ``epsilon``-DP: three releases whose epsilons add up to at most ``epsilon`` (basic
        composition) and post-processing.

    The checked entry of :data:`~dperm.mechanisms.catalog.MECHANISMS`'s ``"adassp"`` row
    (:meth:`~dperm.mechanisms.catalog.Mechanism.run`): check the loss and the budget,
    :func:`calibrate`, spend, :func:`release`.
    """
    return MECHANISMS["adassp"].run(problem, epsilon, delta, rng, tol, max_iter, accountant,
                                    intercept=intercept)


def gaussian_sufficient_statistics_perturbation(problem, epsilon: float, delta: float, rng,
                                                tol: float = 0.0, max_iter: int = 0, accountant=None,
                                                *, intercept: float | None = None):
    """AdaSSP, ``(epsilon, delta)``-DP: discrete Gaussian releases of ``rho / 3`` zCDP each.

    As :func:`sufficient_statistics_perturbation`; ``delta > 0`` is required.
    ``rho`` = :func:`~dperm.privacy.sufficient_statistics.zcdp_rho` ``(epsilon, delta)``;
    the three releases compose to ``rho``-zCDP (Bun & Steinke 2016, Lemma 2.3), which is
    ``(epsilon, delta)``-DP (Canonne, Kamath & Steinke 2020, Sec. 2.3).
    """
    return MECHANISMS["gaussian_adassp"].run(problem, epsilon, delta, rng, tol, max_iter, accountant,
                                             intercept=intercept)


__all__ = [
    "StatisticRelease", "SufficientStatisticsCalibration", "SufficientStatisticsOutput",
    "calibrate", "calibrate_sufficient_statistics", "expected_perturbation",
    "gaussian_sufficient_statistics_perturbation", "nearest_psd", "release", "solve_released",
    "sufficient_statistics_perturbation",
]
