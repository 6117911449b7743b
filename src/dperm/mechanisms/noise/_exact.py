"""Exact integer noise: uniform bits from the OS CSPRNG and the discrete Laplace and Gaussian laws.

Canonne, Kamath & Steinke (2020), Algs. 1-3, in integer arithmetic only: no floating-point
number enters a draw. Every bit comes from :class:`BitSource`. Part of
:mod:`dperm.mechanisms.noise`; why and how: ``docs/design/noise.md``.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np

from dperm.randomness import OSBits, OSEntropyGenerator


# ---------------------------------------------------------------------------
# Uniform integers: the operating system's CSPRNG, or a seed for testing
# ---------------------------------------------------------------------------
class BitSource:
    """Exact uniform integers for the samplers.

    For an :class:`~dperm.randomness.OSEntropyGenerator` (``random_state=None``,
    the default) every bit is read from :func:`os.urandom`
    (:class:`~dperm.randomness.OSBits`): the OS CSPRNG, with no pseudo-random
    generator in between. For any other numpy Generator (a seed: testing only)
    a :class:`random.Random` seeded with 256 bits from ``rng`` gives the bits,
    so seeded runs are reproducible. :meth:`below` rejects values ``>= n``
    among the ``(n - 1).bit_length()`` low bits, so it is exactly uniform for
    any Python int ``n``.
    """

    __slots__ = ("_getrandbits",)

    def __init__(self, rng: np.random.Generator):
        if isinstance(rng, OSEntropyGenerator):
            self._getrandbits = OSBits().getrandbits
        else:
            self._getrandbits = random.Random(int.from_bytes(rng.bytes(32), "little")).getrandbits

    def getrandbits(self, k: int) -> int:
        """``k`` fair bits as an integer in ``{0, ..., 2**k - 1}``."""
        return self._getrandbits(k)

    def below(self, n: int) -> int:
        """A uniform integer in ``{0, ..., n - 1}``."""
        if n == 1:
            return 0
        bits = (n - 1).bit_length()
        getrandbits = self._getrandbits
        while True:
            value = getrandbits(bits)
            if value < n:
                return value


def _bits(source) -> BitSource:
    return source if isinstance(source, BitSource) else BitSource(source)


def bernoulli_exp_neg(gamma: Fraction, rng) -> bool:
    """Exact ``Bernoulli(exp(-gamma))`` for rational ``gamma >= 0`` (CKS 2020, Alg. 1).

    For ``gamma <= 1``: draw ``A_k ~ Bernoulli(gamma / k)`` for ``k = 1, 2, ...``
    until the first ``A_k = 0`` and return whether that ``k`` is odd. For
    ``gamma > 1``: ``exp(-gamma) = exp(-1)^floor(gamma) exp(-frac(gamma))``.
    """
    rng = _bits(rng)
    gamma = Fraction(gamma)
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0; got {gamma}.")
    return _bernoulli_exp_neg(gamma.numerator, gamma.denominator, rng)


def _bernoulli_exp_neg(numerator: int, denominator: int, rng: BitSource) -> bool:
    """:func:`bernoulli_exp_neg` of ``numerator / denominator`` in Python integers only.

    Each ``Bernoulli(gamma / k)`` is drawn as ``below(q) < p`` with ``p / q`` the
    fraction in lowest terms, the same draws as with :class:`fractions.Fraction`
    but without building one per step (the samplers' inner loop).
    """
    while numerator > denominator:
        if not _bernoulli_exp_neg(1, 1, rng):
            return False
        numerator -= denominator
    below = rng.below
    k = 1
    while True:
        den = denominator * k
        common = math.gcd(numerator, den)
        if below(den // common) >= numerator // common:
            return k % 2 == 1
        k += 1


# ---------------------------------------------------------------------------
# Exact integer distributions
# ---------------------------------------------------------------------------
def sample_discrete_laplace(scale: Fraction, rng) -> int:
    """One draw with ``P(z) ~ exp(-|z| / scale)`` on the integers (CKS 2020, Alg. 2).

    ``scale = t / s`` in lowest terms: ``U`` uniform in ``{0..t-1}`` accepted
    with probability ``exp(-U/t)`` and ``V ~ Geometric(1 - exp(-1))`` make
    ``X = U + t V`` geometric with parameter ``1 - exp(-1/t)``; ``Y = floor(X/s)``
    is then geometric with parameter ``1 - exp(-s/t)``, and a fair sign with
    ``-0`` rejected gives the two-sided distribution.
    """
    rng = _bits(rng)
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError(f"scale must be > 0; got {scale}.")
    t, s = scale.numerator, scale.denominator
    while True:
        u = rng.below(t)
        common = math.gcd(u, t)
        if not _bernoulli_exp_neg(u // common, t // common, rng):
            continue
        v = 0
        while _bernoulli_exp_neg(1, 1, rng):
            v += 1
        y = (u + t * v) // s
        negative = rng.below(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def sample_discrete_gaussian(sigma_squared: Fraction, rng) -> int:
    """One draw with ``P(z) ~ exp(-z^2 / (2 sigma^2))`` on the integers (CKS 2020, Alg. 3).

    Rejection from the discrete Laplace of scale ``t = floor(sigma) + 1``:
    accept ``Y`` with probability ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))``.
    """
    rng = _bits(rng)
    sigma_squared = Fraction(sigma_squared)
    if sigma_squared <= 0:
        raise ValueError(f"sigma_squared must be > 0; got {sigma_squared}.")
    p, q = sigma_squared.numerator, sigma_squared.denominator
    t = math.isqrt(p // q) + 1
    scale = Fraction(t)
    while True:
        y = sample_discrete_laplace(scale, rng)
        # gamma = (|y| - sigma^2 / t)^2 / (2 sigma^2) = (|y| t q - p)^2 / (2 p q t^2), in lowest terms
        numerator, denominator = (abs(y) * t * q - p) ** 2, 2 * p * q * t * t
        common = math.gcd(numerator, denominator)
        if _bernoulli_exp_neg(numerator // common, denominator // common, rng):
            return y


def sample_discrete_gaussian_vector(dimension: int, sigma_squared: Fraction, rng) -> list[int]:
    """``dimension`` independent exact discrete Gaussian draws (variance parameter in grid steps^2)."""
    bits = BitSource(rng)
    return [sample_discrete_gaussian(sigma_squared, bits) for _ in range(dimension)]


__all__ = ["BitSource", "bernoulli_exp_neg", "sample_discrete_gaussian", "sample_discrete_gaussian_vector",
           "sample_discrete_laplace"]
