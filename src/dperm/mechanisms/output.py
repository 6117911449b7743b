"""Output perturbation: 003 Alg. 1, for any convex Lipschitz loss (000 Thm 2)."""

from __future__ import annotations

import numpy as np

from dperm.mechanisms._problem import ERMProblem, MechanismOutput
from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.noise import release_on_grid, vector_laplace_calibration
from dperm.privacy.mechanism_calibration import MechanismCalibration
from dperm.privacy.sensitivity import erm_l2_sensitivity, output_perturbation_sensitivity
from dperm.solvers import minimize_erm, solve_nonsmooth

__all__ = [
    "NONSMOOTH_RADIUS_FRACTION", "calibrate", "certified_minimiser", "expected_perturbation",
    "output_noise_calibration", "output_noise_scale", "output_perturbation", "output_sensitivity",
    "release", "release_output", "solution_radius_allowance",
]

#: For a non-differentiable loss (hinge, pinball) the solve is certified by a
#: duality gap or a smoothing bound, which cannot be driven to rounding level;
#: the public allowance for its error is this fraction of the exact-minimiser
#: sensitivity (the noise grows by 2x this).
NONSMOOTH_RADIUS_FRACTION = 0.005


def _lipschitz(problem: ERMProblem) -> float:
    """``C_L`` of 000 Thm 2 for this problem (``loss.solution_lipschitz``)."""
    return problem.loss.solution_lipschitz(problem.data_norm, problem.alpha)


def solution_radius_allowance(problem: ERMProblem, tol: float) -> float:
    """The radius ``r`` around the exact minimiser that the noise is calibrated for.

    ``tol / alpha`` for differentiable losses (a gradient norm ``<= tol`` proves
    it by strong convexity); ``NONSMOOTH_RADIUS_FRACTION`` of the exact
    sensitivity for piecewise-linear ones. Fixed before the data is solved.
    """
    if problem.loss.differentiable:
        return tol / problem.alpha
    return NONSMOOTH_RADIUS_FRACTION * erm_l2_sensitivity(
        problem.n_samples, problem.alpha, _lipschitz(problem), problem.data_norm
    )


def output_sensitivity(problem: ERMProblem, tol: float) -> float:
    """L2 sensitivity ``2 C_L R / (n alpha) + 2 r`` of the vector output perturbation releases."""
    return output_perturbation_sensitivity(
        problem.n_samples, problem.alpha, _lipschitz(problem), problem.data_norm,
        solution_radius_allowance(problem, tol),
    )


def output_noise_calibration(problem: ERMProblem, epsilon: float, tol: float):
    """Grid and Laplace-type scale of the output noise (003 Alg. 1, float-safe).

    The released vector has L2 sensitivity ``S`` (:func:`output_sensitivity`);
    :func:`dperm.mechanisms.noise.vector_laplace_calibration` turns it into a
    grid and the exact lattice law with the smaller noise for ``epsilon``: the
    joint L2 Laplace vector (003's radial noise on the grid) from ``d = 3`` on.
    The grid also respects the public bound ``||w|| <= C_L R / alpha + r = n S / 2``
    (the minimiser's first-order condition ``alpha w = -(1/n) sum l' x_i``),
    so no released coordinate is clamped.
    """
    sensitivity = output_sensitivity(problem, tol)
    return vector_laplace_calibration(sensitivity, problem.n_features, epsilon,
                                      value_bound=problem.n_samples * sensitivity / 2.0)


def output_noise_scale(problem: ERMProblem, epsilon: float, tol: float) -> float:
    """Scale ``g k / epsilon`` of the output noise (:func:`output_noise_calibration`)."""
    return output_noise_calibration(problem, epsilon, tol).noise_scale


def release_output(problem: ERMProblem, coef, epsilon: float, tol: float, rng) -> np.ndarray:
    """``coef`` rounded to the grid plus exact lattice Laplace noise: 003 Alg. 1's release step."""
    return release_on_grid(coef, output_noise_calibration(problem, epsilon, tol), rng)


def certified_minimiser(problem: ERMProblem, radius_allowed: float, max_iter: int):
    """Minimise the problem's objective and certify ``||w - argmin|| <= radius_allowed``.

    Differentiable losses: L-BFGS and Newton to ``||grad J|| <= alpha r``
    (strong convexity gives the radius). Piecewise-linear losses:
    :func:`dperm.solvers.solve_nonsmooth` (duality gap or smoothing bound).
    Weighted rows (``problem.sample_weight``): differentiable losses only.
    """
    loss = problem.loss
    if problem.sample_weight is not None and not loss.differentiable:  # the estimators refuse
        raise ValueError(f"sample_weight is not supported for the {loss.name} loss: its "  # it first
                         "certified solver is written for unweighted rows.")
    if loss.differentiable or problem.is_distributed:
        return minimize_erm(loss, problem.X, problem.y, problem.alpha,
                            problem.alpha * radius_allowed, max_iter,
                            sample_weight=problem.sample_weight)
    return solve_nonsmooth(loss, problem.X, problem.y, problem.alpha, radius_allowed, max_iter)


