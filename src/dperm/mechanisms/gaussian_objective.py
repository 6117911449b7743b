"""Gaussian objective perturbation ((epsilon, delta)-DP), float-safe and for an inexact solve by
approximate minima perturbation (Iyengar et al. 2019).

Two calibrations of the noise: ``"tight"`` (the default, mechanism ``"gaussian_objective"``;
"tight" is a historical name, kept as a public parameter value: the calibration is an upper
bound, its sigma 1.17-1.30x the analytic Gaussian mechanism's at delta 1e-5) uses the GLM structure of the loss (the neighbours' noises differ in a fixed two-dimensional
span; Redberg, Koskela & Wang 2023) and a privacy-profile bound, see
docs/design/gaussian_objective.md; ``"004"`` (mechanism ``"gaussian_objective_004"``) is 004
Alg. 4's sigma* rule, kept for the reproduction of 004's experiments."""

from __future__ import annotations

from fractions import Fraction

from dperm.privacy.accounting import spend_before_fitting
from dperm.mechanisms._problem import ERMProblem
from dperm.mechanisms.noise import grid_vector, sample_discrete_gaussian_vector
from dperm.mechanisms._problem import MechanismCalibration
from dperm.mechanisms.objective import (
    ObjectiveCalibration,
    objective_mechanism_calibration,
    perturb_and_release,
    require_curvature,
)
from dperm.privacy.sensitivity import (
    SENSITIVITY_ROUNDING_MARGIN,
    discrete_gaussian_sigma_steps,
    discrete_objective_noise_steps,
    GAUSSIAN_OBJECTIVE_CALIBRATIONS,
    objective_noise_grid,
    objective_perturbation_slack,
    split_epsilon_for_amp,
    tight_discrete_gaussian_sigma_steps,
    glm_objective_slack,
)
from dperm.validation import check_delta, check_epsilon


def gaussian_objective_perturbation(
    problem: ERMProblem, epsilon: float, delta: float, rng, tol: float, max_iter: int,
    accountant=None, calibration: str = "tight",
):
    """Minimise ``J(w) + eta.w / n + Delta/2 ||w||^2`` with Gaussian-type ``eta`` and release it.

    1. split ``epsilon`` between the objective stage and AMP's output stage;
    2. ``eps~, Delta``: ``"tight"``: :func:`~dperm.privacy.sensitivity.glm_objective_slack`
       (one Jacobian factor, matrix determinant lemma); ``"004"``: computeSlack
       (004 Proc. 2, typo fixed per paper note 4; the same rule as 003 Alg. 2);
    3. ``eta = h z`` with ``z`` exact per-coordinate discrete Gaussian
       (Canonne, Kamath & Steinke 2020) of std ``sigma`` steps:

       - ``"tight"``: :func:`~dperm.privacy.sensitivity.tight_discrete_gaussian_sigma_steps`,
         the smallest sigma whose privacy-profile bound
         (:func:`~dperm.privacy.sensitivity.tight_gaussian_objective_delta`) is at most
         ``delta`` at ``eps~``: for a GLM loss the neighbours' noises that give the same
         minimiser differ by a vector in the span of the two differing rows (norm
         ``<= 2 L R``) plus the grid's rounding (``<= 1`` step per coordinate), so only
         the noise's projections on two fixed directions matter (Redberg, Koskela &
         Wang 2023's argument for add/remove neighbours, extended in
         docs/design/gaussian_objective.md);
       - ``"004"``: :func:`~dperm.privacy.sensitivity.discrete_gaussian_sigma_steps`, 004
         Proc. 3's rule with the L2 bound on the grid and a subgaussian norm quantile
         (Hsu, Kakade & Zhang 2012) in place of the chi-square one (004 Thm 4.1's
         condition: privacy loss ``<= eps~`` except with probability ``delta``);
    4. minimise to ``||grad|| <= tol`` and release with AMP's output noise
       (:func:`~dperm.mechanisms.objective.release_approximate_minimiser`).

    Returns
    -------
    MechanismOutput
        ``(epsilon, delta)``-DP for the released ``coef`` (docs/design/gaussian_objective.md
        or 004 Thm 4.1; Iyengar et al. 2019, Thm 1; basic composition).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    plan = calibrate_gaussian_objective(problem, epsilon, delta, tol, calibration)
    spend_before_fitting(accountant, epsilon, delta, "Gaussian objective perturbation (mechanism)")
    sigma_squared = Fraction(plan.scale_steps * (1 + SENSITIVITY_ROUNDING_MARGIN)) ** 2
    noise = grid_vector(sample_discrete_gaussian_vector(problem.n_features, sigma_squared, rng), plan.grid)
    return perturb_and_release(problem, plan, noise, epsilon, delta, rng, tol, max_iter)


def gaussian_objective_calibration(problem, epsilon: float, delta: float, tol: float,
                                   calibration: str = "tight") -> MechanismCalibration:
    """What :func:`gaussian_objective_perturbation` records, from public quantities of ``problem``."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    plan = calibrate_gaussian_objective(problem, epsilon, delta, tol, calibration)
    return objective_mechanism_calibration(problem, plan, epsilon, delta, tol)


