"""The public choices of a fit: ``mechanism="auto"``, ``alpha="auto"``, and the noise-to-signal refusal.

Decided from public quantities only (n, d, the loss's L and c, the norm bound R,
epsilon, delta, alpha, tol): the data are never read, so the choices themselves
cost no privacy and are recorded in ``privacy_``. ``"auto"`` scores the
calibrations it computes, and the fit releases with the chosen one. See
docs/design/mechanism_choice.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from dperm.exceptions import NoiseSwampsSignalError
from dperm.mechanisms._problem import PublicProblem
from dperm.mechanisms.catalog import MECHANISMS, get_mechanism
from dperm.privacy.alpha import default_alpha
from dperm.privacy.mechanism_calibration import MechanismCalibration

__all__ = [
    "AUTO", "SWAMPED_RATIO", "auto_alpha", "candidate_mechanisms", "check_noise_below_signal",
    "choose_mechanism",
]

#: The value of ``mechanism=`` that asks for :func:`choose_mechanism`.
AUTO = "auto"


@dataclass(frozen=True)
class MechanismChoice:
    """The mechanism ``"auto"`` chose, the candidates' scores and why.

    Attributes
    ----------
    name : str
        The chosen row of :data:`~dperm.mechanisms.catalog.MECHANISMS`.
    expected_perturbation : dict of str to float
        Each candidate's public bound on the RMS distance its noise moves the
        released point (:meth:`~dperm.mechanisms.catalog.Mechanism.score`), at the same alpha.
    reason : str
        One sentence for the privacy record.
    calibrations : dict of str to MechanismCalibration
        The calibration each candidate was scored on; the fit releases with the chosen
        one when its alpha is the one scored at (the calibration is computed once).
    """

    name: str
    expected_perturbation: dict
    reason: str
    calibrations: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def calibration(self) -> MechanismCalibration:
        """The chosen mechanism's calibration (at the problem it was scored on)."""
        return self.calibrations[self.name]


def candidate_mechanisms(loss, delta: float) -> list[str]:
    """The mechanisms ``"auto"`` may choose for ``loss`` and ``delta``.

    Those whose theorem covers the loss and the delta (:meth:`~dperm.mechanisms.catalog.Mechanism.accepts`),
    among the rows marked ``auto_candidate`` and not ``multiclass`` (the problems here are
    binary or one-vs-rest; the multinomial model is chosen by ``multi_class``).
    When the loss is smooth (a curvature bound ``c``), only the objective family:
    objective perturbation's noise enters the gradient, where the loss's own
    curvature damps it, and its sample requirement has the better dependence on
    ``||f_0||`` and on the target excess error (003 Sec. 4, Thm 3 against Thm 4;
    its experiments in Sec. 7 agree). Output perturbation remains the choice for
    non-smooth or non-globally-Lipschitz losses (hinge, pinball, least squares).
    """
    accepted = [m for m in MECHANISMS.values()
                if m.auto_candidate and not m.multiclass and m.accepts(loss, delta)]
    objective_family = [m.name for m in accepted if m.needs_curvature]
    return objective_family or [m.name for m in accepted]


def choose_mechanism(problem: PublicProblem, epsilon: float, delta: float, tol: float,
                     candidates: list[str] | None = None) -> MechanismChoice:
    """Choose among :func:`candidate_mechanisms` the smallest expected perturbation.

    Every candidate is scored at the same ``problem`` (same alpha): pure objective
    perturbation's Laplace-type noise has ``E||b||^2 = 2 d s^2`` with ``s`` of
    order ``2 L R sqrt(d) / eps'``, the Gaussian one ``d sigma^2`` with
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
    candidates : list of str, optional
        :func:`candidate_mechanisms` of the loss and delta, when the caller has them.

    Returns
    -------
    MechanismChoice
        With every candidate's calibration: each is computed once, scored, and the
        chosen one is what the fit releases with.
    """
    names = candidate_mechanisms(problem.loss, delta) if candidates is None else candidates
    calibrations = {name: MECHANISMS[name].calibrate(problem, epsilon, delta, tol) for name in names}
    scores = {name: MECHANISMS[name].score(problem, calibrations[name]) for name in names}
    chosen = min(names, key=lambda name: scores[name])
    return MechanismChoice(chosen, scores, _reason(chosen, scores, problem), calibrations)


