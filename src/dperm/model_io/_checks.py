"""A ``dperm-model`` file's guarantee, checked: its record recomputed from its public inputs, its
coefficients on the release grid, its parameters in agreement with its record."""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import clone

from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.noise import EXACT_INTEGER_LIMIT
from dperm.model_io._digest import InconsistentModelFile
from dperm.privacy.fallback import FALLBACK_CHOICES, resolve_fallback

#: Recorded calibration numbers must equal the recomputed ones to this relative
#: tolerance (floating-point noise between platforms' ``log``/``exp``; on one
#: machine they agree exactly). Any edit that changes a guarantee moves them by far more.
CALIBRATION_RTOL = 1e-9
#: Parameters that must agree with the privacy record: a file whose record claims
#: another guarantee than its parameters was edited, and is refused.
_RECORD_PARAMS = ("epsilon", "delta")


def _check_record_agrees(document) -> None:
    """Refuse a file whose ``privacy`` epsilon/delta differ from its ``params``: one was edited.

    A ``dperm-model`` file's record states the guarantee of exactly the
    parameters it was fitted with (one fit, no composition), so the two agree
    in every file ``dperm train`` writes. A pure mechanism (named, or chosen by
    ``mechanism="auto"``) spends no delta, so its record's delta is 0 whatever
    ``params.delta`` is.
    """
    params, record = document["params"], document["privacy"]
    if not isinstance(record, dict):
        raise ValueError("'privacy' must be an object.")
    expected = {name: params[name] for name in _RECORD_PARAMS if name in params}
    if "delta" in expected and record.get("mechanism") in MECHANISMS:
        expected["delta"] = MECHANISMS[record["mechanism"]].delta_spent(expected["delta"])
    for name in _RECORD_PARAMS:
        if name in expected and name in record and expected[name] != record[name]:
            raise InconsistentModelFile(
                f"'privacy.{name}' is {record[name]!r} but 'params.{name}' is {params[name]!r}; "
                "the file was edited and its guarantee cannot be trusted: retrain, or restore "
                "the file as written.")


def check_calibration(linear, recorded: dict) -> None:
    """Refuse a record that differs from the one the file's public inputs give, naming the field.

    ``linear`` is the loaded linear model (a kernel model's ``linear_model_``):
    its parameters (``params``), ``n_samples`` of the record, and the number of
    features and problems its coefficients have are the public inputs.
    :meth:`~dperm.linear_model._base.PrivateLinearModelBase._public_record`
    rebuilds the record a fit with them writes, with the library's calibration
    functions; every field must match (floats to :data:`CALIBRATION_RTOL`).
    ``label_set_public`` and ``engine`` are taken from the file (checked
    against ``params.classes`` before; the engine changes no number).
    """
    record = linear.privacy_
    n_samples = record.n_samples
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 2:
        raise InconsistentModelFile(f"'privacy.n_samples' is {n_samples!r}; a fit has an integer "
                                    "number of rows >= 2: the file was edited or corrupted.")
    coef = np.atleast_2d(linear.coef_)
    expected = clone(linear)._public_record(
        n_samples, coef.shape[1], coef.shape[0], label_set_public=record.label_set_public,
        engine=record.engine).to_dict()
    for name, value in expected.items():
        found = recorded.get(name, getattr(record, name, None))
        if name == "solve_tol" and name not in recorded:
            # written before records had it (issue 30): an objective mechanism's solve then
            # reached ``tol``, which the recomputed tolerance still is unless n is large
            found = recorded.get("tol") if value else 0.0
        if not _same(found, value):
            raise InconsistentModelFile(
                f"'privacy.{name}' is {found!r} but the calibration recomputed from the file's "
                f"public inputs gives {value!r}: the file was edited or corrupted (or written by a "
                "dperm that calibrates differently); refit, or ask the publisher for the file as "
                "written.")
    _check_fallback(linear, record)


