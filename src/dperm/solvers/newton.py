"""Damped Newton to a gradient certificate: the one Newton loop of dperm's certified solvers.

``J`` is ``alpha``-strongly convex, so a point with ``||grad J(w)|| <= tol`` is
within ``tol / alpha`` of the minimiser; :func:`damped_newton` takes Newton
steps ``w + t p`` (``p`` the Newton direction, ``t`` halved until the step is
accepted) until the gradient norm is at most ``tol`` or a budget runs out
(Nesterov 2004, Sec. 4.1.5; Nocedal & Wright 2006, Alg. 3.1 for the
backtracking). The data live behind ``evaluate(w) -> NewtonPoint``:

- in memory (:func:`dperm.solvers.minimize_certified` polishes L-BFGS's answer):
  the gradient at every trial point, the Hessian only where a step starts, a
  step accepted when it lowers the gradient norm (:func:`gradient_decrease`);
- Dask chunks (:func:`dperm.scale.newton_certified`): one data pass per trial
  point gives ``J``, its gradient and its Hessian, a step accepted by Armijo's
  rule (:func:`armijo_or_flat`), the passes counted against ``max_passes``.

What remains when a budget runs out is finished by the proven completion
(:func:`dperm.solvers.proven.accelerated_completion`), which the callers run.

The multiparty Newton protocol (:func:`dperm.multiparty.newton.private_newton`)
is not a caller: every evaluation there is a private secure-sum round, so it
takes a public, fixed number of steps with no line search and no gradient test,
and its step (eigenvalue floor, Nesterov's damping ``1 / (1 + lambda(w))``,
projection onto the ball holding ``w*``) is not of the form ``w + t p``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

__all__ = [ "NewtonPoint", "armijo_or_flat", "cholesky_direction", "damped_newton",
           "gradient_decrease", "solve_direction"]

#: Armijo constant of the backtracking line search.
_ARMIJO = 1e-4
#: Relative change of J treated as rounding noise near the optimum.
_FLAT = 1e-13


class NewtonPoint:
    """``J``, its gradient and Hessian at ``w``.

    Parameters
    ----------
    w, grad : ndarray of shape (d,)
    value : float or None
        ``J(w)``; None where the acceptance rule does not read it.
    hessian : ndarray of shape (d, d) or callable
        The Hessian of ``J`` at ``w``, or a function of no argument computing it
        on first use (the in-memory solver needs it only where a step starts).
    """

    def __init__(self, w, value, grad, hessian):
        self.w = w
        self.value = value
        self.grad = grad
        self.grad_norm = float(np.linalg.norm(grad))
        self._hessian = hessian

    @property
    def hess(self):
        if callable(self._hessian):
            self._hessian = self._hessian()
        return self._hessian


def damped_newton(start: NewtonPoint, evaluate, *, tol: float, direction, accept,
                  max_steps=math.inf, max_evaluations=math.inf, max_halvings=math.inf):
    """Newton steps with step halving from ``start`` until ``||grad J|| <= tol`` or a budget ends.

    Parameters
    ----------
    start : NewtonPoint
    evaluate : callable
        ``evaluate(w) -> NewtonPoint`` (one data pass for distributed rows).
    tol : float
        Target gradient norm (the certificate ``||w - w*|| <= tol / alpha``).
    direction : callable
        ``direction(point) -> p``, the Newton direction ``-H^{-1} g``
        (:func:`solve_direction` or :func:`cholesky_direction`).
    accept : callable
        ``accept(point, trial, step, p) -> bool`` (:func:`gradient_decrease`,
        :func:`armijo_or_flat`).
    max_steps, max_evaluations, max_halvings :
        Budgets: accepted steps, trial evaluations, trial points per step.

    Returns
    -------
    point : NewtonPoint
        The last accepted point (``start`` if none was).
    steps, evaluations : int
        Accepted steps and trial evaluations.

    The loop ends, with the last accepted point, when no trial point of a step
    is accepted within its budget (at rounding level, no step helps).
    """
    point, steps, evaluations = start, 0, 0
    while point.grad_norm > tol and steps < max_steps and evaluations < max_evaluations:
        p = direction(point)
        step, halvings, accepted = 1.0, 0, None
        while evaluations < max_evaluations and halvings < max_halvings:
            trial = evaluate(point.w + step * p)
            evaluations += 1
            if accept(point, trial, step, p):
                accepted = trial
                break
            step *= 0.5
            halvings += 1
        if accepted is None:
            break
        point = accepted
        steps += 1
    return point, steps, evaluations


def solve_direction(point: NewtonPoint):
    """``-H^{-1} g`` by LU (:func:`numpy.linalg.solve`)."""
    return -np.linalg.solve(point.hess, point.grad)


def cholesky_direction(point: NewtonPoint):
    """``-H^{-1} g`` by Cholesky (``H`` is positive definite: ``alpha I`` is in it)."""
    try:
        return -cho_solve(cho_factor(point.hess), point.grad)
    except LinAlgError:  # alpha I keeps H positive definite; guard rounding anyway
        return -np.linalg.lstsq(point.hess, point.grad, rcond=None)[0]


def gradient_decrease(point: NewtonPoint, trial: NewtonPoint, step, p) -> bool:
    """Accept a trial point whose gradient norm is smaller."""
    return trial.grad_norm < point.grad_norm


def armijo_or_flat(point: NewtonPoint, trial: NewtonPoint, step, p) -> bool:
    """Armijo decrease ``J(w + t p) <= J(w) + c t g.p``, or (at rounding level in ``J``) a smaller gradient."""
    if not np.isfinite(trial.value):
        return False
    if trial.value <= point.value + _ARMIJO * step * float(point.grad @ p):
        return True
    flat = trial.value <= point.value + _FLAT * max(1.0, abs(point.value))
    return flat and trial.grad_norm < point.grad_norm
