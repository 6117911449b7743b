"""Audit of the collusion threshold: the coordinator plus ``c`` colluding parties against one honest party.

A multiparty record states a :class:`~dperm.privacy.collusion.CollusionGuarantee`:
the protocol's shares are sized so that the noise of any ``K - t`` parties
meets the calibration, and the record gives ``epsilon`` for every number of
colluders ``c = 0 .. K - 1``. :func:`audit_collusion` attacks that claim with
the strongest adversary the threshold speaks of:

- it **is the coordinator**: it sees every round's broadcast iterate ``w_r``
  and the secure sum ``S_r`` (a tap on the real in-process network, which
  records what the coordinator sends and receives and nothing else);
- it **controls ``c`` parties** (parties ``1 .. c``): they run the real
  party code and hand over every reply they send, that is their data's
  statistic *plus their noise share*; the adversary subtracts those replies
  from ``S_r``, leaving the honest parties' noisy sum ``h_r``;
- it **knows every record** of the two neighbouring datasets: they differ in
  the last row of honest party 0 (a label flip at a point on the norm bound
  ``R``, which moves that party's gradient by the full ``2 L R`` while
  ``|w_r|`` stays in the loss's linear region). So under either hypothesis it
  can compute what the honest parties' exact statistics at ``w_r`` would be,
  ``e_r`` (``D``) and ``e'_r`` (``D'``).

Its statistic is the log-likelihood ratio of Gaussian noise of equal variance
in every coordinate and round, up to a positive factor:
``sum_r <h_r - (e_r + e'_r) / 2, e'_r - e_r>``. For the Gaussian shares of
``coordinator_dp`` PSGD it is the Neyman-Pearson test of the adaptive
composition (the noise is independent of ``w_r`` given the past); for
Newton's discrete Gaussian shares on a fine grid it is that test up to the
grid. The runs go to :func:`dperm.audit.audit`, which turns the held-out
error rates into a lower bound on ``epsilon`` at the record's ``delta`` for
``c`` colluders (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021).

Power is checked with copies that are under-noised *only in how the shares
are sized*: ``share_threshold=0`` sizes each share for ``t = 0`` (the split
of 004 and of Kairouz, Liu & Steinke 2021, ``1/K`` of the variance each)
while the claim is the honest ``t``'s record; ``noise_factor < 1`` calibrates
for ``epsilon / noise_factor`` (:mod:`dperm.audit._noise`). Both run the
library's own calibration functions and party code, unchanged.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from dperm.audit._core import audit
from dperm.audit._noise import under_noised_epsilon, under_noised_label

__all__ = ["audit_collusion", "collusion_claim", "collusion_shards"]

#: The protocols whose noise is split over the parties (their records' epsilon depends on ``c``).
_COLLUSION_KINDS = ("newton", "psgd_coordinator_dp")
#: Rows per party; the canary is the last row of party 0.
_ROWS_PER_PARTY = 10
#: Newton's share of the packed sensitivity given to the gradient. The label-flip canary moves only
#: the gradient, so the audit gives it almost all of the budget (the claim holds for every share).
_AUDIT_GRADIENT_SHARE = 0.99
#: The Huber loss's width: with alpha = 5 the iterates keep |w| <= L R / alpha = 0.2 < 1 - h, in the
#: linear region where a label flip at |x| = R moves the gradient sum by exactly 2 L R.
_HUBER_WIDTH = 0.5
_ALPHA = 5.0


def collusion_shards(n_parties: int, flip_canary: bool):
    """``K`` shards of 10 one-feature rows, labels in {-1, +1}; the canary ends party 0's shard.

    The canary is ``x = R = 1`` with label +1 in ``D`` and -1 in ``D'`` (``flip_canary``).
    """
    rng = np.random.default_rng(0)
    shards = []
    for _ in range(n_parties):
        X = rng.uniform(-1, 1, size=(_ROWS_PER_PARTY, 1))
        shards.append([X, np.where(X[:, 0] > 0, 1.0, -1.0)])
    shards[0][0][-1] = [1.0]
    shards[0][1][-1] = -1.0 if flip_canary else 1.0
    return [tuple(shard) for shard in shards]


def _loss():
    from dperm.losses import get_loss

    return get_loss("huber", h=_HUBER_WIDTH)


def _calibrate(kind, epsilon, delta, n_parties, n_rounds, collusion_threshold):
    """The library's own calibration of ``kind`` for the audit's shards (public inputs only)."""
    sizes = [_ROWS_PER_PARTY] * n_parties
    if kind == "newton":
        from dperm.multiparty.newton_privacy import calibrate_newton

        return calibrate_newton(epsilon=epsilon, delta=delta, alpha=_ALPHA, n_rounds=n_rounds,
                                n_samples_by_party=sizes, n_features=1, loss=_loss(), data_norm=1.0,
                                gradient_share=_AUDIT_GRADIENT_SHARE, collusion_threshold=collusion_threshold)
    from dperm.multiparty.privacy import calibrate_psgd

    return calibrate_psgd(epsilon=epsilon, delta=delta, alpha=_ALPHA, n_samples=sum(sizes), n_parties=n_parties,
                          n_features=1, n_rounds=n_rounds, loss=_loss(), data_norm=1.0, coordinator_dp=True,
                          collusion_threshold=collusion_threshold)


def _guarantee(kind, calibration):
    """The record's :class:`~dperm.privacy.collusion.CollusionGuarantee` for ``calibration``."""
    if kind == "newton":
        from dperm.privacy.newton import collusion_guarantee

        return collusion_guarantee(calibration)
    from dperm.privacy.psgd import psgd_collusion_guarantee, psgd_coordinator_view

    return psgd_collusion_guarantee(calibration, psgd_coordinator_view(calibration))


