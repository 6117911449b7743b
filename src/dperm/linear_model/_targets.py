"""Public target bounds of the regressors: ``y_bounds=(lower, upper)`` or the shorthand ``y_bound=M``.

A regressor's targets are clipped to the public interval ``[lower, upper]`` (a per-record
map: the guarantee is unchanged, and no row is ever dropped) and mapped affinely onto a
centred range: ``(y - centre) / half_width`` in ``[-1, 1]`` for AdaSSP, ``y - centre`` in
``[-half_width, half_width]`` for output perturbation. Predictions are mapped back and
clipped to ``[lower, upper]`` (post-processing). Whether a target was outside is decided
in the user's units, exactly (``y < lower or y > upper``), so a target *at* a bound never
warns, whatever the rounding of the affine map (which is then absorbed by a clip to the
mapped range, a no-op up to one ulp).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from dperm.exceptions import DataClippingWarning, warn_at_caller

#: The targets' range when the user gives no bound (the old ``y_bound=1.0``).
_DEFAULT_BOUNDS = (-1.0, 1.0)


def _finite_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def check_target_bounds(y_bound, y_bounds) -> tuple[float, float]:
    """``(lower, upper)`` from ``y_bounds`` or the symmetric shorthand ``y_bound``; refuses both.

    Raises ``ValueError`` (before any budget is spent) for both given, a ``y_bound`` that is
    not a finite number > 0, or ``y_bounds`` that is not two finite numbers with
    ``lower < upper``.
    """
    if y_bound is not None and y_bounds is not None:
        raise ValueError(f"give y_bounds=(lower, upper) or its symmetric shorthand y_bound=M, not "
                         f"both; got y_bound={y_bound!r} and y_bounds={y_bounds!r}.")
    if y_bounds is not None:
        try:
            lower, upper = y_bounds
        except (TypeError, ValueError):
            raise ValueError(f"y_bounds must be a pair (lower, upper) of public bounds on y; "
                             f"got {y_bounds!r}.") from None
        if not (_finite_real(lower) and _finite_real(upper) and lower < upper):
            raise ValueError(f"y_bounds must be two finite numbers with lower < upper, public "
                             f"bounds on y chosen without looking at the data; got {y_bounds!r}.")
        return float(lower), float(upper)
    if y_bound is not None:
        if not (_finite_real(y_bound) and y_bound > 0):
            raise ValueError(f"y_bound must be a finite number > 0 (a public bound M on |y|); "
                             f"got {y_bound!r}.")
        return -float(y_bound), float(y_bound)
    return _DEFAULT_BOUNDS


def centre_and_half_width(lower: float, upper: float) -> tuple[float, float]:
    """``((lower + upper) / 2, (upper - lower) / 2)``, computed without overflow."""
    return lower / 2.0 + upper / 2.0, upper / 2.0 - lower / 2.0


def clip_targets(y, lower: float, upper: float):
    """``y`` clipped to ``[lower, upper]`` and how many targets were outside (exact comparison)."""
    y = np.asarray(y, dtype=np.float64)
    outside = (y < lower) | (y > upper)
    n_clipped = int(np.count_nonzero(outside))
    return (np.clip(y, lower, upper) if n_clipped else y), n_clipped


def warn_clipped_targets(n_clipped: int, lower: float, upper: float) -> None:
    """A :class:`~dperm.DataClippingWarning` if any target was outside (without the count)."""
    if n_clipped:
        warn_at_caller(
            f"some targets were outside the public bounds [{lower:g}, {upper:g}] and were clipped "
            "to them before fitting (no row was dropped). Clipping is a per-record step: the "
            "privacy guarantee is the same either way, only the targets the model learns from "
            "change. The bounds should be public (a published range), not read from the data.",
            DataClippingWarning,
        )


def to_unit_interval(y, lower: float, upper: float) -> np.ndarray:
    """Targets already in ``[lower, upper]`` mapped affinely onto ``[-1, 1]``."""
    centre, half = centre_and_half_width(lower, upper)
    return np.clip((np.asarray(y, dtype=np.float64) - centre) / half, -1.0, 1.0)


def to_centred(y, lower: float, upper: float) -> np.ndarray:
    """Targets already in ``[lower, upper]`` shifted onto ``[-half_width, half_width]``."""
    centre, half = centre_and_half_width(lower, upper)
    return np.clip(np.asarray(y, dtype=np.float64) - centre, -half, half)


__all__ = [ "centre_and_half_width", "check_target_bounds", "clip_targets",
           "to_centred", "to_unit_interval", "warn_clipped_targets"]
