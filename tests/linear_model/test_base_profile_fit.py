"""Issue 29, "validate once" and "one owner per calibration", measured on one default fit.

A profile hook (:func:`sys.setprofile`) records every call of a Python
function during ``PrivateLogisticRegression().fit`` on small binary data
(one problem, so one calibration each):

- *epsilon validations*: dperm functions named ``check...epsilon`` /
  ``validate...epsilon`` (``check_epsilon``, ``_check_budget_epsilon``),
  ``_checked_grid_step`` (the grid's own epsilon check) and scikit-learn's
  ``_validate_params`` (the estimator's ``_parameter_constraints``);
- *calibrations*: dperm functions (not methods) whose name contains
  ``calibrat`` (``calibrate_objective``, ``amp_output_calibration``, ...) and
  the alpha rule ``auto_alpha``; a calibration computed twice is a call of one
  such function with arguments equal to an earlier call's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

import dperm
from dperm import PrivateLogisticRegression

#: The default fit reads its label set from the data; that warning is not what is measured here.
pytestmark = pytest.mark.filterwarnings("ignore::dperm.PrivacyLeakWarning")

DPERM_ROOT = str(Path(dperm.__file__).resolve().parent)
EPSILON_VALIDATOR = re.compile(r"^_?(check|validate)\w*epsilon|^_checked_grid_step$|^_validate_params$")
ALPHA_RULE = "auto_alpha"


def _data(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def _argument_key(value, depth=0):
    """A hashable stand-in for an argument: value for scalars, content for arrays and dataclasses."""
    if isinstance(value, (int, float, str, bool, type(None))):
        return repr(value)
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return f"array{data.shape}{data.dtype}:{hashlib.sha256(data.tobytes()).hexdigest()}"
    if depth < 4 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,) + tuple(_argument_key(getattr(value, f.name), depth + 1)
                                               for f in dataclasses.fields(value))
    if depth < 4 and isinstance(value, (tuple, list)):
        return tuple(_argument_key(item, depth + 1) for item in value)
    return f"{type(value).__qualname__}@{id(value)}"


def _is_calibration(code) -> bool:
    qualname = code.co_qualname
    is_method = "." in qualname and "<locals>" not in qualname
    return code.co_filename.startswith(DPERM_ROOT) and not is_method and (
        "calibrat" in code.co_name.lower() or code.co_name == ALPHA_RULE)


def _is_epsilon_validation(code) -> bool:
    if not EPSILON_VALIDATOR.search(code.co_name):
        return False
    return code.co_filename.startswith(DPERM_ROOT) or code.co_name == "_validate_params"


def profile_default_fit():
    """``(epsilon validations by name, calibration calls by name, their argument keys by name)``."""
    X, y = _data()
    PrivateLogisticRegression().fit(X, y)  # imports and caches outside the profile
    validations, calibrations, arguments = Counter(), Counter(), defaultdict(list)

    def hook(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if _is_epsilon_validation(code):
            validations[code.co_qualname] += 1
        elif _is_calibration(code):
            name = f"{Path(code.co_filename).stem}.{code.co_qualname}"
            calibrations[name] += 1
            parameters = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            arguments[name].append(tuple(_argument_key(frame.f_locals[p]) for p in parameters))

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        PrivateLogisticRegression().fit(X, y)
    finally:
        sys.setprofile(previous)
    return validations, calibrations, arguments


def test_the_profile_sees_validations_and_calibrations():
    """The two tests below cannot pass by seeing nothing: a fit validates epsilon and calibrates."""
    validations, calibrations, _ = profile_default_fit()
    assert sum(validations.values()) >= 1
    assert sum(calibrations.values()) >= 1
    assert any(ALPHA_RULE in name for name in calibrations)  # the default alpha="auto"
    assert _argument_key(np.arange(3.0)) == _argument_key(np.arange(3.0)) != _argument_key(np.arange(4.0))


def test_default_fit_validates_epsilon_at_most_twice():
    """Issue 29: validate once, at the boundary (at most twice per default fit); 18 at 12df8d2."""
    validations, _, _ = profile_default_fit()
    total = sum(validations.values())
    assert total <= 2, f"epsilon validated {total} times: {dict(sorted(validations.items()))}"


def test_default_fit_computes_each_calibration_once():
    """Issue 29: one owner per calibration, computed once per fit; at 12df8d2 the objective
    calibration, its AMP output calibration, its grid and the alpha rule are each repeated."""
    _, calibrations, arguments = profile_default_fit()
    repeated = {name: f"{calibrations[name]} calls, {len(set(keys))} distinct"
                for name, keys in sorted(arguments.items()) if len(set(keys)) < len(keys)}
    assert repeated == {}, f"calibrations computed more than once with the same arguments: {repeated}"
