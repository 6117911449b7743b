"""Secure summation of the parties' real vectors (004 Thm 4.2's "cryptographically secure" sum).

004 Thm 4.2 needs the third party to learn, each round, only the *sum* of
the parties' noisy gradients. :class:`SecureSum` is that interface; an engine
implements it. :class:`MaskedSecureSum` is the in-process engine: a faithful
simulation of the masking layer of secure aggregation (Bonawitz et al.,
"Practical Secure Aggregation for Privacy-Preserving Machine Learning",
CCS 2017, Sec. 3-4), with the fixed-point encoding of Flower's SecAgg+
(``/work/shared/notes/flower-secagg.md``) so a Flower engine can take its
place with the same parameters:

1. **party side** -- check the vector (:func:`check_contribution`), clip every
   coordinate to ``[-clipping_range, clipping_range]``, map it onto the grid
   ``{0, ..., quantization_range}`` by stochastic rounding (:func:`quantize`),
   add the party's net pairwise mask modulo ``modulus_range``;
2. **aggregator** (:class:`MaskedAggregator`) -- receives only masked vectors,
   adds them modulo ``modulus_range``; the pairwise masks cancel in the sum;
3. the sum is decoded (:func:`dequantize_sum`) and revealed with a
   :class:`SecureSumReport`.

The DP noise is added by the parties *before* step 1 (paper note 14),
so clipping and rounding are post-processing of each party's noisy vector.

Accuracy (derived for this encoding). With ``C = clipping_range``,
``Q = quantization_range`` and grid step ``s = 2C / Q``, a party's value
``x`` in ``[-C, C]`` sits at ``u = (x + C) / s`` on the grid and is sent as
``q = floor(u)`` or ``floor(u) + 1``, with ``E[q] = u`` (stochastic rounding),
so ``|q - u| < 1``. The decoded sum is ``s * sum_k q_k - K C`` and differs
from ``sum_k clip(x_k)`` by ``s |sum_k (q_k - u_k)| < K s = 2 K C / Q`` in
every coordinate (:func:`quantization_error_bound`), with mean zero. The
integer sum is at most ``K Q``, so ``K Q < modulus_range`` keeps it exact.

Simplifications of the simulation, documented rather than hidden:

- the pairwise masks are drawn by an in-process dealer instead of being
  expanded from Diffie-Hellman agreed seeds; the aggregator object never
  sees them;
- no self-masks and no Shamir shares: a party that drops out after the setup
  aborts the round (:class:`~dperm.exceptions.DropoutError`) and
  nothing is revealed. SecAgg+'s recovery of the survivors' sum is engine
  work; calibrating the DP noise for the smallest survivor count is not
  implemented either;
- the count of clipped coordinates is summed in the clear, and only when
  the caller asks for it (``count_clipped=True``). Each party counts the
  coordinates of its own vector, as it enters the encoding (after the
  party's DP noise, before quantisation), so the total is a function of the
  vectors handed to the secure sum and of nothing else. Whether that is
  covered by the protocol's guarantee depends on the protocol (PSGD: see
  :func:`~dperm.privacy.psgd.clipping_count_is_covered`; local
  aggregation never asks for it). Uncounted, each party only warns in its
  own log (:func:`warn_party_clipping`).
"""

from __future__ import annotations

import math
import numbers
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from dperm.exceptions import DropoutError, MalformedReplyError, SecureSumClippingWarning
from dperm.multiparty.defaults import (  # Flower SecAgg+'s; import-free for dperm coordinate --help
    DEFAULT_CLIPPING_RANGE,
    DEFAULT_MODULUS_RANGE,
    DEFAULT_QUANTIZATION_RANGE,
)
from dperm.privacy.multiparty_record import SecureSumSummary  # re-exported: summarise_reports builds it
from dperm.validation import check_positive, check_random_state

__all__ = [
    "FixedPointSecureSum", "MAX_QUANTIZATION_RANGE", "MaskedAggregator", "MaskedSecureSum", "SecureSum",
    "SecureSumReport", "check_capacity", "check_contribution", "clipping_range_for", "fixed_point_report",
    "pairwise_masks", "quantization_error_bound", "quantization_step", "quantize",
    "secure_sum_engine", "summarise_reports", "warn_party_clipping",
]

#: uint64 arithmetic: two residues below 2^63 add without overflow.
MAX_MODULUS_RANGE = 2**63
#: Grid points must be exact in float64 (53-bit mantissa).
MAX_QUANTIZATION_RANGE = 2**52


