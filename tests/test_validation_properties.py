"""Property-based hardening: any input gives a sane model or a documented exception.

Shapes, dtypes, sparse matrices, NaN/inf, huge and tiny values, one-row and
one-class inputs, for every estimator family and for the CLI round trip.
"""

import csv
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import sparse

from dperm import (
    CertificateError,
    PrivateLeastSquares,
    PrivateLinearSVC,
    PrivateLogisticRegression,
    PrivateQuantileRegressor,
)
from dperm.cli import main
from dperm.validation import clip_rows_to_norm, row_norms

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DOCUMENTED = (ValueError, CertificateError)

finite = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_infinity=False)
anything = st.floats(allow_nan=True, allow_infinity=True, width=64)


@st.composite
def classification_data(draw, elements=finite):
    n = draw(st.integers(1, 25))
    d = draw(st.integers(1, 4))
    X = draw(arrays(np.float64, (n, d), elements=elements))
    y = draw(arrays(np.int64, (n,), elements=st.integers(0, 2)))
    return X, y


CLASSIFIERS = [
    lambda: PrivateLogisticRegression(epsilon=1.0, random_state=0),
    lambda: PrivateLinearSVC(loss="hinge", mechanism="output", epsilon=1.0, random_state=0),
    lambda: PrivateLinearSVC(mechanism="gaussian_objective", delta=1e-5, random_state=0),
]


def _fit_or_documented_error(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipping warnings are expected here
        try:
            return model.fit(X, y)
        except DOCUMENTED as error:
            assert str(error), "a documented error must say what is wrong"
            return None


@pytest.mark.parametrize("make", CLASSIFIERS)
@SETTINGS
@given(data=classification_data(elements=anything))
def test_classifiers_never_return_garbage(make, data):
    X, y = data
    model = _fit_or_documented_error(make(), X, y)
    if model is None:
        return
    assert np.isfinite(X).all() and len(np.unique(y)) >= 2  # otherwise fit must refuse
    assert np.isfinite(model.coef_).all() and np.isfinite(model.intercept_).all()
    predictions = model.predict(X)
    assert predictions.shape == y.shape and set(predictions) <= set(model.classes_)
    assert model.privacy_.n_samples == X.shape[0]


@SETTINGS
@given(data=classification_data(), dtype=st.sampled_from([np.float32, np.float64, np.int32]),
       as_sparse=st.booleans())
def test_dtypes_and_sparse_inputs_give_the_same_kind_of_model(data, dtype, as_sparse):
    X, y = data
    X = np.clip(X, -1e30, 1e30).astype(dtype)
    X = sparse.csr_matrix(X) if as_sparse else X
    model = _fit_or_documented_error(PrivateLogisticRegression(random_state=0), X, y)
    if model is not None:
        assert model.coef_.dtype == np.float64 and np.isfinite(model.coef_).all()


@pytest.mark.parametrize("make", [
    lambda: PrivateQuantileRegressor(quantile=0.3, random_state=0),
    lambda: PrivateLeastSquares(y_bound=2.0, alpha=0.1, random_state=0),
])
@SETTINGS
@given(n=st.integers(1, 20), d=st.integers(1, 3), data=st.data())
def test_regressors_never_return_garbage(make, n, d, data):
    X = data.draw(arrays(np.float64, (n, d), elements=anything))
    y = data.draw(arrays(np.float64, (n,), elements=anything))
    model = _fit_or_documented_error(make(), X, y)
    if model is None:
        return
    assert np.isfinite(X).all() and np.isfinite(y).all()
    predictions = model.predict(X)
    assert predictions.shape == (n,) and np.isfinite(predictions).all()


@given(X=arrays(np.float64, st.tuples(st.integers(1, 10), st.integers(1, 4)), elements=finite),
       bound=st.floats(1e-3, 1e3))
@SETTINGS
def test_row_clipping_is_per_record_and_keeps_direction(X, bound):
    clipped, count = clip_rows_to_norm(X, bound)
    norms = row_norms(clipped)
    assert np.all(norms <= bound * (1 + 1e-9))
    long = row_norms(X) > bound * (1 + 1e-12)
    assert count == int(long.sum())
    np.testing.assert_array_equal(clipped[~long], X[~long])  # short rows untouched
    for before, after in zip(X[long], clipped[long]):
        cosine = before @ after / (row_norms(before[None])[0] * row_norms(after[None])[0])
        assert cosine > 1 - 1e-9


@SETTINGS
@given(rows=st.lists(st.tuples(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from(["a", "b", "c"]),
                               st.sampled_from(["yes", "no"])), min_size=1, max_size=30))
def test_cli_round_trip_on_random_tables(tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("cli")
    data = folder / "data.csv"
    with open(data, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["x", "kind", "label"])
        writer.writerows(rows)
    model = folder / "model.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["train", "--data", str(data), "--target", "label", "--categorical", "kind",
                     "--epsilon", "1", "--out", str(model)])
    labels = {label for *_, label in rows}
    assert code == (0 if len(labels) == 2 else 2)
    if code == 0:
        assert main(["predict", "--model", str(model), "--data", str(data),
                     "--out", str(folder / "p.csv")]) == 0
        predictions = (folder / "p.csv").read_text().split()[1:]
        assert len(predictions) == len(rows) and set(predictions) <= labels
