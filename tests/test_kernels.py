"""Random Fourier features and the private kernel classifiers (003 Sec. 5, Alg. 3)."""

import dataclasses
import math
import pickle
import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_circles
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import check_classifiers_train

from dperm import (
    DataClippingWarning,
    PrivacyLeakWarning,
    PrivacyRecord,
    PrivateLinearSVC,
    PrivateLogisticRegression,
)
from dperm.kernels import (
    KERNEL_NAMES,
    KERNELS,
    PAIR_MAP_KAPPA,
    RFF_NORM_BOUND,
    RandomFourierFeatures,
    kernel_matrix,
)
from dperm.linear_model._kernel import PrivateKernelLogisticRegression, PrivateKernelSVC
from tests.conftest import estimators

# Same skip, same reason as tests/linear_model/test_base.py; test_classifiers_train_without_noise
# runs the check with negligible noise.
# n_components=20 keeps scikit-learn's ~60 checks quick; the checks do not depend on D.
_SEEDS = dict(n_components=20, feature_random_state=12345, random_state=0)
#: The kernel models of the one estimator list (tests/conftest.py), seeded.
KERNEL_ESTIMATORS = list(estimators("kernel", **_SEEDS).values())
# The mechanism is the linear model's business (tests/linear_model/test_base.py runs the full checks
# for each); the kernel wrapper's code path is the same, so one extra training check suffices.
GAUSSIAN = PrivateKernelLogisticRegression(mechanism="gaussian_objective", delta=1e-5, **_SEEDS)

KERNEL_FUNCTIONS = {"rbf": rbf_kernel, "laplacian": laplacian_kernel}


def _circles(n=1200, seed=0):
    X, y = make_circles(n, noise=0.05, factor=0.5, random_state=seed)
    return X, y


# --------------------------------------------------------------------------------------
# The kernel table
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_kernel_table_kappa_bounds_every_k_x_x_and_matrix_follows_the_convention(kernel):
    """kappa = sup_x sqrt(k(x, x)) (000 Prop. 1) at far-apart and huge inputs; k matches sklearn's."""
    entry = KERNELS[kernel]
    X = np.random.default_rng(0).normal(size=(20, 3)) * np.array([1.0, 1e3, 1e-3])
    assert np.sqrt(np.diag(kernel_matrix(kernel, X, X, 0.7))).max() == pytest.approx(entry.kappa)
    np.testing.assert_allclose(kernel_matrix(kernel, X, X[:4], 0.7),
                               KERNEL_FUNCTIONS[kernel](X, X[:4], gamma=0.7))
    assert entry.name == kernel and entry.reference


def test_one_kernel_table_for_prediction_features_and_classifiers():
    """Prediction's kappa and the kernel parameter's choices come from dperm.kernels.KERNELS."""
    from dperm.mechanisms.prediction import path_kappa

    assert KERNEL_NAMES == tuple(KERNELS)
    for kernel in KERNELS:
        assert path_kappa(kernel, "exact") == KERNELS[kernel].kappa
        assert path_kappa(kernel, "features") == PAIR_MAP_KAPPA
    with pytest.raises(ValueError, match="kernel must be one of"):
        kernel_matrix("poly", np.zeros((1, 1)), np.zeros((1, 1)), 1.0)


# --------------------------------------------------------------------------------------
# RandomFourierFeatures
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_features_approximate_the_kernel(kernel):
    rng = np.random.default_rng(0)
    X = 0.5 * rng.normal(size=(30, 4))
    exact = KERNEL_FUNCTIONS[kernel](X, gamma=0.5)
    assert 0.1 < exact[np.triu_indices(30, 1)].mean() < 0.6  # a non-trivial range of values

    def error(n_components):
        V = RandomFourierFeatures(kernel, gamma=0.5, n_components=n_components,
                                  random_state=1).fit_transform(X)
        return np.abs(V @ V.T - exact)

    large = error(20000)
    assert large.max() < 0.05 and large.mean() < 0.01
    assert error(50).mean() > 3 * large.mean()  # the error shrinks like 1 / sqrt(D)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_spectral_distribution_of_the_frequencies(kernel):
    rff = RandomFourierFeatures(kernel, gamma=3.0, n_components=20000, random_state=0)
    W = rff.fit(np.zeros((1, 2))).frequencies_
    assert W.shape == (20000, 2) and rff.phases_.shape == (20000,)
    assert 0 <= rff.phases_.min() and rff.phases_.max() < 2 * np.pi
    if kernel == "rbf":  # N(0, 2 gamma I)
        assert np.std(W) == pytest.approx(np.sqrt(6.0), rel=0.02)
    else:  # Cauchy(0, gamma): median |w| = gamma
        assert np.median(np.abs(W)) == pytest.approx(3.0, rel=0.03)