@dataclass(frozen=True)
class SecureSumReport:
    """What one secure-sum round reveals besides the sum.

    Attributes
    ----------
    engine : str
        Name of the :class:`SecureSum` implementation.
    n_parties : int
        ``K``, the parties whose vectors are in the sum.
    dimension : int
    clipping_range, quantization_range, modulus_range : float, int, int
        The fixed-point encoding (0 / 0 for an engine without one).
    coordinates_clipped : int or None
        Coordinates, over all parties, that were outside ``[-C, C]``,
        counted on the vectors as handed to the secure sum; ``None`` when the
        caller did not ask for the count (nothing about clipping is revealed).
    error_bound : float
        A bound on ``|revealed - sum of clipped inputs|`` in every coordinate.
    """

    engine: str
    n_parties: int
    dimension: int
    clipping_range: float
    quantization_range: int
    modulus_range: int
    coordinates_clipped: int | None
    error_bound: float


def fixed_point_report(engine, n_parties: int, dimension: int, coordinates_clipped):
    """The :class:`SecureSumReport` of an engine with the fixed-point encoding above.

    ``engine`` has ``name``, ``clipping_range``, ``quantization_range``,
    ``modulus_range`` and ``error_bound(n_parties)``; ``coordinates_clipped``
    is an int, or None when clipping is not counted.
    """
    return SecureSumReport(
        engine=engine.name,
        n_parties=n_parties,
        dimension=dimension,
        clipping_range=engine.clipping_range,
        quantization_range=engine.quantization_range,
        modulus_range=engine.modulus_range,
        coordinates_clipped=coordinates_clipped,
        error_bound=engine.error_bound(n_parties),
    )


def summarise_reports(reports) -> SecureSumSummary:
    """Total a non-empty sequence of :class:`SecureSumReport` from one engine.

    The clipping totals are ``None`` unless every round counted clipping.
    """
    reports = list(reports)
    if not reports:
        raise ValueError("summarise_reports needs at least one SecureSumReport.")
    first = reports[0]
    counted = all(r.coordinates_clipped is not None for r in reports)
    return SecureSumSummary(
        engine=first.engine,
        n_sums=len(reports),
        clipping_range=first.clipping_range,
        quantization_range=first.quantization_range,
        modulus_range=first.modulus_range,
        coordinates_clipped=sum(r.coordinates_clipped for r in reports) if counted else None,
        sums_with_clipping=sum(1 for r in reports if r.coordinates_clipped) if counted else None,
        error_bound=max(r.error_bound for r in reports),
    )


def warn_party_clipping(party_id, n_clipped: int, clipping_range: float) -> None:
    """A party's own warning that the secure sum clipped ``n_clipped`` coordinates of its vector.

    For the party's log only: the count is not sent when the protocol does
    not reveal it (:class:`SecureSumReport`, ``coordinates_clipped=None``).
    """
    if n_clipped:
        warnings.warn(
            f"party {party_id!r}: the secure sum clipped {n_clipped} coordinate(s) of this party's "
            f"vector to [-{clipping_range:g}, {clipping_range:g}] (this party's own count; it is not "
            "revealed). The released sum is not the protocol's sum: raise the clipping range.",
            SecureSumClippingWarning,
            stacklevel=3,
        )


class SecureSum(ABC):
    """Interface: the caller learns the sum of the parties' vectors and nothing else.

    An implementation receives every party's vector on the parties' side and
    must reveal only ``(sum, SecureSumReport)``; the in-process engine is
    :class:`MaskedSecureSum`, a Flower SecAgg+ engine is later work. The
    vectors are expected to carry their DP noise already (paper note 14).
    """

    #: Engine name recorded in :class:`SecureSumReport`.
    name = "secure_sum"

    @abstractmethod
    def sum(self, vectors_by_party, dimension: int, *, count_clipped: bool = True):
        """Securely sum one vector per party.

        Parameters
        ----------
        vectors_by_party : mapping of party id -> array of shape (dimension,) or None
            Every party that took part in the round's setup. ``None`` marks a
            party that dropped out before sending its vector.
        dimension : int
            The agreed length of every vector.
        count_clipped : bool, default=True
            Reveal the total count of clipped coordinates in the report. With
            False the report's ``coordinates_clipped`` is None, nothing about
            clipping leaves the parties, and each party warns in its own log
            (:func:`warn_party_clipping`).

        Returns
        -------
        total : ndarray of shape (dimension,)
        report : SecureSumReport

        Raises
        ------
        MalformedReplyError
            A vector has the wrong shape or non-finite values.
        DropoutError
            Some party did not send its vector; nothing is revealed.
        """