def output_perturbation(problem: ERMProblem, epsilon: float, delta: float, rng, tol: float,
                        max_iter: int, accountant=None):
    """Release ``argmin J + b`` with ``b ~ exp(-eps ||b|| / S)`` (003 Alg. 1).

    Generic over the loss: margin losses (classification) and residual losses
    (regression) alike, as long as the loss gives its Lipschitz constant ``C_L``
    in the prediction ``w.x`` (``loss.solution_lipschitz``: ``L`` for the
    logistic, Huber, hinge and pinball losses, 000 Sec. 5.1's constant for
    least squares). ``S`` is the L2 sensitivity of the released vector. The
    exact minimiser has sensitivity ``2 C_L R / (n alpha)`` (003 Cor. 1;
    000 Thm 2; paper note 2). A solver returns a point within a certified radius
    ``r`` of it, so two neighbouring outputs differ by at most
    ``2 C_L R / (n alpha) + 2 r`` (:func:`output_sensitivity`, from
    :func:`~dperm.privacy.sensitivity.output_perturbation_sensitivity`);
    dperm calibrates to that, with ``r`` fixed in advance
    (:func:`solution_radius_allowance`). The solve always certifies ``r``: after
    ``max_iter`` fast iterations a proven method finishes it
    (:mod:`dperm.solvers.proven`), so whether a model is released never depends
    on the data. The noise is a vector in
    coefficient space, never the scalar shift of 000 eq. 2 (paper note 6).

    Weighted rows (``problem.sample_weight``, ``v_i`` in [0, 1]): the objective is
    ``(1/n) sum v_i loss + alpha/2 ||w||^2`` with the public ``n``. Each ``v_i loss`` is
    convex and ``v_i C_L <= C_L``-Lipschitz in ``w.x``, which is all 000 Thm 2's and 003
    Cor. 1's proofs use of a row's term (the neighbours' minimisers differ by the
    gradient of one row's term over ``n alpha``), so the sensitivity
    ``2 C_L R / (n alpha)`` and the calibration are unchanged (docs/paper_notes.md,
    "Weighted rows").

    Float-safe: the minimiser is rounded to a power-of-two grid and gets exact
    integer noise (:func:`release_output`, :mod:`dperm.mechanisms.noise`) in
    place of 003 eq. 7's float draw of ``exp(-eps ||b|| / S)``: for ``d >= 3``
    the lattice L2 Laplace vector of :mod:`dperm.mechanisms.noise.l2_laplace`, whose
    mass is ``exp(eps / k)``-Lipschitz in L2 with ``k = S / g + sqrt(d)`` steps
    (the rounded neighbours' distance); for ``d <= 2`` per-coordinate discrete
    Laplace calibrated to the L1 bound. The guarantee is the same epsilon.

    The checked entry of :data:`~dperm.mechanisms.catalog.MECHANISMS`'s ``"output"`` row
    (:meth:`~dperm.mechanisms.catalog.Mechanism.run`): :func:`calibrate`, spend, :func:`release`.

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
        The certified solve's gradient tolerance and the fast solver's iteration
        cap (the proven completion is not capped by it).
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, 0)`` before anything is solved.

    Returns
    -------
    MechanismOutput
        ``epsilon``-DP (pure) for the released ``coef``.
    """
    return MECHANISMS["output"].run(problem, epsilon, delta, rng, tol, max_iter, accountant)


def calibrate(problem, epsilon: float, delta: float, tol: float) -> MechanismCalibration:
    """Output perturbation's calibration (pure: spends no delta), from public quantities of ``problem``.

    The grid and the exact lattice law of :func:`output_noise_calibration`, the
    sensitivity :func:`output_sensitivity`, the radius :func:`solution_radius_allowance`
    and ``C_L``. Trusts its inputs.
    """
    noise = output_noise_calibration(problem, epsilon, tol)
    return MechanismCalibration(
        epsilon=epsilon,
        delta=0.0,
        epsilon_noise=epsilon,
        extra_regularization=0.0,
        noise_distribution=noise.noise_distribution,
        noise_scale=noise.noise_scale,
        noise_grid=noise.step,
        sensitivity=output_sensitivity(problem, tol),
        solution_radius_allowance=solution_radius_allowance(problem, tol),
        lipschitz=_lipschitz(problem),
        noise_law=noise,
    )


def release(problem: ERMProblem, calibration: MechanismCalibration, rng, tol: float,
            max_iter: int) -> MechanismOutput:
    """003 Alg. 1 under ``calibration``: certify the minimiser within its radius, add its noise.

    The solve always certifies the radius (proven completion), then the point is
    rounded to the grid and gets the calibration's exact lattice noise.
    """
    solve = certified_minimiser(problem, calibration.solution_radius_allowance, max_iter)
    coef = release_on_grid(solve.coef, calibration.noise_law, rng)
    return MechanismOutput.released(coef, solve, calibration)


def expected_perturbation(problem, calibration: MechanismCalibration) -> float:
    """``sqrt(E ||noise||^2)`` of the output noise (a public bound; :meth:`GridCalibration.rms_noise_norm`)."""
    return calibration.noise_law.rms_noise_norm(problem.n_features)
