"""Tests of dperm.datasets.load_adult: embedded data, checksums, public encoding."""

import gzip
import math
import os
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from dperm.datasets import ADULT_ENCODINGS, DATA_HOME_ENV, adult_spec, load_adult
from dperm.tabular import TabularSpec

N_TRAIN, N_TEST, N_FEATURES = 30_162, 15_060, 105
N_ATTRIBUTES = 14


def embedded_text(filename: str) -> bytes:
    gz = resources.files("dperm.datasets").joinpath("data", f"{filename}.gz")
    return gzip.decompress(gz.read_bytes())


def load_embedded(encoding: str):
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(DATA_HOME_ENV, raising=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # loading the published files warns about nothing
            return load_adult(encoding)


@pytest.fixture(scope="module", params=sorted(ADULT_ENCODINGS))
def adult(request):
    return load_embedded(request.param)


@pytest.fixture(scope="module")
def adult_unit():
    return load_embedded("unit_norm")


def count_complete_rows(filename: str):
    """(rows without '?', of which '>50K'), counted from the raw text independently."""
    n_rows = n_positive = 0
    for line in embedded_text(filename).decode("ascii").splitlines():
        if not line or line.startswith("|") or "?" in line:
            continue
        n_rows += 1
        n_positive += line.rstrip(".").endswith(">50K")
    return n_rows, n_positive


def test_shapes_and_types(adult):
    assert adult.X_train.shape == (N_TRAIN, N_FEATURES)
    assert adult.X_test.shape == (N_TEST, N_FEATURES)
    assert adult.y_train.shape == (N_TRAIN,) and adult.y_test.shape == (N_TEST,)
    assert adult.X_train.dtype == np.float64 and adult.y_train.dtype == np.int64
    assert set(np.unique(adult.y_train)) == {0, 1}
    assert np.isfinite(adult.X_train).all() and np.isfinite(adult.X_test).all()
    assert adult.X_train.min() >= 0.0


def test_feature_names(adult):
    names = adult.feature_names
    assert len(names) == N_FEATURES == len(set(names))
    assert names[0] == "age"
    assert "workclass=Never-worked" in names
    assert "native-country=Holand-Netherlands" in names
    assert sum("=" not in name for name in names) == 6
    assert sum(name.startswith("native-country=") for name in names) == 41
    assert names == adult.spec.feature_names()


def test_label_counts_match_the_raw_files(adult):
    n_train, positive_train = count_complete_rows("adult.data")
    n_test, positive_test = count_complete_rows("adult.test")
    assert (n_train, n_test) == (N_TRAIN, N_TEST)
    assert adult.y_train.sum() == positive_train == 7_508
    assert adult.y_test.sum() == positive_test


def test_row_norms_are_bounded_by_one(adult):
    for X in (adult.X_train, adult.X_test):
        assert np.linalg.norm(X, axis=1).max() <= 1.0 + 1e-12


@pytest.mark.parametrize("encoding", ["unit_norm", "unit_norm_log"])
def test_unit_norm_encodings_have_norm_exactly_one(encoding):
    data = load_embedded(encoding)
    for X in (data.X_train, data.X_test):
        np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-12)


def test_constant_encoding_divides_by_sqrt14():
    data = load_embedded("constant")
    unscaled = data.X_train * math.sqrt(N_ATTRIBUTES)
    assert unscaled.min() >= 0.0 and unscaled.max() <= 1.0 + 1e-12
    one_hot = unscaled[:, ["=" in name for name in data.feature_names]]
    # Every complete row has exactly one category per attribute: 8 ones.
    np.testing.assert_allclose(one_hot.sum(axis=1), 8.0)


