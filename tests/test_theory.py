"""dperm.theory: each formula against a hand computation, and its monotonicity."""

import math

import pytest
from scipy.stats import chi2

from dperm import theory
from dperm.privacy.sensitivity import gaussian_sigma_star


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


ARGS = dict(f0_norm=3.0, dimension=10, epsilon_g=0.1, epsilon_p=0.5, delta=0.05)


def _terms(f0, d, eg, ep, delta):
    return f0**2 * math.log(1 / delta) / eg**2, d * math.log(d / delta)


def test_output_perturbation_sample_size_is_003_theorem_3():
    base, dlog = _terms(*ARGS.values())
    f0, eg, ep, c = 3.0, 0.1, 0.5, 0.25
    expected = max(base, dlog * f0 / (eg * ep), dlog * math.sqrt(c) * f0**2 / (eg**1.5 * ep))
    assert theory.output_perturbation_sample_size(**ARGS, c=c) == pytest.approx(expected)


def test_objective_perturbation_sample_size_is_003_theorem_4():
    base, dlog = _terms(*ARGS.values())
    f0, eg, ep, c = 3.0, 0.1, 0.5, 0.25
    expected = max(base, c * f0**2 / (eg * ep), dlog * f0 / (eg * ep))
    assert theory.objective_perturbation_sample_size(**ARGS, c=c) == pytest.approx(expected)


def test_corollaries_5_and_6_as_printed():
    base, dlog = _terms(*ARGS.values())
    f0, eg, ep, h = 3.0, 0.1, 0.5, 0.5
    assert theory.logistic_sample_size(**ARGS, mechanism="output") == pytest.approx(
        max(base, dlog * f0 / (eg * ep), dlog * f0**2 / (eg**1.5 * ep))  # eq. 80
    )
    assert theory.logistic_sample_size(**ARGS, mechanism="objective") == pytest.approx(
        max(base, f0**2 / (eg * ep), dlog * f0 / (eg * ep))  # eq. 82
    )
    assert theory.huber_svm_sample_size(**ARGS, h=h, mechanism="output") == pytest.approx(
        max(base, dlog * f0 / (eg * ep), dlog * f0**2 / (h**0.5 * eg**1.5 * ep))  # eq. 85
    )
    assert theory.huber_svm_sample_size(**ARGS, h=h, mechanism="objective") == pytest.approx(
        max(base, f0**2 / (h * eg * ep), dlog * f0 / (eg * ep))  # eq. 87
    )


@pytest.mark.parametrize(
    "size",
    [
        lambda **kw: theory.output_perturbation_sample_size(**kw, c=0.25),
        lambda **kw: theory.objective_perturbation_sample_size(**kw, c=0.25),
        lambda **kw: theory.logistic_sample_size(**kw, mechanism="output"),
        lambda **kw: theory.huber_svm_sample_size(**kw, h=0.1, mechanism="objective"),
    ],
)
def test_sample_sizes_grow_with_harder_problems(size):
    base = size(**ARGS)
    assert size(**{**ARGS, "epsilon_p": 0.05}) > base  # more privacy
    assert size(**{**ARGS, "epsilon_g": 0.01}) > base  # more accuracy
    assert size(**{**ARGS, "f0_norm": 30.0}) > base  # a harder target
    assert size(**{**ARGS, "dimension": 1000}) > base
    assert size(**{**ARGS, "delta": 1e-6}) > base


def test_objective_beats_output_on_hard_problems():
    # 003 Sec. 4: objective perturbation depends better on ||f0|| and 1/eps_g
    hard = {**ARGS, "f0_norm": 100.0, "epsilon_g": 0.01}
    assert theory.logistic_sample_size(**hard, mechanism="objective") < theory.logistic_sample_size(
        **hard, mechanism="output"
    )


