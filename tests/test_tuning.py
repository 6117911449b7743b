"""Private parameter tuning (003 Alg. 4): the exponential mechanism and the meta-estimator."""

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import make_classification

from dperm import PrivateLinearSVC, PrivateLogisticRegression
from dperm.privacy.accounting import BudgetAccountant
from dperm.tuning import PrivateParameterSearch, select_by_exponential_mechanism
from tests._reference_formulas import exponential_mechanism_probabilities, utility_bound
from tests.conftest import unit_rows


def test_probabilities_are_the_papers():
    mistakes = np.array([10, 12, 20])
    q = exponential_mechanism_probabilities(mistakes, 0.5)
    expected = np.exp(-0.5 * mistakes / 2) / np.exp(-0.5 * mistakes / 2).sum()  # 003 eq. 123
    np.testing.assert_allclose(q, expected)
    # huge counts do not overflow
    assert np.isfinite(exponential_mechanism_probabilities([1e6, 1e6 + 3], 1.0)).all()


def test_selection_frequencies_match_the_probabilities():
    mistakes = [30, 31, 33, 36, 40]
    epsilon = 0.6
    rng = np.random.default_rng(0)
    draws = [select_by_exponential_mechanism(mistakes, epsilon, rng) for _ in range(20000)]
    observed = np.bincount(draws, minlength=5)
    expected = exponential_mechanism_probabilities(mistakes, epsilon) * len(draws)
    assert stats.chisquare(observed, expected).pvalue > 0.01


def test_theorem_9_utility_bound_holds():
    rng = np.random.default_rng(1)
    mistakes = rng.integers(20, 60, size=8)
    epsilon, failure = 0.3, 0.05
    bound = utility_bound(mistakes.min(), len(mistakes), epsilon, failure)
    chosen = np.array([mistakes[select_by_exponential_mechanism(mistakes, epsilon, rng)]
                       for _ in range(5000)])
    assert np.mean(chosen > bound) <= failure


def _data(n=3000):
    X, y = make_classification(n, 5, n_informative=3, class_sep=1.5, random_state=2)
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


def test_search_end_to_end_and_accounting():
    X, y = _data()
    acc = BudgetAccountant(1.0)
    search = PrivateParameterSearch(PrivateLogisticRegression(fit_intercept=False),
                                    {"alpha": [1e-3, 1e-2, 1e-1]}, epsilon=1.0,
                                    random_state=0, accountant=acc)
    search.fit(X, y)
    assert search.best_params_ in search.candidates_
    assert search.privacy_.epsilon == 1.0 and search.privacy_.n_candidates == 3
    assert sum(search.privacy_.part_sizes) == 3000 and len(search.privacy_.part_sizes) == 4
    assert search.best_estimator_.privacy_.n_samples == search.privacy_.part_sizes[search.best_index_]
    assert acc.spent == (1.0, 0.0)  # charged once: parallel composition
    assert search.score(X, y) > 0.6
    assert search.predict_proba(X).shape == (3000, 2)
    assert "Alg. 4" in search.privacy_.summary()
    again = PrivateParameterSearch(PrivateLogisticRegression(fit_intercept=False),
                                   {"alpha": [1e-3, 1e-2, 1e-1]}, epsilon=1.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.best_estimator_.coef_, search.best_estimator_.coef_)


def test_search_prefers_good_candidates_at_high_epsilon():
    X, y = _data(6000)
    # output perturbation at alpha = 1e-7 adds noise of norm ~1e4: a useless candidate
    candidate = PrivateLogisticRegression(mechanism="output", fit_intercept=False)
    picks = [PrivateParameterSearch(candidate, {"alpha": [1e-1, 1e-7]}, epsilon=5.0, random_state=s)
             .fit(X, y).best_params_["alpha"] for s in range(5)]
    assert picks.count(1e-1) == 5


