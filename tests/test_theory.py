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


# -- alpha="auto" ------------------------------------------------------------------------
def test_auto_alpha_follows_the_theorys_shape():
    import math

    from dperm.losses import get_loss
    from dperm.theory import AUTO_ALPHA_CONSTANTS, OUTPUT_CURVATURE_EXPONENT, auto_alpha

    logistic = get_loss("logistic")
    # eps = 0.2: enough noise that the rule is above its floor k / n
    base = auto_alpha(10_000, 50, 0.2, mechanism="objective", loss=logistic, data_norm=1.0)
    # objective: C (R RMS||b|| / n)^p; the float-safe pure noise is the lattice L2 Laplace law of
    # scale 2 L R / eps' (eps' = 0.99 eps after AMP's output share): its mixing variance is
    # Gamma(k = floor(d/2) + 1) with mean 2 k scale^2 per coordinate, so RMS||b|| = sqrt(2 k d) 2 L R / eps'
    C, p = AUTO_ALPHA_CONSTANTS["objective"]
    unit = math.sqrt(2 * 26 * 50) * 2 / (0.99 * 0.2 * 10_000)
    assert math.isclose(base, C * unit**p)
    assert math.isclose(auto_alpha(20_000, 50, 0.2, mechanism="objective", loss=logistic, data_norm=1.0),
                        base / 2**p)
    assert math.isclose(auto_alpha(10_000, 50, 0.4, mechanism="objective", loss=logistic, data_norm=1.0),
                        base / 2**p)
    assert math.isclose(auto_alpha(10_000, 50, 0.2, mechanism="objective", loss=logistic, data_norm=1.0,
                                   multiplier=3.0), 3.0 * unit)
    # output: C ((c L^2 d^2 R^6 / (n eps)^2)^(1/3))^p
    C, p = AUTO_ALPHA_CONSTANTS["output"]
    out = auto_alpha(10_000, 50, 1.0, mechanism="output", loss=logistic, data_norm=1.0)
    q = OUTPUT_CURVATURE_EXPONENT
    assert math.isclose(out, C * ((0.25**q * 50**2 / 10_000**2) ** (1 / 3)) ** p)
    # least squares: C_L depends on alpha, found by a fixed point
    from dperm.losses import SquaredLoss

    squares = SquaredLoss(1.0)
    a = auto_alpha(10_000, 50, 1.0, mechanism="output", loss=squares, data_norm=1.0)
    lipschitz = squares.solution_lipschitz(1.0, a)
    assert math.isclose(a, C * ((2.0**q * lipschitz**2 * 50**2 / 10_000**2) ** (1 / 3)) ** p, rel_tol=1e-9)


def test_auto_alpha_floor_is_a_scikit_learn_style_regularisation():
    """With much budget the rule stops at alpha = k/n (scikit-learn's C = 1/k), never below."""
    from dperm.losses import get_loss
    from dperm.theory import ALPHA_FLOOR_TIMES_N, auto_alpha

    logistic = get_loss("logistic")
    assert set(ALPHA_FLOOR_TIMES_N) == {"objective", "output"}
    for mechanism, delta in (("objective", 0.0), ("gaussian_objective", 1e-5), ("output", 0.0)):
        k = ALPHA_FLOOR_TIMES_N["output" if mechanism == "output" else "objective"]
        assert k > 0
        for n in (1_000, 70_000):
            big = auto_alpha(n, 20, 1e4, delta, mechanism=mechanism, loss=logistic, data_norm=1.0)
            assert big == k / n
            small = auto_alpha(n, 20, 0.05, delta, mechanism=mechanism, loss=logistic, data_norm=1.0)
            assert small > k / n
    # the fitting script's grid (multiplier) is the bare base, without the floor
    assert auto_alpha(1_000, 20, 1e4, mechanism="objective", loss=logistic, data_norm=1.0,
                      multiplier=1.0) < 1e-3