def _reason(chosen: str, scores: dict, problem: PublicProblem) -> str:
    if len(scores) == 1:
        return (f"{chosen}: the only mechanism whose theorem covers the {problem.loss.name} "
                "loss at this delta")
    others = ", ".join(f"{name} {score:.3g}" for name, score in scores.items() if name != chosen)
    return (f"{chosen}: smallest expected perturbation of the released point, {scores[chosen]:.3g} "
            f"(against {others}; public n, d, R, epsilon, delta and alpha = {problem.alpha:.3g})")


#: The noise "swamps every coefficient" when its public RMS size reaches this multiple of the
#: public bound on the minimiser's norm (:func:`noise_to_signal`); such a fit is refused.
SWAMPED_RATIO = 10.0


def noise_to_signal(problem: PublicProblem, name: str, epsilon: float, delta: float,
                    tol: float, calibration: MechanismCalibration | None = None) -> float:
    """``E / B``: the noise's public RMS size over the largest norm a minimiser can have.

    ``E`` is the mechanism's :meth:`~dperm.mechanisms.catalog.Mechanism.score` of its
    calibration at ``problem``, ``epsilon`` and ``delta`` (the RMS distance its noise
    moves the released point; ``calibration`` when the caller computed it). ``B = L R / alpha`` bounds ``||w*||`` for
    every data set: at the minimiser of ``J(w) = (1/n) sum l(t_i) + alpha ||w||^2 / 2``,
    ``alpha w* = -(1/n) sum l'(t_i) dt_i/dw`` with ``|l'| <= L`` (the loss's
    ``solution_lipschitz``) and ``||dt_i/dw|| = ||x_i|| <= R``. ``E / B >= 1``: the
    noise alone is at least as long as any coefficient vector the data could give.
    Public quantities only; an alpha that is not finite and > 0 gives ``inf``.
    """
    alpha = problem.alpha
    if not (math.isfinite(alpha) and alpha > 0):
        return math.inf
    lipschitz = problem.loss.solution_lipschitz(problem.data_norm, alpha)
    bound = lipschitz * problem.data_norm / alpha
    if not (math.isfinite(bound) and bound > 0):
        return 0.0 if bound == math.inf else math.inf
    row = MECHANISMS[name]
    if calibration is None:
        calibration = row.calibrate(problem, epsilon, delta, tol)
    noise = row.score(problem, calibration)
    return noise / bound if math.isfinite(noise) else math.inf