def _check_fallback(linear, record) -> None:
    """A record's fallback agrees with ``params.fallback``; a constant release has ``coef`` 0."""
    n_rows = np.atleast_2d(linear.coef_).shape[0]
    wanted = resolve_fallback(getattr(linear, "fallback", None), n_classes=2 if n_rows == 1 else n_rows,
                              fit_intercept=getattr(linear, "fit_intercept", False),
                              engine=getattr(record, "engine", "memory"))
    recorded, choice = getattr(record, "fallback", None), getattr(record, "fallback_choice", None)
    if (recorded is None) != (wanted is None) or (choice is None) != (wanted is None):
        raise InconsistentModelFile(
            f"'privacy.fallback_*' does not agree with 'params.fallback' = {wanted!r}: a fit with the "
            "majority fallback records its share, noise and choice, and only such a fit does; the "
            "file was edited or corrupted.")
    if wanted is None:
        return
    if choice not in FALLBACK_CHOICES:
        raise InconsistentModelFile(f"'privacy.fallback_choice' is {choice!r}; it must "
                                    f"be one of {list(FALLBACK_CHOICES)}: the file was edited.")
    if choice == "constant" and np.any(np.asarray(linear.coef_) != 0):
        raise InconsistentModelFile("'privacy.fallback_choice' is 'constant' but 'coef' is not all 0: "
                                    "the constant model has no weights; the file was edited.")


def _same(found, expected) -> bool:
    """Equal, or (two floats) within :data:`CALIBRATION_RTOL`; a bool is never a number here."""
    numbers = (int, float)
    if (isinstance(found, numbers) and isinstance(expected, numbers)
            and not isinstance(found, bool) and not isinstance(expected, bool)):
        return math.isclose(found, expected, rel_tol=CALIBRATION_RTOL, abs_tol=0.0)
    return type(found) is type(expected) and found == expected


def check_on_grid(linear) -> None:
    """Refuse coefficients that are not ``grid * integer``, as every released coordinate is.

    The mechanism releases ``g * (round(w / g) + z)`` with integer ``z``
    (:func:`dperm.mechanisms.noise.release_on_grid`) on the grid ``g`` of the
    record (AMP's ``output_grid`` for the objective mechanisms, else
    ``noise_grid``); the estimator stores the intercept coordinate times
    ``intercept_scaling``. Without an intercept, ``intercept`` is 0.
    """
    record = linear.privacy_
    if not getattr(record, "coefficients_on_grid", True):
        return  # AdaSSP: coefficients computed from noised statistics (the record says so)
    grid = record.output_grid or record.noise_grid
    # The quantile regressor maps its released coefficients back to the target's units by a
    # public factor (the half width of its target bounds); 1 for every other model.
    post = float(getattr(linear, "_coefficient_scale", lambda: 1.0)())
    coef = np.atleast_2d(linear.coef_)
    for row, values in enumerate(coef):
        for column, value in enumerate(values):
            where = f"coef[{row}][{column}]" if np.ndim(linear.coef_) == 2 else f"coef[{column}]"
            _check_grid_value(float(value), grid, 1.0, where, post)
    intercepts = np.atleast_1d(linear.intercept_)
    for row, value in enumerate(intercepts):
        where = f"intercept[{row}]" if np.ndim(linear.intercept_) == 1 else "intercept"
        if not getattr(linear, "_intercept_on_grid", lambda: True)():
            continue  # a public centre of the target bounds was added to it
        if not linear.fit_intercept:
            if value != 0.0:
                raise InconsistentModelFile(f"'{where}' is {float(value)!r} but 'params.fit_intercept' "
                                            "is false, so it must be 0: the file was edited.")
            continue
        _check_grid_value(float(value), grid, float(linear.intercept_scaling), where, post)


def _check_grid_value(value: float, grid: float, scaling: float, where: str,
                      post: float = 1.0) -> None:
    """``value == ((grid * k) * scaling) * post`` for an integer ``|k| < 2**53``, exactly as the
    fit computes it (``post`` 1 skips the last product)."""
    steps = round(value / post / scaling / grid)
    expected = float(steps * grid) * scaling
    if post != 1.0:
        expected = expected * post
    if abs(steps) >= EXACT_INTEGER_LIMIT or expected != value:
        raise InconsistentModelFile(
            f"'{where}' is {value!r}, not a multiple of the grid {grid!r} the record's calibration "
            "releases every coefficient on: the file was edited or corrupted; refit, or ask the "
            "publisher for the file as written.")

