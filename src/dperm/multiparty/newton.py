"""A few-round multiparty protocol: damped Newton on securely summed, noised gradients and Hessians.

Beyond the papers (004's PSGD needs hundreds to thousands of rounds; this
needs tens). Three roles, as in :mod:`dperm.multiparty.protocol`:

- :class:`NewtonParty` holds its shard and answers "sums at ``w_t``" with
  its gradient and Hessian sums, packed, rounded to the public grid, plus
  its share of discrete Gaussian noise (:func:`party_reply`);
- a :class:`NewtonNetwork` broadcasts ``w_t`` and returns the secure sum of
  the replies (:class:`InProcessNewtonNetwork` here; the Flower SecAgg+
  network is in :mod:`dperm.multiparty.flower.app`);
- :func:`private_newton`, the coordinator, turns each sum into a damped
  Newton step (:func:`newton_update`): post-processing of the sums only.

The privacy arithmetic and its proof are in :mod:`dperm.privacy.newton`.
"""

from __future__ import annotations

import math
import time
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from dperm.mechanisms.noise import grid_vector, round_to_grid, sample_discrete_gaussian_vector, to_grid
from dperm.multiparty.integrity import check_sum, newton_party_bound, newton_sum_bound, refuse_reply
from dperm.multiparty.newton_privacy import check_newton_calibration
from dperm.multiparty.protocol import InProcessParties, PartyNetwork, ShardOwner
from dperm.multiparty.secure_sum import check_contribution, summarise_reports
from dperm.privacy.newton import (
    NewtonCalibration,
    collusion_epsilon,
    party_sigma_squared_fraction,
    view_guarantee,
)
from dperm.solvers import loss_sums

__all__ = [
    "InProcessNewtonNetwork", "NewtonNetwork", "NewtonParty", "newton_guarantee", "newton_summary",
    "newton_update", "pack", "party_reply", "private_newton", "unpack",
]


# -- packing -----------------------------------------------------------------------------------------


def _vech_weights(n_features: int):
    rows, cols = np.triu_indices(n_features)
    return rows, cols, np.where(rows == cols, 1.0, math.sqrt(2.0))


def pack(gradient_sum, hessian_sum, calibration: NewtonCalibration) -> np.ndarray:
    """``a = (s_g G, s_H vech(H))`` with off-diagonal entries times ``sqrt 2`` (L2 norm = Frobenius norm)."""
    rows, cols, weights = _vech_weights(calibration.n_features)
    return np.concatenate([calibration.gradient_scale * np.asarray(gradient_sum, dtype=float),
                           calibration.hessian_scale * weights * np.asarray(hessian_sum, dtype=float)[rows, cols]])


def unpack(total, calibration: NewtonCalibration):
    """Invert :func:`pack` on a (noisy) sum: the gradient sum and a symmetric Hessian sum."""
    d = calibration.n_features
    total = np.asarray(total, dtype=float)
    rows, cols, weights = _vech_weights(d)
    gradient = total[:d] / calibration.gradient_scale
    hessian = np.zeros((d, d))
    hessian[rows, cols] = total[d:] / (calibration.hessian_scale * weights)
    hessian[cols, rows] = hessian[rows, cols]
    return gradient, hessian


# -- the party ---------------------------------------------------------------------------------------


def party_reply(X, y, loss, calibration: NewtonCalibration, coef, rng, *, party_id="party") -> np.ndarray:
    """One party's answer at ``w_t``: ``g (round(a_k / g) + Z_k)``, clipped to the secure sum's range.

    ``a_k`` packs the party's gradient and Hessian sums (:func:`pack`);
    ``Z_k`` holds ``D`` exact discrete Gaussians of variance parameter
    ``party_sigma_squared`` (CKS 2020, Alg. 3); rows must already have norm
    ``<= data_norm``. The clip to ``[-C, C]`` acts only on the event the
    calibration's ``range_probability`` bounds (:mod:`dperm.privacy.newton`, point 5).
    Before anything is sent the party refuses (MalformedReplyError, named
    ``party_id``) packed sums beyond their public bound or a reply that is not
    finite or outside ``[-C, C]`` (:func:`~dperm.multiparty.integrity.refuse_reply`).
    """
    coef = np.asarray(coef, dtype=float)
    _, gradient, hessian = loss_sums(loss, X, y, coef, with_hessian=True)
    # the party's own checks (dperm.multiparty.integrity): a broken party sends nothing
    packed = refuse_reply(party_id, pack(gradient, hessian, calibration), what="packed sums",
                          norm_bound=newton_party_bound(calibration, len(X)))
    centres = to_grid(packed, calibration.grid_step)
    noise = sample_discrete_gaussian_vector(calibration.dimension, party_sigma_squared_fraction(calibration), rng)
    reply = refuse_reply(party_id, grid_vector([c + z for c, z in zip(centres, noise)], calibration.grid_step),
                         what="reply")
    reply = np.clip(reply, -calibration.clipping_range, calibration.clipping_range)
    return refuse_reply(party_id, reply, what="reply", range_bound=calibration.clipping_range)


