"""The one table of dperm's ERM mechanisms: name, function, what each needs, what it proves.

The estimators (``mechanism=``), the CLI's ``--mechanism`` choices, the audit,
the budget request (:meth:`Mechanism.delta_spent`) and the privacy record's
``reference`` all read :data:`MECHANISMS`; adding a mechanism is one entry here.
Every function has the signature
``f(problem, epsilon, delta, rng, tol, max_iter, accountant=None) -> MechanismOutput``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dperm.mechanisms.gaussian_objective import (
    gaussian_objective_perturbation,
    gaussian_objective_perturbation_004,
)
from dperm.mechanisms.objective import objective_perturbation, require_curvature
from dperm.mechanisms.output import output_perturbation
from dperm.privacy.references import REFERENCES


@dataclass(frozen=True)
class Mechanism:
    """One mechanism of the table.

    Attributes
    ----------
    name : str
        The value of ``mechanism=`` and ``--mechanism``.
    function : callable
        ``f(problem, epsilon, delta, rng, tol, max_iter, accountant=None)``.
    uses_delta : bool
        ``True``: ``(epsilon, delta)``-DP, needs ``delta > 0``; ``False``: pure
        ``epsilon``-DP, spends no delta whatever ``delta`` is passed.
    needs_curvature : bool
        The proof needs a twice-differentiable, globally Lipschitz loss with a
        bound ``c`` on ``loss''`` (003 Thm 2, 004 Thm 4.1).
    summary : str
        One line for ``--help`` and the docs.
    """

    name: str
    function: Callable
    uses_delta: bool
    needs_curvature: bool
    summary: str

    @property
    def reference(self) -> str:
        """Where the guarantee is proven (:data:`dperm.privacy.references.REFERENCES`)."""
        return REFERENCES[self.name]

    def delta_spent(self, delta: float) -> float:
        """The delta this mechanism's guarantee uses: ``delta`` or 0 for a pure mechanism."""
        return delta if self.uses_delta else 0.0

    def check(self, loss, delta: float) -> None:
        """Refuse a loss or a delta this mechanism's theorem does not cover (before any budget)."""
        if self.uses_delta and delta == 0:
            raise ValueError(
                f"mechanism={self.name!r} is (epsilon, delta)-DP and needs delta > 0 (004 Thm 4.1); "
                "pass e.g. delta=1e-5, or use mechanism='objective' for pure DP."
            )
        if self.needs_curvature:
            require_curvature(loss, self.name)


MECHANISMS: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Mechanism("objective", objective_perturbation, uses_delta=False, needs_curvature=True,
                  summary="objective perturbation, pure epsilon-DP (003 Alg. 2); smooth losses"),
        Mechanism("output", output_perturbation, uses_delta=False, needs_curvature=False,
                  summary="output perturbation, pure epsilon-DP (003 Alg. 1; 000 Thm 2); any "
                  "convex Lipschitz loss"),
        Mechanism("gaussian_objective", gaussian_objective_perturbation, uses_delta=True,
                  needs_curvature=True,
                  summary="Gaussian objective perturbation, (epsilon, delta)-DP, tight GLM "
                  "calibration (Redberg, Koskela & Wang 2023); smooth losses"),
        Mechanism("gaussian_objective_004", gaussian_objective_perturbation_004, uses_delta=True,
                  needs_curvature=True,
                  summary="Gaussian objective perturbation, (epsilon, delta)-DP, 004 Alg. 4's "
                  "sigma* (for the reproduction); smooth losses"),
    )
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
