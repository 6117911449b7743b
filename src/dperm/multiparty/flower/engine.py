"""Secure summation on Flower's SecAgg+ (optional extra ``dperm[multiparty]``).

004 Thm 4.2 needs the coordinator to learn, each round, only the sum of the
parties' noisy gradients. :class:`FlowerSecureSum` implements the
:class:`~dperm.multiparty.secure_sum.SecureSum` interface with Flower's own
SecAgg+ code: the server side is ``flwr.server.workflow.SecAggPlusWorkflow``
and every party runs ``flwr.client.mod.secaggplus_mod`` on its ClientApp
(Bell et al., "Secure Single-Server Aggregation with (Poly)Logarithmic
Overhead", CCS 2020, on top of Bonawitz et al., CCS 2017). In process the
messages travel over :class:`~dperm.multiparty.flower.grid.InProcessGrid`
(a Flower ``Grid`` that calls the ClientApps directly, deep-copying every
message); :mod:`dperm.multiparty.flower.app` runs the same two sides over a
real network (``dperm party serve`` / ``dperm coordinate``).

What one round does (shared note ``flower-secagg.md``):

1. **party side** -- the reply, which already carries its DP noise (paper
   note 14), is checked (:func:`~dperm.multiparty.secure_sum.check_contribution`),
   its coordinates outside ``[-C, C]`` are counted, and it is handed to
   ``secaggplus_mod``, which clips it to ``[-C, C]``, stochastically rounds it
   onto ``{0, ..., Q}`` and adds its self-mask and pairwise masks mod ``M``;
2. **server side** -- SecAgg+'s four stages (setup, share keys, collect masked
   vectors, unmask). Every party reports ``num_examples = 1`` and
   ``max_weight = 1``, so SecAgg+'s weighted mean is the plain mean and the
   sum is ``K x mean``;
3. **clipping count** -- when the caller asks for it (``count_clipped``),
   each party's count of clipped coordinates, computed on the vector it hands
   to the secure sum (after its DP noise, before quantisation), travels as
   one more coordinate *inside* the secure sum, placed exactly on the grid
   (:func:`encode_counts`), so the coordinator learns only the total
   (:class:`~dperm.multiparty.secure_sum.SecureSumReport`). Otherwise no
   count is sent and each party only warns in its own log. No metric is
   sent in the clear.

Accuracy: the same encoding as :class:`~dperm.multiparty.secure_sum.MaskedSecureSum`
(whose defaults are Flower's), so the revealed sum differs from the sum of
the clipped inputs by less than ``2 K C / Q`` in every coordinate
(:func:`~dperm.multiparty.secure_sum.quantization_error_bound`).

Dropout: a party missing at any stage aborts the round *before* the unmask
stage and raises :class:`~dperm.multiparty.errors.DropoutError`; nothing is
revealed. SecAgg+ could unmask the survivors' sum, but each party's one-time
noise ``eta^k`` has variance ``sigma^2 / K`` (004 Proc. 3), so that sum would
be under-noised; calibrating the noise for the smallest survivor count is not
implemented, and recovery is refused.

Trust model: semi-honest (honest-but-curious) coordinator that does not
collude with parties; no protection against a malicious server. Flower
expands mask seeds through a 32-bit seed of numpy's generator (open
upstream issue flwrlabs/flower#7522); dperm replaces that generator on both
sides (:func:`~dperm.multiparty.flower._adapter.mask_generator`). Flower's
stochastic rounding draws from numpy's global generator.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import warnings

import numpy as np

from dperm.exceptions import PartyUnavailableError
from dperm.multiparty.secure_sum import (
    DEFAULT_CLIPPING_RANGE,
    DEFAULT_MODULUS_RANGE,
    DEFAULT_QUANTIZATION_RANGE,
    FixedPointSecureSum,
    _check_int_range,
    check_capacity,
    check_contribution,
    fixed_point_report,
    quantization_step,
    warn_party_clipping,
)
from dperm.validation import check_positive

__all__ = [
    "FlowerSecureSum", "INSTALL_HINT", "OBJECT_PULL_INITIAL_BACKOFF", "POLL_SECONDS_ENV",
    "SUPPORTED_FLOWER", "check_capacity", "check_flower_encoding", "configure_flower_environment",
    "count_clipped", "decode_counts", "encode_counts", "flower_poll_seconds", "load_flower",
    "object_pull_waits", "party_payload",
]

#: The Flower releases dperm's adapter is written against (``_adapter.FLOWER_VERSION_RANGE``; ``pyproject.toml``).
SUPPORTED_FLOWER = ">=1.41,<1.43"
INSTALL_HINT = "pip install 'dperm[multiparty]'"
#: Flower's stochastic rounding casts to int32: the grid must fit.
MAX_FLOWER_QUANTIZATION_RANGE = 2**30
#: Flower documents ``modulus_range`` up to 2**32 (its masks are int64 draws below it).
MAX_FLOWER_MODULUS_RANGE = 2**32

_FLOWER_HOME = None
#: Environment variable overriding dperm's poll interval in its Flower processes
#: (the ServerApp's wait between pulls for replies, the SuperNode's wait between
#: pulls for messages); ``3`` restores Flower 1.41's own fixed waits.
POLL_SECONDS_ENV = "DPERM_FLOWER_POLL_SECONDS"


def flower_poll_seconds(default: float, environ=None) -> float:
    """Seconds between polls in dperm's Flower processes: ``DPERM_FLOWER_POLL_SECONDS`` or ``default``.

    Raises ValueError naming the variable unless its value is a number of
    seconds in [0.01, 60].
    """
    environ = os.environ if environ is None else environ
    raw = environ.get(POLL_SECONDS_ENV)
    if raw is None:
        return float(default)
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0.01 <= value <= 60:
        raise ValueError(f"{POLL_SECONDS_ENV}={raw!r} must be a number of seconds in [0.01, 60]; unset it for "
                         f"dperm's default ({default:g} s).")
    return value


def configure_flower_environment(environ=None) -> dict:
    """Set Flower's environment without overriding what the user set.

    ``FLWR_HOME`` (Flower writes its config and apps there; default ``~/.flwr``)
    points to a private temporary folder (removed when this process exits),
    telemetry is off
    (``FLWR_TELEMETRY_ENABLED=0``) and so is the update check
    (``FLWR_DISABLE_UPDATE_CHECK=1``). Values already in the environment are
    kept. Returns the environment it changed (``os.environ`` by default).
    """
    global _FLOWER_HOME
    environ = os.environ if environ is None else environ
    if "FLWR_HOME" not in environ:
        if _FLOWER_HOME is None:
            _FLOWER_HOME = tempfile.mkdtemp(prefix="dperm-flwr-home-")
            atexit.register(shutil.rmtree, _FLOWER_HOME, ignore_errors=True)  # made here: removed at exit
        environ["FLWR_HOME"] = _FLOWER_HOME
    environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    environ.setdefault("FLWR_DISABLE_UPDATE_CHECK", "1")
    return environ


def load_flower():
    """Import Flower (after :func:`configure_flower_environment`) and dperm's Flower plumbing.

    Imports :mod:`~dperm.multiparty.flower._adapter` (which checks Flower's
    version) and returns :mod:`~dperm.multiparty.flower.grid`. Nothing in
    Flower is patched: the adapter's patches are applied, scoped, by the
    processes that need them.

    Raises
    ------
    ImportError
        Flower is not installed, or its version is outside the range the
        adapter is written for; the message says how to install it.
    """
    configure_flower_environment()
    try:
        with warnings.catch_warnings():  # Flower's CLI stack imports deprecated click helpers
            warnings.simplefilter("ignore", DeprecationWarning)
            import flwr  # noqa: F401
            from flwr import serverapp  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f"the Flower SecAgg+ engine needs Flower (flwr) {SUPPORTED_FLOWER}, which is not installed: "
            f"{INSTALL_HINT}"
        ) from error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from dperm.multiparty.flower import (
            _adapter,  # noqa: F401  (the version guard)
            grid,
        )

    return grid


#: First wait (seconds) before a message's object is asked for again when it is
#: not there yet; Flower 1.41's default is 1 s (``PULL_INITIAL_BACKOFF``).
OBJECT_PULL_INITIAL_BACKOFF = 0.02
#: Longest such wait; Flower's default is 10 s (``PULL_BACKOFF_CAP``).
OBJECT_PULL_BACKOFF_CAP = 1.0
#: Flower 1.41's own ``PULL_INITIAL_BACKOFF`` and ``PULL_BACKOFF_CAP``.
FLOWER_OBJECT_PULL_BACKOFF = (1.0, 10.0)


def object_pull_waits(environ=None) -> tuple[float, float]:
    """``(initial, cap)`` seconds for Flower's object-pull retries in dperm's processes.

    dperm's short backoff (:data:`OBJECT_PULL_INITIAL_BACKOFF`, doubling up
    to :data:`OBJECT_PULL_BACKOFF_CAP`), applied with
    :func:`~dperm.multiparty.flower._adapter.object_pull_backoff`: a missing
    object used to cost most of a SecAgg+ stage on loopback.
    ``DPERM_FLOWER_POLL_SECONDS`` of 1 or more gives Flower's own backoff
    (for before/after benchmarks). With 500 tries a missing object still
    fails after about 500 x cap seconds.
    """
    if flower_poll_seconds(OBJECT_PULL_INITIAL_BACKOFF, environ) >= 1.0:
        return FLOWER_OBJECT_PULL_BACKOFF
    return OBJECT_PULL_INITIAL_BACKOFF, OBJECT_PULL_BACKOFF_CAP


# -- counts inside the secure sum ------------------------------------------------------


def count_digits(bound: int, quantization_range: int) -> int:
    """Base-``Q`` digits needed for a per-party count in ``[0, bound]``."""
    digits = 1
    while quantization_range**digits <= bound:
        digits += 1
    return digits


def encode_counts(counts, bounds, clipping_range: float, quantization_range: int) -> np.ndarray:
    """Put non-negative integer counts exactly on the fixed-point grid.

    A count ``c`` is sent as base-``Q`` digits ``c_j``, each as the value
    ``c_j * s - C`` with ``s = 2C/Q``: a grid point, so stochastic rounding
    leaves it unchanged and the secure sum adds the digits exactly (each
    digit sum is at most ``K (Q - 1) < M``). The coordinator learns only the
    total over the parties (:func:`decode_counts`).
    """
    step = quantization_step(clipping_range, quantization_range)
    values = []
    for count, bound in zip(counts, bounds):
        count = int(count)
        if not 0 <= count <= bound:
            raise ValueError(f"count {count} is outside its public bound [0, {bound}].")
        for _ in range(count_digits(bound, quantization_range)):
            count, digit = divmod(count, quantization_range)
            values.append(digit * step - clipping_range)
    return np.array(values, dtype=float)


def decode_counts(total, bounds, n_parties: int, clipping_range: float, quantization_range: int) -> list:
    """Totals over ``K`` parties of the counts :func:`encode_counts` placed on the grid.

    Raises ValueError when ``total`` does not hold exactly the digits of
    ``bounds`` (parties that send other counts than agreed are refused).
    """
    expected = sum(count_digits(bound, quantization_range) for bound in bounds)
    if np.shape(total) != (expected,):
        raise ValueError(f"the parties' counts have shape {np.shape(total)}; {len(bounds)} count(s) with "
                         f"bounds {list(bounds)} take ({expected},).")
    step = quantization_step(clipping_range, quantization_range)
    digit_sums = np.rint((np.asarray(total, dtype=float) + n_parties * clipping_range) / step).astype(np.int64)
    counts, position = [], 0
    for bound in bounds:
        n_digits = count_digits(bound, quantization_range)
        digits = digit_sums[position:position + n_digits]
        counts.append(int(sum(int(digit) * quantization_range**j for j, digit in enumerate(digits))))
        position += n_digits
    return counts


def count_clipped(vector, clipping_range: float) -> int:
    """Coordinates SecAgg+ will clip: ``|x_i| > C`` (counted by the party, before encoding)."""
    return int(np.count_nonzero(np.abs(vector) > clipping_range))


def party_payload(party_id, vector, clipping_range: float, quantization_range: int, count: bool) -> list:
    """What a party hands to ``secaggplus_mod``: ``[vector, its clipping count on the grid]``.

    The count is of the vector as handed over (already noisy, not yet quantised); without ``count``
    the payload is ``[vector]`` and the count stays in the party's own log (a warning).
    """
    n_clipped = count_clipped(vector, clipping_range)
    if not count:
        warn_party_clipping(party_id, n_clipped, clipping_range)
        return [vector]
    return [vector, encode_counts([n_clipped], [len(vector)], clipping_range, quantization_range)]


def check_flower_encoding(clipping_range, quantization_range, modulus_range):
    """Validate SecAgg+'s encoding parameters; return them as (float, int, int)."""
    clipping_range = check_positive(
        clipping_range, "clipping_range", "Coordinates are clipped to [-clipping_range, clipping_range]."
    )
    quantization_range = _check_int_range(
        quantization_range, "quantization_range", 2, MAX_FLOWER_QUANTIZATION_RANGE
    )
    modulus_range = _check_int_range(modulus_range, "modulus_range", 4, MAX_FLOWER_MODULUS_RANGE)
    if modulus_range & (modulus_range - 1):
        raise ValueError(f"modulus_range must be a power of two (SecAgg+ requires it); got {modulus_range}.")
    if modulus_range <= quantization_range:
        raise ValueError(
            f"modulus_range={modulus_range} must exceed quantization_range={quantization_range}."
        )
    return clipping_range, quantization_range, modulus_range