class NewtonParty(ShardOwner):
    """One data owner of the Newton protocol.

    Parameters
    ----------
    X, y : arrays
        The shard; labels in {-1, +1}. Rows with norm above ``data_norm`` are
        scaled onto it (a per-record step; the party warns in its own log).
    loss : dperm.losses.MarginLoss
    data_norm : float
    party_id : hashable
    random_state : None, int or Generator
        Source of the noise (``None``: OS entropy).
    max_epsilon, max_delta, max_rounds :
        The party's own floor (:class:`~dperm.privacy.psgd.PartyFloor`).
    """

    def setup(self, calibration: NewtonCalibration) -> None:
        """Check the announced calibration against the party's own recomputation and floor."""
        if self._calibration is not None:
            raise RuntimeError(f"party {self.party_id!r} is already set up for a run.")
        self._calibration = check_newton_calibration(
            calibration, self.floor, loss=self.loss, data_norm=self.data_norm, n_samples=self.n_samples,
            n_features=self.n_features, party_id=self.party_id)

    def reply(self, coef) -> np.ndarray:
        """The noisy packed sums at ``coef``; at most the agreed ``n_rounds`` answers."""
        if self._calibration is None:
            raise RuntimeError(f"party {self.party_id!r} got a request before its set-up.")
        if self.rounds_answered >= self._calibration.n_rounds:
            raise RuntimeError(f"party {self.party_id!r} has answered all {self._calibration.n_rounds} agreed "
                               "rounds; a further answer is not covered by the calibration.")
        coef = check_contribution(self.party_id, coef, self.n_features)
        self.rounds_answered += 1
        return party_reply(self._X, self._y, self.loss, self._calibration, coef, self._rng,
                           party_id=self.party_id)

    def __repr__(self) -> str:
        return f"NewtonParty(party_id={self.party_id!r}, n_samples={self.n_samples}, n_features={self.n_features})"


# -- the network -------------------------------------------------------------------------------------


class NewtonNetwork(PartyNetwork):
    """The Newton protocol's channel: broadcast ``w_t``, get the secure sum of the parties' replies."""

    @abstractmethod
    def round_sum(self, coef, round_index: int):
        """Return ``(sum of the parties' replies at coef, SecureSumReport)``."""


class InProcessNewtonNetwork(InProcessParties, NewtonNetwork):
    """Newton's parties and a :class:`~dperm.multiparty.secure_sum.SecureSum` in one process.

    The secure sum's encoding must be the calibration's (clipping range
    ``C``, ``Q``, ``M``): replies lie on its grid, so the fixed-point
    encoding is exact and the revealed sum is the sum of the replies.
    """

    _dimension = None

    def setup(self, calibration: NewtonCalibration) -> None:
        super().setup(calibration)
        self._dimension = calibration.dimension

    def round_sum(self, coef, round_index: int):
        replies = {party.party_id: party.reply(coef) for party in self._parties}
        return self._secure_sum.sum(replies, dimension=self._dimension, count_clipped=False)


# -- the coordinator ---------------------------------------------------------------------------------


def curvature_floor(calibration: NewtonCalibration) -> float:
    """``kappa = 2 sqrt(d) sigma_H / N``: about the spectral norm of the summed Hessian noise, over ``N``.

    A symmetric ``d x d`` matrix of independent noise with std ``sigma``
    has spectral norm about ``2 sigma sqrt(d)``; eigenvalues of the noisy
    Hessian below ``kappa`` are not told apart from noise and are raised to
    it, so a noise-made flat direction cannot make a huge step. Public.
    """
    return 2.0 * math.sqrt(calibration.n_features) * calibration.hessian_noise_std / calibration.n_samples


