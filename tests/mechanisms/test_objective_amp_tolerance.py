"""Issue 30: AMP's output stage must shrink with n like the objective noise's effect.

The output stage is calibrated to the radius of the certified solve's tolerance; with the
user's fixed ``tol`` its noise stayed constant in ``n`` and dominated large fits. The
solve tolerance is now derived from public quantities (``amp_solve_tolerance``).
"""

import time

import numpy as np
import pytest

from dperm.losses import LogisticLoss
from dperm.mechanisms import gaussian_objective, multinomial_objective, objective
from dperm.mechanisms._problem import ERMProblem
from dperm.mechanisms.multinomial_objective import MultinomialProblem
from dperm.privacy.sensitivity import AMP_OUTPUT_SHIFT_RATIO, amp_solve_tolerance
from dperm.solvers import minimize_erm

D = 20
TOL = 1e-8


def _public_problem(n, d=D, alpha=1e-4):
    """A problem with ``n`` rows that holds no data (calibration reads only n, d)."""
    X = np.broadcast_to(np.zeros(d), (n, d))
    y = np.broadcast_to(np.ones(1), (n,))
    return ERMProblem(X, y, LogisticLoss(), alpha, 1.0)


def _ratio(calibration, dimension, n, alpha):
    regularization = alpha + calibration.extra_regularization
    shift = calibration.noise_law.rms_noise_norm(dimension) / (n * regularization)
    return calibration.output_noise_law.rms_noise_norm(dimension) / shift


CALIBRATIONS = {
    "objective": lambda p: objective.calibrate(p, 0.1, 0.0, TOL),
    "gaussian_objective": lambda p: gaussian_objective.calibrate(p, 0.1, 1e-5, TOL),
    "gaussian_objective_004": lambda p: gaussian_objective.calibrate(p, 0.1, 1e-5, TOL, "004"),
}


@pytest.mark.parametrize("n", [10**3, 10**5, 10**7])
@pytest.mark.parametrize("name", sorted(CALIBRATIONS))
def test_the_output_noise_is_at_most_rho_times_the_objective_noise_s_shift(name, n):
    problem = _public_problem(n)
    calibration = CALIBRATIONS[name](problem)
    assert 0 < calibration.solve_tol <= TOL
    assert _ratio(calibration, D, n, problem.alpha) <= AMP_OUTPUT_SHIFT_RATIO


@pytest.mark.parametrize("n", [10**3, 10**5, 10**7])
def test_the_multinomial_output_noise_is_at_most_rho_times_its_shift(n):
    problem = MultinomialProblem(None, None, 4, 1e-4, 1.0, n_samples=n, n_features=D)
    calibration = multinomial_objective.calibrate(problem, 0.1, 0.0, TOL)
    assert 0 < calibration.solve_tol <= TOL
    assert _ratio(calibration, problem.dimension, n, problem.alpha) <= AMP_OUTPUT_SHIFT_RATIO


def test_the_output_noise_falls_with_n_instead_of_staying_fixed():
    scales = [objective.calibrate(_public_problem(n), 0.1, 0.0, TOL).output_noise_scale
              for n in (10**5, 4 * 10**5)]
    assert scales[1] < scales[0] / 3  # it was 0.2547 at both (issue 30)


def test_the_tolerance_is_the_user_s_when_small_and_never_below_the_float_floor():
    assert amp_solve_tolerance(1e-8, 1e3, 10, 1.0) == 1e-8
    floor = amp_solve_tolerance(1.0, 1e-30, 10**6, 1.0)
    assert floor == pytest.approx(16 * np.finfo(float).eps * 1e3)
    assert amp_solve_tolerance(1.0, 0.0, 10**6, 0.0) == 1.0  # output noise underflowed


def _separable(n, seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=D)
    X = rng.normal(size=(n, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ w > 0, 1.0, -1.0)
    return X, y


@pytest.mark.slow
def test_the_released_coefficient_approaches_the_minimiser_as_n_grows():
    distances = {}
    for n in (100_000, 400_000):
        found = []
        for seed in range(3):
            X, y = _separable(n, seed)
            problem = ERMProblem(X, y, LogisticLoss(), 1e-4, 1.0)
            exact = minimize_erm(problem.loss, X, y, problem.alpha, 1e-10, 1000).coef
            started = time.time()
            out = objective.objective_perturbation(problem, 0.1, 0.0, np.random.default_rng(seed),
                                                   TOL, 1000)
            assert time.time() - started < 120
            found.append(np.linalg.norm(out.coef - exact))
        distances[n] = np.median(found)
    assert distances[400_000] < distances[100_000] / 2
