"""What a fit releases: the release policy and neighbour-swap tests for every estimator family.

A neighbouring data set replaces one record; here the replacement is adversarial
(a row far outside ``data_norm``, so it is clipped, and for least squares a label
outside ``y_bound``). With the same ``random_state``, everything a fit releases
other than its noised outputs must be identical on both data sets: any
difference would be an un-noised function of the private rows.
"""

import json
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from dperm import PrivateLeastSquares, PrivateLogisticRegression, PrivatePredictor, PrivateQuantileRegressor
from dperm.catalog import LOSSES
from dperm.mechanisms.prediction import PREDICTION_LOSSES
from dperm.privacy.release import (
    DERIVED,
    FITTED_ATTRIBUTES,
    PUBLIC,
    RecordBase,
    privacy_record,
    released,
    released_attributes,
)
from dperm.tuning import PrivateParameterSearch
from tests._release_checks import non_noised
from tests.conftest import estimators, fresh


def _neighbours(n=120, d=3, regression=False, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (rng.uniform(0.2, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    if regression:
        y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=n), -1, 1)
    else:
        y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1, 0)
    X2, y2 = X.copy(), y.copy()
    X2[0] = [40.0, -30.0, 10.0]  # far outside data_norm: clipped on D', not on D
    y2[0] = 50.0 if regression else 1 - y[0]  # outside y_bound for least squares
    return (X, y), (X2, y2)


def _assert_same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        left, right = a[key], b[key]
        if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
            np.testing.assert_array_equal(left, right, err_msg=key)
        elif isinstance(left, RecordBase):
            assert left.to_dict() == right.to_dict(), key
        else:
            assert left == right, key


def _fit_both(make, regression=False):
    (X, y), (X2, y2) = _neighbours(regression=regression)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make().fit(X, y), make().fit(X2, y2)


#: Every classifier and regressor of the one estimator list (tests/conftest.py), seeded.
ESTIMATORS = {**estimators("classifier", epsilon=1.0, random_state=3),
              **estimators("kernel", n_components=20, epsilon=2.0, random_state=3, feature_random_state=1)}
