"""Gaussian objective perturbation of multinomial (softmax) logistic regression, (epsilon, delta)-DP.

The Gaussian form of :mod:`dperm.mechanisms.multinomial_objective`: one ``(d, K)`` noise
matrix with independent exact discrete Gaussian coordinates (Canonne, Kamath & Steinke
2020) perturbs one K-class objective with the whole ``(epsilon, delta)``. Its noise grows
like ``sqrt(d K)`` where the pure form's lattice Laplace law grows like ``d K``, and where
one-vs-rest pays ``epsilon / K`` per class. The derivation (docs/design/gaussian_multinomial.md)
is dperm's GLM Gaussian calibration (docs/design/gaussian_objective.md, after Redberg,
Koskela & Wang 2023) carried to the softmax loss: the noise shift ``2 sqrt(2) R`` and the
Jacobian term ``(K - 1) log(1 + R^2 / (K n (alpha + Delta)))`` of the pure form
(:mod:`dperm.privacy.multinomial`), and the shift's projection bounded by the largest of
the ``K (K - 1) / 2`` class differences along each of the two differing rows
(``tail_factor = 2 K (K - 1)`` in place of the GLM's 4). The rest is objective
perturbation's: the power-of-two grid, the certified solve, approximate minima
perturbation's output stage (Iyengar et al. 2019).
"""

from __future__ import annotations

import math
from fractions import Fraction

from dperm.mechanisms._problem import MechanismCalibration, MechanismOutput
from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.multinomial_objective import MultinomialProblem, expected_perturbation, release_with_linear_term
from dperm.mechanisms.noise import grid_vector, sample_discrete_gaussian_vector
from dperm.mechanisms.objective import ObjectiveCalibration, amp_planned, objective_mechanism_calibration
from dperm.privacy.multinomial import (
    MULTINOMIAL_GRADIENT_BOUND,
    gaussian_multinomial_sigma_steps,
    multinomial_noise_sensitivity,
    multinomial_objective_slack,
)
from dperm.privacy.sensitivity import (
    SENSITIVITY_ROUNDING_MARGIN,
    objective_noise_grid,
    split_epsilon_for_amp,
)

#: The name of the mechanism in records and in ``mechanism_``.
GAUSSIAN_MULTINOMIAL_OBJECTIVE = "gaussian_multinomial_objective"
#: The noise span ``2 L R / h`` in steps at which :func:`noise_norm` takes sigma: a fine
#: grid, where the rounding terms vanish (as :mod:`dperm.mechanisms.gaussian_objective`).
_NOISE_NORM_SPAN_STEPS = 2.0**30

__all__ = [
    "GAUSSIAN_MULTINOMIAL_OBJECTIVE",
    "calibrate",
    "calibrate_gaussian_multinomial_objective",
    "expected_perturbation",  # the pure form's: sigma sqrt(d K) / (n (alpha + Delta)) + AMP's output noise
    "gaussian_multinomial_objective_perturbation",
    "noise_norm",
    "release",
]


def calibrate_gaussian_multinomial_objective(problem: MultinomialProblem, epsilon: float, delta: float,
                                             tol: float) -> ObjectiveCalibration:
    """The objective stage's calibration (public quantities of ``problem`` only; trusts its inputs).

    ``eps~, Delta`` from :func:`~dperm.privacy.multinomial.multinomial_objective_slack`
    (the Jacobian term does not depend on the noise law); sigma in steps from
    :func:`~dperm.privacy.multinomial.gaussian_multinomial_sigma_steps` for the span
    ``2 sqrt(2) R / h`` (:func:`~dperm.privacy.multinomial.multinomial_noise_sensitivity`,
    enlarged by the rounding margin) in ``d K`` coordinates.
    """
    epsilon_objective, epsilon_output = split_epsilon_for_amp(epsilon)
    slack = multinomial_objective_slack(epsilon_objective, problem.n_samples, problem.alpha,
                                        problem.n_classes, problem.data_norm)
    dimension = problem.dimension
    grid = objective_noise_grid(problem.n_samples, tol, dimension)
    span_steps = multinomial_noise_sensitivity(problem.data_norm) * (1 + SENSITIVITY_ROUNDING_MARGIN) / grid
    sigma_steps = gaussian_multinomial_sigma_steps(span_steps, dimension, slack.epsilon_noise, delta,
                                                   problem.n_classes)
    return ObjectiveCalibration(epsilon_objective, epsilon_output, slack, grid,
                                "discrete-gaussian", sigma_steps)


