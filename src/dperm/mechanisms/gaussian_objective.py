"""Gaussian objective perturbation: 004 Alg. 4 ((epsilon, delta)-DP)."""

from __future__ import annotations

from dperm.accounting import spend_before_fitting
from dperm.mechanisms._problem import ERMProblem, MechanismOutput
from dperm.mechanisms.noise import sample_gaussian
from dperm.mechanisms.objective import require_curvature, solve_perturbed
from dperm.privacy.sensitivity import gaussian_objective_sigma, objective_perturbation_slack
from dperm.validation import check_delta, check_epsilon


def gaussian_objective_perturbation(
    problem: ERMProblem, epsilon: float, delta: float, rng, tol: float, max_iter: int,
    accountant=None,
):
    """Minimise ``J(w) + eta.w / n + Delta/2 ||w||^2`` with ``eta ~ N(0, sigma^2 I)``.

    1. ``eps~, Delta`` from computeSlack (004 Proc. 2, typo fixed per note 4;
       the same rule as 003 Alg. 2);
    2. ``sigma = L R sigma*(d, eps~, delta)`` (004 Proc. 3, closed form of
       note 3, data norm per note 2);
    3. return the perturbed minimiser.

    Returns
    -------
    MechanismOutput
        ``(epsilon, delta)``-DP for the released ``coef`` (004 Thm 4.1).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    loss = problem.loss
    curvature = require_curvature(loss, "gaussian_objective")
    spend_before_fitting(accountant, epsilon, delta, "Gaussian objective perturbation (mechanism)")
    slack = objective_perturbation_slack(
        epsilon, problem.n_samples, problem.alpha, curvature, problem.data_norm
    )
    sigma = gaussian_objective_sigma(
        problem.n_features, slack.epsilon_noise, delta, loss.lipschitz, problem.data_norm
    )
    noise = sample_gaussian(problem.n_features, sigma, rng)
    solve = solve_perturbed(problem, slack.extra_regularization, noise, tol, max_iter)
    return MechanismOutput(
        coef=solve.coef,
        epsilon=epsilon,
        delta=delta,
        epsilon_noise=slack.epsilon_noise,
        extra_regularization=slack.extra_regularization,
        noise_distribution="gaussian",
        noise_scale=sigma,
        sensitivity=None,
        solve=solve,
        lipschitz=loss.lipschitz,
    )