def check_contribution(party_id, vector, dimension: int) -> np.ndarray:
    """Return a party's reply as a float vector, or reject it with a clear error.

    This is the party-side check before encoding: a reply of the wrong shape
    or with non-finite values cannot be put in fixed point, and the round is
    aborted (the message names the party and the problem, not the values).
    """
    try:
        array = np.asarray(vector, dtype=float)
    except (TypeError, ValueError):
        raise MalformedReplyError(
            f"party {party_id!r} replied with {type(vector).__name__}, not a numeric vector; "
            "the round is aborted and nothing is revealed."
        ) from None
    if array.shape != (dimension,):
        raise MalformedReplyError(
            f"party {party_id!r} replied with a vector of shape {array.shape}, expected "
            f"({dimension},); the round is aborted and nothing is revealed."
        )
    n_bad = int(np.count_nonzero(~np.isfinite(array)))
    if n_bad:
        raise MalformedReplyError(
            f"party {party_id!r} replied with {n_bad} non-finite value(s) (NaN or inf); "
            "the round is aborted and nothing is revealed."
        )
    return array


def quantization_step(clipping_range: float, quantization_range: int) -> float:
    """Grid step ``2 C / Q`` of the fixed-point encoding."""
    return 2.0 * clipping_range / quantization_range


def quantization_error_bound(n_parties: int, clipping_range: float, quantization_range: int) -> float:
    """``2 K C / Q``: per-coordinate bound on ``|decoded sum - sum of clipped inputs|``.

    Each party's stochastic rounding moves its value by less than one grid
    step ``2C/Q``; ``K`` parties, less than ``K`` steps (module docstring).
    """
    return n_parties * quantization_step(clipping_range, quantization_range)


def quantize(vector, clipping_range: float, quantization_range: int, rng) -> tuple[np.ndarray, int]:
    """Clip to ``[-C, C]`` and stochastically round onto ``{0, ..., Q}`` (Flower's encoding).

    Returns
    -------
    encoded : ndarray of uint64, shape (d,)
    n_clipped : int
        Coordinates that were outside ``[-C, C]``.
    """
    vector = np.asarray(vector, dtype=float)
    n_clipped = int(np.count_nonzero(np.abs(vector) > clipping_range))
    clipped = np.clip(vector, -clipping_range, clipping_range)
    on_grid = (clipped + clipping_range) / quantization_step(clipping_range, quantization_range)
    lower = np.floor(on_grid)
    rounded = lower + (rng.random(vector.shape) < on_grid - lower)  # unbiased: E = on_grid
    return np.clip(rounded, 0, quantization_range).astype(np.uint64), n_clipped


def dequantize_sum(total, n_parties: int, clipping_range: float, quantization_range: int) -> np.ndarray:
    """Decode the integer sum of ``K`` encoded vectors: ``s * total - K C``."""
    step = quantization_step(clipping_range, quantization_range)
    return np.asarray(total, dtype=float) * step - n_parties * clipping_range


def pairwise_masks(party_ids, dimension: int, modulus_range: int, rng) -> dict:
    """Each party's net mask ``sum_{j > i} m_ij - sum_{j < i} m_ji`` mod ``M``.

    For every pair ``i < j`` one uniform vector ``m_ij`` in ``Z_M^d``: party
    ``i`` adds it, party ``j`` subtracts it, so the masks of all parties sum
    to zero mod ``M`` (Bonawitz et al. 2017, Sec. 3, pairwise masking). Any
    single masked vector is uniform on ``Z_M^d``, whatever the party's input.
    """
    party_ids = list(party_ids)
    modulus = np.uint64(modulus_range)
    first, second = np.triu_indices(len(party_ids), k=1)  # the pairs i < j, in combinations order
    shared = rng.integers(0, modulus_range, size=(first.size, dimension), dtype=np.uint64)
    negated = (modulus - shared) % modulus
    exact_sums = (len(party_ids) - 1) * (modulus_range - 1) < 2**64  # no uint64 overflow in one sum
    masks = {}
    for index, party_id in enumerate(party_ids):
        terms = np.concatenate([shared[first == index], negated[second == index]])
        if exact_sums:
            masks[party_id] = terms.sum(axis=0, dtype=np.uint64) % modulus
        else:
            net = np.zeros(dimension, dtype=np.uint64)
            for term in terms:
                net = (net + term) % modulus
            masks[party_id] = net
    return masks