def calibrate(problem: MultinomialProblem, epsilon: float, delta: float, tol: float) -> MechanismCalibration:
    """The row's ``calibrate``: every number the release uses and the record shows.

    From public quantities of ``problem`` (``X`` may be ``None``); ``delta`` is spent.
    ``noise_law`` is the objective stage's :class:`~dperm.mechanisms.objective.ObjectiveCalibration`,
    ``output_noise_law`` AMP's output stage (pure, ``epsilon_output``).
    """
    plan, solve_tol = amp_planned(
        lambda t: calibrate_gaussian_multinomial_objective(problem, epsilon, delta, t), tol,
        problem.n_samples, problem.dimension, MULTINOMIAL_GRADIENT_BOUND * problem.data_norm)
    return objective_mechanism_calibration(problem, plan, epsilon, delta, solve_tol, dimension=problem.dimension)


def noise_norm(dimension: int, epsilon: float, delta: float, lipschitz: float, data_norm: float,
               n_classes: int = 2) -> float:
    """RMS ``sigma sqrt(D)`` of the noise term for the default alpha (public inputs only).

    The noise stage's epsilon less AMP's share, the span ``s = 2 L R``, sigma on a fine grid
    (``s / h =`` :data:`_NOISE_NORM_SPAN_STEPS`, where the rounding terms vanish) with the
    tail factor of ``n_classes`` classes. sigma is linear in ``s`` there, so the estimator's
    per-column request (``L = sqrt(2 / K)``, ``D = d K``) gives one class column's RMS norm.
    """
    epsilon_noise, _ = split_epsilon_for_amp(epsilon)
    steps = _NOISE_NORM_SPAN_STEPS
    sigma_steps = gaussian_multinomial_sigma_steps(steps, dimension, epsilon_noise, delta, n_classes)
    return sigma_steps * (2.0 * lipschitz * data_norm / steps) * math.sqrt(dimension)


def release(problem: MultinomialProblem, calibration: MechanismCalibration, rng, tol: float,
            max_iter: int) -> MechanismOutput:
    """Draw ``b`` (exact discrete Gaussian on the grid), certified solve, AMP's output noise."""
    plan = calibration.noise_law
    dimension = problem.dimension
    sigma_squared = Fraction(plan.scale_steps * (1 + SENSITIVITY_ROUNDING_MARGIN)) ** 2
    noise = grid_vector(sample_discrete_gaussian_vector(dimension, sigma_squared, rng), plan.grid)
    return release_with_linear_term(problem, calibration, noise, rng, tol, max_iter)


def gaussian_multinomial_objective_perturbation(problem: MultinomialProblem, epsilon: float,
                                                delta: float, rng, tol: float, max_iter: int,
                                                accountant=None):
    """Release ``W`` (shape ``(d, K)``) of multinomial logistic regression, ``(epsilon, delta)``-DP.

    1. split ``epsilon`` into the objective stage and AMP's output stage (99 % / 1 %,
       :func:`~dperm.privacy.sensitivity.split_epsilon_for_amp`);
    2. ``eps~, Delta``: :func:`~dperm.privacy.multinomial.multinomial_objective_slack`, the
       Jacobian term ``(K - 1) log(1 + R^2 / (K n (alpha + Delta)))``
       (docs/design/multinomial.md, step 2);
    3. ``b = h z``, ``z`` in Z^(d K) with independent discrete Gaussian coordinates of std
       ``sigma`` steps, the smallest whose privacy-profile bound is at most ``delta`` at
       ``eps~`` (docs/design/gaussian_multinomial.md, steps G1-G3);
    4. minimise ``(1/n) sum loss + (alpha + Delta)/2 ||W||_F^2 + b.W / n`` to
       ``||grad|| <= tol`` (certified);
    5. release that point plus AMP's output noise for sensitivity ``2 r`` (pure, 1 % of eps).

    The checked entry of the ``"gaussian_multinomial_objective"`` row of
    :data:`~dperm.mechanisms.catalog.MECHANISMS`: checks, :func:`calibrate`, spends
    ``(epsilon, delta)``, :func:`release`.

    Returns
    -------
    MechanismOutput
        ``coef`` of shape ``(d, K)`` on the output grid; ``(epsilon, delta)``-DP for
        replace-one neighbours (docs/design/gaussian_multinomial.md; Iyengar et al. 2019,
        Thm 1; basic composition).
    """
    return MECHANISMS[GAUSSIAN_MULTINOMIAL_OBJECTIVE].run(problem, epsilon, delta, rng, tol, max_iter,
                                                          accountant)
