"""Issue 29: a fit validates at its boundary once and computes each calibration once.

Counters wrap the checks and the calibrations wherever dperm bound them (every loaded
``dperm`` module's global of that name, and the functions imported inside functions,
which read the defining module's attribute at call time), then one fit runs.
"""

import importlib
import sys

import numpy as np
import pytest

import dperm.mechanisms.gaussian_objective  # noqa: F401  (every implementation module loaded)
import dperm.mechanisms.objective  # noqa: F401
import dperm.mechanisms.output  # noqa: F401
import dperm.validation
from dperm import PrivateLogisticRegression
from dperm.linear_model._base import PrivateLinearModelBase
from dperm.mechanisms import catalog, choice
from dperm.mechanisms.catalog import MECHANISMS


def _count_everywhere(monkeypatch, name, original):
    """Replace ``original`` by a counting wrapper in every dperm module that holds it as ``name``."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("dperm") and getattr(module, name, None) is original:
            monkeypatch.setattr(module, name, counted)
    return calls


@pytest.fixture
def counters(monkeypatch):
    epsilon_checks = _count_everywhere(monkeypatch, "check_epsilon", dperm.validation.check_epsilon)
    floor_checks = _count_everywhere(monkeypatch, "check_min_epsilon", catalog.check_min_epsilon)
    validate_params = []
    original_validate = PrivateLinearModelBase._validate_params

    def counted_validate(self):
        validate_params.append(type(self).__name__)
        return original_validate(self)

    monkeypatch.setattr(PrivateLinearModelBase, "_validate_params", counted_validate)
    calibrations = [_count_everywhere(monkeypatch, "calibrate", importlib.import_module(module).calibrate)
                    for module in {row.module for row in MECHANISMS.values()}]
    candidates = _count_everywhere(monkeypatch, "candidate_mechanisms", choice.candidate_mechanisms)
    return {
        "epsilon": lambda: len(epsilon_checks) + len(floor_checks) + len(validate_params),
        "calibrations": lambda: sum(len(calls) for calls in calibrations),
        "candidates": lambda: len(candidates),
    }


def _data(n=3000, d=4, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def test_a_default_fit_validates_epsilon_at_most_twice_and_calibrates_once(counters):
    X, y = _data()
    model = PrivateLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    assert model.mechanism_ == "objective"
    assert counters["epsilon"]() <= 2  # the parameter constraints and the noise's floor
    assert counters["calibrations"]() == 1  # scored by "auto", then released with
    assert counters["candidates"]() == 1


def test_one_vs_rest_problems_share_the_one_calibration(counters):
    X, y = _data(n_classes=3)
    model = PrivateLogisticRegression(classes=[0, 1, 2], multi_class="ovr", random_state=0).fit(X, y)
    assert model.coef_.shape == (3, 4) and model.privacy_.n_problems == 3
    assert counters["epsilon"]() <= 2
    assert counters["calibrations"]() == 1


def test_multi_class_auto_calibrates_each_model_once(counters):
    """multi_class="auto" scores one-vs-rest's and the multinomial row's calibrations, each
    computed once, and releases with the chosen one."""
    X, y = _data(n_classes=3)
    model = PrivateLogisticRegression(classes=[0, 1, 2], random_state=0).fit(X, y)
    assert model.multi_class_ == "multinomial" and model.privacy_.n_problems == 1
    assert counters["epsilon"]() <= 2
    assert counters["calibrations"]() == 2


def test_a_named_mechanism_calibrates_once_and_asks_for_no_candidates(counters):
    X, y = _data()
    PrivateLogisticRegression(mechanism="gaussian_objective", delta=1e-5, classes=[0, 1],
                              random_state=0).fit(X, y)
    assert counters["epsilon"]() <= 2
    assert counters["calibrations"]() == 1
    assert counters["candidates"]() == 0


def test_auto_releases_with_the_calibration_it_scored():
    """The chosen candidate's scored calibration is the one the fit's outputs carry."""
    X, y = _data(n=4000, d=60)
    model = PrivateLogisticRegression(delta=1e-6, alpha=0.01, classes=[0, 1], random_state=0).fit(X, y)
    scored = model._mechanism_choice.calibrations
    assert set(scored) == {"objective", "gaussian_objective"}
    released = {field: getattr(model.privacy_, field) for field in ("noise_scale", "noise_grid",
                                                                      "output_noise_scale")}
    chosen = scored[model.mechanism_]
    assert released == {"noise_scale": chosen.noise_scale, "noise_grid": chosen.noise_grid,
                        "output_noise_scale": chosen.output_noise_scale}


def test_the_standalone_entry_checks_its_inputs_once():
    from dperm.losses import get_loss
    from dperm.mechanisms import ERMProblem, run_mechanism

    X, y = _data(n=200, d=3)
    problem = ERMProblem(X, np.where(y == 1, 1.0, -1.0), get_loss("logistic"), 0.05, 1.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
            run_mechanism("objective", problem, bad, 0.0, np.random.default_rng(0), 1e-8, 100)
    with pytest.raises(ValueError, match="is below 1e-09"):
        run_mechanism("output", problem, 1e-12, 0.0, np.random.default_rng(0), 1e-8, 100)
    with pytest.raises(ValueError, match="needs delta > 0"):
        run_mechanism("gaussian_objective", problem, 1.0, 0.0, np.random.default_rng(0), 1e-8, 100)
