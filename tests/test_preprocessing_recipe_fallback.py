"""``make_private_pipeline(fit_intercept="auto")``: the recipe's majority guarantee for two labels (issue 30)."""

import numpy as np
import pytest

from dperm import PrivateLinearSVC, PrivateLogisticRegression
from dperm.preprocessing import make_private_pipeline
from dperm.privacy.fallback import RECIPE_INTERCEPT_SCALING


@pytest.mark.parametrize("params, fitted", [
    ({"classes": [0, 1]}, True),                          # two public labels, the fallback on
    ({"classes": ["a", "b"], "fallback": "majority"}, True),
    ({"classes": [0, 1], "fallback": None}, False),       # no fallback: the recipe without intercept
    ({"classes": [0, 1, 2]}, False),                      # the fallback is off for three labels
    ({}, False),                                          # label set unknown until fit: no intercept
])
def test_auto_intercept_only_where_the_fallback_runs(params, fitted):
    model = make_private_pipeline(PrivateLogisticRegression(epsilon=1.0, **params), bounds=(0, 1))[-1]
    assert model.fit_intercept is fitted
    assert model.intercept_scaling == (RECIPE_INTERCEPT_SCALING if fitted else 1.0)


def test_explicit_intercept_and_other_estimators_are_as_before():
    two = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1])
    assert make_private_pipeline(two, bounds=(0, 1), fit_intercept=False)[-1].fit_intercept is False
    explicit = make_private_pipeline(two, bounds=(0, 1), fit_intercept=True)[-1]
    assert explicit.fit_intercept is True and explicit.intercept_scaling == 1.0
    kept = make_private_pipeline(PrivateLogisticRegression(fit_intercept=True, classes=[0, 1]), bounds=(0, 1),
                                 fit_intercept=None)[-1]
    assert kept.fit_intercept is True and kept.intercept_scaling == 1.0
    svc = make_private_pipeline(PrivateLinearSVC(epsilon=1.0, classes=[0, 1]), bounds=(0, 1))[-1]
    assert svc.fit_intercept is False


def test_pipeline_default_falls_back_to_the_majority_class_without_signal():
    """Labels independent of X, epsilon 0.1: the recipe's default is on average at the majority class
    (the constant released in most draws); the recipe without the intercept falls far below it."""
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 10, size=(1_500, 2))
    y = (rng.random(1_500) < 0.25).astype(int)
    majority = 1 - y.mean()
    constant, accuracy, plain = 0, [], []
    for seed in range(12):
        estimator = PrivateLogisticRegression(epsilon=0.1, classes=[0, 1], random_state=seed)
        pipeline = make_private_pipeline(estimator, bounds=(0, 10)).fit(X, y)
        constant += pipeline[-1].privacy_.fallback_choice == "constant"
        accuracy.append(np.mean(pipeline.predict(X) == y))
        old = make_private_pipeline(estimator, bounds=(0, 10), fit_intercept=False).fit(X, y)
        plain.append(np.mean(old.predict(X) == y))
    assert constant >= 6
    assert np.mean(accuracy) >= majority - 0.015
    assert np.mean(plain) < majority - 0.1


@pytest.mark.parametrize("value", ["yes", 1, "Auto"])
def test_a_bad_fit_intercept_is_refused(value):
    with pytest.raises(ValueError, match="fit_intercept must be True, False, None or 'auto'"):
        make_private_pipeline(PrivateLogisticRegression(classes=[0, 1]), bounds=(0, 1), fit_intercept=value)
