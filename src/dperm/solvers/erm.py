"""The (perturbed) regularised ERM objective and its certified minimisation.

The objective is, with ``n`` rows, loss arguments ``t_i`` (margins
``z_i = y_i w.x_i`` or residuals ``r_i = y_i - w.x_i``, see :mod:`dperm.losses`)
and a fixed linear term ``b`` (the objective-perturbation noise, zero otherwise),

    J(w) = (1/n) sum_i loss(t_i) + (alpha / 2) ||w||^2 + (1/n) b.w,

003 eq. 9 plus the ``Delta/2 ||w||^2`` of Alg. 2 folded into ``alpha``. With row
weights ``v_i`` in [0, 1] (``sample_weight``) the loss term is ``(1/n) sum_i v_i
loss(t_i)``, still over the public ``n`` (paper note 15).

Objective perturbation's proof assumes the exact minimiser (paper
note 8). ``minimize_certified`` therefore solves to a gradient-norm tolerance
and returns the final ``||grad J(w)||`` as a certificate: since ``J`` is
``alpha``-strongly convex, ``||w - w*|| <= ||grad J(w)|| / alpha``.
Piecewise-linear losses (hinge, pinball) have no gradient: ``solve_nonsmooth``
certifies them with a duality gap or through a smoothed loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear, minimize

from dperm.losses import ConvexLoss, HingeLoss
from dperm.solvers.newton import NewtonPoint, damped_newton, gradient_decrease, solve_direction
from dperm.solvers.proven import accelerated_completion
from dperm.validation import ROW_BLOCK

__all__ = [
    "FINAL_STAGE_MARGIN", "INITIAL_SMOOTHING_WIDTH", "LIBLINEAR_SHUFFLE_SEED", "LIBLINEAR_TOLS",
    "MARGIN_BANDS", "MAX_MARGIN_ROWS", "MAX_NEWTON_STEPS", "MAX_STEP_HALVINGS",
    "NONSMOOTH_MIN_ITER", "RegularizedERMObjective", "RegularizedMarginObjective",
    "SMOOTHING_SHRINK", "SolveResult", "hinge_duality_gap", "loss_sums", "minimize_certified",
    "minimize_erm", "piecewise_linear_duality_gap", "regularized_value_and_gradient",
    "solve_by_smoothing", "solve_hinge_svm", "solve_nonsmooth",
]

#: Newton steps tried after L-BFGS when its answer misses the gradient tolerance (a public
#: constant, not cut by ``max_iter``: a few cheap ``d x d`` solves spare the proven completion).
MAX_NEWTON_STEPS = 20
#: Newton steps before the proven completion takes over.
_PROVEN_NEWTON_STEPS = 200
#: The fast solvers of piecewise-linear losses (liblinear epochs, each smoothing stage's L-BFGS)
#: get at least this many iterations whatever ``max_iter`` says: their proven completion needs a
#: number of steps that grows with n (hours on Adult), so a tiny ``max_iter`` would only make a
#: fit that must release anyway very slow. 1,000 is the estimators' default ``max_iter``.
NONSMOOTH_MIN_ITER = 1000
#: Step halvings in the Newton line search before giving up.
MAX_STEP_HALVINGS = 30


@dataclass(frozen=True)
class SolveResult:
    """A minimiser and its optimality certificate.

    Attributes
    ----------
    coef : ndarray of shape (d,)
    gradient_norm : float
        ``||grad J(coef)||_2`` (for a non-smooth loss: ``alpha * solution_radius``,
        the gradient norm that would give the same distance bound).
    solution_radius : float
        A proven bound on ``||coef - argmin J||``.
    n_iter : int
        Solver iterations (L-BFGS plus Newton polishing steps plus any steps of
        the proven completion). Depends on the private rows: never released.
    certified : bool
        Whether the requested tolerance was met. The solvers of this package
        finish with a proven completion (:mod:`dperm.solvers.proven`), so it
        is true whenever the loss is smooth or piecewise linear.
    """

    coef: np.ndarray
    gradient_norm: float
    solution_radius: float
    n_iter: int
    certified: bool


def loss_sums(loss: ConvexLoss, X, y, w, with_hessian: bool = False, sample_weight=None):
    """Unnormalised sums over the rows of ``X``: ``sum loss``, its gradient and Hessian in ``w``.

    ``(sum_i loss(t_i), sum_i loss'(s_i) x_i, sum_i loss''(s_i) x_i x_i^T)``
    with ``s_i = w.x_i`` (the Hessian is ``None`` unless ``with_hessian``).
    With ``sample_weight`` (``v_i`` in [0, 1], checked by the estimator) every term
    is multiplied by its row's ``v_i``; ``None`` is the unweighted sum, computed exactly
    as before weights existed.
    Sums over disjoint row blocks add up to the sums over their union, which is
    how :mod:`dperm.scale` evaluates ``J`` over chunks; ``RegularizedERMObjective``
    divides by ``n`` and adds the regulariser.
    """
    scores = X @ w
    values = loss.value(loss.argument(y, scores))
    derivatives = loss.score_derivative(y, scores)
    if sample_weight is not None:
        values = values * sample_weight
        derivatives = derivatives * sample_weight
    value = float(values.sum())
    grad = X.T @ derivatives
    hess = None
    if with_hessian:
        curvature = loss.score_second_derivative(y, scores)
        if sample_weight is not None:
            curvature = curvature * sample_weight
        hess = np.zeros((X.shape[1], X.shape[1]))
        # In blocks of rows: the weighted copy of X stays small for tall chunks.
        for start in range(0, X.shape[0], ROW_BLOCK):
            block = X[start:start + ROW_BLOCK]
            hess += (block.T * curvature[start:start + ROW_BLOCK]) @ block
    return value, grad, hess


class RegularizedERMObjective:
    """Value, gradient and Hessian of ``J`` above, for scipy.

    The loss supplies its derivatives in the prediction ``s = w.x``
    (:meth:`~dperm.losses.ConvexLoss.score_derivative`), so one class serves
    margin and residual losses alike.

    Parameters
    ----------
    loss : ConvexLoss
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
        Values in {-1, +1} for a margin loss; real labels for a residual loss.
    alpha : float
        Total L2 strength (the papers' ``Lambda``, plus ``Delta`` if any).
    linear_term : ndarray of shape (d,), optional
        The vector ``b``; enters as ``b.w / n`` (003 eq. 9).
    sample_weight : ndarray of shape (n,), optional
        Row weights in [0, 1]: the loss term is ``(1/n) sum_i v_i loss(t_i)``, divided
        by the public ``n``, not by ``sum v_i`` (which is private).
    """

    def __init__(self, loss: ConvexLoss, X, y, alpha: float, linear_term=None, sample_weight=None):
        self.loss = loss
        self.X = X
        self.y = y
        self.alpha = float(alpha)
        self.n_samples = X.shape[0]
        self.linear_term = None if linear_term is None else np.asarray(linear_term, dtype=float)
        self.sample_weight = sample_weight

    def value_and_gradient(self, w):
        loss_sum, grad_sum, _ = loss_sums(self.loss, self.X, self.y, w,
                                          sample_weight=self.sample_weight)
        return regularized_value_and_gradient(
            loss_sum, grad_sum, w, self.n_samples, self.alpha, self.linear_term
        )

    def gradient(self, w):
        return self.value_and_gradient(w)[1]

    def smoothness(self) -> float:
        """``L = c max_i ||x_i||^2 + alpha``, a bound on the Hessian's largest eigenvalue.

        ``(1/n) sum v_i loss''(s_i) x_i x_i^T + alpha I`` with ``loss'' <= c`` (the
        loss's curvature), ``v_i <= 1`` (1 without weights) and ``||x_i|| <= max_i ||x_i||``
        (at most the public norm bound).
        """
        max_row_norm_sq = float(np.max(np.einsum("ij,ij->i", self.X, self.X), initial=0.0))
        return self.loss.curvature * max_row_norm_sq + self.alpha

    def hessian(self, w):
        curvature = self.loss.score_second_derivative(self.y, self.X @ w) / self.n_samples
        if self.sample_weight is not None:
            curvature = curvature * self.sample_weight
        hess = (self.X.T * curvature) @ self.X
        hess[np.diag_indices_from(hess)] += self.alpha
        return hess


def regularized_value_and_gradient(loss_sum, grad_sum, w, n_samples, alpha, linear_term=None):
    """``J(w)`` and its gradient from the row sums of :func:`loss_sums` (003 eq. 9).

    ``J = loss_sum / n + alpha/2 ||w||^2 + b.w / n``.
    """
    value = loss_sum / n_samples + 0.5 * alpha * float(w @ w)
    grad = grad_sum / n_samples + alpha * w
    if linear_term is not None:
        value += float(linear_term @ w) / n_samples
        grad = grad + linear_term / n_samples
    return value, grad


def minimize_erm(loss: ConvexLoss, X, y, alpha: float, tol: float, max_iter: int,
                 linear_term=None, sample_weight=None):
    """Certified minimisation of ``J`` wherever the rows live.

    In-memory rows go to :func:`minimize_certified`. Rows that live elsewhere
    (a :class:`dperm.scale.ChunkedERMData`, over a Dask cluster) bring their
    own certified solver, ``X.minimize_certified(loss, alpha, tol, max_iter,
    linear_term)``, which returns the same :class:`SolveResult`; ``y`` is then
    ``None`` because the labels travel with the row chunks. Row weights
    (``sample_weight``) are for in-memory rows only (the estimators refuse them with
    Dask input before anything is spent).
    """
    distributed_solve = getattr(X, "minimize_certified", None)
    if distributed_solve is not None:
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported for rows on a Dask cluster.")
        return distributed_solve(loss, alpha, tol, max_iter, linear_term)
    objective = RegularizedERMObjective(loss, X, y, alpha, linear_term=linear_term,
                                        sample_weight=sample_weight)
    return minimize_certified(objective, tol=tol, max_iter=max_iter)


#: The name the classifiers' code and scripts use; margin losses are one case.
RegularizedMarginObjective = RegularizedERMObjective


def minimize_certified(objective: RegularizedERMObjective, tol: float, max_iter: int, w0=None,
                       prove: bool = True):
    """Minimise a smooth strongly convex ``J`` until ``||grad J|| <= tol``, always.

    L-BFGS (scipy) does the bulk of the work; its stopping rule on the
    relative change of ``J`` fires near machine precision before tight
    gradient tolerances are met, so for twice-differentiable losses up to
    ``MAX_NEWTON_STEPS`` Newton steps polish the answer (quadratic convergence
    near the optimum; ``_PROVEN_NEWTON_STEPS`` when the completion follows).
    ``max_iter`` bounds the L-BFGS iterations.

    If they have not reached ``tol``, Nesterov's accelerated gradient method
    finishes the solve (:func:`dperm.solvers.proven.accelerated_completion`):
    ``J`` is ``alpha``-strongly convex and ``L``-smooth
    (:meth:`RegularizedERMObjective.smoothness`), so a number of steps fixed by
    ``alpha``, ``L`` and the starting gradient proves ``J(w) - J* <= tol^2 /
    (2 alpha)`` and ``||w - w*|| <= tol / alpha``, the same certificates a
    gradient norm ``tol`` gives. A solve that has spent budget therefore never
    fails; only its duration depends on the data (issue 28). ``prove=False``
    skips the completion (for a caller with a cheaper certificate of its own,
    such as the smoothing continuation's duality gap).

    Returns
    -------
    SolveResult
        ``gradient_norm`` is the achieved gradient norm or, after a completion
        that ran its full count, ``tol`` (the proof's equivalent).
    """
    if objective.loss.curvature is None:  # a property of the loss, checked whatever the data
        raise ValueError(f"the {objective.loss.name} loss has no curvature bound, so its objective "
                         "has no smoothness constant and dperm cannot prove a solve of it.")
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
        newton_steps = _PROVEN_NEWTON_STEPS if prove else MAX_NEWTON_STEPS
        w, grad, grad_norm, steps = _newton_polish(objective, w, grad, tol, newton_steps)
        n_iter += steps
    if grad_norm > tol and prove:
        w, grad_norm, steps = accelerated_completion(
            objective.value_and_gradient, w, grad, objective.alpha, objective.smoothness(), tol)
        n_iter += steps
    return SolveResult(w, grad_norm, grad_norm / objective.alpha, n_iter, grad_norm <= tol)


def _newton_polish(objective, w, grad, tol, max_steps):
    """Damped Newton steps (:func:`dperm.solvers.newton.damped_newton`) that accept a step only if
    the gradient norm drops; the Hessian is formed only where a step starts."""
    def evaluate(w):
        value, grad = objective.value_and_gradient(w)
        return NewtonPoint(w, value, grad, lambda: objective.hessian(w))

    start = NewtonPoint(w, None, grad, lambda: objective.hessian(w))
    point, steps, _ = damped_newton(start, evaluate, tol=tol, direction=solve_direction,
                                    accept=gradient_decrease, max_steps=max_steps,
                                    max_halvings=MAX_STEP_HALVINGS)
    return point.w, point.grad, point.grad_norm, steps


#: Widths of the band of margins around 1 whose dual weights are fitted.
MARGIN_BANDS = (1e-8, 1e-6, 1e-4, 1e-3, 1e-2)
#: Rows on the margin above which a band is skipped (bounded least squares cost).
MAX_MARGIN_ROWS = 5000


def piecewise_linear_duality_gap(loss: ConvexLoss, X, y, alpha: float, w, enough: float = 0.0) -> float:
    """A proven upper bound on ``P(w) - min P`` for a piecewise-linear loss.

    The loss is ``max_{g in [g_low, g_high]} g (t - k)`` (``loss.slopes``,
    ``loss.kink``) of the argument ``t_i = o_i + s_i x_i.w`` (margin: ``o_i = 0``,
    ``s_i = y_i``; residual: ``o_i = y_i``, ``s_i = -1``). Swapping min and max in
    ``P(w) = (1/n) sum loss(t_i) + alpha/2 ||w||^2`` gives the dual over the box
    ``g in [g_low, g_high]^n``

        D(g) = (1/n) sum g_i (o_i - k) - ||sum g_i s_i x_i||^2 / (2 alpha n^2),

    and ``P(w) >= min P >= D(g)`` for every feasible ``g`` (weak duality); the
    optimum has ``alpha n w = -sum g_i s_i x_i``. For each band width in
    ``MARGIN_BANDS`` we take the active slope (``g_high`` above the kink,
    ``g_low`` below) outside the band and fit the ``g_i`` inside it by bounded
    least squares to that optimality condition. Every such ``g`` is feasible,
    so the smallest gap over the bands is a valid bound; the fit makes it tight.
    The bands go from narrow (few rows, cheap) to wide, and the search stops at the
    first gap ``<= enough`` (the caller's target; 0: try every band).
    The hinge (``g in [-1, 0]``, ``a = -g``) gives the usual SVM dual
    ``(1/n) sum a_i - ||sum a_i y_i x_i||^2 / (2 alpha n^2)``.
    """
    n = X.shape[0]
    g_low, g_high = loss.slopes
    arguments = loss.argument(y, X @ w)
    offsets = loss.argument(y, np.zeros(n)) - loss.kink
    directions = X * loss.argument_slope(y)[:, None]
    primal = float(loss.value(arguments).mean()) + 0.5 * alpha * float(w @ w)
    distance_to_kink = arguments - loss.kink
    best = math.inf
    for band in MARGIN_BANDS:
        dual_weights = np.where(distance_to_kink > 0.0, g_high, g_low)
        in_band = np.flatnonzero(np.abs(distance_to_kink) <= band)
        if in_band.size > MAX_MARGIN_ROWS:
            continue
        if in_band.size:
            dual_weights[in_band] = 0.0
            target = -alpha * n * w - directions.T @ dual_weights
            fit = lsq_linear(directions[in_band].T, target, bounds=(g_low, g_high), method="bvls")
            dual_weights[in_band] = fit.x
        combination = directions.T @ dual_weights
        dual = float(dual_weights @ offsets) / n - float(combination @ combination) / (2.0 * alpha * n * n)
        best = min(best, primal - dual)
        if best <= enough:
            break
    return max(best, 0.0)


def hinge_duality_gap(X, y, alpha: float, w, enough: float = 0.0) -> float:
    """:func:`piecewise_linear_duality_gap` of the L2-regularised hinge SVM."""
    return piecewise_linear_duality_gap(HingeLoss(), X, y, alpha, w, enough)


#: liblinear runs ``(tolerance, iteration-cap multiplier)`` tried in turn until the duality
#: gap certifies the solve. Small alpha (large ``C``) needs many cheap coordinate-descent
#: epochs: on Adult (n = 30,162, d = 106) at alpha = 1e-3, 1,000 left the radius 20x too
#: large and the smoothing fallback took ~10 s; 50,000 certified it in 0.2 s.
LIBLINEAR_TOLS = ((1e-8, 1), (1e-10, 10), (1e-10, 100))
#: Seed of liblinear's coordinate shuffle. With ``random_state=None`` liblinear
#: draws from numpy's global RNG, so two fits of the same data would return
#: different (equally certified) minimisers; the non-private solve must be a
#: function of the data alone.
LIBLINEAR_SHUFFLE_SEED = 0


def solve_hinge_svm(X, y, alpha: float, radius_tol: float, max_iter: int):
    """Minimise the hinge SVM objective ``P`` and certify ``||w - argmin P|| <= radius_tol``.

    First liblinear: scikit-learn's ``LinearSVC(loss="hinge", dual=True)``
    minimises ``1/2 ||w||^2 + C sum hinge``, which is ``n C`` times ``P`` when
    ``C = 1 / (alpha n)``; the certificate is the duality gap
    (:func:`hinge_duality_gap`), and strong convexity gives
    ``||w - w*|| <= sqrt(2 gap / alpha)``. If no liblinear tolerance certifies
    the radius (degenerate data), fall back to :func:`solve_by_smoothing`.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    max_iter = max(max_iter, NONSMOOTH_MIN_ITER)
    if np.unique(y).size < 2:
        # liblinear refuses one-class data: the one-vs-rest problem of a public label no row
        # carries has every row negative. Still strongly convex; smoothing certifies it.
        return solve_by_smoothing(HingeLoss(), X, y, alpha, radius_tol, max_iter)
    n = X.shape[0]
    best = None
    n_iter = 0
    enough = 0.5 * alpha * radius_tol**2  # the gap that proves radius_tol
    for liblinear_tol, multiplier in LIBLINEAR_TOLS:
        svc = LinearSVC(
            loss="hinge", dual=True, C=1.0 / (alpha * n), fit_intercept=False,
            tol=liblinear_tol, max_iter=max_iter * multiplier, random_state=LIBLINEAR_SHUFFLE_SEED,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc.fit(X, y)
        n_iter += int(np.max(svc.n_iter_))
        w = svc.coef_.ravel().copy()
        radius = math.sqrt(2.0 * hinge_duality_gap(X, y, alpha, w, enough) / alpha)
        if best is None or radius < best[1]:
            best = (w, radius)
        if radius <= radius_tol:
            break
    if best[1] > radius_tol:
        smoothed = solve_by_smoothing(HingeLoss(), X, y, alpha, radius_tol, max_iter)
        n_iter += smoothed.n_iter
        if smoothed.solution_radius < best[1]:
            best = (smoothed.coef, smoothed.solution_radius)
    w, radius = best
    return SolveResult(w, alpha * radius, radius, n_iter, radius <= radius_tol)


#: First smoothing width of the continuation in :func:`solve_by_smoothing`.
INITIAL_SMOOTHING_WIDTH = 1.0
#: Each continuation stage divides the smoothing width by this factor.
SMOOTHING_SHRINK = 10.0
#: The last smoothing stage aims at this fraction of the radius it must prove (room for rounding).
FINAL_STAGE_MARGIN = 0.999


def solve_by_smoothing(loss: ConvexLoss, X, y, alpha, radius_tol, max_iter):
    """Certify a minimiser of a piecewise-linear loss through its smoothed version.

    The smoothed loss lies above the loss by at most ``g h`` (``g =
    loss.smoothing_gap``, 1/4 for the Huber hinge and pinball), so for the
    smoothed objective ``P_h``: ``P(w) - min P <= P_h(w) - min P_h + g h
    <= ||grad P_h(w)||^2 / (2 alpha) + g h``. With ``h = alpha r^2 / (4 g)`` and
    ``||grad P_h|| <= alpha r / sqrt(2)`` that is ``alpha r^2 / 2``, and strong
    convexity (``P(w) - min P >= alpha/2 ||w - w*||^2``) gives ``||w - w*|| <= r``.
    The width shrinks from ``INITIAL_SMOOTHING_WIDTH`` to that ``h`` by
    continuation, each stage warm-started (L-BFGS, then Newton steps). After
    each stage the duality gap (:func:`piecewise_linear_duality_gap`) is also
    computed; the smaller of the two bounds is the certificate, and the
    continuation stops as soon as it proves the radius.

    The stages run the fast method only. If the last one, at width ``h``, has
    not proved the radius, it is solved again with the proven completion of
    :func:`minimize_certified`, whose gradient certificate proves it: the
    bounds above are aimed at ``FINAL_STAGE_MARGIN r`` so that rounding in
    their arithmetic cannot push the computed radius past ``r``. The solve
    never fails once it has begun.
    """
    max_iter = max(max_iter, NONSMOOTH_MIN_ITER)
    gap_factor = loss.smoothing_gap
    target = FINAL_STAGE_MARGIN * radius_tol
    final_width = alpha * target**2 / (4.0 * gap_factor)
    gradient_tol = alpha * target / math.sqrt(2.0)
    width = max(INITIAL_SMOOTHING_WIDTH, final_width)
    w, n_iter = None, 0
    prove = False  # the fast continuation first; the proven completion only if it falls short
    while True:
        objective = RegularizedERMObjective(loss.smoothed(width), X, y, alpha)
        solve = minimize_certified(objective, tol=gradient_tol, max_iter=max_iter, w0=w, prove=prove)
        w, n_iter = solve.coef, n_iter + solve.n_iter
        smoothing_gap = solve.gradient_norm**2 / (2.0 * alpha) + gap_factor * width
        gap = smoothing_gap
        if math.sqrt(2.0 * gap / alpha) > radius_tol:
            gap = min(gap, piecewise_linear_duality_gap(loss, X, y, alpha, w, 0.5 * alpha * radius_tol**2))
        radius = math.sqrt(2.0 * gap / alpha)
        if radius <= radius_tol or prove:
            break
        if width <= final_width:
            prove = True  # the last stage again, finished by the proven method: it proves r
        width = max(width / SMOOTHING_SHRINK, final_width)
    return SolveResult(w, alpha * radius, radius, n_iter, radius <= radius_tol)


def solve_nonsmooth(loss: ConvexLoss, X, y, alpha: float, radius_tol: float, max_iter: int):
    """Minimise ``P`` for a piecewise-linear loss and certify ``||w - argmin P|| <= radius_tol``.

    The hinge goes to liblinear first (:func:`solve_hinge_svm`); other
    piecewise-linear losses (the pinball) to :func:`solve_by_smoothing`.
    """
    if loss.slopes is None or loss.smoothing_gap is None:
        raise ValueError(
            f"the {loss.name} loss is neither differentiable nor piecewise linear with a "
            "smoothed version; dperm cannot certify its minimiser."
        )
    if isinstance(loss, HingeLoss):
        return solve_hinge_svm(X, y, alpha, radius_tol, max_iter)
    return solve_by_smoothing(loss, X, y, alpha, radius_tol, max_iter)
