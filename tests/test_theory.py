"""dperm.theory: each parameter choice against a hand computation, and its monotonicity."""

import math

import pytest

from dperm import theory


def test_nie_wang_parameter_choice_is_theorem_4():
    m, beta = 10_000, 0.5
    choice = theory.nie_wang_parameter_choice(m, beta)
    lam = m ** (-1 / (2 * beta + 1))  # 000 Thm 4
    assert choice.lam == pytest.approx(lam)
    assert choice.epsilon == pytest.approx(1 / math.sqrt(lam * m))
    assert choice.alpha == pytest.approx(2 * lam)  # note 7
    assert choice.rate_exponent == pytest.approx(beta / (2 * beta + 1))
    assert choice.rate == pytest.approx(m ** (-beta / (2 * beta + 1)))
    assert choice.epsilon == pytest.approx(choice.rate)  # 1/sqrt(lambda m) is the rate itself


def test_nie_wang_parameter_choice_monotone():
    small, large = theory.nie_wang_parameter_choice(100, 0.5), theory.nie_wang_parameter_choice(10_000, 0.5)
    assert large.lam < small.lam and large.epsilon < small.epsilon and large.rate < small.rate
    smooth, rough = theory.nie_wang_parameter_choice(1000, 1.0), theory.nie_wang_parameter_choice(1000, 0.2)
    assert smooth.rate < rough.rate  # a smoother target learns faster


@pytest.mark.parametrize("r", [0.1, 0.5, 2.0])
def test_least_squares_parameter_choice_is_002_theorem_3(r):
    m = 5000
    choice = theory.least_squares_parameter_choice(m, r)
    exponent = min(1 / 3, 4 * r / (3 + 6 * r))
    epsilon = (1 / m) ** exponent
    assert choice.epsilon == pytest.approx(epsilon)
    assert choice.lam == pytest.approx((1 / (m * epsilon)) ** (2 / min(4, 3 + 2 * r)))
    assert choice.alpha == pytest.approx(2 * choice.lam)
    assert choice.rate == pytest.approx(m ** (-exponent))


def test_least_squares_parameter_choice_monotone():
    small, large = theory.least_squares_parameter_choice(100, 1.0), theory.least_squares_parameter_choice(10**5, 1.0)
    assert large.lam < small.lam and large.epsilon < small.epsilon and large.rate < small.rate


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: theory.nie_wang_parameter_choice(0, 0.5), "m must be an integer"),
        (lambda: theory.nie_wang_parameter_choice(100, 1.5), r"beta must be in \(0, 1\]"),
        (lambda: theory.nie_wang_parameter_choice(100, float("nan")), "beta must be"),
        (lambda: theory.least_squares_parameter_choice(100, 0.0), "r must be"),
    ],
)
def test_bad_input_raises_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()

