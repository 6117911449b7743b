"""The public label set (issue #14, finding 3): ``classes`` fixes classes_ and the epsilon split.

Neighbouring datasets D / D' differ in one record, relabelled with a rare class. With the
label set read from the data, that one record changes ``classes_``, the shape of ``coef_``
and the epsilon per problem with certainty; with ``classes`` given they are the same.
"""

import json
import warnings

import numpy as np
import pytest

from dperm import PrivacyLeakWarning, PrivacyRecord, PrivateLinearSVC, PrivateLogisticRegression
from dperm.linear_model._kernel import PrivateKernelLogisticRegression, PrivateKernelSVC
from dperm.mechanisms.catalog import MECHANISMS
from dperm.model_io import load_model, save_model
from dperm.multiparty import LocalAggregationClassifier, PSGDClassifier
from dperm.prediction import PrivatePredictor
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.labels import check_classes, resolve_label_set
from dperm.tuning import PrivateParameterSearch

LABELS = ["a", "b", "c"]
#: Record fields that are solver diagnostics of the private data (issue #14, finding 1; the
#: release-policy work removes them); everything else in the record must match on D and D'.
SOLVER_DIAGNOSTICS = {"gradient_norm", "solution_radius"}

_KERNEL = dict(n_components=20, feature_random_state=11)
ESTIMATORS = {
    "logistic-objective": lambda c: PrivateLogisticRegression(classes=c, random_state=0),
    "logistic-gaussian": lambda c: PrivateLogisticRegression(
        mechanism="gaussian_objective", delta=1e-5, classes=c, random_state=0),
    "svc-huber-output": lambda c: PrivateLinearSVC(mechanism="output", classes=c, random_state=0),
    "svc-hinge-output": lambda c: PrivateLinearSVC(loss="hinge", mechanism="output", classes=c,
                                                   random_state=0),
    "kernel-svc-hinge": lambda c: PrivateKernelSVC(loss="hinge", mechanism="output", classes=c,
                                                   random_state=0, **_KERNEL),
    "kernel-logistic": lambda c: PrivateKernelLogisticRegression(classes=c, random_state=0,
                                                                 **_KERNEL),
}


