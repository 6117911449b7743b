"""AdaSSP's sensitivities and budget (dperm.privacy.sufficient_statistics) against brute force.

Each sensitivity is checked on random and adversarial replace-one neighbours (statistic
of D minus statistic of D', the whole data set recomputed), and its tightness on the
neighbours that attain it. The zCDP conversion is checked against its own definition
and against the classical conversion it improves on.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.special import ndtr

from dperm.privacy.sufficient_statistics import (
    PURE_SHARES,
    adaptive_ridge,
    discrete_gaussian_sigma_steps,
    gram_l2_sensitivity,
    gram_vector_length,
    min_eigenvalue_sensitivity,
    moment_l2_sensitivity,
    pure_release_epsilons,
    release_budgets,
    ridge_target,
    symmetric_to_vector,
    vector_to_symmetric,
    zcdp_delta,
    zcdp_rho,
)
from tests._reference_formulas import bun_steinke_rho, gram_l1_sensitivity, moment_l1_sensitivity

RNG = np.random.default_rng(20180801)


def _ball(rng, d, radius, size):
    """Points in the ball of ``radius``: half on the sphere, half inside."""
    points = rng.normal(size=(size, d))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    scale = np.where(np.arange(size) % 2 == 0, 1.0, rng.uniform(0, 1, size))
    return radius * points * scale[:, None]


def _adversarial_pairs(d, radius):
    """Neighbouring rows that push a bound: orthogonal, opposite, equal, one zero, diagonal."""
    e = np.eye(d) * radius
    diagonal = np.full(d, radius / math.sqrt(d))
    alternating = diagonal * np.where(np.arange(d) % 2 == 0, 1.0, -1.0)
    pairs = [(e[0], e[-1]), (e[0], -e[0]), (e[0], e[0]), (e[0], np.zeros(d)), (diagonal, -diagonal),
             (diagonal, alternating), (diagonal, e[0])]
    return pairs


def _statistics(X, y):
    gram = X.T @ X
    return symmetric_to_vector(gram), gram[np.triu_indices(X.shape[1])], X.T @ y, \
        np.linalg.eigvalsh(gram)[0]


def _neighbour_differences(X, y, i, z, target):
    X_prime, y_prime = X.copy(), y.copy()
    X_prime[i], y_prime[i] = z, target
    a, b = _statistics(X, y), _statistics(X_prime, y_prime)
    return (np.linalg.norm(a[0] - b[0]), np.abs(a[1] - b[1]).sum(), np.linalg.norm(a[2] - b[2]),
            np.abs(a[2] - b[2]).sum(), abs(a[3] - b[3]))


@pytest.mark.parametrize("d", [1, 2, 3, 6])
@pytest.mark.parametrize("radius,bound", [(1.0, 1.0), (math.sqrt(2.0), 1.0), (0.5, 3.0)])
def test_every_sensitivity_holds_on_random_and_adversarial_neighbours(d, radius, bound):
    rng = np.random.default_rng([d, int(10 * radius), int(bound)])
    limits = (gram_l2_sensitivity(radius), gram_l1_sensitivity(radius, d),
              moment_l2_sensitivity(radius, bound), moment_l1_sensitivity(radius, bound, d),
              min_eigenvalue_sensitivity(radius))
    worst = np.zeros(5)
    for trial in range(60):
        n = int(rng.integers(2, 12))
        X = _ball(rng, d, radius, n)
        y = rng.uniform(-bound, bound, n)
        candidates = [(z, t) for z, t in zip(_ball(rng, d, radius, 3), rng.choice([-bound, bound], 3))]
        candidates += [(z_prime, s * bound) for _, z_prime in _adversarial_pairs(d, radius)
                       for s in (-1, 1)]
        if trial % 3 == 0:  # adversarial D too: the replaced row is one end of a bad pair
            for z, z_prime in _adversarial_pairs(d, radius):
                X[0], y[0] = z, bound
                X[1:] = np.outer(np.ones(n - 1), z) if trial % 2 else X[1:]
                for sign in (-1, 1):
                    worst = np.maximum(worst, _neighbour_differences(X, y, 0, z_prime, sign * bound))
        for z, target in candidates:
            worst = np.maximum(worst, _neighbour_differences(X, y, int(rng.integers(n)), z, target))
    assert np.all(worst <= np.array(limits) * (1 + 1e-12)), (worst, limits)


def test_the_l2_bounds_are_attained():
    d, radius, bound = 2, 1.5, 2.0
    e = np.eye(d) * radius
    X = np.vstack([e[0], e[0], e[0]])
    y = np.array([bound, bound, bound])
    # orthogonal rows of norm R: the Gram matrix moves by sqrt(2) R^2
    assert _neighbour_differences(X, y, 0, e[1], bound)[0] == pytest.approx(gram_l2_sensitivity(radius))
    # the opposite row with the same target: the moment moves by 2 R B
    assert _neighbour_differences(X, y, 0, -e[0], bound)[2] == pytest.approx(
        moment_l2_sensitivity(radius, bound))
    # lambda_min moves by R^2 when the only row outside e_1's span appears
    assert _neighbour_differences(X, y, 0, e[1], bound)[4] == pytest.approx(
        min_eigenvalue_sensitivity(radius))


def test_gram_l1_bound_against_the_exact_maximum_in_two_dimensions():
    """d = 2: the upper triangle's L1 change is |cos 2t - cos 2s| + |sin 2t - sin 2s| / 2 <= sqrt(5)."""
    t, s = np.meshgrid(np.linspace(0, 2 * np.pi, 721), np.linspace(0, 2 * np.pi, 721))
    z = np.stack([np.cos(t), np.sin(t)], -1)
    w = np.stack([np.cos(s), np.sin(s)], -1)
    m = z[..., :, None] * z[..., None, :] - w[..., :, None] * w[..., None, :]
    best = float((np.abs(m[..., 0, 0]) + np.abs(m[..., 1, 1]) + np.abs(m[..., 0, 1])).max())
    assert best == pytest.approx(math.sqrt(5.0), rel=1e-3)
    assert best <= gram_l1_sensitivity(1.0, 2) == pytest.approx(math.sqrt(6.0))


