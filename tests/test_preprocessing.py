"""Tests of dperm.preprocessing: the transformers with public bounds."""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from dperm import DataClippingWarning, PrivacyLeakWarning
from dperm.preprocessing import (
    PublicBoundsScaler,
    PublicOneHotEncoder,
    RowNormalizer,
    normalize_rows,
)


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ---------------------------------------------------------------- scikit-learn checks


# ---------------------------------------------------------------- PublicBoundsScaler


def test_scaler_maps_public_bounds_to_unit_interval(no_warnings):
    X = np.array([[20.0, 10.0], [60.0, 30.0]])
    scaler = PublicBoundsScaler(bounds=([0.0, 0.0], [100.0, 40.0])).fit(X)
    np.testing.assert_allclose(scaler.transform(X), [[0.2, 0.25], [0.6, 0.75]])
    assert scaler.data_dependent_bounds_ is False
    np.testing.assert_allclose(scaler.inverse_transform(scaler.transform(X)), X)


def test_scaler_broadcasts_scalar_bounds(no_warnings):
    X = np.array([[1.0, 3.0]])
    scaled = PublicBoundsScaler(bounds=(0, 4)).fit_transform(X)
    np.testing.assert_allclose(scaled, [[0.25, 0.75]])
    stacked = PublicBoundsScaler(bounds=np.array([[0.0, 2.0], [4.0, 4.0]])).fit_transform(X)
    np.testing.assert_allclose(stacked, [[0.25, 0.5]])


def test_scaler_clips_and_counts_out_of_bounds_values_once_at_fit():
    X = np.array([[-5.0, 0.5], [0.5, 7.0], [2.0, 0.5]])
    with pytest.warns(DataClippingWarning, match=r"3 value\(s\).*2 in 'x0', 1 in 'x1'"):
        scaler = PublicBoundsScaler(bounds=(0.0, 1.0)).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # transform clips silently
        scaled = scaler.transform(X)
    np.testing.assert_allclose(scaled, [[0.0, 0.5], [0.5, 1.0], [1.0, 0.5]])


def test_scaler_without_clip_raises_at_fit_naming_the_feature():
    with pytest.raises(ValueError, match=r"feature 'x0'.*1 value\(s\) outside"):
        PublicBoundsScaler(bounds=(0.0, 1.0), clip=False).fit(np.array([[2.0, 0.5]]))


def test_scaler_without_clip_raises_naming_the_feature():
    scaler = PublicBoundsScaler(bounds=(0.0, 1.0), clip=False).fit(np.zeros((1, 2)))
    with pytest.raises(ValueError, match=r"feature 'x1'.*1 value\(s\) outside"):
        scaler.transform(np.array([[0.5, 1.5]]))


def test_scaler_without_bounds_warns_and_uses_data_range():
    X = np.array([[1.0, 5.0], [3.0, 5.0]])
    with pytest.warns(PrivacyLeakWarning, match="public bounds"):
        scaler = PublicBoundsScaler(bounds=None).fit(X)
    assert scaler.data_dependent_bounds_ is True
    # The constant column maps to 0 rather than dividing by zero.
    np.testing.assert_allclose(scaler.transform(X), [[0.0, 0.0], [1.0, 0.0]])


@pytest.mark.parametrize(
    "bounds, message",
    [
        ((1.0, 1.0), "lower < upper"),
        (([0.0, 2.0], [1.0, 1.0]), r"feature 'x1'.*lower < upper"),
        ((np.nan, 1.0), "finite"),
        ((0.0, np.inf), "finite"),
        (([0.0, 0.0, 0.0], 1.0), "3 entries|shape"),
        ((0.0,), "pair"),
        ("0..1", r"'bounds' parameter of PublicBoundsScaler must be an array-like or None"),
        ((["a", "b"], 1.0), "numeric"),
    ],
)
def test_scaler_rejects_bad_bounds(bounds, message):
    with pytest.raises(ValueError, match=message):
        PublicBoundsScaler(bounds=bounds).fit(np.zeros((2, 2)))


def test_scaler_rejects_non_boolean_clip():
    with pytest.raises(ValueError, match=r"'clip' parameter of PublicBoundsScaler must be an instance of 'bool'"):
        PublicBoundsScaler(bounds=(0, 1), clip="yes").fit(np.zeros((2, 2)))


