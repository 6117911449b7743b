"""Privacy auditing: the bounds, the canaries, every mechanism passing, and the audit's power.

Every audit here is seeded. "Pass" tests audit the real mechanisms (eps_lower
<= claimed epsilon at 95% confidence); "catch" tests audit copies calibrated
for 4 epsilon (``noise_factor=0.25``: a quarter of the Laplace-type noise, the
library untouched) against the claim epsilon and must FAIL.
Epsilon, delta and the run counts are chosen so both hold with a wide margin
(see the comments on ``ERM_CASES``).
"""

import argparse
import json
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression

from dperm import PrivateLinearSVC
from dperm.audit import (
    MIN_RUNS,
    AuditResult,
    audit,
    audit_estimator,
    audit_exponential_mechanism,
    audit_mechanism,
    audit_samples,
    clopper_pearson_interval,
    clopper_pearson_upper,
    epsilon_lower_bound,
    exponential_audit_candidates,
    exponential_mechanism_neighbours,
    largest_provable_epsilon,
    make_canary_pair,
    strong_alpha,
    with_scaled_noise,
)
from dperm.audit.cli import add_audit_subparser, run_audit_command
from dperm.losses import get_loss
from dperm.mechanisms import ERMProblem, output_perturbation

# (id, mechanism, loss, epsilon, delta, runs per dataset, least eps_lower / eps of the
# real mechanism). On the canary pair the huber and hinge losses meet the sensitivity
# bound exactly and logistic reaches half of it, so correct mechanisms give eps_lower
# ~0.75 eps (hinge-type) or ~0.3 eps (logistic), and the copies with a quarter of the
# noise ~3.2 eps or ~1.6 eps (10 seeds: 3.0-3.9 and 1.45-1.9). Output perturbation is
# exactly analysable (1-D Laplace shifted by its sensitivity: privacy loss exactly eps),
# so its audit must also come close. Gaussian objective perturbation is calibrated for
# a delta tail no audit of this size sees, so its claims use a larger delta, and for
# logistic eps = 3 and more runs (its under-noised privacy loss is Gaussian with mean
# shift 4 / sigma* = 2.35: eps_lower 3.9-4.3 over 10 seeds).
ERM_CASES = [
    ("output-huber", "output", "huber", 1.0, 0.0, 1000, 0.5),
    ("output-logistic", "output", "logistic", 1.0, 0.0, 1000, 0.0),
    ("output-hinge", "output", "hinge", 1.0, 0.0, 1000, 0.5),
    ("objective-huber", "objective", "huber", 1.0, 0.0, 1000, 0.0),
    ("objective-logistic", "objective", "logistic", 1.0, 0.0, 1000, 0.0),
    ("gaussian-huber", "gaussian_objective", "huber", 1.0, 1e-3, 2000, 0.0),
    ("gaussian-logistic", "gaussian_objective", "logistic", 3.0, 0.05, 6000, 0.0),
    ("gaussian004-huber", "gaussian_objective_004", "huber", 1.0, 1e-3, 2000, 0.0),
]
ERM_IDS = [case[0] for case in ERM_CASES]
#: Cases that took 12-35 s each on a loaded 2-core machine (hinge's non-smooth solver, the
#: Gaussian ones' 2000-6000 runs): `make test-slow` audits them, `make test` the other four.
SLOW_ERM_CASES = {"output-hinge", "gaussian-huber", "gaussian-logistic"}
ERM_PARAMS = [pytest.param(case, id=case[0], marks=[pytest.mark.slow] if case[0] in SLOW_ERM_CASES else [])
              for case in ERM_CASES]
UNDER_NOISED = 0.25
#: With 004's calibration (``gaussian_objective_004``) the quarter-noise logistic copy
#: was not caught (eps_lower 2.31 at eps 3, delta 0.05, 6000 runs; the 0.15 copy 4.48).
#: The tight default (docs/design/gaussian_objective.md) is caught at a quarter: at seed
#: 0 the quarter-noise copy reaches eps_lower 3.81 (the 0.15 copy 5.35).
#: The copies are calibrated for epsilon / factor (no test seam in the samplers): for the
#: Gaussian calibrations sigma shrinks a little less than the factor (0.27 for 004's at a
#: quarter), and 004's quarter copy of the huber case reached only eps_lower 0.94 at seed 0
#: (1.31 when every draw was scaled); at 0.15 it reaches 1.91. Seed 0 at a quarter / 0.15:
#: tight huber 1.17 / 2.34, tight logistic (eps 3) 2.06 / 3.36, so the Gaussian cases use
#: 0.15 and the logistic one 0.1.
UNDER_NOISED_BY_CASE: dict[str, float] = {"gaussian004-huber": 0.15, "gaussian-huber": 0.15,
                                          "gaussian-logistic": 0.1}
