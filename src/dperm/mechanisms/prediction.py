"""Private prediction: answer each query ``x`` with ``f_z(x) + b``, fresh Laplace ``b`` (000 Lemma 1).

What the scalar-shift mechanism of Nie & Wang protects (shared papers note 6)
-----------------------------------------------------------------------------
000 eq. 2 and 002 eq. 2 add *one scalar* ``b`` to the whole function ``f_z``.
Since ``|f_z(x) - f_zbar(x)| <= B_Delta`` for every ``x`` and every pair of
neighbouring data sets (000 Prop. 1: ``||f_z - f_zbar||_inf <= kappa
||f_z - f_zbar||_K``), *one released value* ``f_z(x) + b`` with ``b`` Laplace
of scale ``B_Delta / epsilon`` is ``epsilon``-DP (000 Lemma 1). Releasing the
function ``f_z + b`` is **not** DP: ``f_z - f_zbar`` is not a constant, so
two answers at different ``x`` with the same ``b`` reveal the difference
``f_z(x1) - f_z(x2)`` exactly. This module therefore implements the scalar
mechanism as a *private prediction* mechanism: the exact model stays secret,
every answered query draws fresh noise and costs ``epsilon`` by sequential
composition. Answering the same query twice costs twice. To release a model
instead, use vector noise in a finite-dimensional parameter space
(:func:`dperm.mechanisms.output_perturbation`, or random Fourier features,
:class:`dperm.PrivateKernelSVC`).

The noise scale (shared papers note 5)
--------------------------------------
000 Thm 2 bounds the RKHS distance of the neighbouring minimisers by
``2 kappa C_L / (lambda gamma m)``, so the answers have sensitivity

    B_Delta = 2 kappa^2 C_L / (lambda gamma m)          (000 Prop. 1, proof)

and 000 Lemma 1 needs ``b`` with density ``~ exp(-epsilon |b| / B_Delta)``:
Laplace of scale ``B_Delta / epsilon``. The densities printed in 000 Prop. 1
and Sec. 5.1-5.2 have half that scale; dperm follows note 5. Here
``kappa^2 = sup_x K(x, x) = 1`` for the Gaussian (``"rbf"``) and Laplacian
kernels, ``gamma = 2`` for ``Omega(f) = ||f||_K^2`` and ``lambda = alpha / 2``
(note 7: dperm regularises with ``alpha/2 ||f||_K^2``). ``C_L`` is 1 for the
hinge loss (000 Sec. 5.2) and 000 Sec. 5.1's constant for least squares with
``|y| <= M`` (:func:`dperm.privacy.sensitivity.least_squares_lipschitz`);
for least squares the answer is projected onto ``[-M, M]`` first (002 eq. 2),
which only shrinks differences.

The exact minimiser
-------------------
The bound is for the exact minimiser (note 8). Least squares has one in
closed form (kernel ridge regression via the representer theorem); the hinge
SVM is solved in its dual and certified by the duality gap. Both certify a
radius ``r`` in the RKHS around the exact minimiser, fixed in advance as a
small fraction of ``B_Delta / kappa``, and the noise is calibrated to
``B_Delta + 2 kappa r``; if the solve misses ``r``, nothing is fitted
(:class:`~dperm.exceptions.CertificateError`).

Noise: each answer is rounded to a grid and gets exact discrete Laplace noise
(:func:`prediction_noise_calibration`, :mod:`dperm.mechanisms.noise`), so no
answer can be ruled out under a neighbouring data set by its low-order bits
(Mironov 2012).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel

from dperm.exceptions import CertificateError
from dperm.kernels import KERNELS
from dperm.losses import HingeLoss, SquaredLoss
from dperm.mechanisms.noise import GridCalibration, discrete_laplace_calibration, release_on_grid
from dperm.mechanisms.output import NONSMOOTH_RADIUS_FRACTION
from dperm.mechanisms.prediction_solvers import query_block_rows
from dperm.privacy.sensitivity import SQUARED_NORM_GAMMA, lambda_from_alpha, lipschitz_loss_sensitivity
from dperm.validation import check_epsilon, check_positive, check_positive_int

__all__ = [
    "CLOSED_FORM_RADIUS_FRACTION",
    "KERNEL_KAPPA",
    "PREDICTION_LOSSES",
    "ExactKernelModel",
    "KernelSolve",
    "answer_queries",
    "calibrated_prediction_sensitivity",
    "fit_exact_kernel_model",
    "kernel_hinge_duality_gap",
    "kernel_least_squares_radius",
    "kernel_matrix",
    "prediction_loss",
    "prediction_noise_calibration",
    "prediction_sensitivity",
    "solution_radius_allowance",
    "solve_kernel_hinge",
    "solve_kernel_least_squares",
]

#: ``kappa = sup_x sqrt(K(x, x))``: ``exp(0) = 1`` for both kernels of
#: :data:`dperm.kernels.KERNELS`, whatever the data, so no clipping of X is needed.
KERNEL_KAPPA = 1.0
#: Losses the prediction mechanism supports (000 Sec. 5.1 and 5.2).
PREDICTION_LOSSES = ("squared", "hinge")
#: The closed-form least-squares solve is exact up to rounding; the public
#: allowance for that rounding is this fraction of ``B_Delta / kappa``.
CLOSED_FORM_RADIUS_FRACTION = 1e-6
#: Active-set Newton steps tried after L-BFGS-B on the hinge dual.
MAX_ACTIVE_SET_STEPS = 30

_KERNEL_FUNCTIONS = {"rbf": rbf_kernel, "laplacian": laplacian_kernel}


# ---------------------------------------------------------------------------
# Calibration: pure functions, each citing its formula
# ---------------------------------------------------------------------------
def prediction_loss(name: str, y_bound: float | None = None):
    """The dperm loss object behind ``loss=name``: :class:`SquaredLoss` (``|y| <= y_bound``) or :class:`HingeLoss`."""
    if name == "squared":
        return SquaredLoss(y_bound)
    if name == "hinge":
        return HingeLoss()
    raise ValueError(f"loss must be one of {PREDICTION_LOSSES}; got {name!r}.")


def prediction_sensitivity(
    kappa: float, C_L: float, lam: float, m: int, gamma: float = SQUARED_NORM_GAMMA
) -> float:
    """``B_Delta = 2 kappa^2 C_L / (lambda gamma m)``: sensitivity of one answer ``f_z(x)`` (000 Prop. 1).

    ``|f_z(x) - f_zbar(x)| <= kappa ||f_z - f_zbar||_K`` (reproducing property)
    and ``||f_z - f_zbar||_K <= 2 kappa C_L / (lambda gamma m)`` (000 Thm 2,
    :func:`dperm.privacy.sensitivity.lipschitz_loss_sensitivity`).

    Parameters
    ----------
    kappa : float
        ``sup_x sqrt(K(x, x))`` (1 for the Gaussian kernel).
    C_L : float
        Lipschitz constant of the loss in the prediction (000 Sec. 5).
    lam : float
        Nie & Wang's ``lambda`` (dperm: ``alpha / 2``, note 7).
    m : int
        Number of training records.
    gamma : float, default=2
        Strong-convexity modulus of ``Omega(f) = ||f||_K^2``.

    Returns
    -------
    float
        ``B_Delta``.
    """
    kappa = check_positive(kappa, "kappa")
    return kappa * lipschitz_loss_sensitivity(kappa, C_L, lam, m, gamma)


def solution_radius_allowance(loss_name: str, sensitivity: float, kappa: float) -> float:
    """The RKHS radius ``r`` around the exact minimiser that the solve must certify.

    A fraction of the RKHS sensitivity ``B_Delta / kappa`` fixed before the data
    is solved: :data:`CLOSED_FORM_RADIUS_FRACTION` for least squares (closed
    form), :data:`dperm.mechanisms.output.NONSMOOTH_RADIUS_FRACTION` for the
    hinge (duality gap), the allowance dperm's output perturbation uses.
    """
    fraction = CLOSED_FORM_RADIUS_FRACTION if loss_name == "squared" else NONSMOOTH_RADIUS_FRACTION
    return fraction * sensitivity / kappa


def calibrated_prediction_sensitivity(sensitivity: float, kappa: float, radius: float) -> float:
    """``B_Delta + 2 kappa r``: sensitivity of answers computed from certified approximate minimisers.

    Each fitted function is within ``r`` (RKHS norm) of the exact one, so its
    values are within ``kappa r`` of the exact values (reproducing property);
    the triangle inequality adds that on both neighbouring sides (note 8).
    """
    return sensitivity + 2.0 * kappa * radius


def prediction_noise_calibration(sensitivity: float, epsilon: float) -> GridCalibration:
    """Grid and discrete Laplace scale of one answer (000 Lemma 1, made float-safe).

    000 Lemma 1 needs noise with density ``~ exp(-epsilon |b| / B)`` (note 5).
    dperm rounds the answer to a power-of-two grid ``g`` and adds exact
    discrete Laplace noise of scale ``k / epsilon`` steps, where ``k = ceil(B / g)``
    bounds how far two neighbouring answers can be apart on the grid
    (:func:`dperm.mechanisms.noise.discrete_laplace_calibration` with one
    dimension); each answer is then exactly ``epsilon``-DP, and the noise scale
    ``g k / epsilon`` exceeds ``B / epsilon`` by less than ``g / B <= 1/1024``.
    """
    return discrete_laplace_calibration(
        check_positive(sensitivity, "sensitivity"), 1, check_epsilon(epsilon, "epsilon_per_query")
    )


def answer_queries(values: np.ndarray, calibration: GridCalibration, rng: np.random.Generator) -> np.ndarray:
    """``f_z(x_j) + b_j`` on the grid, fresh exact noise per answer: each answer is ``epsilon``-DP on its own."""
    return release_on_grid(np.asarray(values, dtype=np.float64), calibration, rng)


# ---------------------------------------------------------------------------
# Kernels and exact minimisers
# ---------------------------------------------------------------------------
def kernel_matrix(kernel: str, A: np.ndarray, B: np.ndarray, gamma: float) -> np.ndarray:
    """``K(a_i, b_j)``: ``"rbf"`` is ``exp(-gamma ||a - b||_2^2)``, ``"laplacian"`` ``exp(-gamma ||a - b||_1)``.

    The conventions of :mod:`dperm.kernels` (003 eq. 98 for the Gaussian).
    """
    try:
        function = _KERNEL_FUNCTIONS[kernel]
    except (KeyError, TypeError):
        raise ValueError(f"kernel must be one of {KERNELS}; got {kernel!r}.") from None
    return function(A, B, gamma=gamma)


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


def kernel_least_squares_radius(K: np.ndarray, y: np.ndarray, alpha: float, coef: np.ndarray) -> float:
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
    (note 7). With ``f = sum_i c_i K(x_i, .)`` the optimality condition is
    ``K (K c - y) + lambda m K c = 0``, solved by ``c = (K + lambda m I)^(-1) y``
    (kernel ridge regression; scikit-learn's ``KernelRidge(alpha=lambda m)``).
    ``K + lambda m I`` has eigenvalues ``>= lambda m``, so its Cholesky factor
    exists and the solve is well conditioned.
    """
    m = y.shape[0]
    lam = lambda_from_alpha(alpha)
    system = K + lam * m * np.eye(m)
    coef = cho_solve(cho_factor(system, lower=True), y)
    radius = kernel_least_squares_radius(K, y, alpha, coef)
    return KernelSolve(coef=coef, solution_radius=radius, certified=radius <= radius_tol, n_iter=0)


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
    Q = (y[:, None] * y[None, :]) * K
    linear = alpha * m
    best = _box_qp_lbfgs(Q, linear, max_iter)
    best_gap, _ = kernel_hinge_duality_gap(K, y, alpha, best)
    n_iter = 1
    for _ in range(MAX_ACTIVE_SET_STEPS):
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
    _, coef = kernel_hinge_duality_gap(K, y, alpha, best)
    radius = _gap_radius(best_gap, alpha)
    return KernelSolve(coef=coef, solution_radius=radius, certified=radius <= radius_tol, n_iter=n_iter)


