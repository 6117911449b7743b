"""Privacy mechanisms for regularised ERM, each usable without any estimator.

- :func:`output_perturbation` (003 Alg. 1; 000 Thm 2 for non-smooth losses)
- :func:`objective_perturbation` (003 Alg. 2)
- :func:`gaussian_objective_perturbation` (tight GLM calibration; `_004`: 004 Alg. 4)

:data:`MECHANISMS` is the table of them (:mod:`dperm.mechanisms.registry`).
"""

from dperm.mechanisms._problem import ERMProblem, MechanismOutput, PublicProblem
from dperm.mechanisms.gaussian_objective import (
    gaussian_objective_perturbation,
    gaussian_objective_perturbation_004,
)
from dperm.mechanisms.noise import (
    release_on_grid,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_gaussian,
    sample_l2_laplace,
)
from dperm.mechanisms.objective import objective_perturbation
from dperm.mechanisms.output import output_perturbation
from dperm.mechanisms.registry import MECHANISMS, Mechanism, get_mechanism, run_mechanism

__all__ = [
    "ERMProblem",
    "MECHANISMS",
    "Mechanism",
    "MechanismOutput",
    "PublicProblem",
    "get_mechanism",
    "gaussian_objective_perturbation",
    "gaussian_objective_perturbation_004",
    "objective_perturbation",
    "output_perturbation",
    "release_on_grid",
    "run_mechanism",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_gaussian",
    "sample_l2_laplace",
]
