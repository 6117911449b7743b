"""``predict_proba`` of every logistic model follows scikit-learn's convention (issue 32).

Rows sum to 1, column ``k`` is the probability of ``classes_[k]``, the largest column is
``predict``'s label, and the values are the model's own: ``sigmoid(decision_function)`` for
one binary problem, scikit-learn's normalised one-vs-rest sigmoids (``_predict_proba_lr``)
for several, the softmax of the scores for the multinomial model. Models without a
probability model (hinge, Huber) have no ``predict_proba``.
"""

import warnings

import numpy as np
import pytest
from scipy.special import expit, softmax

from dperm import (
    DataClippingWarning,
    LocalAggregationClassifier,
    NewtonClassifier,
    PrivateKernelLogisticRegression,
    PrivateKernelSVC,
    PrivateLinearSVC,
    PrivateLogisticRegression,
    PrivateParameterSearch,
    PSGDClassifier,
)


def _data(n=400, n_classes=2, seed=0, labels=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    score = X @ np.array([2.0, -1.0, 0.5])
    codes = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    labels = np.array(labels if labels is not None else range(n_classes))
    return X, labels[codes]


def _check_convention(model, X):
    proba = model.predict_proba(X)
    assert proba.shape == (X.shape[0], len(model.classes_))
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(model.classes_[np.argmax(proba, axis=1)], model.predict(X))
    if hasattr(model, "predict_log_proba"):
        np.testing.assert_allclose(model.predict_log_proba(X), np.log(proba), rtol=1e-12)
    return proba


# String labels given in reverse order: classes_ is sorted, and the columns follow classes_.
BINARY = ["yes", "no"]
MULTI = ["c", "a", "b"]


def test_binary_logistic_is_the_sigmoid_of_the_score_for_classes_1():
    X, y = _data(labels=["no", "yes"])
    model = PrivateLogisticRegression(classes=BINARY, random_state=0).fit(X, y)
    assert list(model.classes_) == ["no", "yes"]
    proba = _check_convention(model, X)
    np.testing.assert_allclose(proba[:, 1], expit(model.decision_function(X)), rtol=1e-12)


def test_one_vs_rest_normalises_the_sigmoids_in_class_order():
    X, y = _data(n_classes=3, labels=["a", "b", "c"])
    model = PrivateLogisticRegression(classes=MULTI, multi_class="ovr", random_state=0).fit(X, y)
    assert model.multi_class_ == "ovr" and list(model.classes_) == ["a", "b", "c"]
    proba = _check_convention(model, X)
    sigmoids = expit(model.decision_function(X))
    np.testing.assert_allclose(proba, sigmoids / sigmoids.sum(axis=1, keepdims=True), rtol=1e-12)


def test_multinomial_is_the_softmax_of_the_scores():
    X, y = _data(n_classes=3, labels=["a", "b", "c"])
    model = PrivateLogisticRegression(classes=MULTI, multi_class="multinomial",
                                      random_state=0).fit(X, y)
    proba = _check_convention(model, X)
    np.testing.assert_allclose(proba, softmax(model.decision_function(X), axis=1), rtol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_kernel_logistic_is_its_linear_model_on_the_features(n_classes):
    X, y = _data(n_classes=n_classes)
    model = PrivateKernelLogisticRegression(classes=list(range(n_classes)), n_components=30,
                                            feature_random_state=1, random_state=0).fit(X, y)
    proba = _check_convention(model, X)
    np.testing.assert_allclose(proba, model.linear_model_.predict_proba(model.features_.transform(X)))


def test_tuned_logistic_model_delegates_to_the_selected_candidate():
    X, y = _data(n=600)
    search = PrivateParameterSearch(PrivateLogisticRegression(classes=[0, 1]),
                                    {"alpha": [0.01, 0.1]}, random_state=0).fit(X, y)
    proba = _check_convention(search, X)
    np.testing.assert_allclose(proba, search.best_estimator_.predict_proba(X))


def test_dask_fitted_logistic_follows_the_convention_in_memory_and_lazily():
    da = pytest.importorskip("dask.array")
    pytest.importorskip("distributed")
    X, y = _data(n=600, n_classes=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        model = PrivateLogisticRegression(classes=[0, 1, 2], random_state=0,
                                          scheduler="synchronous")
        model.fit(da.from_array(X, chunks=(200, 3)), da.from_array(y, chunks=(200,)))
    assert model.privacy_.engine == "dask" and model.multi_class_ == "ovr"
    proba = _check_convention(model, X)
    lazy = model.predict_proba(da.from_array(X, chunks=(200, 3)))
    np.testing.assert_allclose(lazy.compute(), proba, rtol=1e-12)


def _shards(X, y, sizes=(150, 150, 100)):
    edges = np.cumsum((0, *sizes))
    return [(X[a:b], y[a:b]) for a, b in zip(edges[:-1], edges[1:])]


@pytest.mark.parametrize("make", [
    lambda: PSGDClassifier(classes=[0, 1], n_rounds=20, random_state=0),
    lambda: NewtonClassifier(classes=[0, 1], random_state=0),
    lambda: LocalAggregationClassifier(classes=[0, 1], random_state=0),
], ids=["PSGDClassifier", "NewtonClassifier", "LocalAggregationClassifier"])
def test_multiparty_logistic_models_follow_the_convention(make):
    X, y = _data(n=400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(_shards(X, y))
    proba = _check_convention(model, X)
    np.testing.assert_allclose(proba[:, 1], expit(model.decision_function(X)), rtol=1e-12)
    assert not hasattr(make().set_params(loss="huber"), "predict_proba")


@pytest.mark.parametrize("model", [
    PrivateLinearSVC(), PrivateLinearSVC(loss="hinge"), PrivateKernelSVC(),
], ids=["svc-huber", "svc-hinge", "kernel-svc"])
def test_models_without_a_probability_model_have_no_predict_proba(model):
    assert not hasattr(model, "predict_proba")
