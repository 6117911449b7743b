"""Noise samplers: distributions checked by goodness-of-fit tests."""

import numpy as np
import pytest
from scipy import stats

from dperm.mechanisms.noise import sample_gaussian, sample_l2_laplace


@pytest.mark.parametrize("dimension,scale", [(1, 0.5), (5, 2.0), (105, 0.03)])
def test_l2_laplace_norm_is_gamma(dimension, scale):
    rng = np.random.default_rng(0)
    norms = [np.linalg.norm(sample_l2_laplace(dimension, scale, rng)) for _ in range(3000)]
    result = stats.kstest(norms, stats.gamma(a=dimension, scale=scale).cdf)
    assert result.pvalue > 0.01


@pytest.mark.parametrize("dimension", [2, 3, 20])
def test_l2_laplace_direction_is_uniform(dimension):
    rng = np.random.default_rng(1)
    samples = np.array([sample_l2_laplace(dimension, 1.0, rng) for _ in range(3000)])
    directions = samples / np.linalg.norm(samples, axis=1, keepdims=True)
    # For a uniform direction u on S^(d-1), (u_1 + 1) / 2 ~ Beta((d-1)/2, (d-1)/2).
    projection = (directions[:, 0] + 1) / 2
    half = (dimension - 1) / 2
    assert stats.kstest(projection, stats.beta(half, half).cdf).pvalue > 0.01
    # and no preferred direction: the mean is near zero
    assert np.linalg.norm(directions.mean(axis=0)) < 4 * np.sqrt(1 / 3000)


def test_l2_laplace_density_shape_in_one_dimension_is_laplace():
    rng = np.random.default_rng(2)
    draws = np.array([sample_l2_laplace(1, 0.7, rng)[0] for _ in range(3000)])
    assert stats.kstest(draws, stats.laplace(scale=0.7).cdf).pvalue > 0.01


def test_gaussian_sampler():
    rng = np.random.default_rng(3)
    draws = np.array([sample_gaussian(4, 2.5, rng) for _ in range(2000)])
    assert stats.kstest(draws.ravel(), stats.norm(scale=2.5).cdf).pvalue > 0.01
    squared = (draws**2).sum(axis=1) / 2.5**2
    assert stats.kstest(squared, stats.chi2(df=4).cdf).pvalue > 0.01


def test_seeded_draws_are_reproducible():
    a = sample_l2_laplace(7, 1.0, np.random.default_rng(5))
    b = sample_l2_laplace(7, 1.0, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("scale", [0.0, -1.0, np.inf, np.nan])
def test_bad_scale_is_rejected(scale):
    with pytest.raises(ValueError, match="scale"):
        sample_l2_laplace(3, scale, np.random.default_rng(0))
    with pytest.raises(ValueError, match="sigma"):
        sample_gaussian(3, scale, np.random.default_rng(0))


def test_bad_dimension_is_rejected():
    with pytest.raises(ValueError, match="dimension"):
        sample_l2_laplace(0, 1.0, np.random.default_rng(0))


# -- exact integer samplers (Canonne, Kamath & Steinke 2020) ---------------------------
from fractions import Fraction  # noqa: E402

from dperm.mechanisms.noise import (  # noqa: E402
    BitSource,
    bernoulli_exp_neg,
    discrete_laplace_calibration,
    grid_l1_sensitivity,
    release_on_grid,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)


def _chi_square_against_pmf(draws, pmf, support):
    """Chi-square goodness of fit of integer draws against an exact pmf (tails pooled)."""
    draws = np.asarray(draws)
    observed = np.array([np.count_nonzero(draws == z) for z in support] + [0])
    observed[-1] = draws.size - observed[:-1].sum()
    expected = np.array([pmf(z) for z in support] + [0.0])
    expected[-1] = max(1.0 - expected[:-1].sum(), 0.0)
    keep = expected * draws.size >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum()) * draws.size
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_neg_has_mean_exp_minus_gamma(gamma):
    bits = BitSource(np.random.default_rng(10))
    hits = sum(bernoulli_exp_neg(gamma, bits) for _ in range(20000))
    p = float(np.exp(-float(gamma)))
    assert abs(hits / 20000 - p) < 4.5 * np.sqrt(p * (1 - p) / 20000) + 1e-12


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(3, 2), Fraction(7)])
def test_discrete_laplace_matches_its_pmf(scale):
    bits = BitSource(np.random.default_rng(11))
    draws = [sample_discrete_laplace(scale, bits) for _ in range(20000)]
    q = np.exp(-1 / float(scale))
    pmf = lambda z: (1 - q) / (1 + q) * q ** abs(z)  # noqa: E731
    assert _chi_square_against_pmf(draws, pmf, range(-60, 61)) > 1e-3


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(2), Fraction(30)])
def test_discrete_gaussian_matches_its_pmf(sigma2):
    bits = BitSource(np.random.default_rng(12))
    draws = [sample_discrete_gaussian(sigma2, bits) for _ in range(20000)]
    support = np.arange(-80, 81)
    weights = np.exp(-support.astype(float) ** 2 / (2 * float(sigma2)))
    normaliser = weights.sum()
    pmf = lambda z: np.exp(-z * z / (2 * float(sigma2))) / normaliser  # noqa: E731
    assert _chi_square_against_pmf(draws, pmf, support) > 1e-3