def check_noise_below_signal(problem_at: Callable[[float], PublicProblem], name: str,
                             epsilon: float, delta: float, tol: float, n_problems: int = 1,
                             calibration: MechanismCalibration | None = None) -> None:
    """Refuse, before any budget is spent, an epsilon whose noise swamps every coefficient.

    Parameters
    ----------
    problem_at : callable
        ``problem_at(epsilon)``: the public problem at a total ``epsilon`` (its alpha is
        the rule's at that epsilon for ``alpha="auto"``, else the given one).
    name : str
        The mechanism.
    epsilon, delta : float
        The fit's total budget; each of the ``n_problems`` one-vs-rest problems gets
        ``1 / n_problems`` of it.
    calibration : MechanismCalibration, optional
        The fit's calibration at ``epsilon`` (the one it releases with), when computed:
        a fit that passes computes no other; the search for the epsilon to suggest
        computes one per step.

    Raises
    ------
    NoiseSwampsSignalError
        A ``ValueError``, when :func:`noise_to_signal` is at least :data:`SWAMPED_RATIO`, naming the
        smallest epsilon (found by bisection on the same public quantities) below it.
    """
    def ratio(total_epsilon, calibration=None):
        return noise_to_signal(problem_at(total_epsilon), name, total_epsilon / n_problems,
                               delta / n_problems, tol, calibration)

    current = ratio(epsilon, calibration)
    if current < SWAMPED_RATIO:
        return
    problem = problem_at(epsilon)
    needed = _smallest_epsilon_below(ratio, epsilon)
    advice = (f"epsilon >= {needed:.3g} would bring it below" if needed is not None
              else "no epsilon up to 1e12 times this one brings it below; use more data")
    reason = (f"is too small for n_samples={problem.n_samples}, d={problem.n_features}: "
              f"the {name} noise (public expected size {current:.3g} times the largest norm any "
              f"minimiser can have, L R / alpha with alpha={problem.alpha:.3g}) would swamp every "
              "coefficient.")
    error = NoiseSwampsSignalError(
        f"epsilon={epsilon:g} {reason} {advice[0].upper() + advice[1:]} (or use more rows or fewer "
        "features). Nothing was spent."
    )
    error.epsilon, error.needed, error.reason = epsilon, needed, reason  # for a caller that splits epsilon
    raise error


def _smallest_epsilon_below(ratio: Callable[[float], float], epsilon: float) -> float | None:
    """The smallest total epsilon (to 3 digits, rounded up) with ``ratio < SWAMPED_RATIO``."""
    low, high = epsilon, epsilon
    for _ in range(40):  # doubling: 2^40 ~ 1e12
        high *= 2.0
        if ratio(high) < SWAMPED_RATIO:
            break
        low = high
    else:
        return None
    for _ in range(40):  # bisection in log epsilon
        middle = math.sqrt(low * high)
        if ratio(middle) < SWAMPED_RATIO:
            high = middle
        else:
            low = middle
        if high <= low * (1 + 1e-4):
            break
    digits = 10.0 ** (math.floor(math.log10(high)) - 2)
    rounded = math.ceil(high / digits) * digits
    return rounded if ratio(rounded) < SWAMPED_RATIO else high


def auto_alpha(n_samples: int, dimension: int, epsilon: float, delta: float = 0.0, *,
               mechanism: str, loss, data_norm: float, feature_norm: float | None = None,
               multiplier: float | None = None, curvature_exponent: float | None = None,
               variant: str = "auto", noise_options: dict | None = None) -> float:
    """``alpha="auto"`` for the mechanism ``mechanism``: :func:`dperm.privacy.alpha.default_alpha`.

    Asks the mechanism's row for its alpha rule and, for the objective rule, the RMS
    norm of the noise it draws (:meth:`~dperm.mechanisms.catalog.Mechanism.noise_norm`);
    an unknown name is refused (``ValueError``), never treated as another mechanism.
    Trusts the numbers (the estimators checked them). Parameters as in
    :func:`~dperm.privacy.alpha.default_alpha`; ``delta`` is the fit's (the Gaussian
    mechanisms' noise depends on it); ``variant`` is the estimator's ``alpha`` string
    (``"auto"``, or the classifiers' epsilon-monotone opt-in ``"monotone"``);
    ``noise_options``: public sizes the row's ``noise_norm`` also needs (a multiclass row's
    ``n_classes``).
    """
    row = get_mechanism(mechanism)
    if row.alpha_rule == "none":
        raise ValueError(f"mechanism={mechanism!r} has no alpha: it chooses its own regularisation.")
    noise = None
    if row.alpha_rule == "objective":
        noise = row.noise_norm(dimension, epsilon, delta, loss.lipschitz, data_norm,
                               **(noise_options or {}))
    return default_alpha(n_samples, dimension, epsilon, rule=row.alpha_rule, loss=loss,
                         data_norm=data_norm, noise_norm=noise, feature_norm=feature_norm,
                         multiplier=multiplier, curvature_exponent=curvature_exponent, variant=variant)
