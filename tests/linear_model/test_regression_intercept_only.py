"""PrivateLeastSquares' pure default falls back to the private mean when the noise swamps the slopes.

Issue 30: "R^2 >= -0.02 on every table and epsilon (never worse than a constant)". When Wang's
ridge target is at least half of ``n R^2`` (public n, d, R, epsilon only), ``mechanism="auto"``
runs AdaSSP on the intercept's column alone (:func:`dperm.privacy.sufficient_statistics.slopes_swamped`).
"""

import math
import warnings

import numpy as np
import pytest

from dperm import DataClippingWarning, PrivateLeastSquares
from dperm.linear_model._targets import centre_and_half_width, to_unit_interval
from dperm.losses import SquaredLoss
from dperm.mechanisms import ERMProblem
from dperm.mechanisms.sufficient_statistics import (
    calibrate_sufficient_statistics,
    sufficient_statistics_perturbation,
)
from dperm.privacy.sufficient_statistics import INTERCEPT_ONLY_RIDGE_FRACTION, slopes_swamped
from dperm.privacy.sufficient_statistics_record import SufficientStatisticsRecord
from dperm.validation import check_random_state
from tests._release_checks import non_noised

BOUNDS = (20.0, 60.0)


def _data(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = 40.0 + 10.0 * (X @ np.linspace(1.0, -1.0, d)) + rng.normal(size=n)
    return X, y


def _swamped(n, dimension, epsilon, data_norm=math.sqrt(2.0)):
    calibration = calibrate_sufficient_statistics(n, dimension, data_norm, 1.0, epsilon, 0.0, False,
                                                  intercept=1.0)
    return slopes_swamped(calibration.ridge_target, n, data_norm)


# -- the public rule ------------------------------------------------------------------------
def test_the_rule_is_its_threshold_exactly():
    n, R = 400, math.sqrt(2.0)
    at = INTERCEPT_ONLY_RIDGE_FRACTION * n * R**2
    assert slopes_swamped(at, n, R)
    assert not slopes_swamped(math.nextafter(at, 0.0), n, R)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError):
            slopes_swamped(bad, n, R)
    with pytest.raises(ValueError):
        slopes_swamped(at, 0, R)


@pytest.mark.parametrize("dimension", [2, 4, 11, 27])
def test_the_rule_switches_once_as_epsilon_or_n_grows(dimension):
    """Swamped at some epsilon (or n) means swamped at every smaller one: the default moves from
    the mean to the full model once, never back, as the budget or the data grow."""
    epsilons = np.geomspace(0.01, 100, 60)
    for n in (50, 400, 5000, 50_000):
        flags = [_swamped(n, dimension, eps) for eps in epsilons]
        assert flags == sorted(flags, reverse=True), (n, flags)
    for eps in (0.1, 1.0, 3.0):
        flags = [_swamped(n, dimension, eps) for n in (20, 60, 200, 600, 2000, 6000, 20_000)]
        assert flags == sorted(flags, reverse=True), (eps, flags)


# -- the estimator ------------------------------------------------------------------------
def test_small_n_releases_the_private_mean_and_nothing_else():
    X, y = _data(60)
    seed, epsilon = 3, 1.0
    model = PrivateLeastSquares(y_bounds=BOUNDS, epsilon=epsilon, random_state=seed).fit(X, y)
    assert model.mechanism_ == "adassp"
    assert np.array_equal(model.coef_, np.zeros(3))  # every slope is the public 0
    record = model.privacy_
    assert record.dimension == 1 and record.effective_data_norm == 1.0  # the column c = 1 alone
    assert "intercept's column only" in record.mechanism_choice
    # the intercept is exactly AdaSSP's release on the constant column (same noise bits)
    problem = ERMProblem(np.ones((60, 1)), to_unit_interval(y, *BOUNDS), SquaredLoss(1.0), 0.0, 1.0)
    out = sufficient_statistics_perturbation(problem, epsilon, 0.0, check_random_state(seed),
                                             intercept=1.0)
    centre, half = centre_and_half_width(*BOUNDS)
    assert model.intercept_ == float((out.coef * half)[-1] * 1.0 + centre)
    assert model.predict(X[:5]).tolist() == [min(max(model.intercept_, 20.0), 60.0)] * 5


