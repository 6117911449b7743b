"""The exact lattice L2 Laplace sampler (dperm.mechanisms.noise.l2_laplace): its law, its ratio bound, its parts.

The law: V ~ Gamma(k, rate a^2 / 2) with k = floor(d/2) + 1, then z_i ~ N_Z(0, V)
independently. Its mass is computed here by quadrature over V and compared with
draws (chi-square), and the lemma the privacy proof rests on,
-(log f)'(r) = r E[1/V | r] <= a, is checked numerically, with a wrong mixing
shape as the negative control.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dperm.mechanisms.noise import (
    BitSource,
    discrete_laplace_calibration,
    release_on_grid,
    to_grid,
    vector_laplace_calibration,
)
from dperm.mechanisms.noise.l2_laplace import (
    _bernoulli_exp_neg_lazy,
    _exponential,
    l2_laplace_mean_square,
    mixing_shape,
    sample_discrete_l2_laplace_vector,
)
from tests._reference_formulas import l2_laplace_calibration

#: The quadrature nodes in u = log v: the integrands below are smooth and decay
#: doubly exponentially at both ends, where the trapezoidal rule converges geometrically.
_U = np.linspace(-14.0, 16.0, 12001)
_V = np.exp(_U)


def _log_theta(v):
    """log sum_k exp(-k^2 / (2 v)): the direct sum for small v, Poisson summation for large v."""
    k = np.arange(-30, 31)[:, None]
    m = np.arange(1, 6)[:, None]
    small = np.log(np.exp(-k * k / (2.0 * np.minimum(v, 0.5))).sum(axis=0))
    large = 0.5 * np.log(2 * np.pi * v) + np.log1p(2 * np.exp(-2 * np.pi**2 * m * m * v).sum(axis=0))
    return np.where(v < 0.5, small, large)


_LOG_THETA = _log_theta(_V)


def _log_integrals(squared_norms, dimension, scale, shape, power=0):
    """log int g(v) Theta(v)^-d exp(-N / (2v)) v^-power dv for every N (g: Gamma(shape, rate 1/(2 s^2)))."""
    rate = 1.0 / (2.0 * scale * scale)
    base = ((shape - power) * _U - rate * _V - dimension * _LOG_THETA
            + shape * math.log(rate) - math.lgamma(shape))  # the extra u is dv = v du
    exponent = base[None, :] - np.asarray(squared_norms, dtype=float)[:, None] / (2.0 * _V[None, :])
    peak = exponent.max(axis=1, keepdims=True)
    return np.log(np.trapezoid(np.exp(exponent - peak), _U, axis=1)) + peak[:, 0]


def _minus_log_slopes(radii, dimension, scale, shape):
    """-(log f)'(r) = r E[1/V | r] at every radius."""
    squared = np.asarray(radii) ** 2
    return np.asarray(radii) * np.exp(_log_integrals(squared, dimension, scale, shape, power=1)
                                      - _log_integrals(squared, dimension, scale, shape))


@pytest.mark.parametrize("dimension", [1, 3, 4])
def test_the_mass_is_exactly_lipschitz_in_the_l2_norm(dimension):
    """The lemma of the module docstring: 0 <= r E[1/V | r] <= a for every radius (a = 1/scale)."""
    scale = 0.8
    shape = mixing_shape(dimension)
    slopes = _minus_log_slopes(np.linspace(0.01, 60, 400), dimension, scale, shape)
    assert min(slopes) >= 0
    assert max(slopes) <= (1 / scale) * (1 + 1e-7)
    # far out the bound is approached: the lattice law has the continuous law's tail
    assert slopes[-1] > 0.95 / scale


def test_a_wrong_mixing_shape_breaks_the_bound():
    """Negative control: one unit less of Gamma shape gives log-slope -a - 1/r near the origin."""
    scale = 0.8
    slopes = _minus_log_slopes(np.array([0.5, 1.0, 2.0]), 3, scale, mixing_shape(3) - 1)
    assert max(slopes) > 1.2 / scale


def _exact_pmf_2d(scale, radius):
    """P(z) on the box [-radius, radius]^2 (d = 2, shape k = 2), normalised over the box."""
    coords = np.arange(-radius, radius + 1)
    squared = (coords[:, None] ** 2 + coords[None, :] ** 2)
    values, inverse = np.unique(squared, return_inverse=True)
    log_p = _log_integrals(values, 2, scale, mixing_shape(2))[inverse].reshape(squared.shape)
    p = np.exp(log_p - log_p.max())
    return coords, p / p.sum()


def _chi_square_pvalue(counts, expected):
    keep = expected >= 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expect = np.append(expected[keep], expected[~keep].sum())
    statistic = ((observed - expect) ** 2 / expect).sum()
    return stats.chi2.sf(statistic, len(observed) - 1)


def _draws_2d(scale, n, seed):
    bits = BitSource(np.random.default_rng(seed))
    return np.array([sample_discrete_l2_laplace_vector(2, scale, bits) for _ in range(n)])


def _pvalues_against(draws, scale, radius=40):
    coords, pmf = _exact_pmf_2d(scale, radius)
    assert np.abs(draws).max() <= radius
    n = len(draws)
    squared = (coords[:, None] ** 2 + coords[None, :] ** 2).ravel()
    # the radial law: mass of each ||z||^2 value
    values, inverse = np.unique(squared, return_inverse=True)
    radial = np.bincount(inverse, weights=pmf.ravel())
    drawn = np.searchsorted(values, (draws**2).sum(axis=1))
    radial_p = _chi_square_pvalue(np.bincount(drawn, minlength=len(values)).astype(float), n * radial)
    # one coordinate's marginal
    marginal = pmf.sum(axis=1)
    first = np.bincount(draws[:, 0] + 40, minlength=len(coords)).astype(float)
    marginal_p = _chi_square_pvalue(first, n * marginal)
    return radial_p, marginal_p