def collusion_claim(kind, calibration, n_colluding: int) -> tuple[float, float]:
    """``(epsilon, delta)`` the record states for ``n_colluding`` colluders.

    ``epsilon`` is the record's ``epsilon_by_colluders[c]``. Newton's is
    accounted at ``rdp_delta``; its secure-sum range event adds
    ``(1 + e^epsilon_c) p`` (:mod:`dperm.privacy.newton`, point 5): the
    record's ``delta`` at ``c = t`` and slightly more for ``c > t`` (never
    less than the record's ``delta``).
    ``coordinator_dp`` PSGD: the accountant's ``delta`` for every ``c``.
    """
    guarantee = _guarantee(kind, calibration)
    epsilon = float(guarantee.epsilon_by_colluders[n_colluding])
    delta = float(guarantee.threshold_delta)
    if kind == "newton":  # never below the record's delta (at c = t the two agree up to rounding)
        delta = max(delta, calibration.rdp_delta + (1.0 + math.exp(epsilon)) * calibration.range_probability)
    return epsilon, delta


# -- the real protocol, with the adversary's taps --------------------------------------------------------


def _recording(base, method, entry):
    """``base`` whose instances keep ``entry(args, result)`` of each call of ``method`` in ``kept``.

    A colluding party keeps every reply it sends (it hands them over); a tapped network keeps each
    round's broadcast iterate and revealed sum (the coordinator's view).
    """

    def __init__(self, *args, **kwargs):
        base.__init__(self, *args, **kwargs)
        self.kept = []

    def recorded(self, *args):
        result = getattr(base, method)(self, *args)
        self.kept.append(entry(args, result))
        return result

    return type(f"Recording{base.__name__}", (base,), {"__init__": __init__, method: recorded})


