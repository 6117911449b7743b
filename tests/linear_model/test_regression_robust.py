"""``PrivateRobustRegressor``: the pseudo-Huber loss fitted through the table's mechanisms.

Objective perturbation, its Gaussian form and output perturbation each release a model whose
non-noised outputs are identical on neighbouring data sets, ``mechanism="auto"`` picks a
mechanism whose theorem covers the loss from public quantities, the fit solves its own loss's
objective, and ``dperm train --model pseudo_huber`` writes a model file that loads.
"""

import json
import warnings

import numpy as np
import pytest

from dperm import PrivateRobustRegressor
from dperm.exceptions import DataClippingWarning
from dperm.linear_model._targets import to_unit_interval
from dperm.losses import PseudoHuberLoss
from dperm.mechanisms.catalog import MECHANISMS
from dperm.privacy.accounting import BudgetAccountant
from dperm.solvers import RegularizedERMObjective, minimize_certified
from tests._release_checks import non_noised

BOUNDS = (0.0, 40.0)


def _data(n=3000, seed=0, outliers=0.1):
    """Targets around 20 + X w with Cauchy-tailed noise and a share of gross outliers."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, 2))
    y = 20 + X @ np.array([10.0, -5.0]) + rng.standard_t(1, size=n)
    wild = rng.uniform(size=n) < outliers
    y[wild] = rng.uniform(30, 1e4, wild.sum())
    return X, y


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        return PrivateRobustRegressor(y_bounds=BOUNDS, random_state=3, **params).fit(X, y)


@pytest.mark.parametrize("mechanism, delta", [("objective", 0.0), ("gaussian_objective", 1e-5),
                                              ("output", 0.0), ("auto", 0.0), ("auto", 1e-5)])
def test_neighbours_agree_on_everything_but_the_noised_coefficients(mechanism, delta):
    X, y = _data(400)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [40.0, -30.0], -1e9  # a row far outside data_norm and a target far outside the bounds
    on_d = _fit(X, y, mechanism=mechanism, delta=delta, epsilon=2.0)
    on_d_prime = _fit(X2, y2, mechanism=mechanism, delta=delta, epsilon=2.0)
    left, right = non_noised(on_d), non_noised(on_d_prime)
    assert left.keys() == right.keys()
    for key in left:
        assert np.array_equal(left[key], right[key]) if isinstance(left[key], np.ndarray) \
            else left[key] == right[key], key
    assert not np.array_equal(on_d.coef_, on_d_prime.coef_)  # the comparison is not vacuous
    assert MECHANISMS[on_d.mechanism_].accepts(PseudoHuberLoss(), delta)


def test_auto_chooses_an_objective_mechanism_from_public_quantities_and_records_why():
    X, y = _data(2000)
    pure = _fit(X, y)
    assert pure.mechanism_ == pure.privacy_.mechanism == "objective"
    assert "only mechanism whose theorem covers the pseudo_huber loss" in pure.privacy_.mechanism_choice
    approximate = _fit(X, y, delta=1e-5)
    assert approximate.mechanism_ in ("objective", "gaussian_objective")
    assert "smallest expected perturbation" in approximate.privacy_.mechanism_choice
    assert approximate.privacy_.delta == MECHANISMS[approximate.mechanism_].delta_spent(1e-5)
    # the choice reads n, d and the budget only: the same on other data of the same shape
    assert _fit(*_data(2000, seed=9), delta=1e-5).privacy_.mechanism_choice == \
        approximate.privacy_.mechanism_choice


@pytest.mark.parametrize("mechanism", ["objective", "output"])
def test_the_record_is_recomputed_from_public_inputs_and_the_budget_is_spent(mechanism):
    X, y = _data(1000)
    accountant = BudgetAccountant(epsilon=1.0)
    model = _fit(X, y, mechanism=mechanism, epsilon=0.6, accountant=accountant)
    assert model._public_record(1000, 2) == model.privacy_
    assert accountant.spent[0] == pytest.approx(0.6)
    assert model.privacy_.loss == "pseudo_huber" and model.privacy_.target_bounds == BOUNDS
    assert model.privacy_.lipschitz == 1.0
    assert model.privacy_.curvature == (1 / 0.1 if mechanism == "objective" else None)  # c = 1/h


def test_the_fit_solves_its_own_loss_at_a_large_epsilon():
    """At epsilon 1e5 the noise is negligible: the release is the pseudo-Huber minimiser on the
    targets mapped onto [-1, 1] (post-processed back), not some other loss's."""
    X, y = _data(2000, outliers=0.2)
    with pytest.warns(UserWarning, match="epsilon"):
        model = _fit(X, y, epsilon=1e5, alpha=1e-3, h=0.1, mechanism="objective")
    Xa = np.hstack([X, np.ones((len(X), 1))])
    target = to_unit_interval(np.clip(y, *BOUNDS), *BOUNDS)
    exact = minimize_certified(RegularizedERMObjective(PseudoHuberLoss(0.1), Xa, target, 1e-3),
                               1e-10, 1000).coef
    np.testing.assert_allclose(np.r_[model.coef_, model.intercept_ - 20.0] / 20.0, exact, atol=2e-3)
    # robust: 20 % gross outliers (clipped to 40) barely move it; least squares on the same
    # clipped targets is pulled toward them
    squares = np.linalg.lstsq(Xa, np.clip(y, *BOUNDS), rcond=None)[0]
    truth = np.array([10.0, -5.0, 20.0])
    robust_error = np.linalg.norm(np.r_[model.coef_, model.intercept_] - truth)
    assert robust_error < np.linalg.norm(squares - truth) / 4  # measured 0.86 against 4.9


@pytest.mark.parametrize("params, message", [
    ({"loss": "pinball"}, "'loss' parameter"),
    ({"h": 0.0}, "'h' parameter"),
    ({"mechanism": "adassp"}, "covers the squared loss only"),
    ({"mechanism": "gaussian_objective"}, "needs delta > 0"),
    ({"y_bounds": (3.0, 1.0)}, "y_bounds"),
])
def test_bad_parameters_are_refused_before_any_budget(params, message):
    accountant = BudgetAccountant(epsilon=1.0)
    with pytest.raises(ValueError, match=message):
        PrivateRobustRegressor(accountant=accountant, **params).fit(*_data(100))
    assert accountant.spent == (0.0, 0.0)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_the_command_line_trains_the_loss_and_writes_a_model_file_that_loads(tmp_path):
    from dperm.cli import main
    from dperm.model_io import load_model

    X, y = _data(1500)
    data = tmp_path / "d.csv"
    data.write_text("a,b,y\n" + "".join(f"{a!r},{b!r},{t!r}\n" for (a, b), t in zip(X.tolist(), y.tolist())))
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps({"a": [-0.5, 0.5], "b": [-0.5, 0.5]}))
    out = tmp_path / "m.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["train", "--data", str(data), "--target", "y", "--model", "pseudo_huber",
                     "--y-bounds", "0", "40", "--bounds", str(bounds), "--epsilon", "1",
                     "--random-state", "0", "--out", str(out)])
    assert code in (0, None)
    model, _, document = load_model(out)
    assert type(model).__name__ == "PrivateRobustRegressor" and model.loss == "pseudo_huber"
    assert model.privacy_.mechanism == "objective" and model.privacy_.loss == "pseudo_huber"
