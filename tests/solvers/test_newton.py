"""The one damped Newton loop (issue 29): its certificate, its budgets, its two acceptance rules.

The in-memory polish (:func:`dperm.solvers.minimize_certified`) and the Dask
solver (:func:`dperm.scale.newton_certified`) both run
:func:`dperm.solvers.newton.damped_newton` with their own data provider; the
replay (``scripts/replay.py``) checks that moving them onto it changed no byte.
"""

import numpy as np
import pytest

from dperm.losses import LogisticLoss
from dperm.solvers import RegularizedERMObjective, loss_sums, minimize_certified
from dperm.solvers.newton import (
    NewtonPoint,
    armijo_or_flat,
    cholesky_direction,
    damped_newton,
    gradient_decrease,
    solve_direction,
)


def _objective(seed=0, n=400, d=4, alpha=1e-2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return RegularizedERMObjective(LogisticLoss(), X, y, alpha, linear_term=rng.normal(size=d))


def _provider(objective, calls):
    def evaluate(w):
        calls.append(w)
        value, grad = objective.value_and_gradient(w)
        return NewtonPoint(w, value, grad, objective.hessian(w))

    return evaluate


@pytest.mark.parametrize("direction, accept", [(solve_direction, gradient_decrease),
                                               (cholesky_direction, armijo_or_flat)])
def test_reaches_the_tolerance_and_the_certificate_holds(direction, accept):
    objective = _objective()
    exact = minimize_certified(objective, tol=1e-13, max_iter=1000).coef
    calls = []
    evaluate = _provider(objective, calls)
    start = evaluate(np.full(4, 3.0))  # far from the minimiser: the line search must damp
    point, steps, evaluations = damped_newton(start, evaluate, tol=1e-9, direction=direction,
                                              accept=accept, max_halvings=60)
    assert point.grad_norm <= 1e-9 < start.grad_norm
    assert np.linalg.norm(point.w - exact) <= 1e-9 / objective.alpha  # strong convexity's certificate
    assert evaluations == len(calls) - 1 and 1 <= steps <= evaluations


def test_one_step_solves_a_quadratic():
    """On ``J = 1/2 w.A w - c.w`` the full Newton step lands on ``A^{-1} c``: one step, one trial."""
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    c = np.array([1.0, -1.0])

    def evaluate(w):
        return NewtonPoint(w, 0.5 * w @ A @ w - c @ w, A @ w - c, A)

    point, steps, evaluations = damped_newton(evaluate(np.array([5.0, -7.0])), evaluate, tol=1e-12,
                                              direction=cholesky_direction, accept=armijo_or_flat,
                                              max_halvings=60)
    assert (steps, evaluations) == (1, 1)
    np.testing.assert_allclose(point.w, np.linalg.solve(A, c), rtol=0, atol=1e-14)


def test_budgets_bound_the_work():
    objective = _objective(seed=1)
    calls = []
    evaluate = _provider(objective, calls)
    start = evaluate(np.full(4, 3.0))
    kwargs = dict(tol=0.0, direction=solve_direction, accept=gradient_decrease, max_halvings=60)
    _, _, evaluations = damped_newton(start, evaluate, max_evaluations=2, **kwargs)
    assert evaluations == 2 == len(calls) - 1
    _, steps, _ = damped_newton(start, evaluate, max_steps=1, **kwargs)
    assert steps == 1
    # the evaluation budget also ends a step's halvings
    _, steps, evaluations = damped_newton(start, evaluate, tol=0.0, direction=solve_direction,
                                          accept=lambda *_: False, max_evaluations=3, max_halvings=10)
    assert (steps, evaluations) == (0, 3)


def test_a_step_nothing_accepts_ends_the_loop_at_the_last_accepted_point():
    objective = _objective(seed=2)
    calls = []
    evaluate = _provider(objective, calls)
    start = evaluate(np.zeros(4))
    halvings = []
    point, steps, evaluations = damped_newton(
        start, evaluate, tol=1e-12, direction=solve_direction, max_halvings=5,
        accept=lambda point, trial, step, p: halvings.append(step) and False)
    assert point is start and steps == 0 and evaluations == 5
    assert halvings == [1.0, 0.5, 0.25, 0.125, 0.0625]


def test_the_hessian_is_formed_only_where_a_step_starts():
    objective = _objective(seed=3)
    formed = []

    def evaluate(w):
        value, grad = objective.value_and_gradient(w)
        return NewtonPoint(w, value, grad, lambda: formed.append(1) or objective.hessian(w))

    _, steps, evaluations = damped_newton(evaluate(np.full(4, 3.0)), evaluate, tol=1e-9,
                                          direction=solve_direction, accept=gradient_decrease,
                                          max_halvings=60)
    assert len(formed) == steps < evaluations + 1  # the final point's Hessian is never needed
    point = evaluate(np.zeros(4))
    assert point.hess is point.hess and len(formed) == steps + 1  # formed once, then kept


def test_armijo_rule():
    w, g = np.zeros(2), np.array([1.0, 0.0])
    point = NewtonPoint(w, 1.0, g, np.eye(2))
    p = -g
    below = NewtonPoint(w, 1.0 - 1e-3, g, None)  # decrease 1e-3 > 1e-4 * |g.p|
    barely = NewtonPoint(w, 1.0 - 1e-5, 2 * g, None)  # too small a decrease, larger gradient
    flat = NewtonPoint(w, 1.0 + 1e-14, 0.5 * g, None)  # rounding level in J, smaller gradient
    assert armijo_or_flat(point, below, 1.0, p)
    assert not armijo_or_flat(point, barely, 1.0, p)
    assert armijo_or_flat(point, flat, 1.0, p)
    assert not armijo_or_flat(point, NewtonPoint(w, np.nan, 0.5 * g, None), 1.0, p)
    assert not gradient_decrease(point, barely, 1.0, p) and gradient_decrease(point, flat, 1.0, p)


def test_the_dask_provider_and_the_in_memory_solver_agree():
    """Both callers of the loop certify the same minimiser (chunks here: one in-memory pass)."""
    from dperm.scale import newton_certified

    objective = _objective(seed=4)
    loss, X, y, b = objective.loss, objective.X, objective.y, objective.linear_term
    chunked = newton_certified(lambda w, with_hessian=True: loss_sums(loss, X, y, w, with_hessian),
                               4, X.shape[0], objective.alpha, 1e-10, 50, linear_term=b)
    memory = minimize_certified(objective, tol=1e-10, max_iter=1000)
    assert chunked.certified and memory.certified
    assert np.linalg.norm(chunked.coef - memory.coef) <= 2e-10 / objective.alpha
