"""The names of dperm's ERM mechanisms and what each proves, without importing any of them.

:data:`CATALOG` is the import-free half of
:data:`dperm.mechanisms.registry.MECHANISMS`: the registry attaches each
entry's functions (the mechanism and its expected perturbation), and the
command line reads the names and summaries from here for the ``--mechanism``
choices and help of ``dperm train`` and ``dperm audit``, so that building
their parsers (``--help``) imports neither NumPy nor SciPy. Adding a mechanism
is one entry here and its functions in the registry. This module imports the
standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MechanismInfo:
    """What the command line and the registry need to know of a mechanism before running it.

    Attributes
    ----------
    name : str
        The value of ``mechanism=`` and ``--mechanism``.
    uses_delta : bool
        ``True``: ``(epsilon, delta)``-DP, needs ``delta > 0``; ``False``: pure
        ``epsilon``-DP, spends no delta whatever ``delta`` is passed.
    needs_curvature : bool
        The proof needs a twice-differentiable, globally Lipschitz loss with a
        bound ``c`` on ``loss''`` (003 Thm 2, 004 Thm 4.1).
    summary : str
        One line for ``--help`` and the docs.
    auto_candidate : bool
        Whether ``mechanism="auto"`` may choose it (``False`` for calibrations kept
        only to reproduce a paper).
    """

    name: str
    uses_delta: bool
    needs_curvature: bool
    summary: str
    auto_candidate: bool = True


#: Every mechanism by name, in the order the help and the docs list them.
CATALOG: dict[str, MechanismInfo] = {
    m.name: m
    for m in (
        MechanismInfo("objective", uses_delta=False, needs_curvature=True,
                      summary="objective perturbation, pure epsilon-DP (003 Alg. 2); smooth losses"),
        MechanismInfo("output", uses_delta=False, needs_curvature=False,
                      summary="output perturbation, pure epsilon-DP (003 Alg. 1; 000 Thm 2); any "
                      "convex Lipschitz loss"),
        MechanismInfo("gaussian_objective", uses_delta=True, needs_curvature=True,
                      summary="Gaussian objective perturbation, (epsilon, delta)-DP, GLM calibration with "
                      "the one-factor Jacobian bound (after Redberg, Koskela & Wang 2023; not "
                      "tight: its sigma is about 1.2-1.3x the analytic Gaussian's at delta 1e-5); "
                      "smooth losses"),
        MechanismInfo("gaussian_objective_004", uses_delta=True, needs_curvature=True,
                      summary="Gaussian objective perturbation, (epsilon, delta)-DP, 004 Alg. 4's "
                      "sigma* (for the reproduction); smooth losses", auto_candidate=False),
        MechanismInfo("adassp", uses_delta=False, needs_curvature=False,
                      summary="sufficient statistics with adaptive ridge (AdaSSP, Wang 2018, Alg. 2), "
                      "pure epsilon-DP; least squares only", auto_candidate=False),
        MechanismInfo("gaussian_adassp", uses_delta=True, needs_curvature=False,
                      summary="AdaSSP with discrete Gaussian noise, (epsilon, delta)-DP through zCDP; "
                      "least squares only", auto_candidate=False),
    )
}


def mechanism_help() -> str:
    """``name: summary`` of every mechanism, joined by ``"; "`` (the ``--mechanism`` help's tail)."""
    return "; ".join(f"{m.name}: {m.summary}" for m in CATALOG.values())


__all__ = ["CATALOG", "MechanismInfo", "mechanism_help"]
