"""The proven completion: a solve that has spent its budget always certifies.

A fit spends its privacy budget before it solves. If whether it then releases
depended on the solver converging within ``max_iter``, the failure itself would
be a release that depends on the private rows (issue 28: a long row made a
neighbour fail 10 times in 10). So every certified solve of dperm runs its fast
method (L-BFGS and Newton, liblinear, active sets) under ``max_iter`` and, if
that has not certified, finishes with a method whose convergence is a theorem
with constants that are public or bounded by public ones:

- a smooth, ``mu``-strongly convex objective: Nesterov's accelerated gradient
  method (:func:`accelerated_completion`), whose iteration count
  (:func:`accelerated_iterations`) follows from ``mu``, the smoothness ``L`` and
  the starting gradient;
- a box-constrained concave dual of a strongly convex primal (the kernel hinge
  SVM): FISTA (:func:`fista_box_completion`), whose count follows from the box's
  diameter and the dual's smoothness.

Both stop as soon as the usual certificate (gradient norm, duality gap) is met,
so only the duration depends on the data; it is bounded by the theorem's count
at the public constants (``docs/releases.md``, "Solver failures").
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "accelerated_completion",
    "accelerated_iterations",
    "fista_box_completion",
    "fista_box_iterations",
]


def accelerated_iterations(strong_convexity: float, smoothness: float, start_gradient_norm: float,
                           gradient_tol: float) -> int:
    """Iterations after which Nesterov's method proves ``J(x_k) - J* <= gradient_tol^2 / (2 mu)``.

    Nesterov (2018), *Lectures on Convex Optimization*, Thm 2.2.3 with
    ``gamma_0 = mu`` (constant step scheme III): for a ``mu``-strongly convex,
    ``L``-smooth ``J`` started at ``x_0``,

        J(x_k) - J* <= (1 - q)^k (J(x_0) - J* + mu/2 ||x_0 - x*||^2),  q = sqrt(mu / L).

    Strong convexity bounds both terms by ``||g_0||^2 / (2 mu)`` (``g_0`` the
    gradient at ``x_0``), so ``k >= log(2 ||g_0||^2 / t^2) / -log(1 - q)``
    proves the suboptimality ``t^2 / (2 mu)`` that a gradient norm ``t`` would
    (and hence the radius ``||x_k - x*|| <= t / mu``).
    """
    if start_gradient_norm <= gradient_tol:
        return 0
    q = math.sqrt(strong_convexity / smoothness)
    if q >= 1.0:
        return 1  # L = mu: one gradient step of length 1/L lands on the minimiser
    ratio = 2.0 * (start_gradient_norm / gradient_tol) ** 2
    return max(1, math.ceil(math.log(ratio) / -math.log1p(-q)))


def accelerated_completion(value_and_gradient, w0, gradient0, strong_convexity: float,
                           smoothness: float, gradient_tol: float, norm=np.linalg.norm):
    """Nesterov's accelerated gradient from ``w0`` until it proves the gradient-norm certificate.

    Constant step scheme III (Nesterov 2018, Sec. 2.2.1):
    ``x_{k+1} = y_k - grad J(y_k) / L``,
    ``y_{k+1} = x_{k+1} + (1 - q)/(1 + q) (x_{k+1} - x_k)``, ``y_0 = x_0 = w0``.
    It stops at the first ``y_k`` with ``||grad J(y_k)|| <= gradient_tol`` or
    after :func:`accelerated_iterations` steps, where Thm 2.2.3 proves
    ``J(x_K) - J* <= gradient_tol^2 / (2 mu)``.

    Parameters
    ----------
    value_and_gradient : callable
        ``w -> (J(w), grad J(w))``.
    w0, gradient0 : ndarray
        The start and its gradient.
    strong_convexity, smoothness : float
        ``mu`` and a bound ``L >= mu`` on the largest Hessian eigenvalue.
    gradient_tol : float
    norm : callable, default=numpy.linalg.norm
        The norm of the space ``J`` lives in (e.g. an RKHS norm ``sqrt(g^T K g)``
        when ``w`` holds a function's coefficients and the gradient is given
        by its coefficients too).

    Returns
    -------
    w : ndarray
    certificate : float
        A gradient norm equivalent of the proof: ``||grad J(w)||`` when the
        gradient certified, else ``gradient_tol`` (the theorem's suboptimality
        ``<= certificate^2 / (2 mu)`` and radius ``<= certificate / mu``).
    n_iter : int
    """
    gradient0_norm = float(norm(gradient0))
    n_steps = accelerated_iterations(strong_convexity, smoothness, gradient0_norm, gradient_tol)
    q = math.sqrt(min(strong_convexity / smoothness, 1.0))
    momentum = (1.0 - q) / (1.0 + q)
    x = y = np.array(w0, dtype=float)
    gradient = np.asarray(gradient0, dtype=float)
    for step in range(1, n_steps + 1):
        x_next = y - gradient / smoothness
        y = x_next + momentum * (x_next - x)
        x = x_next
        gradient = value_and_gradient(y)[1]
        gradient_norm = float(norm(gradient))
        if gradient_norm <= gradient_tol:
            return y, gradient_norm, step
    return x, gradient_tol, n_steps


def fista_box_iterations(smoothness: float, squared_diameter: float, suboptimality: float) -> int:
    """FISTA steps after which ``g(a_k) - g* <= suboptimality`` on a box (Beck & Teboulle 2009, Thm 4.4).

    ``g(a_k) - g* <= 2 L ||a_0 - a*||^2 / (k + 1)^2`` for a convex ``L``-smooth
    ``g`` minimised by projected FISTA with step ``1/L``; the box bounds
    ``||a_0 - a*||^2`` by its squared diameter.
    """
    return max(1, math.ceil(math.sqrt(2.0 * smoothness * squared_diameter / suboptimality)) - 1)


def fista_box_completion(Q: np.ndarray, linear: float, a0: np.ndarray, smoothness: float,
                         suboptimality: float, certified):
    """Minimise ``g(a) = a^T Q a / 2 - linear * sum(a)`` over ``[0, 1]^m`` by FISTA until proven.

    Projected FISTA (Beck & Teboulle 2009, Alg. 2 with the box's projection)
    from ``a0``; stops at the first iterate for which ``certified(a)`` holds
    (the caller's duality-gap check) or after :func:`fista_box_iterations`
    steps, where Thm 4.4 proves ``g(a_K) - g* <= suboptimality``.

    Returns
    -------
    a : ndarray
    proven : bool
        Whether the theorem's count was reached (else ``certified(a)`` held).
    n_iter : int
    """
    m = a0.shape[0]
    n_steps = fista_box_iterations(smoothness, float(m), suboptimality)
    a_prev = a = np.clip(np.asarray(a0, dtype=float), 0.0, 1.0)
    y, t = a.copy(), 1.0
    for step in range(1, n_steps + 1):
        a = np.clip(y - (Q @ y - linear) / smoothness, 0.0, 1.0)
        if certified(a):
            return a, False, step
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        y = a + ((t - 1.0) / t_next) * (a - a_prev)
        a_prev, t = a, t_next
    return a, True, n_steps