class MaskedAggregator:
    """The server side of one round: it only ever holds masked vectors.

    Attributes
    ----------
    roster : tuple
        The parties that took part in the setup (their masks are entangled).
    received : dict
        Party id -> masked vector: the aggregator's whole view (its transcript).
    """

    def __init__(self, roster, dimension: int, modulus_range: int):
        self.roster = tuple(roster)
        self.dimension = dimension
        self.modulus_range = modulus_range
        self.received: dict = {}

    def receive(self, party_id, masked_vector) -> None:
        """Accept one party's masked vector (its public shape is checked here)."""
        if party_id not in self.roster:
            raise MalformedReplyError(f"party {party_id!r} is not in this round's roster {self.roster}.")
        if party_id in self.received:
            raise MalformedReplyError(f"party {party_id!r} sent two masked vectors in one round.")
        masked_vector = np.asarray(masked_vector)
        if masked_vector.shape != (self.dimension,) or masked_vector.dtype != np.uint64:
            raise MalformedReplyError(
                f"party {party_id!r} sent a masked vector of shape {masked_vector.shape} and dtype "
                f"{masked_vector.dtype}, expected ({self.dimension},) uint64."
            )
        self.received[party_id] = masked_vector

    def unmask_sum(self) -> np.ndarray:
        """The sum of the masked vectors mod ``M``, only when every party sent one.

        With a party missing, its pairwise masks are left in the others' sum;
        without SecAgg+'s share-based recovery the round is aborted.
        """
        missing = [party_id for party_id in self.roster if party_id not in self.received]
        if missing:
            raise DropoutError(
                f"{len(self.received)} of {len(self.roster)} parties sent their masked vector "
                f"(missing: {missing}); their pairwise masks do not cancel, so the round is "
                "aborted and nothing is revealed. Dropout recovery (SecAgg+ unmasking) is not "
                "part of the engine-free protocol."
            )
        modulus = np.uint64(self.modulus_range)
        total = np.zeros(self.dimension, dtype=np.uint64)
        for masked_vector in self.received.values():
            total = (total + masked_vector) % modulus
        return total


def _check_int_range(value, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}]; got {value!r}.")
    return int(value)


def check_capacity(n_parties: int, quantization_range: int, modulus_range: int, modulus_note: str = "") -> None:
    """``K Q < M``: the integer sum (and SecAgg+'s weight entry ``K Q``) must not wrap around."""
    if n_parties * quantization_range >= modulus_range:
        raise ValueError(
            f"{n_parties} parties * quantization_range={quantization_range} >= modulus_range="
            f"{modulus_range}: the integer sum would wrap around. Raise modulus_range{modulus_note} "
            "or lower quantization_range."
        )


class FixedPointSecureSum(SecureSum):
    """A :class:`SecureSum` with the fixed-point encoding above: ``clipping_range``, ``quantization_range``
    and ``modulus_range`` (``C``, ``Q``, ``M``), set by the engine."""

    #: Appended to the capacity error's "Raise modulus_range" (an engine's own limit on ``M``).
    modulus_note = ""

    def _round_parties(self, vectors_by_party) -> list:
        """The round's party ids, refused unless there are at least two and ``K Q < M``."""
        party_ids = list(vectors_by_party)
        if len(party_ids) < 2:
            raise ValueError(
                f"a secure sum needs at least 2 parties; got {len(party_ids)}: the sum of one "
                "vector is that vector."
            )
        check_capacity(len(party_ids), self.quantization_range, self.modulus_range, self.modulus_note)
        return party_ids

    def error_bound(self, n_parties: int) -> float:
        """Per-coordinate bound ``2 K C / Q`` on the encoding error of a sum."""
        return quantization_error_bound(n_parties, self.clipping_range, self.quantization_range)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(clipping_range={self.clipping_range!r}, "
            f"quantization_range={self.quantization_range!r}, modulus_range={self.modulus_range!r})"
        )