def test_a_wrong_pmf_is_rejected_by_the_goodness_of_fit_check():
    """The check above has power: scale 3/2 draws against the pmf of scale 2."""
    bits = BitSource(np.random.default_rng(13))
    draws = [sample_discrete_laplace(Fraction(3, 2), bits) for _ in range(20000)]
    q = np.exp(-1 / 2.0)
    pmf = lambda z: (1 - q) / (1 + q) * q ** abs(z)  # noqa: E731
    assert _chi_square_against_pmf(draws, pmf, range(-60, 61)) < 1e-6


# -- the same laws on the default noise path: every bit from os.urandom (issue 28) ------
from dperm.randomness import OSEntropyGenerator  # noqa: E402


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(7)])
def test_discrete_laplace_keeps_its_law_on_the_os_path(fake_urandom, scale):
    fake_urandom(5)
    bits = BitSource(OSEntropyGenerator())
    draws = [sample_discrete_laplace(scale, bits) for _ in range(20000)]
    q = np.exp(-1 / float(scale))
    pmf = lambda z: (1 - q) / (1 + q) * q ** abs(z)  # noqa: E731
    assert _chi_square_against_pmf(draws, pmf, range(-60, 61)) > 1e-3


def test_discrete_gaussian_keeps_its_law_on_the_real_os_csprng():
    """Unpatched os.urandom: a statistical test whose threshold fails about once in 10^9 runs."""
    sigma2 = Fraction(2)
    bits = BitSource(OSEntropyGenerator())
    draws = [sample_discrete_gaussian(sigma2, bits) for _ in range(20000)]
    support = np.arange(-30, 31)
    normaliser = np.exp(-support.astype(float) ** 2 / (2 * float(sigma2))).sum()
    pmf = lambda z: np.exp(-z * z / (2 * float(sigma2))) / normaliser  # noqa: E731
    assert _chi_square_against_pmf(draws, pmf, support) > 1e-9


def test_grid_l1_sensitivity_bounds_every_rounded_neighbour():
    """Adversarial and random pairs at L2 distance S never move more than k grid steps in L1."""
    rng = np.random.default_rng(14)
    for dimension in (1, 3, 17):
        S = 0.37
        calibration = discrete_laplace_calibration(S, dimension, 1.0)
        g, k = calibration.step, calibration.l1_sensitivity_steps
        for _ in range(300):
            a = rng.normal(size=dimension) * 5
            direction = np.ones(dimension) / np.sqrt(dimension) * rng.choice([-1, 1], size=dimension)
            if rng.random() < 0.5:
                direction = rng.normal(size=dimension)
                direction /= np.linalg.norm(direction)
            # half-step offsets put every coordinate right at a rounding boundary
            a = (np.round(a / g) + 0.5 - 1e-9) * g
            b = a + S * direction
            moved = np.abs(np.round(a / g) - np.round(b / g)).sum()
            assert moved <= k
        assert k == grid_l1_sensitivity(S, dimension, g)


def test_release_on_grid_lies_on_the_grid_and_is_reproducible():
    calibration = discrete_laplace_calibration(0.01, 3, 0.5)
    values = np.array([0.3, -1.2, 5.0])
    a = release_on_grid(values, calibration, np.random.default_rng(0))
    b = release_on_grid(values, calibration, np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)
    steps = a / calibration.step
    np.testing.assert_array_equal(steps, np.round(steps))
    assert calibration.noise_scale == pytest.approx(np.sqrt(3) * 0.01 / 0.5, rel=2e-3)
