"""Predict with a fitted linear classifier on Dask collections: only public numbers travel.

A fitted estimator may hold a :class:`~dperm.BudgetAccountant`, which refuses to
be pickled (an unpickled copy would be a second budget), and a scheduler or a
client. None of that is needed to predict: the released coefficients,
intercepts and classes are. :class:`PublicLinearScores` is that public part,
and it alone is sent to the workers (issue 31, finding 8: on a
``distributed.Client`` the whole estimator used to travel, and a model with an
accountant raised "a BudgetAccountant cannot be pickled").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_array, check_is_fitted


@dataclass(frozen=True)
class PublicLinearScores:
    """The released part of a fitted linear classifier, and its predictions.

    Computes exactly what scikit-learn's ``LinearClassifierMixin`` computes in
    memory (``X @ coef.T + intercept``; the sign or the arg-max picks the class),
    so a chunk's predictions equal the in-memory ones.

    Attributes
    ----------
    coef : ndarray of shape (n_problems, n_features)
    intercept : ndarray of shape (n_problems,)
    classes : ndarray of shape (n_classes,)
    """

    coef: np.ndarray
    intercept: np.ndarray
    classes: np.ndarray

    @classmethod
    def of(cls, estimator):
        """The public coefficients of a fitted ``estimator`` (``NotFittedError`` if it is not)."""
        check_is_fitted(estimator, ("coef_", "intercept_", "classes_"))
        return cls(np.array(estimator.coef_, dtype=float),
                   np.array(estimator.intercept_, dtype=float),
                   np.array(estimator.classes_))

    @property
    def n_features(self):
        return self.coef.shape[1]

    def decision_function(self, X):
        X = check_array(X, accept_sparse="csr", dtype=(np.float64, np.float32))
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the model is expecting "
                             f"{self.n_features} features as input.")
        scores = safe_sparse_dot(X, self.coef.T, dense_output=True) + self.intercept
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        scores = self.decision_function(X)
        indices = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes[indices]

    def predict_proba(self, X):
        """scikit-learn's one-vs-rest logistic probabilities (``_predict_proba_lr``)."""
        from scipy.special import expit

        prob = expit(self.decision_function(X))
        if prob.ndim == 1:
            return np.vstack([1 - prob, prob]).T
        return prob / prob.sum(axis=1).reshape((prob.shape[0], -1))


def _rows_array(X):
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(X, dd.DataFrame):
        X = X.to_dask_array()
    if not isinstance(X, da.Array) or X.ndim != 2:
        raise TypeError(
            "with Dask input, X must be a 2-d dask.array.Array or a dask.dataframe.DataFrame; "
            f"got {type(X).__name__}."
        )
    return X.rechunk({1: -1}) if X.numblocks[1] > 1 else X


def _call(block, scores, method):
    if block.shape[0] == 0:  # scikit-learn refuses empty input; an empty chunk has no rows
        n_classes = scores.classes.size
        if method == "predict":
            return np.empty(0, dtype=scores.classes.dtype)
        if method == "decision_function" and scores.coef.shape[0] == 1:
            return np.empty(0)
        return np.empty((0, n_classes))
    return getattr(scores, method)(block)


def predict_blockwise(estimator, X, method):
    """Apply ``<method>`` to each row chunk of a Dask X, lazily, shipping only public numbers.

    ``method`` is ``"decision_function"``, ``"predict"`` or ``"predict_proba"``.
    The workers receive :class:`PublicLinearScores` (coefficients, intercepts,
    classes), never the estimator, its accountant or its scheduler.

    Returns a Dask array: 1-d for ``predict`` and binary ``decision_function``,
    ``(n, n_classes)`` for ``predict_proba`` and multiclass scores.
    """
    scores = PublicLinearScores.of(estimator)
    X = _rows_array(X)
    if not np.isnan(X.shape[1]) and X.shape[1] != scores.n_features:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
                         f"expecting {scores.n_features} features as input.")
    n_classes = scores.classes.size
    one_column = method == "predict" or (method == "decision_function"
                                          and scores.coef.shape[0] == 1)
    dtype = scores.classes.dtype if method == "predict" else np.float64
    if one_column:
        return X.map_blocks(_call, scores, method, dtype=dtype, drop_axis=1)
    return X.map_blocks(_call, scores, method, dtype=dtype,
                        chunks=(X.chunks[0], (n_classes,)))


def score_distributed(estimator, X, y):
    """Mean accuracy on Dask X and y, computed chunk by chunk."""
    import dask.array as da

    predictions = predict_blockwise(estimator, X, "predict")
    pairs_y = y.to_dask_array() if hasattr(y, "to_dask_array") else y
    if not isinstance(pairs_y, da.Array):
        pairs_y = da.from_array(np.asarray(y), chunks=predictions.chunks)
    elif pairs_y.chunks != predictions.chunks:
        pairs_y = pairs_y.rechunk(predictions.chunks)
    return float((predictions == pairs_y).mean().compute())


__all__ = ["PublicLinearScores", "predict_blockwise", "score_distributed"]
