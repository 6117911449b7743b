"""The tight calibration of Gaussian objective perturbation (docs/design/gaussian_objective.md).

- the continuous reference profile (Redberg, Koskela & Wang 2023) is twice dp-accounting's
  exact Gaussian-mechanism profile where the Gaussian term alone decides it;
- the closed form of the grid bound equals its defining integral (numerical quadrature);
- the calibrated sigma meets delta exactly, is monotone, and is below 004's at Adult's size.
"""

import math

import pytest
from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss
from scipy.integrate import quad

from dperm.privacy.sensitivity import (
    discrete_gaussian_sigma_steps,
    discrete_objective_noise_steps,
    gaussian_sigma_star,
    glm_jacobian_epsilon,
    glm_objective_slack,
    objective_noise_grid,
    subgaussian_norm_quantile,
    tight_discrete_gaussian_sigma_steps,
    tight_gaussian_objective_calibration,
    tight_gaussian_objective_delta,
)
from tests._reference_formulas import redberg_gaussian_objective_delta

ADULT_N, ADULT_D, ADULT_TOL = 45222, 105, 1e-6


@pytest.mark.parametrize("sigma, shift, eps0", [(2.0, 1.0, 0.0), (5.0, 1.0, 0.05), (1.5, 1.0, 0.2)])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_reference_profile_is_twice_dp_accounting_gaussian(sigma, shift, eps0, epsilon):
    floor = shift**2 / (2 * sigma**2)
    if epsilon - eps0 < floor:
        pytest.skip("the Gaussian term alone does not decide delta here")
    exact = GaussianPrivacyLoss(sigma, shift, pessimistic_estimate=False)
    expected = 2 * exact.get_delta_for_epsilon(epsilon - eps0)
    assert redberg_gaussian_objective_delta(epsilon, sigma, shift, eps0) == pytest.approx(expected, rel=1e-6)


def test_reference_profile_below_the_floor_is_continuous_and_decreasing():
    sigma, shift = 0.5, 1.0  # floor = 2
    floor = shift**2 / (2 * sigma**2)
    below = redberg_gaussian_objective_delta(floor - 1e-9, sigma, shift, 0.0)
    above = redberg_gaussian_objective_delta(floor + 1e-9, sigma, shift, 0.0)
    assert below == pytest.approx(above, rel=1e-6)
    values = [redberg_gaussian_objective_delta(e, sigma, shift, 0.0) for e in (0.1, 0.5, 1.0, 2.0, 3.0)]
    assert values == sorted(values, reverse=True)


@pytest.mark.parametrize("sigma, span, d, eps, norm_delta", [
    (300.0, 100.0, 5, 0.5, 1e-3), (50.0, 20.0, 1, 1.0, 1e-2), (2000.0, 300.0, 105, 0.3, 1e-6),
])
def test_grid_bound_closed_form_equals_its_integral(sigma, span, d, eps, norm_delta):
    q = subgaussian_norm_quantile(d, norm_delta)
    mu = span / sigma
    kappa = q * math.sqrt(d) / sigma + (span + math.sqrt(d)) ** 2 / (2 * sigma**2)

    def integrand(y):
        t = (eps - kappa + y) / mu
        return math.exp(-y) * (1.0 if t <= 0 else min(1.0, 4 * math.exp(-t * t / 2)))

    integral = quad(integrand, 0, 80, limit=1000, points=[0.5, 1, 2, 5, 10])[0]
    assert tight_gaussian_objective_delta(sigma, span, d, eps, norm_delta) == pytest.approx(
        norm_delta + integral, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-5), (1.0, 1e-5), (2.0, 1e-3)])
def test_calibrated_sigma_meets_delta_and_is_the_smallest(eps, delta):
    sigma, norm_delta = tight_gaussian_objective_calibration(512.0, ADULT_D, eps, delta)
    assert 0 < norm_delta < delta
    assert tight_gaussian_objective_delta(sigma, 512.0, ADULT_D, eps, norm_delta) <= delta
    assert tight_gaussian_objective_delta(sigma * 0.999, 512.0, ADULT_D, eps, norm_delta) > delta
    # no other split of delta lets 0.99 sigma meet it
    fractions = [math.exp(-k / 10) for k in range(1, 140)]
    assert min(tight_gaussian_objective_delta(sigma * 0.99, 512.0, ADULT_D, eps, delta * f)
               for f in fractions) > delta


def test_calibrated_sigma_is_monotone():
    by_eps = [tight_discrete_gaussian_sigma_steps(100.0, 20, e, 1e-5) for e in (0.1, 0.3, 1.0, 3.0)]
    assert by_eps == sorted(by_eps, reverse=True)
    by_delta = [tight_discrete_gaussian_sigma_steps(100.0, 20, 1.0, d) for d in (1e-8, 1e-5, 1e-3)]
    assert by_delta == sorted(by_delta, reverse=True)
    by_span = [tight_discrete_gaussian_sigma_steps(s, 20, 1.0, 1e-5) for s in (10.0, 100.0, 1000.0)]
    assert by_span == sorted(by_span)


