"""Objective perturbation of multinomial (softmax) logistic regression: 003 Alg. 2 for K classes.

One noise matrix ``b`` of shape ``(d, K)`` perturbs one K-class objective with the whole
epsilon, instead of one-vs-rest's K binary problems at ``epsilon / K`` each. The
derivation (the noise's sensitivity ``2 sqrt(2) R`` and the Jacobian term
``(K - 1) log(1 + R^2 / (K n (alpha + Delta)))``) is docs/design/multinomial.md; its
arithmetic is :mod:`dperm.privacy.multinomial`. The rest is objective perturbation as
:mod:`dperm.mechanisms.objective` does it for a GLM: the noise on the power-of-two grid
of :func:`~dperm.privacy.sensitivity.objective_noise_grid` drawn exactly
(:func:`~dperm.mechanisms.objective.objective_laplace_noise`, the lattice L2 Laplace law
for ``d K >= 3``), the certified solve, and approximate minima perturbation's output stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dperm.losses_multinomial import MultinomialLogisticLoss, MultinomialObjective
from dperm.mechanisms._problem import MechanismCalibration, MechanismOutput
from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.noise import grid_vector, release_on_grid, sample_grid_noise
from dperm.mechanisms.objective import (
    ObjectiveCalibration,
    amp_planned,
    objective_laplace_noise,
    objective_mechanism_calibration,
)
from dperm.mechanisms.objective import noise_norm as _objective_noise_norm
from dperm.privacy.multinomial import (
    MULTINOMIAL_GRADIENT_BOUND,
    check_n_classes,
    multinomial_dimension,
    multinomial_objective_slack,
)
from dperm.privacy.sensitivity import objective_noise_grid, split_epsilon_for_amp
from dperm.solvers import minimize_certified

#: The name of the mechanism in records and in ``mechanism_``.
MULTINOMIAL_OBJECTIVE = "multinomial_objective"

__all__ = [
    "MULTINOMIAL_OBJECTIVE",
    "MultinomialProblem",
    "calibrate",
    "calibrate_multinomial_objective",
    "expected_multinomial_perturbation",
    "expected_perturbation",
    "release_with_linear_term",
    "multinomial_objective_perturbation",
    "noise_norm",
    "release",
]


@dataclass(frozen=True)
class MultinomialProblem:
    """``min_W (1/n) sum_i loss(W; x_i, y_i) + alpha/2 ||W||_F^2`` with ``||x_i|| <= data_norm``.

    Attributes
    ----------
    X : ndarray of shape (n, d) or None
        Rows already clipped to ``data_norm`` (and augmented with the intercept column);
        ``None`` for a public problem (calibration only).
    labels : ndarray of shape (n,) or None
        Class indices in ``{0, ..., K-1}`` (positions in the public label set).
    n_classes : int
        ``K``, the size of the public label set.
    alpha : float
    data_norm : float
        ``R`` (the intercept's column included).
    n_samples, n_features : int
        Public sizes; read from ``X`` when it is given.
    sample_weight : ndarray of shape (n,) or None
        Row weights in [0, 1] (part of each row): the loss term is ``(1/n) sum v_i loss``.
        The changed row's gradient ``v_i x_i (p_i - e_{y_i})^T`` keeps the Frobenius bound
        ``sqrt(2) R`` and its Hessian ``v_i (x_i x_i^T) kron (diag(p_i) - p_i p_i^T)`` the
        rank ``K - 1`` and trace bound the Jacobian term uses (scaled by ``v_i <= 1``), so
        the calibration is unchanged (paper note 15).
    """

    X: np.ndarray | None
    labels: np.ndarray | None
    n_classes: int
    alpha: float
    data_norm: float
    n_samples: int = 0
    n_features: int = 0
    sample_weight: np.ndarray | None = None

    def __post_init__(self):
        if self.X is not None:
            object.__setattr__(self, "n_samples", int(self.X.shape[0]))
            object.__setattr__(self, "n_features", int(self.X.shape[1]))

    @property
    def dimension(self) -> int:
        """``d K``: the length of ``W.ravel()`` and of the noise."""
        return multinomial_dimension(self.n_features, self.n_classes)

    @property
    def loss(self) -> MultinomialLogisticLoss:
        return MultinomialLogisticLoss(self.n_classes)


def calibrate_multinomial_objective(problem: MultinomialProblem, epsilon: float,
                                    tol: float) -> ObjectiveCalibration:
    """003 Alg. 2's calibration for K classes, float-safe (public quantities of ``problem`` only)."""
    n_classes = check_n_classes(problem.n_classes)
    epsilon_objective, epsilon_output = split_epsilon_for_amp(epsilon)
    slack = multinomial_objective_slack(epsilon_objective, problem.n_samples, problem.alpha,
                                        n_classes, problem.data_norm)
    dimension = problem.dimension
    grid = objective_noise_grid(problem.n_samples, tol, dimension)
    # ||b_D - b_D'||_F <= 2 L R with L = sqrt(2) (multinomial_noise_sensitivity)
    noise = objective_laplace_noise(MULTINOMIAL_GRADIENT_BOUND, problem.data_norm, dimension, grid,
                                    slack.epsilon_noise)
    return ObjectiveCalibration(epsilon_objective, epsilon_output, slack, grid,
                                noise.noise_distribution, noise.scale_in_steps, laplace=noise)


def calibrate(problem: MultinomialProblem, epsilon: float, delta: float, tol: float) -> MechanismCalibration:
    """The row's ``calibrate``: every number the mechanism records, from public quantities of
    ``problem`` (a :class:`MultinomialProblem`, ``X`` may be ``None``); pure, spends no delta.

    The exact laws ride along: ``noise_law`` is the objective stage's
    :class:`~dperm.mechanisms.objective.ObjectiveCalibration`, ``output_noise_law`` AMP's
    output stage. Trusts its inputs (the row's :meth:`~dperm.mechanisms.catalog.Mechanism.run`
    or the estimator checked them).
    """
    plan, solve_tol = amp_planned(lambda t: calibrate_multinomial_objective(problem, epsilon, t), tol,
                                  problem.n_samples, problem.dimension,
                                  MULTINOMIAL_GRADIENT_BOUND * problem.data_norm)
    # AMP's output stage for the d K released numbers; L = sqrt(2), the gradient's Frobenius bound
    return objective_mechanism_calibration(problem, plan, epsilon, 0.0, solve_tol, dimension=problem.dimension)


def expected_perturbation(problem: MultinomialProblem, calibration: MechanismCalibration) -> float:
    """A public bound on the RMS Frobenius distance the noise moves the released ``W``.

    ``||b|| / (n (alpha + Delta))`` (strong convexity) plus AMP's output noise, as
    :func:`~dperm.mechanisms.objective.expected_perturbation` for a GLM.
    """
    plan = calibration.noise_law
    regularization = problem.alpha + plan.slack.extra_regularization
    d = problem.dimension
    return (plan.rms_noise_norm(d) / (problem.n_samples * regularization)
            + calibration.output_noise_law.rms_noise_norm(d))


def expected_multinomial_perturbation(problem: MultinomialProblem, epsilon: float, tol: float) -> float:
    """:func:`expected_perturbation` of the calibration at ``epsilon``."""
    return expected_perturbation(problem, calibrate(problem, epsilon, 0.0, tol))


def noise_norm(dimension: int, epsilon: float, delta: float, lipschitz: float, data_norm: float,
               n_classes: int | None = None) -> float:
    """RMS norm of the noise term for the default alpha: objective perturbation's
    (:func:`dperm.mechanisms.objective.noise_norm`) for ``dimension = d K`` numbers
    (``n_classes`` is accepted and not needed: the lattice law's norm depends on ``d K`` only).

    The estimator asks it for one class column's share (``lipschitz = sqrt(2 / K)``, the
    lattice L2 law spreading ``E||b||^2`` evenly over the ``K`` columns):
    :class:`dperm.linear_model._multinomial._PerClassColumn`.
    """
    return _objective_noise_norm(dimension, epsilon, delta, lipschitz, data_norm)


def release(problem: MultinomialProblem, calibration: MechanismCalibration, rng, tol: float,
            max_iter: int) -> MechanismOutput:
    """Steps 3-5 under ``calibration``: draw ``b`` exactly, certified solve, AMP's output noise."""
    plan = calibration.noise_law
    noise = grid_vector(sample_grid_noise(plan.laplace, problem.dimension, rng), plan.grid)
    return release_with_linear_term(problem, calibration, noise, rng, tol, max_iter)


def release_with_linear_term(problem: MultinomialProblem, calibration: MechanismCalibration, noise,
                             rng, tol: float, max_iter: int) -> MechanismOutput:
    """Solve the multinomial objective with the drawn noise as its linear term, then release.

    The step every multinomial objective row shares after drawing its noise (the pure row's
    lattice Laplace, the Gaussian row's discrete Gaussian): the slack's extra regularisation,
    the certified solve, and AMP's output noise on the grid (``calibration.output_noise_law``).
    """
    regularization = problem.alpha + calibration.noise_law.slack.extra_regularization
    objective = MultinomialObjective(problem.loss, problem.X, problem.labels, regularization,
                                     linear_term=noise, sample_weight=problem.sample_weight)
    solve = minimize_certified(objective, tol=calibration.solve_tol or tol, max_iter=max_iter,
                               w0=np.zeros(problem.dimension))
    coef = release_on_grid(solve.coef, calibration.output_noise_law, rng)
    return MechanismOutput.released(coef.reshape(problem.n_features, problem.n_classes), solve,
                                    calibration)


def multinomial_objective_perturbation(problem: MultinomialProblem, epsilon: float, delta: float,
                                       rng, tol: float, max_iter: int, accountant=None):
    """Release ``W`` (shape ``(d, K)``) of multinomial logistic regression, pure ``epsilon``-DP.

    1. split ``epsilon`` into the objective stage and AMP's output stage
       (:func:`~dperm.privacy.sensitivity.split_epsilon_for_amp`);
    2. ``eps', Delta`` from :func:`~dperm.privacy.multinomial.multinomial_objective_slack`:
       the Jacobian term ``(K - 1) log(1 + R^2 / (K n (alpha + Delta)))``
       (docs/design/multinomial.md, step 2);
    3. draw ``b = h z`` in R^(d K): ``z`` exact lattice noise whose mass is
       ``exp(eps')``-Lipschitz over cells ``2 sqrt(2) R / h + sqrt(d K)`` apart (L2 law) or
       the L1 analogue (:func:`~dperm.mechanisms.objective.objective_laplace_noise` with
       ``L = sqrt(2)``; step 1);
    4. minimise ``(1/n) sum loss + (alpha + Delta)/2 ||W||_F^2 + b.W / n`` to
       ``||grad|| <= tol`` (certified, :func:`dperm.solvers.minimize_certified`);
    5. release that point plus AMP's output noise for sensitivity ``2 r``.

    The checked entry of :data:`~dperm.mechanisms.catalog.MECHANISMS`'s
    ``"multinomial_objective"`` row (:meth:`~dperm.mechanisms.catalog.Mechanism.run`):
    :func:`calibrate`, spend, :func:`release`.

    Parameters
    ----------
    problem : MultinomialProblem
    epsilon : float
    delta : float
        Not used (pure DP); taken so the signature is every mechanism's.
    rng : numpy.random.Generator
        ``OSEntropyGenerator`` (the default of the estimators) or a seeded Generator (tests).
    tol, max_iter : float, int
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, 0)`` after the calibration's checks, before anything is solved.

    Returns
    -------
    MechanismOutput
        ``coef`` of shape ``(d, K)``, on the output grid; ``epsilon``-DP for replace-one
        neighbours (docs/design/multinomial.md; Iyengar et al. 2019, Thm 1; basic composition).
    """
    return MECHANISMS[MULTINOMIAL_OBJECTIVE].run(problem, epsilon, delta, rng, tol, max_iter, accountant)
