"""The Gaussian multinomial calibration (docs/design/gaussian_multinomial.md, steps G1-G3).

The GLM profile bound of docs/design/gaussian_objective.md with the tail factor ``2 K (K - 1)``:
its closed form against quadrature, ``K = 2`` against the GLM, the calibrated sigma against
its bound, and the derivation's pointwise inequalities on random and adversarial neighbours
(the pair bound ``|<w, p - e_y>| <= max_{k,l} |w_k - w_l|`` and the whole noise loss with the
grid's rounding), the span term shown attained so that a smaller constant would fail.
"""

import math

import numpy as np
import pytest
from scipy.integrate import quad

from dperm.losses_multinomial import MultinomialLogisticLoss
from dperm.privacy.multinomial import (
    gaussian_multinomial_sigma_steps,
    multinomial_gaussian_tail_factor,
    multinomial_noise_sensitivity,
)
from dperm.privacy.sensitivity import (
    subgaussian_norm_quantile,
    tight_discrete_gaussian_sigma_steps,
    tight_gaussian_objective_calibration,
    tight_gaussian_objective_delta,
)


def test_tail_factor_is_two_k_k_minus_one_and_four_for_two_classes():
    assert [multinomial_gaussian_tail_factor(K) for K in (2, 3, 4, 10)] == [4.0, 12.0, 24.0, 180.0]
    with pytest.raises(ValueError, match="n_classes"):
        multinomial_gaussian_tail_factor(1)


@pytest.mark.parametrize("sigma, span, d, eps, norm_delta, factor", [
    (300.0, 140.0, 6, 0.5, 1e-3, 12.0), (50.0, 28.0, 3, 1.0, 1e-2, 24.0),
    (2000.0, 420.0, 650, 0.3, 1e-6, 180.0),
])
def test_closed_form_with_the_tail_factor_equals_its_integral(sigma, span, d, eps, norm_delta, factor):
    q = subgaussian_norm_quantile(d, norm_delta)
    mu = span / sigma
    kappa = q * math.sqrt(d) / sigma + (span + math.sqrt(d)) ** 2 / (2 * sigma**2)

    def integrand(y):
        t = (eps - kappa + y) / mu
        return math.exp(-y) * (1.0 if t <= 0 else min(1.0, factor * math.exp(-t * t / 2)))

    integral = quad(integrand, 0, 80, limit=1000, points=[0.5, 1, 2, 5, 10])[0]
    assert tight_gaussian_objective_delta(sigma, span, d, eps, norm_delta, factor) == pytest.approx(
        norm_delta + integral, rel=1e-6, abs=1e-12)


def test_two_classes_give_the_glm_sigma():
    assert gaussian_multinomial_sigma_steps(300.0, 8, 0.9, 1e-5, 2) == tight_discrete_gaussian_sigma_steps(
        300.0, 8, 0.9, 1e-5)


@pytest.mark.parametrize("eps, delta, K", [(0.5, 1e-5, 3), (1.0, 1e-5, 10), (3.0, 1e-3, 4)])
def test_calibrated_sigma_meets_delta_and_is_the_smallest(eps, delta, K):
    span, d = 500.0, 6 * K
    factor = multinomial_gaussian_tail_factor(K)
    sigma, norm_delta = tight_gaussian_objective_calibration(span, d, eps, delta, tail_factor=factor)
    assert sigma == gaussian_multinomial_sigma_steps(span, d, eps, delta, K)
    assert tight_gaussian_objective_delta(sigma, span, d, eps, norm_delta, factor) <= delta
    assert tight_gaussian_objective_delta(sigma * 0.999, span, d, eps, norm_delta, factor) > delta


def test_sigma_grows_with_the_number_of_classes_only_logarithmically():
    sigmas = [gaussian_multinomial_sigma_steps(1000.0, 60, 1.0, 1e-5, K) for K in (2, 3, 5, 10, 20)]
    assert sigmas == sorted(sigmas)
    assert sigmas[-1] / sigmas[0] < 1.4  # log(2 K (K - 1) / delta) under the square root


def _gradient_factor(p, label):
    return p - np.eye(p.size)[label]