def test_search_records_delta_of_gaussian_candidates():
    X, y = _data()
    search = PrivateParameterSearch(
        PrivateLinearSVC(mechanism="gaussian_objective", delta=1e-6, fit_intercept=False),
        {"alpha": [1e-2, 1e-1]}, epsilon=1.0, random_state=0).fit(X, y)
    assert search.privacy_.delta == 1e-6


def test_no_probabilities_for_an_svm():
    X, y = _data()
    search = PrivateParameterSearch(PrivateLinearSVC(), {"alpha": [1e-2]}, random_state=0).fit(X, y)
    assert not hasattr(search, "predict_proba")


@pytest.mark.parametrize(
    "grid,message",
    [
        ({"epsilon": [0.1, 1.0]}, "may not set"),
        ({"alpha": []}, "non-empty"),
    ],
)
def test_bad_grids(grid, message):
    X, y = _data(200)
    with pytest.raises(ValueError, match=message):
        PrivateParameterSearch(PrivateLogisticRegression(), grid).fit(X, y)


def test_bad_epsilon_and_tiny_data_and_wrong_estimator():
    X, y = _data(200)
    with pytest.raises(ValueError, match="epsilon must be"):
        PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": [0.1]}, epsilon=0).fit(X, y)
    with pytest.raises(ValueError, match="cannot be split"):
        PrivateParameterSearch(PrivateLogisticRegression(), {"alpha": list(np.logspace(-3, 0, 5))},
                               random_state=0).fit(X[:9], y[:9])
    from sklearn.linear_model import LogisticRegression
    with pytest.raises(ValueError, match="dperm private estimator"):
        PrivateParameterSearch(LogisticRegression(), {"C": [1.0]}).fit(X, y)


# ---------------------------------------------------------------------------
# method="random_stopping" (Papernot & Steinke 2022, Thm 2)
# ---------------------------------------------------------------------------
from fractions import Fraction  # noqa: E402

from dperm.tuning import (  # noqa: E402
    per_repetition_epsilon,
    sample_truncated_negative_binomial,
    stopping_gamma,
    truncated_negative_binomial_mean,
)
from tests._reference_formulas import random_stopping_epsilon, random_stopping_rdp  # noqa: E402


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 3.0])
def test_truncated_negative_binomial_mean_and_sampler(shape):
    gamma = stopping_gamma(8.0, shape)
    mean = truncated_negative_binomial_mean(gamma, shape)
    assert mean == pytest.approx(8.0, rel=1e-9) and mean >= 8.0 * (1 - 1e-12)
    # the pmf of Thm 2, summed, gives the closed-form mean
    k = np.arange(1, 4000)
    log_ratio = np.cumsum(np.log((k - 1 + shape) / k)) if shape > 0 else -np.log(k)
    if shape > 0:
        pmf = np.exp(k * np.log1p(-gamma) + log_ratio) / (gamma ** -shape - 1)
    else:
        pmf = np.exp(k * np.log1p(-gamma) + log_ratio) / np.log(1 / gamma)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-9)
    assert (k * pmf).sum() == pytest.approx(mean, rel=1e-8)
    rng = np.random.default_rng(5)
    draws = np.array([sample_truncated_negative_binomial(gamma, shape, rng) for _ in range(20000)])
    assert draws.min() >= 1
    observed = np.bincount(np.minimum(draws, 12), minlength=13)[1:]
    expected = np.append(pmf[:11], pmf[11:].sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 0.001


def test_geometric_special_case():
    assert truncated_negative_binomial_mean(0.1, 1.0) == pytest.approx(10.0)  # 1/gamma


@pytest.mark.parametrize("shape", [0.0, 1.0, 2.5])
def test_thm2_formula_matches_dp_accounting(shape):
    from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_repeat_and_select
    orders = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 64.0])
    rdp = 0.05 * orders  # e.g. rho-zCDP with rho = 0.05
    mean = 20.0
    gamma = stopping_gamma(mean, shape)
    theirs = _compute_rdp_repeat_and_select(orders, rdp, truncated_negative_binomial_mean(gamma, shape),
                                            shape)
    # Thm 2 minimised over lambda_hat, then the monotonicity of RDP in the order
    ours = np.array([min(random_stopping_rdp(r, o, rh, oh, gamma, shape) for oh, rh in zip(orders, rdp))
                     for o, r in zip(orders, rdp)])
    ours = np.array([ours[orders >= o].min() for o in orders])
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("shape", [0.0, 1.0, 2.0])
def test_pure_dp_form_is_the_limit_of_thm2(shape):
    eps, gamma = 0.3, 0.01
    big = 1e9
    assert random_stopping_rdp(eps, big, eps, big, gamma, shape) == pytest.approx(
        random_stopping_epsilon(eps, shape), rel=1e-6)
    assert random_stopping_epsilon(eps, 1.0) == pytest.approx(3 * eps)  # Liu & Talwar Thm 3.4


