"""Estimators: scikit-learn conformance, the privacy record, multiclass, bad input."""


import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import check_classifiers_train

from dperm import (
    DataClippingWarning,
    PrivacyRecord,
    PrivateLinearSVC,
    PrivateLogisticRegression,
)
from tests.conftest import estimators

# These tests clone private estimators on purpose (scikit-learn checks, repeated fits);
# dperm.cloning's BudgetWarning is for users and is tested in tests/test_cloning.py.
pytestmark = pytest.mark.filterwarnings("ignore::dperm.exceptions.BudgetWarning")


#: The linear classifiers of the one estimator list (tests/conftest.py).
ESTIMATORS = list(estimators("classifier", random_state=0).values())


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
def test_classifiers_train_without_noise(estimator):
    quiet = clone(estimator).set_params(epsilon=1e9, data_norm=100.0, alpha=1e-3)
    check_classifiers_train(type(estimator).__name__, quiet)


def _data(n=400, seed=0, scale=1.0):
    X, y = make_classification(n, 6, n_informative=4, random_state=seed)
    X = X / np.linalg.norm(X, axis=1).max() * scale
    return X, y


def test_privacy_record_for_objective_perturbation():
    X, y = _data()
    model = PrivateLogisticRegression(epsilon=0.5, alpha=0.05, fit_intercept=False, random_state=0)
    record = model.fit(X, y).privacy_
    assert isinstance(record, PrivacyRecord)
    assert record.mechanism == "objective" and record.loss == "logistic"
    assert (record.epsilon, record.delta, record.n_problems) == (0.5, 0.0, 1)
    # approximate minima perturbation: 1 % of epsilon for the output stage
    assert record.epsilon_noise == pytest.approx(0.495 - np.log1p(0.25 / (400 * 0.05)))
    assert record.output_epsilon == pytest.approx(0.005)
    assert record.extra_regularization == 0.0
    d, h = X.shape[1], record.noise_grid  # the lattice L2 law for the L2 bound 2 L R (+ sqrt(d) steps)
    assert record.noise_distribution == "discrete-l2-laplace"
    assert record.noise_scale == pytest.approx((2 / h + np.sqrt(d)) * h / record.epsilon_noise, rel=1e-6)
    assert record.output_sensitivity == pytest.approx(2 * record.solution_radius_allowance)
    assert record.sensitivity is None
    assert (record.data_norm, record.effective_data_norm) == (1.0, 1.0)
    assert record.n_samples == 400 and record.tol == 1e-8
    assert not hasattr(record, "rows_clipped") and not hasattr(record, "gradient_norm")
    assert "Alg. 2" in record.reference
    assert "0.5-DP" in record.summary()
    assert PrivacyRecord.from_dict(record.to_dict()) == record


def test_privacy_record_for_gaussian_objective():
    X, y = _data()
    model = PrivateLinearSVC(mechanism="gaussian_objective", epsilon=1.0, delta=1e-6, random_state=0)
    record = model.fit(X, y).privacy_
    assert record.delta == 1e-6 and record.noise_distribution == "discrete-gaussian"
    assert record.curvature == pytest.approx(1.0)  # Huber h = 0.5: c = 1/(2h)
    assert "(1, 1e-06)-DP" in record.summary()


def test_output_perturbation_record_has_sensitivity():
    X, y = _data(n=300)
    record = PrivateLogisticRegression(mechanism="output", alpha=0.1, fit_intercept=False,
                                       random_state=0).fit(X, y).privacy_
    assert record.sensitivity == pytest.approx(2 / (300 * 0.1) + 2 * 1e-8 / 0.1)
    assert record.delta == 0.0


def test_pure_mechanisms_report_delta_zero_even_if_given():
    X, y = _data()
    record = PrivateLogisticRegression(delta=1e-5, random_state=0).fit(X, y).privacy_
    assert record.delta == 0.0


def test_intercept_counts_toward_the_norm_bound():
    X, y = _data(scale=2.0)
    model = PrivateLogisticRegression(data_norm=2.0, intercept_scaling=1.5, random_state=0).fit(X, y)
    assert model.privacy_.effective_data_norm == pytest.approx(np.hypot(2.0, 1.5))
    assert model.intercept_.shape == (1,) and model.coef_.shape == (1, 6)
    decision = X @ model.coef_.ravel() + model.intercept_[0]
    np.testing.assert_allclose(model.decision_function(X), decision)


def test_rows_above_data_norm_are_clipped_and_counted():
    X, y = _data(scale=1.0)
    X[:7] *= 3.0 / np.linalg.norm(X[:7], axis=1, keepdims=True)
    with pytest.warns(DataClippingWarning, match="some rows") as caught:
        PrivateLogisticRegression(random_state=0).fit(X, y)
    assert "7" not in str(caught[0].message)  # the count is a function of the private rows


def test_random_state_reproduces_and_default_draws_fresh_noise():
    X, y = _data()
    a = PrivateLogisticRegression(random_state=3).fit(X, y).coef_
    b = PrivateLogisticRegression(random_state=3).fit(X, y).coef_
    c = PrivateLogisticRegression().fit(X, y).coef_
    d = PrivateLogisticRegression().fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(c, d)


