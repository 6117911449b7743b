"""Objective perturbation: 003 Alg. 2 (pure epsilon-DP, twice-differentiable losses)."""

from __future__ import annotations

import math

from dperm.exceptions import CertificateError
from dperm.accounting import spend_before_fitting
from dperm.mechanisms._problem import ERMProblem, MechanismOutput
from dperm.mechanisms.noise import sample_l2_laplace
from dperm.privacy.sensitivity import objective_noise_scale, objective_perturbation_slack
from dperm.solvers import minimize_erm
from dperm.validation import check_epsilon


def require_curvature(loss, mechanism: str) -> float:
    """Return the loss's curvature bound ``c`` or explain why the mechanism refuses it.

    The objective mechanisms also need a global Lipschitz bound ``L`` on the
    loss (003 Thm 2: ``||b - b'|| <= 2 L R``); least squares has none.
    """
    if not math.isfinite(loss.lipschitz):
        raise ValueError(
            f"mechanism={mechanism!r} needs a globally Lipschitz loss (003 Thm 2 / 004 "
            f"Thm 4.1); the {loss.name} loss is Lipschitz only on the bounded predictions "
            "of a regularised minimiser. Use mechanism='output' (000 Thm 2, Sec. 5.1)."
        )
    if loss.curvature is None:
        raise ValueError(
            f"mechanism={mechanism!r} needs a twice-differentiable loss with a bound c on "
            f"loss'' (003 Thm 2 / 004 Thm 4.1); the {loss.name} loss has none. Use "
            "mechanism='output' (output perturbation needs only a Lipschitz loss, "
            "000 Thm 2) or a smoothed loss such as 'huber' or 'smooth_hinge'."
        )
    return loss.curvature


def solve_perturbed(problem: ERMProblem, extra_regularization, noise, tol, max_iter):
    """Minimise ``J(w) + b.w/n + Delta/2 ||w||^2``; release nothing without a certificate.

    The privacy proofs (003 Thm 2, 004 Thm 4.1) assume the exact minimiser
    (shared papers note 8). dperm reports a guarantee only for a solve whose
    gradient norm meets ``tol``, so that the released point is within
    ``tol / (alpha + Delta)`` of the minimiser the proof is about (recorded as
    ``privacy_.solution_radius``); otherwise it raises :class:`CertificateError`
    and releases nothing. (Covering the residual itself, as approximate minima
    perturbation does, is not implemented.)
    """
    solve = minimize_erm(
        problem.loss, problem.X, problem.y, problem.alpha + extra_regularization, tol, max_iter,
        linear_term=noise,
    )
    if not solve.certified:
        raise CertificateError(
            f"objective perturbation: the solver stopped at gradient norm "
            f"{solve.gradient_norm:.3g} > tol={tol:g}; the guarantee assumes the exact "
            "minimiser (note 8), so no model is released. Increase max_iter or tol."
        )
    return solve


def objective_perturbation(problem: ERMProblem, epsilon: float, rng, tol: float, max_iter: int,
                           accountant=None):
    """Minimise the perturbed objective of 003 Alg. 2 with data norm R (note 2).

    1. ``eps', Delta`` from :func:`~dperm.privacy.sensitivity.objective_perturbation_slack`;
    2. draw ``b`` with density ``~ exp(-eps' ||b|| / (2 L R))``;
    3. return ``argmin J(w) + b.w / n + Delta/2 ||w||^2``.

    Returns
    -------
    MechanismOutput
        ``epsilon``-DP (pure) for the released ``coef`` (003 Thm 2, Cor. 4 for Huber).
    """
    epsilon = check_epsilon(epsilon)
    loss = problem.loss
    curvature = require_curvature(loss, "objective")
    spend_before_fitting(accountant, epsilon, 0.0, "objective perturbation (mechanism)")
    slack = objective_perturbation_slack(
        epsilon, problem.n_samples, problem.alpha, curvature, problem.data_norm
    )
    noise_scale = objective_noise_scale(slack.epsilon_noise, loss.lipschitz, problem.data_norm)
    noise = sample_l2_laplace(problem.n_features, noise_scale, rng)
    solve = solve_perturbed(problem, slack.extra_regularization, noise, tol, max_iter)
    return MechanismOutput(
        coef=solve.coef,
        epsilon=epsilon,
        delta=0.0,
        epsilon_noise=slack.epsilon_noise,
        extra_regularization=slack.extra_regularization,
        noise_distribution="l2-laplace",
        noise_scale=noise_scale,
        sensitivity=None,
        solve=solve,
        lipschitz=loss.lipschitz,
    )