SEED = 0


# -- Clopper-Pearson and the bound ----------------------------------------------


@pytest.mark.parametrize("successes, trials", [(0, 10), (3, 10), (10, 10), (0, 750), (41, 750),
                                               (500, 750), (1, 2)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_clopper_pearson_interval_matches_scipy_binomtest(successes, trials, confidence):
    expected = stats.binomtest(successes, trials).proportion_ci(confidence, method="exact")
    low, high = clopper_pearson_interval(successes, trials, confidence)
    assert low == pytest.approx(expected.low, abs=1e-12)
    assert high == pytest.approx(expected.high, abs=1e-12)


def test_clopper_pearson_upper_by_hand():
    # k = 0: P[Bin(n, p) = 0] = (1 - p)^n = 1 - level  =>  p = 1 - (1 - level)^(1/n)
    assert clopper_pearson_upper(0, 100, 0.975) == pytest.approx(1 - 0.025 ** (1 / 100))
    assert clopper_pearson_upper(100, 100, 0.975) == 1.0
    # in general the bound p solves P[Bin(n, p) <= k] = 1 - level
    upper = clopper_pearson_upper(17, 200, 0.975)
    assert stats.binom.cdf(17, 200, upper) == pytest.approx(0.025, rel=1e-9)
    np.testing.assert_allclose(clopper_pearson_upper(np.array([0, 17]), 200, 0.975),
                               [1 - 0.025 ** (1 / 200), upper])


def test_epsilon_lower_bound_by_hand():
    fp, fn, m, delta = 30, 400, 1000, 1e-3
    # union bound: each rate at 1 - 0.05 / 2
    fpr_up = stats.beta.ppf(0.975, fp + 1, m - fp)
    fnr_up = stats.beta.ppf(0.975, fn + 1, m - fn)
    bound = epsilon_lower_bound(fp, m, fn, m, delta=delta, confidence=0.95)
    assert bound.fpr_upper == pytest.approx(fpr_up)
    assert bound.fnr_upper == pytest.approx(fnr_up)
    assert bound.eps_lower == pytest.approx(math.log((1 - delta - fnr_up) / fpr_up))
    # the other direction wins when the roles are swapped
    swapped = epsilon_lower_bound(fn, m, fp, m, delta=delta, confidence=0.95)
    assert swapped.eps_lower == pytest.approx(bound.eps_lower)
    # an uninformative test shows nothing
    assert epsilon_lower_bound(500, 1000, 500, 1000).eps_lower == 0.0
    # a perfect test shows the most n runs can: log((1 - u) / u), u = 1 - 0.025^(1/n)
    u = 1 - 0.025 ** (1 / 750)
    assert largest_provable_epsilon(750) == pytest.approx(math.log((1 - u) / u))


@pytest.mark.parametrize("confidence", [0, 1, 1.5, -0.1, float("nan"), True, "0.95"])
def test_bad_confidence_is_refused(confidence):
    with pytest.raises(ValueError, match="confidence"):
        epsilon_lower_bound(1, 10, 1, 10, confidence=confidence)
    with pytest.raises(ValueError, match="confidence"):
        audit(lambda rng: 0.0, lambda rng: 1.0, None, 1.0, n_runs=100, confidence=confidence)


@pytest.mark.parametrize("n_runs", [0, 1, MIN_RUNS - 1, 100.0, True, None])
def test_too_few_runs_are_refused(n_runs):
    with pytest.raises(ValueError, match="n_runs"):
        audit(lambda rng: 0.0, lambda rng: 1.0, None, 1.0, n_runs=n_runs)
    with pytest.raises(ValueError, match="n_runs"):
        audit_exponential_mechanism(1.0, n_runs=n_runs)


def test_other_bad_inputs_name_the_problem():
    good = np.arange(100.0)
    with pytest.raises(ValueError, match="claimed_epsilon"):
        audit_samples(good, good, 0.0)
    with pytest.raises(ValueError, match="claimed_delta"):
        audit_samples(good, good, 1.0, 1.0)
    with pytest.raises(ValueError, match="threshold_fraction"):
        audit_samples(good, good, 1.0, threshold_fraction=1.0)
    with pytest.raises(ValueError, match="same number of runs"):
        audit_samples(good, good[:50], 1.0)
    with pytest.raises(ValueError, match="finite"):
        audit_samples(np.append(good[:-1], np.nan), good, 1.0)
    with pytest.raises(ValueError, match="successes"):
        epsilon_lower_bound(11, 10, 0, 10)
    with pytest.raises(ValueError, match="takes no delta"):
        audit_mechanism("output", 1.0, 1e-5, n_runs=100)
    with pytest.raises(ValueError, match="statistic"):
        audit_mechanism("output", 1.0, statistic="median", n_runs=100)
    with pytest.raises(ValueError, match="n_candidates"):
        exponential_mechanism_neighbours(1)


def test_audit_samples_extremes_and_the_held_out_split():
    rng = np.random.default_rng(SEED)
    same = audit_samples(rng.normal(size=2000), rng.normal(size=2000), 1.0)
    assert same.passed and same.eps_lower < 0.2
    assert (same.n_threshold_runs, same.n_eval_runs) == (500, 1500)
    apart = audit_samples(rng.normal(size=400), 100 + rng.normal(size=400), 1.0)
    assert not apart.passed
    assert apart.eps_lower == pytest.approx(largest_provable_epsilon(300))
    assert (apart.fpr, apart.fnr, apart.side) == (0.0, 0.0, "above")
    # the threshold is chosen on the first quarter only: changing the held-out runs
    # changes the bound but not the threshold
    d, d_prime = rng.laplace(0, 1, 1000), rng.laplace(1, 1, 1000)
    first = audit_samples(d, d_prime, 1.0)
    d_changed = d.copy()
    d_changed[250:] = rng.laplace(0, 1, 750)
    second = audit_samples(d_changed, d_prime, 1.0)
    assert first.threshold == second.threshold and first.fpr != second.fpr


# -- canaries and the under-noised copies ----------------------------------------


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_canary_pair_is_a_worst_case_neighbour(fit_intercept):
    pair = make_canary_pair(20, 3, 2.0, fit_intercept=fit_intercept, random_state=SEED)
    differs = (pair.X != pair.X_prime).any(axis=1) | (pair.y != pair.y_prime)
    assert np.flatnonzero(differs).tolist() == [pair.index]  # replace-one neighbours
    assert np.linalg.norm(pair.canary_x) == pytest.approx(2.0)  # on the norm bound
    assert (np.linalg.norm(pair.X, axis=1) <= 2.0 * (1 + 1e-12)).all()
    np.testing.assert_array_equal(pair.X[pair.index], pair.canary_x)
    assert pair.y[pair.index] == -pair.canary_y == -pair.y_prime[pair.index]  # its mirror
    others = np.delete(pair.X, pair.index, axis=0)
    eigenvalues, _ = np.linalg.eigh(others.T @ others)
    direction = pair.canary_x / 2.0
    assert direction @ (others.T @ others) @ direction == pytest.approx(eigenvalues[0])
    # the label disagrees with a (non-private) model trained without the canary:
    # scikit-learn's C = 1 / (n alpha), intercept as a regularised constant feature
    def augment(X):
        return np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X

    reference = LogisticRegression(C=1 / (others.shape[0] * strong_alpha(20)), fit_intercept=False)
    reference.fit(augment(others), np.delete(pair.y, pair.index))
    assert pair.canary_y * reference.decision_function(augment(pair.canary_x[None, :]))[0] < 0


def test_with_scaled_noise_calibrates_the_mechanism_for_a_larger_epsilon():
    problem = ERMProblem(np.array([[0.5], [-1.0], [0.3]]), np.array([1.0, -1.0, -1.0]),
                         get_loss("huber"), 1.0, 1.0)
    quarter_noise = with_scaled_noise(output_perturbation, 0.25)
    # the exact samplers draw integers, so the scaling shows in the spread of many draws
    full = [output_perturbation(problem, 1.0, 0.0, np.random.default_rng(seed), 1e-8, 1000)
            for seed in range(300)]
    quarter = [quarter_noise(problem, 1.0, 0.0, np.random.default_rng(seed), 1e-8, 1000)
               for seed in range(300)]
    spread_full = np.mean([abs(out.coef - out.solve.coef).item() for out in full])
    spread_quarter = np.mean([abs(out.coef - out.solve.coef).item() for out in quarter])
    assert 0.2 < spread_quarter / spread_full < 0.3
    # the copy is the real mechanism at epsilon 4, and its record says so
    assert quarter[0].epsilon == 4.0
    assert quarter[0].noise_scale == pytest.approx(0.25 * full[0].noise_scale, rel=0.01)
    again = output_perturbation(problem, 4.0, 0.0, np.random.default_rng(3), 1e-8, 1000)
    np.testing.assert_array_equal(again.coef, quarter[3].coef)
    with pytest.raises(ValueError, match="'epsilon'"):
        with_scaled_noise(lambda problem, rng: None, 0.25)


def test_no_generator_changes_the_released_noise():
    """The release samplers read bits from the generator and nothing else (issue 28).

    dperm's audit once scaled the exact noise through a ``noise_factor`` attribute
    of the generator; any Generator subclass could then shrink a released model's
    noise. A generator carrying that attribute now gives the same release as a
    plain one on the same stream.
    """
    class Shrinking(np.random.Generator):
        noise_factor = 0.25

    problem = ERMProblem(np.array([[0.5], [-1.0], [0.3]]), np.array([1.0, -1.0, -1.0]),
                         get_loss("huber"), 1.0, 1.0)
    for seed in range(5):
        plain = output_perturbation(problem, 1.0, 0.0, np.random.default_rng(seed), 1e-8, 1000)
        shrunk = output_perturbation(problem, 1.0, 0.0, Shrinking(np.random.PCG64(seed)), 1e-8, 1000)
        np.testing.assert_array_equal(shrunk.coef, plain.coef)


# -- every mechanism passes ------------------------------------------------------


@pytest.mark.parametrize("case", ERM_PARAMS)
def test_mechanism_passes(case):
    _, mechanism, loss, epsilon, delta, n_runs, least_fraction = case
    result = audit_mechanism(mechanism, epsilon, delta, loss=loss, n_runs=n_runs, random_state=SEED)
    assert result.passed, result.summary()
    assert least_fraction * epsilon <= result.eps_lower <= epsilon
    assert (result.claimed_epsilon, result.claimed_delta) == (epsilon, delta)


def test_tuning_selection_passes_and_comes_close():
    epsilon = 1.0
    result = audit_exponential_mechanism(epsilon, n_runs=4000, random_state=SEED)
    assert result.passed, result.summary()
    # the exact privacy loss of the worst-case pair is log((1 + K e^eps) / (1 + K))
    m = exponential_audit_candidates(epsilon)
    assert f"{m} candidates" in result.label
    weight = (m - 1) * math.exp(-epsilon / 2)
    exact = math.log((1 + weight * math.exp(epsilon)) / (1 + weight))
    assert 0.5 * exact < result.eps_lower <= exact


@pytest.mark.slow  # 1000 estimator fits: ~25 s on a loaded 2-core machine
def test_estimator_passes():
    estimator = PrivateLinearSVC(loss="huber", mechanism="output", epsilon=1.0, fit_intercept=False)
    result = audit_estimator(estimator, n_runs=1000, random_state=SEED)
    assert result.passed, result.summary()
    assert result.eps_lower > 0.5  # a 1-D problem: nearly as sharp as the mechanism audit


def test_estimator_claim_comes_from_its_privacy_record():
    estimator = PrivateLinearSVC(loss="huber", mechanism="gaussian_objective", delta=1e-3)
    result = audit_estimator(estimator, 2.0, n_runs=MIN_RUNS, random_state=SEED)
    assert (result.claimed_epsilon, result.claimed_delta) == (2.0, 1e-3)
    assert "alpha=5" in result.label  # strong regularisation by default (100 / n)


# -- the under-noised copies are caught ------------------------------------------


@pytest.mark.parametrize("case", ERM_PARAMS)
def test_under_noised_mechanism_is_caught(case):
    name, mechanism, loss, epsilon, delta, n_runs, _ = case
    result = audit_mechanism(mechanism, epsilon, delta, loss=loss, n_runs=n_runs,
                             noise_factor=UNDER_NOISED_BY_CASE.get(name, UNDER_NOISED),
                             random_state=SEED)
    assert not result.passed, result.summary()
    assert result.eps_lower > epsilon


@pytest.mark.slow  # 2 x 1000 audited runs: ~23 s on a loaded 2-core machine
def test_under_noised_callable_mechanism_is_caught():
    broken = with_scaled_noise(output_perturbation, UNDER_NOISED)
    result = audit_mechanism(broken, 1.0, loss="huber", n_runs=1000, random_state=SEED)
    assert not result.passed and "output_perturbation" in result.label
    same = audit_mechanism("output", 1.0, loss="huber", n_runs=1000, noise_factor=UNDER_NOISED,
                           random_state=SEED)
    assert result.eps_lower == same.eps_lower


def test_under_noised_tuning_selection_is_caught():
    result = audit_exponential_mechanism(1.0, n_runs=4000, noise_factor=UNDER_NOISED,
                                         random_state=SEED)
    assert not result.passed and result.eps_lower > 1.0


@pytest.mark.slow  # 1000 estimator fits, as test_estimator_passes
def test_under_noised_estimator_is_caught():
    estimator = PrivateLinearSVC(loss="huber", mechanism="output", epsilon=1.0, fit_intercept=False)
    result = audit_estimator(estimator, n_runs=1000, noise_factor=UNDER_NOISED, random_state=SEED)
    assert not result.passed and result.eps_lower > 1.0


def test_generic_audit_of_a_laplace_mechanism():
    # any mechanism as callables: a counting query with Laplace noise of scale 1/eps
    def laplace_count(count, scale):
        return lambda rng: count + rng.laplace(0.0, scale)

    honest = audit(laplace_count(10, 1.0), laplace_count(11, 1.0), None, 1.0, n_runs=2000,
                   random_state=SEED)
    broken = audit(laplace_count(10, 0.25), laplace_count(11, 0.25), None, 1.0, n_runs=2000,
                   random_state=SEED)
    assert honest.passed and 0.5 < honest.eps_lower <= 1.0
    assert not broken.passed and broken.eps_lower > 2.0


# -- record and command line -----------------------------------------------------


def test_result_summary_and_json():
    result = audit_exponential_mechanism(1.0, n_runs=MIN_RUNS * 10, random_state=SEED)
    assert isinstance(result, AuditResult)
    text = result.summary()
    assert "PASS" in text and "95% confidence" in text and "1-DP" in text
    assert f"{result.eps_lower:.4g}" in text and "not a proof of privacy" in text
    record = json.loads(json.dumps(result.to_dict()))
    assert record["passed"] is True and record["n_runs"] == MIN_RUNS * 10
    failing = audit_samples(np.zeros(100), np.ones(100), 1.0)
    assert "FAIL" in failing.summary() and failing.to_dict()["eps_empirical"] is None  # inf


def _cli(argv):
    parser = argparse.ArgumentParser(prog="dperm")
    add_audit_subparser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    assert args.func is run_audit_command
    return args.func(args)


def test_cli_audit_passes_and_catches(tmp_path, capsys):
    out = tmp_path / "audit.json"
    code = _cli(["audit", "--estimator", "tuning", "--epsilon", "1", "--runs", "2000",
                 "--seed", "0", "--json", str(out)])
    assert code == 0
    assert "PASS" in capsys.readouterr().out
    assert json.loads(out.read_text())["claimed_epsilon"] == 1.0
    code = _cli(["audit", "--estimator", "huber", "--mechanism", "output", "--epsilon", "1",
                 "--runs", "500", "--noise-factor", "0.25", "--seed", "0"])
    assert code == 1
    assert "FAIL" in capsys.readouterr().out
