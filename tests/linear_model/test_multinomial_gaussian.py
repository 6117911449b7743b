"""PrivateLogisticRegression with delta > 0 and K > 2 labels: the Gaussian multinomial row among the
multiclass candidates, chosen by public expected perturbation; neighbour swap; model files."""

import math
import warnings

import numpy as np
import pytest

from dperm import PrivateLogisticRegression
from dperm.linear_model._multinomial import multiclass_rows, multinomial_public_problem
from dperm.mechanisms.catalog import MECHANISMS
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.release import released_attributes
from tests._release_checks import non_noised
from tests.conftest import multiclass_blobs

GAUSSIAN = "gaussian_multinomial_objective"
PURE = "multinomial_objective"


def _data(n=600, d=4, K=3, seed=0):
    return multiclass_blobs(n, d, K, seed)


def test_multiclass_rows_follow_the_table_flags():
    assert multiclass_rows("auto", 0.0) == (PURE,)
    assert multiclass_rows("auto", 1e-5) == (PURE, GAUSSIAN)
    assert multiclass_rows("objective", 1e-5) == (PURE,)
    assert multiclass_rows("gaussian_objective", 1e-5) == (GAUSSIAN,)
    assert multiclass_rows("gaussian_objective", 0.0) == ()
    assert multiclass_rows("output", 1e-5) == ()
    assert multiclass_rows("gaussian_objective_004", 1e-5) == ()  # a reproduction, not a family


def _public_score(name, n, d, K, epsilon, delta, alpha, norm, tol=1e-8):
    """Noise per class column over R / alpha, recomputed from the row alone (public quantities)."""
    problem = multinomial_public_problem(n, d, K, alpha, norm)
    row = MECHANISMS[name]
    score = row.expected_perturbation(problem, epsilon, row.delta_spent(delta), tol)
    return score / math.sqrt(K) * alpha / norm


@pytest.mark.parametrize("n, d, K, epsilon, expected", [
    (2000, 30, 5, 1.0, GAUSSIAN),  # many coordinates: the Gaussian's sqrt(dK) norm wins
    (600, 2, 3, 3.0, PURE),  # few coordinates, a large epsilon: the lattice Laplace law wins
])
def test_auto_chooses_the_multiclass_row_with_the_smaller_public_expected_perturbation(n, d, K, epsilon,
                                                                                        expected):
    X, y = _data(n=n, d=d, K=K)
    model = PrivateLogisticRegression(epsilon=epsilon, delta=1e-5, classes=list(range(K)),
                                      multi_class="multinomial", alpha=0.01, random_state=0).fit(X, y)
    norm = math.sqrt(2.0)  # data_norm 1 and the intercept's column
    scores = {name: _public_score(name, n, d + 1, K, epsilon, 1e-5, 0.01, norm) for name in (PURE, GAUSSIAN)}
    assert model.mechanism_ == min(scores, key=scores.get) == expected
    assert f"multinomial model: {expected!r}" in model.privacy_.mechanism_choice
    for name, score in scores.items():
        assert f"{name} {score:.3g}" in model.privacy_.mechanism_choice
    assert model.privacy_.delta == (1e-5 if expected == GAUSSIAN else 0.0)
    assert model.privacy_.mechanism == expected
    # the choice reads no data: the same on other rows of the same size
    other = PrivateLogisticRegression(epsilon=epsilon, delta=1e-5, classes=list(range(K)),
                                      multi_class="multinomial", alpha=0.01,
                                      random_state=0).fit(*_data(n=n, d=d, K=K, seed=7))
    assert other.privacy_.mechanism_choice == model.privacy_.mechanism_choice


def test_default_auto_with_delta_compares_the_gaussian_row_with_one_vs_rest():
    X, y = _data(n=2000, d=30, K=5)
    accountant = BudgetAccountant(epsilon=2.0, delta=1e-4)
    model = PrivateLogisticRegression(epsilon=1.0, delta=1e-5, classes=list(range(5)), random_state=0,
                                      accountant=accountant).fit(X, y)
    assert model.multi_class_ == "multinomial" and model.mechanism_ == GAUSSIAN
    assert model.coef_.shape == (5, 30) and model.intercept_.shape == (5,)
    assert accountant.spent == pytest.approx((1.0, 1e-5))
    assert model.privacy_.mechanism_choice.startswith("multi_class='multinomial'")
    pure = PrivateLogisticRegression(epsilon=1.0, classes=list(range(5)), random_state=0).fit(X, y)
    assert pure.mechanism_ == PURE and "multinomial model:" not in pure.privacy_.mechanism_choice
    np.testing.assert_allclose(model.predict_proba(X[:4]).sum(axis=1), 1.0)


def test_gaussian_objective_with_multinomial_runs_the_gaussian_row_and_output_is_refused():
    X, y = _data()
    model = PrivateLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1, 2], multi_class="multinomial",
                                      mechanism="gaussian_objective", random_state=0).fit(X, y)
    assert model.mechanism_ == GAUSSIAN and model.privacy_.mechanism_choice is None
    accountant = BudgetAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(ValueError, match="needs delta > 0|not available"):
        PrivateLogisticRegression(epsilon=1.0, classes=[0, 1, 2], multi_class="multinomial",
                                  mechanism="gaussian_objective", accountant=accountant).fit(X, y)
    assert accountant.spent == (0.0, 0.0)


def test_neighbours_release_the_same_public_fields():
    """Replace one record by an adversarial one (clipped row, other label): only coef_ and intercept_ differ."""
    X, y = _data(n=300, d=20, K=4)
    X2, y2 = X.copy(), y.copy()
    X2[0] = 0.0
    X2[0, :3] = [40.0, -30.0, 10.0]
    y2[0] = (y[0] + 1) % 4
    fits = []
    for data in ((X, y), (X2, y2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(PrivateLogisticRegression(epsilon=1.0, delta=1e-5, classes=list(range(4)),
                                                  random_state=3).fit(*data))
    assert fits[0].mechanism_ == GAUSSIAN
    public = non_noised(fits[0])
    assert public.keys() == non_noised(fits[1]).keys()
    for key, value in public.items():
        other = non_noised(fits[1])[key]
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, other, err_msg=key)
        elif hasattr(value, "to_dict"):
            assert value.to_dict() == other.to_dict(), key
        else:
            assert value == other, key
    assert not np.array_equal(released_attributes(fits[0])["coef_"], released_attributes(fits[1])["coef_"])


def test_model_file_round_trip_and_a_changed_sigma_is_refused(tmp_path):
    import json

    from dperm.model_io import load_model, save_model
    from dperm.tabular import TabularSpec

    X, y = _data(n=1500, d=12, K=4)
    model = PrivateLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1, 2, 3], random_state=0).fit(X, y)
    assert model.mechanism_ == GAUSSIAN
    spec = TabularSpec.from_dict({"columns": [{"name": f"c{j}", "type": "numeric", "lower": -1, "upper": 1}
                                              for j in range(12)]})
    path = tmp_path / "model.json"
    save_model(path, model, spec, "label")
    loaded, _, _ = load_model(path)
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    assert loaded.privacy_.to_dict() == model.privacy_.to_dict()
    np.testing.assert_allclose(loaded.predict_proba(X[:3]), model.predict_proba(X[:3]))
    document = json.loads(path.read_text())
    document["privacy"]["noise_scale"] *= 0.5  # a publisher claiming half the sigma
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="'privacy.noise_scale' is .* recomputed"):
        load_model(tampered)
