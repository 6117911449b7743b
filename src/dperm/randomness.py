"""Where dperm's randomness comes from: the operating system's CSPRNG for every noise bit.

``random_state=None`` (every estimator's default) gives an :class:`OSEntropyGenerator`
(:func:`dperm.validation.check_random_state`). The exact noise samplers of
:mod:`dperm.mechanisms.noise` recognise it and take every bit from
:func:`os.urandom` (:class:`OSBits`): no pseudo-random generator stands between
the operating system's cryptographically secure generator and the noise, so the
noise of one release says nothing about the next one (OpenDP draws from a CSPRNG
for the same reason). Its numpy side, a PCG64 seeded with 128 bits from
:mod:`secrets`, serves only draws that are not noise (data splits, public random
features). An integer or a plain numpy Generator as ``random_state`` is a
testing aid: the noise is then a reproducible function of the seed.
"""

from __future__ import annotations

import os
import secrets

import numpy as np

#: Bytes per :func:`os.urandom` read (one system call serves thousands of small draws).
URANDOM_READ_BYTES = 4096
#: Bytes moved from the read buffer into the bit pool at a time (keeps the pool's shifts cheap).
_POOL_REFILL_BYTES = 64


class OSEntropyGenerator(np.random.Generator):
    """A numpy Generator whose *noise* comes from :func:`os.urandom`.

    Its own numpy methods (``integers``, ``permutation``, ...) run on a PCG64
    seeded from :mod:`secrets` and serve non-noise draws only. The samplers of
    :mod:`dperm.mechanisms.noise` do not use that stream: for an
    ``OSEntropyGenerator`` they draw every bit from the operating system
    (:class:`OSBits`).

    Copies share nothing: :meth:`spawn` gives children of the same kind, and a
    pickled or deep-copied generator comes back freshly seeded from the
    operating system (the bits it would draw were never reproducible).
    """

    def __init__(self, bit_generator: np.random.BitGenerator | None = None):
        if bit_generator is None:
            bit_generator = np.random.PCG64(secrets.randbits(128))
        super().__init__(bit_generator)

    def spawn(self, n_children: int) -> list[OSEntropyGenerator]:
        """``n_children`` independent generators of the same kind."""
        return [OSEntropyGenerator(child) for child in self.bit_generator.spawn(n_children)]

    def __reduce__(self):
        return (OSEntropyGenerator, ())

    def __deepcopy__(self, memo):
        return OSEntropyGenerator()


class OSBits:
    """Uniform bits read from :func:`os.urandom`, buffered, with nothing in between.

    Reads :data:`URANDOM_READ_BYTES` at a time and hands out their bits in
    order; every bit is used once. One instance belongs to one draw (it is
    built per release), so it is never shared between threads.
    """

    __slots__ = ("_buffer", "_offset", "_pool", "_available")

    def __init__(self):
        self._buffer = b""
        self._offset = 0
        self._pool = 0
        self._available = 0

    def _refill(self) -> None:
        if self._offset >= len(self._buffer):
            self._buffer = os.urandom(URANDOM_READ_BYTES)
            self._offset = 0
        chunk = self._buffer[self._offset:self._offset + _POOL_REFILL_BYTES]
        self._offset += len(chunk)
        self._pool |= int.from_bytes(chunk, "little") << self._available
        self._available += 8 * len(chunk)

    def getrandbits(self, k: int) -> int:
        """``k`` fair bits as an integer in ``{0, ..., 2**k - 1}``."""
        while self._available < k:
            self._refill()
        value = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._available -= k
        return value


def child_generator(rng: np.random.Generator) -> np.random.Generator:
    """The generator of one sub-fit (a tuning candidate): never a weaker noise source than ``rng``.

    A fresh :class:`OSEntropyGenerator` when ``rng`` is one; otherwise a Generator
    seeded with 63 bits of ``rng``'s stream (the reproducible testing path).
    """
    if isinstance(rng, OSEntropyGenerator):
        return OSEntropyGenerator()
    return np.random.default_rng(rng.integers(2**63))


def urandom_words(count: int) -> np.ndarray:
    """``count`` independent uniform 64-bit words straight from :func:`os.urandom`."""
    return np.frombuffer(os.urandom(8 * count), dtype="<u8")


__all__ = ["OSBits", "OSEntropyGenerator", "child_generator", "urandom_words"]