class MaskedSecureSum(FixedPointSecureSum):
    """In-process secure summation: fixed point, pairwise masks, abort on dropout.

    Parameters
    ----------
    clipping_range : float, default=8.0
        ``C``: each coordinate is clipped to ``[-C, C]`` before encoding.
        Clipped coordinates are counted in the report when the caller asks
        (``count_clipped``).
    quantization_range : int, default=2**22
        ``Q``: number of grid steps across ``[-C, C]``.
    modulus_range : int, default=2**32
        ``M``: masks and sums live in ``Z_M``; needs ``K Q < M``.
    random_state : None, int or numpy Generator, default=None
        Source of the masks and of the stochastic rounding. ``None`` (OS
        entropy) for real use; a seed for tests only.
    aggregator_factory : callable, default=MaskedAggregator
        ``factory(roster, dimension, modulus_range)`` builds each round's
        aggregator; pass a recording subclass to audit what it sees.
    """

    name = "masked_in_process"

    def __init__(
        self,
        clipping_range=DEFAULT_CLIPPING_RANGE,
        quantization_range=DEFAULT_QUANTIZATION_RANGE,
        modulus_range=DEFAULT_MODULUS_RANGE,
        random_state=None,
        aggregator_factory=MaskedAggregator,
    ):
        self.clipping_range = check_positive(
            clipping_range, "clipping_range", "Coordinates are clipped to [-clipping_range, clipping_range]."
        )
        self.quantization_range = _check_int_range(
            quantization_range, "quantization_range", 2, MAX_QUANTIZATION_RANGE
        )
        self.modulus_range = _check_int_range(modulus_range, "modulus_range", 2, MAX_MODULUS_RANGE)
        self.random_state = random_state
        self._rng = check_random_state(random_state)
        self.aggregator_factory = aggregator_factory

    def sum(self, vectors_by_party, dimension: int, *, count_clipped: bool = True):
        """Securely sum one vector per party; see :meth:`SecureSum.sum`."""
        party_ids = self._round_parties(vectors_by_party)
        n_parties = len(party_ids)
        masks = pairwise_masks(party_ids, dimension, self.modulus_range, self._rng)  # setup stage
        aggregator = self.aggregator_factory(party_ids, dimension, self.modulus_range)
        modulus = np.uint64(self.modulus_range)
        coordinates_clipped = 0
        for party_id in party_ids:  # each party's side, in turn
            vector = vectors_by_party[party_id]
            if vector is None:
                continue  # dropped after the setup: its masks stay in the sum
            vector = check_contribution(party_id, vector, dimension)
            encoded, n_clipped = quantize(vector, self.clipping_range, self.quantization_range, self._rng)
            if count_clipped:
                coordinates_clipped += n_clipped
            else:
                warn_party_clipping(party_id, n_clipped, self.clipping_range)
            aggregator.receive(party_id, (encoded + masks[party_id]) % modulus)
        total = aggregator.unmask_sum()
        report = fixed_point_report(self, n_parties, dimension,
                                    coordinates_clipped if count_clipped else None)
        return dequantize_sum(total, n_parties, self.clipping_range, self.quantization_range), report


def clipping_range_for(value_bound: float) -> float:
    """The smallest power of two ``>= value_bound``: a clipping range for a public bound.

    Powers of two keep the grid step ``2C/Q`` a power of two as well. The
    protocols compute ``value_bound`` from public constants (data norm,
    sizes, noise tails) so that clipping is rare; it is still counted.
    """
    value_bound = check_positive(value_bound, "value_bound")
    return float(2.0 ** math.ceil(math.log2(value_bound)))


#: Secure-sum engines by name. Flower's lives in the optional sub-package
#: :mod:`dperm.multiparty.flower` (extra ``dperm[multiparty]``): it is named by its
#: import path and loaded only when asked for, so the protocol core never depends on it.
SECURE_SUM_ENGINES = {
    "masked": "dperm.multiparty.secure_sum:MaskedSecureSum",
    "flower": "dperm.multiparty.flower.engine:FlowerSecureSum",
}


def secure_sum_engine(name: str):
    """The secure-sum class called ``name`` in :data:`SECURE_SUM_ENGINES`."""
    import importlib

    if name not in SECURE_SUM_ENGINES:
        raise ValueError(f"secure_sum must be one of {tuple(SECURE_SUM_ENGINES)} or an engine; got {name!r}.")
    module, _, attribute = SECURE_SUM_ENGINES[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
