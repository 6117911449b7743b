"""One-vs-rest runs each of its K problems at epsilon / K: alpha="auto" must balance that noise.

Issue 30's benchmark found the rule fed the whole epsilon while each problem's noise was
calibrated to epsilon / K, so alpha fell to the floor (chile at eps 1: 0.0021 against 0.035)
and the built-in one-vs-rest lost up to 0.10 to the same one-vs-rest built by hand.
"""

import numpy as np
import pytest

from dperm import PrivateLogisticRegression
from dperm.mechanisms.choice import auto_alpha

pytestmark = pytest.mark.filterwarnings("ignore::dperm.WeakGuaranteeWarning")


def _data(n=3000, d=5, k=4, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = 2 * rng.normal(size=(k, d))[y] + rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1).max(), y


@pytest.mark.parametrize("epsilon", [0.3, 1.0])
def test_each_one_vs_rest_problem_gets_the_alpha_of_its_own_share(epsilon):
    X, y = _data()
    k = 4
    model = PrivateLogisticRegression(epsilon=epsilon, classes=list(range(k)), multi_class="ovr",
                                      fit_intercept=False, random_state=0).fit(X, y)
    expected = auto_alpha(X.shape[0], X.shape[1], epsilon / k, 0.0, mechanism=model.mechanism_,
                          loss=model._make_loss(), data_norm=1.0, feature_norm=1.0)
    assert model.alpha_ == expected
    binary_at_share = PrivateLogisticRegression(epsilon=epsilon / k, classes=[0, 1], fit_intercept=False,
                                                random_state=0).fit(X, (y == 0).astype(int))
    assert model.alpha_ == binary_at_share.alpha_
