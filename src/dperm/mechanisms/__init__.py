"""Privacy mechanisms for regularised ERM, each usable without any estimator.

- :func:`output_perturbation` (003 Alg. 1; 000 Thm 2 for non-smooth losses)
- :func:`objective_perturbation` (003 Alg. 2)
- :func:`gaussian_objective_perturbation` (GLM calibration with the one-factor Jacobian
  bound, after Redberg, Koskela & Wang 2023; `_004`: 004 Alg. 4)

:data:`MECHANISMS` is the one table of them, one row per mechanism
(:mod:`dperm.mechanisms.catalog`, which imports the standard library only).
The names are imported on first use (PEP 562), so ``dperm.mechanisms.catalog``
(read by ``dperm train --help``) loads without NumPy or SciPy.
"""

from dperm._lazy import lazy_attributes

#: Public name -> the module that defines it.
_PUBLIC = {
    "ERMProblem": "dperm.mechanisms._problem",
    "MECHANISMS": "dperm.mechanisms.catalog",
    "Mechanism": "dperm.mechanisms.catalog",
    "MechanismOutput": "dperm.mechanisms._problem",
    "PublicProblem": "dperm.mechanisms._problem",
    "get_mechanism": "dperm.mechanisms.catalog",
    "gaussian_objective_perturbation": "dperm.mechanisms.gaussian_objective",
    "gaussian_objective_perturbation_004": "dperm.mechanisms.gaussian_objective",
    "objective_perturbation": "dperm.mechanisms.objective",
    "output_perturbation": "dperm.mechanisms.output",
    "release_on_grid": "dperm.mechanisms.noise",
    "run_mechanism": "dperm.mechanisms.catalog",
    "sample_discrete_gaussian": "dperm.mechanisms.noise",
    "sample_discrete_l2_laplace_vector": "dperm.mechanisms.noise.l2_laplace",
    "sample_discrete_laplace": "dperm.mechanisms.noise",
}

__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC, globals())
