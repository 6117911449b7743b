"""Certified kernel ERM solvers behind :class:`dperm.PrivatePredictor` (000 Thm 2, paper note 8).

Two paths. ``"exact"``: the Gaussian or Laplacian kernel through the ``m x m``
Gram matrix (least squares in closed form, the hinge SVM in its dual with a
duality-gap certificate); memory ``O(m^2)``, time ``O(m^3)``. ``"features"``:
the finite-rank kernel ``z(x) . z(x')`` of random Fourier features drawn from a
public seed, solved in its ``2D``-dimensional primal; memory ``O(m D + D^2)``.
Each solve certifies an RKHS radius ``r`` around its exact minimiser, always: its
fast method runs under ``max_iter`` and a proven method finishes it
(:mod:`dperm.solvers.proven`), so a fit never fails after its budget is spent.
:func:`plan_prediction_solver`
picks the path from public inputs and refuses one over the memory cap before
anything is allocated. Why both paths share one calibration:
``docs/design/prediction.md``.

Every function takes the loss object (:mod:`dperm.losses`) and asks it its kind:
the prediction losses of :data:`dperm.catalog.LOSSES` are one residual loss,
least squares (real targets in ``[-y_bound, y_bound]``, solved in closed form),
and one margin loss, the hinge (labels in {-1, +1}, solved in its dual). A test
checks each solve against its own loss's objective.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, eigh
from scipy.optimize import minimize

from dperm.kernels import kernel_matrix, random_fourier_pair_map, sample_frequencies
from dperm.privacy.sensitivity import lambda_from_alpha
from dperm.solvers.erm import FINAL_STAGE_MARGIN, NONSMOOTH_MIN_ITER, solve_hinge_svm
from dperm.solvers.proven import accelerated_completion, fista_box_completion

__all__ = [
    "DEFAULT_MAX_MEMORY_GB",
    "DEFAULT_N_COMPONENTS",
    "PREDICTION_SOLVERS",
    "ExactKernelModel",
    "KernelSolve",
    "RandomFeatureKernelModel",
    "SolverPlan",
    "feature_frequencies",
    "fit_exact_kernel_model",
    "fit_kernel_model",
    "fit_random_feature_model",
    "kernel_hinge_duality_gap",
    "plan_prediction_solver",
    "solve_feature_least_squares",
    "solve_kernel_hinge",
    "solve_kernel_least_squares",
]

#: The values of ``PrivatePredictor(solver=...)``.
PREDICTION_SOLVERS = ("auto", "exact", "features")
#: Default cap on the estimated peak memory of a fit, in GB (10^9 bytes).
DEFAULT_MAX_MEMORY_GB = 2.0
#: Default number of random frequencies D of the features path (2D features).
DEFAULT_N_COMPONENTS = 256
_BYTES_PER_FLOAT = 8
#: ``m x m`` float64 matrices alive at the peak of the exact solve, by the loss's kind.
#: Measured with tracemalloc at m = 2000: 3.1 (residual, least squares: K, K + lambda m I,
#: its Cholesky copy) and 2.0 (margin, the hinge, L-BFGS only); the hinge's active-set
#: steps copy blocks of Q and factor them, hence the margin.
_EXACT_PEAK_MATRICES = {"residual": 4, "margin": 6}
#: Copies of the ``m x 2D`` feature matrix alive in the hinge features solve:
#: Z, liblinear's internal copy (an index and a value per entry: two floats),
#: and the duality gap's scaled copy.
_FEATURE_MATRIX_COPIES = 4
#: Rows whose features are computed at once (bounds the temporaries of the map).
_FEATURE_ROW_BLOCK = 4096
#: Query rows per block when evaluating the exact model (a block x m kernel matrix).
_QUERY_BLOCK_BYTES = 64 * 2**20
#: A modest sustained rate for the rough time estimates (BLAS-3 on one or two cores).
_NOMINAL_FLOPS = 1e10
#: Spawn key of the frequencies' random stream: ``SeedSequence(feature_seed,
#: spawn_key=(_FEATURE_STREAM_KEY,))`` never equals a noise stream seeded by an integer.
_FEATURE_STREAM_KEY = 0x524646
#: Active-set Newton steps tried after L-BFGS-B on the hinge dual.
_MAX_ACTIVE_SET_STEPS = 30


# ---------------------------------------------------------------------------
# Planning: the path and its cost, from public inputs only
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SolverPlan:
    """The path a fit takes and what it is estimated to cost (from public inputs only).

    Attributes
    ----------
    solver : {"exact", "features"}
    memory_bytes : float
        Estimated peak memory of the solve.
    seconds : float
        Rough time estimate at :data:`_NOMINAL_FLOPS`.
    """

    solver: str
    memory_bytes: float
    seconds: float


def _exact_solver_cost(loss, m: int, n_features: int) -> tuple[float, float]:
    """``(bytes, seconds)`` of the exact kernel solve: ``O(m^2)`` memory, ``O(m^3)`` time.

    Memory: :data:`_EXACT_PEAK_MATRICES` ``m x m`` float64 matrices. Time: the
    Gram matrix (``3 m^2 d`` flops) plus a Cholesky factorisation (``m^3 / 3``;
    the hinge's active-set steps factor the free block, the same order).
    """
    memory = _EXACT_PEAK_MATRICES[loss.kind] * _BYTES_PER_FLOAT * float(m) ** 2
    flops = 3.0 * m * m * n_features + float(m) ** 3 / 3.0
    return memory, flops / _NOMINAL_FLOPS


def _features_solver_cost(loss, m: int, n_features: int, n_components: int) -> tuple[float, float]:
    """``(bytes, seconds)`` of the random-feature solve with ``2 D`` features.

    Squared loss: the ``2D x 2D`` Gram matrix and its factor plus one block of
    rows' features (``O(D^2)``, independent of m). Hinge: the ``m x 2D`` feature
    matrix, :data:`_FEATURE_MATRIX_COPIES` times (``O(m D)``). Time: the map
    (``2 m D d``) and ``2 m (2D)^2`` for the Gram matrix, or about ten liblinear
    epochs of ``2 m 2D`` each.
    """
    width = 2 * n_components
    block = min(m, _FEATURE_ROW_BLOCK)
    map_flops = 2.0 * m * n_components * n_features
    if loss.kind == "residual":
        memory = _BYTES_PER_FLOAT * (3.0 * width**2 + 4.0 * block * width)
        flops = map_flops + 2.0 * m * width**2 + width**3 / 3.0
    else:
        memory = _BYTES_PER_FLOAT * (_FEATURE_MATRIX_COPIES * float(m) * width + 4.0 * block * width)
        flops = map_flops + 10 * 2.0 * m * width
    return memory, flops / _NOMINAL_FLOPS


def _gigabytes(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:.3g} GB"


def plan_prediction_solver(
    solver: str, loss, m: int, n_features: int, n_components: int, max_memory_gb: float
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
    exact = SolverPlan("exact", *_exact_solver_cost(loss, m, n_features))
    features = SolverPlan("features", *_features_solver_cost(loss, m, n_features, n_components))
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
        f"PrivatePredictor: solver={plan.solver!r} with loss={loss.name!r} on m={m} rows needs an "
        f"estimated {_gigabytes(plan.memory_bytes)} of memory (about {plan.seconds:.3g} s), over "
        f"max_memory_gb={max_memory_gb:g}; nothing was fitted or spent: {advice}."
    )


# ---------------------------------------------------------------------------
# The exact path: the Gram matrix of the kernel (kappa from dperm.kernels.KERNELS)
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelSolve:
    """Coefficients ``c`` of ``f = sum_i c_i K(x_i, .)`` and the certificate.

    Attributes
    ----------
    coef : ndarray of shape (m,)
        Representer coefficients. **Private**: with the training rows they are the model.
    solution_radius : float
        A proven bound on ``||f - f_exact||_K`` (up to rounding).
    certified : bool
        Whether ``solution_radius`` is within the requested allowance.
    n_iter : int
        Solver iterations (0 for the closed form).
    """

    coef: np.ndarray
    solution_radius: float
    certified: bool
    n_iter: int


def _kernel_least_squares_radius(K: np.ndarray, y: np.ndarray, alpha: float, coef: np.ndarray) -> float:
    """``||grad J(f)||_K / alpha``: a bound on ``||f - f_exact||_K`` for kernel least squares.

    ``J(f) = (1/m) sum (f(x_i) - y_i)^2 + alpha/2 ||f||_K^2`` is
    ``alpha``-strongly convex; at ``f = sum c_i K_{x_i}`` its gradient is
    ``sum g_i K_{x_i}`` with ``g = (2/m)((K + (alpha m / 2) I) c - y)``, of norm
    ``sqrt(g^T K g)``.
    """
    m = y.shape[0]
    residual = K @ coef + 0.5 * alpha * m * coef - y
    g = (2.0 / m) * residual
    return math.sqrt(max(float(g @ K @ g), 0.0)) / alpha


def solve_kernel_least_squares(
    K: np.ndarray, y: np.ndarray, alpha: float, radius_tol: float
) -> KernelSolve:
    """Exact kernel least squares (000 Sec. 5.1; 002 eq. 1) by the representer theorem.

    Minimises ``(1/m) sum (f(x_i) - y_i)^2 + lambda ||f||_K^2``, ``lambda = alpha/2``
    (paper note 7). With ``f = sum_i c_i K(x_i, .)`` the optimality condition is
    ``K (K c - y) + lambda m K c = 0``, solved by ``c = (K + lambda m I)^(-1) y``
    (kernel ridge regression; scikit-learn's ``KernelRidge(alpha=lambda m)``).
    ``K + lambda m I`` has eigenvalues ``>= lambda m``, so its Cholesky factor
    exists and the solve is well conditioned.
    """
    m = y.shape[0]
    lam = lambda_from_alpha(alpha)
    system = K + lam * m * np.eye(m)
    coef = cho_solve(cho_factor(system, lower=True), y)
    radius = _kernel_least_squares_radius(K, y, alpha, coef)
    n_iter = 0
    if radius > radius_tol:  # rounding beyond the tolerance: finish with the proven method
        coef, radius, n_iter = _proven_least_squares(K, y, alpha, coef, radius_tol)
    return KernelSolve(coef=coef, solution_radius=radius, certified=radius <= radius_tol, n_iter=n_iter)


def _proven_least_squares(K, y, alpha, coef, radius_tol):
    """Accelerated gradient in the RKHS from ``coef`` until it proves ``||f - f*||_K <= radius_tol``.

    ``J(f) = (1/m) sum (f(x_i) - y_i)^2 + alpha/2 ||f||_K^2`` is ``alpha``-strongly
    convex and ``(2 kappa^2 + alpha)``-smooth in the RKHS (``<f, H f> = (2/m) sum
    f(x_i)^2 <= 2 kappa^2 ||f||^2``, ``kappa^2 = max K_ii``); its gradient at
    ``f = sum c_i K_{x_i}`` has coefficients ``(2/m)((K + (alpha m / 2) I) c - y)``
    (:func:`_kernel_least_squares_radius`). Returns ``(coef, radius, steps)``.
    """
    m = y.shape[0]
    shift = 0.5 * alpha * m

    def value_and_gradient(c):
        return None, (2.0 / m) * (K @ c + shift * c - y)

    def rkhs_norm(g):
        return math.sqrt(max(float(g @ K @ g), 0.0))

    smoothness = 2.0 * float(np.max(np.diag(K))) + alpha
    target = FINAL_STAGE_MARGIN * radius_tol
    coef, certificate, steps = accelerated_completion(
        value_and_gradient, coef, value_and_gradient(coef)[1], alpha, smoothness, alpha * target,
        norm=rkhs_norm)
    return coef, min(_kernel_least_squares_radius(K, y, alpha, coef), certificate / alpha), steps


def kernel_hinge_duality_gap(K: np.ndarray, y: np.ndarray, alpha: float, dual: np.ndarray):
    """Duality gap of the kernel hinge SVM at dual point ``a in [0, 1]^m``; returns ``(gap, coef)``.

    Primal (000 Sec. 5.2 with ``lambda = alpha / 2``, no intercept):
    ``P(f) = (1/m) sum (1 - y_i f(x_i))_+ + alpha/2 ||f||_K^2``. Dual:
    ``D(a) = (1/m) sum a_i - a^T Q a / (2 alpha m^2)``, ``Q_ij = y_i y_j K_ij``;
    the primal point of ``a`` is ``c = a * y / (alpha m)`` (the kernel form of
    :func:`dperm.solvers.piecewise_linear_duality_gap`). Weak duality gives
    ``P(f_c) - min P <= P(f_c) - D(a)``; with ``c^T K c = a^T Q a / (alpha m)^2``
    the gap is ``mean(hinge) + alpha c^T K c - mean(a)``.
    """
    m = y.shape[0]
    coef = dual * y / (alpha * m)
    values = K @ coef
    hinge = np.maximum(0.0, 1.0 - y * values)
    gap = float(hinge.mean()) + alpha * float(coef @ values) - float(dual.mean())
    return max(gap, 0.0), coef


def _gap_radius(gap: float, alpha: float) -> float:
    """``||f - f*||_K <= sqrt(2 gap / alpha)`` (``P`` is ``alpha``-strongly convex)."""
    return math.sqrt(2.0 * gap / alpha)


def _box_qp_lbfgs(Q: np.ndarray, linear: float, max_iter: int) -> np.ndarray:
    """Minimise ``a^T Q a / 2 - linear * sum(a)`` over ``[0, 1]^m`` with L-BFGS-B (a warm start)."""

    def value_and_gradient(a):
        Qa = Q @ a
        return 0.5 * float(a @ Qa) - linear * float(a.sum()), Qa - linear

    m = Q.shape[0]
    result = minimize(
        value_and_gradient, np.full(m, 0.5), jac=True, method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * m, options={"maxiter": max_iter, "ftol": 1e-15, "gtol": 1e-12},
    )
    return np.clip(result.x, 0.0, 1.0)


def _active_set_step(Q: np.ndarray, linear: float, a: np.ndarray) -> np.ndarray:
    """Fix the variables at a bound whose gradient pushes outward; solve the rest exactly; clip.

    At the optimum ``Q a = linear`` on the free set, ``a_i = 1`` where the
    gradient is negative and ``a_i = 0`` where it is positive (KKT).
    """
    gradient = Q @ a - linear
    upper = (a >= 1.0) & (gradient <= 0.0)
    lower = (a <= 0.0) & (gradient >= 0.0)
    free = ~(upper | lower)
    candidate = upper.astype(np.float64)
    if free.any():
        rhs = linear - Q[np.ix_(free, upper)].sum(axis=1)
        candidate[free] = np.linalg.lstsq(Q[np.ix_(free, free)], rhs, rcond=None)[0]
    return np.clip(candidate, 0.0, 1.0)


def _coordinate_sweep(Q: np.ndarray, linear: float, a: np.ndarray, Qa: np.ndarray) -> None:
    """One pass of exact coordinate minimisation (in place), the fallback when active sets stall."""
    for i in range(a.shape[0]):
        new = min(max(a[i] - (Qa[i] - linear) / Q[i, i], 0.0), 1.0)
        step = new - a[i]
        if step != 0.0:
            Qa += step * Q[:, i]
            a[i] = new


def solve_kernel_hinge(
    K: np.ndarray, y: np.ndarray, alpha: float, radius_tol: float, max_iter: int
) -> KernelSolve:
    """The kernel hinge SVM without intercept (000 Sec. 5.2), certified by the duality gap.

    Scaled by ``1 / alpha``, ``P`` is scikit-learn's ``1/2 ||f||^2 + C sum hinge``
    with ``C = 1 / (alpha m)``; but ``SVC`` adds an unregularised intercept,
    which is not in the papers' model and has no sensitivity bound, so the dual
    ``min_a a^T Q a / 2 - alpha m sum(a)`` over ``[0, 1]^m`` (``alpha m^2`` times
    ``-D``) is solved here: L-BFGS-B, then active-set Newton steps, then exact
    coordinate sweeps until ``sqrt(2 gap / alpha) <= radius_tol`` or
    ``max_iter`` sweeps. Every candidate is dual feasible, so the gap of
    :func:`kernel_hinge_duality_gap` is a valid certificate whatever the route.
    """
    m = y.shape[0]
    max_iter = max(max_iter, NONSMOOTH_MIN_ITER)  # the proven completion is slow: see erm.NONSMOOTH_MIN_ITER
    Q = (y[:, None] * y[None, :]) * K
    linear = alpha * m
    best = _box_qp_lbfgs(Q, linear, max_iter)
    best_gap, _ = kernel_hinge_duality_gap(K, y, alpha, best)
    n_iter = 1
    for _ in range(_MAX_ACTIVE_SET_STEPS):
        if _gap_radius(best_gap, alpha) <= radius_tol:
            break
        candidate = _active_set_step(Q, linear, best)
        gap, _ = kernel_hinge_duality_gap(K, y, alpha, candidate)
        n_iter += 1
        if gap >= best_gap:
            break
        best, best_gap = candidate, gap
    dual, Qa = best.copy(), Q @ best
    while _gap_radius(best_gap, alpha) > radius_tol and n_iter < max_iter:
        _coordinate_sweep(Q, linear, dual, Qa)
        n_iter += 1
        gap, _ = kernel_hinge_duality_gap(K, y, alpha, dual)
        if gap < best_gap:
            best, best_gap = dual.copy(), gap
    radius = _gap_radius(best_gap, alpha)
    if radius > radius_tol:
        best, radius, steps = _proven_dual_completion(Q, K, y, alpha, linear, best, radius_tol)
        n_iter += steps
    _, coef = kernel_hinge_duality_gap(K, y, alpha, best)
    return KernelSolve(coef=coef, solution_radius=radius, certified=radius <= radius_tol, n_iter=n_iter)


def _proven_dual_completion(Q, K, y, alpha, linear, start, radius_tol):
    """FISTA on the dual until the gap certifies ``radius_tol`` or the theorem proves it.

    With ``P`` ``alpha``-strongly convex, the dual's suboptimality bounds the
    primal distance: ``D* - D(a) >= alpha/2 ||f_a - f*||_K^2`` (``D`` is a
    concave quadratic maximised over the box at ``a*``, whose first-order
    condition leaves only the quadratic term, and ``f_{a*} = f*``). The scaled
    dual ``g = a^T Q a / 2 - alpha m sum(a)`` is ``alpha m^2 (-D)`` up to a
    constant, so ``g(a) - g* <= alpha^2 m^2 r^2 / 2`` proves ``||f_a - f*|| <= r``;
    :func:`dperm.solvers.proven.fista_box_completion` reaches it in a number of
    steps fixed by ``m``, ``r``, ``alpha`` and ``||Q||`` (Beck & Teboulle 2009, Thm 4.4).
    Returns ``(dual point, proven radius, steps)``.
    """
    m = y.shape[0]
    target = FINAL_STAGE_MARGIN * radius_tol
    smoothness = float(eigh(Q, eigvals_only=True, subset_by_index=[m - 1, m - 1])[0])
    smoothness = max(smoothness, np.finfo(float).tiny) * (1.0 + 1e-9)  # an upper bound despite rounding

    def certified(dual):
        return _gap_radius(kernel_hinge_duality_gap(K, y, alpha, dual)[0], alpha) <= radius_tol

    dual, proven, steps = fista_box_completion(Q, linear, start, smoothness,
                                               0.5 * (alpha * m * target) ** 2, certified)
    gap_radius = _gap_radius(kernel_hinge_duality_gap(K, y, alpha, dual)[0], alpha)
    return dual, min(gap_radius, target) if proven else gap_radius, steps


class ExactKernelModel:
    """The exact (certified) kernel minimiser ``f_z``: **secret**, never to be released.

    It holds the training rows and the representer coefficients. Only
    :func:`answer_queries` applied to its :meth:`values` may leave the
    data holder, one answer at a time and at ``epsilon`` each (paper note 6).

    Parameters
    ----------
    training_rows : ndarray of shape (m, d)
    coef : ndarray of shape (m,)
    kernel : str
    gamma : float
        Kernel parameter.
    y_bound : float or None
        ``M``: values are projected onto ``[-M, M]`` (002 eq. 2); ``None``: no projection.
    """

    def __init__(self, training_rows, coef, kernel, gamma, y_bound):
        self._training_rows = training_rows
        self._coef = coef
        self._kernel = kernel
        self._gamma = gamma
        self._y_bound = y_bound

    def values(self, X: np.ndarray) -> np.ndarray:
        """``pi(f_z(x))`` (least squares, 002 eq. 2) or ``f_z(x)`` (hinge) for each row of X.

        In blocks of query rows, so the ``block x m`` kernel matrix stays small.
        """
        block = _query_block_rows(self._coef.shape[0])
        values = np.empty(X.shape[0])
        for start in range(0, X.shape[0], block):
            rows = slice(start, start + block)
            values[rows] = kernel_matrix(self._kernel, X[rows], self._training_rows, self._gamma) @ self._coef
        if self._y_bound is not None:
            values = np.clip(values, -self._y_bound, self._y_bound)
        return values

    def __repr__(self) -> str:  # never print the secret arrays
        return f"ExactKernelModel(kernel={self._kernel!r}, m={self._coef.shape[0]}, <secret>)"


def fit_exact_kernel_model(X, y, loss, kernel, gamma, alpha, radius_tol, max_iter):
    """Solve the kernel ERM of ``loss`` exactly enough and return the secret model and its solve.

    Parameters
    ----------
    X : ndarray of shape (m, d)
    y : ndarray of shape (m,)
        Targets in ``[-y_bound, y_bound]`` (squared) or labels in {-1, +1} (hinge).
    loss : SquaredLoss or HingeLoss
        A prediction loss (:data:`dperm.mechanisms.prediction.PREDICTION_LOSSES`);
        least squares projects its values to ``[-loss.y_bound, loss.y_bound]``.
    kernel, gamma
        See :data:`dperm.kernels.KERNELS`.
    alpha : float
        dperm's regularisation strength (``lambda = alpha / 2``).
    radius_tol : float
        The RKHS radius the solve must certify
        (:func:`dperm.mechanisms.prediction.solution_radius_allowance`).
    max_iter : int
    """
    K = kernel_matrix(kernel, X, X, gamma)
    if loss.kind == "residual":
        solve = solve_kernel_least_squares(K, y, alpha, radius_tol)
    else:
        solve = solve_kernel_hinge(K, y, alpha, radius_tol, max_iter)
    model = ExactKernelModel(X, solve.coef, kernel, gamma, _value_bound(loss))
    return model, solve


def _value_bound(loss):
    """``M``, the bound answers are projected to (002 eq. 2), for a residual loss; ``None`` for a margin loss."""
    return loss.y_bound if loss.kind == "residual" else None


# ---------------------------------------------------------------------------
# The random-feature path (kernel k_z, kappa = 1)
# ---------------------------------------------------------------------------
def feature_frequencies(kernel: str, gamma: float, n_components: int, n_features: int,
                        feature_seed: int) -> np.ndarray:
    """The public ``D x d`` frequencies of the features path, from ``feature_seed`` alone.

    Drawn from the kernel's spectral distribution
    (:func:`dperm.kernels.sample_frequencies`) with the stream
    ``SeedSequence(feature_seed, spawn_key=(_FEATURE_STREAM_KEY,))``: a function
    of public inputs only (never of the data, never of the noise generator).
    """
    stream = np.random.SeedSequence(feature_seed, spawn_key=(_FEATURE_STREAM_KEY,))
    return sample_frequencies(kernel, gamma, n_components, n_features, np.random.default_rng(stream))


def _row_blocks(m: int):
    for start in range(0, m, _FEATURE_ROW_BLOCK):
        yield slice(start, min(start + _FEATURE_ROW_BLOCK, m))


def _feature_normal_equations(X, y, frequencies):
    """``Z^T Z`` and ``Z^T y``, accumulated over row blocks (``Z`` never held whole)."""
    width = 2 * frequencies.shape[0]
    gram, moment = np.zeros((width, width)), np.zeros(width)
    for rows in _row_blocks(X.shape[0]):
        Z = random_fourier_pair_map(X[rows], frequencies)
        gram += Z.T @ Z
        moment += Z.T @ y[rows]
    return gram, moment


def solve_feature_least_squares(X, y, frequencies, alpha: float, radius_tol: float | None = None):
    """Least squares on the features: ``(Z^T Z + (alpha m / 2) I) w = Z^T y``; returns ``(w, radius)``.

    ``J(w) = (1/m) sum (w . z_i - y_i)^2 + alpha/2 ||w||^2`` (000 Sec. 5.1 for
    the kernel ``k_z``, ``lambda = alpha / 2``) is ``alpha``-strongly convex, so
    ``||w - w*|| <= ||grad J(w)|| / alpha`` with
    ``grad J(w) = (2/m)(Z^T Z w - Z^T y) + alpha w``. If rounding leaves the
    radius above ``radius_tol``, accelerated gradient finishes the solve
    (:func:`dperm.solvers.proven.accelerated_completion`, ``L = 2 lambda_max(Z^T Z) / m + alpha``).
    """
    m = X.shape[0]
    gram, moment = _feature_normal_equations(X, y, frequencies)
    system = gram.copy()
    system[np.diag_indices_from(system)] += lambda_from_alpha(alpha) * m
    coef = cho_solve(cho_factor(system, lower=True), moment)

    def value_and_gradient(w):
        return None, (2.0 / m) * (gram @ w - moment) + alpha * w

    gradient_norm = float(np.linalg.norm(value_and_gradient(coef)[1]))
    if radius_tol is not None and gradient_norm > alpha * radius_tol:
        width = gram.shape[0]
        top = float(eigh(gram, eigvals_only=True, subset_by_index=[width - 1, width - 1])[0])
        smoothness = (2.0 * max(top, 0.0) / m + alpha) * (1.0 + 1e-9)  # an upper bound despite rounding
        coef, gradient_norm, _ = accelerated_completion(
            value_and_gradient, coef, value_and_gradient(coef)[1], alpha, smoothness,
            alpha * FINAL_STAGE_MARGIN * radius_tol)
    return coef, gradient_norm / alpha


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


def fit_random_feature_model(X, y, loss, frequencies, alpha, radius_tol, max_iter):
    """Solve the kernel ERM for ``k_z`` in its ``2D``-dimensional primal; return the secret model.

    Parameters
    ----------
    X : ndarray of shape (m, d)
    y : ndarray of shape (m,)
        Targets in ``[-y_bound, y_bound]`` (squared) or labels in {-1, +1} (hinge).
    loss : SquaredLoss or HingeLoss
        As in :func:`fit_exact_kernel_model`.
    frequencies : ndarray of shape (D, d)
        Public (:func:`feature_frequencies`).
    alpha : float
    radius_tol : float
        The radius the solve must certify (the same allowance as the exact path).
    max_iter : int
        liblinear's iteration budget (hinge).
    """
    if loss.kind == "residual":
        coef, _ = solve_feature_least_squares(X, y, frequencies, alpha, radius_tol)
    else:
        coef = solve_hinge_svm(_feature_matrix(X, frequencies), y, alpha, radius_tol, max_iter).coef
    return RandomFeatureKernelModel(frequencies, coef, _value_bound(loss))


def _query_block_rows(m: int) -> int:
    """Query rows per block so that a ``block x m`` kernel matrix stays near :data:`_QUERY_BLOCK_BYTES`."""
    return max(1, _QUERY_BLOCK_BYTES // (_BYTES_PER_FLOAT * max(m, 1)))


# ---------------------------------------------------------------------------
# Either path
# ---------------------------------------------------------------------------
def fit_kernel_model(X, y, solver, loss, kernel, gamma, alpha, radius_tol, max_iter,
                     n_components=None, feature_seed=None):
    """The secret certified model of the planned path: exact kernel or public random features.

    ``solver`` is :attr:`SolverPlan.solver`. The features path draws its
    frequencies from ``(kernel, gamma, n_components, d, feature_seed)`` only
    (:func:`feature_frequencies`): public inputs, never the data or the noise.
    """
    if solver == "exact":
        model, _ = fit_exact_kernel_model(X, y, loss, kernel, gamma, alpha, radius_tol, max_iter)
        return model
    frequencies = feature_frequencies(kernel, gamma, n_components, X.shape[1], feature_seed)
    return fit_random_feature_model(X, y, loss, frequencies, alpha, radius_tol, max_iter)
