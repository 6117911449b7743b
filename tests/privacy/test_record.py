"""PrivacyRecord embeds its calibration as one declared field and still reads and writes as before."""

import dataclasses
import json

import pytest

from dperm import PrivateLinearSVC, PrivateLogisticRegression
from dperm.privacy.mechanism_calibration import MechanismCalibration
from dperm.privacy.record import PrivacyRecord
from dperm.privacy.release import DERIVED, release_kinds
from tests.conftest import ball_rows

#: The serialised keys of a linear model's record before issue 29, in their order.
KEYS_BEFORE = [
    "mechanism", "epsilon", "delta", "n_problems", "epsilon_per_problem", "delta_per_problem",
    "epsilon_noise", "extra_regularization", "noise_distribution", "noise_scale", "noise_grid",
    "sensitivity", "solution_radius_allowance", "data_norm", "effective_data_norm", "lipschitz",
    "curvature", "alpha", "n_samples", "tol", "loss", "reference", "output_epsilon",
    "output_noise_scale", "output_grid", "output_sensitivity", "output_noise_distribution",
    "solve_tol",  # issue 30: AMP's solve tolerance, a public derived number (amp_solve_tolerance)
    "label_set_public", "engine", "mechanism_choice", "target_bounds",
]


def _data(n=400, d=3, seed=0):
    return ball_rows(n, d, seed)


@pytest.fixture(params=["objective", "output"])
def record(request):
    X, y = _data()
    if request.param == "objective":
        model = PrivateLogisticRegression(classes=[0, 1], fallback=None, random_state=0)  # keys as before
    else:
        model = PrivateLinearSVC(loss="hinge", mechanism="output", classes=[0, 1], random_state=0)
    return model.fit(X, y).privacy_


def test_the_calibration_is_one_declared_field(record):
    names = [f.name for f in dataclasses.fields(PrivacyRecord)]
    assert "calibration" in names and release_kinds(PrivacyRecord)["calibration"] == DERIVED
    assert not {"noise_scale", "epsilon_per_problem", "lipschitz", "output_grid"} & set(names)
    assert isinstance(record.calibration, MechanismCalibration)


def test_its_numbers_read_and_serialise_as_the_record_s_own_keys(record):
    data = record.to_dict()
    assert list(data) == KEYS_BEFORE
    calibration = record.calibration
    assert data["epsilon_per_problem"] == calibration.epsilon == record.epsilon_per_problem
    assert data["delta_per_problem"] == calibration.delta == record.delta_per_problem
    for name in ("noise_scale", "noise_grid", "sensitivity", "lipschitz", "output_noise_scale"):
        assert data[name] == getattr(calibration, name) == getattr(record, name)
    json.dumps(data)  # the laws the release drew from are not serialised


def test_a_record_reads_back_from_its_dict(record):
    again = PrivacyRecord.from_dict(json.loads(record.to_json()))
    assert again == record and again.to_dict() == record.to_dict() and str(again) == str(record)
    assert again.calibration.noise_law is None  # a file has the numbers only


def test_a_malformed_dict_names_the_record_s_keys(record):
    data = record.to_dict()
    del data["noise_scale"]
    data["noise_sigma"] = 1.0
    with pytest.raises(ValueError, match=r"missing keys \['noise_scale'\], unknown keys \['noise_sigma'\]"):
        PrivacyRecord.from_dict(data)


def test_an_unknown_attribute_is_still_an_attribute_error(record):
    with pytest.raises(AttributeError, match="no attribute 'noise_sigma'"):
        record.noise_sigma  # noqa: B018
