"""Gaussian multinomial objective perturbation: the objective it solves, its calibration, its noise,
its budget, and an audit (the calibration arithmetic: tests/privacy/test_multinomial_gaussian.py)."""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from dperm.audit import audit, strong_alpha
from dperm.exceptions import BudgetExceededError
from dperm.losses_multinomial import MultinomialLogisticLoss, MultinomialObjective
from dperm.mechanisms.catalog import MECHANISMS, binary_mechanisms, mechanism_help
from dperm.mechanisms.gaussian_multinomial_objective import (
    GAUSSIAN_MULTINOMIAL_OBJECTIVE,
    calibrate,
    calibrate_gaussian_multinomial_objective,
    gaussian_multinomial_objective_perturbation,
    noise_norm,
    release,
)
from dperm.mechanisms.multinomial_objective import MultinomialProblem
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.multinomial import gaussian_multinomial_sigma_steps, multinomial_objective_slack
from dperm.privacy.sensitivity import (
    SENSITIVITY_ROUNDING_MARGIN,
    objective_noise_grid,
    split_epsilon_for_amp,
)
from tests.conftest import multiclass_blobs


def _problem(n=60, d=3, K=3, alpha=0.05, seed=0):
    X, labels = multiclass_blobs(n, d, K, seed, centre_scale=1.0, spread=0.5)
    return MultinomialProblem(X, labels, K, alpha, 1.0)


def test_objective_gradient_and_hessian_match_finite_differences():
    """The perturbed objective the release minimises: (1/n) sum loss + Lambda/2 ||W||^2 + b.W / n."""
    problem = _problem(n=30, d=3, K=4)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=12) * 5
    objective = MultinomialObjective(problem.loss, problem.X, problem.labels, 0.07, linear_term=noise,
                                     sample_weight=rng.uniform(0, 1, 30))
    w = rng.normal(size=12)
    value, gradient = objective.value_and_gradient(w)
    step = 1e-6
    numeric = np.array([(objective.value_and_gradient(w + step * e)[0]
                         - objective.value_and_gradient(w - step * e)[0]) / (2 * step) for e in np.eye(12)])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-8)
    hessian = objective.hessian(w)
    numeric_h = np.array([(objective.gradient(w + step * e) - objective.gradient(w - step * e)) / (2 * step)
                          for e in np.eye(12)])
    np.testing.assert_allclose(hessian, numeric_h, rtol=1e-5, atol=1e-7)


def test_calibration_is_the_gaussian_profile_with_the_multinomial_constants():
    problem = _problem()
    epsilon, delta, tol = 1.0, 1e-5, 1e-8
    plan = calibrate_gaussian_multinomial_objective(problem, epsilon, delta, tol)
    epsilon_objective, epsilon_output = split_epsilon_for_amp(epsilon)
    slack = multinomial_objective_slack(epsilon_objective, 60, 0.05, 3, 1.0)
    grid = objective_noise_grid(60, tol, 9)
    span = 2 * np.sqrt(2) * (1 + SENSITIVITY_ROUNDING_MARGIN) / grid
    assert plan.slack == slack and plan.grid == grid and plan.epsilon_output == epsilon_output
    assert plan.noise_distribution == "discrete-gaussian"
    assert plan.scale_steps == gaussian_multinomial_sigma_steps(span, 9, slack.epsilon_noise, delta, 3)
    calibration = calibrate(problem, epsilon, delta, tol)
    assert calibration.delta == delta and calibration.epsilon == epsilon
    assert calibration.noise_distribution == "discrete-gaussian"
    assert calibration == MECHANISMS[GAUSSIAN_MULTINOMIAL_OBJECTIVE].calibrate(problem, epsilon, delta, tol)


