"""The one table of dperm's ERM mechanisms: one row per mechanism, and its one checked entry.

A row (:class:`Mechanism`) says everything dperm knows of a mechanism: its name, whether
it spends delta, whether its proof needs a curvature bound, which losses its theorem
covers (``losses``: every loss meeting the other conditions when empty, else only the
named ones, e.g. AdaSSP's ``("squared",)``), whether it is a multiclass model
(``multiclass``: it needs ``K > 2`` public labels, so it is never a candidate of the
generic ``mechanism="auto"`` nor a ``--mechanism`` choice of the binary models), a
one-line summary, where its guarantee is
proven, which default-alpha rule fits it (``"none"`` for a mechanism that chooses its
own regularisation, such as AdaSSP's adaptive ridge: ``alpha="auto"`` then sets nothing),
and the module that calibrates and releases it. The estimators (``mechanism=``), ``mechanism="auto"``
(:mod:`dperm.mechanisms.choice`), the audit, the budget request, model files and the
privacy record's ``reference`` all read :data:`MECHANISMS`.

This module imports the standard library only: the command line reads the names and
summaries for the ``--mechanism`` choices and help of ``dperm train`` and ``dperm
audit``, so building their parsers (``--help``) imports neither NumPy nor SciPy. A
row's implementation module is imported the first time the row calibrates or releases.

Adding a mechanism is one module and one row. The module defines

``calibrate(problem, epsilon, delta, tol, **options) -> MechanismCalibration``
    every number the release uses and the record shows, from public quantities of
    ``problem`` (a :class:`~dperm.mechanisms._problem.PublicProblem`) only; trusts its
    inputs (the row's :meth:`Mechanism.run` or the estimator checked them). ``options``
    are the row's and the caller's public choices (AdaSSP's ``intercept``); a mechanism
    with its own record may return its own calibration class (AdaSSP's
    ``SufficientStatisticsCalibration``);
``release(problem, calibration, rng, tol, max_iter) -> MechanismOutput``
    solve ``problem`` (an :class:`~dperm.mechanisms._problem.ERMProblem`) and release
    with exactly that calibration's noise;
``expected_perturbation(problem, calibration) -> float``
    a public bound on the RMS distance the noise moves the released point (the score
    of ``mechanism="auto"`` and of the noise-to-signal refusal);
``noise_norm(dimension, epsilon, delta, lipschitz, data_norm, **options) -> float``
    only for ``alpha_rule="objective"``: the RMS norm of the noise term the default
    alpha rule balances (:func:`dperm.privacy.alpha.default_alpha`);

and its public function ``f(problem, epsilon, delta, rng, tol, max_iter, accountant=None)``,
which is ``MECHANISMS[name].run``.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

#: The smallest epsilon any mechanism accepts. The released noise is an exact integer
#: number of grid steps below 2**53 (``dperm.mechanisms.noise.EXACT_INTEGER_LIMIT``), and
#: the grid is at most ``S / (1024 sqrt(d))`` for the noise scale ``S / epsilon``, so the
#: noise needs about ``1024 sqrt(d) / epsilon`` steps: with d <= 10**4 and 40 scales of
#: tail that stays below 2**53 for epsilon >= 4.6e-10. Below it, the output mechanism's
#: noise is measured clamped (it was at epsilon = 1e-14 with d = 4).
MIN_EPSILON = 1e-9

#: The default-alpha rules of :func:`dperm.privacy.alpha.default_alpha` a row may name, and
#: ``"none"``: the mechanism chooses its own regularisation (AdaSSP's adaptive ridge), so
#: ``alpha="auto"`` sets no alpha and a given alpha is refused by its estimator.
_ALPHA_RULES = ("objective", "output", "none")


def check_min_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """Refuse an epsilon below :data:`MIN_EPSILON` (one already checked finite and > 0).

    Every entry that draws noise for a user's epsilon calls it once: the estimators
    after their parameter constraints, :meth:`Mechanism.run`, and the command line
    (``name="--epsilon"``).
    """
    if epsilon < MIN_EPSILON:
        raise ValueError(
            f"{name} {epsilon!r} is below {MIN_EPSILON:g}, the smallest epsilon whose "
            "noise dperm can release exactly (the noise would need more than 2**53 grid steps); "
            "use a larger epsilon.")
    return epsilon


@dataclass(frozen=True)
class Mechanism:
    """One row of :data:`MECHANISMS`: what a mechanism is, proves, and how it runs.

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
        One line for ``--help`` and the docs; its text up to the first comma names the
        mechanism in the accountant's ledger.
    reference : str
        The papers and theorems the guarantee follows from (the record's ``reference``).
    module : str
        The module defining ``calibrate``, ``release``, ``expected_perturbation`` (and
        ``noise_norm``), see the module docstring.
    entry : str
        The name of its public function in ``module`` (:attr:`function`).
    alpha_rule : {"objective", "output", "none"}
        Which shape of :func:`dperm.privacy.alpha.default_alpha` sets ``alpha="auto"``;
        ``"none"``: the mechanism has no alpha (it chooses its own ridge).
    options : tuple of (str, object) pairs
        Keyword arguments ``calibrate`` and ``noise_norm`` get (two rows may share a module).
    auto_candidate : bool
        Whether the generic ``mechanism="auto"`` (:func:`dperm.mechanisms.choice.choose_mechanism`)
        may choose it (``False`` for calibrations kept only to reproduce a paper, and for
        mechanisms an estimator chooses itself, as ``PrivateLeastSquares`` chooses AdaSSP).
    losses : tuple of str
        The loss family the theorem covers, by loss name (:data:`dperm.catalog.LOSSES`, or a
        loss of its own module such as ``"multinomial_logistic"``): empty for every loss
        meeting the other conditions; else :meth:`refusal` refuses any other loss before
        anything is calibrated or spent (AdaSSP: ``("squared",)``).
    multiclass : bool
        A model of ``K > 2`` classes in one problem (its ``problem`` carries ``n_classes``):
        never a candidate of :func:`~dperm.mechanisms.choice.choose_mechanism` (binary
        problems) nor a ``--mechanism`` choice; the estimator chooses it (``multi_class``).
    """

    name: str
    uses_delta: bool
    needs_curvature: bool
    summary: str
    reference: str
    module: str
    entry: str
    alpha_rule: str
    options: tuple = ()
    auto_candidate: bool = True
    losses: tuple = ()
    multiclass: bool = False

    def __post_init__(self):
        if self.alpha_rule not in _ALPHA_RULES:
            raise ValueError(f"mechanism {self.name!r}: alpha_rule must be one of {_ALPHA_RULES}; "
                             f"got {self.alpha_rule!r}.")

    # -- what the table says ---------------------------------------------------------
    @property
    def title(self) -> str:
        """``"objective perturbation"``: the summary up to its first comma (ledger labels)."""
        return self.summary.split(",")[0]

    def delta_spent(self, delta: float) -> float:
        """The delta this mechanism's guarantee uses: ``delta`` or 0 for a pure mechanism."""
        return delta if self.uses_delta else 0.0

    def refusal(self, loss, delta: float) -> str | None:
        """Why this mechanism's theorem does not cover ``loss`` and ``delta``, or ``None``."""
        if self.losses and getattr(loss, "name", None) not in self.losses:
            return (f"mechanism={self.name!r} covers the {' / '.join(self.losses)} loss only "
                    f"({self.title}: {self.summary.rsplit('; ', 1)[-1]}); it does not cover the "
                    f"{getattr(loss, 'name', loss)!r} loss. Use mechanism='output' or 'objective' for it.")
        if self.uses_delta and delta == 0:
            pure = next((m.name for m in MECHANISMS.values() if m.module == self.module
                         and not m.uses_delta), "objective")
            return (f"mechanism={self.name!r} is (epsilon, delta)-DP and needs delta > 0 (004 Thm 4.1); "
                    f"pass e.g. delta=1e-5, or use mechanism={pure!r} for pure DP.")
        if not self.needs_curvature:
            return None
        if not math.isfinite(loss.lipschitz):
            return (f"mechanism={self.name!r} needs a globally Lipschitz loss (003 Thm 2 / 004 "
                    f"Thm 4.1); the {loss.name} loss is Lipschitz only on the bounded predictions "
                    "of a regularised minimiser. Use mechanism='output' (000 Thm 2, Sec. 5.1).")
        if loss.curvature is None:
            return (f"mechanism={self.name!r} needs a twice-differentiable loss with a bound c on "
                    f"loss'' (003 Thm 2 / 004 Thm 4.1); the {loss.name} loss has none. Use "
                    "mechanism='output' (output perturbation needs only a Lipschitz loss, "
                    "000 Thm 2) or a smoothed loss such as 'huber' or 'smooth_hinge'.")
        return None

    def accepts(self, loss, delta: float) -> bool:
        """Whether the theorem covers ``loss`` and ``delta`` (:meth:`refusal` is ``None``)."""
        return self.refusal(loss, delta) is None

    def check(self, loss, delta: float) -> None:
        """Refuse a loss or a delta this mechanism's theorem does not cover (before any budget)."""
        reason = self.refusal(loss, delta)
        if reason is not None:
            raise ValueError(reason)

    # -- how it runs (the implementation module, imported on first use) ------------------
    @property
    def implementation(self):
        """The module that calibrates and releases this mechanism."""
        return importlib.import_module(self.module)

    @property
    def function(self):
        """Its public function ``f(problem, epsilon, delta, rng, tol, max_iter, accountant=None)``."""
        return getattr(self.implementation, self.entry)

    def calibrate(self, problem, epsilon: float, delta: float, tol: float, **options):
        """The :class:`~dperm.mechanisms._problem.MechanismCalibration` of one run (trusts its inputs).

        ``options``: the caller's public choices, besides the row's (AdaSSP's ``intercept``).
        """
        return self.implementation.calibrate(problem, epsilon, delta, tol, **dict(self.options), **options)

    def release(self, problem, calibration, rng, tol: float, max_iter: int):
        """Solve ``problem`` and release under ``calibration`` (trusts its inputs; spends nothing)."""
        return self.implementation.release(problem, calibration, rng, tol, max_iter)

    def score(self, problem, calibration) -> float:
        """The public RMS distance ``calibration``'s noise moves the released point."""
        return float(self.implementation.expected_perturbation(problem, calibration))

    def expected_perturbation(self, problem, epsilon: float, delta: float, tol: float) -> float:
        """:meth:`score` of the calibration at ``epsilon``, ``delta`` (public quantities only)."""
        return self.score(problem, self.calibrate(problem, epsilon, delta, tol))

    def noise_norm(self, dimension: int, epsilon: float, delta: float, lipschitz: float,
                   data_norm: float, **options) -> float:
        """RMS norm of the noise term (``alpha_rule="objective"`` rows), for the default alpha.

        ``options``: the caller's public sizes besides ``dimension`` (a multiclass row's
        ``n_classes``: the Gaussian multinomial noise depends on ``K``, not only on ``d K``).
        """
        return self.implementation.noise_norm(dimension, epsilon, delta, lipschitz, data_norm,
                                              **dict(self.options), **options)

    def run(self, problem, epsilon, delta, rng, tol, max_iter, accountant=None, **options):
        """The checked entry of the standalone mechanism: check, calibrate, spend, release.

        Checks ``epsilon`` (finite, > 0, at least :data:`MIN_EPSILON`), ``delta`` and the
        theorem's conditions on the loss, computes the calibration once, charges
        ``accountant`` ``(epsilon, delta spent)`` before anything is solved, and releases.

        Parameters
        ----------
        problem : ERMProblem
        epsilon, delta : float
            A pure mechanism spends no delta whatever is passed.
        rng : numpy.random.Generator
        tol, max_iter : float, int
            The certified solve's gradient tolerance and the fast solver's iteration cap.
        accountant : BudgetAccountant, optional
        **options
            The caller's public choices for :meth:`calibrate` (AdaSSP's ``intercept``).

        Returns
        -------
        MechanismOutput
        """
        from dperm.privacy.accounting import spend_before_fitting
        from dperm.validation import check_delta, check_epsilon

        epsilon = check_min_epsilon(check_epsilon(epsilon))
        delta = check_delta(delta)
        self.check(problem.loss, delta)
        calibration = self.calibrate(problem, epsilon, delta, tol, **options)
        spend_before_fitting(accountant, epsilon, self.delta_spent(delta), f"{self.title} (mechanism)")
        return self.release(problem, calibration, rng, tol, max_iter)


#: Where the objective mechanisms' inexact solve is covered (approximate minima perturbation).
_AMP = "approximate minima perturbation, Iyengar et al. (2019), Alg. 1 and Thm 1"

#: Every mechanism by name, in the order the help and the docs list them (pure first: ties
#: of ``mechanism="auto"`` go to the earlier row).
MECHANISMS: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Mechanism(
            "objective", uses_delta=False, needs_curvature=True,
            summary="objective perturbation, pure epsilon-DP (003 Alg. 2); smooth losses",
            reference="Chaudhuri, Monteleoni & Sarwate (2011), Alg. 2 and Thm 2 (Cor. 4 for Huber), "
            "with the Jacobian ratio bounded by one factor (matrix determinant lemma, "
            f"docs/design/gaussian_objective.md step 2); {_AMP}",
            module="dperm.mechanisms.objective", entry="objective_perturbation",
            alpha_rule="objective"),
        Mechanism(
            "output", uses_delta=False, needs_curvature=False,
            summary="output perturbation, pure epsilon-DP (003 Alg. 1; 000 Thm 2); any convex "
            "Lipschitz loss",
            reference="Chaudhuri, Monteleoni & Sarwate (2011), Alg. 1 and Thm 1; Nie & Wang (2017), "
            "Thm 2 for non-differentiable Lipschitz losses",
            module="dperm.mechanisms.output", entry="output_perturbation", alpha_rule="output"),
        Mechanism(
            "gaussian_objective", uses_delta=True, needs_curvature=True,
            summary="Gaussian objective perturbation, (epsilon, delta)-DP, GLM calibration with "
            "the one-factor Jacobian bound (after Redberg, Koskela & Wang 2023; not "
            "tight: its sigma is about 1.2-1.3x the analytic Gaussian's at delta 1e-5); "
            "smooth losses",
            reference="dperm's derivation (docs/design/gaussian_objective.md) after Redberg, "
            "Koskela & Wang (2023), objective perturbation's privacy profile for GLMs with Gaussian "
            "noise, for replace-one neighbours and the noise grid; Canonne, Kamath & Steinke (2020), "
            f"Cor. 9; {_AMP}",
            module="dperm.mechanisms.gaussian_objective", entry="gaussian_objective_perturbation",
            alpha_rule="objective", options=(("calibration", "tight"),)),
        Mechanism(
            "gaussian_objective_004", uses_delta=True, needs_curvature=True,
            summary="Gaussian objective perturbation, (epsilon, delta)-DP, 004 Alg. 4's "
            "sigma* (for the reproduction); smooth losses",
            reference=f"Rajkumar & Agarwal (2012), Alg. 4 and Thm 4.1; {_AMP}",
            module="dperm.mechanisms.gaussian_objective",
            entry="gaussian_objective_perturbation_004",
            alpha_rule="objective", options=(("calibration", "004"),), auto_candidate=False),
        Mechanism(
            "adassp", uses_delta=False, needs_curvature=False,
            summary="AdaSSP, sufficient statistics with adaptive ridge (Wang 2018, Alg. 2), pure "
            "epsilon-DP; least squares only",
            reference="Wang (2018), Revisiting differentially private linear regression, UAI, Alg. 2 "
            "(AdaSSP), for replace-one neighbours: sensitivities sqrt(2) R^2 (Gram), 2 R B (moment), R^2 "
            "(lambda_min) in dperm.privacy.sufficient_statistics; epsilon / 3 per release, basic "
            "composition; Canonne, Kamath & Steinke (2020) discrete Laplace on a grid",
            module="dperm.mechanisms.sufficient_statistics", entry="sufficient_statistics_perturbation",
            alpha_rule="none", options=(("gaussian", False),), auto_candidate=False,
            losses=("squared",)),
        Mechanism(
            "gaussian_adassp", uses_delta=True, needs_curvature=False,
            summary="Gaussian AdaSSP, discrete Gaussian noise, (epsilon, delta)-DP through zCDP "
            "(Wang 2018, Alg. 2); least squares only",
            reference="Wang (2018), UAI, Alg. 2 (AdaSSP) with exact discrete Gaussian noise: "
            "Canonne, Kamath & Steinke (2020), Thm 4 (zCDP per release, rho / 3 each), Bun & Steinke "
            "(2016), Lemma 2.3 (composition) and CKS (2020), Sec. 2.3 (zCDP to (epsilon, delta))",
            module="dperm.mechanisms.sufficient_statistics",
            entry="gaussian_sufficient_statistics_perturbation",
            alpha_rule="none", options=(("gaussian", True),), auto_candidate=False,
            losses=("squared",)),
        Mechanism(
            "multinomial_objective", uses_delta=False, needs_curvature=True,
            summary="multinomial objective perturbation, pure epsilon-DP, one (d, K) noise matrix "
            "at the whole epsilon (003 Alg. 2 for K classes); multiclass logistic only",
            reference="Chaudhuri, Monteleoni & Sarwate (2011), Alg. 2 and Thm 2 carried to the "
            "multinomial logistic loss of K classes: noise shift 2 sqrt(2) R, Jacobian term (K - 1) "
            "log(1 + R^2 / (K n alpha)) (docs/design/multinomial.md); " + _AMP,
            module="dperm.mechanisms.multinomial_objective", entry="multinomial_objective_perturbation",
            alpha_rule="objective", auto_candidate=False, losses=("multinomial_logistic",),
            multiclass=True),
        Mechanism(
            "gaussian_multinomial_objective", uses_delta=True, needs_curvature=True,
            summary="Gaussian multinomial objective perturbation, (epsilon, delta)-DP, one (d, K) "
            "discrete Gaussian noise matrix at the whole budget; multiclass logistic only",
            reference="dperm's derivation (docs/design/gaussian_multinomial.md): the GLM Gaussian "
            "calibration (docs/design/gaussian_objective.md, after Redberg, Koskela & Wang 2023) "
            "carried to the multinomial logistic loss of K classes: noise shift 2 sqrt(2) R, "
            "Jacobian term (K - 1) log(1 + R^2 / (K n alpha)) (docs/design/multinomial.md), "
            "projection tail 2 K (K - 1) e^(-t^2/2); Hsu, Kakade & Zhang (2012), Thm 1; Canonne, "
            "Kamath & Steinke (2020), Cor. 9; " + _AMP,
            module="dperm.mechanisms.gaussian_multinomial_objective",
            entry="gaussian_multinomial_objective_perturbation",
            alpha_rule="objective", auto_candidate=False, losses=("multinomial_logistic",),
            multiclass=True),
    )
}