def test_half_vectorisation_is_a_frobenius_isometry_and_inverts():
    for d in (1, 2, 5):
        a = RNG.normal(size=(d, d))
        m = a + a.T
        v = symmetric_to_vector(m)
        assert v.size == gram_vector_length(d) == d * (d + 1) // 2
        assert np.linalg.norm(v) == pytest.approx(np.linalg.norm(m))
        np.testing.assert_allclose(vector_to_symmetric(v, d), m, atol=1e-12)


# -- budget ---------------------------------------------------------------------------------
def _gaussian_mechanism_delta(epsilon, rho):
    """The exact (epsilon, delta) of the continuous Gaussian mechanism at rho = 1 / (2 sigma^2)
    (Balle & Wang 2018, Thm 8): a rho-zCDP mechanism, so the conversion must give at least this."""
    sigma = 1.0 / math.sqrt(2.0 * rho)
    return float(ndtr(1 / (2 * sigma) - epsilon * sigma) - math.exp(epsilon) * ndtr(-1 / (2 * sigma) - epsilon * sigma))


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_zcdp_rho_meets_delta_and_beats_the_classical_conversion(epsilon, delta):
    rho = zcdp_rho(epsilon, delta)
    assert zcdp_delta(rho, epsilon) <= delta
    assert zcdp_delta(rho * 1.01, epsilon) > delta  # the largest (to 1 %)
    assert rho >= bun_steinke_rho(epsilon, delta)
    # the conversion is an upper bound on the Gaussian mechanism's exact profile
    assert _gaussian_mechanism_delta(epsilon, rho) <= delta


def test_zcdp_delta_is_the_corollarys_infimum():
    """Against a brute-force minimum over a grid of Renyi orders."""
    for rho, epsilon in [(0.01, 1.0), (0.1, 1.0), (0.5, 3.0), (0.002, 0.2)]:
        orders = np.linspace(1.0001, 2000, 400001)
        logs = (orders - 1) * (orders * rho - epsilon) + orders * np.log1p(-1 / orders) - np.log(orders - 1)
        assert zcdp_delta(rho, epsilon) == pytest.approx(min(1.0, math.exp(logs.min())), rel=1e-4)