def _protocol_view(kind, calibration, shards, n_colluding, rng):
    """One real run; ``(view, colluders' replies by round, scale of a reply in the sum)``."""
    from dperm.multiparty.secure_sum import MaskedSecureSum

    party_rngs = rng.spawn(len(shards) + 1)
    if kind == "newton":
        from dperm.multiparty.newton import InProcessNewtonNetwork, NewtonParty, private_newton
        from dperm.privacy.newton import view_guarantee
        from dperm.privacy.psgd import PartyFloor

        epsilon, delta = view_guarantee(calibration)
        floor = PartyFloor(max(calibration.epsilon, epsilon), max(calibration.delta, delta), calibration.n_rounds,
                           calibration.collusion_threshold)
        party_class, reply, network_class, method = NewtonParty, "reply", InProcessNewtonNetwork, "round_sum"
        secure_sum = MaskedSecureSum(calibration.clipping_range, calibration.quantization_range,
                                     calibration.modulus_range, random_state=party_rngs[-1])
        scale = 1.0
    else:
        from dperm.multiparty.protocol import InProcessNetwork, Party, psgd, psgd_clipping_range
        from dperm.privacy.psgd import accepting_floor

        floor = accepting_floor(calibration)
        party_class, reply, network_class, method = Party, "noisy_gradient", InProcessNetwork, "gradient_sum"
        secure_sum = MaskedSecureSum(clipping_range=psgd_clipping_range(calibration, [len(X) for X, _ in shards]),
                                     random_state=party_rngs[-1])
        scale = 1.0 / calibration.n_samples
    colluding_class = _recording(party_class, reply, lambda args, sent: np.array(sent, dtype=float))
    parties = [
        (colluding_class if 1 <= index <= n_colluding else party_class)(
            X, y, loss=_loss(), data_norm=1.0, party_id=index, random_state=party_rng,
            max_epsilon=floor.max_epsilon, max_delta=floor.max_delta, max_rounds=floor.max_rounds,
            min_collusion_threshold=floor.min_collusion_threshold)
        for index, ((X, y), party_rng) in enumerate(zip(shards, party_rngs))
    ]
    network = _recording(network_class, method, lambda args, result: (
        np.array(args[0], dtype=float), np.array(result[0], dtype=float)))(parties, secure_sum)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "newton":
            private_newton(network, calibration)
        else:
            psgd(network, calibration)
    sent = [np.sum([party.kept[r] for party in parties[1:1 + n_colluding]], axis=0) if n_colluding else 0.0
            for r in range(len(network.kept))]
    return network.kept, sent, scale


def _exact_statistic(kind, calibration, X, y, coef):
    """What an honest party's reply would be without its noise (the adversary knows ``X, y`` and ``w``).

    Newton: the packed gradient and Hessian sums on the public grid (the reply's centre);
    PSGD: the gradient sum ``sum_i phi'(y_i w.x_i) y_i x_i``.
    """
    from dperm.solvers import loss_sums

    _, gradient, hessian = loss_sums(_loss(), X, y, coef, with_hessian=kind == "newton")
    if kind == "newton":
        from dperm.mechanisms.noise import round_to_grid
        from dperm.multiparty.newton import pack

        return round_to_grid(pack(gradient, hessian, calibration), calibration.grid_step)
    return gradient


def _likelihood_ratio_statistic(kind, calibration, view, sent, scale, shards_d, shards_d_prime, n_colluding):
    """``sum_r <h_r - (e_r + e'_r) / 2, e'_r - e_r>``: large when the run looks like ``D'``."""
    honest = [0, *range(n_colluding + 1, len(shards_d))]
    statistic = 0.0
    for (coef, total), colluders in zip(view, sent):
        residual = total - scale * colluders  # the honest parties' noisy sum
        e_d = scale * sum(_exact_statistic(kind, calibration, *shards_d[k], coef) for k in honest)
        e_d_prime = scale * sum(_exact_statistic(kind, calibration, *shards_d_prime[k], coef) for k in honest)
        statistic += float((residual - 0.5 * (e_d + e_d_prime)) @ (e_d_prime - e_d))
    return statistic


def _check_count(value, name, low, high, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}] ({what}); got {value!r}.")
    return int(value)


