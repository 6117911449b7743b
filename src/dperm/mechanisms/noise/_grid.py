"""The power-of-two grid, the lattice laws' calibration, and the release of a vector on the grid.

A value is rounded to ``g Z^d`` and gets exact integer noise (:mod:`dperm.mechanisms.noise._exact` or the joint
L2 law of :mod:`dperm.mechanisms.noise.l2_laplace`); the calibration adds the rounding to
the sensitivity (:func:`~dperm.privacy.sensitivity.grid_l1_sensitivity`). Part of
:mod:`dperm.mechanisms.noise`; why and how: ``docs/design/noise.md``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dperm.mechanisms.noise._exact import BitSource, sample_discrete_laplace
from dperm.mechanisms.noise.l2_laplace import l2_laplace_mean_square, sample_discrete_l2_laplace_vector

# the grid's L1 bound is sensitivity arithmetic: it lives with the other bounds
from dperm.privacy.sensitivity import grid_l1_sensitivity, grid_l2_sensitivity

#: Released integers must stay below this so that ``g * integer`` is exact in float64.
EXACT_INTEGER_LIMIT = 2**53
#: The grid step is at most this fraction of the per-coordinate sensitivity share:
#: rounding then inflates the L1 sensitivity in grid units by at most ``d`` steps,
#: i.e. the noise by a factor ``<= 1 + 1/GRID_RESOLUTION``.
GRID_RESOLUTION = 1024
#: The grid shrinks with epsilon only up to this epsilon: beyond it the noise is
#: already far below the data's effect and a finer grid would push ordinary
#: coefficients past :data:`EXACT_INTEGER_LIMIT` steps.
GRID_EPSILON_CAP = 2.0**10
#: Grid centres are clamped to ``[-CENTRE_LIMIT, CENTRE_LIMIT]`` steps: a public,
#: per-coordinate 1-Lipschitz map, so it never increases the L1 sensitivity.
CENTRE_LIMIT = 2**52


# ---------------------------------------------------------------------------
# The grid and its sensitivity
# ---------------------------------------------------------------------------
def grid_step(sensitivity: float, dimension: int, epsilon: float = 1.0,
              value_bound: float | None = None) -> float:
    """The power of two ``g`` values are rounded to, from public quantities only.

    ``g <= S / (GRID_RESOLUTION sqrt(d) e)``: relative to ``S / sqrt(d)`` the
    grid adds at most ``1/GRID_RESOLUTION`` to the noise, and relative to
    ``S / epsilon`` the rounding stays below the noise. With a public bound
    ``V`` on ``|value|`` (``value_bound``), ``e = max(1, epsilon)`` and ``g`` is
    kept at least ``V / 2**50`` so every value fits :data:`EXACT_INTEGER_LIMIT`
    steps; without one, ``e = min(max(1, epsilon), GRID_EPSILON_CAP)``.
    """
    if not math.isfinite(sensitivity) or sensitivity <= 0:
        raise ValueError(f"sensitivity must be a finite number > 0; got {sensitivity!r}.")
    factor = max(1.0, epsilon)
    if value_bound is None:
        factor = min(factor, GRID_EPSILON_CAP)
    target = sensitivity / (GRID_RESOLUTION * math.sqrt(dimension) * factor)
    if value_bound is not None and math.isfinite(value_bound) and value_bound > 0:
        target = max(target, value_bound / 2.0**50)
    return math.ldexp(1.0, math.floor(math.log2(target)))


def to_grid(values: np.ndarray, step: float) -> list[int]:
    """``round(values / g)`` as exact Python integers, clamped to ``+-CENTRE_LIMIT``.

    Rounding and the clamp are monotone per coordinate, so neighbours' centres
    differ by at most what :func:`grid_l1_sensitivity` allows; the clamp only
    acts on a value beyond ``2**52`` grid steps (e.g. ``|value| > 2**52 g``).
    """
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError("a value to release is not finite (the solve diverged); nothing was released.")
    scaled = np.clip(values / step, -CENTRE_LIMIT, CENTRE_LIMIT)
    return [int(round(float(v))) for v in scaled]


def round_to_grid(values, step: float) -> np.ndarray:
    """``g * round(values / g)`` with the clamp of :func:`to_grid`: no noise (a deterministic, public map)."""
    values = np.asarray(values, dtype=np.float64)
    return _from_grid(to_grid(values.ravel(), step), step).reshape(values.shape)


def grid_vector(integers, step: float) -> np.ndarray:
    """``g * integers`` as a float vector, exactly (see :func:`_from_grid`)."""
    return _from_grid(integers, step)


def _from_grid(integers, step: float) -> np.ndarray:
    """``g * integers`` exactly; integers beyond ``2**53 - 1`` are clamped (post-processing)."""
    limit = EXACT_INTEGER_LIMIT - 1
    return np.array([float(min(max(k, -limit), limit)) for k in integers]) * step


def release_on_grid(values, calibration: "GridCalibration", rng) -> np.ndarray:
    """Release ``g * (round(values / g) + z)`` with exact integer noise ``z``.

    - ``calibration.norm == "l1"`` (:func:`discrete_laplace_calibration`):
      discrete Laplace per coordinate with scale ``k / epsilon``. For the whole
      vector (``dimension = d``) the grid centres of neighbours differ by at most
      ``k`` in L1 and every output's probability ratio is at most
      ``exp(epsilon)`` (CKS 2020, Sec. 2). For one scalar (``dimension = 1``)
      applied to ``n`` values, every value is an ``epsilon``-DP release of its
      own (private prediction: each answer is paid for separately).
    - ``calibration.norm == "l2"`` (:func:`laplace_noise_on_grid` when the L2
      law is the smaller): one joint draw of
      :func:`~dperm.mechanisms.noise.l2_laplace.sample_discrete_l2_laplace_vector`
      with scale ``k2 / epsilon``, ``k2`` the L2 bound in steps: its mass is
      ``exp(||z - z'|| / scale)``-Lipschitz, the lattice form of 003 Alg. 1's
      ``exp(-||b||_2 / scale)`` noise at about half the L1 calibration's variance.

    Returns
    -------
    released : ndarray of the shape of ``values``
        Exactly ``g * integer`` in every coordinate.
    """
    values = np.asarray(values, dtype=np.float64)
    centres = to_grid(values.ravel(), calibration.step)
    noise = sample_grid_noise(calibration, len(centres), rng)
    noisy = [c + z for c, z in zip(centres, noise)]
    return _from_grid(noisy, calibration.step).reshape(values.shape)


class GridCalibration:
    """How a grid mechanism was calibrated: step, sensitivity in steps, scale.

    Attributes
    ----------
    step : float
        The grid ``g`` (a power of two).
    norm : {"l1", "l2"}
        ``"l1"``: independent discrete Laplace coordinates; ``"l2"``: the joint
        lattice L2 Laplace vector of :mod:`dperm.mechanisms.noise.l2_laplace`.
    sensitivity_steps : int or Fraction
        ``k``: the largest L1 (or L2) distance of neighbours' grid centres, in steps.
    scale_in_steps : Fraction
        ``k / epsilon``: the noise scale in grid steps. For ``"l2"`` it is the
        scale of the *joint* law and must only reach :func:`sample_grid_noise`:
        per-coordinate noise at an L2 scale is not epsilon-DP.
    noise_scale : float
        ``g k / epsilon``: the scale in the values' units.
    dimension : int or None
        The vector length an ``"l2"`` calibration is for.
    """

    __slots__ = ("step", "norm", "sensitivity_steps", "scale_in_steps", "noise_scale", "dimension")

    def __init__(self, step, sensitivity_steps, scale_in_steps, norm="l1", dimension=None):
        self.step = step
        self.norm = norm
        self.sensitivity_steps = sensitivity_steps
        self.scale_in_steps = scale_in_steps
        self.noise_scale = float(scale_in_steps * Fraction(step))
        self.dimension = dimension

    def __eq__(self, other):
        """Equal calibrations give the same law: compared by value, slot by slot."""
        if not isinstance(other, GridCalibration):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # mutable slots: equal by value, so not hashable

    @property
    def l1_sensitivity_steps(self) -> int:
        """``k`` of an ``"l1"`` calibration."""
        if self.norm != "l1":
            raise AttributeError("an L2 calibration has no L1 sensitivity; see sensitivity_steps.")
        return self.sensitivity_steps

    @property
    def noise_distribution(self) -> str:
        """The record's name for the noise: ``"discrete-laplace"`` or ``"discrete-l2-laplace"``."""
        return "discrete-laplace" if self.norm == "l1" else "discrete-l2-laplace"

    def rms_noise_norm(self, dimension: int) -> float:
        """``sqrt(E||z||^2)`` in the values' units for a ``dimension``-vector release (an upper bound).

        ``sqrt(2 d)`` times the scale for independent Laplace-type coordinates,
        ``sqrt(2 k d)`` for the L2 law (:func:`~dperm.mechanisms.noise.l2_laplace.l2_laplace_mean_square`).
        """
        if self.norm == "l1":
            return math.sqrt(2.0 * dimension) * self.noise_scale
        return math.sqrt(l2_laplace_mean_square(dimension, self.noise_scale))


def _l1_on_grid(step, l2_sensitivity, dimension, epsilon) -> GridCalibration:
    k = grid_l1_sensitivity(l2_sensitivity, dimension, step)
    return GridCalibration(step, k, Fraction(k) / Fraction(epsilon))


def _l2_on_grid(step, l2_sensitivity, dimension, epsilon) -> GridCalibration:
    k2 = grid_l2_sensitivity(l2_sensitivity, dimension, step)
    return GridCalibration(step, k2, k2 / Fraction(epsilon), norm="l2", dimension=dimension)


def discrete_laplace_calibration(l2_sensitivity: float, dimension: int, epsilon: float,
                                 value_bound: float | None = None) -> GridCalibration:
    """The grid, its L1 sensitivity ``k`` and the discrete Laplace scale ``k / epsilon``.

    ``value_bound``: an optional public bound on ``|value|`` (see :func:`grid_step`).
    """
    step = grid_step(l2_sensitivity, dimension, epsilon, value_bound)
    return _l1_on_grid(step, l2_sensitivity, dimension, epsilon)


def laplace_noise_on_grid(step: float, l2_sensitivity: float, dimension: int,
                          epsilon: float) -> GridCalibration:
    """Pure-DP noise on a given grid for one vector with L2 sensitivity ``S``: the L1 or L2 law, whichever is smaller.

    Compares the public RMS noise norms: the L2 law
    (:mod:`dperm.mechanisms.noise.l2_laplace`) wins from ``d = 3`` on and approaches
    half the L1 calibration's variance; for ``d <= 2`` the two tie and the
    simpler per-coordinate discrete Laplace is kept.
    """
    l1 = _l1_on_grid(step, l2_sensitivity, dimension, epsilon)
    l2 = _l2_on_grid(step, l2_sensitivity, dimension, epsilon)
    return l2 if l2.rms_noise_norm(dimension) < l1.rms_noise_norm(dimension) else l1


def vector_laplace_calibration(l2_sensitivity: float, dimension: int, epsilon: float,
                               value_bound: float | None = None) -> GridCalibration:
    """:func:`laplace_noise_on_grid` on the grid of :func:`grid_step`: 003 Alg. 1's noise, float-safe."""
    step = grid_step(l2_sensitivity, dimension, epsilon, value_bound)
    return laplace_noise_on_grid(step, l2_sensitivity, dimension, epsilon)


def sample_grid_noise(calibration: GridCalibration, dimension: int, rng) -> list[int]:
    """The integer noise vector of ``calibration``; ``rng`` only supplies bits (:class:`BitSource`)."""
    scale = calibration.scale_in_steps
    bits = BitSource(rng)
    if calibration.norm == "l2":
        if dimension != calibration.dimension:
            raise ValueError(f"an L2 calibration for dimension {calibration.dimension} cannot "
                             f"noise {dimension} values.")
        return sample_discrete_l2_laplace_vector(dimension, scale, bits)
    return [sample_discrete_laplace(scale, bits) for _ in range(dimension)]


__all__ = ["CENTRE_LIMIT", "EXACT_INTEGER_LIMIT", "GRID_EPSILON_CAP", "GRID_RESOLUTION", "GridCalibration",
           "discrete_laplace_calibration", "grid_l1_sensitivity", "grid_l2_sensitivity", "grid_step",
           "grid_vector", "laplace_noise_on_grid", "release_on_grid",
           "round_to_grid", "sample_grid_noise", "to_grid", "vector_laplace_calibration"]
