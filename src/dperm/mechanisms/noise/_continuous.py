"""Continuous samplers: 003's ``exp(-||b|| / scale)`` and the Gaussian, never released directly.

Not float-safe (Mironov 2012): dperm releases nothing drawn here on its float-safe paths.
Part of :mod:`dperm.mechanisms.noise`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from dperm.randomness import OSEntropyGenerator, urandom_words


def sample_l2_laplace(dimension: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Draw ``b`` in R^d with density proportional to ``exp(-||b||_2 / scale)``.

    This is 003 eq. 7 (and 004 eq. 2) with ``beta = 1 / scale``. In polar
    coordinates the density of the norm is ``r^(d-1) exp(-r / scale)``, so
    ``||b|| ~ Gamma(shape=d, scale=scale)``, and the direction is uniform on
    the sphere: a normalised standard Gaussian vector (paper note 1).
    Floating point: not float-safe; dperm does not release its draws directly.
    """
    if dimension < 1:
        raise ValueError(f"dimension must be >= 1; got {dimension!r}.")
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be a finite number > 0; got {scale!r}.")
    direction = rng.standard_normal(dimension)
    norm = np.linalg.norm(direction)
    while norm == 0.0:  # probability zero, but never divide by it
        direction = rng.standard_normal(dimension)
        norm = np.linalg.norm(direction)
    radius = rng.gamma(shape=dimension, scale=scale)
    return direction * (radius / norm)


def sample_gaussian(dimension: int, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Draw ``eta ~ N(0, sigma^2 I_d)`` (004 Alg. 4 line 2). Not float-safe (see above).

    For an :class:`~dperm.randomness.OSEntropyGenerator` the draws are
    :func:`os_standard_normal`'s (every bit from :func:`os.urandom`); for a
    seeded Generator, ``rng.normal`` (testing only).
    """
    if dimension < 1:
        raise ValueError(f"dimension must be >= 1; got {dimension!r}.")
    if not np.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"sigma must be a finite number > 0; got {sigma!r}.")
    if isinstance(rng, OSEntropyGenerator):
        return sigma * os_standard_normal(dimension)
    return rng.normal(0.0, sigma, size=dimension)


def os_standard_normal(size: int) -> np.ndarray:
    """``size`` standard normal floats from :func:`os.urandom` words, by inversion.

    Each 64-bit word gives a sign (its top bit) and ``u = (k + 1/2) 2^-64`` in
    ``(0, 1/2)`` from its other 63 bits; ``-ndtri(u)`` is the half-normal
    quantile (accurate in the tail). ``|draw| < 9.2`` always: the law is the
    normal truncated where its mass is below ``1e-19``.
    """
    words = urandom_words(size)
    negative = (words >> np.uint64(63)).astype(bool)
    u = ((words & np.uint64(2**63 - 1)).astype(np.float64) + 0.5) * 2.0**-64
    magnitude = -ndtri(u)
    return np.where(negative, -magnitude, magnitude)


__all__ = ["os_standard_normal", "sample_gaussian", "sample_l2_laplace"]