@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_tight_sigma_is_about_a_third_of_004s_at_adult_size(eps):
    grid = objective_noise_grid(ADULT_N, ADULT_TOL, ADULT_D)
    _, l2_steps = discrete_objective_noise_steps(1.0, 1.0, ADULT_D, grid)
    old = discrete_gaussian_sigma_steps(l2_steps, ADULT_D, eps, 1e-5)
    new = tight_discrete_gaussian_sigma_steps(2.0 / grid, ADULT_D, eps, 1e-5)
    continuous_004 = (1.0 / grid) * gaussian_sigma_star(ADULT_D, eps, 1e-5)  # (s / 2) sigma*
    assert new < 0.4 * old and new < 0.4 * continuous_004


def test_jacobian_term_is_one_factor_and_slack_rule():
    assert glm_jacobian_epsilon(100, 0.01, 0.25, 1.0) == pytest.approx(math.log(1.25))
    loose = glm_objective_slack(1.0, 100, 0.01, 0.25, 1.0)
    assert loose.extra_regularization == 0 and loose.epsilon_noise == pytest.approx(1 - math.log(1.25))
    tight = glm_objective_slack(0.1, 100, 0.01, 0.25, 1.0)
    assert tight.epsilon_noise == pytest.approx(0.05)
    regularization = 0.01 + tight.extra_regularization
    assert glm_jacobian_epsilon(100, regularization, 0.25, 1.0) == pytest.approx(0.05)


def test_delta_zero_is_refused():
    with pytest.raises(ValueError, match="delta must be > 0"):
        tight_discrete_gaussian_sigma_steps(100.0, 5, 1.0, 0.0)


@pytest.mark.parametrize("eps", [50.0, 1e3, 1e9])
def test_huge_epsilon_calibrates_a_small_sigma(eps):
    sigma, norm_delta = tight_gaussian_objective_calibration(200.0, 6, eps, 1e-5)
    assert tight_gaussian_objective_delta(sigma, 200.0, 6, eps, norm_delta) <= 1e-5
    assert sigma < 200.0


def test_loss_bound_of_the_derivation_holds_on_random_neighbours():
    """Steps 3-4 of docs/design/gaussian_objective.md, checked pointwise.

    For replace-one neighbours of a Huber GLM (h = 0.5, L = 1), any output ``w`` and any
    ideal noise ``b = h (z + U)``, the noise part of the privacy loss
    ``(||z'||^2 - ||z||^2) / (2 sigma^2)`` with ``z' = round((b + v(w)) / h)`` is at most
    ``(2 s sigma M + 2 ||z|| sqrt(d) + (s + sqrt(d))^2) / (2 sigma^2)``. Half the cases are
    the worst pair (``x' = x``, opposite labels, margin 0: ``||v|| = 2 L R``), where the span
    term is nearly attained, so halving it makes the check fail.
    """
    import numpy as np

    def slope(m):  # Huber l' with h = 0.5 (003 eq. 41), in [-1, 0]
        return np.clip(-(1.5 - m) / 1.0, -1.0, 0.0)

    rng = np.random.default_rng(0)
    d, grid, sigma = 4, 1.0 / 64, 40.0
    s = 2.0 / grid  # 2 L R / h with L = R = 1
    worst, closest = -np.inf, -np.inf
    for trial in range(4000):
        x = rng.normal(size=d)
        x /= np.linalg.norm(x)
        if trial % 2:
            x_new, y, y_new = x.copy(), 1.0, -1.0
            w = rng.normal(size=d)
            w -= (w @ x) * x  # margin 0 on both rows
        else:
            x_new = rng.normal(size=d)
            x_new *= rng.uniform(0.1, 1) / np.linalg.norm(x_new)
            y, y_new = rng.choice([-1.0, 1.0], size=2)
            w = rng.normal(size=d) * 3
        shift = slope(y * w @ x) * y * x - slope(y_new * w @ x_new) * y_new * x_new
        z = np.round(rng.normal(scale=sigma, size=d))
        b = grid * (z + rng.uniform(-0.5, 0.5, size=d))
        z_new = np.round((b + shift) / grid)
        loss = (z_new @ z_new - z @ z) / (2 * sigma**2)
        u, u_new = x, x_new / np.linalg.norm(x_new)
        m = max(abs(z @ u), abs(z @ u_new)) / sigma
        rest = (2 * np.linalg.norm(z) * np.sqrt(d) + (s + np.sqrt(d)) ** 2) / (2 * sigma**2)
        span = 2 * s * sigma * m / (2 * sigma**2)
        worst = max(worst, loss - span - rest)
        closest = max(closest, (loss - rest) / span if m > 1 else -np.inf)
    assert worst <= 1e-9
    assert closest > 0.9  # the span term is attained up to the rounding terms