def test_first_training_row_uses_public_bounds(adult_unit):
    # adult.data line 1: 39, State-gov, 77516, Bachelors, 13, ..., 2174, 0, 40, ...
    names = adult_unit.feature_names
    row = adult_unit.X_train[0]
    # The row step scales all features alike, so ratios keep the public-bounds scaling.
    age, hours = row[names.index("age")], row[names.index("hours-per-week")]
    assert age / hours == pytest.approx(((39 - 17) / (90 - 17)) / ((40 - 1) / (99 - 1)))
    assert row[names.index("workclass=State-gov")] > 0
    assert row[names.index("workclass=Private")] == 0


def test_spec_is_public_schema_and_serialises(adult):
    assert adult.spec == adult_spec(adult.encoding)
    assert TabularSpec.from_json(adult.spec.to_json()) == adult.spec


def test_descr_credits_the_source(adult):
    assert "10.24432/C5XW20" in adult.DESCR
    assert "CC BY 4.0" in adult.DESCR
    assert "Dua" in adult.DESCR
    assert adult.encoding in adult.DESCR


def test_returned_arrays_are_fresh_copies():
    first = load_embedded("unit_norm")
    first.X_train[:] = -1.0
    first.y_train[:] = -1
    second = load_embedded("unit_norm")
    assert second.X_train.min() >= 0.0 and second.y_train.min() == 0


def test_unknown_encoding_is_rejected():
    with pytest.raises(ValueError, match="encoding must be one of"):
        load_adult("max_abs")


def write_copy(directory: Path) -> Path:
    adult_dir = directory / "adult"
    adult_dir.mkdir(parents=True)
    for filename in ("adult.data", "adult.test"):
        (adult_dir / filename).write_bytes(embedded_text(filename))
    return adult_dir


def test_data_home_copy_loads_the_same_data(tmp_path, adult_unit):
    write_copy(tmp_path)
    data = load_adult("unit_norm", data_home=tmp_path)
    assert data.source == str(tmp_path / "adult")
    np.testing.assert_array_equal(data.X_train, adult_unit.X_train)
    np.testing.assert_array_equal(data.y_test, adult_unit.y_test)


def test_corrupted_copy_fails_the_checksum(tmp_path):
    adult_dir = write_copy(tmp_path)
    path = adult_dir / "adult.data"
    content = bytearray(path.read_bytes())
    content[3] = ord("8") if content[3] != ord("8") else ord("7")  # change one age digit
    path.write_bytes(bytes(content))
    with pytest.raises(ValueError, match=r"adult\.data failed its checksum"):
        load_adult(data_home=tmp_path)


def test_data_home_without_the_files_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="adult/adult.data"):
        load_adult(data_home=tmp_path)


def test_env_var_without_adult_falls_back_to_embedded(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_HOME_ENV, str(tmp_path))
    assert load_adult().source == "embedded"


def test_env_var_copy_is_used(tmp_path, monkeypatch):
    write_copy(tmp_path)
    monkeypatch.setenv(DATA_HOME_ENV, str(tmp_path))
    assert load_adult().source == str(tmp_path / "adult")


def test_shared_data_matches_the_embedded_copy(adult_unit, adult_home):
    home = adult_home
    from_env = load_adult("unit_norm")
    from_argument = load_adult("unit_norm", data_home=home)
    sources = {Path(from_env.source).resolve(), Path(from_argument.source).resolve()}
    assert sources == {(Path(home) / "adult").resolve()}
    np.testing.assert_array_equal(from_env.X_train, adult_unit.X_train)
    np.testing.assert_array_equal(from_argument.X_test, adult_unit.X_test)
    np.testing.assert_array_equal(from_argument.y_train, adult_unit.y_train)


def test_replaced_file_is_reread_not_served_from_cache(tmp_path):
    adult_dir = write_copy(tmp_path)
    load_adult(data_home=tmp_path)  # fills the per-process cache
    path = adult_dir / "adult.test"
    path.write_bytes(path.read_bytes().replace(b"Private", b"Privat3", 1))
    os.utime(path, ns=(1, 1))  # a new mtime even on coarse-grained file systems
    with pytest.raises(ValueError, match="checksum"):
        load_adult(data_home=tmp_path)
