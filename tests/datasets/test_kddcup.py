"""Tests of dperm.datasets.load_kddcup99: files, checksums, DoS labels, public encoding, subsets.

The data files are not in the package: the tests that read them use ``DPERM_DATA``
(``kddcup99/`` under it) and are skipped when it lacks them. Each big file is parsed
once per session (module-scoped fixtures; the loader caches parsed files per process).
"""

import collections
import gzip
import hashlib
import math
import shutil
import warnings

import numpy as np
import pytest

from dperm.datasets import (
    DATA_HOME_ENV,
    KDDCUP99_DOS_LABELS,
    KDDCUP99_ENCODINGS,
    KDDCUP99_FULL_CLASS_COUNTS,
    _kddcup,
    kddcup99_spec,
    load_kddcup99,
)
from dperm.datasets._base import verify_gzip_sha256
from dperm.exceptions import DataClippingWarning
from tests._shared_data import shared_data_home

N_TRAIN, N_TEST, N_FEATURES, N_ATTRIBUTES = 494_021, 311_029, 122, 41
TRAIN_FILE, TEST_FILE = "kddcup.data_10_percent.gz", "corrected.gz"
FULL_FILE_ROWS = 4_898_431


def kdd_home():
    return shared_data_home("kddcup99")


needs_data = pytest.mark.needs_data("kddcup99")


def row_norms(X):
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def load_quietly(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the published files warn about nothing
        return load_kddcup99(data_home=kdd_home(), **kwargs)


@pytest.fixture(scope="module")
def full():
    if kdd_home() is None:
        pytest.skip(f"{DATA_HOME_ENV} does not point at a directory with kddcup99/")
    return load_quietly()


@pytest.fixture(scope="module")
def raw_labels():
    """Labels of both files read straight from the gzip text, independently of the loader."""
    if kdd_home() is None:
        pytest.skip(f"{DATA_HOME_ENV} does not point at a directory with kddcup99/")
    labels = {}
    for name in (TRAIN_FILE, TEST_FILE):
        text = gzip.decompress((kdd_home() / "kddcup99" / name).read_bytes()).decode("ascii")
        labels[name] = [line.rsplit(",", 1)[1].rstrip(".") for line in text.splitlines()]
    return labels


@pytest.fixture(scope="module")
def random_constant():
    if kdd_home() is None:
        pytest.skip(f"{DATA_HOME_ENV} does not point at a directory with kddcup99/")
    return load_quietly(subset="random", random_state=0, encoding="constant")


@pytest.fixture(scope="module")
def stratified():
    if kdd_home() is None:
        pytest.skip(f"{DATA_HOME_ENV} does not point at a directory with kddcup99/")
    return load_quietly(subset="stratified", random_state=0)


# --------------------------------------------------------------------------------------
# The public schema (no data needed)
# --------------------------------------------------------------------------------------


def test_published_full_file_counts_sum_to_the_file_size():
    assert len(KDDCUP99_FULL_CLASS_COUNTS) == 23
    assert sum(KDDCUP99_FULL_CLASS_COUNTS.values()) == FULL_FILE_ROWS


def test_dos_labels_are_the_kdd99_taxonomy():
    assert set(KDDCUP99_DOS_LABELS) == {
        "back", "land", "neptune", "pod", "smurf", "teardrop",
        "apache2", "mailbomb", "processtable", "udpstorm",
    }  # fmt: skip
    y = _kddcup.dos_target(["smurf.", "normal.", "apache2", "satan.", "land"])
    assert y.tolist() == [1, 0, 1, 0, 1] and y.dtype == np.int64


@pytest.mark.parametrize("encoding", sorted(KDDCUP99_ENCODINGS))
def test_spec_dimension_and_feature_names(encoding):
    spec = kddcup99_spec(encoding)
    names = spec.feature_names()
    assert spec.n_features == len(names) == N_FEATURES == 38 + 3 + 70 + 11
    assert len(set(names)) == N_FEATURES
    assert spec.column_names == list(_kddcup.KDDCUP99_ATTRIBUTES)
    assert len(spec.column_names) == N_ATTRIBUTES
    assert spec.max_row_norm() == pytest.approx(math.sqrt(N_ATTRIBUTES))
    assert names[:5] == [
        "log1p(duration)", "protocol_type=icmp", "protocol_type=tcp", "protocol_type=udp",
        "service=aol",
    ]  # fmt: skip
    assert sum(name.startswith("service=") for name in names) == 70
    assert sum(name.startswith("flag=") for name in names) == 11
    assert names[-1] == "dst_host_srv_rerror_rate"
    for name in ("log1p(src_bytes)", "log1p(num_compromised)", "count", "land"):
        assert name in names
    assert spec.row_norm_mode == {"unit_norm": "scale", "constant": "constant"}[encoding]


def test_spec_rejects_an_unknown_encoding():
    with pytest.raises(ValueError, match="encoding must be one of"):
        kddcup99_spec("minmax")


def test_numeric_bounds_are_the_documented_ones():
    bounds = _kddcup.KDDCUP99_NUMERIC_BOUNDS
    assert len(bounds) == 38
    rates = [name for name in bounds if name.endswith("_rate")]
    assert len(rates) == 15 and all(bounds[name] == (0.0, 1.0, None) for name in rates)
    assert bounds["count"][:2] == bounds["srv_count"][:2] == (0.0, 511.0)
    assert bounds["dst_host_count"][:2] == bounds["dst_host_srv_count"][:2] == (0.0, 255.0)
    for name in ("land", "logged_in", "is_host_login", "is_guest_login"):
        assert bounds[name] == (0.0, 1.0, None)
    for name in ("duration", "src_bytes", "dst_bytes"):
        assert bounds[name][2] == "log1p"


# --------------------------------------------------------------------------------------
# Where the files come from
# --------------------------------------------------------------------------------------


def test_no_data_directory_is_a_clear_error(monkeypatch):
    monkeypatch.delenv(DATA_HOME_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match="not embedded") as info:
        load_kddcup99()
    message = str(info.value)
    assert "data_home" in message and DATA_HOME_ENV in message
    assert "dperm.datasets.download('kddcup99'" in message


def test_a_directory_without_the_files_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_HOME_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match=f"kddcup99/{TRAIN_FILE}"):
        load_kddcup99(data_home=tmp_path)
    monkeypatch.setenv(DATA_HOME_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=DATA_HOME_ENV):
        load_kddcup99()


