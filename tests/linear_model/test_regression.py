"""Private regressors: scikit-learn conformance, calibration, noise, bounds, bad input."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.utils.estimator_checks import check_regressors_train

from dperm.exceptions import DataClippingWarning
from dperm.linear_model._regression import PrivateLeastSquares, PrivateQuantileRegressor
from dperm.losses import PinballLoss
from dperm.privacy.record import PrivacyRecord
from dperm.solvers import solve_nonsmooth

# These tests clone private estimators on purpose (scikit-learn checks, repeated fits);
# dperm.cloning's BudgetWarning is for users and is tested in tests/test_cloning.py.
pytestmark = pytest.mark.filterwarnings("ignore::dperm.exceptions.BudgetWarning")


@pytest.mark.parametrize(
    "estimator",
    # The 0.9-quantile line is not a mean predictor: even unregularised, noise-free
    # quantile regression scores R^2 ~ 0.43 on this data, so only the median is checked.
    [PrivateQuantileRegressor(random_state=0), PrivateLeastSquares(y_bound=100.0, random_state=0)],
    ids=repr,
)
def test_regressors_train_without_noise(estimator):
    # least squares at y_bound = data_norm = 100 has sensitivity ~1e9: epsilon 1e12 makes its
    # (per-coordinate, L1-calibrated) noise negligible
    quiet = clone(estimator).set_params(epsilon=1e12, data_norm=100.0, alpha=1e-3)
    check_regressors_train(type(estimator).__name__, quiet)


def _data(n=500, d=4, seed=0, noise="normal", data_norm=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (data_norm * rng.uniform(0.1, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    coef = np.linspace(-1.0, 1.0, d)
    draw = rng.standard_t(3, size=n) if noise == "heavy" else 0.2 * rng.normal(size=n)
    return X, X @ coef + 0.3 + draw, coef


# -- calibration and the privacy record -----------------------------------------


def test_quantile_record_uses_theorem_2_with_the_pinball_constant():
    X, y, _ = _data(n=400)
    model = PrivateQuantileRegressor(quantile=0.8, epsilon=0.5, alpha=0.05, data_norm=1.0,
                                     intercept_scaling=2.0, random_state=0).fit(X, y)
    record = model.privacy_
    assert isinstance(record, PrivacyRecord)
    kappa = math.hypot(1.0, 2.0)  # the intercept feature counts toward the norm bound
    exact = 2 * 0.8 * kappa / (400 * 0.05)  # 000 Thm 2, C_L = max(tau, 1 - tau) = 0.8
    assert record.effective_data_norm == pytest.approx(kappa)
    assert record.lipschitz == pytest.approx(0.8) and record.curvature is None
    assert record.sensitivity == pytest.approx(exact * 1.01)  # + 2 x the 0.5 % solve radius
    d, g = 5, record.noise_grid  # 4 features and the intercept; the lattice L2 law for the L2 bound
    assert record.noise_distribution == "discrete-l2-laplace"
    assert record.noise_scale == pytest.approx((record.sensitivity / g + np.sqrt(d)) * g / 0.5, rel=1e-6)
    assert (record.mechanism, record.loss, record.delta) == ("output", "pinball", 0.0)
    assert record.solution_radius_allowance == pytest.approx(0.005 * exact)
    assert "Nie & Wang" in record.reference and "0.5-DP" in record.summary()
    assert PrivacyRecord.from_dict(record.to_dict()) == record
    assert model.coef_.shape == (4,) and isinstance(model.intercept_, float)
    assert not hasattr(model, "n_iter_") and not hasattr(model, "labels_clipped_")


def test_least_squares_record_uses_the_derived_constant():
    X, y, _ = _data(n=300)
    M, alpha, kappa = 2.0, 0.5, math.sqrt(2.0)
    model = PrivateLeastSquares(y_bound=M, epsilon=2.0, alpha=alpha, random_state=0).fit(X, y)
    record = model.privacy_
    lam = alpha / 2  # note 7
    c_l = 2 * M * (1 + kappa / math.sqrt(lam))  # 000 Sec. 5.1, unrelaxed
    assert record.lipschitz == pytest.approx(c_l)
    # 000 Thm 2 with gamma = 2: 2 kappa C_L / (lambda gamma m), plus 2 tol / alpha
    assert record.sensitivity == pytest.approx(2 * kappa * c_l / (lam * 2 * 300) + 2 * 1e-8 / alpha)
    assert record.loss == "squared" and record.solution_radius_allowance == pytest.approx(1e-8 / alpha)


def test_noise_on_released_coefficients_is_discrete_laplace_at_the_calibrated_scale():
    X, y, _ = _data(n=200, d=2)
    y = np.clip(y, -1, 1)
    alpha = 1.0
    base = PrivateLeastSquares(y_bound=1.0, epsilon=1.0, alpha=alpha, fit_intercept=False)
    A = 2 * X.T @ X / len(y) + alpha * np.eye(2)
    exact = np.linalg.solve(A, 2 * X.T @ y / len(y))  # the normal equations
    noise, scale = [], None
    for seed in range(300):
        model = clone(base).set_params(random_state=seed).fit(X, y)
        noise.extend(model.coef_ - exact)
        scale = model.privacy_.noise_scale
    # per coordinate, on a grid far finer than the scale
    assert stats.kstest(np.array(noise) / scale, stats.laplace.cdf).pvalue > 0.01


def test_pinball_solve_is_within_the_certified_radius():
    X, y, _ = _data(n=300, noise="heavy")
    Xa = np.hstack([X, np.ones((300, 1))])
    loss, alpha = PinballLoss(0.3), 0.02
    rough = solve_nonsmooth(loss, Xa, y, alpha, 1e-3, 1000)
    precise = solve_nonsmooth(loss, Xa, y, alpha, 1e-6, 1000)
    assert rough.certified and precise.certified
    assert np.linalg.norm(rough.coef - precise.coef) <= rough.solution_radius + precise.solution_radius


# -- what the models estimate ------------------------------------------------------


@pytest.mark.parametrize("quantile", [0.1, 0.5, 0.9])
def test_quantile_regressor_covers_its_quantile(quantile):
    X, y, _ = _data(n=3000, noise="heavy", seed=1)
    model = PrivateQuantileRegressor(quantile=quantile, epsilon=1e6, alpha=1e-4, random_state=0).fit(X, y)
    assert np.mean(y <= model.predict(X)) == pytest.approx(quantile, abs=0.03)


def test_quantile_regressor_is_robust_and_accurate_with_privacy():
    X, y, coef = _data(n=20000, noise="heavy", seed=2)
    model = PrivateQuantileRegressor(epsilon=1.0, alpha=1e-3, random_state=0).fit(X, y)
    released = np.append(model.coef_, model.intercept_)
    # discrete Laplace per coordinate for the L1 bound sqrt(5) S: scale about sqrt(5) x 0.07;
    # the median line is (coef, 0.3)
    assert model.privacy_.noise_scale < 0.17
    assert np.linalg.norm(released - np.append(coef, 0.3)) < 0.6


def test_least_squares_without_noise_matches_ridge():
    X, y, _ = _data(n=400)
    y = np.clip(y, -2, 2)
    alpha = 0.05
    model = PrivateLeastSquares(y_bound=2.0, epsilon=1e12, alpha=alpha, fit_intercept=False,
                                random_state=0).fit(X, y)
    # (1/n) sum r^2 + alpha/2 ||w||^2  <=>  ||y - Xw||^2 + (n alpha / 2) ||w||^2
    ridge = Ridge(alpha=len(y) * alpha / 2, fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(model.coef_, ridge.coef_, atol=1e-6)


def test_least_squares_clips_labels_and_projects_predictions():
    X, y, _ = _data(n=200)
    y = np.clip(y, -1.0, 1.0)
    y[:9] = np.where(y[:9] > 0, 5.0, -5.0)
    with pytest.warns(DataClippingWarning, match="some targets"):
        model = PrivateLeastSquares(y_bound=1.5, epsilon=0.1, alpha=0.1, random_state=0).fit(X, y)
    assert not hasattr(model, "labels_clipped_")  # a count of private labels is not released
    far = 50.0 * np.vstack([model.coef_, -model.coef_])
    np.testing.assert_allclose(model.predict(far), [1.5, -1.5])  # 002 eq. 2: pi onto [-M, M]
    assert np.all(np.abs(model.predict(X)) <= 1.5)


def test_rows_above_data_norm_are_clipped_and_counted():
    X, y, _ = _data(n=100)
    X[:4] *= 5.0 / np.linalg.norm(X[:4], axis=1, keepdims=True)
    with pytest.warns(DataClippingWarning, match="some rows"):
        model = PrivateQuantileRegressor(random_state=0).fit(X, y)
    assert "rows_clipped" not in model.privacy_.to_dict()


def test_random_state_reproduces_and_default_draws_fresh_noise():
    X, y, _ = _data(n=200)
    a = PrivateQuantileRegressor(random_state=3).fit(X, y).coef_
    b = PrivateQuantileRegressor(random_state=3).fit(X, y).coef_
    c = PrivateQuantileRegressor().fit(X, y).coef_
    d = PrivateQuantileRegressor().fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(c, d)


def test_without_intercept_the_norm_bound_is_the_data_norm():
    X, y, _ = _data(n=200)
    model = PrivateLeastSquares(y_bound=3.0, fit_intercept=False, random_state=0).fit(X, y)
    assert model.intercept_ == 0.0 and model.privacy_.effective_data_norm == 1.0
    np.testing.assert_allclose(model.predict(X), np.clip(X @ model.coef_, -3, 3))


def test_score_is_r_squared():
    X, y, _ = _data(n=2000)
    model = PrivateQuantileRegressor(epsilon=100.0, alpha=1e-3, random_state=0).fit(X, y)
    residual = ((y - model.predict(X)) ** 2).sum()
    assert model.score(X, y) == pytest.approx(1 - residual / ((y - y.mean()) ** 2).sum())


# -- bad input ---------------------------------------------------------------------


@pytest.mark.parametrize("quantile", [0.0, 1.0, -0.2, 1.5, np.nan, np.inf, "median", None])
def test_quantile_outside_the_open_unit_interval(quantile):
    X, y, _ = _data(n=20)
    with pytest.raises(ValueError, match=r"'quantile' parameter of \w+ must be a float in the range \(0.0, 1.0\)"):
        PrivateQuantileRegressor(quantile=quantile).fit(X, y)


@pytest.mark.parametrize("y_bound", [0.0, -1.0, np.nan, np.inf, "1"])
def test_bad_y_bound(y_bound):
    X, y, _ = _data(n=20)
    with pytest.raises(ValueError, match=r"'y_bound' parameter of \w+ must be a float in the range \(0.0, inf\)"):
        PrivateLeastSquares(y_bound=y_bound).fit(X, y)


@pytest.mark.parametrize("cls", [PrivateQuantileRegressor, PrivateLeastSquares])
@pytest.mark.parametrize(
    "params,message",
    [
        ({"epsilon": 0}, r"'epsilon' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"epsilon": np.nan}, r"'epsilon' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"epsilon": np.inf}, r"'epsilon' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"alpha": -1}, r"'alpha' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"alpha": np.nan}, r"'alpha' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"data_norm": 0}, r"'data_norm' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"data_norm": np.inf}, r"'data_norm' parameter of \w+ must be a float in the range \(0.0, inf\)"),
        ({"intercept_scaling": 0}, "'intercept_scaling' parameter"),
        ({"tol": -1e-3}, "'tol' parameter"),
        ({"max_iter": 0}, "'max_iter' parameter of \\w+ must be an int"),
        ({"fit_intercept": "yes"}, "'fit_intercept' parameter of \\w+ must be an instance of 'bool'"),
    ],
)
def test_bad_parameters_raise_value_error_naming_the_problem(cls, params, message):
    X, y, _ = _data(n=20)
    with pytest.raises(ValueError, match=message):
        cls(**params).fit(X, y)


@pytest.mark.parametrize("cls", [PrivateQuantileRegressor, PrivateLeastSquares])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_data_is_rejected(cls, bad):
    X, y, _ = _data(n=20)
    X_bad = X.copy()
    X_bad[3, 1] = bad
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        cls().fit(X_bad, y)
    y_bad = y.copy()
    y_bad[5] = bad
    with pytest.raises(ValueError, match="Input y contains (NaN|infinity)"):
        cls().fit(X, y_bad)


def test_mismatched_shapes_are_rejected():
    X, y, _ = _data(n=30)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        PrivateQuantileRegressor().fit(X, y[:-1])
    model = PrivateQuantileRegressor(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])


# -- the quantile regressor's public target bounds (issue 30) ------------------------------


def _natural_units(n=20000, seed=5):
    """Rows of norm <= 1 and a median line in natural units (centre 500, half width 300)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3)) / np.sqrt(3)
    unit = np.clip(X @ np.array([1.2, -0.8, 0.5]) + 0.1 + 0.1 * rng.standard_t(3, size=n), -1, 1)
    return X, unit, 500.0 + 300.0 * unit