def test_scaler_clone_and_pipeline(no_warnings):
    scaler = PublicBoundsScaler(bounds=([0.0, 0.0], [10.0, 10.0]), clip=True)
    cloned = clone(scaler)
    assert cloned.get_params() == scaler.get_params()
    assert not hasattr(cloned, "lower_")

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, size=(200, 2))
    y = (X[:, 0] > 5).astype(int)
    pipe = make_pipeline(cloned, RowNormalizer(data_norm=math.sqrt(2)), LogisticRegression())
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.8
    assert pipe[:-1].get_feature_names_out().tolist() == ["x0", "x1"]


# ---------------------------------------------------------------- RowNormalizer


def test_row_normalizer_clip_mode_only_changes_long_rows():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    with pytest.warns(DataClippingWarning, match="some training rows"):
        out = RowNormalizer(data_norm=1.0, mode="clip").fit_transform(X)
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])


def test_row_normalizer_scale_mode_gives_exact_norm(no_warnings):
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    out = RowNormalizer(data_norm=2.0, mode="scale").fit_transform(X)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), [2.0, 2.0, 0.0])
    np.testing.assert_allclose(out[1], [1.2, 1.6])


def test_row_normalizer_does_not_modify_its_input(no_warnings):
    X = np.array([[0.3, 0.4]])
    out = RowNormalizer().fit_transform(X)
    out[0, 0] = 99.0
    assert X[0, 0] == 0.3


@pytest.mark.parametrize(
    "params, message",
    [
        ({"data_norm": 0.0}, r"'data_norm' parameter of RowNormalizer must be a float in the range \(0.0, inf\)"),
        ({"data_norm": -1}, "'data_norm' parameter"),
        ({"data_norm": math.inf}, "'data_norm' parameter"),
        ({"data_norm": math.nan}, "'data_norm' parameter"),
        ({"mode": "l2"}, r"'mode' parameter of RowNormalizer must be a str among"),
    ],
)
def test_row_normalizer_rejects_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        RowNormalizer(**params).fit(np.ones((2, 2)))
    fitted = RowNormalizer().fit(np.ones((2, 2)))
    with pytest.raises(ValueError, match=message):  # the parameters act at transform too
        fitted.set_params(**params).transform(np.ones((2, 2)))


def test_normalize_rows_rejects_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        normalize_rows(np.ones((1, 2)), 1.0, "unit")


# ---------------------------------------------------------------- PublicOneHotEncoder


def test_one_hot_uses_public_categories_and_zeros_unknown(no_warnings):
    encoder = PublicOneHotEncoder(categories=[["b", "a"], ["x", "y", "z"]])
    X = np.array([["a", "z"], ["c", "x"]], dtype=object)
    out = encoder.fit_transform(X)
    np.testing.assert_array_equal(out, [[0, 1, 0, 0, 1], [0, 0, 1, 0, 0]])
    assert encoder.get_feature_names_out(["f", "g"]).tolist() == [
        "f=b", "f=a", "g=x", "g=y", "g=z",
    ]
    # Categories never seen in the data still get their (public) columns.
    assert [list(c) for c in encoder.categories_] == [["b", "a"], ["x", "y", "z"]]


def test_one_hot_auto_categories_warn():
    with pytest.warns(PrivacyLeakWarning, match="public category"):
        encoder = PublicOneHotEncoder(categories="auto").fit([["a"], ["b"]])
    assert encoder.transform([["b"]]).tolist() == [[0.0, 1.0]]


@pytest.mark.parametrize(
    "categories, message",
    [
        ([["a"]], r"1 list\(s\) but X has 2"),
        ([["a"], []], "empty"),
        ([["a", "a"], ["b"]], "duplicate"),
        ("public", r"'categories' parameter of PublicOneHotEncoder must be a str among \{'auto'\}"),
        (None, "'categories' parameter"),
    ],
)
def test_one_hot_rejects_bad_categories(categories, message):
    with pytest.raises(ValueError, match=message):
        PublicOneHotEncoder(categories=categories).fit([["a", "b"]])


def test_one_hot_clone_and_pipeline(no_warnings):
    encoder = PublicOneHotEncoder(categories=[["lo", "hi"]])
    pipe = make_pipeline(clone(encoder), RowNormalizer(mode="scale"), LogisticRegression())
    X = np.array([["lo"], ["hi"]] * 20, dtype=object)
    y = np.array([0, 1] * 20)
    assert pipe.fit(X, y).score(X, y) == 1.0
    assert clone(encoder).get_params()["categories"] == [["lo", "hi"]]