@needs_data
def test_a_corrupted_file_fails_its_checksum(tmp_path):
    target = tmp_path / "kddcup99"
    target.mkdir()
    data = bytearray((kdd_home() / "kddcup99" / TRAIN_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (target / TRAIN_FILE).write_bytes(bytes(data))
    shutil.copyfile(kdd_home() / "kddcup99" / TEST_FILE, target / TEST_FILE)
    with pytest.raises(ValueError, match="failed its checksum"):
        load_kddcup99(data_home=tmp_path)


def test_a_recompressed_file_is_accepted_by_its_content():
    content = b"0,tcp,http,SF,1,2,0\n"
    digest = hashlib.sha256(content).hexdigest()
    other_gzip = gzip.compress(content, compresslevel=1, mtime=0)
    assert verify_gzip_sha256(other_gzip, "0" * 64, digest, "x.gz") == content
    with pytest.raises(ValueError, match="failed its checksum"):
        verify_gzip_sha256(gzip.compress(b"other"), "0" * 64, digest, "x.gz")
    with pytest.raises(ValueError, match="not a readable gzip"):
        verify_gzip_sha256(b"not gzip", "0" * 64, digest, "x.gz")


@needs_data
def test_parsed_files_are_cached(full):
    directory = kdd_home() / "kddcup99"
    before = _kddcup._parsed_kddcup_file.cache_info()
    first = _kddcup._load_file(directory, TRAIN_FILE)
    assert _kddcup._load_file(directory, TRAIN_FILE) is first
    after = _kddcup._parsed_kddcup_file.cache_info()
    assert after.hits == before.hits + 2 and after.misses == before.misses
    assert first.n_rows == N_TRAIN and first.labels.shape[0] == 145_586  # distinct records


# --------------------------------------------------------------------------------------
# The whole 10% file and the test set
# --------------------------------------------------------------------------------------


@needs_data
def test_shapes_and_types(full):
    assert full.X_train.shape == (N_TRAIN, N_FEATURES)
    assert full.X_test.shape == (N_TEST, N_FEATURES)
    assert full.y_train.shape == (N_TRAIN,) and full.y_test.shape == (N_TEST,)
    assert full.X_train.dtype == np.float64 and full.y_train.dtype == np.int64
    assert full.feature_names == kddcup99_spec().feature_names()
    assert full.subset is None and full.encoding == "unit_norm"
    assert np.array_equal(full.train_rows, np.arange(N_TRAIN))
    assert full.source == str((kdd_home() / "kddcup99").absolute())
    assert "Stolfo" in full.DESCR and "10.24432/C51C7N" in full.DESCR
    assert np.isfinite(full.X_train).all() and np.isfinite(full.X_test).all()


@needs_data
def test_labels_follow_the_raw_files(full, raw_labels):
    assert full.labels_train.tolist() == raw_labels[TRAIN_FILE]
    assert full.labels_test.tolist() == raw_labels[TEST_FILE]
    train_counts = collections.Counter(raw_labels[TRAIN_FILE])
    assert len(train_counts) == 23
    assert train_counts["smurf"] == 280_790 and train_counts["neptune"] == 107_201
    assert train_counts["back"] == 2_203 and train_counts["normal"] == 97_278
    n_dos = sum(train_counts[label] for label in KDDCUP99_DOS_LABELS)
    assert n_dos == 280_790 + 107_201 + 2_203 + 979 + 264 + 21 == 391_458
    assert full.y_train.sum() == n_dos
    test_counts = collections.Counter(raw_labels[TEST_FILE])
    assert len(test_counts) == 38
    assert full.y_test.sum() == sum(test_counts[label] for label in KDDCUP99_DOS_LABELS)
    assert full.y_test.sum() == 229_853
    dos = np.isin(full.labels_train, KDDCUP99_DOS_LABELS)
    assert np.array_equal(full.y_train, dos.astype(np.int64))


@needs_data
def test_unit_norm_rows_have_norm_one(full):
    for X in (full.X_train, full.X_test):
        norms = row_norms(X)
        assert np.all(np.abs(norms - 1.0) <= 1e-12)  # no row is zero: protocol is one-hot
        assert X.min() >= 0.0


@needs_data
def test_first_record_encodes_as_computed_by_hand(full):
    # Line 1 of the 10% file:
    # 0,tcp,http,SF,181,5450,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,8,8,0.00,0.00,0.00,0.00,
    # 1.00,0.00,0.00,9,9,1.00,0.00,0.11,0.00,0.00,0.00,0.00,0.00,normal.
    names = full.feature_names
    raw = np.zeros(N_FEATURES)
    log_bytes = math.log1p(2.0**32 - 1)
    raw[names.index("protocol_type=tcp")] = 1.0
    raw[names.index("service=http")] = 1.0
    raw[names.index("flag=SF")] = 1.0
    raw[names.index("log1p(src_bytes)")] = math.log1p(181) / log_bytes
    raw[names.index("log1p(dst_bytes)")] = math.log1p(5450) / log_bytes
    raw[names.index("logged_in")] = 1.0
    raw[names.index("count")] = raw[names.index("srv_count")] = 8 / 511
    raw[names.index("same_srv_rate")] = 1.0
    raw[names.index("dst_host_count")] = raw[names.index("dst_host_srv_count")] = 9 / 255
    raw[names.index("dst_host_same_srv_rate")] = 1.0
    raw[names.index("dst_host_same_src_port_rate")] = 0.11
    np.testing.assert_allclose(full.X_train[0], raw / np.linalg.norm(raw), rtol=0, atol=1e-14)
    assert full.labels_train[0] == "normal" and full.y_train[0] == 0


@needs_data
def test_unlisted_test_service_encodes_as_zeros(full):
    service = [i for i, name in enumerate(full.feature_names) if name.startswith("service=")]
    blocks = full.X_test[:, service]
    assert np.count_nonzero(blocks.sum(axis=1) == 0) == 2  # service "icmp", not in the schema


# --------------------------------------------------------------------------------------
# Subsets for Table 2 of Chaudhuri et al. (2011)
# --------------------------------------------------------------------------------------


@needs_data
def test_random_subset(full, random_constant):
    data = random_constant
    rows = data.train_rows
    assert data.X_train.shape == (70_000, N_FEATURES) and data.y_train.shape == (70_000,)
    assert data.subset == "random" and data.encoding == "constant"
    assert np.unique(rows).shape[0] == 70_000 and rows.min() >= 0 and rows.max() < N_TRAIN
    assert np.array_equal(data.labels_train, full.labels_train[rows])
    assert np.array_equal(data.y_train, full.y_train[rows])
    assert data.X_test.shape == (N_TEST, N_FEATURES)
    # "constant" divides by sqrt(41): norms at most 1, and the direction is unit_norm's.
    for X in (data.X_train, data.X_test):
        assert row_norms(X).max() <= 1.0 + 1e-12
        assert X.max() * math.sqrt(N_ATTRIBUTES) <= 1.0 + 1e-12 and X.min() >= 0.0
    norms = np.linalg.norm(data.X_train, axis=1, keepdims=True)
    np.testing.assert_allclose(data.X_train / norms, full.X_train[rows], atol=1e-12)
    # A uniform sample: the DoS share is close to the file's (binomial sd ~ 0.0015).
    assert abs(data.y_train.mean() - full.y_train.mean()) < 0.01


def train_file():
    return _kddcup._load_file(kdd_home() / "kddcup99", TRAIN_FILE)


@needs_data
def test_subsets_are_reproducible(random_constant, stratified):
    again = load_quietly(subset="random", random_state=0, n_samples=70_000)
    assert np.array_equal(again.train_rows, random_constant.train_rows)
    norms = np.linalg.norm(random_constant.X_train, axis=1, keepdims=True)
    np.testing.assert_allclose(again.X_train, random_constant.X_train / norms, atol=1e-12)
    rows = _kddcup._select_rows(train_file(), "random", 70_000, 0)[0]
    assert np.array_equal(rows, random_constant.train_rows)
    other = _kddcup._select_rows(train_file(), "random", 70_000, 1)[0]
    assert np.intersect1d(other, rows).shape[0] < 20_000  # ~70k^2/494k = 9,900 expected
    rows = _kddcup._select_rows(train_file(), "stratified", 70_000, 0)[0]
    assert np.array_equal(rows, stratified.train_rows)
    other = _kddcup._select_rows(train_file(), "stratified", 70_000, 1)[0]
    assert not np.array_equal(np.sort(other), np.sort(rows))


@needs_data
def test_stratified_subset_matches_the_full_file_shares(full, stratified):
    data = stratified
    n = 70_000
    assert data.X_train.shape == (n, N_FEATURES) and data.subset == "stratified"
    assert np.unique(data.train_rows).shape[0] == n
    assert np.array_equal(data.labels_train, full.labels_train[data.train_rows])
    counts = collections.Counter(data.labels_train.tolist())
    available = collections.Counter(full.labels_train.tolist())
    for label, published in KDDCUP99_FULL_CLASS_COUNTS.items():
        quota = n * published / FULL_FILE_ROWS
        assert quota <= available[label]  # the 10% file has enough of every label at 70k
        assert abs(counts.get(label, 0) - quota) < 1.0, label
    assert counts["smurf"] == 40_126 and counts["neptune"] == 15_320
    assert counts["normal"] == 13_901 and counts["satan"] == 227
    full_dos_share = sum(KDDCUP99_FULL_CLASS_COUNTS[c] for c in KDDCUP99_DOS_LABELS
                         if c in KDDCUP99_FULL_CLASS_COUNTS) / FULL_FILE_ROWS  # fmt: skip
    assert abs(data.y_train.mean() - full_dos_share) < 1e-4
    assert "Every label had enough rows" in data.DESCR


@needs_data
def test_stratified_subset_takes_whole_classes_when_short(full):
    n = 490_000
    parsed = train_file()
    rows, allocation = _kddcup._select_rows(parsed, "stratified", n, 3)
    assert rows.shape == (n,) and np.unique(rows).shape[0] == n
    counts = collections.Counter(full.labels_train[rows].tolist())
    available = collections.Counter(full.labels_train.tolist())
    short = [
        label
        for label, published in KDDCUP99_FULL_CLASS_COUNTS.items()
        if n * published / FULL_FILE_ROWS > available[label]
    ]
    assert "smurf" in short
    for label in short:
        assert counts[label] == available[label]
    for label, (published, drawn, n_available) in allocation.items():
        assert published == KDDCUP99_FULL_CLASS_COUNTS[label]
        assert drawn == counts.get(label, 0) and n_available == available[label]
    description = _kddcup._describe_subset("stratified", n, allocation)
    assert "fewer rows than the proportional quota" in description
    assert "smurf" in description.split("fewer rows than the proportional quota")[1]
    everything = _kddcup._select_rows(parsed, "stratified", N_TRAIN, 0)[0]
    assert np.array_equal(np.sort(everything), np.arange(N_TRAIN))


def test_stratified_quotas_water_fill():
    weights = np.array([80.0, 15.0, 5.0, 0.0])
    available = np.array([1000, 10, 1000, 50])
    quotas = _kddcup._stratified_quotas(weights, available, 100)
    # class 1 wants 15 but has 10; its 5 are shared 80:5 by classes 0 and 2.
    assert quotas.tolist() == [85, 10, 5, 0]
    assert _kddcup._stratified_quotas(weights, available, 7).tolist() == [6, 1, 0, 0]
    assert _kddcup._stratified_quotas(weights, available, 2010).tolist() == [1000, 10, 1000, 0]
    with pytest.raises(ValueError, match="too few rows"):
        _kddcup._stratified_quotas(weights, available, 2011)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"subset": "balanced"}, "subset must be one of"),
        ({"n_samples": 100}, "n_samples needs subset"),
        ({"subset": "random", "n_samples": 0}, "positive integer"),
        ({"subset": "random", "n_samples": 1.5}, "positive integer"),
        ({"subset": "random", "n_samples": True}, "positive integer"),
        ({"encoding": "minmax"}, "encoding must be one of"),
    ],
)
def test_invalid_arguments(kwargs, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        load_kddcup99(data_home=tmp_path, **kwargs)


@needs_data
def test_too_many_samples(full):
    with pytest.raises(ValueError, match="exceeds"):
        load_kddcup99(data_home=kdd_home(), subset="random", n_samples=N_TRAIN + 1)


# --------------------------------------------------------------------------------------
# Parsing and clipping on small synthetic files
# --------------------------------------------------------------------------------------

LINE = (
    "0,tcp,http,SF,181,5450,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,8,8,"
    "0,0,0,0,1,0,0,9,9,1,0,0.11,0,0,0,0,0,normal."
)


def test_parse_deduplicates_and_keeps_row_order():
    other = LINE.replace("normal.", "smurf.")
    parsed = _kddcup._parse_kddcup_text("\n".join([LINE, other, LINE]) + "\n", "x")
    assert parsed.n_rows == 3 and parsed.inverse.tolist() == [0, 1, 0]
    assert parsed.labels.tolist() == ["normal", "smurf"]
    assert parsed.columns["src_bytes"].tolist() == [181.0, 181.0]


def test_parse_names_a_malformed_record():
    short = LINE.replace("0,tcp", "tcp")
    with pytest.raises(ValueError, match=r"record 1 \(line 2\) has 41 fields"):
        _kddcup._parse_kddcup_text("\n".join([LINE, short]), "x")
    with pytest.raises(ValueError, match=r"^x: column 'src_bytes', data row 3 .*'abc' is not a number"):
        _kddcup._parse_kddcup_text("\n".join([LINE, LINE, LINE.replace("181", "abc")]), "x")


def test_clipping_is_counted_per_row():
    long = LINE.replace("0,tcp", "100000,tcp", 1)  # longer than one day: clipped
    parsed = _kddcup._parse_kddcup_text("\n".join([long, LINE, long]), "file.gz")
    spec = kddcup99_spec()
    with pytest.warns(DataClippingWarning, match=r"2 value\(s\) in 3 rows.*2 in 'duration'"):
        X, labels = _kddcup._encode_rows(spec, parsed, np.arange(3))
    assert X[0, 0] == X[2, 0] > 0 and X.shape == (3, N_FEATURES)
    assert labels.tolist() == ["normal"] * 3
