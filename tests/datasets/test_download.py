"""Tests of dperm.datasets.download against a local HTTP server on 127.0.0.1.

The server (http.server in a thread, ephemeral port) serves copies of the files in
``DPERM_DATA``; tests that need them are skipped when it lacks them. No test contacts
any address other than the loopback one: ``urlopen`` is wrapped to refuse others.
"""

import functools
import gzip
import hashlib
import http.server
import shutil
import threading
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from dperm.datasets import DATA_HOME_ENV, _download, download
from dperm.datasets._adult import ADULT_SHA256
from dperm.datasets._kddcup import KDDCUP99_SHA256
from tests._shared_data import shared_data_home

ADULT_FILES = ("adult.data", "adult.test")
KDD_FILES = ("kddcup.data_10_percent.gz", "corrected.gz")


def source_dir(dataset, filenames):
    home = shared_data_home(dataset)
    if home is None or not all((home / dataset / name).is_file() for name in filenames):
        pytest.skip(f"{DATA_HOME_ENV} does not point at a directory with {dataset}/")
    return home / dataset


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """Refuse any URL that is not on 127.0.0.1, and bypass proxies for the local server."""
    original = urllib.request.urlopen

    def guarded(request, *args, **kwargs):
        url = request.full_url if isinstance(request, urllib.request.Request) else request
        host = urllib.parse.urlsplit(url).hostname
        assert host == "127.0.0.1", f"a test tried to contact {url}"
        return original(request, *args, **kwargs)

    monkeypatch.setattr(urllib.request, "urlopen", guarded)
    for scheme in ("http", "https", "all"):
        for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")


class _Handler(http.server.SimpleHTTPRequestHandler):
    requested: list  # set per server

    def do_GET(self):
        self.requested.append(self.path)
        super().do_GET()

    def log_message(self, format, *args):  # keep the test output quiet
        pass


@pytest.fixture
def server(tmp_path_factory, request):
    """(root directory served, base URL, list of requested paths); shut down afterwards."""
    root = tmp_path_factory.mktemp("served")
    requested = []
    handler = type("Handler", (_Handler,), {"requested": requested})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(root))
    )
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()

    def stop():
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)

    request.addfinalizer(stop)
    return root, f"http://127.0.0.1:{httpd.server_address[1]}/", requested


def serve(root, folder, files):
    """Copy ``files`` (name -> source path or bytes) into ``root/folder``."""
    target = root / folder
    target.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        if isinstance(content, bytes):
            (target / name).write_bytes(content)
        else:
            shutil.copyfile(content, target / name)


def leftovers(directory):
    return sorted(path.name for path in Path(directory).iterdir() if path.name.endswith(".part"))


def test_download_kddcup99(server, tmp_path):
    root, base, requested = server
    source = source_dir("kddcup99", KDD_FILES)
    serve(root, "kdd", {name: source / name for name in KDD_FILES})
    directory = download("kddcup99", tmp_path, base_url=base + "kdd/", timeout=30)
    assert directory == tmp_path.absolute() / "kddcup99"
    for name in KDD_FILES:
        assert sha256(directory / name) == KDDCUP99_SHA256[name]
    assert sorted(requested) == sorted(f"/kdd/{name}" for name in KDD_FILES)
    assert leftovers(directory) == []


def test_download_adult_then_skip_present_files(server, tmp_path):
    root, base, requested = server
    source = source_dir("adult", ADULT_FILES)
    serve(root, "adult", {name: source / name for name in ADULT_FILES})
    directory = download("adult", tmp_path, base_url=base + "adult")  # "/" added
    for name in ADULT_FILES:
        assert sha256(directory / name) == ADULT_SHA256[name]
    assert len(requested) == 2
    stamps = {name: (directory / name).stat().st_mtime_ns for name in ADULT_FILES}
    requested.clear()
    download("adult", tmp_path, base_url=base + "adult/")
    assert requested == []  # both present with the right checksum: nothing fetched
    assert stamps == {name: (directory / name).stat().st_mtime_ns for name in ADULT_FILES}
    # A file with the wrong content is fetched again and replaced; the good one is kept.
    (directory / "adult.test").write_bytes(b"stale")
    download("adult", tmp_path, base_url=base + "adult/")
    assert requested == ["/adult/adult.test"]
    assert sha256(directory / "adult.test") == ADULT_SHA256["adult.test"]