REGRESSORS = {
    **estimators("regressor", epsilon=1.0, random_state=3),
    "least-squares-adassp": PrivateLeastSquares(y_bounds=(-1.0, 2.0), epsilon=1.0, random_state=3),
    "least-squares-gaussian-adassp": PrivateLeastSquares(
        y_bounds=(-1.0, 2.0), epsilon=1.0, delta=1e-4, mechanism="gaussian_adassp", random_state=3),
    "quantile-centred": PrivateQuantileRegressor(y_bounds=(-1.0, 2.0), epsilon=1.0, random_state=3),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_classifier_releases_nothing_but_noised_outputs(name):
    on_d, on_d_prime = _fit_both(lambda: fresh(ESTIMATORS[name]))
    _assert_same(non_noised(on_d), non_noised(on_d_prime))
    # the noised coefficients do differ: the comparison above is not vacuous
    assert not np.array_equal(released_attributes(on_d).get("coef_", on_d.linear_model_.coef_ if hasattr(on_d, "linear_model_") else None),
                              released_attributes(on_d_prime).get("coef_", on_d_prime.linear_model_.coef_ if hasattr(on_d_prime, "linear_model_") else None))


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_regressor_releases_nothing_but_noised_outputs(name):
    on_d, on_d_prime = _fit_both(lambda: fresh(REGRESSORS[name]), regression=True)
    _assert_same(non_noised(on_d), non_noised(on_d_prime))
    assert not np.array_equal(on_d.coef_, on_d_prime.coef_)


@pytest.mark.parametrize("loss", PREDICTION_LOSSES)
def test_private_predictor_releases_nothing_before_its_answers(loss):
    kwargs = {"y_bound": 1.0} if loss == "squared" else {}
    make = lambda: PrivatePredictor(epsilon_total=2.0, epsilon_per_query=0.5, loss=loss,  # noqa: E731
                                    random_state=3, **kwargs)
    on_d, on_d_prime = _fit_both(make, regression=LOSSES[loss].kind == "residual")
    _assert_same(non_noised(on_d), non_noised(on_d_prime))
    assert on_d.privacy_.to_dict() == on_d_prime.privacy_.to_dict()


@pytest.mark.parametrize("method", ["alg4", "random_stopping"])
def test_parameter_search_releases_nothing_but_noised_outputs(method):
    make = lambda: PrivateParameterSearch(  # noqa: E731
        PrivateLogisticRegression(), {"alpha": [0.01, 0.1]}, epsilon=1.0, random_state=3,
        method=method, stopping_mean=4)
    on_d, on_d_prime = _fit_both(make)
    assert on_d.best_index_ == on_d_prime.best_index_  # same seed: the same selection here
    _assert_same(non_noised(on_d), non_noised(on_d_prime))
    # the record, its per-candidate budgets (issue 28) included, is public: the same on D and D'
    assert on_d.privacy_.candidate_budgets and on_d.privacy_.to_dict() == on_d_prime.privacy_.to_dict()


def test_dask_fit_releases_nothing_but_noised_outputs():
    da = pytest.importorskip("dask.array")
    (X, y), (X2, y2) = _neighbours()
    fits = []
    for features, labels in ((X, y), (X2, y2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = PrivateLogisticRegression(epsilon=1.0, random_state=3, scheduler="synchronous")
            fits.append(model.fit(da.from_array(features, chunks=40), da.from_array(labels, chunks=40)))
    _assert_same(non_noised(fits[0]), non_noised(fits[1]))
    assert fits[0].privacy_.engine == "dask"


def test_model_file_fields_are_identical_on_neighbours_but_the_coefficients():
    from dperm.model_io import model_to_dict
    from dperm.tabular import NumericColumn, TabularSpec

    on_d, on_d_prime = _fit_both(lambda: fresh(ESTIMATORS["logistic"]))
    spec = TabularSpec([NumericColumn(f"x{i}", -1.0, 1.0) for i in range(3)])
    first, second = (model_to_dict(m, spec, "label") for m in (on_d, on_d_prime))
    for document in (first, second):
        # the digest hashes the whole document, noised coefficients included: derived from them
        document.pop("coef"), document.pop("intercept"), document.pop("digest")
    assert first == second


def test_an_undeclared_fitted_attribute_is_refused():
    model = fresh(ESTIMATORS["logistic"]).fit(*_neighbours()[0])
    model.n_iter_ = 7  # a solver diagnostic: computed from the data
    with pytest.raises(TypeError, match="n_iter_ is not declared"):
        released_attributes(model)


def test_a_record_field_without_a_release_kind_is_refused():
    with pytest.raises(TypeError, match="without a release kind"):
        @privacy_record
        class Leaky(RecordBase):
            epsilon: float = released(PUBLIC)
            rows_clipped: int = 0


def test_the_policy_declares_every_fitted_attribute_kind():
    assert set(FITTED_ATTRIBUTES.values()) <= {PUBLIC, DERIVED, "noised"}
    assert "n_iter_" not in FITTED_ATTRIBUTES and "labels_clipped_" not in FITTED_ATTRIBUTES


@dataclass(frozen=True)
class _Calibration:
    epsilon: float
    scale: float
    internal: int  # a number the calibration needs and the record below does not show


@privacy_record
class _Embedding(RecordBase):
    mechanism: str = released(PUBLIC)
    calibration: _Calibration = released(DERIVED, embed=_Calibration,
                                         names={"epsilon": "target_epsilon", "internal": None})
    delta: float = released(PUBLIC, 0.0)
    SERIALISED_ORDER: ClassVar[tuple] = ("mechanism", "delta", "scale", "target_epsilon")


def test_an_embedded_calibration_serialises_as_the_records_keys_and_reads_back_equal():
    """names renames (epsilon -> target_epsilon) or hides (None) a calibration's number; order is kept."""
    record = _Embedding("m", _Calibration(1.5, 0.25, 7))
    assert list(record.to_dict()) == ["mechanism", "delta", "scale", "target_epsilon"]
    assert (record.target_epsilon, record.scale) == (1.5, 0.25)
    with pytest.raises(AttributeError):
        record.internal  # noqa: B018 - not a key of this record
    back = _Embedding.from_dict(json.loads(record.to_json()))
    assert back.calibration == _Calibration(1.5, 0.25, None)  # the hidden number is not recorded
    assert back == record and hash(back) == hash(record)  # records compare by what they say
    assert back != _Embedding("m", _Calibration(1.5, 0.5, 7))


def test_a_serialised_order_that_drops_a_key_is_refused():
    with pytest.raises(TypeError, match="SERIALISED_ORDER must list each serialised key once"):
        @privacy_record
        class Dropping(RecordBase):
            mechanism: str = released(PUBLIC)
            calibration: _Calibration = released(DERIVED, embed=_Calibration, names={"internal": None})
            SERIALISED_ORDER: ClassVar[tuple] = ("mechanism", "epsilon")


def test_the_multiparty_records_embed_their_calibrations():
    """Every number of PSGD's calibration and view that the record shows is read from them, not copied."""
    from dperm.multiparty import PSGDClassifier
    from dperm.privacy.psgd import PSGDCalibration

    shards = [(X, np.where(y > 0, 1, -1)) for X, y in (_neighbours(seed=1)[0], _neighbours(seed=2)[0])]
    record = PSGDClassifier(epsilon=1.0, alpha=0.1, n_rounds=3, classes=[-1, 1], random_state=0).fit(shards).privacy_
    assert isinstance(record.calibration, PSGDCalibration)
    assert (record.target_epsilon, record.noise_sigma) == (record.calibration.epsilon, record.calibration.noise_sigma)
    assert (record.coordinator_epsilon, record.composition_slack) == (record.view.epsilon, record.view.slack)
    assert "n_features" not in record.to_dict() and record.calibration.n_features == 3