@pytest.mark.parametrize("total", [0.1, 1.0, 0.7, 3.0])
@pytest.mark.parametrize("shape", [0.0, 1.0, 0.3])
def test_per_repetition_budget_never_exceeds_the_total(total, shape):
    eps = per_repetition_epsilon(total, shape)
    assert (2 + Fraction(shape)) * Fraction(eps) <= Fraction(total)
    assert eps == pytest.approx(total / (2 + shape), rel=1e-15)


def _search(**kwargs):
    params = dict(epsilon=1.0, method="random_stopping", stopping_mean=6, random_state=0)
    params.update(kwargs)
    return PrivateParameterSearch(PrivateLogisticRegression(fit_intercept=False, classes=[0, 1]),
                                  {"alpha": [1e-3, 1e-2, 1e-1]}, **params)


def test_random_stopping_charges_the_total_and_records_the_theorem():
    X, y = _data()
    acc = BudgetAccountant(1.0)
    search = _search(accountant=acc, stopping_shape=1.0).fit(X, y)
    assert acc.spent == (1.0, 0.0)
    record = search.privacy_
    assert record.method == "random_stopping" and record.stopping == "truncated_negative_binomial"
    assert record.stopping_shape == 1.0 and record.stopping_mean == pytest.approx(6.0)
    assert record.stopping_gamma == pytest.approx(1 / 6)
    assert record.per_repetition_epsilon == pytest.approx(1 / 3)
    assert random_stopping_epsilon(record.per_repetition_epsilon, 1.0) <= record.epsilon
    assert record.part_sizes == (2400, 600)
    assert search.best_estimator_.privacy_.epsilon == record.per_repetition_epsilon
    assert search.best_estimator_.privacy_.n_samples == 2400
    assert "Papernot & Steinke" in record.reference and "Papernot & Steinke" in record.summary()
    assert search.best_params_ == search.candidates_[search.best_index_]
    assert record.selected_index == search.best_index_
    # nothing about K or the scores is kept
    assert not [a for a in vars(search) if "repetition" in a or "mistake" in a or "score" in a]


def test_random_stopping_releases_only_the_private_selection():
    """Neighbour swap: same seed, one row replaced; every non-noised released value is equal."""
    from dperm.privacy.release import NOISED, release_kinds
    X, y = _data(600)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = -X[0], 1 - y[0]
    fits = [_search(random_state=7).fit(a, b) for a, b in ((X, y), (X2, y2))]
    public = [{k: v for k, v in f.privacy_.to_dict().items()
               if release_kinds(f.privacy_)[k] != NOISED and k != "candidate_record"} for f in fits]
    assert public[0] == public[1]
    assert fits[0].candidates_ == fits[1].candidates_
    # the selection is the noised output: it must be a value of the grid, carried with its model
    for f in fits:
        assert f.best_estimator_.get_params()["alpha"] == f.best_params_["alpha"]