def test_the_record_is_public_and_recomputable():
    X, y = _data(60)
    model = PrivateLeastSquares(y_bounds=BOUNDS, epsilon=0.5, random_state=0).fit(X, y)
    record = model.privacy_
    assert record == model._public_record(60, 3)
    assert SufficientStatisticsRecord.from_dict(record.to_dict()) == record
    assert record.gram_sensitivity == pytest.approx(math.sqrt(2.0))  # sqrt(2) c^2 with c = 1
    assert record.moment_sensitivity == pytest.approx(2.0)  # 2 c B
    assert record.epsilon == 0.5 and record.delta == 0.0


def test_the_mean_is_accurate_where_the_slopes_are_not():
    """At epsilon 0.05 on 2,000 rows the rule holds; the released intercept is the targets' mean
    up to the noise of one sum (scale 2 / (0.49 epsilon) on the [-1, 1] scale, divided by n)."""
    X, y = _data(2000, d=5)
    assert _swamped(2000, 6, 0.05)
    errors = []
    for seed in range(20):
        model = PrivateLeastSquares(y_bounds=BOUNDS, epsilon=0.05, random_state=seed).fit(X, y)
        assert not model.coef_.any()
        errors.append(model.intercept_ - y.mean())
    half = centre_and_half_width(*BOUNDS)[1]
    noise_std = math.sqrt(2.0) * 2.0 / (0.49 * 0.05) / 2000 * half  # Laplace std of the sum's noise / n
    assert np.sqrt(np.mean(np.square(errors))) < 2.0 * noise_std


@pytest.mark.parametrize("params", [dict(mechanism="adassp"), dict(fit_intercept=False),
                                    dict(delta=1e-4), dict(alpha=0.5)])
def test_only_the_pure_auto_default_with_an_intercept_falls_back(params):
    X, y = _data(60)
    model = PrivateLeastSquares(y_bounds=BOUNDS, epsilon=1.0, random_state=0, **params).fit(X, y)
    assert model.coef_.any()
    if model.mechanism_ != "output":
        assert model.privacy_.dimension == 3 + int(model.fit_intercept)


def test_refitting_on_more_rows_leaves_no_fallback_behind():
    model = PrivateLeastSquares(y_bounds=BOUNDS, epsilon=1.0, random_state=0)
    model.fit(*_data(60))
    assert model.privacy_.dimension == 1
    model.fit(*_data(3000))
    assert model.privacy_.dimension == 4 and model.coef_.any()
    assert "intercept's column only" not in model.privacy_.mechanism_choice


def test_neighbour_swap_changes_nothing_but_the_noised_intercept():
    X, y = _data(60, seed=11)
    X_prime, y_prime = X.copy(), y.copy()
    X_prime[17] = [50.0, -50.0, 3.0]
    y_prime[17] = -1e9
    fits = []
    for A, b in ((X, y), (X_prime, y_prime)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataClippingWarning)
            fits.append(PrivateLeastSquares(y_bounds=BOUNDS, random_state=4).fit(A, b))
    a, b = (non_noised(model) for model in fits)
    assert a.keys() == b.keys() and all(a[k] == b[k] for k in a), \
        {k: (a[k], b[k]) for k in a if a[k] != b[k]}
    assert fits[0].privacy_.dimension == 1
    assert fits[0].intercept_ != fits[1].intercept_


def test_a_model_file_of_the_private_mean_loads_and_an_edited_record_is_refused(tmp_path):
    """The file's record is recomputed from its public inputs (the fallback included): the fit
    loads with the same predictions, and a record claiming the full model (with a recomputed
    digest) is refused by that recomputation."""
    import json

    from dperm.model_io import load_model, save_model, with_digest
    from dperm.tabular import NumericColumn, TabularSpec

    X, y = _data(60)
    model = PrivateLeastSquares(y_bounds=BOUNDS, epsilon=1.0, random_state=0).fit(X, y)
    assert model.privacy_.dimension == 1
    path = tmp_path / "mean.json"
    save_model(path, model, TabularSpec([NumericColumn(f"x{i}", -0.5, 0.5) for i in range(3)]), "y")
    loaded = load_model(path)[0]
    assert loaded.privacy_ == model.privacy_
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    document = json.loads(path.read_text())
    document["privacy"]["dimension"] = 4  # the full model's: not what these public inputs choose
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(with_digest(document)))
    with pytest.raises(ValueError, match="recomputed from the file's public inputs"):
        load_model(edited)