def test_fit_uses_only_the_shape_of_x():
    rng = np.random.default_rng(0)
    X_a = rng.normal(size=(50, 3))
    X_b = 1e6 * rng.standard_cauchy(size=(50, 3))
    for kernel in ("rbf", "laplacian"):
        a = RandomFourierFeatures(kernel, n_components=40, random_state=7).fit(X_a)
        b = RandomFourierFeatures(kernel, n_components=40, random_state=7).fit(X_b)
        c = RandomFourierFeatures(kernel, n_components=40, random_state=7).fit(np.zeros((2, 3)))
        for other in (b, c):
            np.testing.assert_array_equal(a.frequencies_, other.frequencies_)
            np.testing.assert_array_equal(a.phases_, other.phases_)


def test_default_random_state_draws_fresh_features():
    X = np.zeros((5, 3))
    a = RandomFourierFeatures().fit(X).frequencies_
    b = RandomFourierFeatures().fit(X).frequencies_
    assert not np.allclose(a, b)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_feature_norm_is_at_most_sqrt_2_for_any_input(kernel):
    rng = np.random.default_rng(0)
    X = np.vstack([
        rng.normal(size=(200, 5)),
        rng.normal(size=(200, 5)) * 10.0 ** rng.integers(-3, 150, size=(200, 1)),
        np.full((1, 5), 1e300),
        np.zeros((1, 5)),
    ])
    rff = RandomFourierFeatures(kernel, gamma=2.0, n_components=3, random_state=0).fit(X)
    assert rff.output_norm_bound_ == RFF_NORM_BOUND == math.sqrt(2)
    V = rff.transform(X)
    assert np.isfinite(V).all()
    assert np.linalg.norm(V, axis=1).max() <= math.sqrt(2) * (1 + 1e-12)
    # The bound is tight: with D = 1, |v| = sqrt(2) |cos(w x + psi)| comes arbitrarily close.
    one = RandomFourierFeatures(kernel, n_components=1, random_state=0).fit(X)
    assert np.abs(one.transform(rng.normal(size=(5000, 5)) * 10)).max() > 0.999 * math.sqrt(2)


def test_transform_accepts_sparse_input():
    X = sparse.random(20, 6, density=0.3, format="csr", random_state=0)
    rff = RandomFourierFeatures(n_components=8, random_state=0).fit(X)
    np.testing.assert_allclose(rff.transform(X), rff.transform(X.toarray()))


def test_overflowing_projection_is_rejected():
    rff = RandomFourierFeatures(n_components=8, random_state=0).fit(np.zeros((1, 4)))
    with pytest.raises(ValueError, match="overflowed for 1 row"):
        rff.transform(np.full((2, 4), [[1.0], [1e308]]))


def test_feature_names_clone_and_pipeline():
    X, y = _circles(400)
    rff = RandomFourierFeatures(n_components=5, random_state=0).fit(X)
    names = rff.get_feature_names_out()
    assert names.tolist() == [f"randomfourierfeatures{i}" for i in range(5)]
    copy = clone(rff)
    assert copy.get_params() == rff.get_params() and not hasattr(copy, "frequencies_")
    pipe = make_pipeline(
        RandomFourierFeatures(gamma=2.0, random_state=0),
        PrivateLogisticRegression(epsilon=50.0, alpha=1e-3, data_norm=RFF_NORM_BOUND,
                                  fit_intercept=False, random_state=0),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataClippingWarning)
        assert pipe.fit(X, y).score(X, y) > 0.9


