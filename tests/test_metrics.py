"""Private evaluation (dperm.metrics): sensitivities, noise, accounting, refusals, cross-validation."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from dperm import PrivateLogisticRegression, metrics
from dperm.exceptions import BudgetExceededError
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.evaluation import (
    COUNT_SENSITIVITY,
    HISTOGRAM_SENSITIVITY,
    RELIABILITY_SENSITIVITY,
    squared_error_sensitivity,
    target_radius,
    target_square_sensitivity,
    target_sum_sensitivity,
)
from dperm.privacy.release import NOISED, release_kinds

BOUNDS = (-2.0, 6.0)


def _classification(n=400, seed=0, k=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return y, np.where(rng.random(n) < 0.7, y, rng.integers(0, k, n)), rng.random(n)


def _regression(n=400, seed=0):
    rng = np.random.default_rng(seed)
    y = np.clip(rng.normal(2.0, 1.5, n), *BOUNDS)
    return y, np.clip(y + rng.normal(0, 0.7, n), *BOUNDS)


def _neighbours(seed, n=30, k=3):
    """Pairs of data sets differing in one row: random rows and rows at the extremes."""
    rng = np.random.default_rng(seed)
    lower, upper = BOUNDS
    y = rng.integers(0, k, n)
    p = rng.integers(0, k, n)
    prob = rng.random(n)
    yr = rng.uniform(lower, upper, n)
    pr = rng.uniform(lower, upper, n)
    i = rng.integers(n)
    extreme = rng.random() < 0.5
    new = (rng.integers(0, k), rng.integers(0, k), float(rng.choice([0.0, 1.0 - 1e-12]) if extreme else rng.random()),
           upper if extreme else rng.uniform(lower, upper), lower if extreme else rng.uniform(lower, upper))
    y2, p2, prob2, yr2, pr2 = y.copy(), p.copy(), prob.copy(), yr.copy(), pr.copy()
    y2[i], p2[i], prob2[i], yr2[i], pr2[i] = new
    return (y, p, prob, yr, pr), (y2, p2, prob2, yr2, pr2)


@pytest.mark.parametrize("seed", range(200))
def test_every_statistic_moves_by_at_most_its_sensitivity_between_neighbours(seed):
    a, b = _neighbours(seed)
    labels = np.array([0, 1, 2])
    assert abs(metrics.correct_count(a[0], a[1]) - metrics.correct_count(b[0], b[1])) <= COUNT_SENSITIVITY
    assert np.abs(metrics.confusion_counts(a[0], a[1], labels)
                  - metrics.confusion_counts(b[0], b[1], labels)).sum() <= HISTOGRAM_SENSITIVITY
    assert np.abs(metrics.reliability_counts(a[0] == 1, a[2], 10)
                  - metrics.reliability_counts(b[0] == 1, b[2], 10)).sum() <= RELIABILITY_SENSITIVITY
    _, r = target_radius(BOUNDS)
    limits = (squared_error_sensitivity(r), target_square_sensitivity(r), target_sum_sensitivity(r))
    for s_a, s_b, limit in zip(metrics.regression_sums(a[3], a[4], BOUNDS), metrics.regression_sums(b[3], b[4], BOUNDS),
                               limits):
        assert abs(s_a - s_b) <= limit * (1 + 1e-12)


def test_the_sensitivities_are_reached_so_none_is_loose_by_a_factor():
    lower, upper = BOUNDS
    _, r = target_radius(BOUNDS)
    sums = metrics.regression_sums(np.array([lower]), np.array([upper]), BOUNDS)
    other = metrics.regression_sums(np.array([upper]), np.array([upper]), BOUNDS)
    assert sums[0] - other[0] == squared_error_sensitivity(r)
    assert abs(sums[2] - other[2]) == target_sum_sensitivity(r)
    centre = metrics.regression_sums(np.array([2.0]), np.array([2.0]), BOUNDS)
    assert other[1] - centre[1] == target_square_sensitivity(r)
    counts = metrics.reliability_counts(np.array([True]), np.array([0.05]), 10)
    moved = metrics.reliability_counts(np.array([False]), np.array([0.95]), 10)
    assert np.abs(counts - moved).sum() == 3  # bin moves (2) and the positive leaves (1); 4 needs two positives
    counts = metrics.reliability_counts(np.array([True]), np.array([0.05]), 10)
    moved = metrics.reliability_counts(np.array([True]), np.array([0.95]), 10)
    assert np.abs(counts - moved).sum() == RELIABILITY_SENSITIVITY


def test_accuracy_noise_is_discrete_laplace_of_scale_one_over_epsilon():
    y, p, _ = _classification(n=50)
    correct = metrics.correct_count(y, p)
    epsilon = 0.7
    rng = np.random.default_rng(11)
    draws = np.array([metrics._noisy_counts([correct], COUNT_SENSITIVITY, epsilon, rng)[0] - correct
                      for _ in range(6000)])
    q = math.exp(-epsilon)
    support = np.arange(-6, 7)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    observed = np.array([np.count_nonzero(draws == z) for z in support] + [np.count_nonzero(np.abs(draws) > 6)])
    expected = np.append(pmf, 1 - pmf.sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    quarter = np.array([metrics._noisy_counts([correct], COUNT_SENSITIVITY, 4 * epsilon, rng)[0] - correct
                        for _ in range(6000)])
    observed = np.array([np.count_nonzero(quarter == z) for z in support] + [np.count_nonzero(np.abs(quarter) > 6)])
    assert stats.chisquare(observed, expected).pvalue < 1e-6  # a quarter of the noise is caught


def test_scores_agree_with_scikit_learn_when_the_noise_is_negligible():
    y, p, prob = _classification()
    assert metrics.accuracy_score(y, p, epsilon=1e6, random_state=0) == pytest.approx(sk.accuracy_score(y, p), abs=1e-5)
    table = metrics.confusion_matrix(y, p, labels=[0, 1], epsilon=1e6, random_state=0)
    np.testing.assert_array_equal(table.values, sk.confusion_matrix(y, p, labels=[0, 1]))
    yt, yp = _regression()
    assert metrics.r2_score(yt, yp, y_bounds=BOUNDS, epsilon=1e6, random_state=0) == pytest.approx(
        sk.r2_score(yt, yp), abs=1e-4)
    assert metrics.mean_squared_error(yt, yp, y_bounds=BOUNDS, epsilon=1e6, random_state=0) == pytest.approx(
        sk.mean_squared_error(yt, yp), abs=1e-4)
    assert metrics.root_mean_squared_error(yt, yp, y_bounds=BOUNDS, epsilon=1e6, random_state=0) == pytest.approx(
        math.sqrt(sk.mean_squared_error(yt, yp)), abs=1e-4)
    summary = metrics.calibration_summary(y, prob, labels=[0, 1], epsilon=1e6, random_state=0)
    bins = np.minimum((prob * 10).astype(int), 9)
    np.testing.assert_array_equal(summary.columns["count"], np.bincount(bins, minlength=10))


def test_scores_are_noised_with_the_stated_scale():
    yt, yp = _regression()
    values = [float(metrics.mean_squared_error(yt, yp, y_bounds=BOUNDS, epsilon=1.0, random_state=s))
              for s in range(300)]
    n = yt.size
    # sum of squared errors noised at scale >= (upper - lower)^2 / epsilon = 64: std of the mean >= sqrt(2) 64 / n
    assert np.std(values) > 0.8 * math.sqrt(2) * 64 / n
    assert np.std(values) < 1.3 * math.sqrt(2) * 64 / n
    record = metrics.mean_squared_error(yt, yp, y_bounds=BOUNDS, epsilon=1.0, random_state=0).privacy_
    assert record.sensitivities == (64.0,)
    assert 64.0 <= record.noise_scales[0] <= 64.0 * 1.01


def test_record_declares_the_score_noised_and_serialises():
    y, p, _ = _classification()
    score = metrics.accuracy_score(y, p, epsilon=0.5, random_state=0)
    assert release_kinds(score.privacy_)["value"] == NOISED
    assert score.privacy_.to_dict()["value"] == float(score)
    assert "0.5-DP" in str(score.privacy_)
    assert str(score) == repr(float(score))


def test_accountant_is_charged_once_before_noise_and_bad_input_costs_nothing():
    y, p, _ = _classification(k=3)
    accountant = BudgetAccountant(epsilon=1.0)
    with pytest.raises(ValueError, match="labels"):
        metrics.confusion_matrix(y, p, labels=[0, 1], epsilon=0.5, accountant=accountant)
    with pytest.raises(ValueError, match="labels is required"):
        metrics.confusion_matrix(y, p, labels=None, epsilon=0.5, accountant=accountant)
    with pytest.raises(ValueError, match="y_bounds"):
        metrics.r2_score(y.astype(float), p.astype(float), y_bounds=(1, 1), epsilon=0.5, accountant=accountant)
    with pytest.raises(ValueError, match="finite"):
        metrics.mean_squared_error([1.0, np.nan], [1.0, 1.0], y_bounds=BOUNDS, epsilon=0.5, accountant=accountant)
    with pytest.raises(ValueError, match="rows"):
        metrics.accuracy_score(y, p[:-1], epsilon=0.5, accountant=accountant)
    assert accountant.spent == (0.0, 0.0)
    metrics.accuracy_score(y, p, epsilon=0.6, accountant=accountant, random_state=0)
    assert accountant.spent == (0.6, 0.0)
    with pytest.raises(BudgetExceededError):
        metrics.accuracy_score(y, p, epsilon=0.6, accountant=accountant, random_state=0)
    assert accountant.spent == (0.6, 0.0)


def test_targets_outside_the_public_bounds_are_clipped_with_a_warning():
    from dperm.exceptions import DataClippingWarning

    with pytest.warns(DataClippingWarning, match="y_true"):
        score = metrics.mean_squared_error([10.0, 0.0], [6.0, 0.0], y_bounds=BOUNDS, epsilon=1e6, random_state=0)
    assert float(score) == pytest.approx(0.0, abs=1e-4)


def test_cross_val_score_charges_the_total_once_and_splits_it():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 3))
    X /= np.linalg.norm(X, axis=1).max()
    y = (X[:, 0] + 0.2 * rng.normal(size=600) > 0).astype(int)
    accountant = BudgetAccountant(epsilon=3.0)
    model = PrivateLogisticRegression(classes=[0, 1], epsilon=99.0, accountant=accountant)
    table = metrics.cross_val_score(model, X, y, epsilon=2.0, cv=5, accountant=accountant, random_state=0)
    assert accountant.spent == (2.0, 0.0)
    assert len(accountant.ledger) == 1
    assert table.values.shape == (5,)
    assert np.all((0 <= table.values) & (table.values <= 1))
    assert table.privacy_.epsilons == (0.4,)
    assert "(0.4, 0)" in table.privacy_.fits and "(1.6, 0)" in table.privacy_.fits
    assert model.epsilon == 99.0 and not hasattr(model, "coef_")
    with pytest.raises(ValueError, match="epsilon parameter"):
        from sklearn.linear_model import LogisticRegression

        metrics.cross_val_score(LogisticRegression(), X, y, epsilon=1.0)
    with pytest.raises(ValueError, match="y_bounds"):
        metrics.cross_val_score(model, X, y, epsilon=1.0, scoring="r2")
    assert accountant.spent == (2.0, 0.0)


def test_cross_val_score_is_close_to_the_exact_scores_at_large_epsilon():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, 2))
    X /= np.linalg.norm(X, axis=1).max()
    y = (X[:, 0] > 0).astype(int)
    table = metrics.cross_val_score(PrivateLogisticRegression(classes=[0, 1]), X, y, epsilon=40.0,
                                    random_state=0)
    assert np.all(table.values > 0.9)


def test_discrete_laplace_scale_is_exact():
    record = metrics.confusion_matrix([0, 1], [1, 1], labels=[0, 1], epsilon=0.25, random_state=0).privacy_
    assert Fraction(record.noise_scales[0]) == Fraction(8)


@pytest.mark.parametrize("seed", range(5))
def test_neighbour_swap_changes_only_the_noised_value_of_every_record(seed):
    """Same seed, D vs D' (one held-out row replaced): every record field but ``value`` is equal."""
    from dperm.privacy.release import release_kinds

    a, b = _neighbours(seed, n=60)
    labels = [0, 1, 2]
    calls = [
        lambda d: metrics.accuracy_score(d[0], d[1], epsilon=0.7, random_state=seed),
        lambda d: metrics.confusion_matrix(d[0], d[1], labels=labels, epsilon=0.7, random_state=seed),
        lambda d: metrics.calibration_summary(np.where(d[0] == 1, 1, 0), d[2], labels=[0, 1], epsilon=0.7,
                                              random_state=seed),
        lambda d: metrics.mean_squared_error(d[3], d[4], y_bounds=BOUNDS, epsilon=0.7, random_state=seed),
        lambda d: metrics.r2_score(d[3], d[4], y_bounds=BOUNDS, epsilon=0.7, random_state=seed),
    ]
    for call in calls:
        on_d, on_d_prime = call(a).privacy_, call(b).privacy_
        for name, kind in release_kinds(on_d).items():
            if kind != NOISED:
                assert getattr(on_d, name) == getattr(on_d_prime, name), name
