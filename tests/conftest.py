"""Shared fixtures: the real data sets under ``DPERM_DATA``, skipped (with the reason) when absent,
the synthetic data sets several test files build, and the one estimator list.

``@pytest.mark.needs_data("kddcup99")`` skips a test unless ``$DPERM_DATA`` holds the data set;
the ``adult_home`` / ``kddcup_home`` fixtures give the directory or skip. Test files import the
builders and the list (``from tests.conftest import estimators``); multiparty shards are in
``tests/_multiparty_data.py``.
"""

import numpy as np
import pytest

from tests._os_bytes import FakeURandom
from tests._shared_data import DATA_HOME_ENV, shared_data_home


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


# -- synthetic data sets built by several test files ----------------------------------------------------

def unit_rows(n, d, seed=0):
    """``n`` Gaussian rows scaled onto the unit sphere, and the labels ``x_0 > 0`` as 0/1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (X[:, 0] > 0).astype(int)


def ball_rows(n, d, seed=0):
    """``n`` Gaussian rows, those longer than 1 scaled onto the unit sphere, and the labels ``x_0 > 0`` as 0/1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return X, (X[:, 0] > 0).astype(int)


def multiclass_blobs(n, d, K, seed=0, *, centre_scale=0.6, spread=0.3):
    """``K`` Gaussian blobs in the unit ball: centres ``centre_scale N(0, I)``, labels uniform on
    ``0..K-1``, each row its centre plus ``spread N(0, I)``, rows longer than 1 scaled onto the sphere."""
    rng = np.random.default_rng(seed)
    centres = centre_scale * rng.normal(size=(K, d))
    y = rng.integers(0, K, n)
    X = centres[y] + spread * rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return X, y


# -- the one estimator list --------------------------------------------------------------

def _estimators():
    from dperm import (
        PrivateKernelLogisticRegression,
        PrivateKernelSVC,
        PrivateLeastSquares,
        PrivateLinearSVC,
        PrivateLogisticRegression,
        PrivateQuantileRegressor,
        PrivateRobustRegressor,
    )

    return {
        "logistic": PrivateLogisticRegression(),
        "logistic-output": PrivateLogisticRegression(mechanism="output"),
        "logistic-gaussian": PrivateLogisticRegression(mechanism="gaussian_objective", delta=1e-5),
        "svc-huber": PrivateLinearSVC(),
        "svc-smooth-hinge": PrivateLinearSVC(loss="smooth_hinge"),
        "svc-hinge-output": PrivateLinearSVC(loss="hinge", mechanism="output"),
        "quantile": PrivateQuantileRegressor(),
        "quantile-0.9": PrivateQuantileRegressor(quantile=0.9),
        "least-squares": PrivateLeastSquares(),
        "robust-pseudo-huber": PrivateRobustRegressor(),
        "robust-pseudo-huber-output": PrivateRobustRegressor(mechanism="output", h=0.5),
        "kernel-logistic": PrivateKernelLogisticRegression(),
        "kernel-svc": PrivateKernelSVC(),
        "kernel-svc-hinge-output": PrivateKernelSVC(loss="hinge", mechanism="output"),
    }


#: Every estimator of ``dperm.ESTIMATORS`` a model file stores, in each configuration the tests
#: share (every loss of ``dperm.catalog.LOSSES`` it fits, each mechanism family), unfitted and
#: unseeded: tests take :func:`estimators` with their own seeds. ``tests/test_catalog.py`` checks
#: that a new estimator or loss appears here.
ESTIMATORS = _estimators()


def estimators(*layouts, **params):
    """``{name: estimator}`` of :data:`ESTIMATORS` whose model-file layout is in ``layouts``
    ("classifier", "regressor", "kernel"; all if none), fresh copies with ``params`` set."""
    import dperm

    return {name: fresh(estimator, **params) for name, estimator in ESTIMATORS.items()
            if not layouts or dperm.ESTIMATORS[type(estimator).__name__].model_file in layouts}


def fresh(estimator, **params):
    """A new unfitted ``estimator`` with its parameters and ``params`` (not ``clone``, which warns)."""
    return type(estimator)(**{**estimator.get_params(deep=False), **params})
