"""Gaussian objective perturbation ((epsilon, delta)-DP), float-safe and for an inexact solve by
approximate minima perturbation (Iyengar et al. 2019).

Two calibrations of the noise: ``"tight"`` (the default, mechanism ``"gaussian_objective"``;
"tight" is a historical name, kept as a public parameter value: the calibration is an upper
bound, its sigma 1.17-1.30x the analytic Gaussian mechanism's at delta 1e-5) uses the GLM
structure of the loss (the neighbours' noises differ in a fixed two-dimensional span;
Redberg, Koskela & Wang 2023) and a privacy-profile bound, see
docs/design/gaussian_objective.md; ``"004"`` (mechanism ``"gaussian_objective_004"``) is 004
Alg. 4's sigma* rule, kept for the reproduction of 004's experiments."""

from __future__ import annotations

import math
from fractions import Fraction

from dperm.mechanisms._problem import ERMProblem, MechanismOutput
from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.noise import grid_vector, sample_discrete_gaussian_vector
from dperm.mechanisms.objective import (
    ObjectiveCalibration,
    amp_planned,
    expected_perturbation,
    objective_mechanism_calibration,
    perturb_and_release,
)
from dperm.privacy.mechanism_calibration import MechanismCalibration
from dperm.privacy.sensitivity import (
    GAUSSIAN_OBJECTIVE_CALIBRATIONS,
    SENSITIVITY_ROUNDING_MARGIN,
    discrete_gaussian_sigma_steps,
    discrete_objective_noise_steps,
    glm_objective_slack,
    objective_noise_grid,
    objective_perturbation_slack,
    split_epsilon_for_amp,
    tight_discrete_gaussian_sigma_steps,
    tight_gaussian_objective_calibration,
)

#: The row of :data:`~dperm.mechanisms.catalog.MECHANISMS` each calibration is.
_MECHANISM_OF_CALIBRATION = {"tight": "gaussian_objective", "004": "gaussian_objective_004"}
#: The noise span ``2 L R / h`` in steps at which :func:`noise_norm` takes the default
#: calibration's sigma: a fine grid, where its rounding terms vanish.
_NOISE_NORM_SPAN_STEPS = 2.0**30


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
       (:func:`~dperm.mechanisms.objective.perturb_and_release`).

    Weighted rows (``problem.sample_weight``, ``v_i`` in [0, 1]): the changed row's
    weighted gradient ``v_i l' y_i x_i`` still lies along ``x_i`` with norm at most
    ``L R``, so the neighbours' noises still differ by a vector in the span of the two
    rows of norm ``<= 2 L R``, and its rank-one Hessian is ``v_i <= 1`` times the
    unweighted one (the Jacobian bound of step 2 holds); the calibration is unchanged
    (paper note 15).

    Steps 1-3's numbers are :func:`calibrate`'s, steps 3-4 :func:`release`'s; this
    function is the checked entry of the row ``"gaussian_objective"`` (``calibration="tight"``)
    or ``"gaussian_objective_004"`` (``"004"``) (:meth:`~dperm.mechanisms.catalog.Mechanism.run`).

    Returns
    -------
    MechanismOutput
        ``(epsilon, delta)``-DP for the released ``coef`` (docs/design/gaussian_objective.md
        or 004 Thm 4.1; Iyengar et al. 2019, Thm 1; basic composition).
    """
    if calibration not in _MECHANISM_OF_CALIBRATION:
        raise ValueError(f"calibration must be one of {GAUSSIAN_OBJECTIVE_CALIBRATIONS}; got {calibration!r}.")
    row = MECHANISMS[_MECHANISM_OF_CALIBRATION[calibration]]
    return row.run(problem, epsilon, delta, rng, tol, max_iter, accountant)


def calibrate(problem, epsilon: float, delta: float, tol: float,
              calibration: str = "tight") -> MechanismCalibration:
    """What :func:`gaussian_objective_perturbation` releases with and records (public quantities only)."""
    plan, solve_tol = amp_planned(
        lambda t: calibrate_gaussian_objective(problem, epsilon, delta, t, calibration), tol,
        problem.n_samples, problem.n_features, problem.loss.lipschitz * problem.data_norm)
    return objective_mechanism_calibration(problem, plan, epsilon, delta, solve_tol)


def release(problem: ERMProblem, calibration: MechanismCalibration, rng, tol: float,
            max_iter: int) -> MechanismOutput:
    """Steps 3-4 under ``calibration``: draw ``eta`` exactly, solve, release with AMP's noise."""
    plan = calibration.noise_law
    sigma_squared = Fraction(plan.scale_steps * (1 + SENSITIVITY_ROUNDING_MARGIN)) ** 2
    noise = grid_vector(sample_discrete_gaussian_vector(problem.n_features, sigma_squared, rng), plan.grid)
    return perturb_and_release(problem, calibration, noise, rng, tol, max_iter)


def noise_norm(dimension: int, epsilon: float, delta: float, lipschitz: float, data_norm: float,
               calibration: str = "tight") -> float:
    """RMS ``sigma sqrt(d)`` of the noise term, for the default alpha (public inputs only).

    The noise stage gets ``epsilon`` less AMP's output share; with ``s = 2 L R``
    (paper note 2): ``"tight"``: the default calibration's sigma
    (:func:`~dperm.privacy.sensitivity.tight_gaussian_objective_calibration`) taken on
    a fine grid, ``s / h =`` :data:`_NOISE_NORM_SPAN_STEPS`, where its rounding terms
    vanish; ``"004"``: 004's rule as dperm draws it
    (:func:`~dperm.privacy.sensitivity.discrete_gaussian_sigma_steps`: sigma* with the
    subgaussian norm quantile, linear in ``s``).
    """
    epsilon_noise, _ = split_epsilon_for_amp(epsilon)
    span = 2.0 * lipschitz * data_norm
    if calibration == "tight":
        steps = _NOISE_NORM_SPAN_STEPS
        sigma_steps, _ = tight_gaussian_objective_calibration(steps, dimension, epsilon_noise, delta)
        return sigma_steps * (span / steps) * math.sqrt(dimension)
    sigma = discrete_gaussian_sigma_steps(span, dimension, epsilon_noise, delta)
    return sigma * math.sqrt(dimension)


def calibrate_gaussian_objective(problem, epsilon: float, delta: float, tol: float,
                                 calibration: str = "tight") -> ObjectiveCalibration:
    """Steps 1-3's calibration (``"tight"`` or ``"004"``) from public quantities of ``problem`` only.

    Trusts its inputs: a loss with a curvature bound, ``delta > 0`` and a known
    calibration (the row's :meth:`~dperm.mechanisms.catalog.Mechanism.check`).
    """
    loss = problem.loss
    curvature = loss.curvature
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
    return MECHANISMS["gaussian_objective_004"].run(problem, epsilon, delta, rng, tol, max_iter,
                                                    accountant)


__all__ = ["calibrate", "calibrate_gaussian_objective", "expected_perturbation",
           "gaussian_objective_perturbation", "gaussian_objective_perturbation_004", "noise_norm",
           "release"]