def test_draws_follow_the_exact_mass_function():
    """Chi-square tests of 4,000 draws (d = 2) against the mass computed by quadrature."""
    draws = _draws_2d(Fraction(2), 4000, seed=11)
    radial_p, marginal_p = _pvalues_against(draws, 2.0)
    assert radial_p > 0.01 and marginal_p > 0.01


def test_the_goodness_of_fit_check_has_power():
    """Draws of scale 5/3 are told apart from the mass of scale 2."""
    draws = _draws_2d(Fraction(5, 3), 4000, seed=12)
    radial_p, _ = _pvalues_against(draws, 2.0)
    assert radial_p < 1e-4


def test_mean_square_norm_matches_the_mixture():
    """E||z||^2 <= 2 k d scale^2, and within sampling error of it when the grid is fine."""
    bits = BitSource(np.random.default_rng(5))
    d, scale = 7, Fraction(40)
    norms = np.array([sum(v * v for v in sample_discrete_l2_laplace_vector(d, scale, bits))
                      for _ in range(1500)], dtype=float)
    bound = l2_laplace_mean_square(d, scale)
    # ||z||^2 ~ V chi2_d with V ~ Gamma(4, scale 2 s^2): its standard deviation, over sqrt(n)
    k, theta = mixing_shape(d), 2 * float(scale) ** 2
    second = (k * (k + 1) * theta**2) * (d * (d + 2))
    error = math.sqrt((second - bound**2) / len(norms))
    assert abs(norms.mean() - bound) < 4 * error


def test_exponential_parts_are_exponential():
    """The lazy von Neumann exponential, read at its drawn digits, passes a KS test."""
    bits = BitSource(np.random.default_rng(6))
    values = []
    for _ in range(3000):
        integer, fraction = _exponential(bits)
        fraction.extend_to(max(fraction.digits, 40))
        values.append(integer + fraction.value / 2.0**fraction.digits)
    assert stats.kstest(values, stats.expon.cdf).pvalue > 0.01


def test_lazy_bernoulli_of_an_irrational_exponent():
    """Bernoulli(exp(-gamma)) for gamma = sqrt(2) known only by shrinking bounds: a binomial test."""
    precision = [10]

    def bounds():
        scale = 1 << precision[0]
        root = math.isqrt(2 * scale * scale)
        return (root, scale), (root + 1, scale)

    def refine():
        precision[0] += 8

    bits = BitSource(np.random.default_rng(7))
    accepted = sum(_bernoulli_exp_neg_lazy(bounds, refine, bits) for _ in range(6000))
    assert stats.binomtest(accepted, 6000, math.exp(-math.sqrt(2))).pvalue > 0.01


def test_seeded_draws_are_reproducible_and_integers():
    first = sample_discrete_l2_laplace_vector(9, Fraction(10**6, 7), BitSource(np.random.default_rng(8)))
    again = sample_discrete_l2_laplace_vector(9, Fraction(10**6, 7), BitSource(np.random.default_rng(8)))
    other = sample_discrete_l2_laplace_vector(9, Fraction(10**6, 7), BitSource(np.random.default_rng(9)))
    assert first == again != other
    assert all(type(value) is int for value in first)


def test_the_l2_calibration_is_chosen_from_three_dimensions_on():
    for dimension in (1, 2):
        assert vector_laplace_calibration(0.3, dimension, 1.0).norm == "l1"
    for dimension in (3, 10, 105):
        calibration = vector_laplace_calibration(0.3, dimension, 1.0)
        l1 = discrete_laplace_calibration(0.3, dimension, 1.0)
        assert calibration.norm == "l2"
        assert calibration.noise_distribution == "discrete-l2-laplace"
        ratio = calibration.rms_noise_norm(dimension) / l1.rms_noise_norm(dimension)
        # sqrt(k / d) up to the grid's rounding terms: about 1/sqrt(2) at large d
        assert ratio == pytest.approx(math.sqrt(mixing_shape(dimension) / dimension), rel=1e-2)


def test_grid_l2_sensitivity_bounds_every_rounded_neighbour():
    """Random and adversarial pairs at L2 distance S are never more than k2 steps apart in L2."""
    rng = np.random.default_rng(14)
    for dimension in (3, 17):
        S = 0.37
        calibration = l2_laplace_calibration(S, dimension, 1.0)
        g, k2 = calibration.step, calibration.sensitivity_steps
        worst = 0.0
        for _ in range(300):
            direction = rng.normal(size=dimension)
            direction /= np.linalg.norm(direction)
            a = (np.round(rng.normal(size=dimension) * 5 / g) + 0.5 - 1e-9) * g
            b = a + S * direction
            for shift in (b, a - S * direction):
                steps = np.array(to_grid(shift, g)) - np.array(to_grid(a, g))
                worst = max(worst, float(np.linalg.norm(steps)))
        assert worst <= k2
        assert worst >= 0.95 * float(k2) - math.sqrt(dimension)  # the bound is nearly attained


def test_an_l2_calibration_refuses_a_vector_of_another_length():
    calibration = l2_laplace_calibration(0.3, 5, 1.0)
    with pytest.raises(ValueError, match="dimension 5"):
        release_on_grid(np.zeros(4), calibration, np.random.default_rng(0))
