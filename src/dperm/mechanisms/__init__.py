"""Privacy mechanisms for regularised ERM, each usable without any estimator.

- :func:`output_perturbation` (003 Alg. 1; 000 Thm 2 for non-smooth losses)
- :func:`objective_perturbation` (003 Alg. 2)
- :func:`gaussian_objective_perturbation` (004 Alg. 4)
"""

from dperm.mechanisms._problem import ERMProblem, MechanismOutput
from dperm.mechanisms.gaussian_objective import gaussian_objective_perturbation
from dperm.mechanisms.noise import (
    release_on_grid,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_gaussian,
    sample_l2_laplace,
)
from dperm.mechanisms.objective import objective_perturbation
from dperm.mechanisms.output import output_perturbation

MECHANISMS = ("objective", "output", "gaussian_objective")


def run_mechanism(name: str, problem: ERMProblem, epsilon, delta, rng, tol, max_iter, accountant=None):
    """Dispatch to a mechanism by the name estimators use in ``mechanism=``.

    ``accountant`` (a :class:`~dperm.accounting.BudgetAccountant`) is charged by the
    mechanism before it solves anything.
    """
    if name == "output":
        return output_perturbation(problem, epsilon, rng, tol, max_iter, accountant)
    if name == "objective":
        return objective_perturbation(problem, epsilon, rng, tol, max_iter, accountant)
    if name == "gaussian_objective":
        return gaussian_objective_perturbation(problem, epsilon, delta, rng, tol, max_iter, accountant)
    raise ValueError(f"mechanism must be one of {MECHANISMS}; got {name!r}.")


__all__ = [
    "ERMProblem",
    "MECHANISMS",
    "MechanismOutput",
    "gaussian_objective_perturbation",
    "objective_perturbation",
    "output_perturbation",
    "release_on_grid",
    "run_mechanism",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_gaussian",
    "sample_l2_laplace",
]
