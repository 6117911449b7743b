"""Noise samplers shared by every mechanism (one owner for each distribution)."""

from __future__ import annotations

import numpy as np


def sample_l2_laplace(dimension: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Draw ``b`` in R^d with density proportional to ``exp(-||b||_2 / scale)``.

    This is 003 eq. 7 (and 004 eq. 2) with ``beta = 1 / scale``. In polar
    coordinates the density of the norm is ``r^(d-1) exp(-r / scale)``, so
    ``||b|| ~ Gamma(shape=d, scale=scale)``, and the direction is uniform on
    the sphere: a normalised standard Gaussian vector (shared papers note 1).
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
    """Draw ``eta ~ N(0, sigma^2 I_d)`` (004 Alg. 4 line 2)."""
    if dimension < 1:
        raise ValueError(f"dimension must be >= 1; got {dimension!r}.")
    if not np.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"sigma must be a finite number > 0; got {sigma!r}.")
    return rng.normal(0.0, sigma, size=dimension)