def audit_collusion(kind, epsilon, delta=0.04, *, n_parties=2, collusion_threshold=1, n_colluding=None,
                    share_threshold=None, noise_factor=1.0, n_rounds=5, n_runs=2000, confidence=0.95,
                    random_state=None):
    """Audit a multiparty record's guarantee against the coordinator colluding with ``c`` parties.

    Parameters
    ----------
    kind : {"newton", "psgd_coordinator_dp"}
        :class:`dperm.multiparty.NewtonClassifier`'s protocol (discrete Gaussian
        shares, Kairouz, Liu & Steinke 2021 Thm 1 with ``K - t`` parties) or
        :class:`dperm.PSGDClassifier` with ``coordinator_dp=True`` (Gaussian shares
        of std ``sigma / sqrt(K - t)``, accounted by dp-accounting's PLD).
        004's PSGD is not here: its per-round noise is not split, so its
        record's epsilon is the same for every ``c``.
    epsilon, delta : float
        The target the honest run is calibrated for. The audit's data have 20
        rows per two parties (``10 K`` in all), so ``delta < 1 / (10 K)``;
        the default 0.04 keeps a large ``delta``, which an audit of a Gaussian
        mechanism needs to see its tails within a few thousand runs.
    n_parties : int >= 2, default=2
        ``K``.
    collusion_threshold : int in [0, K - 1], default=1
        ``t`` of the honest run: its record is the claim.
    n_colluding : int in [0, K - 1], optional
        ``c``, the parties the adversary controls (parties ``1 .. c``; party 0
        holds the canary). Defaults to ``t``. The claim is the record's
        ``epsilon_by_colluders[c]`` at its ``delta`` (:func:`collusion_claim`).
    share_threshold : int in [0, K - 1], optional
        The ``t`` the run's shares are actually sized for. Defaults to
        ``collusion_threshold`` (the honest mechanism); ``0`` with
        ``collusion_threshold=1`` is the copy that claims ``t = 1`` but splits
        the noise over all ``K`` parties.
    noise_factor : float > 0, default=1
        ``< 1``: the run is calibrated for ``epsilon / noise_factor``
        (:func:`~dperm.audit._noise.under_noised_epsilon`).
    n_rounds : int, default=5
    n_runs : int, default=2000
        Runs per dataset.
    confidence : float, default=0.95
    random_state : None, int or Generator

    Returns
    -------
    AuditResult
        ``claimed_epsilon`` and ``claimed_delta`` are the honest record's at ``c``.
    """
    if kind not in _COLLUSION_KINDS:
        raise ValueError(f"kind must be one of {list(_COLLUSION_KINDS)}; got {kind!r}. 004's PSGD "
                         "('psgd') does not split its per-round noise: its epsilon is the same for every c.")
    n_parties = _check_count(n_parties, "n_parties", 2, 64, "the number of parties K")
    collusion_threshold = _check_count(collusion_threshold, "collusion_threshold", 0, n_parties - 1,
                                       "the honest run's t")
    n_colluding = collusion_threshold if n_colluding is None else _check_count(
        n_colluding, "n_colluding", 0, n_parties - 1, "the colluding parties c; one party must stay honest")
    share_threshold = collusion_threshold if share_threshold is None else _check_count(
        share_threshold, "share_threshold", 0, n_parties - 1, "the t the shares are sized for")
    honest = _calibrate(kind, epsilon, delta, n_parties, n_rounds, collusion_threshold)
    claimed_epsilon, claimed_delta = collusion_claim(kind, honest, n_colluding)
    run_calibration = _calibrate(kind, under_noised_epsilon(epsilon, noise_factor), delta, n_parties, n_rounds,
                                 share_threshold)
    shards_d, shards_d_prime = collusion_shards(n_parties, False), collusion_shards(n_parties, True)

    def runner(shards):
        def run(rng):
            view, sent, scale = _protocol_view(kind, run_calibration, shards, n_colluding, rng)
            return _likelihood_ratio_statistic(kind, run_calibration, view, sent, scale, shards_d, shards_d_prime,
                                               n_colluding)
        return run

    label = (f"collusion {kind}, K={n_parties}, record t={collusion_threshold}, c={n_colluding} colluding"
             + ("" if share_threshold == collusion_threshold else f", shares sized for t={share_threshold}"))
    return audit(runner(shards_d), runner(shards_d_prime), None, claimed_epsilon, claimed_delta, n_runs=n_runs,
                 confidence=confidence, random_state=random_state, label=under_noised_label(label, noise_factor))