def binary_mechanisms() -> tuple[str, ...]:
    """The names of the rows for binary (and one-vs-rest) problems: every row but the multiclass ones
    (the ``--mechanism`` choices of ``dperm train`` and ``dperm audit``)."""
    return tuple(name for name, m in MECHANISMS.items() if not m.multiclass)


def get_mechanism(name) -> Mechanism:
    """The table's row for ``name``, or a ``ValueError`` that lists the names."""
    try:
        return MECHANISMS[name]
    except (KeyError, TypeError):
        raise ValueError(f"mechanism must be one of {tuple(MECHANISMS)}; got {name!r}.") from None


def run_mechanism(name: str, problem, epsilon, delta, rng, tol, max_iter, accountant=None):
    """Run the mechanism ``name`` on ``problem`` through its checked entry (:meth:`Mechanism.run`)."""
    return get_mechanism(name).run(problem, epsilon, delta, rng, tol, max_iter, accountant)


def mechanism_help() -> str:
    """``name: summary`` of every mechanism, joined by ``"; "`` (the ``--mechanism`` help's tail)."""
    return "; ".join(f"{m.name}: {m.summary}" for m in MECHANISMS.values() if not m.multiclass)


__all__ = [ "MECHANISMS", "MIN_EPSILON", "Mechanism", "binary_mechanisms", "check_min_epsilon",
           "get_mechanism", "mechanism_help", "run_mechanism"]
