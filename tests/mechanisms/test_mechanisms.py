"""Mechanisms as units: the noise each one adds, recovered and tested by KS tests."""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from dperm.losses import PinballLoss, SquaredLoss, get_loss
from dperm.mechanisms import (
    ERMProblem,
    PublicProblem,
    gaussian_objective_perturbation,
    objective_perturbation,
    output_perturbation,
    run_mechanism,
)
from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.output import output_noise_scale, release_output
from dperm.solvers import RegularizedMarginObjective, minimize_certified


def _problem(loss="logistic", n=200, d=3, alpha=0.05, data_norm=1.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (data_norm * rng.uniform(0.1, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return ERMProblem(X, y, get_loss(loss, h=0.5), alpha, data_norm)


def _recovered_noise(problem, output):
    """b = -n grad J_(alpha + Delta)(w): the first-order condition of 003 eq. 17 at the solve.

    The released point adds AMP's output noise, so ``b`` is recovered from the
    (unreleased) certified solve ``output.solve.coef``.
    """
    objective = RegularizedMarginObjective(
        problem.loss, problem.X, problem.y, problem.alpha + output.extra_regularization
    )
    return -problem.n_samples * objective.gradient(output.solve.coef)


def _root_upper(d):
    """The dyadic upper bound on sqrt(d) that dperm.privacy.sensitivity.grid_l2_sensitivity uses."""
    from math import isqrt

    return (isqrt(d << 20) + 1) / 1024


def _assert_l2_laplace_in_three_dimensions(noise, scale):
    """003's radial law in R^3, which the fine-grid lattice law matches: ||b|| ~ Gamma(3, scale),
    and the direction is uniform, so (Archimedes) b_1 / ||b|| is uniform on [-1, 1]."""
    norms = np.linalg.norm(noise, axis=1)
    assert stats.kstest(norms / scale, stats.gamma(3).cdf).pvalue > 0.01
    assert stats.kstest(noise[:, 0] / norms, stats.uniform(-1, 2).cdf).pvalue > 0.01


def test_output_perturbation_noise_is_l2_laplace_calibrated_to_the_l2_bound():
    problem = _problem(data_norm=2.0)
    rng = np.random.default_rng(1)
    outputs = [output_perturbation(problem, 0.5, 0.0, rng, 1e-9, 1000) for _ in range(500)]
    first = outputs[0]
    sensitivity = first.sensitivity
    # 003 Alg. 1 with note 2: S = 2 L R / (n alpha), plus twice the certified radius
    assert sensitivity == pytest.approx(2 * 2.0 / (200 * 0.05) + 2 * 1e-9 / 0.05)
    # float-safe: the lattice L2 law with scale (S / g + sqrt(d)) / eps on a grid g (d = 3)
    d, g = problem.n_features, first.noise_grid
    assert first.noise_distribution == "discrete-l2-laplace"
    assert first.noise_scale == pytest.approx((sensitivity / g + _root_upper(d)) * g / 0.5)
    noise = np.array([o.coef - np.round(o.solve.coef / g) * g for o in outputs])
    _assert_l2_laplace_in_three_dimensions(noise, first.noise_scale)
    assert first.delta == 0.0


# huber and smooth_hinge took 31 s and 70 s on a loaded 2-core machine: make test-slow runs them.
@pytest.mark.parametrize("loss", ["logistic", pytest.param("huber", marks=pytest.mark.slow),
                                  pytest.param("smooth_hinge", marks=pytest.mark.slow)])
def test_objective_perturbation_noise_recovered_from_the_solution(loss):
    problem = _problem(loss=loss, data_norm=1.5)
    rng = np.random.default_rng(2)
    outputs = [objective_perturbation(problem, 1.0, 0.0, rng, 1e-10, 1000) for _ in range(400)]
    first = outputs[0]
    curvature = problem.loss.curvature
    # AMP: 1 % of epsilon goes to the output stage; the Jacobian term is one factor
    # log(1 + c R^2 / (n alpha)) (matrix determinant lemma), not 003 Thm 2's square
    expected_eps = 0.99 - np.log1p(curvature * 1.5**2 / (200 * 0.05))
    assert first.epsilon_noise == pytest.approx(expected_eps)
    assert first.extra_regularization == 0.0
    # float-safe: the lattice L2 law for the L2 bound 2 L R (+ sqrt(d) steps); d = 3
    d, h = problem.n_features, first.noise_grid
    assert first.noise_distribution == "discrete-l2-laplace"
    assert first.noise_scale == pytest.approx((2 * 1.5 / h + _root_upper(d)) * h / expected_eps)
    noise = np.array([_recovered_noise(problem, o) for o in outputs])
    _assert_l2_laplace_in_three_dimensions(noise, first.noise_scale)


def test_objective_perturbation_extra_regularization_branch():
    problem = _problem(n=20, alpha=1e-3)
    rng = np.random.default_rng(3)
    out = objective_perturbation(problem, 0.1, 0.0, rng, 1e-10, 1000)
    # the Jacobian term log(1 + c/(n alpha)) = log 13.5 exceeds half of 0.099: Delta makes it exactly half
    assert out.epsilon_noise == pytest.approx(0.099 / 2)
    assert out.extra_regularization == pytest.approx(0.25 / (20 * np.expm1(0.099 / 2)) - 1e-3)
    recovered = _recovered_noise(problem, out)
    assert np.isfinite(recovered).all()


def test_gaussian_objective_noise_recovered_is_gaussian():
    problem = _problem(data_norm=1.0)
    rng = np.random.default_rng(4)
    outputs = [gaussian_objective_perturbation(problem, 1.0, 0.01, rng, 1e-10, 1000) for _ in range(300)]
    sigma = outputs[0].noise_scale
    coordinates = np.concatenate([_recovered_noise(problem, o) for o in outputs])
    assert stats.kstest(coordinates / sigma, stats.norm.cdf).pvalue > 0.01
    assert outputs[0].delta == 0.01


@pytest.mark.parametrize("mechanism", ["objective", "gaussian_objective"])
def test_objective_mechanisms_refuse_the_hinge_and_point_to_output(mechanism):
    problem = _problem(loss="hinge")
    with pytest.raises(ValueError, match="mechanism='output'"):
        run_mechanism(mechanism, problem, 1.0, 0.01, np.random.default_rng(0), 1e-8, 100)


def test_output_perturbation_accepts_the_hinge():
    problem = _problem(loss="hinge")
    out = output_perturbation(problem, 1.0, 0.0, np.random.default_rng(0), 1e-8, 1000)
    assert out.solve.certified
    exact = 2 / (200 * 0.05)
    assert out.sensitivity == pytest.approx(exact * 1.01)  # 2 x the 0.5 % radius allowance


@pytest.mark.parametrize("mechanism", ["objective", "gaussian_objective", "output"])
def test_mechanisms_certify_even_when_max_iter_stops_the_fast_solver(mechanism):
    """Issue 28: one L-BFGS iteration at tol 1e-12 used to raise CertificateError after the spend."""
    problem = _problem(n=500, d=5, alpha=1e-4)
    out = run_mechanism(mechanism, problem, 1.0, 1e-5, np.random.default_rng(0), 1e-12, 1)
    assert out.solve.certified and out.solve.gradient_norm <= 1e-12
    if mechanism == "output":  # the noise-free minimiser: compare with a long solve
        exact = minimize_certified(RegularizedMarginObjective(
            problem.loss, problem.X, problem.y, 1e-4), 1e-14, 10_000)
        assert np.linalg.norm(out.solve.coef - exact.coef) <= 1e-12 / 1e-4


@pytest.mark.parametrize("mechanism", ["objective", "gaussian_objective"])
def test_objective_mechanisms_report_the_certificate_when_met(mechanism):
    problem = _problem(n=500, d=5, alpha=1e-4)
    out = run_mechanism(mechanism, problem, 1.0, 1e-5, np.random.default_rng(0), 1e-9, 1000)
    assert out.solve.certified and out.solve.gradient_norm <= 1e-9
    assert out.solve.solution_radius <= 1e-9 / (1e-4 + out.extra_regularization) * (1 + 1e-9)


def test_unknown_mechanism():
    with pytest.raises(ValueError, match="mechanism must be one of"):
        run_mechanism("laplace", _problem(), 1.0, 0.0, np.random.default_rng(0), 1e-8, 10)


def _regression_problem(loss, n=200, d=3, alpha=0.05, data_norm=1.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (data_norm * rng.uniform(0.1, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ np.ones(d) + 0.3 * rng.standard_t(3, size=n), -2.0, 2.0)
    return ERMProblem(X, y, loss, alpha, data_norm)


@pytest.mark.slow  # ~27 s on a loaded 2-core machine
def test_output_perturbation_of_the_pinball_loss():
    problem = _regression_problem(PinballLoss(0.75), n=100, data_norm=1.5)
    rng = np.random.default_rng(5)
    outputs = [output_perturbation(problem, 0.5, 0.0, rng, 1e-8, 1000) for _ in range(200)]
    exact = 2 * 0.75 * 1.5 / (100 * 0.05)  # 000 Thm 2, C_L = max(tau, 1 - tau)
    assert outputs[0].sensitivity == pytest.approx(exact * 1.01)  # 0.5 % radius allowance, twice
    assert outputs[0].lipschitz == 0.75
    assert all(o.solve.certified for o in outputs)
    g, scale = outputs[0].noise_grid, outputs[0].noise_scale
    assert outputs[0].noise_distribution == "discrete-l2-laplace"  # d = 3
    noise = np.array([o.coef - np.round(o.solve.coef / g) * g for o in outputs])
    _assert_l2_laplace_in_three_dimensions(noise, scale)


def test_output_perturbation_of_least_squares_uses_the_restricted_lipschitz_constant():
    problem = _regression_problem(SquaredLoss(y_bound=2.0), alpha=0.5)
    out = output_perturbation(problem, 1.0, 0.0, np.random.default_rng(6), 1e-9, 1000)
    c_l = 2 * (2.0 + 1.0 * 2.0 * np.sqrt(2 / 0.5))  # 2 (M + kappa M sqrt(2/alpha))
    assert out.lipschitz == pytest.approx(c_l)
    assert out.sensitivity == pytest.approx(2 * c_l * 1.0 / (200 * 0.5) + 2 * 1e-9 / 0.5)
    exact = np.linalg.solve(2 * problem.X.T @ problem.X / 200 + 0.5 * np.eye(3),
                            2 * problem.X.T @ problem.y / 200)
    assert np.linalg.norm(out.solve.coef - exact) <= 1e-9 / 0.5


@pytest.mark.parametrize("mechanism", ["objective", "gaussian_objective"])
def test_objective_mechanisms_refuse_losses_without_global_lipschitz_or_curvature(mechanism):
    with pytest.raises(ValueError, match="globally Lipschitz"):
        run_mechanism(mechanism, _regression_problem(SquaredLoss(2.0)), 1.0, 0.01,
                      np.random.default_rng(0), 1e-8, 100)
    with pytest.raises(ValueError, match="mechanism='output'"):
        run_mechanism(mechanism, _regression_problem(PinballLoss(0.5)), 1.0, 0.01,
                      np.random.default_rng(0), 1e-8, 100)


@pytest.mark.parametrize("loss", [get_loss("logistic"), get_loss("hinge"), PinballLoss(0.3),
                                  SquaredLoss(2.0)], ids=repr)
def test_output_noise_helpers_match_the_mechanism(loss):
    """Scripts that reuse one exact solve across noise draws get the mechanism's calibration."""
    problem = _problem(loss.name) if loss.kind == "margin" else _regression_problem(loss)
    out = output_perturbation(problem, 0.7, 0.0, np.random.default_rng(0), 1e-8, 1000)
    assert output_noise_scale(problem, 0.7, 1e-8) == pytest.approx(out.noise_scale)
    again = release_output(problem, out.solve.coef, 0.7, 1e-8, np.random.default_rng(0))
    np.testing.assert_array_equal(out.coef, again)


# -- each mechanism's calibration, recomputable from public quantities --------------------
@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("loss_name", ["logistic", "hinge"])
def test_a_release_records_exactly_its_public_calibration(name, loss_name):
    """``Mechanism.calibrate`` on the public problem gives every number the run records,
    and every released coordinate lies on its release grid (what model files are checked against)."""
    mechanism = MECHANISMS[name]
    loss = get_loss(loss_name)
    if not mechanism.accepts(loss, 1e-5):  # AdaSSP's rows declare the squared loss only
        pytest.skip(f"{name} does not cover the {loss_name} loss")
    rng = np.random.default_rng(4)
    X = rng.uniform(-0.5, 0.5, size=(150, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    problem = ERMProblem(X, y, loss, 0.05, 1.0)
    output = mechanism.function(problem, 0.7, 1e-5, np.random.default_rng(0), 1e-8, 1000)
    public = PublicProblem(150, 3, loss, 0.05, 1.0)
    calibration = mechanism.calibrate(public, 0.7, 1e-5, 1e-8)
    for field in dataclasses.fields(calibration):
        assert getattr(output, field.name) == getattr(calibration, field.name), field.name
    steps = output.coef / calibration.release_grid
    np.testing.assert_array_equal(steps, np.round(steps))
