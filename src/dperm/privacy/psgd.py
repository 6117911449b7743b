"""Privacy arithmetic of multiparty PSGD (004 Alg. 1, Procs. 2-3) and of its coordinator's view, as pure functions.

The one owner of PSGD's calibration. Everything single-party is reused from
:mod:`dperm.privacy.sensitivity` (computeSlack, ``sigma*``, the ERM
sensitivity) and :mod:`dperm.privacy.accounting` (composition); here:

- :class:`PSGDCalibration`, every public number of one run, and
  :func:`psgd_calibration` (004's scheme) /
  :func:`coordinator_dp_calibration` (beyond 004, paper note 13), which
  trust their inputs: :func:`dperm.multiparty.privacy.calibrate_psgd` checks
  them and computes the per-round noise's grid (its one dependency on
  :mod:`dperm.mechanisms.noise`);
- the guarantee of the coordinator's whole view over ``T`` rounds (paper
  note 13): composition of the rounds, or Google's ``dp-accounting`` (PLD or
  RDP) for the per-round Gaussian option (:func:`calibrate_coordinator_gaussian`);
- which secure-sum clipping counts may be revealed (:func:`clipping_count_is_covered`);
- a party's own floor (:class:`PartyFloor`), shared by every protocol;
- the collusion threshold ``t`` (:mod:`dperm.privacy.collusion`): every
  Gaussian share is sized so that the noise of any ``K - t`` parties alone
  meets the calibration (:func:`psgd_collusion_guarantee` gives the guarantee
  by number of colluders).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from dperm.privacy._noise_search import NOISE_MULTIPLIER_RTOL, bracket_noise_multiplier
from dperm.privacy.accounting import Spend, advanced_composition, basic_composition
from dperm.privacy.collusion import (
    DEFAULT_COLLUSION_THRESHOLD,
    CollusionGuarantee,
    gaussian_share_std,
    scaled_noise_multiplier,
)
from dperm.privacy.sensitivity import gaussian_objective_sigma, gradient_sum_sensitivity, objective_perturbation_slack
from dperm.validation import check_delta, check_epsilon, check_positive, check_positive_int

__all__ = [
    "COORDINATOR_ACCOUNTANTS", "CoordinatorView", "GaussianRounds", "NOISE_MULTIPLIER_RTOL",
    "PSGDCalibration", "PartyFloor", "accepting_floor", "calibrate_coordinator_gaussian",
    "check_collusion_floor", "check_coordinator_accountant", "check_open_delta", "clipping_count_is_covered",
    "coordinator_dp_calibration", "coordinator_view_gaussian", "coordinator_view_guarantee",
    "gaussian_rounds_epsilon", "psgd_calibration", "psgd_collusion_guarantee", "psgd_coordinator_view",
]


def check_open_delta(delta, name: str = "delta") -> float:
    """``delta`` in the open interval (0, 1): PSGD / GOP are (eps, delta)-DP with delta > 0."""
    delta = check_delta(delta, name)
    if delta == 0:
        raise ValueError(
            f"{name} must be in the open interval (0, 1); got 0. PSGD is (epsilon, delta)-DP "
            "(004 Thms 4.1-4.2) and gives no guarantee at delta = 0: pass e.g. delta=1e-5."
        )
    return delta


@dataclass(frozen=True)
class PSGDCalibration:
    """Every public number of one PSGD run (004 Alg. 1, Procs. 2-3).

    The coordinator computes it from public inputs and sends it to the
    parties in the setup; each party draws its one-time noise from it.

    Attributes
    ----------
    epsilon, delta : float
        The public target the noise is calibrated for. 004's scheme: 004 Thm
        4.2's guarantee of the point PSGD converges to (GOP's minimiser),
        which is not proven for a finite-``T`` iterate; what is proven for the
        released ``w_T`` is the coordinator-view guarantee
        (:func:`psgd_coordinator_view`). ``coordinator_dp``: the target of the
        coordinator's whole view, hence of ``w_T``.
    epsilon_tilde : float
        ``eps~`` of computeSlack (004 Proc. 2, paper note 4's fix).
    extra_regularization : float
        ``Delta`` of computeSlack.
    noise_sigma : float
        ``sigma = L R sigma*(d, eps~, delta)``: std of each coordinate of the
        total one-time noise ``eta = sum_k eta^k`` (004 Proc. 3; paper notes 2-3).
    party_noise_sigma : float
        ``sigma / sqrt(K - t)``: std of each coordinate of one party's ``eta^k``,
        so that any ``K - t`` shares sum to ``N(0, sigma^2 I)``.
    round_epsilon : float
        Privacy of one round's sum with respect to one record.
    round_sensitivity : float
        ``2 L R`` (:func:`gradient_sum_sensitivity`).
    round_noise_scale : float
        Per-coordinate scale of ``rho_t^k``: the discrete Laplace scale
        ``g k / eps_round`` of :func:`round_noise_calibration` (004's scheme).
    n_rounds : int
        ``T``: gradient requests each party agrees to answer.
    n_parties, n_samples, n_features : int
        ``K``, ``N = sum_k N_k`` and ``d`` (public, as in 004 Alg. 1's inputs).
    lipschitz, curvature, data_norm, alpha : float
        ``L``, ``c``, ``R`` and ``lambda``.
    loss : str
        Name of the loss ``phi``.
    coordinator_dp : bool
        False: 004's scheme (``eta^k`` once, ``rho`` float-safe discrete Laplace). True: no
        ``eta^k``; ``rho_t^k`` Gaussian, calibrated so that the coordinator's
        whole view is ``(epsilon, delta)``-DP (:func:`calibrate_coordinator_gaussian`).
        Then ``epsilon_tilde``, ``noise_sigma`` and ``party_noise_sigma`` are 0
        (no objective perturbation), ``Delta = 0``, ``round_noise_scale`` is the
        per-coordinate std of one party's ``rho_t^k`` and ``round_epsilon`` is
        the one-round epsilon at ``round_delta``.
        ``round_noise_scale`` is then ``round_noise_sigma / sqrt(K - t)``.
    round_noise : {"discrete-laplace", "gaussian"}
        Distribution of ``rho_t^k``. ``"gaussian"`` (``coordinator_dp``) is
        drawn in floating point and is not float-safe (README).
    round_noise_sigma : float
        Gaussian scheme: std per coordinate of the sum of any ``K - t`` parties'
        ``rho_t^k`` (``z * 2 L R``; the whole sum's is ``sqrt(K / (K - t))`` times
        it); 0 otherwise.
    noise_multiplier : float
        Gaussian scheme: ``z = round_noise_sigma / (2 L R)``, the multiplier the
        guarantee at ``t`` colluders rests on; 0 otherwise.
    round_delta : float
        Gaussian scheme: the delta at which ``round_epsilon`` is stated
        (``delta / T``, so that basic composition lands on ``delta``); 0 otherwise.
    coordinator_accountant : str
        Gaussian scheme: ``"pld"`` or ``"rdp"`` (dp-accounting); ``""`` otherwise.
    collusion_threshold : int
        ``t`` (:mod:`dperm.privacy.collusion`). The default 0 is what an
        announcement without the field means (a set-up of an older dperm: no
        collusion tolerated); :func:`dperm.multiparty.privacy.calibrate_psgd`
        defaults to 1.
    """

    epsilon: float
    delta: float
    epsilon_tilde: float
    extra_regularization: float
    noise_sigma: float
    party_noise_sigma: float
    round_epsilon: float
    round_sensitivity: float
    round_noise_scale: float
    n_rounds: int
    n_parties: int
    n_samples: int
    n_features: int
    lipschitz: float
    curvature: float
    data_norm: float
    alpha: float
    loss: str
    coordinator_dp: bool = False
    round_noise: str = "discrete-laplace"
    round_noise_sigma: float = 0.0
    noise_multiplier: float = 0.0
    round_delta: float = 0.0
    coordinator_accountant: str = ""
    collusion_threshold: int = 0

    @property
    def strong_convexity(self) -> float:
        """``lambda + Delta``: the regularisation of the objective PSGD minimises."""
        return self.alpha + self.extra_regularization


def psgd_calibration(epsilon, delta, alpha, n_samples, n_parties, n_features, n_rounds, lipschitz, curvature,
                     data_norm, loss_name, round_epsilon, round_noise_scale,
                     collusion_threshold=DEFAULT_COLLUSION_THRESHOLD) -> PSGDCalibration:
    """004's scheme from checked public inputs: 004 Alg. 1 line 1 and Proc. 3's constants.

    1. ``[Delta, eps~] = computeSlack(eps, lambda, N, c)`` (004 Proc. 2 with
       paper note 4's fix ``exp(eps/4)``; data norm per paper note 2):
       :func:`~dperm.privacy.sensitivity.objective_perturbation_slack`;
    2. ``sigma = L R sigma*(d, eps~, delta)`` (004 Proc. 3; paper notes 2-3):
       :func:`~dperm.privacy.sensitivity.gaussian_objective_sigma`; each
       party's ``eta^k`` has per-coordinate variance ``sigma^2 / (K - t)``
       (004 splits ``sigma^2 / K``, i.e. ``t = 0``) so that the shares of any
       ``K - t`` parties sum to ``N(0, sigma^2 I)``, GOP's noise (004 Thm 4.2,
       proof), whichever ``t`` parties collude with the coordinator
       (:mod:`dperm.privacy.collusion`);
    3. ``rho_t^k``: sensitivity ``2 L R`` at ``round_epsilon``; its
       per-coordinate scale ``round_noise_scale`` is the grid calibration's
       (:func:`dperm.multiparty.privacy.round_noise_calibration`, the
       float-safe form of 004 eq. 2). Not split: each party's share carries
       the whole per-round sensitivity, so it does not depend on ``t``.

    Trusts its inputs (:func:`dperm.multiparty.privacy.calibrate_psgd` checks them).
    """
    slack = objective_perturbation_slack(epsilon, n_samples, alpha, curvature, data_norm)
    sigma = gaussian_objective_sigma(n_features, slack.epsilon_noise, delta, lipschitz, data_norm)
    return PSGDCalibration(
        epsilon=epsilon,
        delta=delta,
        epsilon_tilde=slack.epsilon_noise,
        extra_regularization=slack.extra_regularization,
        noise_sigma=sigma,
        party_noise_sigma=gaussian_share_std(sigma, n_parties, collusion_threshold),
        round_epsilon=round_epsilon,
        round_sensitivity=gradient_sum_sensitivity(lipschitz, data_norm),
        round_noise_scale=round_noise_scale,
        n_rounds=n_rounds,
        n_parties=n_parties,
        n_samples=n_samples,
        n_features=n_features,
        lipschitz=lipschitz,
        curvature=curvature,
        data_norm=data_norm,
        alpha=alpha,
        loss=loss_name,
        collusion_threshold=int(collusion_threshold),
    )


def coordinator_dp_calibration(epsilon, delta, alpha, n_samples, n_parties, n_features, n_rounds, lipschitz,
                               curvature, data_norm, loss_name, accountant,
                               collusion_threshold=DEFAULT_COLLUSION_THRESHOLD) -> PSGDCalibration:
    """Beyond 004 (paper note 13): no one-time noise, Gaussian ``rho_t^k`` from :func:`calibrate_coordinator_gaussian`.

    The coordinator's whole view over ``n_rounds`` rounds is
    ``(epsilon, delta)``-DP even if it knows the shares of ``t`` parties:
    each party's ``rho_t^k`` has std ``z 2 L R / sqrt(K - t)``, so any
    ``K - t`` of them sum to the calibrated ``N(0, (z 2 L R)^2 I)``
    (:mod:`dperm.privacy.collusion`). Trusts its inputs
    (:func:`dperm.multiparty.privacy.calibrate_psgd` checks them).
    """
    rounds = calibrate_coordinator_gaussian(epsilon, delta, n_rounds, accountant)
    sensitivity = gradient_sum_sensitivity(lipschitz, data_norm)
    sigma = rounds.noise_multiplier * sensitivity
    return PSGDCalibration(
        epsilon=epsilon, delta=delta, epsilon_tilde=0.0, extra_regularization=0.0,
        noise_sigma=0.0, party_noise_sigma=0.0,
        round_epsilon=rounds.round_epsilon, round_sensitivity=sensitivity,
        round_noise_scale=gaussian_share_std(sigma, n_parties, collusion_threshold),
        n_rounds=n_rounds,
        n_parties=n_parties, n_samples=n_samples, n_features=n_features,
        lipschitz=lipschitz, curvature=curvature, data_norm=data_norm, alpha=alpha,
        loss=loss_name, coordinator_dp=True, round_noise="gaussian", round_noise_sigma=sigma,
        noise_multiplier=rounds.noise_multiplier, round_delta=rounds.round_delta,
        coordinator_accountant=rounds.accountant, collusion_threshold=int(collusion_threshold),
    )


@dataclass(frozen=True)
class CoordinatorView:
    """Guarantee of everything the coordinator sees over ``T`` rounds (paper note 13).

    Attributes
    ----------
    epsilon_basic, delta_basic : float
        ``T * eps_round`` and 0: basic composition of the ``T`` rounds (for
        ``coordinator_dp``, ``T * round_epsilon`` and ``T * round_delta``).
    epsilon, delta : float
        The tighter of basic and advanced composition (slack ``delta'``); for
        ``coordinator_dp``, the PLD / RDP accountant's epsilon at ``delta``.
    composition : {"basic", "advanced", "pld", "rdp"}
        Which rule gave ``epsilon``.
    slack : float
        The ``delta'`` used for advanced composition (0 for PLD / RDP).
    """

    epsilon_basic: float
    delta_basic: float
    epsilon: float
    delta: float
    composition: str
    slack: float


def coordinator_view_guarantee(round_epsilon: float, n_rounds: int, slack: float) -> CoordinatorView:
    """Compose the ``T`` per-round guarantees of the coordinator's view (paper note 13).

    Each round reveals one sum that is ``eps_round``-DP with respect to one
    record (the record's party adds ``rho_t^k``; the other parties' vectors,
    the one-time noise and the secure sum's rounding do not depend on it).
    The rounds are adaptive (``w_t`` depends on earlier sums), which both
    composition theorems allow. Basic composition gives ``(T eps, 0)``;
    :func:`dperm.privacy.accounting.advanced_composition` gives the tighter of that
    and Dwork-Rothblum-Vadhan with slack ``delta'``.
    """
    round_epsilon = check_epsilon(round_epsilon, "round_epsilon")
    n_rounds = check_positive_int(n_rounds, "n_rounds")
    slack = check_open_delta(slack, "composition_slack")
    spends = [Spend(round_epsilon, 0.0, "PSGD round")] * n_rounds
    epsilon_basic, delta_basic = basic_composition(spends)
    epsilon, delta = advanced_composition(spends, slack)
    composition = "advanced" if epsilon < epsilon_basic else "basic"
    return CoordinatorView(epsilon_basic, delta_basic, epsilon, delta, composition, slack)


# -- beyond 004: per-round Gaussian noise with an (epsilon, delta) coordinator view --------

#: Accountants of Google's ``dp-accounting`` that :func:`calibrate_coordinator_gaussian` accepts.
COORDINATOR_ACCOUNTANTS = ("pld", "rdp")


def _dp_accounting():
    """Import Google's ``dp-accounting`` lazily, with an error that says what to install."""
    try:
        import dp_accounting
        from dp_accounting import pld, rdp  # noqa: F401  (submodules used below)
    except ImportError as error:
        raise ImportError(
            "coordinator_dp=True accounts the coordinator's view with Google's dp-accounting "
            "package, which is not installed. Install it with pip install 'dperm[multiparty]' "
            "(or pip install dp-accounting)."
        ) from error
    return dp_accounting


def check_coordinator_accountant(accountant) -> str:
    if accountant not in COORDINATOR_ACCOUNTANTS:
        raise ValueError(
            f"coordinator_accountant must be one of {COORDINATOR_ACCOUNTANTS}; got {accountant!r}."
        )
    return accountant


def _fresh_accountant(accountant: str):
    dp_accounting = _dp_accounting()
    if accountant == "pld":
        return dp_accounting.pld.PLDAccountant()
    return dp_accounting.rdp.RdpAccountant()


def gaussian_rounds_epsilon(noise_multiplier: float, n_rounds: int, delta: float,
                            accountant: str = "pld") -> float:
    """``epsilon`` at ``delta`` of ``T`` adaptive rounds of the Gaussian mechanism, per dp-accounting.

    Each round releases ``f_t(D) + N(0, sigma^2 I)`` with ``||f_t(D) - f_t(D')|| <= s``
    and ``z = sigma / s``. The event is ``SelfComposedDpEvent(GaussianDpEvent(z), T)``
    on a fresh PLD accountant (pessimistic, so an upper bound) or RDP accountant
    (Mironov 2017; conversion to ``(epsilon, delta)`` is an upper bound too).
    dp-accounting's ``GaussianDpEvent(z)`` is the pair ``N(0, z^2)`` vs ``N(1, z^2)``
    under its default add-or-remove relation; with ``z = sigma / s`` for the
    replace-one sensitivity ``s`` that is exactly the pair of one round here
    (rotation invariance of the isotropic Gaussian), so the default relation
    is the right one.
    """
    check_coordinator_accountant(accountant)
    return _gaussian_rounds_epsilon(check_positive(noise_multiplier, "noise_multiplier"),
                                    check_positive_int(n_rounds, "n_rounds"), check_open_delta(delta), accountant)


@functools.lru_cache(maxsize=512)
def _gaussian_rounds_epsilon(noise_multiplier: float, n_rounds: int, delta: float, accountant: str) -> float:
    """:func:`gaussian_rounds_epsilon` on checked inputs, remembered: a pure function of public numbers
    (a PLD composition takes seconds, and every record of a run, and every fit of an audit, asks again)."""
    dp_accounting = _dp_accounting()
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(noise_multiplier), n_rounds)
    return float(_fresh_accountant(accountant).compose(event).get_epsilon(delta))


@dataclass(frozen=True)
class GaussianRounds:
    """Result of :func:`calibrate_coordinator_gaussian`.

    Attributes
    ----------
    noise_multiplier : float
        ``z``: per-round noise std over the per-round L2 sensitivity.
    epsilon : float
        ``epsilon`` of the whole view at ``delta`` per the accountant (``<=`` the target).
    delta : float
    round_epsilon, round_delta : float
        One round is ``(round_epsilon, round_delta)``-DP with ``round_delta = delta / T``.
    n_rounds : int
    accountant : str
    """

    noise_multiplier: float
    epsilon: float
    delta: float
    round_epsilon: float
    round_delta: float
    n_rounds: int
    accountant: str


def calibrate_coordinator_gaussian(epsilon, delta, n_rounds, accountant="pld") -> GaussianRounds:
    """The smallest per-round Gaussian noise that makes the coordinator's whole view ``(eps, delta)``-DP.

    Beyond 004 (paper note 13). Each party answers round ``t`` with
    ``grad G_k(w_t) + rho_t^k`` (004 eq. 10 without ``eta^k``), ``rho_t^k ~
    N(0, sigma^2 / K I)``, so the secure sum the coordinator sees is
    ``sum_k grad G_k(w_t) + N(0, sigma^2 I)``.

    Soundness:

    1. **Sensitivity.** Replacing one record changes one term ``phi'(y w.x) y x``
       of one party's ``grad G_k(w_t)`` (004 eq. 8), each of norm ``<= L R``, so the
       sum over parties moves by at most ``s = 2 L R`` in L2 (004 Prop. 3.1 with
       paper note 2; :func:`gradient_sum_sensitivity`), whatever ``w_t`` is.
    2. **Composition over T rounds.** ``w_t`` is a function of the earlier sums
       (004 Alg. 1), so the view is an adaptive composition of ``T`` Gaussian
       mechanisms, each with noise multiplier ``z = sigma / s``. PLD and RDP
       accounting both hold under adaptive composition; ``z`` is found by
       dp-accounting's ``calibrate_dp_mechanism`` (a bracketed Brent search that
       returns a ``z`` whose accounted epsilon is ``<= epsilon``) over
       :func:`gaussian_rounds_epsilon`.
    3. **Released model.** ``w_T`` is computed from the sums, the public ``w_0``,
       ``lambda`` and step sizes only: post-processing of the view, hence
       ``(epsilon, delta)``-DP too. No one-time noise is needed; 004 Thm 4.2 (the
       GOP equivalence) is not used, so the guarantee holds for every finite ``T``.

    Assumptions (the same trust model as 004 Thm 4.2): the coordinator learns
    only the exact sum. The noise is split over the ``K`` parties with
    variance ``sigma^2 / (K - t)`` each (:func:`coordinator_dp_calibration`),
    so a coordinator colluding with up to ``t`` parties still faces
    ``sigma``; with more colluders, or a secure sum that leaks an individual
    reply, it sees one party's gradient with only ``sigma / sqrt(K - t)``.
    The fixed-point encoding of a real secure sum is applied to each party's
    noisy vector; its rounding (at most the recorded ``error_bound`` per
    coordinate) is not covered by this analysis (a discrete Gaussian would be).

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    n_rounds : int
        ``T``.
    accountant : {"pld", "rdp"}, default="pld"
        ``"pld"`` (privacy loss distributions, tight) or ``"rdp"`` (Renyi DP, looser).

    Returns
    -------
    GaussianRounds
    """
    epsilon = check_epsilon(epsilon)
    delta = check_open_delta(delta)
    n_rounds = check_positive_int(n_rounds, "n_rounds")
    accountant = check_coordinator_accountant(accountant)
    return _calibrate_coordinator_gaussian(epsilon, delta, n_rounds, accountant)


@functools.lru_cache(maxsize=256)
def _calibrate_coordinator_gaussian(epsilon, delta, n_rounds, accountant) -> GaussianRounds:
    dp_accounting = _dp_accounting()

    def gap(z):
        return gaussian_rounds_epsilon(z, n_rounds, delta, accountant) - epsilon

    lower, upper = bracket_noise_multiplier(gap, epsilon, delta, n_rounds)
    z = dp_accounting.calibrate_dp_mechanism(
        lambda: _fresh_accountant(accountant),
        lambda value: dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(value), n_rounds),
        epsilon, delta,
        bracket_interval=dp_accounting.ExplicitBracketInterval(lower, upper),
        tol=NOISE_MULTIPLIER_RTOL * upper,
    )
    achieved = gaussian_rounds_epsilon(z, n_rounds, delta, accountant)
    round_delta = delta / n_rounds
    return GaussianRounds(
        noise_multiplier=float(z), epsilon=achieved, delta=delta,
        round_epsilon=gaussian_rounds_epsilon(z, 1, round_delta, accountant), round_delta=round_delta,
        n_rounds=n_rounds, accountant=accountant,
    )


def coordinator_view_gaussian(calibration: PSGDCalibration) -> CoordinatorView:
    """The coordinator-view guarantee of a ``coordinator_dp`` calibration (see :func:`calibrate_coordinator_gaussian`).

    ``epsilon`` is the accountant's, at ``delta``; ``epsilon_basic`` is basic
    composition of the per-round ``(round_epsilon, delta / T)``, for comparison.
    """
    if not calibration.coordinator_dp:
        raise ValueError("coordinator_view_gaussian needs a calibration made with coordinator_dp=True.")
    rounds = calibrate_coordinator_gaussian(calibration.epsilon, calibration.delta, calibration.n_rounds,
                                            calibration.coordinator_accountant)  # cached
    if rounds.noise_multiplier == calibration.noise_multiplier:
        epsilon = rounds.epsilon
    else:  # a calibration built by other means: account its own noise
        epsilon = gaussian_rounds_epsilon(calibration.noise_multiplier, calibration.n_rounds,
                                          calibration.delta, calibration.coordinator_accountant)
    return CoordinatorView(
        epsilon_basic=calibration.n_rounds * calibration.round_epsilon,
        delta_basic=min(1.0, calibration.n_rounds * calibration.round_delta),
        epsilon=epsilon, delta=calibration.delta,
        composition=calibration.coordinator_accountant, slack=0.0,
    )


def psgd_coordinator_view(calibration: PSGDCalibration, composition_slack=None) -> CoordinatorView:
    """The guarantee proven for the coordinator's view over the ``T`` rounds, hence for ``w_T``.

    ``w_T`` is computed from the ``T`` secure sums, the public ``w_0``,
    ``lambda + Delta`` and step sizes only (004 Alg. 1), so it is a
    post-processing of the coordinator's view and has its guarantee for the
    finite ``T`` that was run (paper note 13). 004's scheme: the ``T`` rounds of
    ``round_epsilon`` composed by :func:`coordinator_view_guarantee` with slack
    ``composition_slack`` (default ``delta``). ``coordinator_dp``: the PLD / RDP
    account of :func:`coordinator_view_gaussian` (``composition_slack`` must
    be None).
    """
    if calibration.coordinator_dp:
        if composition_slack is not None:
            raise ValueError(
                "composition_slack is the delta' of the advanced composition of 004's scheme; with "
                "coordinator_dp=True the view is accounted by dp-accounting at delta. Leave it None."
            )
        return coordinator_view_gaussian(calibration)
    slack = calibration.delta
    if composition_slack is not None:
        slack = check_open_delta(composition_slack, "composition_slack")
    return coordinator_view_guarantee(calibration.round_epsilon, calibration.n_rounds, slack)


def clipping_count_is_covered(calibration: PSGDCalibration) -> bool:
    """Whether a round's count of secure-sum clipped coordinates may be revealed (paper note 14).

    The count is computed by each party on its own reply as it enters the
    secure sum: after the party's DP noise, before quantisation (no
    un-noised value enters it). 004's scheme: every reply carries its own
    ``rho_t^k`` calibrated to the whole per-round sensitivity ``2 L R``
    (004 Proc. 3), so each reply is by itself ``round_epsilon``-DP with
    respect to a record of its party, and one record changes one reply only;
    the tuple of the round's replies is ``round_epsilon``-DP, and the count,
    like the sum, is post-processing of it, covered by
    :func:`psgd_coordinator_view`. ``coordinator_dp``: a reply carries only
    ``sigma / sqrt(K - t)``; only the sum is accounted, so a count computed from
    the individual replies is not covered and is not revealed (each party
    warns in its own log instead).
    """
    return not calibration.coordinator_dp


# -- a party's own floor --------------------------------------------------------------


@dataclass(frozen=True)
class PartyFloor:
    """A party's own limits: it takes part only in runs at least this private.

    Each party is started with them (``Party(max_epsilon=..., max_delta=...,
    max_rounds=...)``, ``dperm party serve --max-epsilon --max-delta
    --max-rounds``) and refuses a set-up whose guarantee is weaker
    (:func:`check_psgd_calibration`).

    Attributes
    ----------
    max_epsilon : float > 0
        Largest epsilon the party accepts, both as the announced target and
        as the guarantee proven for what it sends (the coordinator's view
        over the announced rounds, computed by the party itself).
    max_delta : float in [0, 1)
        Largest delta, likewise (0 accepts pure epsilon-DP only).
    max_rounds : int >= 1
        Most gradient requests the party answers in one run.
    min_collusion_threshold : int >= 0, default=1
        Fewest colluding parties the set-up must tolerate: the party refuses
        an announced collusion threshold ``t`` below it, and checks the
        guarantee at the announced ``t`` against ``max_epsilon``/``max_delta``
        (:mod:`dperm.privacy.collusion`; :func:`check_collusion_floor`).
    """

    max_epsilon: float
    max_delta: float
    max_rounds: int
    min_collusion_threshold: int = DEFAULT_COLLUSION_THRESHOLD

    def __post_init__(self):
        object.__setattr__(self, "max_epsilon", check_epsilon(self.max_epsilon, "max_epsilon"))
        object.__setattr__(self, "max_delta", check_delta(self.max_delta, "max_delta"))
        object.__setattr__(self, "max_rounds", check_positive_int(self.max_rounds, "max_rounds"))
        threshold = self.min_collusion_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
            raise ValueError(f"min_collusion_threshold must be an integer >= 0; got {threshold!r}.")


def check_collusion_floor(collusion_threshold, n_parties, floor: PartyFloor, party_id, refuse) -> None:
    """A party's refusal of an announced collusion threshold below its floor's (``refuse(party_id, reason)``).

    The announced ``t`` is part of the checked calibration: the party
    recomputes every noise share for it, so accepting ``t >= min`` means
    every share is sized for at least ``min`` colluders.
    """
    if isinstance(collusion_threshold, bool) or not isinstance(collusion_threshold, int):
        refuse(party_id, f"its collusion_threshold {collusion_threshold!r} is not an integer.")
    if floor.min_collusion_threshold > n_parties - 1:
        refuse(party_id, f"with K={n_parties} parties no set-up tolerates this party's "
                         f"min_collusion_threshold={floor.min_collusion_threshold} colluders (at most K - 1).")
    if collusion_threshold < floor.min_collusion_threshold:
        refuse(party_id, f"it tolerates collusion_threshold={collusion_threshold} colluding parties and this party "
                         f"requires at least min_collusion_threshold={floor.min_collusion_threshold} (its noise "
                         "share would be too small if the coordinator knew the others').")


def accepting_floor(calibration: PSGDCalibration, composition_slack=None) -> PartyFloor:
    """The floor under which a party accepts exactly ``calibration`` (in-process runs).

    For a caller that plays every role (the in-process estimators and
    experiments): the larger of the announced target and the proven
    coordinator-view guarantee, and the announced ``T``.
    """
    view = psgd_coordinator_view(calibration, composition_slack)
    return PartyFloor(max(calibration.epsilon, view.epsilon), max(calibration.delta, view.delta),
                      calibration.n_rounds, calibration.collusion_threshold)


# -- the guarantee by number of colluders ------------------------------------------------


def psgd_collusion_guarantee(calibration: PSGDCalibration, view: CoordinatorView) -> CollusionGuarantee:
    """``t``, the guarantee at ``t`` colluders (the view's) and the epsilon with ``c = 0, ..., K - 1`` colluders.

    004's scheme: the view's guarantee rests on each party's own ``rho_t^k``,
    which carries the whole per-round sensitivity, so colluders who know
    other parties' noise learn nothing more about an honest party's records:
    the same epsilon for every ``c`` (``eta^k``, sized for ``t`` colluders,
    matters only to 004 Thm 4.2's limit-point target, a note).
    ``coordinator_dp``: the honest ``K - c`` parties' noise multiplier is
    ``z sqrt((K - c) / (K - t))`` (:func:`~dperm.privacy.collusion.scaled_noise_multiplier`),
    accounted by the run's accountant at ``delta`` over the ``T`` rounds.
    """
    n_parties, threshold = calibration.n_parties, calibration.collusion_threshold
    if not calibration.coordinator_dp:
        by_colluders = (view.epsilon,) * n_parties
    else:
        by_colluders = tuple(
            view.epsilon if c == threshold else gaussian_rounds_epsilon(
                scaled_noise_multiplier(calibration.noise_multiplier, n_parties, threshold, c),
                calibration.n_rounds, calibration.delta, calibration.coordinator_accountant)
            for c in range(n_parties))
    return CollusionGuarantee(int(threshold), view.epsilon, view.delta, by_colluders)
