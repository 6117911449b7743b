"""Multiparty private SGD (PSGD), engine-free: 004 Alg. 1 (coordinator) and Proc. 3 (parties).

Three roles, each with one job:

- :class:`Party` (004 Proc. 3) holds its shard, draws its one-time noise
  ``eta^k`` once and answers "gradient at ``w_t``" with
  ``grad G_k(w_t) + rho_t^k + eta^k``;
- a :class:`GradientSumNetwork` is the coordinator's only channel to the
  parties: it broadcasts ``w_t`` and returns the *secure sum* of their replies
  (004 Thm 4.2 needs exactly that). :class:`InProcessNetwork` runs the
  parties' side and a :class:`~dperm.multiparty.secure_sum.SecureSum` in one
  process; a Flower SecAgg+ engine will be another implementation;
- :func:`psgd` (004 Alg. 1) is the coordinator: it never touches a party or
  an individual reply, only the network's sums.

The privacy arithmetic is in :mod:`dperm.multiparty.privacy`, the
``privacy_`` record in :mod:`dperm.privacy.multiparty_record`.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from dperm.exceptions import (
    DropoutError,
    MalformedReplyError,
    PartyUnavailableError,
    SecureSumClippingWarning,
)
from dperm.mechanisms.noise import release_on_grid, sample_gaussian
from dperm.multiparty.integrity import check_sum, psgd_party_bound, psgd_sum_bound, refuse_reply
from dperm.multiparty.privacy import check_psgd_calibration, discrete_laplace_tail_bound, round_noise_calibration
from dperm.multiparty.secure_sum import check_contribution, clipping_range_for, summarise_reports
from dperm.privacy.collusion import DEFAULT_COLLUSION_THRESHOLD
from dperm.privacy.multiparty_record import PSGDPrivacyRecord
from dperm.privacy.psgd import (
    PartyFloor,
    PSGDCalibration,
    clipping_count_is_covered,
    psgd_collusion_guarantee,
    psgd_coordinator_view,
)
from dperm.privacy.references import REFERENCES
from dperm.solvers import RegularizedERMObjective, minimize_certified
from dperm.validation import check_random_state, clip_rows_to_norm, warn_clipped_rows

__all__ = [
    "CLIPPING_TAIL_PROBABILITY", "GradientSumNetwork", "InProcessNetwork", "InProcessParties",
    "PSGDResult", "Party", "PartyNetwork", "RobbinsMonroSteps", "ShardOwner", "psgd",
    "psgd_clipping_range", "resolve_step_size",
]

#: Probability that one coordinate of one reply exceeds the public bound used
#: by :func:`psgd_clipping_range` (per round and party).
CLIPPING_TAIL_PROBABILITY = 1e-9


# -- parties ---------------------------------------------------------------------------


def check_shard(X, y, party_id) -> tuple[np.ndarray, np.ndarray]:
    """Return a party's shard as float arrays, ``y`` in {-1, +1}, or raise ValueError."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(
            f"party {party_id!r}: X must be a non-empty 2-D array (rows x features); got shape {X.shape}."
        )
    if y.shape != (X.shape[0],):
        raise ValueError(f"party {party_id!r}: y must have shape ({X.shape[0]},); got {y.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"party {party_id!r}: X contains NaN or infinite values.")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError(f"party {party_id!r}: labels must be -1 or +1; got {np.unique(y)[:5].tolist()}.")
    return X, y


class ShardOwner:
    """What every protocol's party holds: its checked shard, loss, floor and noise source.

    The shard's rows are scaled onto ``data_norm``.

    Rows longer than ``data_norm`` are scaled onto it (a per-record step
    that keeps DP); the party warns in its own log and never sends the count.
    """

    def __init__(self, X, y, *, loss, data_norm=1.0, party_id=0, random_state=None, max_epsilon, max_delta,
                 max_rounds, min_collusion_threshold=DEFAULT_COLLUSION_THRESHOLD):
        self.floor = PartyFloor(max_epsilon, max_delta, max_rounds, min_collusion_threshold)
        X, y = check_shard(X, y, party_id)
        X, rows_clipped = clip_rows_to_norm(X, data_norm)
        warn_clipped_rows(rows_clipped, data_norm)  # the party's own log; never sent
        self.party_id = party_id
        self.loss = loss
        self.data_norm = float(data_norm)
        self._X, self._y = X, y
        self._rng = check_random_state(random_state)
        self._calibration = None
        self.rounds_answered = 0

    @property
    def n_samples(self) -> int:
        return self._X.shape[0]

    @property
    def n_features(self) -> int:
        return self._X.shape[1]


class Party(ShardOwner):
    """One data owner ``P_k`` of 004 Sec. 2.3, with its functionality of 004 Proc. 3.

    Parameters
    ----------
    X : array-like of shape (N_k, d)
        Rows with an L2 norm above ``data_norm`` are scaled onto it (a
        per-record step that keeps DP). The party warns in its own log
        (``DataClippingWarning``); the count is never sent.
    y : array-like of shape (N_k,)
        Labels in {-1, +1}.
    loss : dperm.losses.MarginLoss
        ``phi``.
    data_norm : float
        Public bound ``R`` on a row's norm.
    party_id : hashable
        Name used in messages.
    random_state : None, int or numpy Generator
        Source of ``eta^k`` and ``rho_t^k`` (``None``: OS entropy, for real use).
    max_epsilon, max_delta : float
        The party's own floor (:class:`~dperm.privacy.psgd.PartyFloor`):
        the largest epsilon and delta it accepts, both as a set-up's target
        and as the guarantee proven for what it sends.
    max_rounds : int
        The most gradient requests it answers in one run.
    min_collusion_threshold : int, default=1
        The fewest colluding parties a set-up must tolerate
        (:class:`~dperm.privacy.psgd.PartyFloor`).

    Attributes
    ----------
    n_samples, n_features : int
        ``N_k`` and ``d`` (public).
    floor : PartyFloor
    rounds_answered : int
    """

    def __init__(self, X, y, **kwargs):
        super().__init__(X, y, **kwargs)
        self._one_time_noise = None

    # -- PSGD (004 Proc. 3) -------------------------------------------------------------
    def setup(self, calibration: PSGDCalibration) -> None:
        """Check the coordinator's public calibration, then draw ``eta^k ~ N(0, sigma^2/K I)`` once.

        The check (:func:`~dperm.multiparty.privacy.check_psgd_calibration`)
        recomputes the calibration from the announced public inputs with the
        party's own loss and ``data_norm`` and refuses
        (:class:`~dperm.exceptions.CalibrationRefusedError`) a set-up whose
        guarantee is weaker than the party's floor, before anything is drawn.
        A second setup is refused: fresh ``eta^k`` draws would let the
        coordinator average the one-time noise away (004 Sec. 3.3). With
        ``calibration.coordinator_dp`` there is no one-time noise (``eta^k = 0``).
        """
        if self._calibration is not None:
            raise RuntimeError(
                f"party {self.party_id!r} has already drawn its one-time noise eta^k; it is drawn "
                "once (004 Proc. 3) and a new setup would let the coordinator average it out."
            )
        check_psgd_calibration(calibration, self.floor, loss=self.loss, data_norm=self.data_norm,
                               n_samples=self.n_samples, n_features=self.n_features, party_id=self.party_id)
        self._calibration = calibration
        if calibration.coordinator_dp:
            self._one_time_noise = np.zeros(self.n_features)
        else:
            self._one_time_noise = sample_gaussian(self.n_features, calibration.party_noise_sigma, self._rng)

    @property
    def one_time_noise(self) -> np.ndarray:
        """A copy of this party's ``eta^k`` (its own secret; drawn in :meth:`setup`).

        Only the party itself may read it. In-process experiments, which play
        every role, use it to compute GOP's minimiser with the same
        ``eta = sum_k eta^k`` as a PSGD run (a paired comparison, 004 Thm 4.2).
        """
        if self._one_time_noise is None:
            raise RuntimeError(f"party {self.party_id!r} has no one-time noise yet; call setup() first.")
        return self._one_time_noise.copy()

    def local_gradient(self, coef) -> np.ndarray:
        """``grad G_k(w) = sum_j phi'(y_j w.x_j) y_j x_j`` (004 eq. 8): no noise."""
        scores = self._X @ coef
        return self._X.T @ self.loss.score_derivative(self._y, scores)

    def _round_noise(self) -> np.ndarray:
        """``coordinator_dp``'s ``rho_t^k ~ N(0, scale^2 I)``, ``scale = sigma / sqrt(K)``.

        The ``K`` parties' noise sums to ``N(0, sigma^2 I)``
        (:func:`~dperm.privacy.psgd.calibrate_coordinator_gaussian`).
        Drawn in floating point: this option is not float-safe (README).
        """
        return sample_gaussian(self.n_features, self._calibration.round_noise_scale, self._rng)

    def _release_round(self, gradient: np.ndarray) -> np.ndarray:
        """``grad G_k(w_t) + rho_t^k``: this round's private release of the party's gradient sum.

        004's scheme: the float-safe form of 004 Proc. 3's ``rho`` (eq. 2),
        :func:`~dperm.mechanisms.noise.release_on_grid` with
        :func:`~dperm.multiparty.privacy.round_noise_calibration`: exactly
        ``eps_round``-DP. ``coordinator_dp``: plus :meth:`_round_noise`.
        """
        calibration = self._calibration
        if calibration.round_noise == "gaussian":
            return gradient + self._round_noise()
        grid = round_noise_calibration(calibration.round_epsilon, calibration.lipschitz,
                                       calibration.data_norm, self.n_features)
        return release_on_grid(gradient, grid, self._rng)

    def noisy_gradient(self, coef) -> np.ndarray:
        """Answer one gradient request: ``grad G_k(w_t) + rho_t^k + eta^k`` (004 Proc. 3, eq. 14).

        Refuses before :meth:`setup` and after ``n_rounds`` answers or its
        own ``max_rounds``, whichever is fewer (the coordinator-view guarantee
        is computed for ``n_rounds``).
        """
        calibration = self._calibration
        if calibration is None:
            raise RuntimeError(f"party {self.party_id!r} has no calibration; call setup() first.")
        allowed = min(calibration.n_rounds, self.floor.max_rounds)
        if self.rounds_answered >= allowed:
            raise RuntimeError(
                f"party {self.party_id!r} has answered the {allowed} gradient requests it agreed to "
                f"(n_rounds={calibration.n_rounds}, max_rounds={self.floor.max_rounds}); more answers "
                "would exceed the coordinator-view guarantee."
            )
        coef = np.asarray(coef, dtype=float)
        if coef.shape != (self.n_features,) or not np.all(np.isfinite(coef)):
            raise ValueError(
                f"party {self.party_id!r} received a malformed iterate of shape {coef.shape}; "
                f"expected ({self.n_features},) finite values."
            )
        self.rounds_answered += 1
        # the party's own checks (dperm.multiparty.integrity): a broken party sends nothing
        gradient = refuse_reply(self.party_id, self.local_gradient(coef), what="gradient sum",
                                norm_bound=psgd_party_bound(calibration, self.n_samples))
        # eta^k is data-independent: adding it (in floats) post-processes the exact release
        return refuse_reply(self.party_id, self._release_round(gradient) + self._one_time_noise, what="reply")

    # -- local aggregation (004 eq. 4) --------------------------------------------------
    def local_minimiser(self, alpha: float, gradient_tol: float, max_iter: int):
        """Minimise the local objective ``J_k`` (004 eq. 4) with a gradient-norm certificate."""
        objective = RegularizedERMObjective(self.loss, self._X, self._y, alpha)
        return minimize_certified(objective, tol=gradient_tol, max_iter=max_iter)

    def release_on_grid(self, values, grid) -> np.ndarray:
        """``values`` on ``grid`` with exact discrete Laplace noise from this party's generator."""
        return release_on_grid(values, grid, self._rng)

    def __repr__(self) -> str:
        return f"Party(party_id={self.party_id!r}, n_samples={self.n_samples}, n_features={self.n_features})"


# -- the coordinator's channel ---------------------------------------------------------


class PartyNetwork(ABC):
    """The coordinator's only channel to the ``K`` parties, whatever the protocol and the transport.

    The coordinator learns the public sizes and ``d``, announces the public
    calibration (:meth:`setup`; each party checks it against its own floor)
    and then receives secure sums only; each protocol adds its request
    (:class:`GradientSumNetwork` for PSGD, 004 Alg. 1;
    :class:`~dperm.multiparty.newton.NewtonNetwork` for Newton). Transports:
    :class:`InProcessParties` (one process) and
    :class:`~dperm.multiparty.flower._grid_network.GridNetwork` (Flower).
    """

    @property
    @abstractmethod
    def n_samples_by_party(self) -> tuple:
        """Public party sizes ``(N_1, ..., N_K)``."""

    @property
    @abstractmethod
    def n_features(self) -> int:
        """``d``."""

    @property
    def n_parties(self) -> int:
        return len(self.n_samples_by_party)

    @abstractmethod
    def setup(self, calibration) -> None:
        """Send the public calibration to every party; any refusal fails the set-up."""


class InProcessParties(PartyNetwork):
    """Parties and a secure sum in one process, with the coordinator kept outside.

    Parameters
    ----------
    parties : sequence of Party or NewtonParty
        At least two, with the same number of features and distinct ids.
    secure_sum : dperm.multiparty.secure_sum.SecureSum
    """

    def __init__(self, parties, secure_sum):
        parties = list(parties)
        if len(parties) < 2:
            raise ValueError(f"a multiparty network needs at least 2 parties; got {len(parties)}.")
        widths = {party.n_features for party in parties}
        if len(widths) != 1:
            raise ValueError(f"the parties' shards have different numbers of features: {sorted(widths)}.")
        ids = [party.party_id for party in parties]
        if len(set(ids)) != len(ids):
            raise ValueError(f"party ids must be distinct; got {ids}.")
        self._parties = parties
        self._secure_sum = secure_sum

    @property
    def n_samples_by_party(self) -> tuple:
        return tuple(party.n_samples for party in self._parties)

    @property
    def n_features(self) -> int:
        return self._parties[0].n_features

    def setup(self, calibration) -> None:
        """Every party checks the calibration against its floor and sets up (PSGD: draws ``eta^k`` once)."""
        for party in self._parties:
            party.setup(calibration)


class GradientSumNetwork(PartyNetwork):
    """PSGD's channel (004 Alg. 1): broadcast ``w_t``, receive the secure sum of the noisy gradients.

    An engine (in-process, Flower SecAgg+) implements it. A report counts
    clipped coordinates only when
    :func:`~dperm.privacy.psgd.clipping_count_is_covered` admits it.
    """

    @abstractmethod
    def gradient_sum(self, coef, scale: float, round_index: int):
        """``(scale * sum_k grad^G_k(w_t), SecureSumReport)`` through a secure sum."""


class InProcessNetwork(InProcessParties, GradientSumNetwork):
    """PSGD's parties and a secure sum in one process, with the coordinator kept outside.

    :meth:`gradient_sum` plays the network: it runs each party's side (004
    Proc. 3, then the party's reply check and scaling) and hands the replies
    straight to the secure sum, whose aggregator sees only masked vectors. It
    returns only the revealed sum and its report. A party that raises
    :class:`~dperm.exceptions.PartyUnavailableError` counts as dropped
    for the round.

    Parameters
    ----------
    parties : sequence of Party
        At least two, with the same number of features and distinct ids.
    secure_sum : dperm.multiparty.secure_sum.SecureSum
    """

    _count_clipped = False

    def setup(self, calibration: PSGDCalibration) -> None:
        super().setup(calibration)
        self._count_clipped = clipping_count_is_covered(calibration)

    def _party_reply(self, party, coef, scale):
        """The party's side of one round: Proc. 3, reply check, scaling by the public ``1/N``."""
        try:
            reply = party.noisy_gradient(coef)
        except PartyUnavailableError:
            return None
        return scale * check_contribution(party.party_id, reply, self.n_features)

    def gradient_sum(self, coef, scale: float, round_index: int):
        try:
            replies = {party.party_id: self._party_reply(party, coef, scale) for party in self._parties}
            return self._secure_sum.sum(replies, dimension=self.n_features, count_clipped=self._count_clipped)
        except (DropoutError, MalformedReplyError) as error:
            raise type(error)(f"round {round_index}: {error}") from None


def psgd_clipping_range(calibration: PSGDCalibration, n_samples_by_party) -> float:
    """A clipping range, from public constants, that a scaled reply exceeds with tiny probability.

    A reply scaled by ``1/N`` has coordinates at most
    ``(N_max L R + |rho_i| + |eta^k_i|) / N``; ``|rho_i|`` is bounded by its
    discrete Laplace tail plus the grid's rounding (by its Gaussian tail with
    ``coordinator_dp``)
    and ``|eta^k_i|`` by its Gaussian tail, each exceeded with probability
    ``CLIPPING_TAIL_PROBABILITY``. The result is rounded up to a power of two
    (:func:`~dperm.multiparty.secure_sum.clipping_range_for`).
    """
    tail = CLIPPING_TAIL_PROBABILITY
    gradient_bound = max(n_samples_by_party) * calibration.lipschitz * calibration.data_norm
    if calibration.round_noise == "gaussian":
        rho_bound = calibration.round_noise_scale * float(norm.isf(tail / 2.0))
    else:
        grid = round_noise_calibration(calibration.round_epsilon, calibration.lipschitz,
                                       calibration.data_norm, calibration.n_features)
        rho_bound = discrete_laplace_tail_bound(grid, tail)
    eta_bound = calibration.party_noise_sigma * float(norm.isf(tail / 2.0))
    return clipping_range_for((gradient_bound + rho_bound + eta_bound) / calibration.n_samples)


# -- the coordinator (004 Alg. 1) ------------------------------------------------------


@dataclass(frozen=True)
class RobbinsMonroSteps:
    """``z_t = 1 / (mu (t + t0))`` with ``t0 = smoothness / mu`` (Robbins & Monro 1951).

    ``sum z_t = inf`` and ``sum z_t^2 < inf``, as 004 Alg. 1 requires; ``mu``
    is the strong convexity ``lambda + Delta`` of the objective, which makes
    this the classic ``O(1/t)`` schedule, and ``z_0 = 1/smoothness`` keeps the
    first steps stable.
    """

    strong_convexity: float
    smoothness: float

    def __call__(self, t: int) -> float:
        offset = self.smoothness / self.strong_convexity
        return 1.0 / (self.strong_convexity * (t + offset))

    def __str__(self) -> str:
        return (
            f"z_t = 1 / ({self.strong_convexity:.4g} (t + {self.smoothness / self.strong_convexity:.4g})) "
            "(Robbins-Monro)"
        )


def resolve_step_size(step_size, calibration: PSGDCalibration):
    """``"auto"`` -> :class:`RobbinsMonroSteps`; a callable ``t -> z_t`` is used as given.

    The smoothness of ``J + Delta/2 ||w||^2`` is at most ``c R^2 + lambda + Delta``
    (its Hessian bound; 004 appendix, proof of Thm 5.1).
    """
    if isinstance(step_size, str) and step_size == "auto":
        mu = calibration.strong_convexity
        return RobbinsMonroSteps(mu, calibration.curvature * calibration.data_norm**2 + mu)
    if callable(step_size):
        return step_size
    raise ValueError(f"step_size must be 'auto' or a callable t -> z_t; got {step_size!r}.")


def _step(step_size, t: int) -> float:
    value = step_size(t)
    if not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"step_size({t}) must be a finite number > 0; got {value!r}.")
    return float(value)