def test_quantile_bounds_map_the_target_onto_the_unit_interval_and_back():
    X, unit, y = _natural_units()
    natural = PrivateQuantileRegressor(y_bounds=(200.0, 800.0), epsilon=2.0, random_state=0).fit(X, y)
    scaled = PrivateQuantileRegressor(y_bounds=(-1.0, 1.0), epsilon=2.0, random_state=0).fit(X, unit)
    # the same release, mapped back by the public centre and half width (post-processing)
    np.testing.assert_allclose(natural.coef_, 300.0 * scaled.coef_, rtol=1e-9, atol=1e-9)
    assert natural.intercept_ == pytest.approx(500.0 + 300.0 * scaled.intercept_, rel=1e-9)
    np.testing.assert_allclose(natural.predict(X), 500.0 + 300.0 * scaled.predict(X), rtol=1e-9)
    assert natural.score(X, y) == pytest.approx(scaled.score(X, unit), abs=0.03)
    assert natural.score(X, y) > 0.5
    assert natural.privacy_.target_bounds == (200.0, 800.0)
    assert "mapped onto [-1, 1]" in natural.privacy_.summary()


def test_quantile_predictions_are_clipped_to_the_bounds_in_user_units():
    X, _, y = _natural_units(n=2000)
    model = PrivateQuantileRegressor(y_bounds=(200.0, 800.0), epsilon=1.0, random_state=0).fit(X, y)
    far = np.array([[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0]]) * 50
    predictions = model.predict(far)
    assert np.all((predictions >= 200.0) & (predictions <= 800.0))


def test_quantile_clipping_warning_is_decided_in_user_units():
    X, _, y = _natural_units(n=500)
    y = np.clip(y, 200.0, 800.0)
    y[:2] = [200.0, 800.0]  # at the bounds: no warning, whatever the map's rounding
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataClippingWarning)
        PrivateQuantileRegressor(y_bounds=(200.0, 800.0), epsilon=1.0, random_state=0).fit(X, y)
    y[0] = 800.0 + 1e-9
    with pytest.warns(DataClippingWarning, match=r"\[200, 800\]"):
        PrivateQuantileRegressor(y_bounds=(200.0, 800.0), epsilon=1.0, random_state=0).fit(X, y)
