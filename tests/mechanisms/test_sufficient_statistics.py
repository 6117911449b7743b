"""AdaSSP as a mechanism (dperm.mechanisms.sufficient_statistics): its noise, its output, its refusals."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LinearRegression

from dperm import PrivateLogisticRegression
from dperm.losses import LogisticLoss, SquaredLoss
from dperm.mechanisms import MECHANISMS, ERMProblem, PublicProblem, run_mechanism
from dperm.mechanisms.noise.l2_laplace import l2_laplace_mean_square
from dperm.mechanisms.sufficient_statistics import (
    calibrate_sufficient_statistics,
    gaussian_sufficient_statistics_perturbation,
    solve_released,
    sufficient_statistics_perturbation,
)
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.sufficient_statistics import symmetric_to_vector


def _problem(n=12, d=2, seed=0, intercept=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.clip(X @ np.arange(1, d + 1) / d + 0.1 * rng.normal(size=n), -1, 1)
    norm = 1.0
    if intercept:
        X = np.hstack([X, np.ones((n, 1))])
        norm = math.sqrt(2.0)
    return ERMProblem(X, y, SquaredLoss(1.0), 0.0, norm)


def _noise(problem, function, epsilon, delta, runs, seed):
    """The three releases' noise over ``runs`` seeded runs: released minus exact statistic."""
    rng = np.random.default_rng(seed)
    gram = symmetric_to_vector(problem.X.T @ problem.X)
    moment = problem.X.T @ problem.y
    eigen = np.linalg.eigvalsh(problem.X.T @ problem.X)[0]
    outputs = [function(problem, epsilon, delta, rng) for _ in range(runs)]
    return (outputs[0].calibration, np.array([o.gram - gram for o in outputs]),
            np.array([o.moment - moment for o in outputs]),
            np.array([o.min_eigenvalue - eigen for o in outputs]))


def test_gaussian_noise_through_the_mechanism_has_its_law():
    """KS of each release's standardised noise against N(0, 1) (sigma is thousands of grid steps,
    so the discrete Gaussian is indistinguishable from the normal at this sample size)."""
    calibration, gram, moment, eigen = _noise(_problem(), gaussian_sufficient_statistics_perturbation,
                                              1.0, 1e-5, 1500, seed=1)
    for release, noise in zip(calibration.releases, (gram, moment, eigen)):
        assert release.noise_distribution == "discrete-gaussian"
        assert stats.kstest(noise.ravel() / release.noise_scale, "norm").pvalue > 1e-3, release.name
        # on the grid: every released value minus the rounded statistic is a whole number of steps
        steps = noise.ravel() / release.grid
        assert np.all(np.abs(steps - np.round(steps)) <= 0.5 + 1e-9)


def test_pure_noise_through_the_mechanism_has_its_law():
    calibration, gram, moment, eigen = _noise(_problem(), sufficient_statistics_perturbation,
                                              1.0, 0.0, 1500, seed=2)
    # lambda_min and the 2-vector moment: per-coordinate discrete Laplace of the recorded scale
    for release, noise in ((calibration.min_eigenvalue, eigen), (calibration.moment, moment)):
        assert release.noise_distribution == "discrete-laplace"
        assert stats.kstest(noise.ravel() / release.noise_scale, "laplace").pvalue > 1e-3
    # the Gram matrix's 3 numbers: the lattice L2 Laplace vector, E||z||^2 as computed
    release = calibration.gram
    assert release.noise_distribution == "discrete-l2-laplace"
    expected = l2_laplace_mean_square(release.dimension, release.noise_scale)
    assert np.mean(np.sum(gram**2, axis=1)) == pytest.approx(expected, rel=0.12)
    # radial law: the norm of exp(-||z|| / s) noise in 3-d is Gamma(3, s)
    norms = np.linalg.norm(gram, axis=1) / release.noise_scale
    assert stats.kstest(norms, stats.gamma(3).cdf).pvalue > 1e-3


@pytest.mark.parametrize("function,delta", [(sufficient_statistics_perturbation, 0.0),
                                            (gaussian_sufficient_statistics_perturbation, 1e-6)])