@pytest.mark.parametrize(
    "params,message",
    [
        ({"gamma": 0}, r"'gamma' parameter of RandomFourierFeatures must be a float in the range "
                       r"\(0.0, inf\)\. Got 0"),
        ({"gamma": -1.5}, "'gamma' parameter"),
        ({"gamma": np.nan}, "'gamma' parameter"),
        ({"gamma": np.inf}, "'gamma' parameter"),
        ({"n_components": 0}, r"'n_components' parameter .* an int in the range \[1, inf\)\. Got 0"),
        ({"n_components": 2.5}, "'n_components' parameter"),
        ({"kernel": "poly"}, r"'kernel' parameter .* a str among .*'rbf'.*Got 'poly'"),
        ({"random_state": "seed"}, "random_state must be None"),
    ],
)
def test_transformer_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        RandomFourierFeatures(**params).fit(np.zeros((3, 2)))


def test_transformer_rejects_nan():
    X = np.zeros((4, 2))
    X[1, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        RandomFourierFeatures().fit(X)
    rff = RandomFourierFeatures(random_state=0).fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        rff.transform(X)


# --------------------------------------------------------------------------------------
# Private kernel classifiers
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("estimator", KERNEL_ESTIMATORS + [GAUSSIAN], ids=repr)
def test_classifiers_train_without_noise(estimator):
    quiet = clone(estimator).set_params(epsilon=1e9, alpha=1e-3)
    check_classifiers_train(type(estimator).__name__, quiet)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_kernel_model_beats_linear_model_on_circles(kernel):
    X, y = _circles(1600)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    common = dict(epsilon=20.0, alpha=1e-3, random_state=0)
    kernel_scores = [
        PrivateKernelLogisticRegression(kernel=kernel, gamma=2.0, **common)
        .fit(X_train, y_train).score(X_test, y_test),
        PrivateKernelSVC(kernel=kernel, gamma=2.0, **common).fit(X_train, y_train)
        .score(X_test, y_test),
    ]
    linear_scores = [
        # data_norm=1.5: a public bound on the circles' radius (1 plus the noise).
        PrivateLogisticRegression(data_norm=1.5, **common).fit(X_train, y_train)
        .score(X_test, y_test),
        PrivateLinearSVC(data_norm=1.5, **common).fit(X_train, y_train).score(X_test, y_test),
    ]
    assert min(kernel_scores) > 0.9
    assert max(linear_scores) < 0.7
    assert min(kernel_scores) > max(linear_scores) + 0.25


def test_privacy_record_is_the_linear_models_with_norm_sqrt_2():
    X, y = _circles(500)
    model = PrivateKernelSVC(epsilon=0.5, alpha=0.05, n_components=60, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataClippingWarning)
        model.fit(X * 1e3, y)  # large rows: no clipping is needed after the map
    record = model.privacy_
    assert isinstance(record, PrivacyRecord) and record is model.linear_model_.privacy_
    assert record.mechanism == "objective" and record.loss == "huber"
    assert (record.epsilon, record.delta, record.n_problems) == (0.5, 0.0, 1)
    assert record.data_norm == record.effective_data_norm == pytest.approx(math.sqrt(2))
    assert record.n_samples == 500
    # 003 Alg. 2 with R = sqrt(2) (paper note 2) and the one-factor Jacobian bound:
    # eps' = eps - log(1 + c R^2 / (n Lambda)), beta = eps' / (2 L R); Huber h = 0.5: c = 1, L = 1.
    # (1 % of epsilon goes to approximate minima perturbation's output stage)
    assert record.epsilon_noise == pytest.approx(0.495 - np.log1p(2.0 / (500 * 0.05)))
    d, h = model.linear_model_.coef_.shape[1] + int(model.linear_model_.fit_intercept), record.noise_grid  # float-safe: the lattice L2 law for the L2 bound 2 L R
    assert record.noise_distribution == "discrete-l2-laplace"
    assert record.noise_scale == pytest.approx(
        (2 * math.sqrt(2) / h + math.sqrt(d)) * h / record.epsilon_noise, rel=1e-6)
    assert "Alg. 2" in record.reference
    linear = model.linear_model_
    assert isinstance(linear, PrivateLinearSVC) and linear.coef_.shape == (1, 60)
    assert linear.get_params()["data_norm"] == pytest.approx(math.sqrt(2))
    assert not linear.fit_intercept and model.n_features_in_ == 2


def test_intercept_counts_toward_the_norm_bound():
    X, y = _circles(300)
    model = PrivateKernelLogisticRegression(fit_intercept=True, intercept_scaling=1.0,
                                            random_state=0).fit(X, y)
    assert model.privacy_.effective_data_norm == pytest.approx(math.sqrt(3))
    assert model.linear_model_.intercept_.shape == (1,)


def test_output_perturbation_and_multiclass_records():
    X, y = _circles(400)
    record = PrivateKernelSVC(loss="hinge", mechanism="output", alpha=0.1, n_components=30,
                              random_state=0).fit(X, y).privacy_
    # 003 Alg. 1 / 000 Thm 2 with R = sqrt(2): sensitivity 2 L R / (n Lambda), plus a small
    # allowance the linear model adds for the certified (inexact) solve.
    sensitivity = 2 * math.sqrt(2) / (400 * 0.1)
    assert sensitivity <= record.sensitivity <= 1.02 * sensitivity
    assert record.loss == "hinge" and record.data_norm == pytest.approx(math.sqrt(2))
    X, y = make_blobs(600, 3, centers=3, random_state=0)
    model = PrivateKernelLogisticRegression(epsilon=3.0, gamma=0.1, random_state=0).fit(X, y)
    # the inner PrivateLogisticRegression's multi_class="auto" fits one 3-class model (issue 30)
    assert model.linear_model_.multi_class_ == "multinomial"
    assert model.privacy_.n_problems == 1
    assert model.privacy_.epsilon_per_problem == pytest.approx(3.0)
    assert model.decision_function(X).shape == (600, 3)
    np.testing.assert_allclose(model.predict_proba(X).sum(axis=1), 1.0)
    assert set(model.predict(X)) <= set(model.classes_)


def _fitted_arrays(obj, seen=None):
    """Every numpy array and float reachable from a fitted model's attributes."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, (float, int, np.number)) and not isinstance(obj, bool):
        yield np.asarray([obj])
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _fitted_arrays(item, seen)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _fitted_arrays(item, seen)
    elif dataclasses.is_dataclass(obj):
        yield from _fitted_arrays(dataclasses.asdict(obj), seen)
    elif hasattr(obj, "__dict__"):
        yield from _fitted_arrays(vars(obj), seen)


@pytest.mark.parametrize("estimator_class", [PrivateKernelSVC, PrivateKernelLogisticRegression])
def test_released_model_contains_no_training_row(estimator_class):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))  # continuous values: a stored row would be an exact match
    y = (np.linalg.norm(X, axis=1) > 1.5).astype(int)
    model = estimator_class(n_components=3, random_state=0).fit(X, y)
    arrays = list(_fitted_arrays(model))
    assert len(arrays) > 5
    for array in arrays:
        if array.dtype.kind == "f":
            assert not np.isin(array.ravel(), X.ravel()).any()
    blob = pickle.dumps(model)
    for row in X:
        assert row.tobytes() not in blob
        assert row[:2].tobytes() not in blob and row[1:].tobytes() not in blob


def test_released_w_psi_and_coefficients_reproduce_the_predictions():
    X, y = _circles(400)
    model = PrivateKernelLogisticRegression(gamma=2.0, n_components=50, epsilon=10.0,
                                            random_state=0).fit(X, y)
    W, psi = model.features_.frequencies_, model.features_.phases_
    coef, intercept = model.linear_model_.coef_, model.linear_model_.intercept_
    X_new = np.random.default_rng(1).uniform(-1, 1, size=(30, 2))
    V = np.sqrt(2 / 50) * np.cos(X_new @ W.T + psi)  # 003 Alg. 3, line 2
    np.testing.assert_allclose(model.decision_function(X_new), V @ coef.ravel() + intercept[0])
    np.testing.assert_allclose(model.predict_proba(X_new)[:, 1],
                               1 / (1 + np.exp(-(V @ coef.ravel()))))
    assert not hasattr(PrivateKernelSVC(), "predict_proba")


def test_features_are_data_independent_and_seeds_reproduce():
    X_a, y_a = _circles(300, seed=0)
    X_b, y_b = _circles(300, seed=1)
    a = PrivateKernelSVC(feature_random_state=5, random_state=0).fit(X_a, y_a)
    b = PrivateKernelSVC(feature_random_state=5, random_state=1).fit(X_b * 7, y_b)
    np.testing.assert_array_equal(a.features_.frequencies_, b.features_.frequencies_)
    np.testing.assert_array_equal(a.features_.phases_, b.features_.phases_)
    again = PrivateKernelSVC(feature_random_state=5, random_state=0).fit(X_a, y_a)
    np.testing.assert_array_equal(a.linear_model_.coef_, again.linear_model_.coef_)
    fresh = [PrivateKernelSVC().fit(X_a, y_a) for _ in range(2)]
    assert not np.allclose(fresh[0].features_.frequencies_, fresh[1].features_.frequencies_)
    assert not np.allclose(fresh[0].linear_model_.coef_, fresh[1].linear_model_.coef_)


@pytest.mark.parametrize("seeds", [(3, 3), "same generator"])
def test_shared_feature_and_noise_seed_warns(seeds):
    X, y = _circles(100)
    if seeds == "same generator":
        rng = np.random.default_rng(0)
        seeds = (rng, rng)
    with pytest.warns(PrivacyLeakWarning, match="same random stream"):
        PrivateKernelSVC(feature_random_state=seeds[0], random_state=seeds[1]).fit(X, y)


def test_kernel_estimators_clone_and_work_in_a_pipeline():
    X, y = _circles(400)
    model = PrivateKernelSVC(loss="smooth_hinge", h=0.3, gamma=2.0, epsilon=20.0, alpha=1e-3,
                             random_state=0)
    copy = clone(model)
    assert copy.get_params() == model.get_params() and not hasattr(copy, "linear_model_")
    copy.set_params(kernel="laplacian", n_components=20)
    assert copy.get_params()["kernel"] == "laplacian"
    pipe = make_pipeline(RandomFourierFeatures(n_components=2, random_state=0), model)
    assert pipe.fit(X, y).score(X, y) > 0.5
    assert model.fit(sparse.csr_matrix(X), y).score(X, y) > 0.9


@pytest.mark.parametrize("estimator_class", [PrivateKernelSVC, PrivateKernelLogisticRegression])
@pytest.mark.parametrize(
    "params,message",
    [
        ({"gamma": 0}, "'gamma' parameter of PrivateKernel"),
        ({"gamma": -2}, "'gamma' parameter"),
        ({"n_components": 0}, "'n_components' parameter"),
        ({"kernel": "sigmoid"}, "'kernel' parameter"),
        ({"epsilon": 0}, "'epsilon' parameter"),
        ({"mechanism": "laplace"}, "'mechanism' parameter"),
        ({"mechanism": "gaussian_objective"}, "needs delta > 0"),
        ({"fit_intercept": "no"}, "'fit_intercept' parameter"),
    ],
)
def test_bad_parameters_raise_value_error_naming_the_problem(estimator_class, params, message):
    X, y = _circles(50)
    with pytest.raises(ValueError, match=message):
        estimator_class(**params).fit(X, y)


@pytest.mark.parametrize(
    "params,message",
    [({"loss": "logistic"}, "'loss' parameter"), ({"loss": "hinge", "mechanism": "objective"}, "mechanism='output'"),
     ({"h": 0}, "'h' parameter")],
)
def test_bad_svc_parameters(params, message):
    X, y = _circles(50)
    with pytest.raises(ValueError, match=message):
        PrivateKernelSVC(**params).fit(X, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_is_rejected(bad):
    X, y = _circles(50)
    model = PrivateKernelLogisticRegression(random_state=0).fit(X, y)
    X[3, 1] = bad
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        PrivateKernelLogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        model.predict(X)


def test_wrong_number_of_features_is_rejected():
    X, y = _circles(50)
    model = PrivateKernelSVC(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.decision_function(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="1 class"):
        PrivateKernelSVC().fit(X, np.zeros(50))
