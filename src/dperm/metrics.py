"""Private evaluation: scores of a published model on private held-out rows, each with its epsilon.

A model fitted with dperm may be published; ``model.score(X_test, y_test)`` on
private test rows may not: it is an exact statistic of private data, covered by
no guarantee. The functions here release the same scores through the Laplace
mechanism (exact integer noise, float-safe: see
:mod:`dperm.privacy.evaluation` for each statistic's sensitivity), charge
``epsilon`` to an optional accountant before any noise is drawn, and return
the score with its privacy record (``.privacy_``).

The names follow :mod:`sklearn.metrics` and :mod:`sklearn.model_selection`:

- :func:`accuracy_score`, :func:`confusion_matrix`, :func:`calibration_summary`
  (classification; the label set is public);
- :func:`r2_score`, :func:`mean_squared_error`, :func:`root_mean_squared_error`
  (regression; the target range ``y_bounds = (lower, upper)`` is public);
- :func:`cross_val_score`: k-fold cross-validation of a private estimator
  under one stated budget, split explicitly between the fits and the scores.

The held-out rows are the private input; the model (or its predictions'
function) must be public, e.g. a model released by a private fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dperm.exceptions import DataClippingWarning, warn_at_caller
from dperm.mechanisms.noise import discrete_laplace_calibration, release_on_grid, sample_discrete_laplace
from dperm.privacy.accounting import check_accountant, check_budget_left, spend_before_fitting
from dperm.privacy.evaluation import (
    COUNT_SENSITIVITY,
    HISTOGRAM_SENSITIVITY,
    RELIABILITY_SENSITIVITY,
    EvaluationPrivacyRecord,
    squared_error_sensitivity,
    target_radius,
    target_square_sensitivity,
    target_sum_sensitivity,
)
from dperm.privacy.labels import check_classes
from dperm.validation import check_delta, check_epsilon, check_positive_int, check_random_state

__all__ = [
    "PrivateScore",
    "PrivateTable",
    "accuracy_score",
    "calibration_summary",
    "confusion_matrix",
    "cross_val_score",
    "mean_squared_error",
    "r2_score",
    "root_mean_squared_error",
]

#: ``r2_score``'s split of epsilon over ``sum (y - yhat)^2``, ``sum (y - m)^2`` and ``sum (y - m)``,
#: fixed in advance from public constants. ``Delta_1 / e_1 + Delta_2 / e_2`` with ``e_1 + e_2``
#: fixed is smallest at ``e_i`` proportional to ``sqrt(Delta_i)``: sensitivities ``4 r^2`` and
#: ``r^2`` give 2 : 1. The third sum enters ``SST`` only through ``(sum (y - m))^2 / n`` and
#: gets the same share as the second.
_R2_EPSILON_SHARES = (0.5, 0.25, 0.25)


class PrivateScore(float):
    """A released score: a float, with the record of how it was released in ``privacy_``."""

    privacy_: EvaluationPrivacyRecord

    def __new__(cls, value: float, record: EvaluationPrivacyRecord):
        score = super().__new__(cls, value)
        score.privacy_ = record
        return score

    def __str__(self) -> str:
        return float.__repr__(self)

    def __repr__(self) -> str:
        return f"PrivateScore({float(self)!r}, {self.privacy_.summary()!r})"


@dataclass(frozen=True)
class PrivateTable:
    """A released table (confusion matrix, reliability table, per-fold scores) and its record.

    Attributes
    ----------
    values : ndarray
        The released values, computed from noised statistics only.
    privacy_ : EvaluationPrivacyRecord
    columns : dict of str to ndarray
        Named columns of a table (e.g. a reliability table's bins), else empty.
    """

    values: np.ndarray
    privacy_: EvaluationPrivacyRecord
    columns: dict

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)


# ---------------------------------------------------------------------------
# checks (before any budget is spent)
# ---------------------------------------------------------------------------
def _paired(y_true, y_pred, name_pred="y_pred"):
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.ndim != 1 or y_pred.ndim != 1:
        raise ValueError(f"y_true and {name_pred} must be one-dimensional; got shapes "
                         f"{y_true.shape} and {y_pred.shape}.")
    if y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(f"y_true has {y_true.shape[0]} rows and {name_pred} {y_pred.shape[0]}; "
                         "give one prediction per held-out row.")
    if y_true.shape[0] == 0:
        raise ValueError("y_true is empty; a private score needs at least one held-out row.")
    return y_true, y_pred


def _checked_labels(labels, *arrays, n_classes=None):
    labels = check_classes(labels, name="labels", n_classes=n_classes)
    if labels is None:
        raise ValueError("labels is required: pass the public label set, e.g. labels=['no', 'yes'] "
                         "(reading it from private rows would release it).")
    for name, values in arrays:
        outside = np.unique(values[~np.isin(values, labels)])
        if outside.size:
            raise ValueError(f"{name} has label {outside[0]!r} not in labels={labels.tolist()}; "
                             "add it to labels (the public label set).")
    return labels


def _checked_bounds(y_bounds):
    try:
        lower, upper = (float(v) for v in y_bounds)
    except (TypeError, ValueError):
        raise ValueError(f"y_bounds must be a pair (lower, upper) of public numbers; got {y_bounds!r}.") from None
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise ValueError(f"y_bounds must be finite with lower < upper; got {y_bounds!r}.")
    return lower, upper


def _clipped_to_bounds(values, bounds, name):
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} has a value that is not a finite number; remove or impute it "
                         "before scoring.")
    lower, upper = bounds
    if np.any((values < lower) | (values > upper)):
        warn_at_caller(
            f"some values of {name} were outside y_bounds = ({lower:g}, {upper:g}) and were clipped "
            "to it before scoring; the guarantee holds either way (a per-row step), but the score "
            "is then the clipped data's.", DataClippingWarning)
        values = np.clip(values, lower, upper)
    return values


def _start(epsilon, accountant, random_state, label):
    """Check epsilon and the accountant; spend; return the noise's generator. Last step before noise."""
    epsilon = check_epsilon(epsilon)
    check_accountant(accountant)
    rng = check_random_state(random_state)
    check_budget_left(accountant, epsilon, 0.0, label)
    spend_before_fitting(accountant, epsilon, 0.0, label)
    return epsilon, rng


# ---------------------------------------------------------------------------
# the statistics (exact, private: released only through the noise below)
# ---------------------------------------------------------------------------
def correct_count(y_true, y_pred) -> int:
    """The number of rows with ``y_pred == y_true`` (sensitivity 1)."""
    return int(np.count_nonzero(np.asarray(y_true) == np.asarray(y_pred)))


def confusion_counts(y_true, y_pred, labels) -> np.ndarray:
    """Rows per (true label, predicted label) cell, labels in the order of ``labels`` (L1 sensitivity 2)."""
    k = len(labels)
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(counts, (np.searchsorted(labels, y_true), np.searchsorted(labels, y_pred)), 1)
    return counts


def reliability_counts(positive, y_prob, n_bins: int) -> np.ndarray:
    """Rows per probability bin, then positives per bin (one vector, L1 sensitivity 4)."""
    bins = np.minimum((np.asarray(y_prob) * n_bins).astype(np.int64), n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins)
    positives = np.bincount(bins, weights=np.asarray(positive, dtype=np.float64), minlength=n_bins)
    return np.concatenate([counts, positives.astype(np.int64)])


def regression_sums(y_true, y_pred, bounds) -> tuple[float, float, float]:
    """``sum (y - yhat)^2``, ``sum (y - m)^2`` and ``sum (y - m)`` for values inside ``bounds``."""
    centre, _ = target_radius(bounds)
    centred = np.asarray(y_true, dtype=np.float64) - centre
    errors = np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64)
    return float(np.sum(errors**2)), float(np.sum(centred**2)), float(np.sum(centred))


