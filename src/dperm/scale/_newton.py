"""Newton's method with one data pass per trial point, to a gradient certificate.

Each pass over the chunks returns the loss, gradient and Hessian sums at one
point ``w`` (:func:`dperm.solvers.loss_sums`), so every trial point of the
line search costs exactly one read of the data and already carries the
Hessian for the next step. With ``d`` in the hundreds and ``n`` in the
millions, the ``d x d`` Hessian is cheap to ship and Newton needs few passes
where L-BFGS would need one per function evaluation. The Newton loop is
:func:`dperm.solvers.newton.damped_newton`, the in-memory polish's too; this
module is its data provider for chunks.

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

from dperm.solvers import SolveResult, regularized_value_and_gradient
from dperm.solvers.newton import NewtonPoint, armijo_or_flat, cholesky_direction, damped_newton
from dperm.solvers.proven import accelerated_completion


def _point(w, sums, n_samples, alpha, linear_term) -> NewtonPoint:
    """``J``, its gradient and Hessian at ``w`` from one data pass's sums."""
    loss_sum, grad_sum, hess_sum = sums
    value, grad = regularized_value_and_gradient(loss_sum, grad_sum, w, n_samples, alpha, linear_term)
    hess = hess_sum / n_samples
    hess[np.diag_indices_from(hess)] += alpha
    return NewtonPoint(w, value, grad, hess)


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
    def pass_at(w):
        return _point(w, evaluate(w), n_samples, alpha, linear_term)

    # damped Newton (Armijo, Cholesky), one pass per trial point; the start is a pass too
    point, _, trials = damped_newton(pass_at(np.zeros(n_features)), pass_at, tol=tol,
                                     direction=cholesky_direction, accept=armijo_or_flat,
                                     max_evaluations=max_passes - 1)
    passes = 1 + trials
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

