"""Private parameter tuning (003 Alg. 4): the exponential mechanism and the meta-estimator."""

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import make_classification

from dperm import PrivateLinearSVC, PrivateLogisticRegression
from dperm.privacy.accounting import BudgetAccountant
from dperm.tuning import (
    PrivateParameterSearch,
    exponential_mechanism_probabilities,
    select_by_exponential_mechanism,
    utility_bound,
)


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