def test_pair_bound_of_the_shift_projection():
    """|<w, p - e_y>| <= max_{k,l} |w_k - w_l| for every p in the simplex and label y; attained at vertices."""
    rng = np.random.default_rng(0)
    closest = 0.0
    for trial in range(3000):
        K = int(rng.integers(2, 8))
        w = rng.normal(size=K) * rng.uniform(0.1, 10)
        if trial % 3 == 0:
            p = np.eye(K)[np.argmax(w)]  # a vertex: the bound is attained with y = argmin
            y = int(np.argmin(w))
        else:
            p = MultinomialLogisticLoss.probabilities(rng.normal(size=(1, K)) * rng.uniform(0, 20))[0]
            y = int(rng.integers(K))
        value = abs(w @ _gradient_factor(p, y))
        bound = w.max() - w.min()
        assert value <= bound * (1 + 1e-12) + 1e-12
        closest = max(closest, value / bound)
    assert closest == pytest.approx(1.0)


def _shift(x, label, p, x_new, label_new, p_new):
    """b_D'(W) - b_D(W) = x (p - e_y)^T - x' (p' - e_y')^T (flattened row-major as W.ravel())."""
    return (np.outer(x, _gradient_factor(p, label)) - np.outer(x_new, _gradient_factor(p_new, label_new))).ravel()


@pytest.mark.parametrize("K", [3, 5])
def test_noise_loss_bound_of_the_derivation_holds_on_random_and_adversarial_neighbours(K):
    """Step G2, pointwise: with the ideal noise ``b = h (z + U)`` and ``z' = round((b + v) / h)``,

        (||z'||^2 - ||z||^2) / (2 sigma^2) <= (2 s sigma M + 2 ||z|| sqrt(D) + (s + sqrt(D))^2) / (2 sigma^2),

    ``s = 2 sqrt(2) R / h``, ``D = d K``, ``M = max over the two rows and the class pairs of
    |w_k - w_l| / (sqrt(2) sigma)``, ``w = Z^T u``. Half the cases are adversarial (``x' = -x``,
    ``p = p' = e_a``, the same label ``b``, a and b the extreme classes of ``Z^T u``: the
    shift has the bound's norm ``2 sqrt(2) R`` and its projection attains the span term), where
    halving the span term would fail.
    """
    rng = np.random.default_rng(K)
    d, grid, sigma, R = 3, 1.0 / 64, 40.0, 1.0
    D = d * K
    s = multinomial_noise_sensitivity(R) / grid
    worst, closest = -np.inf, -np.inf
    for trial in range(3000):
        Z = np.round(rng.normal(scale=sigma, size=(d, K)))
        x = rng.normal(size=d)
        x *= R / np.linalg.norm(x)
        if trial % 2:
            w = Z.T @ x / R
            a, b = int(np.argmax(w)), int(np.argmin(w))
            x_new, p, p_new, label, label_new = -x, np.eye(K)[a], np.eye(K)[a], b, b
            shift = _shift(x, label, p, x_new, label_new, p_new)
            assert np.linalg.norm(shift) == pytest.approx(multinomial_noise_sensitivity(R))
        else:
            x_new = rng.normal(size=d)
            x_new *= R * rng.uniform(0.05, 1) / np.linalg.norm(x_new)
            p = MultinomialLogisticLoss.probabilities(rng.normal(size=(1, K)) * 3)[0]
            p_new = MultinomialLogisticLoss.probabilities(rng.normal(size=(1, K)) * 3)[0]
            label, label_new = rng.integers(K, size=2)
            shift = _shift(x, label, p, x_new, label_new, p_new)
            assert np.linalg.norm(shift) <= multinomial_noise_sensitivity(R) * (1 + 1e-12)
        z = Z.ravel()
        b_noise = grid * (z + rng.uniform(-0.5, 0.5, size=D))
        z_new = np.round((b_noise + shift) / grid)
        loss = (z_new @ z_new - z @ z) / (2 * sigma**2)
        ranges = [np.ptp(Z.T @ (v / np.linalg.norm(v))) for v in (x, x_new)]
        m = max(ranges) / (math.sqrt(2) * sigma)
        rest = (2 * np.linalg.norm(z) * math.sqrt(D) + (s + math.sqrt(D)) ** 2) / (2 * sigma**2)
        span = 2 * s * sigma * m / (2 * sigma**2)
        worst = max(worst, loss - span - rest)
        if m > 1:
            closest = max(closest, (loss - rest) / span)
    assert worst <= 1e-9
    assert closest > 0.9
