"""Gaussian objective perturbation: the tight default and 004's calibration side by side.

The calibration arithmetic is tested in tests/privacy/test_sensitivity_gaussian_objective.py;
here the mechanisms: which calibration runs, what the record says, the noise each one adds
(recovered from the first-order condition and KS-tested), and checks before spending.
"""

import numpy as np
import pytest
from scipy import stats

from dperm import BudgetAccountant, PrivateLogisticRegression
from dperm.losses import get_loss
from dperm.mechanisms import (
    ERMProblem,
    gaussian_objective_perturbation,
    gaussian_objective_perturbation_004,
    run_mechanism,
)
from dperm.mechanisms.catalog import MECHANISMS
from dperm.solvers import RegularizedMarginObjective


def _problem(n=200, d=3, alpha=0.05, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (rng.uniform(0.1, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return ERMProblem(X, y, get_loss("logistic"), alpha, 1.0)


def _recovered_noise(problem, output):
    objective = RegularizedMarginObjective(
        problem.loss, problem.X, problem.y, problem.alpha + output.extra_regularization)
    return -problem.n_samples * objective.gradient(output.solve.coef)


def test_tight_is_the_default_and_004_is_a_second_entry():
    problem = _problem()
    tight = run_mechanism("gaussian_objective", problem, 1.0, 1e-5, np.random.default_rng(0), 1e-9, 1000)
    old = run_mechanism("gaussian_objective_004", problem, 1.0, 1e-5, np.random.default_rng(0), 1e-9, 1000)
    direct = gaussian_objective_perturbation(problem, 1.0, 1e-5, np.random.default_rng(0), 1e-9, 1000)
    assert direct.noise_scale == tight.noise_scale
    assert tight.noise_scale < 0.75 * old.noise_scale  # d = 3; about 1/3 at d = 105
    assert MECHANISMS["gaussian_objective_004"].uses_delta
    assert "Redberg" in MECHANISMS["gaussian_objective"].reference
    assert "Rajkumar" in MECHANISMS["gaussian_objective_004"].reference


def test_004_function_matches_the_calibration_argument():
    problem = _problem()
    a = gaussian_objective_perturbation_004(problem, 1.0, 1e-5, np.random.default_rng(1), 1e-9, 1000)
    b = gaussian_objective_perturbation(problem, 1.0, 1e-5, np.random.default_rng(1), 1e-9, 1000,
                                        calibration="004")
    assert a.noise_scale == b.noise_scale
    np.testing.assert_array_equal(a.coef, b.coef)


def test_unknown_calibration_is_refused_before_spending():
    accountant = BudgetAccountant(1.0, 1e-3)
    with pytest.raises(ValueError, match="calibration must be one of"):
        gaussian_objective_perturbation(_problem(), 0.5, 1e-5, np.random.default_rng(0), 1e-9, 100,
                                        accountant, calibration="chi2")
    assert accountant.spent == (0.0, 0.0)


def test_tight_noise_recovered_is_gaussian_with_the_recorded_scale():
    problem = _problem()
    rng = np.random.default_rng(4)
    outputs = [gaussian_objective_perturbation(problem, 1.0, 0.01, rng, 1e-10, 1000) for _ in range(300)]
    sigma = outputs[0].noise_scale
    coordinates = np.concatenate([_recovered_noise(problem, o) for o in outputs])
    assert stats.kstest(coordinates / sigma, stats.norm.cdf).pvalue > 0.01
    # and a 30 % wrong scale is rejected (the test can fail)
    assert stats.kstest(coordinates / (1.3 * sigma), stats.norm.cdf).pvalue < 0.01


@pytest.mark.parametrize("mechanism", ["gaussian_objective", "gaussian_objective_004"])
def test_the_record_names_the_calibration_and_sigma(mechanism):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X /= np.linalg.norm(X, axis=1).max()
    y = (X[:, 0] > 0).astype(int)
    model = PrivateLogisticRegression(mechanism=mechanism, epsilon=1.0, delta=1e-5, alpha=0.01,
                                      fit_intercept=False, random_state=0).fit(X, y)
    assert model.privacy_.mechanism == mechanism
    assert model.privacy_.noise_distribution == "discrete-gaussian"
    assert model.privacy_.noise_scale > 0
    text = model.privacy_.summary()
    assert ("Redberg" in text) == (mechanism == "gaussian_objective")


def test_estimator_spends_once_with_the_tight_calibration():
    accountant = BudgetAccountant(2.0, 1e-3)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X /= np.linalg.norm(X, axis=1).max()
    y = (X[:, 0] > 0).astype(int)
    PrivateLogisticRegression(mechanism="gaussian_objective", epsilon=0.5, delta=1e-5,
                              accountant=accountant, random_state=0).fit(X, y)
    assert accountant.spent == pytest.approx((0.5, 1e-5))