# ---------------------------------------------------------------------------
# the two noise primitives
# ---------------------------------------------------------------------------
def _noisy_counts(counts, l1_sensitivity: int, epsilon: float, rng) -> np.ndarray:
    """Integer counts plus discrete Laplace noise of scale ``l1_sensitivity / epsilon`` (exact)."""
    scale = Fraction(l1_sensitivity) / Fraction(epsilon)
    flat = [int(c) + sample_discrete_laplace(scale, rng) for c in np.ravel(counts)]
    return np.array(flat, dtype=np.int64).reshape(np.shape(counts))


def _noisy_sum(value: float, sensitivity: float, epsilon: float, value_bound: float, rng):
    """A real statistic released on dperm's grid with exact discrete Laplace noise; and its scale."""
    calibration = discrete_laplace_calibration(sensitivity, 1, epsilon, value_bound=value_bound)
    released = release_on_grid(np.array([value]), calibration, rng)
    return float(released[0]), calibration.noise_scale


def _record(metric, epsilon, n, statistics, sensitivities, epsilons, scales, value, **public):
    return EvaluationPrivacyRecord(
        metric=metric, epsilon=float(epsilon), delta=0.0, n_samples=int(n),
        statistics=tuple(statistics), sensitivities=tuple(float(s) for s in sensitivities),
        epsilons=tuple(float(e) for e in epsilons), noise_scales=tuple(float(s) for s in scales),
        noise_distribution="discrete-laplace", value=value, **public)