def neighbours(n=120, seed=0):
    """D with labels 'a'/'b' only, and D' with one record relabelled to the rare class 'c'."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X /= 1.2 * np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, "a", "b")
    y_prime = y.copy()
    y_prime[7] = "c"
    return X, y, y_prime


def released(model):
    """What a fit releases besides the noised coefficients: shape, classes, the record."""
    linear = getattr(model, "linear_model_", model)
    record = {k: v for k, v in model.privacy_.to_dict().items() if k not in SOLVER_DIAGNOSTICS}
    return linear.coef_.shape, linear.intercept_.shape, model.classes_.tolist(), record


@pytest.mark.parametrize("name", ESTIMATORS)
def test_given_classes_make_neighbours_release_the_same_shape_split_and_record(name):
    X, y, y_prime = neighbours()
    fit_d = ESTIMATORS[name](LABELS).fit(X, y)
    fit_d_prime = ESTIMATORS[name](LABELS).fit(X, y_prime)
    assert released(fit_d) == released(fit_d_prime)
    shape, _, classes, record = released(fit_d)
    assert classes == LABELS and shape[0] == 3
    assert record["label_set_public"] is True
    if MECHANISMS[record["mechanism"]].multiclass:  # multi_class="auto": one K-class problem
        assert record["n_problems"] == 1 and record["epsilon_per_problem"] == record["epsilon"]
    else:  # one-vs-rest: the split comes from the label set
        assert record["n_problems"] == 3
        assert record["epsilon_per_problem"] == pytest.approx(record["epsilon"] / 3)


def test_binary_public_classes_with_a_label_only_d_prime_carries():
    X, y, _ = neighbours()
    only_a = np.full(y.shape, "a")
    with_one_b = only_a.copy()
    with_one_b[3] = "b"
    fits = [PrivateLogisticRegression(classes=["a", "b"], random_state=0).fit(X, labels)
            for labels in (only_a, with_one_b)]
    assert released(fits[0]) == released(fits[1])
    assert fits[0].coef_.shape == (1, 4) and fits[0].classes_.tolist() == ["a", "b"]


def test_label_set_read_from_the_data_differs_on_neighbours_and_is_flagged():
    X, y, y_prime = neighbours()
    with pytest.warns(PrivacyLeakWarning, match="NOT covered by the privacy guarantee"):
        fit_d = PrivateLogisticRegression(random_state=0).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match=r"pass the public label set, e\.g\. classes="):
        fit_d_prime = PrivateLogisticRegression(random_state=0).fit(X, y_prime)
    assert fit_d.coef_.shape == (1, 4) and fit_d_prime.coef_.shape == (3, 4)  # the leak
    split = [(fit.privacy_.mechanism, fit.privacy_.n_problems, fit.privacy_.epsilon_per_problem)
             for fit in (fit_d, fit_d_prime)]
    assert split[0] != split[1]  # binary against the 3-class model: the record leaks too
    for fit in (fit_d, fit_d_prime):
        assert fit.privacy_.label_set_public is False
        assert "Label set: read from the training data; NOT covered" in fit.privacy_.summary()


def test_given_classes_do_not_warn_and_the_record_says_public():
    X, y, _ = neighbours()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        model = PrivateLinearSVC(classes=["a", "b"], random_state=0).fit(X, y)
    assert model.privacy_.label_set_public is True
    assert "Label set: public (given)." in model.privacy_.summary()


@pytest.mark.parametrize("name", ESTIMATORS)
def test_label_outside_classes_raises_one_line_before_the_accountant_is_charged(name):
    X, _, y_prime = neighbours()
    accountant = BudgetAccountant(epsilon=10.0, delta=1e-3)
    model = ESTIMATORS[name](["a", "b"]).set_params(accountant=accountant)
    with pytest.raises(ValueError) as error:
        model.fit(X, y_prime)
    message = str(error.value)
    assert "'c'" in message and "classes=['a', 'b']" in message and "\n" not in message
    assert accountant.spent == (0.0, 0.0)
    assert not hasattr(model, "coef_") and not hasattr(model, "privacy_")


def test_search_checks_labels_before_the_accountant_is_charged():
    X, _, y_prime = neighbours(n=300)
    accountant = BudgetAccountant(epsilon=10.0)
    search = PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [0.01, 0.1]},
                                    classes=["a", "b"], accountant=accountant, random_state=0)
    with pytest.raises(ValueError, match="label 'c' not in classes"):
        search.fit(X, y_prime)
    assert accountant.spent == (0.0, 0.0)


@pytest.mark.parametrize(
    "classes,message",
    [
        ("ab", "must be a list of labels"),
        (["a"], "at least two labels"),
        (["a", "a", "b"], "repeats a label"),
        (["a", 1], "mixes strings and numbers"),
        ([None, "a"], "strings or finite numbers; got None"),
        ([np.nan, 1.0], "strings or finite numbers; got nan"),
        ([[0, 1], [2, 3]], "flat list"),
        ({"a": 1, "b": 2}, "must be a list of labels"),
    ],
)
def test_bad_classes_raise_before_the_accountant_is_charged(classes, message):
    X, y, _ = neighbours()
    accountant = BudgetAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match=r"^classes .*" + message):
        PrivateLogisticRegression(classes=classes, accountant=accountant).fit(X, y)
    assert accountant.spent == (0.0, 0.0)


def test_classes_are_sorted_like_numpy_unique():
    assert check_classes(["b", "c", "a"]).tolist() == ["a", "b", "c"]
    assert check_classes((3, 1, 2)).tolist() == [1, 2, 3]
    assert check_classes({"y", "x"}).tolist() == ["x", "y"]
    assert check_classes(None) is None
    X, y, _ = neighbours()
    model = PrivateLogisticRegression(classes=["b", "a"], random_state=0).fit(X, y)
    assert model.classes_.tolist() == ["a", "b"]
    assert model.get_params()["classes"] == ["b", "a"]  # parameters are stored verbatim
    positive = model.decision_function(X) > 0
    np.testing.assert_array_equal(model.predict(X), np.where(positive, "b", "a"))


def test_numeric_classes_match_numeric_labels_of_any_dtype():
    X, y, _ = neighbours()
    labels = (y == "b").astype(float)  # 0.0 / 1.0
    model = PrivateLogisticRegression(classes=[0, 1, 2], random_state=0).fit(X, labels)
    assert model.classes_.tolist() == [0, 1, 2] and model.coef_.shape == (3, 4)
    assert resolve_label_set(check_classes([0, 1]), labels).public
    with pytest.raises(ValueError, match=r"labels '0', '1' not in classes=\[0, 1\]"):
        resolve_label_set(check_classes([0, 1]), np.array(["0", "1"]))


@pytest.mark.parametrize("name", ["logistic-objective", "svc-hinge-output", "kernel-svc-hinge"])
def test_a_label_no_row_carries_is_an_all_negative_problem(name):
    X, y, _ = neighbours()
    model = ESTIMATORS[name](LABELS).set_params(epsilon=50.0).fit(X, y)
    linear = getattr(model, "linear_model_", model)
    assert np.isfinite(linear.coef_).all()
    # the 'c' problem saw only negatives: at this low noise its score is below the others'
    scores = model.decision_function(X)
    assert np.mean(scores[:, 2] < scores[:, :2].max(axis=1)) > 0.9


# -- PrivatePredictor (hinge) ------------------------------------------------------------
def test_predictor_hinge_uses_public_classes():
    X, y, _ = neighbours(n=60)
    only_a = np.full(y.shape, "a")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        predictor = PrivatePredictor(5.0, 0.5, loss="hinge", classes=["b", "a"],
                                     random_state=0).fit(X, only_a)
    assert predictor.classes_.tolist() == ["a", "b"]
    assert set(predictor.predict(X[:5])) <= {"a", "b"}
    with pytest.raises(ValueError, match="label 'c' not in classes=\\['a', 'b'\\]"):
        PrivatePredictor(5.0, 0.5, loss="hinge", classes=["a", "b"]).fit(
            X, np.where(np.arange(60) == 0, "c", y))
    with pytest.raises(ValueError, match="exactly 2 labels"):
        PrivatePredictor(5.0, 0.5, loss="hinge", classes=LABELS).fit(X, y)
    with pytest.raises(ValueError, match="classes is for loss='hinge'"):
        PrivatePredictor(5.0, 0.5, classes=["a", "b"]).fit(X, X[:, 0])
    with pytest.warns(PrivacyLeakWarning, match="classes=None"):
        PrivatePredictor(5.0, 0.5, loss="hinge", random_state=0).fit(X, y)


# -- multiparty ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls,params", [(PSGDClassifier, {"n_rounds": 3}),
                                        (LocalAggregationClassifier, {})])
def test_multiparty_classes(cls, params):
    X, y, _ = neighbours(n=60)
    shards = [(X[:30], y[:30]), (X[30:], np.full(30, "a"))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        model = cls(classes=["b", "a"], random_state=0, **params).fit(shards)
    assert model.classes_.tolist() == ["a", "b"]
    one_a = [(X[:30], np.full(30, "a")), (X[30:], np.full(30, "a"))]
    assert cls(classes=["a", "b"], random_state=0, **params).fit(one_a).coef_.shape == (1, 4)
    with pytest.raises(ValueError, match="label 'c' not in classes"):
        cls(classes=["a", "b"], **params).fit([(X[:30], y[:30]), (X[30:], np.full(30, "c"))])
    with pytest.raises(ValueError, match="exactly 2 labels"):
        cls(classes=LABELS, **params).fit(shards)
    with pytest.warns(PrivacyLeakWarning, match="classes=None"):
        cls(random_state=0, **params).fit(shards)


# -- tuning -------------------------------------------------------------------------------
def test_search_passes_classes_to_every_candidate():
    X, y, _ = neighbours(n=300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        search = PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [0.01, 0.1]},
                                        classes=LABELS, random_state=0).fit(X, y)
    assert search.classes_.tolist() == LABELS
    assert search.best_estimator_.coef_.shape == (3, 4)
    assert search.privacy_.label_set_public is True
    assert "Label set: public (given)." in search.privacy_.summary()
    # the estimator's own classes are used when the search has none
    inner = PrivateParameterSearch(PrivateLogisticRegression(classes=LABELS), {"alpha": [0.1]},
                                   random_state=0).fit(X, y)
    assert inner.classes_.tolist() == LABELS
    with pytest.warns(PrivacyLeakWarning):
        unprotected = PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [0.1]},
                                             random_state=0).fit(X, y)
    assert unprotected.privacy_.label_set_public is False
    assert "NOT covered" in unprotected.privacy_.summary()


@pytest.mark.parametrize(
    "search,message",
    [
        (PrivateParameterSearch(PrivateLogisticRegression(), {"classes": [["a", "b"]]}),
         "may not set"),
        (PrivateParameterSearch(PrivateLogisticRegression(classes=["a", "b"]), {"alpha": [0.1]},
                                classes=LABELS), "differs from the estimator's classes"),
        (PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [0.1]}, classes=["a"]),
         "at least two labels"),
    ],
)
def test_search_refuses_inconsistent_classes(search, message):
    X, y, _ = neighbours()
    with pytest.raises(ValueError, match=message):
        search.fit(X, y)


# -- model files --------------------------------------------------------------------------
def _document(model, tmp_path):
    from dperm.tabular import build_spec

    columns = {f"x{i}": np.array(["0.0", "1.0"]) for i in range(4)}
    spec, _ = build_spec(columns, list(columns), public_bounds={c: [-1, 1] for c in columns},
                         row_norm_mode="clip", data_norm=1.0)
    path = tmp_path / "model.json"
    save_model(path, model, spec, "label")
    return path


def test_model_file_round_trips_classes_and_the_label_set_flag(tmp_path):
    X, y, _ = neighbours()
    model = PrivateLogisticRegression(classes=np.array(LABELS), random_state=0).fit(X, y)
    path = _document(model, tmp_path)
    document = json.loads(path.read_text())
    assert document["params"]["classes"] == LABELS and document["classes"] == LABELS
    assert document["privacy"]["label_set_public"] is True
    loaded, _, _ = load_model(path)
    assert loaded.get_params()["classes"] == LABELS and loaded.privacy_ == model.privacy_
    assert "Label set: public (given)." in loaded.privacy_.summary()

    document["params"]["classes"] = ["a", "b", "z"]
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="differs from the public label set"):
        load_model(path)


def test_model_file_without_the_field_loads_as_label_set_from_data(tmp_path):
    X, y, _ = neighbours()
    with pytest.warns(PrivacyLeakWarning):
        model = PrivateLogisticRegression(random_state=0).fit(X, y)
    path = _document(model, tmp_path)
    document = json.loads(path.read_text())
    assert document["params"]["classes"] is None
    del document["privacy"]["label_set_public"], document["params"]["classes"]  # an older file:
    del document["digest"]  # version 1, before files carried a digest
    document["version"] = 1
    path.write_text(json.dumps(document))
    with pytest.warns(UserWarning, match="has no digest"):
        loaded, _, _ = load_model(path)
    assert loaded.privacy_.label_set_public is False and loaded.classes is None
    document["privacy"]["label_set_public"] = True  # claims public without params.classes
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="label_set_public"):
        load_model(path)


def test_record_without_the_field_still_loads():
    X, y, _ = neighbours()
    record = PrivateLogisticRegression(classes=["a", "b"], random_state=0).fit(X, y).privacy_
    data = record.to_dict()
    del data["label_set_public"]
    assert PrivacyRecord.from_dict(data).label_set_public is None


# -- Dask ---------------------------------------------------------------------------------
def test_dask_fit_uses_public_classes():
    da = pytest.importorskip("dask.array")
    X, y, y_prime = neighbours()
    dX, dy = da.from_array(X, chunks=(40, 4)), da.from_array(y_prime, chunks=(40,))
    model = PrivateLogisticRegression(classes=LABELS, random_state=0, scheduler="synchronous")
    fitted = model.fit(dX, dy)
    assert fitted.classes_.tolist() == LABELS and fitted.privacy_.label_set_public is True
    with pytest.raises(ValueError, match="label 'c' not in classes"):
        PrivateLogisticRegression(classes=["a", "b"], scheduler="synchronous").fit(dX, dy)
    with pytest.warns(PrivacyLeakWarning, match="classes=None"):
        PrivateLogisticRegression(random_state=0, scheduler="synchronous").fit(
            dX, da.from_array(y, chunks=(40,)))
