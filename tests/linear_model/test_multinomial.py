"""PrivateLogisticRegression's multi_class: the multinomial model, one-vs-rest and the public choice."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from dperm import PrivateLogisticRegression
from dperm.exceptions import NoiseSwampsSignalError
from dperm.linear_model._multinomial import _PerClassColumn
from dperm.mechanisms.multinomial_objective import MULTINOMIAL_OBJECTIVE
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.release import RecordBase, released_attributes
from tests._release_checks import non_noised
from tests.conftest import multiclass_blobs

CLASSES = [0, 1, 2]


def _assert_same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray) or isinstance(b[key], np.ndarray):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        elif isinstance(a[key], RecordBase):
            assert a[key].to_dict() == b[key].to_dict(), key
        else:
            assert a[key] == b[key], key


def _data(n=600, d=4, K=3, seed=0):
    return multiclass_blobs(n, d, K, seed)


def test_multinomial_fit_releases_one_k_column_model():
    X, y = _data()
    model = PrivateLogisticRegression(epsilon=2.0, classes=CLASSES, multi_class="multinomial",
                                      random_state=0).fit(X, y)
    assert model.multi_class_ == "multinomial"
    assert model.mechanism_ == MULTINOMIAL_OBJECTIVE
    assert model.coef_.shape == (3, 4) and model.intercept_.shape == (3,)
    assert model.privacy_.n_problems == 1
    assert model.privacy_.epsilon == 2.0 and model.privacy_.delta == 0.0
    assert model.privacy_.loss == "multinomial_logistic"
    proba = model.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X[:5]))
    assert model.score(X, y) > 0.6
    assert "multinomial" in model.privacy_.summary()


def test_ovr_is_unchanged_and_two_labels_give_one_binary_problem():
    X, y = _data()
    ovr = PrivateLogisticRegression(epsilon=2.0, classes=CLASSES, multi_class="ovr", random_state=0).fit(X, y)
    assert ovr.multi_class_ == "ovr" and ovr.privacy_.n_problems == 3
    binary = PrivateLogisticRegression(epsilon=2.0, classes=[0, 1], multi_class="multinomial",
                                       random_state=0).fit(X[y < 2], y[y < 2])
    assert binary.multi_class_ == "ovr" and binary.coef_.shape == (1, 4)


def test_auto_chooses_by_public_quantities_and_records_why():
    X, y = _data()
    model = PrivateLogisticRegression(epsilon=1.0, classes=CLASSES, random_state=0).fit(X, y)
    assert model.multi_class_ == "multinomial"  # sqrt(2/K) of one-vs-rest's noise per class
    assert "multi_class='multinomial'" in model.privacy_.mechanism_choice
    # the choice reads no data: the same on other rows of the same size
    other = PrivateLogisticRegression(epsilon=1.0, classes=CLASSES, random_state=0).fit(*_data(seed=5))
    assert other.privacy_.mechanism_choice == model.privacy_.mechanism_choice
    # a mechanism the multinomial model does not run leaves one-vs-rest
    output = PrivateLogisticRegression(epsilon=1.0, classes=CLASSES, mechanism="output",
                                       random_state=0).fit(X, y)
    assert output.multi_class_ == "ovr"


def test_multinomial_refuses_other_mechanisms_before_the_budget():
    X, y = _data()
    accountant = BudgetAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match="multi_class='multinomial'"):
        PrivateLogisticRegression(epsilon=1.0, classes=CLASSES, multi_class="multinomial",
                                  mechanism="output", accountant=accountant).fit(X, y)
    with pytest.raises(ValueError):
        PrivateLogisticRegression(multi_class="softmax").fit(X, y)
    assert accountant.spent == (0.0, 0.0)
    PrivateLogisticRegression(epsilon=1.0, classes=CLASSES, multi_class="multinomial",
                              accountant=accountant, random_state=0).fit(X, y)
    assert accountant.spent[0] == pytest.approx(1.0)


def test_swamped_noise_is_refused_before_the_budget():
    X, y = _data(n=40, d=4)
    accountant = BudgetAccountant(epsilon=10.0)
    with pytest.raises(NoiseSwampsSignalError):
        PrivateLogisticRegression(epsilon=1e-3, classes=CLASSES, multi_class="multinomial",
                                  accountant=accountant).fit(X, y)
    assert accountant.spent == (0.0, 0.0)


def test_neighbours_release_the_same_public_fields():
    """Replace one record by an adversarial one (clipped row, other label): only coef_ and intercept_ differ."""
    X, y = _data(n=120, d=3)
    X2, y2 = X.copy(), y.copy()
    X2[0] = [40.0, -30.0, 10.0]
    y2[0] = (y[0] + 1) % 3
    fits = []
    for data in ((X, y), (X2, y2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(PrivateLogisticRegression(epsilon=1.0, classes=CLASSES, multi_class="auto",
                                                  random_state=3).fit(*data))
    assert fits[0].multi_class_ == "multinomial"
    _assert_same(non_noised(fits[0]), non_noised(fits[1]))
    assert not np.array_equal(released_attributes(fits[0])["coef_"], released_attributes(fits[1])["coef_"])


def test_clone_keeps_multi_class_and_the_record_is_recomputable():
    X, y = _data()
    model = PrivateLogisticRegression(epsilon=1.0, classes=CLASSES, multi_class="multinomial", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the BudgetWarning of cloning
        assert clone(model).get_params()["multi_class"] == "multinomial"
        model.fit(X, y)
        recomputed = clone(model)._public_record(X.shape[0], X.shape[1], 3, label_set_public=True)
    assert recomputed.to_dict() == model.privacy_.to_dict()


def test_alpha_rule_sees_the_noise_of_one_class_column():
    """The auto rule's base for the multinomial model is one column's RMS noise (a derivation, no new constant)."""
    from dperm.mechanisms.catalog import MECHANISMS
    from dperm.mechanisms.noise.l2_laplace import l2_laplace_mean_square
    from dperm.privacy.sensitivity import split_epsilon_for_amp

    d, K, R, eps = 5, 4, 1.5, 1.0
    per_column = MECHANISMS["multinomial_objective"].noise_norm(d * K, eps, 0.0, _PerClassColumn(K).lipschitz, R)
    whole = np.sqrt(l2_laplace_mean_square(d * K, 2 * np.sqrt(2) * R / split_epsilon_for_amp(eps)[0]))
    assert per_column == pytest.approx(whole / np.sqrt(K), rel=1e-12)


def test_model_file_round_trip(tmp_path):
    from dperm.model_io import load_model, save_model
    from dperm.tabular import TabularSpec

    X, y = _data(d=2)
    model = PrivateLogisticRegression(epsilon=1.0, classes=CLASSES, multi_class="multinomial",
                                      random_state=0).fit(X, y)
    spec = TabularSpec.from_dict({"columns": [{"name": "a", "type": "numeric", "lower": -1, "upper": 1},
                                              {"name": "b", "type": "numeric", "lower": -1, "upper": 1}]})
    path = tmp_path / "model.json"
    save_model(path, model, spec, "label")
    loaded, _, _ = load_model(path)
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    np.testing.assert_allclose(loaded.predict_proba(X[:3]), model.predict_proba(X[:3]))


def test_model_file_of_a_multinomial_fit_with_a_delta_loads(tmp_path):
    """The pure multinomial model (``mechanism="objective"``): its record's delta is 0 whatever
    params.delta says (with ``"auto"`` the Gaussian row may run: test_gaussian_multinomial_estimator)."""
    from dperm.model_io import load_model, save_model
    from dperm.tabular import TabularSpec

    X, y = _data(d=2)
    model = PrivateLogisticRegression(epsilon=1.0, delta=1e-5, classes=CLASSES, mechanism="objective",
                                      multi_class="multinomial", random_state=0).fit(X, y)
    assert model.privacy_.delta == 0.0
    spec = TabularSpec.from_dict({"columns": [{"name": "a", "type": "numeric", "lower": -1, "upper": 1},
                                              {"name": "b", "type": "numeric", "lower": -1, "upper": 1}]})
    save_model(tmp_path / "model.json", model, spec, "label")
    loaded, _, _ = load_model(tmp_path / "model.json")
    assert loaded.privacy_.to_dict() == model.privacy_.to_dict()


def test_a_public_label_no_row_carries_gets_its_column():
    X, y = _data()
    model = PrivateLogisticRegression(epsilon=2.0, classes=[0, 1, 2, 3], multi_class="multinomial",
                                      random_state=0).fit(X, y)
    assert model.coef_.shape == (4, 4) and model.classes_.tolist() == [0, 1, 2, 3]
    assert model.score(X, y) > 0.5
