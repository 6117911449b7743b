"""Newton's method with one data pass per trial point, to a gradient certificate.

Each pass over the chunks returns the loss, gradient and Hessian sums at one
point ``w`` (:func:`dperm.solvers.loss_sums`), so every trial point of the
line search costs exactly one read of the data and already carries the
Hessian for the next step. With ``d`` in the hundreds and ``n`` in the
millions, the ``d x d`` Hessian is cheap to ship and Newton needs few passes
where L-BFGS would need one per function evaluation.

The result is certified exactly as in memory
(:func:`dperm.solvers.minimize_certified`): the gradient norm at the
returned point, computed over all rows in the pass that evaluated it, is at
most ``tol``, so by ``alpha``-strong convexity ``||w - argmin J|| <= tol / alpha``.
If ``max_passes`` Newton passes leave it above ``tol``, Nesterov's accelerated
gradient finishes the solve, one pass per step, with the step count its theorem
fixes (:func:`dperm.solvers.proven.accelerated_completion`): a distributed fit
that has spent its budget never fails.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from dperm.solvers import SolveResult, regularized_value_and_gradient
from dperm.solvers.proven import accelerated_completion

#: Armijo constant of the backtracking line search.
ARMIJO = 1e-4
#: Relative change of J treated as rounding noise near the optimum.
FLAT = 1e-13


class _Point:
    """``J``, its gradient and Hessian at ``w`` (one data pass)."""

    def __init__(self, w, sums, n_samples, alpha, linear_term):
        loss_sum, grad_sum, hess_sum = sums
        self.w = w
        self.value, self.grad = regularized_value_and_gradient(
            loss_sum, grad_sum, w, n_samples, alpha, linear_term
        )
        self.grad_norm = float(np.linalg.norm(self.grad))
        self.hess = hess_sum / n_samples
        self.hess[np.diag_indices_from(self.hess)] += alpha


def newton_certified(evaluate, n_features, n_samples, alpha, tol, max_passes, linear_term=None,
                     smoothness=None):
    """Minimise ``J(w) = (1/n) sum loss + alpha/2 ||w||^2 + b.w/n`` by damped Newton.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(w) -> (loss_sum, grad_sum, hess_sum)``, one data pass.
    n_features, n_samples : int
    alpha : float
        Total L2 strength (``Lambda`` plus any ``Delta``).
    tol : float
        Target ``||grad J(w)||``.
    max_passes : int
        Bound on data passes (trial points, the start included).
    linear_term : ndarray of shape (d,), optional
        ``b`` (objective perturbation noise).
    smoothness : float, optional
        A bound ``L`` on the Hessian of ``J`` (``c R^2 + alpha`` from public
        constants). Given, the proven completion finishes what the Newton passes
        leave; without it the result may be uncertified (callers that release
        must pass it).

    Returns
    -------
    SolveResult
        ``n_iter`` is the number of data passes.
    """
    point = _Point(np.zeros(n_features), evaluate(np.zeros(n_features)), n_samples, alpha,
                   linear_term)
    passes = 1
    while point.grad_norm > tol and passes < max_passes:
        direction = _newton_direction(point)
        slope = float(point.grad @ direction)
        step = 1.0
        accepted = None
        while passes < max_passes:
            w = point.w + step * direction
            trial = _Point(w, evaluate(w), n_samples, alpha, linear_term)
            passes += 1
            if _acceptable(point, trial, step, slope):
                accepted = trial
                break
            step *= 0.5
        if accepted is None:
            break
        point = accepted
    w, grad_norm = point.w, point.grad_norm
    if grad_norm > tol and smoothness is not None:
        def value_and_gradient(w):
            loss_sum, grad_sum = evaluate(w, with_hessian=False)[:2]
            return regularized_value_and_gradient(loss_sum, grad_sum, w, n_samples, alpha, linear_term)

        w, grad_norm, steps = accelerated_completion(value_and_gradient, w, point.grad, alpha,
                                                     smoothness, tol)
        passes += steps
    return SolveResult(
        coef=w,
        gradient_norm=grad_norm,
        solution_radius=grad_norm / alpha,
        n_iter=passes,
        certified=grad_norm <= tol,
    )


def _newton_direction(point):
    try:
        return -cho_solve(cho_factor(point.hess), point.grad)
    except LinAlgError:  # alpha I keeps H positive definite; guard rounding anyway
        return -np.linalg.lstsq(point.hess, point.grad, rcond=None)[0]


def _acceptable(point, trial, step, slope):
    """Armijo decrease, or (at rounding level in ``J``) a smaller gradient."""
    if not np.isfinite(trial.value):
        return False
    if trial.value <= point.value + ARMIJO * step * slope:
        return True
    flat = trial.value <= point.value + FLAT * max(1.0, abs(point.value))
    return flat and trial.grad_norm < point.grad_norm
