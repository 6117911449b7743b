"""The one table of dperm's ERM mechanisms: name, function, what each needs, what it proves.

The estimators (``mechanism=``), the audit, the budget request
(:meth:`Mechanism.delta_spent`) and the privacy record's ``reference`` all read
:data:`MECHANISMS`. Its names, summaries and flags come from the import-free
:data:`dperm.mechanisms.catalog.CATALOG` (which the CLI's ``--mechanism`` choices
read); adding a mechanism is one entry there and its functions here.
Every function has the signature
``f(problem, epsilon, delta, rng, tol, max_iter, accountant=None) -> MechanismOutput``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dperm.mechanisms.catalog import CATALOG
from dperm.mechanisms.gaussian_objective import (
    calibrate_gaussian_objective,
    gaussian_objective_calibration,
    gaussian_objective_perturbation,
    gaussian_objective_perturbation_004,
)
from dperm.mechanisms.objective import (
    calibrate_objective,
    expected_objective_perturbation,
    objective_calibration,
    objective_perturbation,
    require_curvature,
)
from dperm.mechanisms.output import (
    expected_output_perturbation,
    output_calibration,
    output_perturbation,
)
from dperm.mechanisms.sufficient_statistics import (
    expected_gaussian_sufficient_statistics_perturbation,
    expected_sufficient_statistics_perturbation,
    gaussian_sufficient_statistics_calibration,
    gaussian_sufficient_statistics_perturbation,
    sufficient_statistics_calibration,
    sufficient_statistics_perturbation,
)
from dperm.privacy.references import REFERENCES


@dataclass(frozen=True)
class Mechanism:
    """One mechanism of the table.

    Attributes
    ----------
    name, uses_delta, needs_curvature, summary
        As in :class:`dperm.mechanisms.catalog.MechanismInfo` (the registry copies them
        from :data:`~dperm.mechanisms.catalog.CATALOG`).
    function : callable
        ``f(problem, epsilon, delta, rng, tol, max_iter, accountant=None)``.
    expected_perturbation : callable
        ``f(problem, epsilon, delta, tol) -> float``: a bound on the RMS distance the
        noise moves the released point, from public quantities of ``problem`` only
        (a :class:`~dperm.mechanisms._problem.PublicProblem`); read by
        :func:`dperm.mechanisms.choice.choose_mechanism`.
    calibration : callable
        ``f(problem, epsilon, delta, tol) -> MechanismCalibration``: every number the
        run records about its calibration, from public quantities of ``problem`` only;
        the function releases with the same numbers, and :mod:`dperm.model_io`
        recomputes them to check a model file.
    auto_candidate : bool
        Whether ``mechanism="auto"`` may choose it (``False`` for calibrations kept
        only to reproduce a paper).
    """

    name: str
    function: Callable
    uses_delta: bool
    needs_curvature: bool
    summary: str
    expected_perturbation: Callable
    calibration: Callable
    auto_candidate: bool = True

    @property
    def reference(self) -> str:
        """Where the guarantee is proven (:data:`dperm.privacy.references.REFERENCES`)."""
        return REFERENCES[self.name]

    def delta_spent(self, delta: float) -> float:
        """The delta this mechanism's guarantee uses: ``delta`` or 0 for a pure mechanism."""
        return delta if self.uses_delta else 0.0

    def accepts(self, loss, delta: float) -> bool:
        """Whether :meth:`check` passes: the theorem covers ``loss`` and ``delta``."""
        try:
            self.check(loss, delta)
        except ValueError:
            return False
        return True

    def check(self, loss, delta: float) -> None:
        """Refuse a loss or a delta this mechanism's theorem does not cover (before any budget)."""
        if self.uses_delta and delta == 0:
            raise ValueError(
                f"mechanism={self.name!r} is (epsilon, delta)-DP and needs delta > 0 (004 Thm 4.1); "
                "pass e.g. delta=1e-5, or use mechanism='objective' for pure DP."
            )
        if self.needs_curvature:
            require_curvature(loss, self.name)


def _objective_perturbation_size(problem, epsilon, delta, tol):
    return expected_objective_perturbation(problem, calibrate_objective(problem, epsilon, tol), tol)


def _gaussian_perturbation_size(calibration):
    def size(problem, epsilon, delta, tol):
        plan = calibrate_gaussian_objective(problem, epsilon, delta, tol, calibration)
        return expected_objective_perturbation(problem, plan, tol)
    return size


def _output_perturbation_size(problem, epsilon, delta, tol):
    return expected_output_perturbation(problem, epsilon, tol)


def _gaussian_calibration_004(problem, epsilon, delta, tol):
    return gaussian_objective_calibration(problem, epsilon, delta, tol, calibration="004")


#: Each mechanism's functions: ``(mechanism, expected perturbation, calibration)``; the rest
#: of its entry (delta, curvature, summary, auto) is :data:`dperm.mechanisms.catalog.CATALOG`'s.
_FUNCTIONS = {
    "objective": (objective_perturbation, _objective_perturbation_size, objective_calibration),
    "output": (output_perturbation, _output_perturbation_size, output_calibration),
    "gaussian_objective": (gaussian_objective_perturbation, _gaussian_perturbation_size("tight"),
                           gaussian_objective_calibration),
    "gaussian_objective_004": (gaussian_objective_perturbation_004, _gaussian_perturbation_size("004"),
                               _gaussian_calibration_004),
    "adassp": (sufficient_statistics_perturbation, expected_sufficient_statistics_perturbation,
               sufficient_statistics_calibration),
    "gaussian_adassp": (gaussian_sufficient_statistics_perturbation,
                        expected_gaussian_sufficient_statistics_perturbation,
                        gaussian_sufficient_statistics_calibration),
}
if set(_FUNCTIONS) != set(CATALOG):  # a catalog entry without functions, or functions without one
    raise ImportError(f"dperm.mechanisms: the catalog names {sorted(CATALOG)} but the registry has "
                      f"functions for {sorted(_FUNCTIONS)}; add the missing side.")

MECHANISMS: dict[str, Mechanism] = {
    name: Mechanism(name, _FUNCTIONS[name][0], uses_delta=info.uses_delta,
                    needs_curvature=info.needs_curvature, summary=info.summary,
                    expected_perturbation=_FUNCTIONS[name][1], calibration=_FUNCTIONS[name][2],
                    auto_candidate=info.auto_candidate)
    for name, info in CATALOG.items()
}


def get_mechanism(name) -> Mechanism:
    """The table's entry for ``name``, or a ``ValueError`` that lists the names."""
    try:
        return MECHANISMS[name]
    except (KeyError, TypeError):
        raise ValueError(f"mechanism must be one of {tuple(MECHANISMS)}; got {name!r}.") from None


def run_mechanism(name: str, problem, epsilon, delta, rng, tol, max_iter, accountant=None):
    """Run the mechanism ``name`` (the estimators' ``mechanism=``) on ``problem``.

    ``accountant`` (a :class:`~dperm.privacy.accounting.BudgetAccountant`) is charged by the
    mechanism before it solves anything.
    """
    return get_mechanism(name).function(problem, epsilon, delta, rng, tol, max_iter, accountant)
