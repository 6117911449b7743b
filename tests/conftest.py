"""Shared fixtures: the real data sets under ``DPERM_DATA``, skipped (with the reason) when absent.

``@pytest.mark.needs_data("kddcup99")`` skips a test unless ``$DPERM_DATA`` holds the data set;
the ``adult_home`` / ``kddcup_home`` fixtures give the directory or skip.
"""

import pytest
from _os_bytes import FakeURandom
from _shared_data import DATA_HOME_ENV, shared_data_home


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"needs_data(dataset): skipped unless {DATA_HOME_ENV} holds the data set's files"
    )


def pytest_runtest_setup(item):
    for marker in item.iter_markers("needs_data"):
        if shared_data_home(marker.args[0]) is None:
            pytest.skip(f"{DATA_HOME_ENV} does not point at a directory with {marker.args[0]}/")


def _home(dataset):
    home = shared_data_home(dataset)
    if home is None:
        pytest.skip(f"{DATA_HOME_ENV} does not point at a directory with {dataset}/")
    return home


@pytest.fixture(scope="session")
def adult_home():
    """``$DPERM_DATA`` holding ``adult/adult.data`` and ``adult.test``."""
    return _home("adult")


@pytest.fixture(scope="session")
def kddcup_home():
    """``$DPERM_DATA`` holding the KDD Cup 99 10% training file and the corrected test file."""
    return _home("kddcup99")


@pytest.fixture
def fake_urandom(monkeypatch):
    """``install(seed)`` routes ``os.urandom`` (the OS noise path) through a seeded byte stream."""
    import os

    def install(seed):
        fake = FakeURandom(seed)
        monkeypatch.setattr(os, "urandom", fake)
        return fake
    return install
