"""dperm.privacy._noise_search: the one bracket of PSGD's and Newton's noise-multiplier searches."""

import math

import pytest

from dperm.privacy import newton, psgd
from dperm.privacy._noise_search import NOISE_MULTIPLIER_RTOL, bracket_noise_multiplier


def _start(epsilon, delta, n_rounds):
    """The classical Gaussian bound for T-fold composition (Dwork & Roth 2014, Thm A.1, times sqrt(T))."""
    return math.sqrt(n_rounds) * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


@pytest.mark.parametrize("root_factor", [1e-3, 0.3, 0.5, 1.0, 1.7, 2.0, 40.0])
def test_the_bracket_holds_the_root_and_is_one_doubling_wide(root_factor):
    epsilon, delta, n_rounds = 0.7, 1e-5, 9
    root = root_factor * _start(epsilon, delta, n_rounds)
    calls = []

    def gap(z):  # falls with z, zero at root
        calls.append(z)
        return root / z - 1.0

    lower, upper = bracket_noise_multiplier(gap, epsilon, delta, n_rounds)
    assert gap(lower) > 0 >= gap(upper)
    assert lower < root <= upper and upper == 2.0 * lower
    assert calls[0] == _start(epsilon, delta, n_rounds)  # where the search starts
    # every point tried is the start times a power of two: the bracket is exact in floating point
    for z in calls:
        ratio = z / calls[0]
        assert ratio == 2.0 ** round(math.log2(ratio))


def test_a_root_on_a_tried_point_is_the_upper_end():
    epsilon, delta, n_rounds = 1.0, 1e-6, 4
    root = 4.0 * _start(epsilon, delta, n_rounds)
    lower, upper = bracket_noise_multiplier(lambda z: root / z - 1.0, epsilon, delta, n_rounds)
    assert (lower, upper) == (root / 2.0, root)  # gap(root) = 0 meets the budget


def test_psgd_and_newton_share_the_search_and_its_tolerance():
    assert psgd.NOISE_MULTIPLIER_RTOL is newton.NOISE_MULTIPLIER_RTOL is NOISE_MULTIPLIER_RTOL
    assert psgd.bracket_noise_multiplier is newton.bracket_noise_multiplier is bracket_noise_multiplier