@dataclass(frozen=True)
class PSGDResult:
    """Output of :func:`psgd`: ``w_psgd`` and its privacy record."""

    coef: np.ndarray
    record: PSGDPrivacyRecord
    calibration: PSGDCalibration


def _check_network(network: GradientSumNetwork, calibration: PSGDCalibration) -> None:
    sizes = network.n_samples_by_party
    if len(sizes) != calibration.n_parties or sum(sizes) != calibration.n_samples:
        raise ValueError(
            f"the network has parties of sizes {list(sizes)}; the calibration is for "
            f"{calibration.n_parties} parties and N = {calibration.n_samples}."
        )
    if network.n_features != calibration.n_features:
        raise ValueError(
            f"the network's parties have {network.n_features} features; the calibration is for "
            f"{calibration.n_features}."
        )


def psgd(network: GradientSumNetwork, calibration: PSGDCalibration, *, step_size="auto",
         composition_slack=None, coef_init=None, completed=(), on_round=None) -> PSGDResult:
    """The third party's functionality of 004 Alg. 1 (PSGD).

    ``calibration`` (from :func:`~dperm.multiparty.privacy.calibrate_psgd`)
    holds computeSlack's ``[Delta, eps~]`` (Alg. 1 line 1; 004 Proc. 2 with
    paper note 4's fix). Then, for ``t = 0 .. T-1``::

        S_t = (1/N) sum_k grad^G_k(w_t)              # one secure sum (Thm 4.2)
        w_{t+1} = w_t - z_t (S_t + (lambda + Delta) w_t)

    ``grad^G_k = grad G_k + rho_t^k + eta^k`` is party ``k``'s reply (004
    Proc. 3); the parties scale it by the public ``1/N`` before the secure sum
    so that it fits a fixed clipping range (the noise is added before: paper note 14).
    The released ``w_T`` is a post-processing of the coordinator's view, so it
    has the view's guarantee for the ``T`` rounds run
    (:func:`~dperm.privacy.psgd.psgd_coordinator_view`): that is the
    record's headline. The iterates converge to GOP's minimiser
    ``argmin J(w) + eta.w/N + Delta/2 ||w||^2`` with ``eta = sum_k eta^k``
    (004 eqs. 15-17), for which 004 Thm 4.2 proves ``(epsilon, delta)``; that
    limit-point guarantee is recorded as a note.

    Parameters
    ----------
    network : GradientSumNetwork
        The coordinator's only access to the parties.
    calibration : PSGDCalibration
    step_size : "auto" or callable, default="auto"
        ``z_t``; "auto" is :class:`RobbinsMonroSteps`.
    composition_slack : float in (0, 1), optional
        ``delta'`` for the advanced composition of the coordinator's view;
        defaults to ``calibration.delta``. Not used with ``coordinator_dp``
        (the view is accounted by PLD / RDP; passing it is an error).
    coef_init : array-like of shape (d,), optional
        ``w_0`` (public); zeros by default.
    completed : sequence of (coef, report, seconds), optional
        Rounds an earlier, crashed coordinator of the same run completed
        (``w_1 .. w_r`` with their secure-sum reports: public values from
        its checkpoint, :mod:`dperm.multiparty.flower.checkpoint`): the run
        continues at round ``r + 1`` from ``w_r`` and asks nothing again.
    on_round : callable, optional
        ``on_round(round_index, total, coef, report, seconds)`` after each
        round this call completes (the checkpoint's writer): ``total`` is the
        round's noisy secure sum and ``coef`` the iterate ``w_{t+1}`` from it.

    With ``calibration.coordinator_dp`` (beyond 004, paper note 13) the same loop
    runs with ``eta^k = 0``, Gaussian ``rho_t^k`` and ``Delta = 0``: noisy
    gradient descent whose whole transcript, hence ``w_psgd``, is
    ``(epsilon, delta)``-DP (:func:`~dperm.privacy.psgd.calibrate_coordinator_gaussian`).

    Returns
    -------
    PSGDResult
        ``coef`` is ``w_psgd``; ``record`` states the guarantee proven for it
        (the coordinator's view over ``T`` rounds, paper note 13).
    """
    _check_network(network, calibration)
    view = psgd_coordinator_view(calibration, composition_slack)
    steps = resolve_step_size(step_size, calibration)
    d = calibration.n_features
    coef = np.zeros(d) if coef_init is None else np.array(coef_init, dtype=float)
    if coef.shape != (d,) or not np.all(np.isfinite(coef)):
        raise ValueError(f"coef_init must be {d} finite numbers; got shape {coef.shape}.")
    if len(completed) > calibration.n_rounds:
        raise ValueError(f"{len(completed)} completed rounds given; the run has {calibration.n_rounds}.")
    network.setup(calibration)
    scale = 1.0 / calibration.n_samples
    regularization = calibration.strong_convexity
    reports = []
    for coef, report, _ in completed:  # a resumed run: what the earlier coordinator computed
        coef = np.array(coef, dtype=float)
        reports.append(report)
    sum_bound = psgd_sum_bound(calibration)  # public: what honest replies can sum to
    for t in range(len(completed), calibration.n_rounds):
        started = time.perf_counter()
        gradient_sum, report = network.gradient_sum(coef, scale, t)
        check_sum(gradient_sum, report, norm_bound=sum_bound, round_index=t, protocol="PSGD")
        reports.append(report)
        coef = coef - _step(steps, t) * (gradient_sum + regularization * coef)  # 004 Alg. 1
        if on_round is not None:
            on_round(t, gradient_sum, coef, report, time.perf_counter() - started)
    summary = summarise_reports(reports)
    if summary.coordinates_clipped:  # None when not counted (coordinator_dp): the parties warn themselves
        warnings.warn(
            f"the secure sum clipped {summary.coordinates_clipped} noisy coordinates in "
            f"{summary.sums_with_clipping} of {summary.n_sums} rounds (clipping_range="
            f"{summary.clipping_range:g}); PSGD's equivalence with GOP (004 Thm 4.2) does not hold for "
            "this run. Raise the secure sum's clipping_range.",
            SecureSumClippingWarning,
            stacklevel=2,
        )
    record = _psgd_record(calibration, view, summary, network, steps)
    return PSGDResult(coef=coef, record=record, calibration=calibration)


