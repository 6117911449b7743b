"""Which solver a :class:`~dperm.PrivatePredictor` uses, what it costs, and the random-feature path.

Two paths, one theorem
----------------------
``"exact"`` solves the kernel ERM of the Gaussian or Laplacian kernel through
the ``m x m`` Gram matrix (:func:`dperm.mechanisms.prediction.fit_exact_kernel_model`):
memory ``O(m^2)``, time ``O(m^3)``. ``"features"`` replaces the kernel by the
finite-rank kernel ``k_z(x, x') = z(x) . z(x')`` of a random Fourier map
``z(x) = D^(-1/2) [cos(W x), sin(W x)]`` (:func:`dperm.kernels.random_fourier_pair_map`)
whose ``D`` frequencies W are drawn from a **public seed**, before and
independently of the data. ``k_z`` is a valid (positive semi-definite) kernel,
its RKHS is ``{x -> w . z(x)}`` with ``||f||_{k_z} <= ||w||``, and
``kappa^2 = sup_x k_z(x, x) = ||z(x)||^2 = 1`` exactly. 000 Thm 2 and Prop. 1
hold for every kernel with finite ``kappa``, so the answers of the kernel ERM
minimiser over ``H_{k_z}`` have the same sensitivity
``B_Delta = 2 kappa^2 C_L / (lambda gamma m)`` with ``kappa = 1``, and the same
discrete Laplace noise makes each answer ``epsilon_per_query``-DP. The
minimiser is ``w . z(x)`` with ``w`` the primal ERM solution in ``R^{2D}``
(representer theorem), found in memory ``O(m D + D^2)``:

* squared loss: the ``2D x 2D`` normal equations
  ``(Z^T Z + (alpha m / 2) I) w = Z^T y`` accumulated over row blocks (the
  rows' features are never all in memory), certified by
  ``||w - w*|| <= ||grad J(w)|| / alpha``;
* hinge: the certified linear SVM solver :func:`dperm.solvers.solve_hinge_svm`
  on the features (liblinear, duality-gap certificate).

Either path's radius ``||w - w*|| <= r`` bounds ``||f_w - f_w*||_{k_z} <= r``
and hence each value by ``kappa r``, so the noise is calibrated to
``B_Delta + 2 kappa r`` exactly as on the exact path (note 8); an uncertified
solve raises :class:`~dperm.exceptions.CertificateError`.

The features path answers with a *different model* (the ERM minimiser for
``k_z``, which approximates the Gaussian kernel's as ``D`` grows), not with
more noise: the privacy calibration is the same.

Never crash
-----------
:func:`plan_prediction_solver` estimates the peak memory and the time of a
path from public inputs only (``m``, the number of features, ``D``, the loss)
before anything is allocated, and refuses a path over the memory cap with a
one-line ``ValueError`` that states the estimate and the alternatives.
``solver="auto"`` takes the exact path when it fits the cap and the features
path otherwise. The choice is a function of public inputs, so it may be
recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from dperm.exceptions import CertificateError
from dperm.kernels import random_fourier_pair_map, sample_frequencies
from dperm.privacy.sensitivity import lambda_from_alpha
from dperm.solvers import solve_hinge_svm

__all__ = [
    "BYTES_PER_FLOAT",
    "DEFAULT_MAX_MEMORY_GB",
    "DEFAULT_N_COMPONENTS",
    "EXACT_PEAK_MATRICES",
    "FEATURE_STREAM_KEY",
    "PREDICTION_SOLVERS",
    "RandomFeatureKernelModel",
    "SolverPlan",
    "exact_solver_cost",
    "feature_frequencies",
    "features_solver_cost",
    "fit_random_feature_model",
    "plan_prediction_solver",
    "query_block_rows",
    "solve_feature_least_squares",
]

#: The values of ``PrivatePredictor(solver=...)``.
PREDICTION_SOLVERS = ("auto", "exact", "features")
#: Default cap on the estimated peak memory of a fit, in GB (10^9 bytes).
DEFAULT_MAX_MEMORY_GB = 2.0
#: Default number of random frequencies D of the features path (2D features).
DEFAULT_N_COMPONENTS = 256
BYTES_PER_FLOAT = 8
#: ``m x m`` float64 matrices alive at the peak of the exact solve. Measured with
#: tracemalloc at m = 2000: 3.1 (squared: K, K + lambda m I, its Cholesky copy)
#: and 2.0 (hinge, L-BFGS only); the hinge's active-set steps copy blocks of Q
#: and factor them, hence the margin.
EXACT_PEAK_MATRICES = {"squared": 4, "hinge": 6}
#: Copies of the ``m x 2D`` feature matrix alive in the hinge features solve:
#: Z, liblinear's internal copy (an index and a value per entry: two floats),
#: and the duality gap's scaled copy.
FEATURE_MATRIX_COPIES = 4
#: Rows whose features are computed at once (bounds the temporaries of the map).
FEATURE_ROW_BLOCK = 4096
#: Query rows per block when evaluating the exact model (a block x m kernel matrix).
QUERY_BLOCK_BYTES = 64 * 2**20
#: A modest sustained rate for the rough time estimates (BLAS-3 on one or two cores).
NOMINAL_FLOPS = 1e10
#: Spawn key of the frequencies' random stream: ``SeedSequence(feature_seed,
#: spawn_key=(FEATURE_STREAM_KEY,))`` never equals a noise stream seeded by an integer.
FEATURE_STREAM_KEY = 0x524646


@dataclass(frozen=True)
class SolverPlan:
    """The path a fit takes and what it is estimated to cost (from public inputs only).

    Attributes
    ----------
    solver : {"exact", "features"}
    memory_bytes : float
        Estimated peak memory of the solve.
    seconds : float
        Rough time estimate at :data:`NOMINAL_FLOPS`.
    """

    solver: str
    memory_bytes: float
    seconds: float


def exact_solver_cost(loss_name: str, m: int, n_features: int) -> tuple[float, float]:
    """``(bytes, seconds)`` of the exact kernel solve: ``O(m^2)`` memory, ``O(m^3)`` time.

    Memory: :data:`EXACT_PEAK_MATRICES` ``m x m`` float64 matrices. Time: the
    Gram matrix (``3 m^2 d`` flops) plus a Cholesky factorisation (``m^3 / 3``;
    the hinge's active-set steps factor the free block, the same order).
    """
    memory = EXACT_PEAK_MATRICES[loss_name] * BYTES_PER_FLOAT * float(m) ** 2
    flops = 3.0 * m * m * n_features + float(m) ** 3 / 3.0
    return memory, flops / NOMINAL_FLOPS


def features_solver_cost(loss_name: str, m: int, n_features: int, n_components: int) -> tuple[float, float]:
    """``(bytes, seconds)`` of the random-feature solve with ``2 D`` features.

    Squared loss: the ``2D x 2D`` Gram matrix and its factor plus one block of
    rows' features (``O(D^2)``, independent of m). Hinge: the ``m x 2D`` feature
    matrix, :data:`FEATURE_MATRIX_COPIES` times (``O(m D)``). Time: the map
    (``2 m D d``) and ``2 m (2D)^2`` for the Gram matrix, or about ten liblinear
    epochs of ``2 m 2D`` each.
    """
    width = 2 * n_components
    block = min(m, FEATURE_ROW_BLOCK)
    map_flops = 2.0 * m * n_components * n_features
    if loss_name == "squared":
        memory = BYTES_PER_FLOAT * (3.0 * width**2 + 4.0 * block * width)
        flops = map_flops + 2.0 * m * width**2 + width**3 / 3.0
    else:
        memory = BYTES_PER_FLOAT * (FEATURE_MATRIX_COPIES * float(m) * width + 4.0 * block * width)
        flops = map_flops + 10 * 2.0 * m * width
    return memory, flops / NOMINAL_FLOPS


def _gigabytes(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:.3g} GB"


def plan_prediction_solver(
    solver: str, loss_name: str, m: int, n_features: int, n_components: int, max_memory_gb: float
) -> SolverPlan:
    """Choose the path and check it fits ``max_memory_gb``, before anything is allocated.

    ``"exact"`` and ``"features"`` are taken as asked or refused;
    ``"auto"`` takes ``"exact"`` when its estimate fits the cap, else
    ``"features"``. Every input is public (m under replace-one neighbours), so
    the plan may be released.

    Raises
    ------
    ValueError
        One line: the path, its estimated memory and time, the cap, and what to do.
    """
    cap = max_memory_gb * 1e9
    exact = SolverPlan("exact", *exact_solver_cost(loss_name, m, n_features))
    features = SolverPlan("features", *features_solver_cost(loss_name, m, n_features, n_components))
    if solver == "auto":
        solver = "exact" if exact.memory_bytes <= cap else "features"
    plan = exact if solver == "exact" else features
    if plan.memory_bytes <= cap:
        return plan
    if plan.solver == "exact":
        advice = (f"use solver='features' (random Fourier features, estimated "
                  f"{_gigabytes(features.memory_bytes)}) or solver='auto', or raise max_memory_gb")
    else:
        advice = "lower n_components or raise max_memory_gb"
    raise ValueError(
        f"PrivatePredictor: solver={plan.solver!r} with loss={loss_name!r} on m={m} rows needs an "
        f"estimated {_gigabytes(plan.memory_bytes)} of memory (about {plan.seconds:.3g} s), over "
        f"max_memory_gb={max_memory_gb:g}; nothing was fitted or spent: {advice}."
    )


def feature_frequencies(kernel: str, gamma: float, n_components: int, n_features: int,
                        feature_seed: int) -> np.ndarray:
    """The public ``D x d`` frequencies of the features path, from ``feature_seed`` alone.

    Drawn from the kernel's spectral distribution
    (:func:`dperm.kernels.sample_frequencies`) with the stream
    ``SeedSequence(feature_seed, spawn_key=(FEATURE_STREAM_KEY,))``: a function
    of public inputs only (never of the data, never of the noise generator).
    """
    stream = np.random.SeedSequence(feature_seed, spawn_key=(FEATURE_STREAM_KEY,))
    return sample_frequencies(kernel, gamma, n_components, n_features, np.random.default_rng(stream))


def _row_blocks(m: int):
    for start in range(0, m, FEATURE_ROW_BLOCK):
        yield slice(start, min(start + FEATURE_ROW_BLOCK, m))


def _feature_normal_equations(X, y, frequencies):
    """``Z^T Z`` and ``Z^T y``, accumulated over row blocks (``Z`` never held whole)."""
    width = 2 * frequencies.shape[0]
    gram, moment = np.zeros((width, width)), np.zeros(width)
    for rows in _row_blocks(X.shape[0]):
        Z = random_fourier_pair_map(X[rows], frequencies)
        gram += Z.T @ Z
        moment += Z.T @ y[rows]
    return gram, moment


def solve_feature_least_squares(X, y, frequencies, alpha: float):
    """Least squares on the features: ``(Z^T Z + (alpha m / 2) I) w = Z^T y``; returns ``(w, radius)``.

    ``J(w) = (1/m) sum (w . z_i - y_i)^2 + alpha/2 ||w||^2`` (000 Sec. 5.1 for
    the kernel ``k_z``, ``lambda = alpha / 2``) is ``alpha``-strongly convex, so
    ``||w - w*|| <= ||grad J(w)|| / alpha`` with
    ``grad J(w) = (2/m)(Z^T Z w - Z^T y) + alpha w``.
    """
    m = X.shape[0]
    gram, moment = _feature_normal_equations(X, y, frequencies)
    system = gram.copy()
    system[np.diag_indices_from(system)] += lambda_from_alpha(alpha) * m
    coef = cho_solve(cho_factor(system, lower=True), moment)
    gradient = (2.0 / m) * (gram @ coef - moment) + alpha * coef
    return coef, float(np.linalg.norm(gradient)) / alpha


def _feature_matrix(X, frequencies):
    """All rows' features in one preallocated ``m x 2D`` array, filled block by block."""
    Z = np.empty((X.shape[0], 2 * frequencies.shape[0]))
    for rows in _row_blocks(X.shape[0]):
        Z[rows] = random_fourier_pair_map(X[rows], frequencies)
    return Z


class RandomFeatureKernelModel:
    """``f(x) = w . z(x)``, the certified ERM minimiser for the kernel ``k_z``: **secret**.

    The frequencies are public; the coefficients ``w`` are a function of the
    training data and must never be released. Only noisy answers leave.
    """

    def __init__(self, frequencies, coef, y_bound):
        self._frequencies = frequencies
        self._coef = coef
        self._y_bound = y_bound

    def values(self, X: np.ndarray) -> np.ndarray:
        """``pi(f(x))`` (least squares, 002 eq. 2) or ``f(x)`` (hinge), in row blocks."""
        values = np.empty(X.shape[0])
        for rows in _row_blocks(X.shape[0]):
            values[rows] = random_fourier_pair_map(X[rows], self._frequencies) @ self._coef
        if self._y_bound is not None:
            values = np.clip(values, -self._y_bound, self._y_bound)
        return values

    def __repr__(self) -> str:  # never print the secret coefficients
        return f"RandomFeatureKernelModel(n_features={self._coef.shape[0]}, <secret>)"


def fit_random_feature_model(X, y, loss_name, frequencies, alpha, radius_tol, max_iter, y_bound=None):
    """Solve the kernel ERM for ``k_z`` in its ``2D``-dimensional primal; return the secret model.

    Parameters
    ----------
    X : ndarray of shape (m, d)
    y : ndarray of shape (m,)
        Labels in ``[-y_bound, y_bound]`` (squared) or in {-1, +1} (hinge).
    loss_name : {"squared", "hinge"}
    frequencies : ndarray of shape (D, d)
        Public (:func:`feature_frequencies`).
    alpha : float
    radius_tol : float
        The radius the solve must certify (the same allowance as the exact path).
    max_iter : int
        liblinear's iteration budget (hinge).
    y_bound : float or None

    Raises
    ------
    CertificateError
        If the solve cannot certify ``radius_tol``: nothing is fitted.
    """
    if loss_name == "squared":
        coef, radius = solve_feature_least_squares(X, y, frequencies, alpha)
    else:
        solve = solve_hinge_svm(_feature_matrix(X, frequencies), y, alpha, radius_tol, max_iter)
        coef, radius = solve.coef, solve.solution_radius
    if not radius <= radius_tol:
        raise CertificateError(
            f"private prediction (random features): the {loss_name} solve did not certify the "
            f"radius {radius_tol:.3g} the noise is calibrated for, so nothing is fitted. "
            "Increase max_iter or alpha."
        )
    return RandomFeatureKernelModel(frequencies, coef, y_bound if loss_name == "squared" else None)


def query_block_rows(m: int) -> int:
    """Query rows per block so that a ``block x m`` kernel matrix stays near :data:`QUERY_BLOCK_BYTES`."""
    return max(1, QUERY_BLOCK_BYTES // (BYTES_PER_FLOAT * max(m, 1)))
