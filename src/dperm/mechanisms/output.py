"""Output perturbation: 003 Alg. 1, for any convex Lipschitz loss (000 Thm 2)."""

from __future__ import annotations

from dperm.exceptions import CertificateError
from dperm.mechanisms._problem import ERMProblem, MechanismOutput
from dperm.mechanisms.noise import sample_l2_laplace
from dperm.privacy.sensitivity import erm_l2_sensitivity
from dperm.solvers import RegularizedMarginObjective, minimize_certified, solve_hinge_svm
from dperm.validation import check_epsilon

#: For the hinge loss the solve is certified by a duality gap, which cannot be
#: driven to rounding level; the public allowance for its error is this
#: fraction of the exact-minimiser sensitivity (the noise grows by 2x this).
HINGE_RADIUS_FRACTION = 0.005


def output_perturbation(problem: ERMProblem, epsilon: float, rng, tol: float, max_iter: int):
    """Release ``argmin J + b`` with ``b ~ exp(-eps ||b|| / S)`` (003 Alg. 1).

    ``S`` is the L2 sensitivity of the released vector. The exact minimiser has
    sensitivity ``2 L R / (n alpha)`` (003 Cor. 1; 000 Thm 2; note 2). A solver
    returns a point within a certified radius ``r`` of it, so two neighbouring
    outputs differ by at most ``2 L R / (n alpha) + 2 r``; dperm calibrates to
    that, with ``r`` fixed in advance (``tol / alpha`` for smooth losses, a small
    fraction of the sensitivity for the hinge loss). If the solve cannot certify
    ``r``, nothing is released (:class:`CertificateError`).

    Returns
    -------
    MechanismOutput
        ``epsilon``-DP (pure) for the released ``coef``.
    """
    epsilon = check_epsilon(epsilon)
    loss = problem.loss
    exact_sensitivity = erm_l2_sensitivity(
        problem.n_samples, problem.alpha, loss.lipschitz, problem.data_norm
    )
    if loss.differentiable:
        radius_allowed = tol / problem.alpha
        objective = RegularizedMarginObjective(loss, problem.X, problem.y, problem.alpha)
        solve = minimize_certified(objective, tol=tol, max_iter=max_iter)
    else:
        radius_allowed = HINGE_RADIUS_FRACTION * exact_sensitivity
        solve = solve_hinge_svm(problem.X, problem.y, problem.alpha, radius_allowed, max_iter)
    if not solve.certified:
        raise CertificateError(
            f"output perturbation: the solver reached a solution radius of "
            f"{solve.solution_radius:.3g}, above the {radius_allowed:.3g} the noise is "
            "calibrated for, so no model is released. Increase max_iter or tol."
        )
    sensitivity = exact_sensitivity + 2.0 * radius_allowed
    noise_scale = sensitivity / epsilon
    noise = sample_l2_laplace(problem.n_features, noise_scale, rng)
    return MechanismOutput(
        coef=solve.coef + noise,
        epsilon=epsilon,
        delta=0.0,
        epsilon_noise=epsilon,
        extra_regularization=0.0,
        noise_distribution="l2-laplace",
        noise_scale=noise_scale,
        sensitivity=sensitivity,
        solve=solve,
    )
