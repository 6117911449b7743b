"""``dperm.preprocessing.make_private_pipeline``: the one-line recipe ``dperm train`` uses."""

import numpy as np
import pytest

from dperm import PrivateKernelSVC, PrivateLogisticRegression
from dperm.preprocessing import make_private_pipeline
from dperm.tabular import CategoricalColumn, NumericColumn, TabularSpec


def _rows(pipeline, X):
    return pipeline[:-1].transform(X)


def test_bounds_map_to_the_centred_range_and_rows_to_the_norm():
    X = np.array([[0.0, 10.0], [10.0, 10.0], [2.5, 5.0]])
    pipeline = make_private_pipeline(PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]),
                                     bounds=([0, 0], [10, 10]), data_norm=2.0)
    pipeline.fit(X, [0, 1, 0])
    rows = _rows(pipeline, X)
    np.testing.assert_allclose(rows[0], [-np.sqrt(2), np.sqrt(2)])  # (-1, 1) scaled to norm 2
    np.testing.assert_allclose(rows[1], [np.sqrt(2), np.sqrt(2)])
    np.testing.assert_allclose(rows[2], [-2.0, 0.0])                 # (-0.5, 0) scaled to norm 2
    model = pipeline[-1]
    # two public labels and the majority fallback: an intercept with the constant feature 0.5
    assert model.data_norm == 2.0 and model.fit_intercept is True and model.intercept_scaling == 0.5


def test_unit_range_and_an_intercept_on_request():
    X = np.array([[0.0], [10.0]])
    pipeline = make_private_pipeline(PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]),
                                     bounds=(0, 20), feature_range="unit", fit_intercept=True)
    pipeline.fit(X, [0, 1])
    np.testing.assert_allclose(_rows(pipeline, np.array([[5.0]])), [[1.0]])  # 0.25 -> norm 1
    assert [name for name, _ in pipeline.steps] == ["bounds", "rows", "model"]
    assert pipeline[-1].fit_intercept is True


def test_categories_are_one_hot_encoded_and_match_the_tabular_spec():
    X = np.array([["red", 30.0], ["blue", 90.0]], dtype=object)
    pipeline = make_private_pipeline(
        PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0), bounds=(0, 120),
        categories={0: ["red", "green", "blue"]}, fit_intercept=False)  # two rows: no fallback
    pipeline.fit(X, [0, 1])
    spec = TabularSpec([CategoricalColumn("c", ["red", "green", "blue"]),
                        NumericColumn("age", 0, 120)], row_norm_mode="scale",
                       numeric_range="centred")
    expected = spec.transform({"c": ["red", "blue"], "age": ["30", "90"]})
    np.testing.assert_allclose(_rows(pipeline, X), expected)


def test_the_caller_s_estimator_is_not_changed_and_kernels_keep_their_norm():
    estimator = PrivateLogisticRegression(epsilon=1.0, data_norm=3.0, fit_intercept=True)
    make_private_pipeline(estimator, bounds=(0, 1))
    assert estimator.data_norm == 3.0 and estimator.fit_intercept is True
    kernel = make_private_pipeline(PrivateKernelSVC(epsilon=1.0), bounds=(0, 1))[-1]
    assert "data_norm" not in kernel.get_params()


def test_an_unknown_feature_range_is_refused():
    with pytest.raises(ValueError, match="feature_range must be one of"):
        make_private_pipeline(PrivateLogisticRegression(), bounds=(0, 1), feature_range="wide")