def test_release_budgets_split_in_three():
    assert release_budgets(1.5, 0.0, gaussian=False) == (0.5, 0.0)
    epsilon_each, rho_each = release_budgets(1.0, 1e-5, gaussian=True)
    assert epsilon_each == 0.0 and rho_each == pytest.approx(zcdp_rho(1.0, 1e-5) / 3)
    with pytest.raises(ValueError, match="delta must be > 0"):
        release_budgets(1.0, 0.0, gaussian=True)
    with pytest.raises(ValueError, match="epsilon"):
        release_budgets(0.0, 0.0, gaussian=False)


def test_sigma_gives_rho():
    assert discrete_gaussian_sigma_steps(3.0, 0.02) ** -2 * 3.0**2 / 2 == pytest.approx(0.02)


def test_ridge_rule():
    t = ridge_target(2.0, 4)
    assert t == pytest.approx(2.0 * math.sqrt(4 * math.log(2 * 16 / 0.05)))
    assert adaptive_ridge(t, 0.0) == t and adaptive_ridge(t, -5.0) == t
    assert adaptive_ridge(t, t + 1) == 0.0 and adaptive_ridge(t, 1.0) == pytest.approx(t - 1.0)


def test_float_allowances_are_positive_tiny_and_grow_with_n():
    from dperm.privacy.sufficient_statistics import computed_sensitivities, float_allowances

    small = float_allowances(1000, 11, math.sqrt(2), 1.0)
    large = float_allowances(10**6, 11, math.sqrt(2), 1.0)
    assert all(0 < a < b for a, b in zip(small, large))
    exact = (gram_l2_sensitivity(math.sqrt(2)), moment_l2_sensitivity(math.sqrt(2), 1.0),
             min_eigenvalue_sensitivity(math.sqrt(2)))
    # the worst case of any summation order grows like n^2 u: 0.3 % more noise at a million rows,
    # below 1e-4 at the largest table (54,000 rows)
    computed = computed_sensitivities(10**6, 11, math.sqrt(2), 1.0)
    assert all(e < c < e * (1 + 3e-3) for e, c in zip(exact, computed))
    computed = computed_sensitivities(54_000, 27, math.sqrt(2), 1.0)
    assert all(e < c < e * (1 + 1e-4) for e, c in zip(exact, computed))
    # a float sum of many rows in a bad order stays within the allowance of the exact sum
    rng = np.random.default_rng(3)
    n = 200_000
    column = np.concatenate([[1.0], rng.uniform(0, 1e-8, n - 1)])
    exact_sum = math.fsum(column * column)
    assert abs(float(column @ column) - exact_sum) <= float_allowances(n, 1, 1.0, 1.0)[0] / 2


def test_pure_split_adds_up_to_at_most_epsilon_exactly():
    """Basic composition needs the three epsilons, as exact rationals, to add up to at most epsilon:
    each part is rounded down, so no float rounding can push the sum over (checked on many floats,
    among them ones where rounding to nearest does)."""
    assert sum(PURE_SHARES) == 1 and all(share > 0 for share in PURE_SHARES)
    rng = np.random.default_rng(0)
    candidates = np.concatenate([rng.uniform(1e-3, 50.0, size=20_000), [0.1, 0.3, 0.7, 1.0, 3.0, 1e-6, 1e6]])
    nearest_over = 0
    for epsilon in candidates:
        epsilon = float(epsilon)
        parts = pure_release_epsilons(epsilon)
        assert sum(Fraction(p) for p in parts) <= Fraction(epsilon)
        assert all(p == pytest.approx(float(share) * epsilon, rel=1e-15) for p, share in zip(parts, PURE_SHARES))
        nearest_over += sum(Fraction(float(Fraction(epsilon) * s)) for s in PURE_SHARES) > Fraction(epsilon)
    assert nearest_over > 0  # the rounding down is needed: rounding to nearest overspends on some floats
    with pytest.raises(ValueError, match="epsilon"):
        pure_release_epsilons(0.0)
