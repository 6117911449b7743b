"""Worst-case neighbouring datasets for auditing regularised ERM.

The ERM mechanisms are calibrated to the L2 sensitivity ``2 L R / (n alpha)``
(003 Cor. 1; paper note 2), which a record replaced by its mirror can
attain. :func:`make_canary_pair` puts the canary on the norm bound along the
direction the other rows support least, with the label the model would not
predict, replaces its mirror ``(x_c, -y_c)``, and uses few rows in low
dimension with strong regularisation (``n alpha = STRONG_REGULARIZATION``).
Why each choice sharpens the audit: ``docs/design/audit.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression

from dperm.validation import check_positive, check_positive_int, check_random_state

#: ``n * alpha`` of the default audit problem: strong enough that ``|w.x_c|``
#: stays well inside the linear part of hinge-type losses at the thresholds an
#: audit uses, and that the other rows' curvature (<= c R^2 per row) is small.
STRONG_REGULARIZATION = 100.0
#: Smallest data set a canary pair is built for: the canary, its mirror's place
#: and at least one record of each label.
_MIN_CANARY_SAMPLES = 3
#: Norms of the other rows are drawn uniformly in [this * R, R].
_MIN_ROW_NORM_FRACTION = 0.25
#: Tolerance of the non-private reference fit (it only decides the canary's label).
_REFERENCE_TOL = 1e-10


def strong_alpha(n_samples: int) -> float:
    """``STRONG_REGULARIZATION / n``: the regularisation the audit builders use by default."""
    return STRONG_REGULARIZATION / check_positive_int(n_samples, "n_samples")


@dataclass(frozen=True)
class CanaryPair:
    """Two neighbouring datasets: ``D'`` is ``D`` with row ``index`` replaced by the canary.

    Attributes
    ----------
    X, y : ndarray
        ``D``: rows with ``||x_i|| <= data_norm``, labels in {-1, +1}; row ``index``
        is the canary's mirror ``(x_c, -y_c)``.
    X_prime, y_prime : ndarray
        ``D'``: the same rows with row ``index`` equal to the canary ``(x_c, y_c)``.
    canary_x : ndarray of shape (d,)
        ``x_c``, with ``||x_c|| = data_norm``.
    canary_y : float
        ``y_c`` in {-1, +1}: the label the reference model does not predict.
    index : int
    data_norm : float
    """

    X: np.ndarray
    y: np.ndarray
    X_prime: np.ndarray
    y_prime: np.ndarray
    canary_x: np.ndarray
    canary_y: float
    index: int
    data_norm: float

    @property
    def canary_direction(self) -> np.ndarray:
        """``y_c x_c``: the direction the canary pulls the minimiser (the margin statistic's axis)."""
        return self.canary_y * self.canary_x


def _augment(X, fit_intercept, intercept_scaling):
    if not fit_intercept:
        return X
    return np.hstack([X, np.full((X.shape[0], 1), intercept_scaling)])


def _least_support_direction(X) -> np.ndarray:
    """Unit eigenvector of the smallest eigenvalue of ``X^T X``: the direction with least data."""
    X = np.asarray(X, dtype=float)
    _, vectors = np.linalg.eigh(X.T @ X)
    direction = vectors[:, 0]
    return direction / np.linalg.norm(direction)


def make_canary_pair(n_samples: int = 20, n_features: int = 1, data_norm: float = 1.0, *,
                     alpha=None, fit_intercept: bool = False, intercept_scaling: float = 1.0,
                     random_state=None) -> CanaryPair:
    """Build ``D`` and ``D'`` that differ in one record, worst case for ERM (module docstring).

    Parameters
    ----------
    n_samples : int, default=20
        Rows in each dataset (replace-one neighbours have the same size).
    n_features : int, default=1
    data_norm : float, default=1.0
        The public row-norm bound ``R``; the canary sits on it.
    alpha : float, optional
        Regularisation of the reference model that decides the canary's label;
        default :func:`strong_alpha`.
    fit_intercept, intercept_scaling
        Whether the reference model (and the audited one) has an intercept.
    random_state : None, int or numpy Generator
        Draws the other ``n - 1`` rows: random directions, norms uniform in
        ``[_MIN_ROW_NORM_FRACTION R, R]``, labels balanced.

    Returns
    -------
    CanaryPair
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    if n_samples < _MIN_CANARY_SAMPLES:
        raise ValueError(
            f"n_samples must be >= {_MIN_CANARY_SAMPLES} for a canary pair (the canary and "
            f"both labels among the other rows); got {n_samples}."
        )
    n_features = check_positive_int(n_features, "n_features")
    data_norm = check_positive(data_norm, "data_norm", "data_norm is the public row-norm bound.")
    alpha = strong_alpha(n_samples) if alpha is None else check_positive(alpha, "alpha")
    rng = check_random_state(random_state)
    n_other = n_samples - 1
    directions = rng.standard_normal((n_other, n_features))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    norms = data_norm * rng.uniform(_MIN_ROW_NORM_FRACTION, 1.0, n_other)
    others_X = directions * norms[:, None]
    others_y = rng.permutation(np.where(np.arange(n_other) % 2 == 0, 1.0, -1.0))

    canary_x = data_norm * _least_support_direction(others_X)
    # The label the model trained without the canary does not predict. The reference
    # is non-private logistic regression whatever the audited loss: it only decides a
    # sign, and under strong regularisation every margin loss gives
    # w ~ -(1/(n alpha)) sum y_i x_i loss'(0). scikit-learn's objective
    # C sum loss + ||w||^2 / 2 is n C times (1/n) sum loss + alpha/2 ||w||^2 when
    # C = 1 / (n alpha); the intercept is a regularised constant feature, as in dperm.
    reference = LogisticRegression(C=1.0 / (n_other * alpha), fit_intercept=False,
                                   tol=_REFERENCE_TOL)
    reference.fit(_augment(others_X, fit_intercept, intercept_scaling), others_y)
    canary_aug = _augment(canary_x[None, :], fit_intercept, intercept_scaling)
    canary_margin = float(reference.decision_function(canary_aug)[0])
    canary_y = -1.0 if canary_margin > 0 else 1.0

    index = n_other
    X = np.vstack([others_X, canary_x])
    y = np.append(others_y, -canary_y)
    y_prime = np.append(others_y, canary_y)
    return CanaryPair(X=X, y=y, X_prime=X.copy(), y_prime=y_prime, canary_x=canary_x,
                      canary_y=canary_y, index=index, data_norm=data_norm)


__all__ = ["CanaryPair", "STRONG_REGULARIZATION", "make_canary_pair",
           "strong_alpha"]