# -- the engine ------------------------------------------------------------------------


class FlowerSecureSum(FixedPointSecureSum):
    """Secure summation with Flower's SecAgg+ on an in-process message grid.

    Runs Flower 1.41's real ``SecAggPlusWorkflow`` (server) and
    ``secaggplus_mod`` (one ClientApp per party) for every sum; the parties'
    side and the server side exchange only Flower messages through an
    :class:`~dperm.multiparty.flower.grid.InProcessGrid`. Plugs into the
    protocol wherever a :class:`~dperm.multiparty.secure_sum.SecureSum` is
    taken, e.g. ``PSGDClassifier(secure_sum=FlowerSecureSum(...))`` or
    ``PSGDClassifier(secure_sum="flower")`` (clipping range set from public
    constants, as for the default engine).

    Parameters
    ----------
    clipping_range : float, default=8.0
        ``C``: SecAgg+ clips every coordinate to ``[-C, C]``; the parties
        count the clipped coordinates, and the total is revealed in the report
        when the caller asks for it (``sum(..., count_clipped=True)``).
    quantization_range : int, default=2**22
        ``Q``: grid steps across ``[-C, C]`` (at most 2**30: Flower rounds to int32).
    modulus_range : int, default=2**32
        ``M``: a power of two, at most 2**32; needs ``K Q < M``.
    timeout : float, optional
        Seconds SecAgg+ waits for replies at each stage (None: for all).
    grid_factory : callable, optional
        ``factory(client_apps) -> Grid``; defaults to
        ``InProcessGrid(client_apps)``. Pass a recording grid to audit the
        server's view (tests).

    Raises
    ------
    ImportError
        At construction, when Flower 1.41 is not installed
        (``pip install 'dperm[multiparty]'``).

    Notes
    -----
    The SecAgg+ shares are all-``K`` (``num_shares = reconstruction_threshold
    = K``): no dropout is tolerated (see the module docstring), and no
    coalition of fewer than ``K`` share holders can rebuild a party's keys.
    The stochastic rounding is Flower's and draws from numpy's global
    generator, so sums are not reproducible bit for bit.

    References
    ----------
    Rajkumar & Agarwal (2012), Thm 4.2 (the sum is all the coordinator may
    see); Bell et al. (2020) SecAgg+; paper note 14.
    """

    name = "flower_secaggplus"
    modulus_note = " (at most 2**32 in Flower)"

    def __init__(self, clipping_range=DEFAULT_CLIPPING_RANGE, quantization_range=DEFAULT_QUANTIZATION_RANGE,
                 modulus_range=DEFAULT_MODULUS_RANGE, *, timeout=None, grid_factory=None):
        self.clipping_range, self.quantization_range, self.modulus_range = check_flower_encoding(
            clipping_range, quantization_range, modulus_range
        )
        self.timeout = timeout
        self._flower = load_flower()
        self.grid_factory = grid_factory if grid_factory is not None else self._flower.InProcessGrid

    def _party_reply(self, party_id, vector, dimension: int, count: bool):
        """The party's side, run inside its ClientApp: check, count clipping, hand over (:func:`party_payload`)."""
        if vector is None:
            raise PartyUnavailableError(f"party {party_id!r} did not send its vector")
        return party_payload(party_id, check_contribution(party_id, vector, dimension), self.clipping_range,
                             self.quantization_range, count)

    def sum(self, vectors_by_party, dimension: int, *, count_clipped: bool = True):
        """Securely sum one vector per party over SecAgg+; see :meth:`SecureSum.sum`."""
        party_ids = self._round_parties(vectors_by_party)
        n_parties = len(party_ids)
        node_names = {index + 1: party_id for index, party_id in enumerate(party_ids)}

        def reply(context, coef, config):
            party_id = node_names[context.node_id]
            return self._party_reply(party_id, vectors_by_party[party_id], dimension, count_clipped)

        client_app = self._flower.make_party_client_app(reply)
        grid = self.grid_factory({node_id: client_app for node_id in node_names})
        with self._flower.quiet_flower():
            total, *counts = self._flower.secagg_sum_round(
                grid, node_names, parameters=[], config={}, clipping_range=self.clipping_range,
                quantization_range=self.quantization_range, modulus_range=self.modulus_range,
                timeout=self.timeout,
            )
        coordinates_clipped = None
        if count_clipped:
            (coordinates_clipped,) = decode_counts(counts[0], [dimension], n_parties, self.clipping_range,
                                                   self.quantization_range)
        report = fixed_point_report(self, n_parties, dimension, coordinates_clipped)
        return total, report