# ---------------------------------------------------------------------------
# classification
# ---------------------------------------------------------------------------
def accuracy_score(y_true, y_pred, *, epsilon, accountant=None, random_state=None) -> PrivateScore:
    """The fraction of correct predictions on private held-out rows, epsilon-DP.

    Releases the number of correct predictions ``c`` plus discrete Laplace
    noise of scale ``1 / epsilon`` (one row changes ``c`` by at most 1; ``n`` is
    public), and returns ``min(max(c + Z, 0), n) / n``. The noise's standard
    deviation on the accuracy is ``sqrt(2) / (n epsilon)``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        The private held-out labels.
    y_pred : array-like of shape (n_samples,)
        A public model's predictions on the held-out rows.
    epsilon : float
        The score's privacy budget (> 0).
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, 0)`` before any noise is drawn.
    random_state : None, int or Generator
        ``None`` (the OS CSPRNG) for real use; a seed for tests only.

    Returns
    -------
    PrivateScore
        A float with the record in ``.privacy_``.
    """
    y_true, y_pred = _paired(y_true, y_pred)
    epsilon, rng = _start(epsilon, accountant, random_state, "accuracy_score")
    n = y_true.shape[0]
    correct = correct_count(y_true, y_pred)
    noisy = int(_noisy_counts([correct], COUNT_SENSITIVITY, epsilon, rng)[0])
    value = min(max(noisy, 0), n) / n
    record = _record("accuracy", epsilon, n, ("number of correct predictions",), (COUNT_SENSITIVITY,),
                     (epsilon,), (COUNT_SENSITIVITY / epsilon,), value)
    return PrivateScore(value, record)


def confusion_matrix(y_true, y_pred, *, labels, epsilon, accountant=None, random_state=None) -> PrivateTable:
    """The confusion matrix of private held-out rows (rows: true label, columns: predicted), epsilon-DP.

    Every cell gets discrete Laplace noise of scale ``2 / epsilon`` (one row
    leaves one cell and enters another: L1 sensitivity 2); negative released
    counts are set to 0 (post-processing).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
    labels : sequence
        The public label set, in the order of the matrix's rows and columns
        (sorted like :func:`numpy.unique`). Required.
    epsilon, accountant, random_state
        As in :func:`accuracy_score`.

    Returns
    -------
    PrivateTable
        ``values`` of shape (n_labels, n_labels), integers.
    """
    y_true, y_pred = _paired(y_true, y_pred)
    labels = _checked_labels(labels, ("y_true", y_true), ("y_pred", y_pred))
    epsilon, rng = _start(epsilon, accountant, random_state, "confusion_matrix")
    counts = confusion_counts(y_true, y_pred, labels)
    noisy = np.maximum(_noisy_counts(counts, HISTOGRAM_SENSITIVITY, epsilon, rng), 0)
    record = _record("confusion_matrix", epsilon, y_true.shape[0], ("confusion matrix counts",),
                     (HISTOGRAM_SENSITIVITY,), (epsilon,), (HISTOGRAM_SENSITIVITY / epsilon,),
                     tuple(tuple(int(v) for v in row) for row in noisy), labels=tuple(labels.tolist()))
    return PrivateTable(noisy, record, {})