def test_random_stopping_prefers_good_candidates_at_high_epsilon():
    X, y = _data(4000)
    candidate = PrivateLogisticRegression(mechanism="output", fit_intercept=False, classes=[0, 1])
    picks = [PrivateParameterSearch(candidate, {"alpha": [1e-1, 1e-7]}, epsilon=15.0,
                                    method="random_stopping", stopping_mean=8, random_state=s)
             .fit(X, y).best_params_["alpha"] for s in range(5)]
    assert picks.count(1e-1) >= 4  # K = 1 with a bad draw can happen (P = 1/8 * 1/2)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"method": "grid"}, "method must be"),
        ({"stopping_shape": -0.5}, "stopping_shape"),
        ({"stopping_shape": float("nan")}, "stopping_shape"),
        ({"stopping_mean": 1.0}, "stopping_mean"),
        ({"stopping_mean": "10"}, "stopping_mean"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"validation_fraction": 0.0001}, "validation rows"),
    ],
)
def test_random_stopping_refuses_bad_parameters_before_spending(kwargs, message):
    X, y = _data(200)
    acc = BudgetAccountant(5.0)
    with pytest.raises(ValueError, match=message):
        _search(accountant=acc, **kwargs).fit(X, y)
    assert acc.spent == (0.0, 0.0)


def test_random_stopping_refuses_approximate_dp_candidates_before_spending():
    X, y = _data(200)
    acc = BudgetAccountant(5.0, 1e-3)
    search = PrivateParameterSearch(
        PrivateLinearSVC(mechanism="gaussian_objective", delta=1e-6, fit_intercept=False),
        {"alpha": [1e-2, 1e-1]}, method="random_stopping", accountant=acc)
    with pytest.raises(ValueError, match="pure epsilon-DP candidates"):
        search.fit(X, y)
    assert acc.spent == (0.0, 0.0)


def test_random_stopping_end_to_end_on_breast_cancer():
    """Seeded run on a small public data set (569 rows, d = 30): far above the majority class (0.63)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    X, y = load_breast_cancer(return_X_y=True)
    X = 2 * (X - X.min(0)) / (X.max(0) - X.min(0)) - 1  # bounds taken as public for the test
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)

    def search():
        return PrivateParameterSearch(PrivateLogisticRegression(classes=[0, 1]),
                                      {"alpha": [1e-4, 1e-3, 1e-2, 1e-1]}, epsilon=30.0,
                                      method="random_stopping", stopping_mean=10, random_state=1)

    fitted = search().fit(X_train, y_train)
    assert fitted.score(X_test, y_test) > 0.85
    assert fitted.privacy_.per_repetition_epsilon == pytest.approx(10.0)
    np.testing.assert_array_equal(search().fit(X_train, y_train).best_estimator_.coef_,
                                  fitted.best_estimator_.coef_)


# ---------------------------------------------------------------------------
# Issue 28 A: the search charges what its candidates spend (mechanism="auto" resolved)
# ---------------------------------------------------------------------------
def _unit_rows(n=4000, d=30, seed=0):
    """d = 30 unit rows: at n = 1,333 per part "auto" chooses the Gaussian objective mechanism."""
    return unit_rows(n, d, seed)


@pytest.fixture
def fitted_records(monkeypatch):
    """Every candidate's own ``privacy_``, collected as the search fits them."""
    records = []
    original = PrivateLogisticRegression.fit

    def fit(self, X, y):
        model = original(self, X, y)
        records.append(model.privacy_)
        return model

    monkeypatch.setattr(PrivateLogisticRegression, "fit", fit)
    return records


def test_alg4_charges_the_delta_its_auto_candidates_spend(fitted_records):
    X, y = _unit_rows()
    acc = BudgetAccountant(10, 1e-3)
    search = PrivateParameterSearch(PrivateLogisticRegression(delta=1e-5, classes=[0, 1]),
                                    {"alpha": [1e-3, 1e-2]}, epsilon=1.0, method="alg4",
                                    accountant=acc, random_state=0).fit(X, y)
    assert search.best_estimator_.mechanism_ == "gaussian_objective"
    assert [r.delta for r in fitted_records] == [1e-5, 1e-5]
    assert acc.spent == (1.0, 1e-5)
    assert (search.privacy_.epsilon, search.privacy_.delta) == (1.0, 1e-5)
    assert search.privacy_.guarantee == "(1, 1e-05)-DP"
    assert search.privacy_.candidate_budgets == ((1.0, 1e-5), (1.0, 1e-5))


