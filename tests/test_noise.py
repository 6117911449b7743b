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