def calibration_summary(y_true, y_prob, *, labels, epsilon, n_bins=10, accountant=None,
                        random_state=None) -> PrivateTable:
    """A reliability table of a binary classifier's probabilities on private rows, epsilon-DP.

    The public bins split ``[0, 1]`` into ``n_bins`` equal parts. Released: the
    number of rows per bin and of positives per bin, with discrete Laplace
    noise of scale ``4 / epsilon`` per cell (one row moves between two bins in
    both vectors: L1 sensitivity 4). Derived: each bin's observed positive rate
    ``clip(positives, 0, rows) / rows`` (NaN where the released count is < 1),
    and the expected calibration error against the bins' midpoints,
    ``sum_b rows_b |rate_b - mid_b| / sum_b rows_b`` over bins with a rate.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        The private held-out labels.
    y_prob : array-like of shape (n_samples,)
        The public model's probability of ``labels[1]`` (e.g. ``predict_proba(X)[:, 1]``);
        values outside [0, 1] are refused.
    labels : sequence of two labels
        The public label set; the positive class is the second after sorting.
    epsilon, accountant, random_state
        As in :func:`accuracy_score`.
    n_bins : int

    Returns
    -------
    PrivateTable
        ``values``: the expected calibration error (a 0-d array); ``columns``:
        ``bin_lower``, ``bin_upper``, ``midpoint``, ``count``, ``positives``, ``rate``.
    """
    y_true, y_prob = _paired(y_true, y_prob, "y_prob")
    labels = _checked_labels(labels, ("y_true", y_true), n_classes=2)
    n_bins = check_positive_int(n_bins, "n_bins")
    y_prob = np.asarray(y_prob, dtype=np.float64)
    if not np.all(np.isfinite(y_prob)) or np.any((y_prob < 0) | (y_prob > 1)):
        raise ValueError("y_prob must hold probabilities in [0, 1], e.g. predict_proba(X)[:, 1].")
    epsilon, rng = _start(epsilon, accountant, random_state, "calibration_summary")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    noisy = _noisy_counts(reliability_counts(y_true == labels[1], y_prob, n_bins), RELIABILITY_SENSITIVITY,
                          epsilon, rng)
    count, positive = np.maximum(noisy[:n_bins], 0), noisy[n_bins:]
    rate, ece = _reliability(count, positive, (edges[:-1] + edges[1:]) / 2)
    columns = {"bin_lower": edges[:-1], "bin_upper": edges[1:], "midpoint": (edges[:-1] + edges[1:]) / 2,
               "count": count, "positives": np.clip(positive, 0, count), "rate": rate}
    record = _record("calibration_summary", epsilon, y_true.shape[0], ("rows per bin", "positives per bin"),
                     (RELIABILITY_SENSITIVITY,), (epsilon,), (RELIABILITY_SENSITIVITY / epsilon,),
                     float(ece), labels=tuple(labels.tolist()))
    return PrivateTable(np.asarray(ece), record, columns)