def test_alg4_charge_is_the_parallel_composition_of_the_candidates_records(fitted_records):
    # "auto" resolves to the Gaussian objective mechanism (d = 40), "objective" is pure
    X, y = _unit_rows(6000, 40)
    acc = BudgetAccountant(10, 1e-3)
    search = PrivateParameterSearch(
        PrivateLogisticRegression(delta=1e-4, classes=[0, 1], fit_intercept=False),
        {"mechanism": ["auto", "objective"], "alpha": [1e-2]}, epsilon=1.0,
        accountant=acc, random_state=0).fit(X, y)
    assert len(fitted_records) == 2
    assert sorted(r.delta for r in fitted_records) == [0.0, 1e-4]  # the candidates differ
    # parallel composition over disjoint parts: the largest epsilon and the largest delta
    assert acc.spent == (max(r.epsilon for r in fitted_records), max(r.delta for r in fitted_records))
    assert search.privacy_.candidate_budgets == tuple((r.epsilon, r.delta) for r in fitted_records)
    assert (search.privacy_.epsilon, search.privacy_.delta) == acc.spent


@pytest.mark.parametrize("estimator", [
    PrivateLogisticRegression(delta=1e-5, classes=[0, 1]),  # "auto" resolves to the Gaussian one
    PrivateLogisticRegression(delta=1e-5, classes=[0, 1], mechanism="gaussian_objective"),
])
def test_random_stopping_refuses_a_delta_spending_base_before_spending(estimator):
    X, y = _unit_rows()
    acc = BudgetAccountant(10, 1e-3)
    with pytest.raises(ValueError, match="needs pure epsilon-DP candidates.*gaussian_objective"):
        PrivateParameterSearch(estimator, {"alpha": [1e-3, 1e-2]}, epsilon=1.0,
                               method="random_stopping", accountant=acc, random_state=0).fit(X, y)
    assert acc.ledger == () and acc.spent == (0.0, 0.0)


def test_random_stopping_with_a_pure_auto_base_charges_no_delta(fitted_records):
    X, y = _unit_rows(1500, 3)
    acc = BudgetAccountant(10, 1e-3)
    search = PrivateParameterSearch(PrivateLogisticRegression(delta=1e-5, classes=[0, 1]),
                                    {"alpha": [1e-2]}, epsilon=1.0, method="random_stopping",
                                    stopping_mean=3, accountant=acc, random_state=0).fit(X, y)
    assert {r.delta for r in fitted_records} == {0.0}  # d = 3: "auto" chooses pure objective
    assert acc.spent == (1.0, 0.0) and search.privacy_.delta == 0.0
    assert search.privacy_.candidate_budgets == ((search.privacy_.per_repetition_epsilon, 0.0),)


@pytest.mark.parametrize("method", [{"method": "alg4"}, {"method": "random_stopping", "stopping_mean": 2}])
def test_default_search_gives_every_candidate_an_os_noise_source(method, monkeypatch):
    """With random_state=None each candidate fit draws its noise from os.urandom (issue 28).

    The candidates' generators were once seeded with 63 bits of the search's numpy
    stream, a pseudo-random generator between the OS and the candidates' noise.
    """
    from dperm.randomness import OSEntropyGenerator

    seen = []
    configured = PrivateParameterSearch._configured

    def recording(self, params, epsilon, seed, classes):
        seen.append(seed)
        return configured(self, params, epsilon, seed, classes)

    monkeypatch.setattr(PrivateParameterSearch, "_configured", recording)
    X, y = _data(600)
    PrivateParameterSearch(PrivateLogisticRegression(fit_intercept=False, classes=[0, 1]),
                           {"alpha": [1e-2, 1e-1]}, epsilon=1.0, **method).fit(X, y)
    fits = [seed for seed in seen if seed is not None]  # None: the unfitted checks before the budget
    assert fits and all(isinstance(seed, OSEntropyGenerator) for seed in fits)