def _psgd_notes(summary, calibration) -> tuple:
    if calibration.coordinator_dp:
        return _coordinator_dp_notes(summary, calibration)
    notes = [
        f"004 Thm 4.2: the point PSGD converges to as T grows (GOP's minimiser, Alg. 4) is "
        f"({calibration.epsilon:g}, {calibration.delta:g})-DP, the target the one-time noise eta is "
        "calibrated for. That is not proven for the finite-T iterate released here, whose guarantee is "
        "the headline (post-processing of the coordinator's view).",
        "The coordinator's view is protected only if the secure sum hides individual replies "
        "(honest-but-curious aggregator). Each reply's per-round noise carries the whole sensitivity, so "
        "the view's guarantee holds whatever parties collude; the one-time noise eta is split so that any "
        f"K - t = {calibration.n_parties - calibration.collusion_threshold} parties' shares sum to GOP's "
        f"noise (collusion threshold t = {calibration.collusion_threshold}).",
        "Revealed besides the sums: the public party sizes N_k and the count of coordinates the secure "
        "sum clipped, which each party counts on its own noisy reply (after its noise, before "
        "quantisation): post-processing of the rounds' DP replies. No count of clipped rows is revealed.",
    ]
    if summary.coordinates_clipped:
        notes.append(
            f"The secure sum clipped {summary.coordinates_clipped} noisy coordinates in "
            f"{summary.sums_with_clipping} rounds: the equivalence with GOP fails for this run; "
            "the coordinator-view guarantee is unaffected (clipping is post-processing)."
        )
    return tuple(notes)