def test_data_home_defaults_to_the_environment(server, tmp_path, monkeypatch):
    root, base, _ = server
    source = source_dir("adult", ADULT_FILES)
    serve(root, "adult", {name: source / name for name in ADULT_FILES})
    monkeypatch.setenv(DATA_HOME_ENV, str(tmp_path))
    assert download("adult", base_url=base + "adult/") == tmp_path.absolute() / "adult"
    monkeypatch.delenv(DATA_HOME_ENV)
    with pytest.raises(ValueError, match="pass data_home"):
        download("adult", base_url=base + "adult/")


def test_corrupted_download_raises_and_leaves_nothing(server, tmp_path):
    root, base, _ = server
    source = source_dir("adult", ADULT_FILES)
    corrupted = bytearray((source / "adult.data").read_bytes())
    corrupted[1000] ^= 0x01
    serve(root, "adult", {"adult.data": bytes(corrupted), "adult.test": source / "adult.test"})
    with pytest.raises(ValueError, match="failed its checksum"):
        download("adult", tmp_path, base_url=base + "adult/")
    directory = tmp_path / "adult"
    assert not (directory / "adult.data").exists()
    assert leftovers(directory) == []


def test_corrupted_gzip_is_rejected(server, tmp_path):
    root, base, _ = server
    source = source_dir("kddcup99", KDD_FILES)
    truncated = (source / KDD_FILES[0]).read_bytes()[:100_000]
    serve(root, "kdd", {KDD_FILES[0]: truncated, KDD_FILES[1]: source / KDD_FILES[1]})
    with pytest.raises(ValueError, match="failed its checksum"):
        download("kddcup99", tmp_path, base_url=base + "kdd/")
    assert list((tmp_path / "kddcup99").iterdir()) == []


def test_recompressed_kddcup_file_is_accepted_by_content(server, tmp_path):
    root, base, _ = server
    source = source_dir("kddcup99", KDD_FILES)
    content = gzip.decompress((source / "corrected.gz").read_bytes())
    other = gzip.compress(content, compresslevel=1, mtime=0)
    assert hashlib.sha256(other).hexdigest() != KDDCUP99_SHA256["corrected.gz"]
    serve(root, "kdd", {"corrected.gz": other, KDD_FILES[0]: source / KDD_FILES[0]})
    directory = download("kddcup99", tmp_path, base_url=base + "kdd/")
    assert (directory / "corrected.gz").read_bytes() == other


def test_missing_file_is_a_clear_error(server, tmp_path):
    root, base, _ = server
    (root / "empty").mkdir()
    expected = r"Downloading http://127\.0\.0\.1:\d+/empty/adult\.data failed: HTTP 404"
    with pytest.raises(OSError, match=expected):
        download("adult", tmp_path, base_url=base + "empty/")
    assert list((tmp_path / "adult").iterdir()) == []


def test_unreachable_server_is_a_clear_error(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError, match=f"Downloading http://127.0.0.1:{port}/adult.data failed"):
        download("adult", tmp_path, base_url=f"http://127.0.0.1:{port}/", timeout=5)
    assert list((tmp_path / "adult").iterdir()) == []


def test_invalid_arguments(tmp_path):
    with pytest.raises(ValueError, match="name must be one of"):
        download("covtype", tmp_path)
    with pytest.raises(ValueError, match="timeout"):
        download("adult", tmp_path, timeout=0)


def test_default_urls_are_the_uci_archive():
    assert set(_download.DEFAULT_BASE_URLS) == set(_download.DATASET_FILES) == {"adult", "kddcup99"}
    for url in _download.DEFAULT_BASE_URLS.values():
        assert url.startswith("https://archive.ics.uci.edu/ml/machine-learning-databases/")
        assert url.endswith("/")
    assert set(_download.DATASET_FILES["kddcup99"]) == set(KDD_FILES)
    assert set(_download.DATASET_FILES["adult"]) == set(ADULT_FILES)
