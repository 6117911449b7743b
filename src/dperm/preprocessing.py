"""Transformers with public bounds: preprocessing steps that keep a privacy guarantee.

* :class:`PublicBoundsScaler` maps each feature to [0, 1] with public
  ``(lower, upper)`` bounds, clipping values outside them;
* :class:`PublicOneHotEncoder` one-hot encodes with public category lists;
* :class:`RowNormalizer` clips (or rescales) each row to a public norm bound.

Each changes one record using only that record and public constants, so a
differentially private learner that follows keeps its guarantee. They replace
the data-dependent column maxima of Chaudhuri et al. (2011), Sec. 7.1 (paper
note 9). The per-record formulas here (:func:`clip_to_bounds`,
:func:`scale_to_unit_interval`, :func:`normalize_rows`) are also what
:class:`dperm.tabular.TabularSpec` applies to a whole table. See
``docs/design/tabular.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from dperm.exceptions import DataClippingWarning, PrivacyLeakWarning, warn_at_caller
from dperm.privacy.fallback import RECIPE_INTERCEPT_SCALING
from dperm.validation import clip_rows_to_norm

__all__ = [
    "PublicBoundsScaler",
    "PublicOneHotEncoder",
    "RowNormalizer",
    "clip_to_bounds",
    "join_feature_category",
    "normalize_rows",
    "scale_to_unit_interval",
    "warn_clipped_values",
]

#: Row steps of :class:`RowNormalizer`.
_ROW_NORMALIZER_MODES = ("clip", "scale")


# --------------------------------------------------------------------------------------
# Shared per-record steps (one owner for each formula)
# --------------------------------------------------------------------------------------


def _check_bounds(bounds, n_features: int, feature_labels: Sequence[str]):
    """Return ``(lower, upper)`` as float arrays of length ``n_features``.

    Raises ValueError naming the problem: wrong shape, NaN/inf, or upper <= lower.
    """
    if isinstance(bounds, np.ndarray) and bounds.ndim >= 1:
        bounds = tuple(bounds)
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(
            "bounds must be a pair (lower, upper) of scalars or per-feature arrays of "
            f"public bounds; got {bounds!r}."
        )
    arrays = []
    for side, value in zip(("lower", "upper"), bounds):
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"bounds {side} must be numeric; got {value!r}.") from None
        if array.ndim == 0:
            array = np.full(n_features, float(array))
        if array.ndim != 1 or array.shape[0] != n_features:
            raise ValueError(
                f"bounds {side} has shape {np.shape(value)} but X has {n_features} "
                "features; give a scalar or one public bound per feature."
            )
        bad = ~np.isfinite(array)
        if bad.any():
            raise ValueError(
                f"bounds {side} must be finite; feature {feature_labels[np.argmax(bad)]!r} "
                f"has {array[np.argmax(bad)]!r}."
            )
        arrays.append(array)
    lower, upper = arrays
    inverted = upper <= lower
    if inverted.any():
        i = int(np.argmax(inverted))
        raise ValueError(
            f"bounds for feature {feature_labels[i]!r} must satisfy lower < upper; got "
            f"lower={lower[i]!r}, upper={upper[i]!r}."
        )
    return lower, upper


def clip_to_bounds(X, lower, upper, *, clip: bool, feature_labels: Sequence[str]):
    """Clip ``X`` (2-D) to ``[lower, upper]`` column-wise; count clipped values.

    With ``clip=False`` an out-of-bounds value raises ValueError naming the feature.
    """
    outside = (X < lower) | (X > upper)
    n_clipped = np.count_nonzero(outside, axis=0)
    if not clip and n_clipped.any():
        i = int(np.argmax(n_clipped > 0))
        raise ValueError(
            f"feature {feature_labels[i]!r} has {int(n_clipped[i])} value(s) outside its "
            f"public bounds [{lower[i]:g}, {upper[i]:g}]; widen the bounds or set "
            "clip=True to clip them (a per-record step that keeps privacy)."
        )
    if n_clipped.any():
        X = np.clip(X, lower, upper)
    return X, n_clipped


def scale_to_unit_interval(X, lower, upper):
    """Map ``[lower, upper]`` to ``[0, 1]`` column-wise: ``(x - lower) / (upper - lower)``."""
    return (X - lower) / (upper - lower)


def warn_clipped_values(n_clipped, feature_labels: Sequence[str], n_rows: int) -> None:
    """Issue one :class:`DataClippingWarning` at the user's call, counting clipped values per feature.

    The counts go to the analyst's own console only (the warning text); they
    are never stored in a fitted attribute, a record or a model file
    (:class:`~dperm.exceptions.DataClippingWarning` states the policy).
    """
    n_clipped = np.asarray(n_clipped)
    if not n_clipped.any():
        return
    parts = [
        f"{int(count)} in {label!r}"
        for count, label in zip(n_clipped, feature_labels)
        if count
    ]
    warn_at_caller(
        f"{int(n_clipped.sum())} value(s) in {n_rows} rows were outside the public "
        f"bounds and were clipped to them ({', '.join(parts)}). Clipping is a per-record step: "
        "the privacy guarantee is the same either way, only the values the model sees change. "
        "If that many values are outside, check that the bounds are the intended public "
        "ranges (chosen without looking at the data).",
        DataClippingWarning,
    )


def normalize_rows(X, data_norm: float = 1.0, mode: str = "clip"):
    """Apply the per-record row step and return ``(X_out, n_clipped_rows)``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    data_norm : float
        Public bound R on the L2 norm of a row (paper note 2).
    mode : {"clip", "scale"}
        ``"clip"`` scales rows whose norm exceeds ``data_norm`` onto it
        (:func:`dperm.validation.clip_rows_to_norm`); ``"scale"`` maps every
        nonzero row to norm exactly ``data_norm``, ``x * data_norm / ||x||``.
        Zero rows stay zero in both modes.

    Returns
    -------
    X_out : ndarray
    n_clipped_rows : int
        Rows changed by ``"clip"`` (always 0 for ``"scale"``).
    """
    if mode == "clip":
        return clip_rows_to_norm(X, data_norm)
    if mode == "scale":
        # divide by the largest entry first so that huge rows neither overflow nor vanish
        largest = np.max(np.abs(X), axis=1, keepdims=True) if X.shape[1] else np.zeros((X.shape[0], 1))
        unit = X / np.where(largest > 0, largest, 1.0)
        norms = np.linalg.norm(unit, axis=1)
        factors = np.where(norms > 0, data_norm / np.where(norms > 0, norms, 1.0), 1.0)
        return unit * factors[:, None], 0
    raise ValueError(f"mode must be one of {_ROW_NORMALIZER_MODES}; got {mode!r}.")


def _feature_labels(estimator, n_features: int) -> list[str]:
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        return [str(name) for name in names]
    return [f"x{i}" for i in range(n_features)]


def join_feature_category(feature, category) -> str:
    """Name one one-hot output ``"feature=category"`` (as in :meth:`dperm.tabular.TabularSpec.feature_names`)."""
    return f"{feature}={category}"


# --------------------------------------------------------------------------------------
# scikit-learn transformers
# --------------------------------------------------------------------------------------


class PublicBoundsScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Scale each feature to [0, 1] with public per-feature bounds.

    Replaces the data-dependent column scaling of Chaudhuri et al. (2011),
    Sec. 7.1 ("each column was normalized to ensure that the maximum value is
    1"), which uses the private column maximum (paper note 9).
    Each value becomes ``(x - lower) / (upper - lower)``; values outside the
    bounds are first clipped to them. Both steps use one record and public
    constants only, so they keep the privacy guarantee of what follows.

    Parameters
    ----------
    bounds : tuple (lower, upper) or None
        Public bounds, each a scalar or an array with one entry per feature,
        with ``lower < upper``. They must be chosen without looking at the
        private data (a published range, a census top code, a questionnaire's
        answer range). ``None`` uses the training data's minimum and maximum and
        issues a :class:`~dperm.exceptions.PrivacyLeakWarning`: the privacy
        guarantee then does not cover the scaling.
    clip : bool, default=True
        Clip values outside the bounds. :meth:`fit` issues one
        :class:`~dperm.exceptions.DataClippingWarning` counting the training
        values outside, per feature (printed to your console only, never
        stored); :meth:`transform` clips silently, so predicting and scoring a
        pipeline warn nothing. With ``False``, an out-of-bounds value raises
        ValueError naming the feature, in :meth:`fit` or :meth:`transform`.

    Attributes
    ----------
    lower_ : ndarray of shape (n_features,)
        Lower bound of each feature.
    upper_ : ndarray of shape (n_features,)
        Upper bound of each feature.
    data_dependent_bounds_ : bool
        True when ``bounds=None`` and the bounds came from the data.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    feature_names_in_ : ndarray of shape (n_features,)
        Column names seen in :meth:`fit`, when X had string column names.

    See Also
    --------
    RowNormalizer : the per-record row step that usually follows.
    dperm.tabular.TabularSpec : the same scaling for a whole table described by a public schema.

    References
    ----------
    .. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially Private
       Empirical Risk Minimization. JMLR 12 (2011), Sec. 7.1.

    Examples
    --------
    >>> import numpy as np
    >>> from dperm.preprocessing import PublicBoundsScaler
    >>> X = np.array([[20.0, 10.0], [60.0, 30.0]])
    >>> PublicBoundsScaler(bounds=([0, 0], [100, 40])).fit_transform(X)
    array([[0.2 , 0.25],
           [0.6 , 0.75]])
    """

    _parameter_constraints = {
        "bounds": ["array-like", None],  # the pair's shape and values are checked against X
        "clip": ["boolean"],
    }

    def __init__(self, bounds, clip=True):
        self.bounds = bounds
        self.clip = clip

    def fit(self, X, y=None):
        """Check the bounds against X's shape (or, with ``bounds=None``, read them from X).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : PublicBoundsScaler
        """
        self._validate_params()
        X = validate_data(self, X, dtype=np.float64, reset=True)
        labels = _feature_labels(self, X.shape[1])
        if self.bounds is None:
            self.lower_, self.upper_ = self._bounds_from_data(X)
            self.data_dependent_bounds_ = True
        else:
            self.lower_, self.upper_ = _check_bounds(self.bounds, X.shape[1], labels)
            self.data_dependent_bounds_ = False
            # once per fit: the training values outside the bounds (transform is silent)
            _, n_clipped = clip_to_bounds(X, self.lower_, self.upper_, clip=self.clip,
                                          feature_labels=labels)
            warn_clipped_values(n_clipped, labels, X.shape[0])
        return self

    @staticmethod
    def _bounds_from_data(X):
        warn_at_caller(
            "PublicBoundsScaler(bounds=None) takes each feature's minimum and maximum "
            "from the training data. Those values depend on private records, so the "
            "differential privacy guarantee does not cover this scaling (paper note 9, "
            "docs/paper_notes.md). Pass public bounds=(lower, upper), one entry per feature, "
            "chosen without looking at the data.",
            PrivacyLeakWarning,
        )
        lower, upper = X.min(axis=0), X.max(axis=0)
        # A constant column has no range; map it to 0 instead of dividing by zero.
        upper = np.where(upper > lower, upper, lower + 1.0)
        return lower, upper

    def transform(self, X):
        """Clip X to the bounds and scale each feature to [0, 1], without a warning.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_scaled : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "lower_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        labels = _feature_labels(self, X.shape[1])
        X, _ = clip_to_bounds(X, self.lower_, self.upper_, clip=self.clip, feature_labels=labels)
        return scale_to_unit_interval(X, self.lower_, self.upper_)

    def inverse_transform(self, X):
        """Map values in [0, 1] back to the original scale."""
        check_is_fitted(self, "lower_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X * (self.upper_ - self.lower_) + self.lower_


class PublicOneHotEncoder(TransformerMixin, BaseEstimator):
    """One-hot encode categorical features with public category lists.

    Converts each categorical attribute to a binary vector, as in Chaudhuri
    et al. (2011), Sec. 7.1, but with categories given as public input (for
    Adult, the lists in ``adult.names``) instead of read from the data. Wraps
    :class:`sklearn.preprocessing.OneHotEncoder` with ``handle_unknown="ignore"``:
    **a value not in its column's public list becomes an all-zero block**, so
    one record can never change the output dimension or another record's code.

    Parameters
    ----------
    categories : list of array-like, or "auto"
        One list of public categories per column, in the output order. For
        numeric categories, sort each list. ``"auto"`` reads the categories from
        the training data and issues a
        :class:`~dperm.exceptions.PrivacyLeakWarning` (which categories occur is
        private information, e.g. a rare native country).
    dtype : numpy dtype, default=np.float64
        Output dtype. The output is always a dense array.

    Attributes
    ----------
    categories_ : list of ndarray
        The categories of each column, in output order.
    encoder_ : sklearn.preprocessing.OneHotEncoder
        The fitted wrapped encoder.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Defined when X had string column names.

    See Also
    --------
    dperm.tabular.TabularSpec : one-hot encoding inside a whole-table public schema.

    Examples
    --------
    >>> from dperm.preprocessing import PublicOneHotEncoder
    >>> enc = PublicOneHotEncoder(categories=[["Female", "Male"]])
    >>> enc.fit_transform([["Male"], ["Other"]])
    array([[0., 1.],
           [0., 0.]])
    >>> enc.get_feature_names_out(["sex"]).tolist()
    ['sex=Female', 'sex=Male']
    """

    _parameter_constraints = {
        "categories": [StrOptions({"auto"}), list, tuple],  # each list is checked in fit
        "dtype": "no_validation",  # as in sklearn.preprocessing.OneHotEncoder
    }

    def __init__(self, categories, dtype=np.float64):
        self.categories = categories
        self.dtype = dtype

    def fit(self, X, y=None):
        """Set up the encoder with the public categories (the data only fixes the shape).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : PublicOneHotEncoder
        """
        self._validate_params()
        categories = self._checked_categories(X)
        self.encoder_ = OneHotEncoder(
            categories=categories,
            handle_unknown="ignore",
            sparse_output=False,
            dtype=self.dtype,
            feature_name_combiner=join_feature_category,
        ).fit(X)
        self.categories_ = self.encoder_.categories_
        self.n_features_in_ = self.encoder_.n_features_in_
        if hasattr(self.encoder_, "feature_names_in_"):
            self.feature_names_in_ = self.encoder_.feature_names_in_
        return self

    def _checked_categories(self, X):
        if isinstance(self.categories, str):  # "auto", the only string the constraints allow
            warn_at_caller(
                'PublicOneHotEncoder(categories="auto") reads the categories from the '
                "training data. Which categories occur depends on private records, so "
                "the differential privacy guarantee does not cover the encoding (paper "
                "note 9, docs/paper_notes.md). Pass the public category list of every column.",
                PrivacyLeakWarning,
            )
            return "auto"
        n_columns = np.shape(X)[1] if np.ndim(X) == 2 else None
        if n_columns is not None and len(self.categories) != n_columns:
            raise ValueError(
                f"categories has {len(self.categories)} list(s) but X has {n_columns} "
                "column(s); give one list of public categories per column."
            )
        checked = []
        for i, column_categories in enumerate(self.categories):
            values = list(column_categories)
            if not values:
                raise ValueError(f"categories[{i}] is empty; list the column's public categories.")
            if len(set(values)) != len(values):
                raise ValueError(f"categories[{i}] has duplicate entries: {values!r}.")
            checked.append(np.asarray(values, dtype=object if _all_str(values) else None))
        return checked

    def transform(self, X):
        """One-hot encode X; unknown values become all-zero blocks.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_encoded : ndarray of shape (n_samples, sum of the category counts)
        """
        check_is_fitted(self, "encoder_")
        return self.encoder_.transform(X)

    def get_feature_names_out(self, input_features=None):
        """Output names ``"feature=category"``.

        Parameters
        ----------
        input_features : array-like of str, optional
            Column names; default ``feature_names_in_`` or ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str
        """
        check_is_fitted(self, "encoder_")
        return self.encoder_.get_feature_names_out(input_features)


def _all_str(values) -> bool:
    return all(isinstance(value, str) for value in values)


class RowNormalizer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Bound every row's L2 norm by a public ``data_norm`` (a per-record step).

    The sensitivity analysis of Chaudhuri et al. (2011), Thms 1-2 and Sec. 7.1,
    needs ``||x_i|| <= 1`` (or ``<= R``, paper note 2) for every
    record. Both modes change one record using only that record and the public
    ``data_norm``, so neither leaks anything.

    Parameters
    ----------
    data_norm : float, default=1.0
        Public bound R on the row norm.
    mode : {"clip", "scale"}, default="clip"
        ``"clip"``: rows with norm above ``data_norm`` are scaled onto it;
        shorter rows are unchanged. :meth:`fit` issues one
        :class:`~dperm.exceptions.DataClippingWarning` if any training row is
        clipped (without the count, a function of the private rows);
        :meth:`transform` never warns. ``"scale"``: every nonzero row is scaled to norm exactly
        ``data_norm`` (``x * data_norm / ||x||``), which spends the whole norm
        budget on every record. Zero rows stay zero in both modes.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Defined when X had string column names.

    Examples
    --------
    >>> from dperm.preprocessing import RowNormalizer
    >>> RowNormalizer(data_norm=1.0, mode="scale").fit_transform([[3.0, 4.0], [0.0, 0.0]])
    array([[0.6, 0.8],
           [0. , 0. ]])
    """

    _parameter_constraints = {
        "data_norm": [Interval(Real, 0, None, closed="neither")],  # finite and > 0
        "mode": [StrOptions(set(_ROW_NORMALIZER_MODES))],
    }

    def __init__(self, data_norm=1.0, mode="clip"):
        self.data_norm = data_norm
        self.mode = mode

    def fit(self, X, y=None):
        """Check the parameters and record X's width; nothing is learned from the data.

        With ``mode="clip"``, warns once if any training row is longer than ``data_norm``.

        Returns
        -------
        self : RowNormalizer
        """
        self._validate_params()
        X = validate_data(self, X, dtype=np.float64, reset=True)
        if self.mode == "clip" and normalize_rows(X, float(self.data_norm), "clip")[1]:
            self._warn_clipped_rows()
        return self

    def _warn_clipped_rows(self):
        data_norm = float(self.data_norm)
        warn_at_caller(
            f"RowNormalizer(data_norm={data_norm:g}, mode='clip'): some training rows have an "
            "L2 norm above data_norm and are scaled down onto it (here and at every "
            "transform, silently). Clipping is a per-record step: the privacy guarantee is "
            "the same either way, only the rows the model learns from change. mode='scale' "
            "puts every row on the norm instead, treating all rows alike. A larger data_norm "
            "is not a fix: the noise of the estimator that follows grows "
            "with it.",
            DataClippingWarning,
        )

    def transform(self, X):
        """Clip or rescale each row to the public norm bound, without a warning.

        Returns
        -------
        X_normalized : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "n_features_in_")
        self._validate_params()  # the parameters act here, and set_params may follow fit
        X = validate_data(self, X, dtype=np.float64, reset=False)
        X_out, _ = normalize_rows(X, float(self.data_norm), self.mode)
        return X_out if X_out is not X else X.copy()

# --------------------------------------------------------------------------------------
# The recipe for a user's own table (one line)
# --------------------------------------------------------------------------------------

#: ``feature_range`` values of :func:`make_private_pipeline`: where public bounds map a column.
FEATURE_RANGES = {"centred": (-1.0, 1.0), "unit": (0.0, 1.0)}


def _to_centred_range(X):
    """``2 u - 1``: [0, 1] onto [-1, 1], per value (a public map)."""
    return 2.0 * np.asarray(X, dtype=np.float64) - 1.0


def _takes_fallback_intercept(params) -> bool:
    """Whether the recipe gives this estimator an intercept: it has the majority fallback switched
    on (``fallback`` not None) and a public label set of two labels, the case the fallback runs."""
    classes = params.get("classes")
    return (params.get("fallback") is not None and "intercept_scaling" in params
            and classes is not None and len(classes) == 2)


def make_private_pipeline(estimator, bounds, *, categories=None, data_norm=1.0,
                          feature_range="centred", fit_intercept="auto"):
    """dperm's preprocessing recipe and ``estimator`` in one scikit-learn Pipeline.

    ``make_private_pipeline(PrivateLogisticRegression(epsilon=1, classes=[0, 1]),
    bounds=(lower, upper))`` is the whole recipe, and ``dperm train`` uses the
    same one by default (:class:`dperm.tabular.TabularSpec` with
    ``numeric_range="centred"`` and ``row_norm_mode="scale"``):

    1. public bounds map each numeric column to ``[-1, 1]``
       (:class:`PublicBoundsScaler`, then ``2 u - 1``): the midpoint of the
       public range goes to 0, so no coordinate carries a constant offset
       that the norm bound pays for;
    2. categorical columns are one-hot encoded with their public categories
       (:class:`PublicOneHotEncoder`);
    3. every row is scaled to norm ``data_norm`` (:class:`RowNormalizer`,
       ``mode="scale"``), the bound the estimator's sensitivity assumes.

    Every step uses one record and public constants only, so the pipeline has
    the estimator's guarantee (Chaudhuri et al. 2011, Sec. 7.1, with the data's
    column maxima replaced by public bounds).

    The intercept (``fit_intercept="auto"``): a classifier with the majority
    fallback (``PrivateLogisticRegression``, ``fallback`` not None) given a public
    two-label ``classes`` fits one, with the constant feature ``intercept_scaling
    = 0.5``, so that the fallback can release the constant model (the privately
    estimated majority class) where the fitted model is no better; every other
    estimator fits none. Measured on the FITTING tables only
    (``benchmarks/fallback_recipe_fit.py``, 13 binary tables x epsilon 0.1, 0.3,
    1, 3): more than 0.005 below the majority class in 3 of 52 cells against 13
    without an intercept, mean accuracy 0.7031 against 0.7001 (constant feature
    1: 4 cells, 0.6994). Without the fallback an intercept costs: its constant
    feature raises the norm bound from ``R`` to ``sqrt(R^2 + s^2)`` and with it
    the noise, while centring already puts the middle of every range at 0
    (breast cancer, ``benchmarks/cli_recipe.py``, epsilon 1, alpha 0.01: logistic
    test error 0.161 centred without intercept, 0.215 with). ``dperm train``
    makes the same choice. Adult and KDD Cup were not used to choose.

    Parameters
    ----------
    estimator : estimator
        A dperm estimator; it is cloned, and given ``data_norm`` when it has
        that parameter (the kernel models bound their features themselves).
    bounds : tuple (lower, upper)
        PUBLIC bounds of the numeric columns (scalars or one entry per numeric
        column, in their order in X), chosen without looking at the data.
    categories : dict, optional
        Categorical columns, ``{column: [public categories]}``; a column is an
        index into X (or a name when X is a DataFrame). The other columns are
        numeric.
    data_norm : float, default=1.0
        Public row norm bound R.
    feature_range : {"centred", "unit"}, default="centred"
        ``[-1, 1]`` or ``[0, 1]`` for the numeric columns.
    fit_intercept : bool, "auto" or None, default="auto"
        Set on the estimator when it has that parameter; None keeps the
        estimator's own setting; "auto" as above (an intercept at
        ``intercept_scaling=0.5`` for a two-label classifier with the majority
        fallback, else none).

    Returns
    -------
    pipeline : sklearn.pipeline.Pipeline

    Examples
    --------
    >>> import numpy as np
    >>> from dperm import PrivateLogisticRegression
    >>> from dperm.preprocessing import make_private_pipeline
    >>> model = make_private_pipeline(PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]),
    ...                               bounds=([0, 0], [100, 10]))
    >>> [name for name, _ in model.steps]
    ['bounds', 'centre', 'rows', 'model']
    """
    from sklearn.base import clone
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    if feature_range not in FEATURE_RANGES:
        raise ValueError(f"feature_range must be one of {sorted(FEATURE_RANGES)}; got "
                         f"{feature_range!r}.")
    if not (fit_intercept is None or fit_intercept == "auto" or isinstance(fit_intercept, (bool, np.bool_))):
        raise ValueError(f"fit_intercept must be True, False, None or 'auto'; got {fit_intercept!r}.")
    estimator = clone(estimator)
    params = estimator.get_params()
    if "data_norm" in params:
        estimator.set_params(data_norm=data_norm)
    if fit_intercept == "auto":
        if _takes_fallback_intercept(params):
            estimator.set_params(fit_intercept=True, intercept_scaling=RECIPE_INTERCEPT_SCALING)
        elif "fit_intercept" in params:
            estimator.set_params(fit_intercept=False)
    elif fit_intercept is not None and "fit_intercept" in params:
        estimator.set_params(fit_intercept=bool(fit_intercept))
    numeric = [("bounds", PublicBoundsScaler(bounds=bounds))]
    if feature_range == "centred":
        numeric.append(("centre", FunctionTransformer(_to_centred_range,
                                                      feature_names_out="one-to-one")))
    rows = ("rows", RowNormalizer(data_norm=data_norm, mode="scale"))
    if not categories:
        return Pipeline([*numeric, rows, ("model", estimator)])
    columns = list(categories)
    encode = ColumnTransformer(
        [("categorical", PublicOneHotEncoder(categories=[list(categories[c]) for c in columns]),
          columns)],
        remainder=Pipeline(numeric), sparse_threshold=0.0)
    return Pipeline([("encode", encode), rows, ("model", estimator)])


__all__ += ["FEATURE_RANGES", "make_private_pipeline"]
