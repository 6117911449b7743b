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
    if grad_norm > tol and objective.loss.twice_differentiable:
        w, grad_norm, steps = _newton_polish(objective, w, grad, tol)
        n_iter += steps
    return SolveResult(
        coef=w,
        gradient_norm=grad_norm,
        solution_radius=grad_norm / objective.alpha,
        n_iter=n_iter,
        certified=grad_norm <= tol,
    )


def _newton_polish(objective, w, grad, tol):
    """Damped Newton steps that accept a step only if the gradient norm drops."""
    grad_norm = float(np.linalg.norm(grad))
    steps = 0
    for _ in range(MAX_NEWTON_STEPS):
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


def hinge_duality_gap(X, y, alpha: float, w, margin_band: float = 1e-6) -> float:
    """A proven upper bound on ``P(w) - min P`` for the L2-regularised hinge SVM.

    Primal ``P(w) = (1/n) sum max(0, 1 - z_i) + alpha/2 ||w||^2``; its dual over
    ``a in [0, 1]^n`` is ``D(a) = (1/n) sum a_i - ||sum a_i y_i x_i||^2 / (2 alpha n^2)``
    and ``P(w) >= min P >= D(a)`` for every feasible ``a`` (weak duality). We take
    ``a_i = 1`` for margins below the band around 1, ``a_i = 0`` above it, and
    fit the ``a_i`` of rows on the margin by bounded least squares so that
    ``sum a_i y_i x_i`` is as close as possible to ``alpha n w`` (the optimality
    condition). Any feasible ``a`` gives a valid bound; this choice makes it tight.
    """
    n = X.shape[0]
    z = y * (X @ w)
    primal = float(np.maximum(0.0, 1.0 - z).mean()) + 0.5 * alpha * float(w @ w)
    dual_weights = (z < 1.0 - margin_band).astype(float)
    on_margin = np.flatnonzero(np.abs(z - 1.0) <= margin_band)
    if on_margin.size:
        signed_rows = X * y[:, None]
        target = alpha * n * w - signed_rows.T @ dual_weights
        fit = lsq_linear(signed_rows[on_margin].T, target, bounds=(0.0, 1.0), method="bvls")
        dual_weights[on_margin] = fit.x
    combination = X.T @ (dual_weights * y)
    dual = float(dual_weights.sum()) / n - float(combination @ combination) / (2.0 * alpha * n * n)
    return max(primal - dual, 0.0)


def solve_hinge_svm(X, y, alpha: float, radius_tol: float, max_iter: int, tol: float = 1e-8):
    """Minimise the hinge SVM objective with liblinear and certify the result.

    scikit-learn's ``LinearSVC(loss="hinge", dual=True)`` minimises
    ``1/2 ||w||^2 + C sum hinge``, which is ``n C`` times ``P`` above when
    ``C = 1 / (alpha n)``. The certificate is the duality gap: strong convexity
    gives ``||w - w*|| <= sqrt(2 gap / alpha)``. The solve is repeated with a
    tighter liblinear tolerance until that radius is at most ``radius_tol``.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    n = X.shape[0]
    radius = math.inf
    w = np.zeros(X.shape[1])
    n_iter = 0
    liblinear_tol = tol
    for _ in range(6):
        svc = LinearSVC(
            loss="hinge", dual=True, C=1.0 / (alpha * n), fit_intercept=False,
            tol=liblinear_tol, max_iter=max_iter,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc.fit(X, y)
        w = svc.coef_.ravel().copy()
        n_iter += int(np.max(svc.n_iter_))
        gap = hinge_duality_gap(X, y, alpha, w)
        radius = math.sqrt(2.0 * gap / alpha)
        if radius <= radius_tol:
            break
        liblinear_tol /= 100.0
    return SolveResult(
        coef=w,
        gradient_norm=alpha * radius,
        solution_radius=radius,
        n_iter=n_iter,
        certified=radius <= radius_tol,
    )