def _psgd_record(calibration, view, summary, network, steps) -> PSGDPrivacyRecord:
    return PSGDPrivacyRecord(
        mechanism="psgd",
        epsilon=view.epsilon,
        delta=view.delta,
        calibration=calibration,
        view=view,
        n_samples_by_party=tuple(network.n_samples_by_party),
        step_size=str(steps),
        secure_sum=summary,
        gop_equivalent=not calibration.coordinator_dp and summary.coordinates_clipped == 0,
        reference=REFERENCES["psgd_coordinator_dp" if calibration.coordinator_dp else "psgd"],
        notes=_psgd_notes(summary, calibration),
        collusion=psgd_collusion_guarantee(calibration, view),
    )


def _coordinator_dp_notes(summary, calibration) -> tuple:
    notes = [
        f"coordinator_dp: each round's secure sum is sum_k grad G_k(w_t) plus the parties' Gaussian noise, any "
        f"K - t = {calibration.n_parties - calibration.collusion_threshold} of which sum to N(0, sigma^2 I), "
        f"sigma = {calibration.round_noise_sigma:.4g} = z * 2 L R with z = "
        f"{calibration.noise_multiplier:.4g}; L2 sensitivity 2 L R per round (004 Prop. 3.1, note 2); "
        f"{calibration.n_rounds} adaptive rounds accounted by dp-accounting "
        f"({calibration.coordinator_accountant.upper()}).",
        "The released model is computed from the sums and public constants only: it has the "
        "coordinator view's guarantee by post-processing, for this finite T. "
        "No one-time noise eta^k is drawn and 004 Thm 4.2 (equivalence with GOP) is not used.",
        "Trust model as in 004 Thm 4.2: the coordinator learns only the exact sum, and knows the noise of "
        f"at most t = {calibration.collusion_threshold} colluding parties. The noise is split with "
        "sigma / sqrt(K - t) per party, so with more colluders the guarantee weakens (the record's "
        "epsilon_by_colluders) down to one party's reply with only sigma / sqrt(K - t).",
        f"The secure sum's fixed-point rounding (at most {summary.error_bound:.3g} per coordinate "
        "and round) acts on each party's noisy vector and is not covered by the Gaussian "
        "accounting (a discrete Gaussian would be).",
        "Revealed besides the sums: the public party sizes N_k only. The secure sum's clipping, like "
        "its rounding, acts on each party's vector (sigma / sqrt(K - t) noise), outside the Gaussian "
        "accounting, so no clipping count is revealed: each party warns in its own log if its vector is "
        "clipped (the public clipping range makes that rare). No count of clipped rows is revealed.",
    ]
    return tuple(notes)