def test_noise_norm_is_the_rms_of_sigma_on_a_fine_grid_and_per_column_for_the_rule():
    d, K, R, eps, delta = 5, 4, 1.5, 1.0, 1e-5
    whole = noise_norm(d * K, eps, delta, np.sqrt(2), R, n_classes=K)
    column = noise_norm(d * K, eps, delta, np.sqrt(2 / K), R, n_classes=K)
    assert column == pytest.approx(whole / np.sqrt(K), rel=1e-9)
    steps = 2.0**30
    sigma = gaussian_multinomial_sigma_steps(steps, d * K, split_epsilon_for_amp(eps)[0], delta, K)
    assert whole == pytest.approx(sigma * 2 * np.sqrt(2) * R / steps * np.sqrt(d * K), rel=1e-12)
    # the catalog passes the public K through
    assert MECHANISMS[GAUSSIAN_MULTINOMIAL_OBJECTIVE].noise_norm(d * K, eps, delta, np.sqrt(2), R,
                                                                 n_classes=K) == whole


def _recovered_noise(problem, output):
    """b = -n grad J(W) at the solve's point: the noise the minimiser was found for (first-order condition)."""
    regularization = problem.alpha + output.calibration.extra_regularization
    objective = MultinomialObjective(problem.loss, problem.X, problem.labels, regularization)
    return -problem.n_samples * objective.gradient(output.solve.coef)


def test_noise_recovered_is_gaussian_with_the_recorded_scale():
    problem = _problem(n=80, d=2, K=3)
    rng = np.random.default_rng(4)
    outputs = [gaussian_multinomial_objective_perturbation(problem, 1.0, 0.01, rng, 1e-10, 1000)
               for _ in range(120)]
    sigma = outputs[0].calibration.noise_scale * (1 + SENSITIVITY_ROUNDING_MARGIN)
    coordinates = np.concatenate([_recovered_noise(problem, o) for o in outputs])
    assert coordinates.size == 120 * 6
    assert stats.kstest(coordinates / sigma, stats.norm.cdf).pvalue > 0.01
    assert stats.kstest(coordinates / (1.3 * sigma), stats.norm.cdf).pvalue < 0.01


def test_release_is_on_the_output_grid_reproducible_and_certified():
    problem = _problem()
    out = gaussian_multinomial_objective_perturbation(problem, 1.0, 1e-5, np.random.default_rng(4), 1e-8, 1000)
    again = gaussian_multinomial_objective_perturbation(problem, 1.0, 1e-5, np.random.default_rng(4), 1e-8, 1000)
    assert out.coef.shape == (3, 3)
    np.testing.assert_array_equal(out.coef, again.coef)
    steps = out.coef / out.calibration.output_grid
    np.testing.assert_array_equal(steps, np.round(steps))
    assert out.solve.certified
    assert out.calibration == calibrate(problem, 1.0, 1e-5, 1e-8)


def test_budget_checks_come_before_the_spend_and_the_spend_before_the_solve():
    problem = _problem()
    accountant = BudgetAccountant(epsilon=1.5, delta=1e-4)
    with pytest.raises(ValueError, match="needs delta > 0"):
        gaussian_multinomial_objective_perturbation(problem, 1.0, 0.0, np.random.default_rng(0), 1e-8,
                                                    1000, accountant=accountant)
    with pytest.raises(ValueError):
        gaussian_multinomial_objective_perturbation(problem, -1.0, 1e-5, np.random.default_rng(0), 1e-8,
                                                    1000, accountant=accountant)
    assert accountant.spent == (0.0, 0.0)
    gaussian_multinomial_objective_perturbation(problem, 1.0, 1e-5, np.random.default_rng(0), 1e-8, 1000,
                                                accountant=accountant)
    assert accountant.spent == pytest.approx((1.0, 1e-5))
    with pytest.raises(BudgetExceededError):
        gaussian_multinomial_objective_perturbation(problem, 1.0, 1e-5, np.random.default_rng(0), 1e-8,
                                                    1000, accountant=accountant)


