"""PrivateLeastSquares by default: AdaSSP, public target bounds, an unpenalised intercept (issue 30)."""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from dperm import DataClippingWarning, PrivateLeastSquares
from dperm.linear_model._targets import check_target_bounds, clip_targets, to_unit_interval
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.release import DERIVED, PUBLIC, release_kinds
from dperm.privacy.sufficient_statistics_record import SufficientStatisticsRecord
from tests._release_checks import non_noised


def _data(n=3000, d=3, seed=0, offset=40.0, scale=10.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = offset + scale * (X @ np.linspace(1.0, -1.0, d)) + rng.normal(size=n)
    return X, y


# -- the default and mechanism="auto" -----------------------------------------------------
def test_default_is_adassp_and_auto_reasons_from_public_inputs():
    X, y = _data()
    model = PrivateLeastSquares(y_bounds=(20, 60), random_state=0).fit(X, y)
    assert model.mechanism_ == "adassp" and model.privacy_.delta == 0.0
    assert not hasattr(model, "alpha_")
    assert isinstance(model.privacy_, SufficientStatisticsRecord)
    assert "adassp" in model.privacy_.mechanism_choice
    # a given alpha asks for a fixed ridge: output perturbation
    ridge = PrivateLeastSquares(y_bounds=(20, 60), alpha=0.1, random_state=0).fit(X, y)
    assert ridge.mechanism_ == "output" and ridge.alpha_ == 0.1
    assert "alpha is given" in ridge.privacy_.mechanism_choice
    # delta > 0: the form with the smaller public noise; at d = 30 the Gaussian one
    wide = np.random.default_rng(1).uniform(-0.1, 0.1, size=(3000, 30))
    gaussian = PrivateLeastSquares(y_bounds=(-1, 1), delta=1e-6, random_state=0).fit(wide, y / 100)
    assert gaussian.mechanism_ == "gaussian_adassp" and gaussian.privacy_.delta == 1e-6
    assert "smaller public noise" in gaussian.privacy_.mechanism_choice


def test_refitting_with_another_mechanism_leaves_no_stale_alpha():
    X, y = _data(n=500)
    model = PrivateLeastSquares(y_bounds=(20, 60), alpha=0.1, random_state=0).fit(X, y)
    model.set_params(alpha="auto").fit(X, y)
    assert model.mechanism_ == "adassp" and not hasattr(model, "alpha_")


def test_without_noise_it_is_ordinary_least_squares_with_the_intercept_unshrunk():
    X, y = _data(n=5000, offset=40.0)
    with pytest.warns(Warning):  # epsilon 1e6 protects little
        model = PrivateLeastSquares(y_bounds=(20, 60), epsilon=1e6, random_state=0).fit(X, y)
    ols = LinearRegression().fit(X, y)
    np.testing.assert_allclose(model.coef_, ols.coef_, rtol=0, atol=0.02)
    assert model.intercept_ == pytest.approx(ols.intercept_, abs=0.02)  # 40, not shrunk toward 0


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_good_by_default_on_a_large_table(delta):
    """n = 20,000: at eps 1 within 0.8x of scikit-learn's R^2 (issue 30's target, synthetic data)."""
    X, y = _data(n=20000, d=8, seed=3, offset=100.0, scale=6.0)
    reference = LinearRegression().fit(X, y).score(X, y)
    scores = [PrivateLeastSquares(y_bounds=(80, 120), epsilon=1.0, delta=delta, random_state=s)
              .fit(X, y).score(X, y) for s in range(3)]
    assert min(scores) >= 0.8 * reference, (scores, reference)


def test_more_budget_never_hurts_on_average():
    X, y = _data(n=2000, d=5, seed=5)
    means = []
    for epsilon in (0.3, 1.0, 3.0, 10.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            means.append(np.mean([PrivateLeastSquares(y_bounds=(20, 60), epsilon=epsilon,
                                                      random_state=s).fit(X, y).score(X, y)
                                  for s in range(6)]))
    assert all(b >= a - 0.01 for a, b in zip(means, means[1:])), means
    assert means[0] >= -0.02, means


# -- target bounds --------------------------------------------------------------------------
def test_bounds_at_the_data_min_and_max_never_warn():
    """The issue's 1 + 2e-16: the affine map of an exact min/max may round past 1; no warning."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(200):
        y = rng.uniform(-1e3, 1e3, 2) @ [[1, 0], [0, 1]] * rng.uniform(0, 1, 2) + rng.normal(size=2)
        lower, upper = float(min(y)), float(max(y))
        centre, half = lower / 2 + upper / 2, upper / 2 - lower / 2
        hits += bool((upper - centre) / half > 1 or (lower - centre) / half < -1)
        assert clip_targets(y, lower, upper)[1] == 0
        assert np.all(np.abs(to_unit_interval(y, lower, upper)) <= 1.0)
    assert hits  # the rounding case does occur
    X = rng.uniform(-0.5, 0.5, size=(200, 2))
    y = 0.1 + 0.6 * rng.uniform(size=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataClippingWarning)
        PrivateLeastSquares(y_bounds=(y.min(), y.max()), random_state=0).fit(X, y)


def test_targets_outside_are_clipped_with_a_warning_and_no_row_dropped():
    X, y = _data(n=400)
    y[:5] = [1e6, -1e6, np.float64(60.000001), 19.9, 1e300]
    with pytest.warns(DataClippingWarning, match=r"outside the public bounds \[20, 60\]"):
        model = PrivateLeastSquares(y_bounds=(20, 60), random_state=0).fit(X, y)
    assert model.privacy_.n_samples == 400
    # predictions are mapped back and clipped to the public bounds (002 eq. 2)
    model.coef_ = np.array([1e6, 0.0, 0.0])
    predictions = model.predict(X)
    assert predictions.min() == 20.0 and predictions.max() == 60.0


def test_asymmetric_bounds_do_not_waste_half_the_range():
    X, y = _data(n=3000, offset=40.0)
    positive = PrivateLeastSquares(y_bounds=(20, 60), epsilon=1.0, random_state=0).fit(X, y)
    symmetric = PrivateLeastSquares(y_bound=60, epsilon=1.0, random_state=0).fit(X, y)
    assert positive.privacy_.target_lower == 20 and symmetric.privacy_.target_lower == -60
    assert positive.score(X, y) > symmetric.score(X, y)


@pytest.mark.parametrize("y_bound,y_bounds,message", [
    (2.0, (0, 1), "not both"),
    (None, (1, 1), "lower < upper"),
    (None, (2, 1), "lower < upper"),
    (None, (0, np.inf), "finite"),
    (None, (0, np.nan), "finite"),
    (None, (0, 1, 2), "pair"),
    (None, 5, "pair"),
    (None, ("a", 1), "finite"),
])
def test_bad_target_bounds_are_refused_before_any_budget(y_bound, y_bounds, message):
    X, y = _data(n=100)
    accountant = BudgetAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match=message):
        PrivateLeastSquares(y_bound=y_bound, y_bounds=y_bounds, accountant=accountant).fit(X, y)
    assert accountant.spent == (0.0, 0.0)


def test_check_target_bounds_defaults_and_shorthand():
    assert check_target_bounds(None, None) == (-1.0, 1.0)
    assert check_target_bounds(3, None) == (-3.0, 3.0)
    assert check_target_bounds(None, [2, 5]) == (2.0, 5.0)


@pytest.mark.parametrize("params,message", [
    (dict(mechanism="adassp", alpha=0.1), "would be ignored"),
    (dict(mechanism="gaussian_adassp"), "needs delta > 0"),
    (dict(delta=0.02), "delta"),  # >= 1/n for n = 100
    (dict(mechanism="objective"), "mechanism"),
])
def test_refusals_before_any_budget(params, message):
    X, y = _data(n=100)
    accountant = BudgetAccountant(epsilon=10.0, delta=0.5)
    with pytest.raises(ValueError, match=message):
        PrivateLeastSquares(y_bounds=(20, 60), accountant=accountant, **params).fit(X, y)
    assert accountant.spent == (0.0, 0.0)


def test_the_budget_spent_is_the_records():
    X, y = _data(n=500)
    accountant = BudgetAccountant(epsilon=5.0, delta=1e-3)
    PrivateLeastSquares(y_bounds=(20, 60), epsilon=1.0, random_state=0, accountant=accountant).fit(X, y)
    PrivateLeastSquares(y_bounds=(20, 60), epsilon=1.0, delta=1e-4, mechanism="gaussian_adassp",
                        random_state=0, accountant=accountant).fit(X, y)
    assert accountant.spent == pytest.approx((2.0, 1e-4))


# -- what is released ---------------------------------------------------------------------
@pytest.mark.parametrize("params", [dict(), dict(delta=1e-4, mechanism="gaussian_adassp"),
                                    dict(alpha=0.2), dict(fit_intercept=False)])
def test_neighbour_swap_changes_nothing_but_the_noised_values(params):
    """D and D' differ in one row (an over-long row, an out-of-range target): with the same seed,
    every released attribute and record field but the coefficients is identical."""
    X, y = _data(n=300, seed=11)
    X_prime, y_prime = X.copy(), y.copy()
    X_prime[17] = [50.0, -50.0, 3.0]
    y_prime[17] = -1e9
    fits = []
    for A, b in ((X, y), (X_prime, y_prime)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataClippingWarning)
            fits.append(PrivateLeastSquares(y_bounds=(20, 60), random_state=4, **params).fit(A, b))
    a, b = (non_noised(model) for model in fits)
    assert a.keys() == b.keys() and all(a[k] == b[k] for k in a), \
        {k: (a[k], b[k]) for k in a if a[k] != b[k]}
    assert not np.array_equal(fits[0].coef_, fits[1].coef_)


@pytest.mark.parametrize("params", [dict(), dict(delta=1e-4, mechanism="gaussian_adassp")])
def test_record_is_public_and_recomputable(params):
    X, y = _data(n=800)
    model = PrivateLeastSquares(y_bounds=(20, 60), epsilon=0.7, random_state=0, **params).fit(X, y)
    record = model.privacy_
    kinds = release_kinds(record)
    assert set(kinds.values()) <= {PUBLIC, DERIVED}  # the noised statistics and lambda are not in it
    assert not {"ridge", "gram", "moment", "min_eigenvalue"} & set(kinds)
    assert record == model._public_record(800, 3)
    assert SufficientStatisticsRecord.from_dict(record.to_dict()) == record
    assert record.epsilon == 0.7 and record.dimension == 4
    assert record.effective_data_norm == pytest.approx(math.sqrt(2.0))
    assert record.gram_sensitivity == pytest.approx(2 * math.sqrt(2.0))  # sqrt(2) R^2, R^2 = 2
    assert record.moment_sensitivity == pytest.approx(2 * math.sqrt(2.0))  # 2 R B, B = 1
    assert record.min_eigenvalue_sensitivity == pytest.approx(2.0)  # R^2
    shares = [getattr(record, f"{name}_{'rho' if record.rho else 'epsilon'}")
              for name in ("gram", "moment", "min_eigenvalue")]
    if record.rho:  # the Gaussian form keeps Wang 2018's equal split of rho
        assert shares == pytest.approx([record.rho / 3] * 3)
    else:  # the pure form's fitted split, adding up to at most epsilon
        assert shares == pytest.approx([0.49 * 0.7, 0.49 * 0.7, 0.02 * 0.7])
        assert sum(Fraction(share) for share in shares) <= Fraction(0.7)
    text = str(record)
    assert "Wang (2018)" in text and "[20, 60]" in text and "not penalised" in text


# -- the quantile regressor's target handling ----------------------------------------------
def test_quantile_regressor_centres_by_public_bounds():
    from dperm import PrivateQuantileRegressor

    X, y = _data(n=4000, offset=40.0)
    without = PrivateQuantileRegressor(fit_intercept=False, random_state=0).fit(X, y)
    centred = PrivateQuantileRegressor(fit_intercept=False, y_bounds=(20, 60), random_state=0).fit(X, y)
    assert without.score(X, y) < 0 < 0.5 < centred.score(X, y)
    assert centred.intercept_ == 40.0  # the public centre, not fitted
    model = PrivateQuantileRegressor(y_bounds=(20, 60), epsilon=3.0, random_state=0).fit(X, y)
    assert model.intercept_ == pytest.approx(40.0, abs=1.0)  # shrunk toward 40, not toward 0
    model.coef_ = np.array([1e6, 0.0, 0.0])
    assert model.predict(X).min() == 20.0 and model.predict(X).max() == 60.0
    y[:3] = [1e9, -1e9, 61.0]
    with pytest.warns(DataClippingWarning, match=r"\[20, 60\]"):
        PrivateQuantileRegressor(y_bounds=(20, 60), random_state=0).fit(X, y)
    accountant = BudgetAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match="not both"):
        PrivateQuantileRegressor(y_bound=3, y_bounds=(0, 1), accountant=accountant).fit(X, y)
    assert accountant.spent == (0.0, 0.0)


def test_quantile_neighbour_swap_with_bounds():
    from dperm import PrivateQuantileRegressor

    X, y = _data(n=300, seed=12)
    X_prime, y_prime = X.copy(), y.copy()
    X_prime[3], y_prime[3] = [9.0, 9.0, 9.0], 1e12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        fits = [PrivateQuantileRegressor(y_bounds=(20, 60), random_state=2).fit(A, b)
                for A, b in ((X, y), (X_prime, y_prime))]
    assert non_noised(fits[0]) == non_noised(fits[1])