def test_auto_alpha_intercept_widens_the_noise_not_the_weights():
    """With an intercept the noise is calibrated to R = sqrt(R_x^2 + s^2), the weights' scale is R_x."""
    import math

    import numpy as np

    from dperm import PrivateLogisticRegression
    from dperm.losses import get_loss
    from dperm.theory import AUTO_ALPHA_CONSTANTS, OUTPUT_CURVATURE_EXPONENT, auto_alpha, objective_noise_norm

    logistic = get_loss("logistic")
    n, d, eps = 5_000, 30, 0.5
    C, p = AUTO_ALPHA_CONSTANTS["objective"]
    with_intercept = auto_alpha(n, d + 1, eps, mechanism="objective", loss=logistic, data_norm=math.sqrt(2.0),
                                feature_norm=1.0)
    base = 1.0 * objective_noise_norm("objective", d + 1, eps, 0.0, 1.0, math.sqrt(2.0)) / n
    assert math.isclose(with_intercept, C * base**p)
    assert with_intercept < auto_alpha(n, d + 1, eps, mechanism="objective", loss=logistic,
                                       data_norm=math.sqrt(2.0))
    rng = np.random.default_rng(0)
    X = rng.random((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(n) < 0.3, 1, -1)
    model = PrivateLogisticRegression(epsilon=eps, mechanism="objective", classes=[-1, 1], random_state=0).fit(X, y)
    assert model.alpha_ == with_intercept
    C, p = AUTO_ALPHA_CONSTANTS["output"]
    out = auto_alpha(n, d + 1, eps, mechanism="output", loss=logistic, data_norm=math.sqrt(2.0), feature_norm=1.0)
    assert math.isclose(out, C * ((0.25 ** OUTPUT_CURVATURE_EXPONENT * (d + 1) ** 2 * 2.0 / (n * eps) ** 2) ** (1 / 3)) ** p)


def test_auto_alpha_reads_no_data_only_its_shape():
    """alpha_ is a function of public inputs: any two data sets of the same shape get the same value."""
    import numpy as np

    from dperm import PrivateLinearSVC, PrivateLogisticRegression, PrivateQuantileRegressor

    rng = np.random.default_rng(0)
    X1, X2 = rng.normal(size=(300, 4)) * 0.3, rng.normal(size=(300, 4)) * 0.1
    y1, y2 = np.where(X1[:, 0] > 0, 1, -1), -np.ones(300, dtype=int)
    y2[:10] = 1
    for make in (lambda: PrivateLogisticRegression(random_state=0, classes=[-1, 1]),
                 lambda: PrivateLinearSVC(loss="hinge", mechanism="output", random_state=0, classes=[-1, 1]),
                 lambda: PrivateLogisticRegression(mechanism="gaussian_objective", delta=1e-5, random_state=0,
                                                   classes=[-1, 1])):
        a1, a2 = make().fit(X1, y1).alpha_, make().fit(X2, y2).alpha_
        assert a1 == a2 and a1 > 0
    r1 = PrivateQuantileRegressor(random_state=0).fit(X1, X1[:, 0]).alpha_
    r2 = PrivateQuantileRegressor(random_state=0).fit(X2, rng.normal(size=300)).alpha_
    assert r1 == r2
    fixed = PrivateLogisticRegression(alpha=0.03, random_state=0, classes=[-1, 1]).fit(X1, y1)
    assert fixed.alpha_ == 0.03 and fixed.privacy_.alpha == 0.03


def test_auto_alpha_same_for_neighbouring_data_sets():
    """Replacing one row (a neighbouring data set) leaves alpha_ unchanged: the rule reads no row."""
    import numpy as np

    from dperm import PrivateLogisticRegression

    rng = np.random.default_rng(3)
    X = rng.random((200, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(200) < 0.25, 1, -1)
    X2, y2 = X.copy(), y.copy()
    X2[17], y2[17] = [1.0, 0.0, 0.0, 0.0, 0.0], -y[17]
    for mechanism, delta in (("objective", 0.0), ("gaussian_objective", 1e-5), ("output", 0.0)):
        fits = [PrivateLogisticRegression(mechanism=mechanism, delta=delta, epsilon=0.5, classes=[-1, 1],
                                          random_state=0).fit(A, b) for A, b in ((X, y), (X2, y2))]
        assert fits[0].alpha_ == fits[1].alpha_ > 0


@pytest.mark.parametrize("mechanism, delta", [("objective", 0.0), ("gaussian_objective", 1e-5), ("output", 0.0)])
def test_auto_alpha_monotone_as_derived(mechanism, delta):
    """More data or more budget means less noise, so less regularisation; more dimensions, more."""
    from dperm.losses import get_loss
    from dperm.theory import ALPHA_FLOOR_TIMES_N, auto_alpha

    k = ALPHA_FLOOR_TIMES_N["output" if mechanism == "output" else "objective"]

    def rule(n, d, eps):
        return auto_alpha(n, d, eps, delta, mechanism=mechanism, loss=get_loss("logistic"), data_norm=2**0.5)

    for n in (100, 1_000, 30_000):
        for eps in (0.05, 0.1, 1.0, 5.0):
            a = rule(n, 50, eps)
            assert rule(2 * n, 50, eps) < a
            # more budget: less regularisation, down to the floor k/n (then equal)
            assert rule(n, 50, 2 * eps) < a or rule(n, 50, 2 * eps) == a == k / n
            assert rule(n, 100, eps) > a or a == rule(n, 100, eps) == k / n


@pytest.mark.parametrize("mechanism, delta", [("objective", 0.0), ("gaussian_objective", 1e-5),
                                              ("gaussian_objective_004", 1e-5)])
def test_auto_alpha_noise_is_the_noise_the_mechanism_draws(mechanism, delta):
    """The rule's RMS||b|| is the calibrated mechanism's own (Jacobian share negligible here)."""
    import math

    from dperm.losses import get_loss
    from dperm.mechanisms import PublicProblem
    from dperm.mechanisms.gaussian_objective import calibrate_gaussian_objective
    from dperm.mechanisms.objective import calibrate_objective
    from dperm.theory import objective_noise_norm

    logistic = get_loss("logistic")
    d, R, eps = 40, 1.5, 0.7
    problem = PublicProblem(10**7, d, logistic, 1.0, R)  # c R^2 / (n alpha) ~ 6e-8: no Jacobian share
    if mechanism == "objective":
        plan = calibrate_objective(problem, eps, 1e-12)  # a fine grid: no rounding terms
    else:
        plan = calibrate_gaussian_objective(problem, eps, delta, 1e-12,
                                            calibration="tight" if mechanism == "gaussian_objective" else "004")
    rule = objective_noise_norm(mechanism, d, eps, delta, logistic.lipschitz, R)
    assert math.isclose(rule, plan.rms_noise_norm(d), rel_tol=1e-3)
