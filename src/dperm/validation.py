"""Checks of privacy parameters and per-record clipping, owned in one place.

Every estimator and mechanism calls these instead of checking inline, so the
messages are the same everywhere and name the parameter, the value and the fix.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from dperm.exceptions import DataClippingWarning, WeakGuaranteeWarning, warn_at_caller
from dperm.randomness import OSEntropyGenerator

__all__ = [
    "ROW_BLOCK", "WEAK_EPSILON", "append_intercept_feature", "check_budget_for_data",
    "check_delta", "check_epsilon", "check_positive", "check_positive_int", "check_random_state",
    "check_sample_weight", "refuse_sample_weight",
    "clip_labels_to_bound", "clip_rows_to_norm", "is_dask_collection", "refuse_dask_input",
    "row_norms", "warn_clipped_labels", "warn_clipped_rows",
]

#: Above this epsilon a fit warns (:class:`~dperm.exceptions.WeakGuaranteeWarning`) that the
#: guarantee is weak: ``exp(10)`` is about 22,000 (docs/choosing_parameters.md).
WEAK_EPSILON = 10.0


def _is_real_scalar(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_epsilon(epsilon, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float after checking ``0 < epsilon < inf``."""
    if not _is_real_scalar(epsilon) or not np.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(
            f"{name} must be a finite number > 0 (the privacy loss bound); got {epsilon!r}."
        )
    return float(epsilon)


def check_delta(delta, name: str = "delta") -> float:
    """Return ``delta`` as a float after checking ``0 <= delta < 1``."""
    if not _is_real_scalar(delta) or not np.isfinite(delta) or not 0 <= delta < 1:
        raise ValueError(
            f"{name} must be a number in [0, 1) (the failure probability of "
            f"(epsilon, delta)-DP); got {delta!r}."
        )
    return float(delta)


def check_budget_for_data(epsilon: float, delta: float, n_samples: int) -> None:
    """The budget's sanity checks once the public ``n`` is known, before anything is spent.

    Refuses ``delta >= 1/n`` and warns for ``epsilon >`` :data:`WEAK_EPSILON`.
    Every fit path calls it after the data are validated and before the accountant
    is charged (``n`` is public in dperm).

    ``delta >= 1/n`` is refused, not warned: an ``(epsilon, delta)``-DP algorithm may
    publish ``delta n`` whole records outright ("name and shame": release each record
    with probability ``delta``), so with ``delta >= 1/n`` the guarantee allows
    releasing about one record or more (Dwork & Roth 2014, Sec. 2.3, which asks for
    ``delta`` well below ``1/n``). No accuracy is worth a guarantee that permits that.

    Parameters
    ----------
    epsilon : float
        The epsilon of the fit (already checked finite and > 0).
    delta : float
        The fit's ``delta`` parameter (checked even when a pure mechanism runs and spends
        none of it: ``delta >= 1/n`` is never a sensible request; 0 is not checked).
    n_samples : int
        The number of records the fit sees.

    Raises
    ------
    ValueError
        ``delta >= 1 / n_samples``.
    """
    if delta > 0 and delta * n_samples >= 1:
        raise ValueError(
            f"delta={delta:g} is at least 1/n = 1/{n_samples}: an (epsilon, delta)-DP fit may then "
            "publish whole records outright (Dwork & Roth 2014, Sec. 2.3). Use delta well below "
            f"1/n, e.g. delta <= {_suggested_delta(n_samples):g}, or delta=0 with a pure mechanism."
        )
    if epsilon > WEAK_EPSILON:
        warn_at_caller(
            f"epsilon={epsilon:g} is above {WEAK_EPSILON:g}: the guarantee lets an observer's odds "
            f"about any one record change by a factor up to exp(epsilon) = {math.exp(min(epsilon, 709)):.3g}, "
            "which protects little. See docs/choosing_parameters.md; a smaller epsilon (<= 1 "
            "is common) gives a meaningful guarantee.",
            WeakGuaranteeWarning,
        )


def _suggested_delta(n_samples: int) -> float:
    """A power of ten at most ``1 / (10 n)``: the delta the refusal suggests."""
    return 10.0 ** math.floor(math.log10(1.0 / (10.0 * n_samples)))


def check_positive(value, name: str, hint: str = "") -> float:
    """Return ``value`` as a float after checking it is finite and > 0."""
    if not _is_real_scalar(value) or not np.isfinite(value) or value <= 0:
        extra = f" {hint}" if hint else ""
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}.{extra}")
    return float(value)