def test_the_row_is_multiclass_gaussian_and_not_a_binary_choice():
    from dperm.losses import LogisticLoss
    from dperm.mechanisms.choice import candidate_mechanisms

    row = MECHANISMS[GAUSSIAN_MULTINOMIAL_OBJECTIVE]
    assert row.multiclass and row.uses_delta and row.needs_curvature
    assert row.losses == ("multinomial_logistic",) and not row.auto_candidate
    assert "gaussian_multinomial.md" in row.reference
    assert GAUSSIAN_MULTINOMIAL_OBJECTIVE not in candidate_mechanisms(LogisticLoss(), 1e-5)
    assert GAUSSIAN_MULTINOMIAL_OBJECTIVE not in binary_mechanisms()
    assert GAUSSIAN_MULTINOMIAL_OBJECTIVE not in mechanism_help()
    assert not row.accepts(LogisticLoss(), 1e-5)
    assert row.accepts(MultinomialLogisticLoss(4), 1e-5) and not row.accepts(MultinomialLogisticLoss(4), 0.0)


def test_large_epsilon_approaches_the_pure_forms_noise_free_minimiser():
    problem = _problem(n=400)
    pure = MECHANISMS["multinomial_objective"].run(problem, 1e5, 0.0, np.random.default_rng(0), 1e-10, 1000)
    gaussian = gaussian_multinomial_objective_perturbation(problem, 1e5, 1e-5, np.random.default_rng(0),
                                                           1e-10, 1000)
    np.testing.assert_allclose(gaussian.coef, pure.coef, atol=2e-3)


# -- audit: a canary pair whose rows are opposite ------------------------------------------
# D has the canary row x_0 = R, D' has x_0' = -R, the same label (d = 1, K = 3, n alpha = 100,
# so p is about uniform): the noise moves by -2 R (p - e_y), 2 R sqrt(2/3) ~ 58 % of the bound
# 2 sqrt(2) R. The statistic is the Gaussian noise's log-likelihood ratio at the released W,
# ||b_D'(W)||^2 - ||b_D(W)||^2 (the Jacobian factor is within exp(0.007) of 1 here).
AUDIT_EPSILON, AUDIT_DELTA, AUDIT_RUNS = 3.0, 0.05, 3000


def _noise_for(problem, W):
    objective = MultinomialObjective(problem.loss, problem.X, problem.labels, problem.alpha)
    return problem.n_samples * objective.gradient(W.ravel())


def _audit(noise_factor, seed=0):
    n, d, K, R = 20, 1, 3, 1.0
    rng = np.random.default_rng(seed)
    X = rng.uniform(-R, R, size=(n, d)) * 0.25
    labels = rng.integers(0, K, n)
    X_prime = X.copy()
    X[0], X_prime[0] = R, -R
    alpha = strong_alpha(n)
    problem_d = MultinomialProblem(X, labels, K, alpha, R)
    problem_d_prime = MultinomialProblem(X_prime, labels, K, alpha, R)
    calibration = calibrate(problem_d, AUDIT_EPSILON, AUDIT_DELTA, 1e-8)  # public: the same for D'
    if noise_factor != 1.0:  # the copy draws noise_factor times the sigma
        law = calibration.noise_law
        calibration = dataclasses.replace(
            calibration, noise_law=dataclasses.replace(law, scale_steps=law.scale_steps * noise_factor))

    def runner(problem):
        return lambda run_rng: release(problem, calibration, run_rng, 1e-8, 1000)

    def likelihood_ratio(output):
        b, b_prime = _noise_for(problem_d, output.coef), _noise_for(problem_d_prime, output.coef)
        return float(b_prime @ b_prime - b @ b)

    return audit(runner(problem_d), runner(problem_d_prime), likelihood_ratio, AUDIT_EPSILON,
                 AUDIT_DELTA, n_runs=AUDIT_RUNS, random_state=seed,
                 label=f"Gaussian multinomial objective, noise x{noise_factor}")


@pytest.mark.slow
def test_audit_passes_the_honest_mechanism_and_catches_a_quarter_of_the_noise():
    honest = _audit(1.0)
    assert honest.passed, honest
    under_noised = _audit(0.25)
    assert not under_noised.passed, under_noised
    assert under_noised.eps_lower > AUDIT_EPSILON
