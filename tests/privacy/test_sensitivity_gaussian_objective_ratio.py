"""The default Gaussian objective calibration against the analytic Gaussian mechanism (issue 28).

docs/design/gaussian_objective.md ("How far from the Gaussian mechanism") and the mechanism
catalog state the ratio of the noise's sigma to the smallest sigma for which the Gaussian
mechanism with the same L2 sensitivity is (eps~, delta)-DP (Balle & Wang 2018, Thm 8). The
ratio must be at least 1 (nothing calibrates below the Gaussian mechanism's exact profile) and
within the documented ranges.
"""

import math

import pytest
from scipy.optimize import brentq
from scipy.special import ndtr

from dperm.mechanisms.gaussian_objective import split_epsilon_for_amp
from dperm.privacy.sensitivity import (
    SENSITIVITY_ROUNDING_MARGIN,
    glm_objective_slack,
    objective_noise_grid,
    tight_discrete_gaussian_sigma_steps,
)


def _analytic_gaussian_sigma(sensitivity, epsilon, delta):
    """Balle & Wang (2018) Thm 8: the smallest sigma with delta(eps) <= delta, by bisection."""
    def excess(log_sigma):
        sigma = math.exp(log_sigma)
        a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
        return ndtr(a - b) - math.exp(epsilon) * ndtr(-a - b) - delta
    return math.exp(brentq(excess, math.log(sensitivity * 1e-4), math.log(sensitivity * 1e4),
                           xtol=1e-12))


def _ratio(epsilon, delta, dimension, n_samples):
    epsilon_objective, _ = split_epsilon_for_amp(epsilon)
    slack = glm_objective_slack(epsilon_objective, n_samples, 0.01, 0.25, 1.0)
    span = 2.0 * (1 + SENSITIVITY_ROUNDING_MARGIN) / objective_noise_grid(n_samples, 1e-8, dimension)
    sigma = tight_discrete_gaussian_sigma_steps(span, dimension, slack.epsilon_noise, delta)
    return sigma / _analytic_gaussian_sigma(span, slack.epsilon_noise, delta)


@pytest.mark.parametrize("delta,epsilon,low,high", [
    (1e-5, 0.1, 1.28, 1.31), (1e-5, 1.0, 1.21, 1.23), (1e-5, 4.0, 1.16, 1.19),
    (1e-2, 0.1, 2.16, 2.31), (1e-2, 1.0, 1.54, 1.56), (1e-2, 4.0, 1.34, 1.36),
])
@pytest.mark.parametrize("dimension,n_samples", [(5, 1000), (50, 10000)])
def test_sigma_over_analytic_gaussian_is_the_documented_ratio(delta, epsilon, low, high,
                                                              dimension, n_samples):
    assert low <= _ratio(epsilon, delta, dimension, n_samples) <= high