def test_gop_noise_quantile_is_004_theorem_5_1():
    d, eps, delta, delta_prime = 5, 0.8, 1e-4, 0.05
    sigma = gaussian_sigma_star(d, eps, delta)
    t_hat = theory.gop_noise_norm_quantile(d, eps, delta, delta_prime)
    assert t_hat == pytest.approx(sigma**2 * chi2.ppf(1 - delta_prime, d))
    assert chi2.cdf(t_hat / sigma**2, d) == pytest.approx(1 - delta_prime)  # its defining equation


def test_gop_excess_risk_bound_is_004_theorem_5_1():
    n, lam, c, d, eps, delta, delta_prime = 1000, 0.01, 0.25, 5, 0.8, 1e-4, 0.05
    t_hat = theory.gop_noise_norm_quantile(d, eps, delta, delta_prime)
    bound = theory.gop_excess_risk_bound(n, lam, c, d, eps, delta, delta_prime)
    assert bound == pytest.approx((c + lam) * t_hat / (2 * n**2 * lam**2))
    # note 2: sigma = L R sigma*, Hessian <= c R^2 + lambda
    general = theory.gop_excess_risk_bound(n, lam, c, d, eps, delta, delta_prime, data_norm=2.0, lipschitz=3.0)
    assert general == pytest.approx((c * 4 + lam) * 36 * t_hat / (2 * n**2 * lam**2))


def test_gop_bounds_monotone():
    base = dict(n_samples=1000, alpha=0.01, curvature=0.25, dimension=5, epsilon_tilde=0.8,
                delta=1e-4, delta_prime=0.05)
    value = theory.gop_excess_risk_bound(**base)
    assert theory.gop_excess_risk_bound(**{**base, "n_samples": 10_000}) < value
    assert theory.gop_excess_risk_bound(**{**base, "dimension": 50}) > value
    assert theory.gop_excess_risk_bound(**{**base, "epsilon_tilde": 0.1}) > value
    assert theory.gop_excess_risk_bound(**{**base, "delta_prime": 0.001}) > value
    assert theory.gop_excess_risk_bound(**{**base, "delta": 1e-8}) > value


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: theory.nie_wang_parameter_choice(0, 0.5), "m must be an integer"),
        (lambda: theory.nie_wang_parameter_choice(100, 1.5), r"beta must be in \(0, 1\]"),
        (lambda: theory.nie_wang_parameter_choice(100, float("nan")), "beta must be"),
        (lambda: theory.least_squares_parameter_choice(100, 0.0), "r must be"),
        (lambda: theory.output_perturbation_sample_size(**{**ARGS, "delta": 0.0}, c=1.0), "delta must be"),
        (lambda: theory.objective_perturbation_sample_size(**{**ARGS, "epsilon_p": -1}, c=1.0), "epsilon_p must be"),
        (lambda: theory.output_perturbation_sample_size(**{**ARGS, "f0_norm": float("inf")}, c=1.0), "f0_norm"),
        (lambda: theory.logistic_sample_size(**ARGS, mechanism="gaussian"), "mechanism must be one of"),
        (lambda: theory.huber_svm_sample_size(**ARGS, h=0.0), "h must be"),
        (lambda: theory.gop_noise_norm_quantile(5, 1.0, 1e-4, 0.0), "delta_prime must be"),
        (lambda: theory.gop_noise_norm_quantile(5, 1.0, 0.0, 0.1), "delta must be > 0"),
        (lambda: theory.gop_excess_risk_bound(10, 0.0, 0.25, 5, 1.0, 1e-4, 0.1), "alpha must be"),
    ],
)
def test_bad_input_raises_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_sample_size_theorems_are_a_table_of_the_bounded_mechanisms():
    """The corollaries dispatch through one table, and refuse a mechanism 003 does not bound."""
    assert theory.BOUNDED_MECHANISMS == ("output", "objective")
    assert theory.SAMPLE_SIZE_THEOREMS["output"] is theory.output_perturbation_sample_size
    with pytest.raises(ValueError, match="mechanism must be one of"):
        theory.huber_svm_sample_size(**ARGS, h=0.1, mechanism="gaussian_objective")
