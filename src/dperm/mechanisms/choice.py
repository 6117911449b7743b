"""``mechanism="auto"``: the mechanism whose noise moves the released point least.

Decided from public quantities only (n, d, the loss's L and c, the norm bound R,
epsilon, delta, alpha, tol): the data are never read, so the choice itself
costs no privacy and is recorded in ``privacy_``. See docs/design/mechanism_choice.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from dperm.mechanisms._problem import PublicProblem
from dperm.mechanisms.registry import MECHANISMS

#: The value of ``mechanism=`` that asks for :func:`choose_mechanism`.
AUTO = "auto"


@dataclass(frozen=True)
class MechanismChoice:
    """The mechanism ``"auto"`` chose, the candidates' scores and why.

    Attributes
    ----------
    name : str
        The chosen entry of :data:`~dperm.mechanisms.registry.MECHANISMS`.
    expected_perturbation : dict of str to float
        Each candidate's public bound on the RMS distance its noise moves the
        released point (:attr:`Mechanism.expected_perturbation`), at the same alpha.
    reason : str
        One sentence for the privacy record.
    """

    name: str
    expected_perturbation: dict
    reason: str


def candidate_mechanisms(loss, delta: float) -> list[str]:
    """The mechanisms ``"auto"`` may choose for ``loss`` and ``delta``.

    Those whose theorem covers the loss and the delta (:meth:`Mechanism.accepts`).
    When the loss is smooth (a curvature bound ``c``), only the objective family:
    objective perturbation's noise enters the gradient, where the loss's own
    curvature damps it, and its sample requirement has the better dependence on
    ``||f_0||`` and on the target excess error (003 Sec. 4, Thm 3 against Thm 4;
    its experiments in Sec. 7 agree). Output perturbation remains the choice for
    non-smooth or non-globally-Lipschitz losses (hinge, pinball, least squares).
    """
    accepted = [m for m in MECHANISMS.values() if m.auto_candidate and m.accepts(loss, delta)]
    objective_family = [m.name for m in accepted if m.needs_curvature]
    return objective_family or [m.name for m in accepted]


def choose_mechanism(problem: PublicProblem, epsilon: float, delta: float,
                     tol: float) -> MechanismChoice:
    """Choose among :func:`candidate_mechanisms` the smallest expected perturbation.

    Every candidate is scored at the same ``problem`` (same alpha): pure objective
    perturbation's Laplace-type noise has ``E||b||^2 = 2 d s^2`` with ``s`` of
    order ``2 L R sqrt(d) / eps'``, the tight Gaussian one ``d sigma^2`` with
    ``sigma`` of order ``2 L R sqrt(log(1/delta)) / eps``; so the Gaussian wins
    once ``d`` is large against ``log(1/delta)``, and pure DP wins at small ``d``
    or tiny ``delta``. Ties go to the earlier entry of the table (pure first).

    Parameters
    ----------
    problem : PublicProblem
        n, d (with the intercept's column), loss, alpha, R (with the intercept).
    epsilon, delta : float
        The budget of the fit. A pure mechanism spends no delta when chosen.
    tol : float
        The solver tolerance the mechanisms are calibrated for.

    Returns
    -------
    MechanismChoice
    """
    names = candidate_mechanisms(problem.loss, delta)
    scores = {name: float(MECHANISMS[name].expected_perturbation(problem, epsilon, delta, tol))
              for name in names}
    chosen = min(names, key=lambda name: scores[name])
    return MechanismChoice(chosen, scores, _reason(chosen, scores, problem))


def _reason(chosen: str, scores: dict, problem: PublicProblem) -> str:
    if len(scores) == 1:
        return (f"{chosen}: the only mechanism whose theorem covers the {problem.loss.name} "
                "loss at this delta")
    others = ", ".join(f"{name} {score:.3g}" for name, score in scores.items() if name != chosen)
    return (f"{chosen}: smallest expected perturbation of the released point, {scores[chosen]:.3g} "
            f"(against {others}; public n, d, R, epsilon, delta and alpha = {problem.alpha:.3g})")