def _reliability(count, positive, midpoint):
    """Each bin's released positive rate and the expected calibration error (post-processing)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(count >= 1, np.clip(positive, 0, count) / np.maximum(count, 1), np.nan)
    has = count >= 1
    if not np.any(has):
        return rate, math.nan
    ece = float(np.sum(count[has] * np.abs(rate[has] - midpoint[has])) / np.sum(count[has]))
    return rate, ece


# ---------------------------------------------------------------------------
# regression
# ---------------------------------------------------------------------------
def _squared_error(y_true, y_pred, bounds, epsilon, rng):
    """The released ``sum (y - yhat)^2``, its sensitivity and noise scale."""
    _, radius = target_radius(bounds)
    sensitivity = squared_error_sensitivity(radius)
    sse = regression_sums(y_true, y_pred, bounds)[0]
    noisy, scale = _noisy_sum(sse, sensitivity, epsilon, y_true.shape[0] * sensitivity, rng)
    return max(noisy, 0.0), sensitivity, scale


def _regression_inputs(y_true, y_pred, y_bounds):
    y_true, y_pred = _paired(y_true, y_pred)
    bounds = _checked_bounds(y_bounds)
    return _clipped_to_bounds(y_true, bounds, "y_true"), _clipped_to_bounds(y_pred, bounds, "y_pred"), bounds


def mean_squared_error(y_true, y_pred, *, y_bounds, epsilon, accountant=None, random_state=None) -> PrivateScore:
    """The mean squared error on private held-out rows, epsilon-DP.

    With targets and predictions clipped into the public ``y_bounds = (lower,
    upper)``, one row changes ``sum (y - yhat)^2`` by at most ``(upper -
    lower)^2``; that sum is released with discrete Laplace noise on dperm's grid
    and divided by the public ``n``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        The private held-out targets.
    y_pred : array-like of shape (n_samples,)
        A public model's predictions.
    y_bounds : (float, float)
        The public target range; values outside it are clipped (warned).
    epsilon, accountant, random_state
        As in :func:`accuracy_score`.

    Returns
    -------
    PrivateScore
    """
    y_true, y_pred, bounds = _regression_inputs(y_true, y_pred, y_bounds)
    epsilon, rng = _start(epsilon, accountant, random_state, "mean_squared_error")
    sse, sensitivity, scale = _squared_error(y_true, y_pred, bounds, epsilon, rng)
    value = sse / y_true.shape[0]
    record = _record("mean_squared_error", epsilon, y_true.shape[0], ("sum of squared errors",),
                     (sensitivity,), (epsilon,), (scale,), value, y_bounds=bounds)
    return PrivateScore(value, record)


def root_mean_squared_error(y_true, y_pred, *, y_bounds, epsilon, accountant=None,
                            random_state=None) -> PrivateScore:
    """``sqrt`` of :func:`mean_squared_error` (post-processing: the same guarantee)."""
    mse = mean_squared_error(y_true, y_pred, y_bounds=y_bounds, epsilon=epsilon, accountant=accountant,
                             random_state=random_state)
    value = math.sqrt(float(mse))
    record = EvaluationPrivacyRecord.from_dict({**mse.privacy_.to_dict(), "metric": "root_mean_squared_error",
                                                "value": value})
    return PrivateScore(value, record)


def r2_score(y_true, y_pred, *, y_bounds, epsilon, accountant=None, random_state=None) -> PrivateScore:
    """The coefficient of determination on private held-out rows, epsilon-DP.

    ``R^2 = 1 - SSE / SST`` with ``SST = sum (y - m)^2 - (sum (y - m))^2 / n``
    (``m`` the centre of the public ``y_bounds``). The three sums are released
    with discrete Laplace noise, with shares :data:`_R2_EPSILON_SHARES` of
    ``epsilon`` (basic composition); their sensitivities are ``(upper -
    lower)^2``, ``r^2`` and ``2r`` (:mod:`dperm.privacy.evaluation`). If the
    released ``SST`` is not positive (noise larger than the targets' spread)
    the score is NaN.

    Parameters
    ----------
    y_true, y_pred, y_bounds, epsilon, accountant, random_state
        As in :func:`mean_squared_error`.

    Returns
    -------
    PrivateScore
    """
    y_true, y_pred, bounds = _regression_inputs(y_true, y_pred, y_bounds)
    epsilon, rng = _start(epsilon, accountant, random_state, "r2_score")
    n = y_true.shape[0]
    centre, radius = target_radius(bounds)
    shares = [share * epsilon for share in _R2_EPSILON_SHARES]
    sse, s_sse, scale_sse = _squared_error(y_true, y_pred, bounds, shares[0], rng)
    _, sum_square, sum_centred = regression_sums(y_true, y_pred, bounds)
    s_sq, s_sum = target_square_sensitivity(radius), target_sum_sensitivity(radius)
    square, scale_sq = _noisy_sum(sum_square, s_sq, shares[1], n * s_sq, rng)
    total, scale_sum = _noisy_sum(sum_centred, s_sum, shares[2], n * radius, rng)
    sst = square - total * total / n
    value = 1.0 - sse / sst if sst > 0 else math.nan
    record = _record("r2", epsilon, n, ("sum of squared errors", "sum of squared centred targets",
                                        "sum of centred targets"), (s_sse, s_sq, s_sum), shares,
                     (scale_sse, scale_sq, scale_sum), value, y_bounds=bounds)
    return PrivateScore(value, record)


# ---------------------------------------------------------------------------
# cross-validation under one budget
# ---------------------------------------------------------------------------
#: scoring name -> (score function, sign): scikit-learn's convention that greater is better.
_SCORERS = {
    "accuracy": (lambda y, p, eps, bounds, rng: accuracy_score(y, p, epsilon=eps, random_state=rng), 1.0),
    "r2": (lambda y, p, eps, bounds, rng: r2_score(y, p, y_bounds=bounds, epsilon=eps, random_state=rng), 1.0),
    "neg_mean_squared_error": (lambda y, p, eps, bounds, rng: mean_squared_error(
        y, p, y_bounds=bounds, epsilon=eps, random_state=rng), -1.0),
}


def _fold_budget(estimator, epsilon, delta, cv, score_share):
    params = estimator.get_params(deep=False)
    if "epsilon" not in params:
        raise ValueError(f"{type(estimator).__name__} has no epsilon parameter; cross_val_score needs a "
                         "private dperm estimator.")
    if delta > 0 and "delta" not in params:
        raise ValueError(f"{type(estimator).__name__} takes no delta; use delta=0.")
    fits = cv - 1
    return (1.0 - score_share) * epsilon / fits, delta / fits


def cross_val_score(estimator, X, y, *, epsilon, delta=0.0, cv=5, scoring="accuracy", score_share=0.2,
                    y_bounds=None, accountant=None, random_state=None) -> PrivateTable:
    """k-fold cross-validation of a private estimator under one stated ``(epsilon, delta)``.

    The rows are split into ``cv`` folds by a random permutation that does not
    look at the data (fold sizes depend on the public ``n`` only). Each row is
    in the training part of ``cv - 1`` fits and in one fold's scoring, so by
    basic composition the whole run, all scores released, is
    ``(epsilon, delta)``-DP when each fit gets ``((1 - score_share) epsilon /
    (cv - 1), delta / (cv - 1))`` and each fold's score ``score_share *
    epsilon`` (the folds' scores are on disjoint rows: parallel composition).
    The fitted models are not returned (only the scores are released).

    Parameters
    ----------
    estimator : a dperm private estimator
        Cloned for every fold; its ``epsilon`` (and ``delta``) are replaced by
        the fold's share and its ``accountant`` by ``None`` (the total is
        charged here once).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    epsilon : float
        The total budget of the cross-validation.
    delta : float, default 0
        The total delta, split over the fits.
    cv : int, default 5
        The number of folds (>= 2).
    scoring : {"accuracy", "r2", "neg_mean_squared_error"}
    score_share : float in (0, 1), default 0.2
        The share of ``epsilon`` spent on the scores.
    y_bounds : (float, float), optional
        The public target range (required for regression scores).
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, delta)`` once, before any fit.
    random_state : None, int or Generator
        ``None`` for real use; a seed for tests only (the fold split, the fits'
        noise and the scores' noise all come from it).

    Returns
    -------
    PrivateTable
        ``values``: one released score per fold.
    """
    from sklearn.base import clone

    if scoring not in _SCORERS:
        raise ValueError(f"scoring must be one of {sorted(_SCORERS)}; got {scoring!r}.")
    if scoring != "accuracy" and y_bounds is None:
        raise ValueError(f"scoring={scoring!r} needs y_bounds=(lower, upper), the public target range.")
    if not (isinstance(score_share, float | int) and 0 < score_share < 1):
        raise ValueError(f"score_share must be a number in (0, 1); got {score_share!r}.")
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    cv = check_positive_int(cv, "cv")
    if cv < 2:
        raise ValueError(f"cv must be at least 2; got {cv}.")
    X, y = np.asarray(X), np.asarray(y)
    n = y.shape[0]
    if X.shape[0] != n or n < cv:
        raise ValueError(f"X has {X.shape[0]} rows and y {n}; cross_val_score needs equal lengths and "
                         f"at least cv={cv} rows.")
    fit_epsilon, fit_delta = _fold_budget(estimator, epsilon, delta, cv, score_share)
    rng = check_random_state(random_state)
    check_accountant(accountant)
    check_budget_left(accountant, epsilon, delta, "cross_val_score")
    spend_before_fitting(accountant, epsilon, delta, "cross_val_score")
    folds = np.array_split(rng.permutation(n), cv)
    scores, first = [], None
    for k, test in enumerate(folds):
        train = np.concatenate([f for j, f in enumerate(folds) if j != k])
        model = clone(estimator).set_params(epsilon=fit_epsilon, accountant=None, random_state=rng,
                                            **({"delta": fit_delta} if "delta" in estimator.get_params() else {}))
        model.fit(X[train], y[train])
        score_function, sign = _SCORERS[scoring]
        score = score_function(y[test], model.predict(X[test]), score_share * epsilon, y_bounds, rng)
        scores.append(sign * float(score))
        first = first or score.privacy_
    fits = (f"{cv} fits of {type(estimator).__name__}, each at ({fit_epsilon:g}, {fit_delta:g}); every row "
            f"is in {cv - 1} of them: ({fit_epsilon * (cv - 1):g}, {delta:g}) by basic composition")
    record = EvaluationPrivacyRecord(
        metric=f"cross_val_{scoring}", epsilon=epsilon, delta=delta, n_samples=n,
        statistics=tuple(f"score: {s}" for s in first.statistics), sensitivities=first.sensitivities,
        epsilons=first.epsilons, noise_scales=first.noise_scales, noise_distribution="discrete-laplace",
        value=tuple(scores), y_bounds=None if y_bounds is None else tuple(float(v) for v in y_bounds), fits=fits)
    return PrivateTable(np.array(scores), record, {})