def calibrate_gaussian_objective(problem, epsilon: float, delta: float, tol: float,
                                 calibration: str = "tight") -> ObjectiveCalibration:
    """Steps 1-3's calibration (``"tight"`` or ``"004"``) from public quantities of ``problem`` only.

    Refuses a loss without a curvature bound, ``delta == 0`` or an unknown
    calibration before anything is spent.
    """
    if calibration not in GAUSSIAN_OBJECTIVE_CALIBRATIONS:
        raise ValueError(f"calibration must be one of {GAUSSIAN_OBJECTIVE_CALIBRATIONS}; got {calibration!r}.")
    loss = problem.loss
    curvature = require_curvature(loss, "gaussian_objective")
    if delta == 0:
        raise ValueError("delta must be > 0 for Gaussian objective perturbation (004 Thm 4.1).")
    epsilon_objective, epsilon_output = split_epsilon_for_amp(epsilon)
    grid = objective_noise_grid(problem.n_samples, tol, problem.n_features)
    if calibration == "tight":
        slack = glm_objective_slack(
            epsilon_objective, problem.n_samples, problem.alpha, curvature, problem.data_norm)
        span_steps = 2.0 * loss.lipschitz * problem.data_norm * (1 + SENSITIVITY_ROUNDING_MARGIN) / grid
        sigma_steps = tight_discrete_gaussian_sigma_steps(
            span_steps, problem.n_features, slack.epsilon_noise, delta)
    else:
        slack = objective_perturbation_slack(
            epsilon_objective, problem.n_samples, problem.alpha, curvature, problem.data_norm)
        _, l2_steps = discrete_objective_noise_steps(loss.lipschitz, problem.data_norm,
                                                     problem.n_features, grid)
        sigma_steps = discrete_gaussian_sigma_steps(l2_steps, problem.n_features, slack.epsilon_noise, delta)
    return ObjectiveCalibration(epsilon_objective, epsilon_output, slack, grid,
                                "discrete-gaussian", sigma_steps)


def gaussian_objective_perturbation_004(
    problem: ERMProblem, epsilon: float, delta: float, rng, tol: float, max_iter: int,
    accountant=None,
):
    """:func:`gaussian_objective_perturbation` with 004's calibration (Alg. 4, Procs. 2-3).

    For the reproduction of Rajkumar & Agarwal (2012); the default calibration needs about a
    third of its sigma at Adult's size (docs/design/gaussian_objective.md).
    """
    return gaussian_objective_perturbation(problem, epsilon, delta, rng, tol, max_iter,
                                           accountant, calibration="004")