def test_coefficients_are_a_function_of_the_releases_only(function, delta):
    problem = _problem(n=50, d=3, intercept=1.0)
    out = function(problem, 1.0, delta, np.random.default_rng(0), intercept=1.0)
    coef, ridge = solve_released(out.calibration, out.gram, out.moment, out.min_eigenvalue,
                                 intercept=1.0)
    np.testing.assert_array_equal(coef, out.coef)
    assert ridge == out.ridge >= 0.0
    # the row's calibration, from the public problem, is the one the run used
    name = "adassp" if delta == 0 else "gaussian_adassp"
    public = PublicProblem(50, 4, SquaredLoss(1.0), 0.0, math.sqrt(2.0))
    assert MECHANISMS[name].calibrate(public, 1.0, delta, 0.0, intercept=1.0) == out.calibration
    # the calibration reads public quantities only: the same for any data of that shape
    other = _problem(n=50, d=3, seed=9, intercept=1.0)
    assert function(other, 1.0, delta, np.random.default_rng(0), intercept=1.0).calibration == \
        out.calibration


def test_without_noise_it_is_least_squares_with_an_unpenalised_intercept():
    """At a huge epsilon the ridge vanishes and the intercept is not shrunk: OLS."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-0.4, 0.4, size=(3000, 3))
    y = np.clip(0.6 + X @ [0.5, -0.3, 0.2] + 0.05 * rng.normal(size=3000), -1, 1)
    problem = ERMProblem(np.hstack([X, np.ones((3000, 1))]), y, SquaredLoss(1.0), 0.0, math.sqrt(2))
    out = sufficient_statistics_perturbation(problem, 1e6, 0.0, rng, intercept=1.0)
    ols = LinearRegression().fit(X, y)
    assert out.ridge == 0.0
    np.testing.assert_allclose(out.coef[:3], ols.coef_, atol=2e-3)
    assert out.coef[3] == pytest.approx(ols.intercept_, abs=2e-3)


def test_the_accountant_is_charged_before_anything_is_computed():
    problem = _problem()
    accountant = BudgetAccountant(epsilon=1.0, delta=1e-5)
    gaussian_sufficient_statistics_perturbation(problem, 0.5, 1e-6, np.random.default_rng(0),
                                                accountant=accountant)
    sufficient_statistics_perturbation(problem, 0.25, 1e-6, np.random.default_rng(0),
                                       accountant=accountant)
    assert accountant.spent == pytest.approx((0.75, 1e-6))


def test_refusals_before_any_budget():
    problem = _problem()
    with pytest.raises(ValueError, match="needs delta > 0"):
        gaussian_sufficient_statistics_perturbation(problem, 1.0, 0.0, np.random.default_rng(0))
    logistic = ERMProblem(problem.X, np.sign(problem.y), LogisticLoss(), 0.1, 1.0)
    for name in ("adassp", "gaussian_adassp"):
        accountant = BudgetAccountant(epsilon=1.0, delta=1e-3)
        with pytest.raises(ValueError, match="least squares"):
            run_mechanism(name, logistic, 1.0, 1e-5, np.random.default_rng(0), 1e-8, 10, accountant)
        assert accountant.spent == (0.0, 0.0)


@pytest.mark.parametrize("mechanism", ["adassp", "gaussian_adassp"])
def test_a_classifier_asking_for_adassp_is_refused_before_spending(mechanism):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(200, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    accountant = BudgetAccountant(epsilon=5.0, delta=1e-3)
    model = PrivateLogisticRegression(mechanism=mechanism, delta=1e-4, classes=[-1, 1],
                                      accountant=accountant)
    with pytest.raises(ValueError, match="least squares"):
        model.fit(X, y)
    assert accountant.spent == (0.0, 0.0)


def test_table_rows():
    for name, uses_delta in (("adassp", False), ("gaussian_adassp", True)):
        entry = MECHANISMS[name]
        assert entry.uses_delta is uses_delta and not entry.needs_curvature
        assert not entry.auto_candidate  # PrivateLeastSquares chooses it itself
        assert entry.losses == ("squared",) and entry.alpha_rule == "none"
        assert entry.accepts(SquaredLoss(1.0), 1e-5) and not entry.accepts(LogisticLoss(), 1e-5)
        assert "Wang (2018)" in entry.reference
    public = calibrate_sufficient_statistics(100, 3, 1.0, 1.0, 1.0, 1e-5, gaussian=True)
    assert public.rho == pytest.approx(3 * public.gram.rho) and public.delta == 1e-5
    pure = calibrate_sufficient_statistics(100, 3, 1.0, 1.0, 1.0, 1e-5, gaussian=False)
    assert pure.delta == 0.0 and pure.rho == 0.0
    assert sum(r.epsilon for r in pure.releases) == pytest.approx(1.0)


def test_the_mechanism_clips_rows_and_targets_itself():
    """Given rows beyond the bound and targets beyond B (a standalone caller), the mechanism
    releases what it would for the clipped data: same seed, same output."""
    problem = _problem(n=30, d=2)
    X, y = problem.X.copy(), problem.y.copy()
    X[0], y[0] = [30.0, -40.0], 7.0
    clipped_X, clipped_y = X.copy(), y.copy()
    clipped_X[0], clipped_y[0] = [0.6, -0.8], 1.0
    raw = sufficient_statistics_perturbation(ERMProblem(X, y, SquaredLoss(1.0), 0.0, 1.0), 1.0, 0.0,
                                             np.random.default_rng(3))
    clean = sufficient_statistics_perturbation(
        ERMProblem(clipped_X, clipped_y, SquaredLoss(1.0), 0.0, 1.0), 1.0, 0.0, np.random.default_rng(3))
    np.testing.assert_allclose(raw.coef, clean.coef, rtol=1e-12)
    np.testing.assert_array_equal(raw.gram, clean.gram)


def test_pure_noise_is_calibrated_to_each_releases_own_share():
    """Each release's Laplace scale, recomputed from its grid sensitivity and its share of epsilon
    (49 / 49 / 2 per cent), is the recorded one, and the noise drawn through the mechanism has
    that law: the split is neither the old equal one nor the whole epsilon for every release."""
    epsilon = 1.0
    calibration, gram, moment, eigen = _noise(_problem(), sufficient_statistics_perturbation,
                                              epsilon, 0.0, 1500, seed=3)
    for release, share in zip(calibration.releases, (0.49, 0.49, 0.02)):
        assert release.epsilon == pytest.approx(share * epsilon)
        steps = release._noise.sensitivity_steps
        assert release.noise_scale == pytest.approx(float(steps) * release.grid / (share * epsilon))
    for release, noise, share in ((calibration.min_eigenvalue, eigen, 0.02),
                                  (calibration.moment, moment, 0.49)):
        scale = float(release._noise.sensitivity_steps) * release.grid / (share * epsilon)
        assert stats.kstest(noise.ravel() / scale, "laplace").pvalue > 1e-3, release.name
    scale = float(calibration.gram._noise.sensitivity_steps) * calibration.gram.grid / (0.49 * epsilon)
    assert stats.kstest(np.linalg.norm(gram, axis=1) / scale, stats.gamma(3).cdf).pvalue > 1e-3


def test_nearest_psd_is_the_projection_and_never_moves_away_from_a_psd_truth():
    """Higham 1988, Thm 2.1: for symmetric A the nearest PSD matrix is (A + |A|) / 2; projecting a
    noised Gram matrix onto the PSD cone never increases its Frobenius distance to the true one."""
    from dperm.mechanisms.sufficient_statistics import nearest_psd

    rng = np.random.default_rng(5)
    for d in (1, 2, 4, 7):
        Z = rng.normal(size=(3 * d, d))
        G = Z.T @ Z
        noise = rng.normal(scale=5.0, size=(d, d))
        noisy = G + (noise + noise.T)
        projected = nearest_psd(noisy)
        values, vectors = np.linalg.eigh(noisy)
        absolute = (vectors * np.abs(values)) @ vectors.T
        np.testing.assert_allclose(projected, (noisy + absolute) / 2, atol=1e-9)
        assert np.allclose(projected, projected.T) and np.linalg.eigvalsh(projected)[0] >= -1e-9
        assert np.linalg.norm(projected - G) <= np.linalg.norm(noisy - G) + 1e-9
        np.testing.assert_allclose(nearest_psd(G), G, atol=1e-9 * np.abs(G).max())


def test_the_solve_projects_the_released_gram_matrix_before_the_ridge():
    """solve_released on a release whose Gram matrix is indefinite: the coefficients are those of
    the projected matrix plus the ridge, not of the raw release."""
    from dperm.mechanisms.sufficient_statistics import nearest_psd

    calibration = calibrate_sufficient_statistics(50, 3, 1.0, 1.0, 1.0, 0.0, gaussian=False)
    raw = np.array([[4.0, 24.0, 0.0], [24.0, 4.0, 0.0], [0.0, 0.0, 90.0]])  # eigenvalues -20, 28, 90
    moment = np.array([1.0, -2.0, 0.5])
    coef, ridge = solve_released(calibration, symmetric_to_vector(raw), moment, -1e9)
    assert ridge == calibration.ridge_target > 20 + calibration.gram.entry_std  # lambda~_min <= 0: the full t

    def solve(matrix):
        values, vectors = np.linalg.eigh(matrix + ridge * np.eye(3))
        return vectors @ ((vectors.T @ moment) / np.maximum(values, calibration.gram.entry_std))

    np.testing.assert_allclose(coef, solve(nearest_psd(raw)))
    assert not np.allclose(coef, solve(raw), rtol=1e-3)