def test_multiclass_is_one_vs_rest_with_split_budget():
    X, y = make_blobs(600, 4, centers=3, random_state=0)
    X = X / np.linalg.norm(X, axis=1).max()
    # multi_class="ovr": with delta > 0 and mechanism="gaussian_objective", "auto" may run the
    # Gaussian multinomial model instead (tests/linear_model/test_multinomial_gaussian.py)
    model = PrivateLogisticRegression(epsilon=3.0, delta=3e-6, mechanism="gaussian_objective",
                                      alpha=0.01, multi_class="ovr", random_state=0).fit(X, y)
    record = model.privacy_
    assert record.n_problems == 3
    assert record.epsilon_per_problem == pytest.approx(1.0)
    assert record.delta_per_problem == pytest.approx(1e-6)
    assert record.epsilon == 3.0
    assert "One-vs-rest over 3 classes" in record.summary()
    assert model.coef_.shape == (3, 4) and not hasattr(model, "n_iter_")
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(model.predict(X)) <= set(model.classes_)


def test_binary_with_string_labels_and_predict_proba():
    X, y = _data()
    labels = np.where(y == 1, "yes", "no")
    model = PrivateLogisticRegression(epsilon=5, random_state=0).fit(X, labels)
    assert list(model.classes_) == ["no", "yes"]
    proba = model.predict_proba(X)
    assert proba.shape == (400, 2)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-model.decision_function(X))))
    np.testing.assert_allclose(model.predict_log_proba(X), np.log(proba))
    assert 0.5 < model.score(X, labels) <= 1.0


def test_accuracy_improves_with_epsilon():
    X, y = make_classification(4000, 5, n_informative=3, class_sep=2.0, random_state=1)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    def mean_score(eps):
        return np.mean([PrivateLogisticRegression(epsilon=eps, alpha=1e-3, random_state=s)
                        .fit(X, y).score(X, y) for s in range(5)])
    assert mean_score(10.0) > mean_score(0.01) + 0.1


def test_works_in_a_pipeline_and_clones():
    X, y = _data()
    # a fixed alpha: at n = 400 the public rule's small alpha leaves little of epsilon for the
    # noise (003's Jacobian term), and this test is about the pipeline, not the rule
    model = PrivateLinearSVC(loss="smooth_hinge", h=0.3, epsilon=5.0, alpha=0.01, random_state=0)
    pipe = make_pipeline(FunctionTransformer(lambda a: a * 0.5), model).fit(X, y)
    assert pipe.score(X, y) > 0.5
    copy = clone(model)
    assert copy.get_params() == model.get_params() and not hasattr(copy, "coef_")
    copy.set_params(h=0.7, mechanism="output")
    assert copy.get_params()["h"] == 0.7


@pytest.mark.parametrize(
    "params,message",
    [
        ({"epsilon": 0}, r"'epsilon' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"epsilon": -1}, r"'epsilon' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"epsilon": np.inf}, r"'epsilon' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"delta": -0.1}, r"'delta' parameter of \w+ must be a float in the range \[0.0, 1.0\)"),
        ({"delta": 1.0}, r"'delta' parameter of \w+ must be a float in the range \[0.0, 1.0\)"),
        ({"alpha": 0}, r"'alpha' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"data_norm": 0}, r"'data_norm' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"data_norm": -2}, r"'data_norm' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"mechanism": "laplace"}, r"'mechanism' parameter of \w+ must be a str among"),
        ({"mechanism": "gaussian_objective", "delta": 0.0}, "needs delta > 0"),
        ({"tol": 0}, "'tol' parameter"),
        ({"max_iter": 0}, "'max_iter' parameter of \\w+ must be an int"),
        ({"fit_intercept": "yes"}, "'fit_intercept' parameter of \\w+ must be an instance of 'bool'"),
    ],
)
def test_bad_parameters_raise_value_error_naming_the_problem(params, message):
    X, y = _data(n=50)
    with pytest.raises(ValueError, match=message):
        PrivateLogisticRegression(**params).fit(X, y)


@pytest.mark.parametrize(
    "params,message",
    [
        ({"h": 0}, r"'h' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"h": -1}, r"'h' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"loss": "squared"}, r"'loss' parameter of \w+ must be a str among"),
        ({"loss": "hinge", "mechanism": "objective"}, "mechanism='output'"),
        ({"loss": "hinge", "mechanism": "gaussian_objective", "delta": 1e-5}, "mechanism='output'"),
    ],
)
def test_bad_svc_parameters(params, message):
    X, y = _data(n=50)
    with pytest.raises(ValueError, match=message):
        PrivateLinearSVC(**params).fit(X, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_rejected(bad):
    X, y = _data(n=50)
    X[3, 2] = bad
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        PrivateLogisticRegression().fit(X, y)


def test_one_class_is_rejected():
    X, _ = _data(n=50)
    with pytest.raises(ValueError, match="1 class"):
        PrivateLogisticRegression().fit(X, np.ones(50))


def test_continuous_labels_are_rejected():
    X, _ = _data(n=50)
    with pytest.raises(ValueError, match="Unknown label type"):
        PrivateLogisticRegression().fit(X, np.linspace(0, 1, 50))


def test_mismatched_shapes_are_rejected():
    X, y = _data(n=50)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        PrivateLogisticRegression().fit(X, y[:-1])
    model = PrivateLogisticRegression(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