def newton_update(coef, gradient_sum, hessian_sum, calibration: NewtonCalibration) -> np.ndarray:
    """One damped Newton step from noisy sums (post-processing of the round's secure sum).

    ``g = G / N + lambda w``; ``H = V max(Lambda, kappa) V^T / N``-style
    eigenvalue floor (:func:`curvature_floor`) plus ``lambda I``; the step
    ``H^{-1} g`` is damped by ``1 / (1 + ||g||_{H^{-1}})`` (Nesterov 2004,
    Sec. 4.1.5, the damped Newton method), and the result is projected onto
    the ball ``||w|| <= L R / lambda``, which holds the minimiser of ``J``
    (``lambda w* = -(1/N) sum phi' y x``).
    """
    n = calibration.n_samples
    gradient = gradient_sum / n + calibration.alpha * coef
    eigenvalues, vectors = np.linalg.eigh(hessian_sum / n)
    eigenvalues = np.maximum(eigenvalues, curvature_floor(calibration)) + calibration.alpha
    rotated = vectors.T @ gradient
    step = vectors @ (rotated / eigenvalues)
    decrement = math.sqrt(float(rotated @ (rotated / eigenvalues)))
    coef = coef - step / (1.0 + decrement)
    radius = calibration.lipschitz * calibration.data_norm / calibration.alpha
    norm = float(np.linalg.norm(coef))
    return coef * (radius / norm) if norm > radius else coef


@dataclass
class NewtonResult:
    """What the coordinator computed: the model, the record's inputs and timings (public)."""

    coef: np.ndarray
    calibration: NewtonCalibration
    reports: list
    round_seconds: list
    n_samples_by_party: tuple


def private_newton(network: NewtonNetwork, calibration: NewtonCalibration, *, completed=(),
                   on_round=None) -> NewtonResult:
    """The coordinator: ``T`` rounds of secure sums, one damped Newton step each, from ``w_0 = 0``.

    Parameters
    ----------
    network : NewtonNetwork
    calibration : NewtonCalibration
    completed : sequence of (coef, report, seconds), optional
        Rounds an earlier, crashed coordinator of the same run completed
        (``w_1 .. w_r`` with their reports; public values from its
        checkpoint, :mod:`dperm.multiparty.flower.checkpoint`): the run
        continues at round ``r + 1`` from ``w_r`` and asks nothing again.
    on_round : callable, optional
        ``on_round(round_index, total, coef, report, seconds)`` after each
        round this call completes (the checkpoint's writer): ``total`` is the
        round's noisy secure sum and ``coef`` the iterate computed from it.

    Returns
    -------
    NewtonResult
        ``coef`` is ``w_T``, a function of the ``T`` sums and public constants.
    """
    if network.n_features != calibration.n_features:
        raise ValueError(f"the network's parties have d={network.n_features}; the calibration is for "
                         f"d={calibration.n_features}.")
    sizes = network.n_samples_by_party
    if (sum(sizes), len(sizes), max(sizes)) != (calibration.n_samples, calibration.n_parties,
                                                calibration.max_party_samples):
        raise ValueError(f"the network's party sizes {sizes} do not match the calibration "
                         f"(N={calibration.n_samples}, K={calibration.n_parties}, "
                         f"max N_k={calibration.max_party_samples}).")
    if len(completed) > calibration.n_rounds:
        raise ValueError(f"{len(completed)} completed rounds given; the run has {calibration.n_rounds}.")
    network.setup(calibration)
    coef = np.zeros(calibration.n_features)
    sum_bound = newton_sum_bound(calibration)  # public: what honest replies can sum to
    reports, seconds = [], []
    for coef, report, round_seconds in completed:  # a resumed run: what the earlier coordinator computed
        coef = np.asarray(coef, dtype=float)
        reports.append(report)
        seconds.append(float(round_seconds))
    for round_index in range(len(completed), calibration.n_rounds):
        started = time.perf_counter()
        total, report = network.round_sum(coef, round_index)
        check_sum(total, report, norm_bound=sum_bound, round_index=round_index, protocol="Newton")
        # the replies are on the public grid, so the sum is too: undo the engine's float decoding error
        gradient_sum, hessian_sum = unpack(round_to_grid(total, calibration.grid_step), calibration)
        coef = newton_update(coef, gradient_sum, hessian_sum, calibration)
        reports.append(report)
        seconds.append(time.perf_counter() - started)
        if on_round is not None:
            on_round(round_index, total, coef, report, seconds[-1])
    return NewtonResult(coef=coef, calibration=calibration, reports=reports, round_seconds=seconds,
                        n_samples_by_party=tuple(sizes))


def newton_summary(result: NewtonResult):
    """The secure-sum summary of the rounds (engine, encoding; nothing about clipping is revealed)."""
    return summarise_reports(result.reports)


def newton_guarantee(calibration: NewtonCalibration) -> dict:
    """Headline numbers of the record: the view's ``(epsilon, delta)`` and the ``K - 1`` collusion epsilon."""
    epsilon, delta = view_guarantee(calibration)
    return {"epsilon": epsilon, "delta": delta,
            "collusion_epsilon": collusion_epsilon(calibration, calibration.n_parties - 1)}
