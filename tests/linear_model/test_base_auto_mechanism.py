"""mechanism="auto" in the estimators: chosen from public quantities, recorded, charged right."""

import numpy as np
import pytest

from dperm import BudgetAccountant, PrivateKernelLogisticRegression, PrivateLinearSVC, PrivateLogisticRegression
from dperm.model_io import model_from_dict, model_to_dict


def _data(n=1500, d=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_auto_is_the_default_and_resolves_per_budget():
    X, y = _data()
    assert PrivateLogisticRegression().mechanism == "auto"
    pure = PrivateLogisticRegression(epsilon=1, classes=[0, 1], random_state=0).fit(X, y)
    assert pure.mechanism_ == "objective" and pure.privacy_.mechanism == "objective"
    assert pure.privacy_.delta == 0.0
    approx = PrivateLogisticRegression(epsilon=1, delta=1e-5, classes=[0, 1], random_state=0).fit(X, y)
    assert approx.mechanism_ == "gaussian_objective"  # d = 41 with the intercept: the Gaussian's norm is smaller
    assert approx.privacy_.delta == 1e-5
    assert "smallest expected perturbation" in approx.privacy_.mechanism_choice
    assert "Chosen by mechanism='auto'" in approx.privacy_.summary()


def test_small_dimension_keeps_pure_objective_under_a_delta_budget():
    X, y = _data(d=1)
    model = PrivateLogisticRegression(epsilon=1, delta=1e-5, classes=[0, 1], random_state=0).fit(X, y)
    assert model.mechanism_ == "objective"
    assert model.privacy_.delta == 0.0  # a pure mechanism spends no delta


def test_named_mechanism_records_no_choice():
    X, y = _data()
    model = PrivateLogisticRegression(epsilon=1, mechanism="objective", classes=[0, 1],
                                      random_state=0).fit(X, y)
    assert model.mechanism_ == "objective" and model.privacy_.mechanism_choice is None


def test_hinge_gets_output_perturbation():
    X, y = _data()
    model = PrivateLinearSVC(loss="hinge", epsilon=1, delta=1e-5, classes=[0, 1], random_state=0).fit(X, y)
    assert model.mechanism_ == "output" and "only mechanism" in model.privacy_.mechanism_choice


def test_kernel_model_exposes_the_choice():
    X, y = _data(n=600, d=5)
    model = PrivateKernelLogisticRegression(epsilon=1, delta=1e-5, n_components=60, classes=[0, 1],
                                            random_state=0, feature_random_state=1).fit(X, y)
    assert model.mechanism_ == model.linear_model_.mechanism_ == model.privacy_.mechanism


@pytest.mark.filterwarnings("ignore::dperm.DataClippingWarning")
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_choice_and_alpha_identical_on_adversarial_neighbours(delta):
    """Replace one row by an extreme one (norm bound, flipped label): nothing public moves."""
    X, y = _data(seed=4)
    X2, y2 = X.copy(), y.copy()
    X2[0] = np.eye(X.shape[1])[0] * 50.0  # clipped to the norm bound
    y2[0] = 1 - y2[0]
    fits = [PrivateLogisticRegression(epsilon=0.5, delta=delta, classes=[0, 1], random_state=s).fit(A, b)
            for s, (A, b) in enumerate([(X, y), (X2, y2)])]
    assert fits[0].mechanism_ == fits[1].mechanism_
    assert fits[0].alpha_ == fits[1].alpha_
    assert fits[0].privacy_.mechanism_choice == fits[1].privacy_.mechanism_choice


def test_accountant_is_charged_the_chosen_mechanisms_delta():
    X, y = _data(d=1)
    accountant = BudgetAccountant(epsilon=2.0, delta=1e-5)
    PrivateLogisticRegression(epsilon=1, delta=1e-5, classes=[0, 1], random_state=0,
                              accountant=accountant).fit(X, y)
    assert accountant.spent == pytest.approx((1.0, 0.0))  # auto chose pure objective perturbation
    X, y = _data(d=40)
    PrivateLogisticRegression(epsilon=1, delta=1e-5, classes=[0, 1], random_state=0,
                              accountant=accountant).fit(X, y)
    assert accountant.spent == pytest.approx((2.0, 1e-5))


def test_model_file_round_trip_keeps_the_choice():
    from dperm.tabular import NumericColumn, TabularSpec

    X, y = _data(d=1)
    model = PrivateLogisticRegression(epsilon=1, delta=1e-5, classes=[0, 1], random_state=0).fit(X, y)
    assert model.mechanism_ == "objective"  # pure chosen under a delta budget: record delta 0
    spec = TabularSpec([NumericColumn("x0", -1.0, 1.0)])
    loaded, _ = model_from_dict(model_to_dict(model, spec, target="y"))
    assert loaded.mechanism_ == "objective" and loaded.alpha_ == model.alpha_
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
