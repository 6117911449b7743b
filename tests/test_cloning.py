"""BudgetWarning when scikit-learn clones a private estimator into a CV or a search (issue 18)."""

from __future__ import annotations

import warnings

import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline

from dperm import (
    BudgetWarning,
    PrivateKernelSVC,
    PrivateLeastSquares,
    PrivateLogisticRegression,
    PrivateParameterSearch,
    PrivatePredictor,
    PSGDClassifier,
)
from dperm.cloning import clone_message
from dperm.preprocessing import RowNormalizer
from tests.conftest import ball_rows


def _data(n=150, d=3, seed=0):
    return ball_rows(n, d, seed)


def _model(**kwargs):
    return PrivateLogisticRegression(epsilon=0.5, classes=[0, 1], random_state=0, **kwargs)


def _budget_warnings(action):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [w for w in caught if issubclass(w.category, BudgetWarning)]


def test_cross_val_score_warns_once_at_the_users_line():
    X, y = _data()
    model = _model()
    (warning,) = _budget_warnings(lambda: cross_val_score(model, X, y, cv=4))
    assert warning.filename == __file__
    message = str(warning.message)
    assert "\n" not in message  # one paragraph
    assert "PrivateLogisticRegression was cloned" in message
    assert "epsilon=0.5 again" in message and "dperm.PrivateParameterSearch" in message
    # the same estimator again: already told
    assert _budget_warnings(lambda: cross_val_score(model, X, y, cv=4)) == []
    # a new estimator object: a new warning (once per instance, not per class)
    assert len(_budget_warnings(lambda: cross_val_score(_model(), X, y, cv=4))) == 1


def test_grid_search_warns_once_although_it_clones_its_clone_per_candidate():
    X, y = _data()
    search = GridSearchCV(_model(), {"alpha": [0.01, 0.1]}, cv=3)
    (warning,) = _budget_warnings(lambda: search.fit(X, y))
    assert warning.filename == __file__


def test_a_private_step_of_a_pipeline_warns_too():
    X, y = _data()
    pipe = make_pipeline(RowNormalizer(data_norm=1.0), _model())
    assert len(_budget_warnings(lambda: cross_val_score(pipe, X, y, cv=3))) == 1


def test_a_public_transformer_alone_does_not_warn():
    assert _budget_warnings(lambda: clone(RowNormalizer())) == []


def test_dperms_own_clones_are_silent():
    X, y = _data()
    search = PrivateParameterSearch(_model(), {"alpha": [0.01, 0.1]}, epsilon=1.0, random_state=0)
    assert _budget_warnings(lambda: search.fit(X, y)) == []  # it clones every candidate
    # the search itself, cloned by a CV, warns once, about itself, not about its candidates
    (warning,) = _budget_warnings(lambda: cross_val_score(search, X, y, cv=3))
    assert str(warning.message).startswith("PrivateParameterSearch was cloned")
    assert "use dperm.PrivateParameterSearch" not in str(warning.message)


@pytest.mark.parametrize("make", [
    lambda: _model(),
    lambda: PrivateLeastSquares(epsilon=1.0, y_bound=1.0),
    lambda: PrivateKernelSVC(epsilon=1.0, n_components=10),
    lambda: PrivatePredictor(epsilon_total=2.0, epsilon_per_query=0.5, loss="hinge"),
    lambda: PSGDClassifier(epsilon=1.0),
])
def test_every_private_estimator_family_warns_on_a_clone(make):
    estimator = make()
    (warning,) = _budget_warnings(lambda: clone(estimator))
    assert str(warning.message) == clone_message(estimator)
    assert warning.filename == __file__
