"""The (perturbed) regularised ERM objective and its certified minimisation.

The objective is, with ``n`` rows, margins ``z_i = y_i w.x_i`` and a fixed
linear term ``b`` (the objective-perturbation noise, zero otherwise),

    J(w) = (1/n) sum_i loss(z_i) + (alpha / 2) ||w||^2 + (1/n) b.w,

003 eq. 9 plus the ``Delta/2 ||w||^2`` of Alg. 2 folded into ``alpha``.

Objective perturbation's proof assumes the exact minimiser (shared papers
note 8). ``minimize_certified`` therefore solves to a gradient-norm tolerance
and returns the final ``||grad J(w)||`` as a certificate: since ``J`` is
``alpha``-strongly convex, ``||w - w*|| <= ||grad J(w)|| / alpha``.
The hinge loss has no gradient; ``solve_hinge_svm`` certifies with a duality gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear, minimize

from dperm.losses import MarginLoss

#: Newton steps tried after L-BFGS when its answer misses the gradient tolerance.
MAX_NEWTON_STEPS = 20
#: Step halvings in the Newton line search before giving up.
MAX_STEP_HALVINGS = 30


@dataclass(frozen=True)
class SolveResult:
    """A minimiser and its optimality certificate.

    Attributes
    ----------
    coef : ndarray of shape (d,)
    gradient_norm : float
        ``||grad J(coef)||_2`` (for the hinge loss: ``sqrt(2 alpha gap)``, the
        gradient norm that would give the same distance bound).
    solution_radius : float
        A proven bound on ``||coef - argmin J||``.
    n_iter : int
        Solver iterations (L-BFGS plus Newton polishing steps).
    certified : bool
        Whether the requested tolerance was met.
    """

    coef: np.ndarray
    gradient_norm: float
    solution_radius: float
    n_iter: int
    certified: bool


class RegularizedMarginObjective:
    """Value, gradient and Hessian of ``J`` above, for scipy.

    Parameters
    ----------
    loss : MarginLoss
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,) with values in {-1, +1}
    alpha : float
        Total L2 strength (the papers' ``Lambda``, plus ``Delta`` if any).
    linear_term : ndarray of shape (d,), optional
        The vector ``b``; enters as ``b.w / n`` (003 eq. 9).
    """

    def __init__(self, loss: MarginLoss, X, y, alpha: float, linear_term=None):
        self.loss = loss
        self.X = X
        self.y = y
        self.alpha = float(alpha)
        self.n_samples = X.shape[0]
        self.linear_term = None if linear_term is None else np.asarray(linear_term, dtype=float)

    def _margins(self, w):
        return self.y * (self.X @ w)

    def value_and_gradient(self, w):
        z = self._margins(w)
        n = self.n_samples
        value = float(self.loss.value(z).sum()) / n + 0.5 * self.alpha * float(w @ w)
        grad = self.X.T @ (self.y * self.loss.derivative(z)) / n + self.alpha * w
        if self.linear_term is not None:
            value += float(self.linear_term @ w) / n
            grad = grad + self.linear_term / n
        return value, grad

    def gradient(self, w):
        return self.value_and_gradient(w)[1]

    def hessian(self, w):
        curvature = self.loss.second_derivative(self._margins(w)) / self.n_samples
        hess = (self.X.T * curvature) @ self.X
        hess[np.diag_indices_from(hess)] += self.alpha
        return hess


def minimize_certified(objective: RegularizedMarginObjective, tol: float, max_iter: int, w0=None):
    """Minimise a smooth strongly convex ``J`` until ``||grad J|| <= tol``.

    L-BFGS (scipy) does the bulk of the work; its stopping rule on the
    relative change of ``J`` fires near machine precision before tight
    gradient tolerances are met, so for twice-differentiable losses a few
    Newton steps polish the answer (quadratic convergence near the optimum).

    ``max_iter`` bounds L-BFGS iterations and Newton steps together.

    Returns
    -------
    SolveResult
    """
    d = objective.X.shape[1]
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=float)
    result = minimize(
        objective.value_and_gradient,
        w,
        jac=True,
        method="L-BFGS-B",
        # gtol bounds the max-abs gradient entry; tol / sqrt(d) implies an L2 norm <= tol.
        options={"maxiter": max_iter, "gtol": tol / math.sqrt(d), "ftol": 1e-15, "maxcor": 20},
    )
    w = result.x
    n_iter = int(result.nit)
    grad = objective.gradient(w)
    grad_norm = float(np.linalg.norm(grad))
    newton_budget = min(MAX_NEWTON_STEPS, max_iter - n_iter)
    if grad_norm > tol and objective.loss.twice_differentiable and newton_budget > 0:
        w, grad_norm, steps = _newton_polish(objective, w, grad, tol, newton_budget)
        n_iter += steps
    return SolveResult(
        coef=w,
        gradient_norm=grad_norm,
        solution_radius=grad_norm / objective.alpha,
        n_iter=n_iter,
        certified=grad_norm <= tol,
    )


def _newton_polish(objective, w, grad, tol, max_steps):
    """Damped Newton steps that accept a step only if the gradient norm drops."""
    grad_norm = float(np.linalg.norm(grad))
    steps = 0
    for _ in range(max_steps):
        if grad_norm <= tol:
            break
        direction = -np.linalg.solve(objective.hessian(w), grad)
        step = 1.0
        for _ in range(MAX_STEP_HALVINGS):
            candidate = w + step * direction
            candidate_grad = objective.gradient(candidate)
            candidate_norm = float(np.linalg.norm(candidate_grad))
            if candidate_norm < grad_norm:
                break
            step *= 0.5
        else:
            break  # no step reduces the gradient: we are at rounding level
        w, grad, grad_norm = candidate, candidate_grad, candidate_norm
        steps += 1
    return w, grad_norm, steps


#: Widths of the band of margins around 1 whose dual weights are fitted.
MARGIN_BANDS = (1e-8, 1e-6, 1e-4, 1e-3, 1e-2)
#: Rows on the margin above which a band is skipped (bounded least squares cost).
MAX_MARGIN_ROWS = 5000


def hinge_duality_gap(X, y, alpha: float, w) -> float:
    """A proven upper bound on ``P(w) - min P`` for the L2-regularised hinge SVM.

    Primal ``P(w) = (1/n) sum max(0, 1 - z_i) + alpha/2 ||w||^2``; its dual over
    ``a in [0, 1]^n`` is ``D(a) = (1/n) sum a_i - ||sum a_i y_i x_i||^2 / (2 alpha n^2)``
    and ``P(w) >= min P >= D(a)`` for every feasible ``a`` (weak duality). For each
    band width in ``MARGIN_BANDS`` we take ``a_i = 1`` for margins below the band
    around 1, ``a_i = 0`` above it, and fit the ``a_i`` inside the band by bounded
    least squares so that ``sum a_i y_i x_i`` is as close as possible to
    ``alpha n w`` (the optimality condition). Every such ``a`` is feasible, so
    the smallest gap over the bands is a valid bound; the fit makes it tight.
    """
    n = X.shape[0]
    z = y * (X @ w)
    primal = float(np.maximum(0.0, 1.0 - z).mean()) + 0.5 * alpha * float(w @ w)
    signed_rows = X * y[:, None]
    best = math.inf
    for band in MARGIN_BANDS:
        dual_weights = (z < 1.0 - band).astype(float)
        on_margin = np.flatnonzero(np.abs(z - 1.0) <= band)
        if on_margin.size > MAX_MARGIN_ROWS:
            continue
        if on_margin.size:
            target = alpha * n * w - signed_rows.T @ dual_weights
            fit = lsq_linear(signed_rows[on_margin].T, target, bounds=(0.0, 1.0), method="bvls")
            dual_weights[on_margin] = fit.x
        combination = signed_rows.T @ dual_weights
        dual = float(dual_weights.sum()) / n - float(combination @ combination) / (2.0 * alpha * n * n)
        best = min(best, primal - dual)
    return max(best, 0.0)


#: liblinear tolerances tried in turn until the duality gap certifies the solve.
LIBLINEAR_TOLS = (1e-8, 1e-10, 1e-6)


def solve_hinge_svm(X, y, alpha: float, radius_tol: float, max_iter: int):
    """Minimise the hinge SVM objective ``P`` and certify ``||w - argmin P|| <= radius_tol``.

    First liblinear: scikit-learn's ``LinearSVC(loss="hinge", dual=True)``
    minimises ``1/2 ||w||^2 + C sum hinge``, which is ``n C`` times ``P`` when
    ``C = 1 / (alpha n)``; the certificate is the duality gap
    (:func:`hinge_duality_gap`), and strong convexity gives
    ``||w - w*|| <= sqrt(2 gap / alpha)``. If no liblinear tolerance certifies
    the radius (degenerate data), fall back to :func:`_solve_hinge_by_smoothing`.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    n = X.shape[0]
    best = None
    n_iter = 0
    for liblinear_tol in LIBLINEAR_TOLS:
        svc = LinearSVC(
            loss="hinge", dual=True, C=1.0 / (alpha * n), fit_intercept=False,
            tol=liblinear_tol, max_iter=max_iter,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc.fit(X, y)
        n_iter += int(np.max(svc.n_iter_))
        w = svc.coef_.ravel().copy()
        radius = math.sqrt(2.0 * hinge_duality_gap(X, y, alpha, w) / alpha)
        if best is None or radius < best[1]:
            best = (w, radius)
        if radius <= radius_tol:
            break
    if best[1] > radius_tol:
        smoothed = _solve_hinge_by_smoothing(X, y, alpha, radius_tol, max_iter)
        n_iter += smoothed.n_iter
        if smoothed.solution_radius < best[1]:
            best = (smoothed.coef, smoothed.solution_radius)
    w, radius = best
    return SolveResult(
        coef=w,
        gradient_norm=alpha * radius,
        solution_radius=radius,
        n_iter=n_iter,
        certified=radius <= radius_tol,
    )


def _solve_hinge_by_smoothing(X, y, alpha, radius_tol, max_iter):
    """Certify a hinge minimiser through the Huber loss of a small width ``h``.

    ``0 <= huber_h(z) - hinge(z) <= h/4`` for every ``z`` (003 eqs. 37, 41), so
    for the Huber objective ``P_h``: ``P(w) - min P <= P_h(w) - min P_h + h/4
    <= ||grad P_h(w)||^2 / (2 alpha) + h/4``. With ``h = alpha r^2`` and
    ``||grad P_h|| <= alpha r / sqrt(2)`` that is ``alpha r^2 / 2``, i.e.
    ``||w - w*|| <= r``. The duality gap of the same ``w`` is also checked and
    the smaller bound kept.
    """
    from dperm.losses import HuberLoss

    h = alpha * radius_tol**2
    objective = RegularizedMarginObjective(HuberLoss(h), X, y, alpha)
    solve = minimize_certified(objective, tol=alpha * radius_tol / math.sqrt(2.0), max_iter=max_iter)
    smoothing_gap = solve.gradient_norm**2 / (2.0 * alpha) + h / 4.0
    gap = min(smoothing_gap, hinge_duality_gap(X, y, alpha, solve.coef))
    radius = math.sqrt(2.0 * gap / alpha)
    return SolveResult(solve.coef, alpha * radius, radius, solve.n_iter, radius <= radius_tol)