class ExactKernelModel:
    """The exact (certified) kernel minimiser ``f_z``: **secret**, never to be released.

    It holds the training rows and the representer coefficients. Only
    :func:`answer_queries` applied to its :meth:`values` may leave the
    data holder, one answer at a time and at ``epsilon`` each (note 6).

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
        block = query_block_rows(self._coef.shape[0])
        values = np.empty(X.shape[0])
        for start in range(0, X.shape[0], block):
            rows = slice(start, start + block)
            values[rows] = kernel_matrix(self._kernel, X[rows], self._training_rows, self._gamma) @ self._coef
        if self._y_bound is not None:
            values = np.clip(values, -self._y_bound, self._y_bound)
        return values

    def __repr__(self) -> str:  # never print the secret arrays
        return f"ExactKernelModel(kernel={self._kernel!r}, m={self._coef.shape[0]}, <secret>)"


def fit_exact_kernel_model(X, y, loss_name, kernel, gamma, alpha, radius_tol, max_iter, y_bound=None):
    """Solve the kernel ERM of ``loss_name`` exactly enough and return the secret model and its solve.

    Parameters
    ----------
    X : ndarray of shape (m, d)
    y : ndarray of shape (m,)
        Labels in ``[-y_bound, y_bound]`` (squared) or in {-1, +1} (hinge).
    loss_name : {"squared", "hinge"}
    kernel, gamma
        See :func:`kernel_matrix`.
    alpha : float
        dperm's regularisation strength (``lambda = alpha / 2``).
    radius_tol : float
        The RKHS radius the solve must certify (:func:`solution_radius_allowance`).
    max_iter : int
    y_bound : float or None
        ``M`` for least squares (projection of the values).

    Raises
    ------
    CertificateError
        If the solve cannot certify ``radius_tol``: nothing is fitted.
    """
    K = kernel_matrix(kernel, X, X, gamma)
    if loss_name == "squared":
        solve = solve_kernel_least_squares(K, y, alpha, radius_tol)
    else:
        solve = solve_kernel_hinge(K, y, alpha, radius_tol, check_positive_int(max_iter, "max_iter"))
    if not solve.certified:
        raise CertificateError(
            f"private prediction: the {loss_name} solve did not certify the RKHS radius "
            f"{radius_tol:.3g} the noise is calibrated for, so nothing is fitted. Increase "
            "max_iter or alpha."
        )
    model = ExactKernelModel(X, solve.coef, kernel, gamma, y_bound if loss_name == "squared" else None)
    return model, solve


# ---------------------------------------------------------------------------
# The record
# ---------------------------------------------------------------------------
