"""Objective perturbation: 003 Alg. 2 (pure epsilon-DP, twice-differentiable losses), float-safe and
for an inexact solve by approximate minima perturbation (Iyengar et al. 2019)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dperm.mechanisms._problem import ERMProblem, MechanismOutput
from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.noise import (
    GRID_RESOLUTION,
    grid_vector,
    laplace_noise_on_grid,
    release_on_grid,
    sample_grid_noise,
    vector_laplace_calibration,
)
from dperm.mechanisms.noise.l2_laplace import l2_laplace_mean_square
from dperm.privacy.mechanism_calibration import MechanismCalibration
from dperm.privacy.sensitivity import (
    amp_output_sensitivity,
    amp_solution_radius,
    amp_solve_tolerance,
    glm_objective_slack,
    objective_noise_grid,
    split_epsilon_for_amp,
)
from dperm.solvers import minimize_erm

__all__ = [ "ObjectiveCalibration", "amp_output_calibration", "amp_planned", "calibrate",
    "calibrate_objective",
    "expected_perturbation", "noise_norm", "objective_mechanism_calibration",
    "objective_perturbation", "perturb_and_release", "release", "solve_perturbed",
]


def solve_perturbed(problem: ERMProblem, extra_regularization, noise, tol, max_iter):
    """Minimise ``J(w) + b.w/n + Delta/2 ||w||^2`` to ``||grad|| <= tol``, always.

    The privacy proofs (003 Thm 2, 004 Thm 4.1) are about the exact minimiser
    (paper note 8); AMP's output stage (:func:`perturb_and_release`) covers the
    distance to it. The solve ends with a proven completion
    (:func:`dperm.solvers.minimize_certified`), so it certifies whatever the
    data and ``max_iter``: a fit that has spent its budget always releases.
    """
    return minimize_erm(problem.loss, problem.X, problem.y, problem.alpha + extra_regularization, tol,
                        max_iter, linear_term=noise, sample_weight=problem.sample_weight)


#: At most this many rounds of :func:`amp_planned`'s tolerance search.
_AMP_PLAN_ROUNDS = 8


def amp_planned(plan_at, tol: float, n_samples: int, dimension: int, gradient_scale: float):
    """``(plan, solve_tol)``: the objective stage's calibration at AMP's solve tolerance.

    ``plan_at(t)`` is the mechanism's :class:`ObjectiveCalibration` for a solve to
    ``t`` (its grid is :func:`~dperm.privacy.sensitivity.objective_noise_grid` at ``t``).
    The tolerance is :func:`~dperm.privacy.sensitivity.amp_solve_tolerance` of the
    plan at the user's ``tol``: small enough that AMP's output noise stays a fixed
    small fraction of the objective noise's effect at every ``n``. The output law's
    RMS norm per unit sensitivity is taken at sensitivity 1 and raised by the grid's
    largest relative overhead ``1 / GRID_RESOLUTION`` (its step is a power of two
    below ``S / (GRID_RESOLUTION sqrt(d))``). Public quantities only.

    The objective noise's RMS shrinks a little with its grid (the lattice's rounding
    share), so the tolerance is lowered until the plan at it satisfies the rule
    (a decreasing sequence; it settles within a few rounds, at most
    :data:`_AMP_PLAN_ROUNDS`).
    """
    plan = plan_at(tol)
    unit = vector_laplace_calibration(1.0, dimension, plan.epsilon_output)
    per_sensitivity = unit.rms_noise_norm(dimension) * (1.0 + 1.0 / GRID_RESOLUTION)
    solve_tol = tol
    for _ in range(_AMP_PLAN_ROUNDS):
        lowered = amp_solve_tolerance(tol, plan.rms_noise_norm(dimension), n_samples,
                                      per_sensitivity, gradient_scale)
        if lowered >= solve_tol:
            break
        solve_tol = lowered
        plan = plan_at(solve_tol)
    return plan, solve_tol


def amp_output_calibration(problem, regularization: float, noise_grid: float, tol: float,
                           epsilon_output: float, dimension: int | None = None):
    """AMP's output-stage grid calibration, its radius ``r`` and sensitivity ``2 r``.

    Approximate minima perturbation (Iyengar et al. 2019, Alg. 1 and Thm 1,
    here with pure-DP Laplace-type noise): given the ideal perturbed minimiser
    ``w*``, the certified point is within ``r`` of it on either neighbouring
    data set (:func:`~dperm.privacy.sensitivity.amp_solution_radius`), so
    releasing it with noise for sensitivity ``2 r`` is ``epsilon_output``-DP;
    the objective stage's guarantee for ``w*`` and this one compose. Reads only
    public quantities of ``problem`` (``n``, ``d``); ``tol`` is the solve's tolerance
    (:func:`amp_planned`), ``dimension`` the number of released values (default ``d``).
    """
    dimension = problem.n_features if dimension is None else dimension
    radius = amp_solution_radius(tol, noise_grid, problem.n_samples, dimension, regularization)
    sensitivity = amp_output_sensitivity(radius)
    calibration = vector_laplace_calibration(sensitivity, dimension, epsilon_output)
    return calibration, radius, sensitivity


@dataclass(frozen=True)
class ObjectiveCalibration:
    """How an objective mechanism's noise is calibrated, from public quantities only.

    Attributes
    ----------
    epsilon_objective, epsilon_output : float
        The split of epsilon between the objective stage and AMP's output stage.
    slack : ObjectiveSlack
        ``eps'`` (or ``eps~``) and ``Delta``.
    grid : float
        The grid ``h`` of the noise ``b = h z``.
    noise_distribution : str
        ``"discrete-laplace"`` (scale in steps), ``"discrete-l2-laplace"`` (the joint
        lattice L2 law of :mod:`dperm.mechanisms.noise.l2_laplace`, scale in steps) or
        ``"discrete-gaussian"`` (sigma in steps).
    scale_steps : float or Fraction
        The discrete Laplace scale (per coordinate or of the L2 law) or the
        discrete Gaussian sigma, in steps.
    laplace : GridCalibration or None
        Pure objective perturbation: the calibration ``b`` is drawn with
        (:func:`objective_laplace_noise`), so the record and the draw share it.
    """

    epsilon_objective: float
    epsilon_output: float
    slack: object
    grid: float
    noise_distribution: str
    scale_steps: object
    laplace: object = None

    @property
    def noise_scale(self) -> float:
        """The per-coordinate scale (Laplace) or sigma (Gaussian) of ``b`` in its units."""
        return float(Fraction(self.scale_steps) * Fraction(self.grid))

    def rms_noise_norm(self, dimension: int) -> float:
        """``sqrt(E ||b||^2)``: ``sqrt(2 d) s`` (L1 Laplace), ``sqrt(2 k d) s`` (L2 law), ``sqrt(d) sigma``.

        Of the continuous law of the same scale; the discrete laws' variances are
        within a rounding of it (Canonne, Kamath & Steinke 2020, Prop. 5 and Cor. 9)
        and the L2 law's is at most it (:func:`~dperm.mechanisms.noise.l2_laplace.l2_laplace_mean_square`).
        """
        if self.noise_distribution == "discrete-l2-laplace":
            return math.sqrt(l2_laplace_mean_square(dimension, self.noise_scale))
        factor = 2.0 if self.noise_distribution == "discrete-laplace" else 1.0
        return math.sqrt(factor * dimension) * self.noise_scale


def calibrate_objective(problem, epsilon: float, tol: float) -> ObjectiveCalibration:
    """003 Alg. 2's calibration with the float-safe grid (public quantities of ``problem`` only).

    Trusts its inputs: the loss has a curvature bound (the row's
    :meth:`~dperm.mechanisms.catalog.Mechanism.check`).
    """
    curvature = problem.loss.curvature
    epsilon_objective, epsilon_output = split_epsilon_for_amp(epsilon)
    slack = glm_objective_slack(
        epsilon_objective, problem.n_samples, problem.alpha, curvature, problem.data_norm
    )
    grid = objective_noise_grid(problem.n_samples, tol, problem.n_features)
    noise = objective_laplace_noise(problem.loss.lipschitz, problem.data_norm, problem.n_features,
                                    grid, slack.epsilon_noise)
    return ObjectiveCalibration(epsilon_objective, epsilon_output, slack, grid,
                                noise.noise_distribution, noise.scale_in_steps, laplace=noise)


def objective_laplace_noise(lipschitz: float, data_norm: float, dimension: int, grid: float,
                            epsilon_noise: float):
    """The lattice noise of pure objective perturbation: calibrated to ``||b_D - b_D'||_2 <= 2 L R``.

    On the grid ``h`` the cells ``round(b/h)`` of two noises ``2 L R`` apart are at
    most ``2 L R / h + sqrt(d)`` steps apart in L2 and ``sqrt(d) 2 L R / h + d`` in
    L1 (:func:`~dperm.privacy.sensitivity.discrete_objective_noise_steps`);
    :func:`~dperm.mechanisms.noise.laplace_noise_on_grid` takes the law with the
    smaller noise, the joint L2 law of :mod:`dperm.mechanisms.noise.l2_laplace` from
    ``d = 3`` on (003's radial noise, exactly, on the lattice).
    """
    return laplace_noise_on_grid(grid, 2.0 * lipschitz * data_norm, dimension, epsilon_noise)


def expected_perturbation(problem, calibration: MechanismCalibration) -> float:
    """A public bound on the RMS distance the noise moves the released point.

    The objective stage moves the minimiser by at most ``||b|| / (n (alpha + Delta))``
    (strong convexity of the perturbed objective); AMP's output noise adds its own
    RMS norm (:meth:`~dperm.mechanisms.noise.GridCalibration.rms_noise_norm`).
    The score of :mod:`dperm.mechanisms.choice`; every objective mechanism's.
    """
    plan = calibration.noise_law
    regularization = problem.alpha + plan.slack.extra_regularization
    d = problem.n_features
    objective_stage = plan.rms_noise_norm(d) / (problem.n_samples * regularization)
    return objective_stage + calibration.output_noise_law.rms_noise_norm(d)


def objective_perturbation(problem: ERMProblem, epsilon: float, delta: float, rng, tol: float,
                           max_iter: int, accountant=None):
    """Objective perturbation of 003 Alg. 2 with data norm R (paper note 2), float-safe and for an inexact solve.

    1. split ``epsilon`` into the objective stage and AMP's output stage
       (:func:`~dperm.privacy.sensitivity.split_epsilon_for_amp`);
    2. ``eps', Delta`` from :func:`~dperm.privacy.sensitivity.glm_objective_slack`
       for the objective stage's epsilon: the Jacobian term is
       ``log(1 + c R^2 / (n (alpha + Delta)))``, one factor (matrix determinant lemma,
       :func:`~dperm.privacy.sensitivity.glm_jacobian_epsilon`; 003 Thm 2 bounds it by
       the square), and ``Delta > 0`` only when it would take more than half of epsilon;
    3. draw ``b = h z``: ``z`` an exact integer vector whose mass is
       ``(eps' / k)``-Lipschitz in the norm ``k`` is measured in
       (:func:`objective_laplace_noise`): the lattice L2 Laplace law with ``k``
       the L2 bound in steps of ``||b_D - b_D'||_2 <= 2 L R`` (``d >= 3``), else
       per-coordinate discrete Laplace with ``k`` the L1 bound. The ideal noise
       ``h (z + u)`` with ``u`` uniform in the unit cube has a piecewise-constant
       density whose ratio for such neighbours is at most ``exp(eps')`` (the
       cells containing ``b`` and ``b'`` are at most ``k`` apart), which is all
       003 Thm 2's proof uses of the noise;
    4. minimise ``J(w) + b.w / n + Delta/2 ||w||^2`` to ``||grad|| <= tol``;
    5. release that point with AMP's output noise (:func:`amp_output_calibration`).

    Weighted rows (``problem.sample_weight``, ``v_i`` in [0, 1]): 003 Thm 2's proof
    (Thm 9 in the JMLR version) uses of the changed row only that its term's gradient
    ``v_i l'(y_i w.x_i) y_i x_i`` has norm at most ``L R`` (so ``||b_D - b_D'|| <= 2 L R``)
    and that its Hessian ``v_i l'' x_i x_i^T`` is rank one with eigenvalue at most ``c R^2``
    (the Jacobian's one factor); both scale by ``v_i <= 1``, and the other rows' weighted
    terms are still convex, so the perturbed objective keeps its strong convexity
    ``alpha + Delta``. The calibration is unchanged; AMP's stage (Iyengar et al. 2019,
    Thm 1) needs only that strong convexity (paper note 15).

    Steps 1-3's numbers are :func:`calibrate`'s, steps 3-5 :func:`release`'s; this
    function is the row's checked entry (:meth:`~dperm.mechanisms.catalog.Mechanism.run`).

    Parameters
    ----------
    problem : ERMProblem
    epsilon : float
    delta : float
        Not used: the mechanism is pure ``epsilon``-DP and spends no delta.
        Every mechanism of :data:`dperm.mechanisms.MECHANISMS` takes the same
        arguments, so callers dispatch without special cases.
    rng : numpy.random.Generator
    tol, max_iter : float, int
        The certified solve's gradient tolerance and iteration cap.
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, 0)`` before anything is solved.

    Returns
    -------
    MechanismOutput
        ``epsilon``-DP (pure) for the released ``coef`` (003 Thm 2 with the
        one-factor Jacobian bound, Cor. 4 for Huber; Iyengar et al. 2019, Thm 1;
        basic composition).
    """
    return MECHANISMS["objective"].run(problem, epsilon, delta, rng, tol, max_iter, accountant)


def calibrate(problem, epsilon: float, delta: float, tol: float) -> MechanismCalibration:
    """Pure objective perturbation's calibration (spends no delta), from public quantities of ``problem``."""
    plan, solve_tol = amp_planned(lambda t: calibrate_objective(problem, epsilon, t), tol,
                                  problem.n_samples, problem.n_features,
                                  problem.loss.lipschitz * problem.data_norm)
    return objective_mechanism_calibration(problem, plan, epsilon, 0.0, solve_tol)


def release(problem: ERMProblem, calibration: MechanismCalibration, rng, tol: float,
            max_iter: int) -> MechanismOutput:
    """Steps 3-5 under ``calibration``: draw ``b`` exactly, solve, release with AMP's noise."""
    plan = calibration.noise_law
    noise = grid_vector(sample_grid_noise(plan.laplace, problem.n_features, rng), plan.grid)
    return perturb_and_release(problem, calibration, noise, rng, tol, max_iter)


def noise_norm(dimension: int, epsilon: float, delta: float, lipschitz: float,
               data_norm: float) -> float:
    """RMS ``sqrt(E||b||^2)`` of the noise term, for the default alpha (public inputs only).

    The noise stage gets ``epsilon`` less AMP's output share
    (:func:`~dperm.privacy.sensitivity.split_epsilon_for_amp`); the Jacobian's share
    is left out (the rule only needs the order of magnitude, and it depends on
    ``alpha``). dperm's float-safe 003 Alg. 2 draws the lattice L2 Laplace vector
    with scale ``s / eps'``, ``s = 2 L R`` (paper note 2; :mod:`dperm.mechanisms.noise.l2_laplace`),
    RMS norm ``sqrt(2 k d)`` times that with ``k = floor(d/2) + 1``; for ``d <= 2``,
    independent coordinates calibrated to the L1 bound ``s sqrt(d)``, RMS
    ``sqrt(2 d) s sqrt(d) / eps'`` (the same number).
    """
    epsilon_noise, _ = split_epsilon_for_amp(epsilon)
    span = 2.0 * lipschitz * data_norm
    return math.sqrt(l2_laplace_mean_square(dimension, span / epsilon_noise))


def perturb_and_release(problem: ERMProblem, calibration: MechanismCalibration, noise, rng,
                        tol: float, max_iter: int) -> MechanismOutput:
    """The objective mechanisms' last steps: solve with the linear term ``noise`` and release.

    Minimise ``J(w) + noise.w / n + Delta/2 ||w||^2`` to ``||grad|| <= calibration.solve_tol``
    (:func:`solve_perturbed`; AMP's tolerance, at most ``tol``:
    :func:`amp_planned`), then release that point on AMP's output grid with its
    exact lattice noise (:func:`amp_output_calibration`, already in ``calibration``).
    """
    solve = solve_perturbed(problem, calibration.extra_regularization, noise,
                            calibration.solve_tol or tol, max_iter)
    coef = release_on_grid(solve.coef, calibration.output_noise_law, rng)
    return MechanismOutput.released(coef, solve, calibration)


def objective_mechanism_calibration(problem, plan: ObjectiveCalibration, epsilon: float,
                                    delta: float, tol: float, *, dimension: int | None = None) -> MechanismCalibration:
    """What an objective mechanism releases with and records: ``plan`` and AMP's output stage.

    ``dimension``: the number of released values (default ``d``; ``d K`` for the multinomial model).
    """
    slack = plan.slack
    output, radius, sensitivity = amp_output_calibration(
        problem, problem.alpha + slack.extra_regularization, plan.grid, tol, plan.epsilon_output, dimension)
    return MechanismCalibration(
        epsilon=epsilon,
        delta=delta,
        epsilon_noise=slack.epsilon_noise,
        extra_regularization=slack.extra_regularization,
        noise_distribution=plan.noise_distribution,
        noise_scale=plan.noise_scale,
        noise_grid=plan.grid,
        sensitivity=None,
        solution_radius_allowance=radius,
        lipschitz=problem.loss.lipschitz,
        output_epsilon=plan.epsilon_output,
        output_noise_scale=output.noise_scale,
        output_grid=output.step,
        output_noise_distribution=output.noise_distribution,
        output_sensitivity=sensitivity,
        solve_tol=tol,
        noise_law=plan,
        output_noise_law=output,
    )