def check_positive_int(value, name: str) -> int:
    """Return ``value`` as an int after checking it is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {value!r}.")
    return int(value)


def row_norms(X: np.ndarray) -> np.ndarray:
    """L2 norm of every row, without overflow for entries near the largest float.

    Each row is divided by its largest absolute entry before squaring, so a
    row like ``[1e300, 1e300]`` has norm ``1.414e300``, not ``inf``.
    """
    norms = np.empty(X.shape[0])
    # In blocks of rows, so the scaled temporary stays small for tall chunks.
    for start in range(0, X.shape[0], ROW_BLOCK):
        block = X[start:start + ROW_BLOCK]
        scale = np.max(np.abs(block), axis=1) if X.shape[1] else np.zeros(block.shape[0])
        safe = np.where(scale > 0, scale, 1.0)
        # A norm beyond the largest float is reported as inf: longer than any bound, so clipped.
        with np.errstate(over="ignore"):
            norms[start:start + ROW_BLOCK] = np.linalg.norm(block / safe[:, None], axis=1) * scale
    return norms


#: Rows per block in row-wise passes over tall arrays (bounds temporaries to ~ROW_BLOCK * d floats).
ROW_BLOCK = 16384


def clip_rows_to_norm(X: np.ndarray, data_norm: float, copy: bool = True) -> tuple[np.ndarray, int]:
    """Scale every row of ``X`` whose L2 norm exceeds ``data_norm`` back onto it.

    The step changes one record using only that record and the public bound,
    so it is a per-record transformation that keeps differential privacy (the
    analysis of 003 Thm 1-2 needs ``||x_i|| <= data_norm`` for every row).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    data_norm : float
    copy : bool, default=True
        ``False`` scales the long rows of ``X`` in place (for arrays the caller owns).

    Returns
    -------
    X_clipped : ndarray
        A copy when any row was clipped (``copy=True``), otherwise ``X`` itself.
    n_clipped : int
        How many rows were scaled.
    """
    norms = row_norms(X)
    # A relative margin so that rows already on the bound (up to rounding) are not counted.
    too_long = norms > data_norm * (1.0 + 1e-12)
    n_clipped = int(np.count_nonzero(too_long))
    if n_clipped:
        if copy:
            X = X.copy()
        # divide by the largest entry first, so that huge rows keep their direction
        long_rows = X[too_long] / np.max(np.abs(X[too_long]), axis=1, keepdims=True)
        X[too_long] = long_rows * (data_norm / np.linalg.norm(long_rows, axis=1))[:, None]
    return X, n_clipped


def warn_clipped_rows(n_clipped: int, data_norm: float) -> None:
    """Issue a :class:`DataClippingWarning` at the user's call if any row was clipped.

    Called once per fit, on the training rows. The warning does not say how
    many: that count is a function of the private rows and is not released
    (:mod:`dperm.privacy.release`). It does not advise a larger ``data_norm``
    (the noise grows with it) but scaling the rows before the fit.
    """
    if n_clipped:
        warn_at_caller(
            f"some rows had an L2 norm above data_norm={data_norm:g} and were scaled down onto "
            "it. Clipping is a per-record step: the "
            "privacy guarantee is the same either way, only the rows the model learns from "
            "change. To decide how rows meet the bound, scale them before the estimator: "
            "dperm.preprocessing.PublicBoundsScaler with public feature bounds, then "
            f"RowNormalizer(data_norm={data_norm:g}, mode='scale'), which puts every row on the "
            "norm. A larger data_norm is not a fix: the noise grows with it.",
            DataClippingWarning,
        )


def check_random_state(random_state) -> np.random.Generator:
    """Return the numpy Generator a fit draws its privacy noise through.

    ``None`` (the default, and the only choice for a released model) gives an
    :class:`~dperm.randomness.OSEntropyGenerator`: the exact noise samplers take
    every bit from the operating system's CSPRNG (:func:`os.urandom`), directly.
    An integer or a Generator is a testing aid: the noise becomes a
    reproducible function of the seed, so anyone who knows it can subtract the
    noise. dperm never stores the generator on a fitted model.
    """
    if random_state is None:
        return OSEntropyGenerator()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    raise ValueError(
        "random_state must be None (the OS CSPRNG, for real use), an int or a "
        f"numpy Generator (reproducible, for testing only); got {random_state!r}."
    )


def append_intercept_feature(X, data_norm: float, intercept_scaling: float):
    """Append the constant feature ``intercept_scaling``; it counts toward the norm bound.

    Returns the augmented rows and the bound ``sqrt(data_norm^2 + intercept_scaling^2)``
    on their norm, which the calibration must use so that the guarantee
    covers the intercept (regularised like every other coefficient).
    """
    column = np.full((X.shape[0], 1), intercept_scaling)
    return np.hstack([X, column]), math.hypot(data_norm, intercept_scaling)


def clip_labels_to_bound(y, y_bound: float):
    """Clip labels into ``[-y_bound, y_bound]``; return the labels and how many changed.

    Like row clipping, this changes one record using only that record and a
    public bound, so it keeps the privacy guarantee (000 Sec. 2 and 002 assume
    ``|y| <= M``).
    """
    outside = np.abs(y) > y_bound
    n_clipped = int(np.count_nonzero(outside))
    if n_clipped:
        y = np.clip(y, -y_bound, y_bound)
    return y, n_clipped


def warn_clipped_labels(n_clipped: int, y_bound: float) -> None:
    """Issue a :class:`DataClippingWarning` if any label was clipped (without the count)."""
    if n_clipped:
        warn_at_caller(
            f"some labels were outside [-y_bound, y_bound] = [-{y_bound:g}, {y_bound:g}] and "
            "were clipped to it before fitting. Clipping is a per-record step: the privacy "
            "guarantee is the same either way, only the targets the model learns from change. "
            "y_bound should be a public bound on |y| (a published range), not one read from "
            "the data; a larger one adds noise.",
            DataClippingWarning,
        )


def is_dask_collection(obj) -> bool:
    """Whether ``obj`` is a Dask collection (array, DataFrame, Series, delayed).

    Checked through Dask's collection protocol (``__dask_graph__``), so dperm
    never imports Dask for in-memory data. Estimators route such input to
    :mod:`dperm.scale` instead of converting it (which would load it all).
    """
    return callable(getattr(obj, "__dask_graph__", None))


def refuse_dask_input(estimator, *arrays) -> None:
    """Raise a clear ``TypeError`` for Dask input to an estimator that cannot take it.

    Without this check scikit-learn's validation would call ``np.asarray`` on
    the collection and silently load the whole data set into memory.
    """
    if any(is_dask_collection(a) for a in arrays):
        raise TypeError(
            f"{type(estimator).__name__} does not accept Dask collections; it would load the "
            "whole data set into memory. At scale use PrivateLogisticRegression or "
            "PrivateLinearSVC(loss='huber' or 'smooth_hinge'), or call .compute() on data "
            "that fits in memory."
        )


def check_sample_weight(sample_weight, n_samples: int, estimator_name: str):
    """``sample_weight`` as a float array of shape ``(n_samples,)`` in ``[0, 1]``, or ``None``.

    A weight is part of its row: replace-one neighbours replace ``(x, y, w)`` together, and
    the mechanisms' sensitivity arguments hold because every weight is at most 1
    (paper note 15). A weight above 1, below 0 or not finite is
    refused with the first offending row, never clipped: clipping would change the
    objective the user asked for without saying so. Called before any budget is spent.
    """
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{estimator_name}: sample_weight must hold numbers in [0, 1]; got "
                         f"{type(sample_weight).__name__} that is not numeric. Nothing was spent.") from None
    if weights.ndim != 1 or weights.shape[0] != n_samples:
        raise ValueError(f"{estimator_name}: sample_weight must have shape ({n_samples},), one "
                         f"weight per row of X; got shape {weights.shape}. Nothing was spent.")
    bad = np.flatnonzero(~(np.isfinite(weights) & (weights >= 0.0) & (weights <= 1.0)))
    if bad.size:
        row = int(bad[0])
        raise ValueError(
            f"{estimator_name}: sample_weight[{row}] = {float(weights[row])!r} is outside [0, 1] "
            f"({bad.size} such row(s)); dperm's sensitivity bounds hold only for weights in "
            "[0, 1]: divide the weights by a public upper bound on them (not by their maximum, "
            "which is private). Nothing was spent.")
    return weights


def refuse_sample_weight(estimator, sample_weight, reason: str) -> None:
    """Raise a clear ``ValueError`` when ``sample_weight`` is given to a fit that cannot take it."""
    if sample_weight is not None:
        raise ValueError(f"{type(estimator).__name__} does not support sample_weight: {reason} "
                         "Fit without sample_weight. Nothing was spent.")
