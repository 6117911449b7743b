"""The public collusion threshold ``t`` of multiparty training, as pure functions.

Multiparty training splits a noise over the ``K`` parties: each adds a share
and the secure sum reveals only the total. A coordinator that colludes with
``c`` parties learns their shares too (they are the colluders' own draws) and
subtracts them: what protects an honest party's records is then the noise of
the ``K - c`` honest parties alone. The *collusion threshold* ``t`` is the
number of colluders the booked guarantee is proven against: every share is
sized so that the noise of any ``K - t`` parties alone meets the calibration.

Gaussian shares (PSGD's one-time ``eta^k``, the ``coordinator_dp`` scheme's
``rho_t^k``). If the total must be ``N(0, sigma^2 I)`` for the theorem, each
party draws ``N(0, sigma^2 / (K - t) I)``. Any ``K - t`` of them sum to
``N(0, sigma^2 I)`` (independent Gaussians add their variances), so the
theorem holds for the honest parties' sum whichever ``c <= t`` parties
collude; the colluders' known shares and replies are constants given their
own data, and subtracting them is post-processing. With ``c`` colluders the
honest sum has variance ``sigma^2 (K - c) / (K - t)``: for ``c < t`` more
than calibrated (a stronger guarantee), for ``c > t`` less (a weaker one,
computed by :func:`gaussian_epsilon_by_colluders`' callers with the same
accountant at the smaller noise multiplier ``z sqrt((K - c) / (K - t))``).

Discrete Gaussian shares (the Newton protocol). A sum of discrete Gaussians
is not a discrete Gaussian, so the split is not exact; Kairouz, Liu &
Steinke (2021, "The distributed discrete Gaussian mechanism", Thm 1 /
Prop. 14) bound the Renyi divergence of the sum of ``m`` independent
``N_Z(0, sigma^2)`` per coordinate at sensitivity ``Delta`` by
``min(alpha Delta^2 / (2 m sigma^2) + tau_m D, alpha/2 (Delta / (sqrt(m)
sigma) + sqrt(D) tau_m)^2)``, ``tau_m = 10 sum_{k=1}^{m-1} exp(-2 pi^2
sigma^2 k / (k + 1))``. dperm applies the theorem with ``m = K - t``: the
per-party ``sigma^2`` is the smallest whose ``K - t``-party bound, composed
over the rounds, meets the target (:mod:`dperm.privacy.newton`); the bound
for ``m = K - c`` gives the guarantee at ``c`` colluders (the theorem holds
for every ``m >= 1``; ``m = 1`` is one discrete Gaussian, ``tau_1 = 0``,
Canonne, Kamath & Steinke 2020).

Discrete Laplace shares (PSGD's per-round ``rho_t^k`` in 004's scheme) are
not split: each party's share is calibrated to the whole per-round
sensitivity (004 Proc. 3), so each reply is by itself ``round_epsilon``-DP
and the coordinator's view keeps its guarantee for every ``c <= K - 1``.

``t = 0`` is the split of 004 and of KLS 2021 (``1/K`` of the variance
each: no collusion tolerated); ``t = K - 1`` makes every share carry the
whole noise (local-DP strength of each reply with respect to the sum's
calibration). ``t = 1`` is dperm's default and a party's default floor.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from dperm.privacy.release import describe_guarantee

__all__ = [
    "DEFAULT_COLLUSION_THRESHOLD", "CollusionGuarantee", "check_collusion_threshold", "gaussian_share_std",
    "honest_parties", "scaled_noise_multiplier",
]

#: dperm's default ``t``: the coordinator may collude with one party.
DEFAULT_COLLUSION_THRESHOLD = 1


def check_collusion_threshold(collusion_threshold, n_parties: int, name: str = "collusion_threshold") -> int:
    """``t`` as an int in ``[0, K - 1]``; one clear line otherwise."""
    if isinstance(collusion_threshold, bool) or not isinstance(collusion_threshold, numbers.Integral):
        raise ValueError(f"{name} must be an integer in [0, K - 1]; got {collusion_threshold!r}.")
    value = int(collusion_threshold)
    if not 0 <= value <= n_parties - 1:
        raise ValueError(
            f"{name}={value} is outside [0, K - 1] = [0, {n_parties - 1}] for K={n_parties} parties: at least one "
            "party must be honest. Use 0 (no collusion tolerated) up to K - 1 (each share carries the whole noise)."
        )
    return value


def honest_parties(n_parties: int, collusion_threshold: int) -> int:
    """``K - t``: the parties whose noise alone must meet the calibration."""
    return int(n_parties) - int(collusion_threshold)


def gaussian_share_std(total_std: float, n_parties: int, collusion_threshold: int) -> float:
    """One party's Gaussian std ``sigma / sqrt(K - t)`` so that any ``K - t`` shares sum to ``N(0, sigma^2)``.

    Computed as a quotient so that ``t = 0`` gives 004's ``sigma / sqrt(K)`` bit for bit.
    """
    return total_std / math.sqrt(honest_parties(n_parties, collusion_threshold))


def scaled_noise_multiplier(noise_multiplier: float, n_parties: int, collusion_threshold: int,
                            n_colluding: int) -> float:
    """The honest sum's noise multiplier with ``c`` colluders: ``z sqrt((K - c) / (K - t))``.

    ``z`` is the multiplier of the ``K - t`` honest shares the calibration
    is sized for; ``K - c`` shares of variance ``(z s)^2 / (K - t)`` each sum
    to variance ``(z s)^2 (K - c) / (K - t)``.
    """
    if not 0 <= n_colluding <= n_parties - 1:
        raise ValueError(f"n_colluding must be in [0, {n_parties - 1}]; got {n_colluding}.")
    return noise_multiplier * ((n_parties - n_colluding) / honest_parties(n_parties, collusion_threshold)) ** 0.5


@dataclass(frozen=True)
class CollusionGuarantee:
    """The collusion threshold of a run and the guarantee as a function of the colluders (one record field).

    Attributes
    ----------
    collusion_threshold : int
        ``t``: the booked guarantee holds when the coordinator sees the sums and
        knows the noise (and data) of up to ``t`` parties.
    threshold_epsilon, threshold_delta : float
        The guarantee proven at ``t`` colluders.
    epsilon_by_colluders : tuple of float
        ``epsilon`` (at ``threshold_delta``'s accounting) with ``c = 0, ..., K - 1``
        colluders; empty in a model file written before dperm recorded it.
    """

    collusion_threshold: int
    threshold_epsilon: float
    threshold_delta: float
    epsilon_by_colluders: tuple = ()

    def summary_line(self) -> str:
        """One line for a record's summary."""
        if not self.epsilon_by_colluders and self.collusion_threshold == 0:
            return ("Collusion: none tolerated (t = 0, written before dperm recorded a collusion threshold): "
                    "the guarantee assumes the coordinator colludes with no party.")
        table = ", ".join(f"c={c}: {epsilon:.4g}" for c, epsilon in enumerate(self.epsilon_by_colluders))
        return (f"Collusion threshold t = {self.collusion_threshold}: "
                f"{describe_guarantee(self.threshold_epsilon, self.threshold_delta)} if the coordinator colludes "
                f"with up to {self.collusion_threshold} parties; epsilon by colluders c: {table}.")
