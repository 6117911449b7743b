"""Model files: JSON with coefficients, the public schema and the privacy record.

:func:`load_model` reads every format in :data:`_FORMATS`: this module's own
``dperm-model`` (every estimator family ``dperm train`` fits: linear
classifiers, linear regressors and random-Fourier-feature classifiers) and the
multiparty format written by ``dperm coordinate``, which
:mod:`dperm.multiparty.model_file` registers (:func:`register_format`); the
first file of that format imports it by name (:data:`FORMAT_MODULES`), so this
module never imports ``dperm.multiparty``.

A model file never contains training rows. Loading checks the schema and the
shapes, so a malformed, truncated or tampered file gets a clear ValueError
instead of a model that predicts garbage.

A ``dperm-model`` file cannot lie quietly about its guarantee: loading rebuilds
the privacy record a fit with the file's public inputs (``params``, ``n``, the
number of features and problems) would write, with the library's own
calibration functions (:meth:`~dperm.linear_model._base.PrivateLinearModelBase._public_record`),
and refuses a file whose recorded numbers differ, naming the first field
(:func:`check_calibration`); every released coefficient must lie on the grid
that calibration releases on (:func:`check_on_grid`). An edit of a public
input *together with* everything derived from it is consistent and cannot be
detected that way: the file's ``digest`` (:func:`document_digest`, SHA-256 of
the canonical JSON) lets a reader match the digest its publisher printed
(``dperm show --expect-digest``). A digest is not a signature: whoever can
edit the file can recompute it; it detects accidental or naive edits and a
file that differs from the one published.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from sklearn.base import clone

import dperm
from dperm.kernels import RFF_NORM_BOUND, RandomFourierFeatures
from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.noise import EXACT_INTEGER_LIMIT
from dperm.privacy.labels import check_classes
from dperm.privacy.record import PrivacyRecord
from dperm.privacy.sufficient_statistics_record import SufficientStatisticsRecord
from dperm.tabular import TabularSpec

__all__ = [
    "CALIBRATION_RTOL", "CLASSIFIERS", "ESTIMATORS", "FORMAT_MODULES", "KERNEL_CLASSIFIERS",
    "ModelFormat", "READABLE_VERSIONS", "REGRESSORS", "REQUIRED_KEYS", "check_calibration",
    "check_digest", "check_on_grid", "describe_model", "document_digest", "finite_array",
    "load_model", "model_from_dict", "model_to_dict", "register_format", "save_model",
    "with_digest",
]

_FORMAT = "dperm-model"
#: Version 2 added ``digest``; version 1 (no digest) is still read, with a warning.
_FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
#: The key of a document's content digest, and the hash it names.
_DIGEST_KEY = "digest"
_DIGEST_ALGORITHM = "sha256"
#: Recorded calibration numbers must equal the recomputed ones to this relative
#: tolerance (floating-point noise between platforms' ``log``/``exp``; on one
#: machine they agree exactly). Any edit that changes a guarantee moves them by far more.
CALIBRATION_RTOL = 1e-9


def _estimators(layout: str) -> tuple:
    """The estimators of :data:`dperm.ESTIMATORS` a model file stores with ``layout``."""
    return tuple(getattr(dperm, name) for name, info in dperm.ESTIMATORS.items() if info.model_file == layout)


#: Linear classifiers: ``coef`` is (n_problems, n_features), ``classes`` the labels.
CLASSIFIERS = _estimators("classifier")
#: Linear regressors: ``coef`` is (n_features,), ``intercept`` one number, ``classes`` null.
REGRESSORS = _estimators("regressor")
#: Random-Fourier-feature classifiers: ``coef`` is (n_problems, n_components) on the
#: features, and the public feature map (``"features"``: frequencies and phases) is stored.
KERNEL_CLASSIFIERS = _estimators("kernel")
#: Every estimator a ``dperm-model`` file stores, by class name (the file's ``"estimator"``).
ESTIMATORS = {cls.__name__: cls for cls in CLASSIFIERS + REGRESSORS + KERNEL_CLASSIFIERS}
REQUIRED_KEYS = {
    "format", "version", "estimator", "params", "classes", "coef", "intercept",
    "target", "spec", "privacy", "schema_from_data",
}


class InconsistentModelFile(ValueError):
    """A model file whose numbers contradict each other or its digest: it was edited or corrupted."""
#: Modules that register further formats, imported on first need: ``import dperm``
#: is lazy, so ``load_model`` must not rely on it having imported them.
FORMAT_MODULES = {"dperm-multiparty-model": "dperm.multiparty.model_file"}
#: Parameters that must agree with the privacy record: a file whose record claims
#: another guarantee than its parameters was edited, and is refused.
_RECORD_PARAMS = ("epsilon", "delta")


@dataclass(frozen=True)
class ModelFormat:
    """A model-file format :func:`load_model` reads.

    Attributes
    ----------
    name : str
        The document's ``"format"`` value.
    read : callable
        ``read(document) -> (model, spec)``; raises ValueError, TypeError or
        KeyError on a malformed document.
    describe : callable
        ``describe(document, spec) -> str``, the lines ``dperm show`` prints.
    kind : str
        What the file is called in error messages (``"model file"``).
    """

    name: str
    read: Callable
    describe: Callable
    kind: str = "model file"


#: The formats :func:`load_model` reads, by name (filled by :func:`register_format`).
_FORMATS: dict = {}


#: Parameters added after model files existed, with their defaults: left out of a file while they
#: have them (a fit that does not use them writes the bytes it always wrote).
_LATER_PARAMS = {"fallback": None}


def register_format(model_format: ModelFormat) -> None:
    """Make :func:`load_model` and :func:`describe_model` read ``model_format``."""
    _FORMATS[model_format.name] = model_format


def model_to_dict(model, spec: TabularSpec, target: str, schema_from_data=()) -> dict:
    """Describe a fitted dperm estimator as a JSON-serialisable dict.

    Parameters
    ----------
    model : one of :data:`ESTIMATORS`
        A fitted estimator.
    spec : TabularSpec
        The public schema that encodes raw columns into the model's features.
    target : str
        Name of the label column.
    schema_from_data : sequence of str
        Columns whose bounds or categories were taken from the training data
        (outside the privacy guarantee; recorded so that nobody mistakes them).
    """
    params = model.get_params()
    params["random_state"] = None  # a seed would let anyone subtract the noise
    if params.get("fallback") == "auto" and getattr(model.privacy_, "fallback", None) is None:
        params["fallback"] = None  # "auto" resolved to off (three labels, no intercept, Dask): as None
    for name, default in _LATER_PARAMS.items():  # files of fits that leave them off stay as they were
        if name in params and params[name] == default:
            del params[name]
    # Where the fit ran and which budget paid for it are not part of the model.
    for name in ("scheduler", "accountant"):
        if name in params:
            params[name] = None
    if "feature_random_state" in params:  # the features themselves are stored below
        params["feature_random_state"] = None
    if params.get("classes") is not None:  # the public label set, as JSON scalars
        params["classes"] = [_json_scalar(c) for c in check_classes(params["classes"])]
    document = {
        "format": _FORMAT,
        "version": _FORMAT_VERSION,
        "estimator": type(model).__name__,
        "params": params,
        "target": target,
        "spec": spec.to_dict(),
        "privacy": model.privacy_.to_dict(),
        "schema_from_data": list(schema_from_data),
    }
    if isinstance(model, REGRESSORS):
        document.update(classes=None, coef=model.coef_.tolist(), intercept=float(model.intercept_))
        return with_digest(document)
    linear = model.linear_model_ if isinstance(model, KERNEL_CLASSIFIERS) else model
    document.update(classes=[_json_scalar(c) for c in model.classes_], coef=linear.coef_.tolist(),
                    intercept=linear.intercept_.tolist())
    if isinstance(model, KERNEL_CLASSIFIERS):  # public, drawn without the data (003 Sec. 5.3)
        document["features"] = {"frequencies": model.features_.frequencies_.tolist(),
                                "phases": model.features_.phases_.tolist()}
    return with_digest(document)


def save_model(path, model, spec: TabularSpec, target: str, schema_from_data=()) -> str:
    """Write a model file (see :func:`model_to_dict`); returns its digest, for the publisher to print."""
    document = model_to_dict(model, spec, target, schema_from_data)
    Path(path).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return document[_DIGEST_KEY]


def document_digest(document: dict) -> str:
    """``"sha256:<hex>"`` of the document's content, its ``digest`` entry excluded.

    The content is serialised canonically: JSON with sorted keys, no
    whitespace, UTF-8, floats as Python writes them (the shortest repr that
    reads back exactly), so the digest depends only on the values, not on the
    file's layout. Raises ValueError for a value JSON cannot hold (NaN, a
    non-string key).
    """
    content = {key: value for key, value in document.items() if key != _DIGEST_KEY}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           allow_nan=False)
    return f"{_DIGEST_ALGORITHM}:{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}"


def with_digest(document: dict) -> dict:
    """``document`` as JSON reads it back, with its :func:`document_digest` as the last entry."""
    content = json.loads(json.dumps({k: v for k, v in document.items() if k != _DIGEST_KEY},
                                    allow_nan=False))
    return {**content, _DIGEST_KEY: document_digest(content)}


def check_digest(document, expected: str | None = None) -> None:
    """Refuse a document whose ``digest`` is not its content's, or not ``expected``.

    Without a ``digest`` entry only ``expected`` is checked (it then fails):
    which formats must carry one is their reader's business.
    """
    recorded = document.get(_DIGEST_KEY)
    if recorded is not None:
        actual = document_digest(document)
        if recorded != actual:
            raise InconsistentModelFile(
                f"'digest' is {recorded!r} but the file's content hashes to {actual!r}: the file "
                "was edited or corrupted after it was written; ask the publisher for the file as "
                "written, or refit.")
    if expected is not None and recorded != expected.strip():
        found = "has no digest" if recorded is None else f"has digest {recorded!r}"
        raise InconsistentModelFile(
            f"the file {found}, not the expected {expected.strip()!r}: it is not the file that was "
            "published; ask the publisher for it.")


def load_model(path, expected_digest: str | None = None):
    """Read a model file; returns ``(model, spec, document)``.

    Two formats are read:

    - ``dperm-model`` (``dperm train``): ``model`` is one of
      :data:`ESTIMATORS` (a linear classifier, a linear regressor, or a
      random-Fourier-feature classifier with its public features) and
      ``spec`` the :class:`~dperm.tabular.TabularSpec` that encodes raw
      columns;
    - ``dperm-multiparty-model`` (``dperm coordinate``): ``model`` is a
      :class:`~dperm.multiparty.PSGDClassifier` and ``spec`` the
      :class:`~dperm.tabular.TabularSpec` of the preprocessing the parties
      applied to their rows (:func:`~dperm.multiparty.model_file.party_spec`),
      or, for a row rule this dperm does not know,
      :class:`~dperm.multiparty.model_file.UnknownRowRule`, whose ``transform``
      refuses.

    Either way ``spec.transform(columns)`` turns a parsed CSV file into the
    model's features and ``model.privacy_.summary()`` states the guarantee.

    ``expected_digest`` (``"sha256:..."``, as its publisher printed it) must
    equal the file's ``digest``.

    Raises
    ------
    ValueError
        If the file is not valid JSON or does not follow its format's schema;
        (``dperm-model``) if its privacy record differs from the one its public
        inputs give (:func:`check_calibration`) or a coefficient is off the
        release grid (:func:`check_on_grid`); or if its ``digest`` does not
        match its content or ``expected_digest`` (:func:`check_digest`). The
        message names the file and the first field at fault.
    """
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"model file {path} is not valid JSON ({error}); it may be truncated.") from None
    except UnicodeDecodeError:
        raise ValueError(f"model file {path} is not UTF-8 text.") from None
    model_format = _format_of(document)
    try:
        model, spec = model_format.read(document)
        check_digest(document, expected_digest)  # last: the checks above name the field at fault
    except InconsistentModelFile as error:
        raise ValueError(f"{model_format.kind} {path}: {error}") from None
    except (ValueError, TypeError, KeyError, ArithmeticError) as error:
        raise ValueError(f"malformed {model_format.kind} {path}: {error}") from None
    if document.get(_DIGEST_KEY) is None and model_format.name == _FORMAT:
        warnings.warn(f"model file {path} has no digest (written before dperm recorded one): its "
                      "calibration was checked, but nothing shows it is the file its publisher "
                      "wrote; refit to get a file with a digest.", UserWarning, stacklevel=2)
    return model, spec, document


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


def _format_of(document) -> ModelFormat:
    """The registered format a document names; anything else goes to ``dperm-model``'s reader, which refuses it."""
    name = document.get("format") if isinstance(document, dict) else None
    name = name if isinstance(name, str) else None
    if name not in _FORMATS and name in FORMAT_MODULES:
        importlib.import_module(FORMAT_MODULES[name])  # registers the format
    return _FORMATS.get(name, _FORMATS[_FORMAT])


def describe_model(document, spec) -> str:
    """The line(s) ``dperm show`` prints above the privacy record, for any registered format."""
    return _format_of(document).describe(document, spec)


def _describe_linear(document, spec) -> str:
    what = (f"{document['estimator']} predicting {document['target']!r} from "
            f"{spec.n_features} features")
    if document["classes"] is None:
        return f"{what}; a regressor (numeric target)"
    return f"{what}; classes {document['classes']}"


def model_from_dict(document):
    """Rebuild ``(model, spec)`` from :func:`model_to_dict`'s output, checking it."""
    if not isinstance(document, dict):
        raise ValueError("the top level must be a JSON object.")
    missing = sorted(REQUIRED_KEYS - set(document))
    if missing:
        raise ValueError(f"missing keys {missing}.")
    if document["format"] != _FORMAT or document["version"] not in READABLE_VERSIONS:
        raise ValueError(
            f"unsupported format {document['format']!r} version {document['version']!r}; "
            f"this dperm reads {_FORMAT!r} versions {list(READABLE_VERSIONS)}"
            + "".join(f" and {name!r}" for name in sorted(_FORMATS) if name != _FORMAT) + "."
        )
    if document["version"] >= 2 and not isinstance(document.get(_DIGEST_KEY), str):
        raise InconsistentModelFile(
            f"'digest' is missing or not a string, but version {document['version']} files carry "
            "one: the file was edited or truncated; ask the publisher for the file as written.")
    cls = ESTIMATORS.get(document["estimator"])
    if cls is None:
        raise ValueError(f"unknown estimator {document['estimator']!r}; expected one of {sorted(ESTIMATORS)}.")
    if not isinstance(document["params"], dict):
        raise ValueError("'params' must be an object.")
    _check_record_agrees(document)
    # a parameter a file leaves out had its "later" default when written (not today's default)
    later = {name: default for name, default in _LATER_PARAMS.items() if name in cls().get_params()}
    model = cls().set_params(**{**later, **document["params"]})
    spec = TabularSpec.from_dict(document["spec"])
    if issubclass(cls, REGRESSORS):
        model = _regressor_from_dict(model, document, spec)
    elif issubclass(cls, KERNEL_CLASSIFIERS):
        model = _kernel_from_dict(model, document, spec)
    else:
        _set_classifier(model, document, spec.n_features)
        model.n_features_in_ = spec.n_features
    linear = model.linear_model_ if issubclass(cls, KERNEL_CLASSIFIERS) else model
    check_calibration(linear, document["privacy"])
    check_on_grid(linear)
    _set_public_choices(model)
    return model, spec


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
    from dperm.privacy.fallback import resolve_fallback

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
    from dperm.privacy.fallback import FALLBACK_CHOICES

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


def _set_public_choices(model) -> None:
    """``alpha_`` and ``mechanism_``: what the fit used, from the record (the
    ``"auto"`` choices are resolved there)."""
    targets = [model] + ([model.linear_model_] if hasattr(model, "linear_model_") else [])
    alpha = getattr(model.privacy_, "alpha", None)
    for target in targets:
        if alpha is not None:
            target.alpha_ = float(alpha)
        if "mechanism" in target.get_params():
            target.mechanism_ = model.privacy_.mechanism


def _set_classifier(model, document, n_features):
    """Set a linear classifier's fitted attributes from the document, checking their shapes."""
    coef = finite_array(document["coef"], "coef", ndim=2)
    intercept = finite_array(document["intercept"], "intercept", ndim=1)
    classes = document["classes"]
    if not isinstance(classes, list) or len(classes) < 2:
        raise ValueError("'classes' must list at least two labels.")
    n_problems = 1 if len(classes) == 2 else len(classes)
    if coef.shape != (n_problems, n_features):
        raise ValueError(
            f"'coef' has shape {coef.shape}; {len(classes)} classes and "
            f"{n_features} features need ({n_problems}, {n_features})."
        )
    if intercept.shape != (n_problems,):
        raise ValueError(f"'intercept' has shape {intercept.shape}; expected ({n_problems},).")
    model.coef_ = coef
    model.intercept_ = intercept
    _check_public_classes(model, classes)
    model.classes_ = np.asarray(classes)
    model.privacy_ = _classifier_record(document["privacy"], model)


def _regressor_from_dict(model, document, spec):
    """A linear regressor: ``coef`` of shape (n_features,), one finite ``intercept``."""
    if document["classes"] is not None:
        raise ValueError(f"'classes' must be null for the regressor {document['estimator']}.")
    coef = finite_array(document["coef"], "coef", ndim=1)
    if coef.shape != (spec.n_features,):
        raise ValueError(f"'coef' has shape {coef.shape}; a schema of {spec.n_features} features "
                         f"needs ({spec.n_features},).")
    intercept = finite_array([document["intercept"]], "intercept", ndim=1)
    model.coef_, model.intercept_ = coef, float(intercept[0])
    model.n_features_in_ = spec.n_features
    privacy = document["privacy"]
    # the record's own fields say which record it is (an edited mechanism name is then
    # refused by name, by the recomputation)
    sufficient = isinstance(privacy, dict) and "gram_sensitivity" in privacy
    record = SufficientStatisticsRecord if sufficient else PrivacyRecord
    model.privacy_ = record.from_dict(privacy)
    return model


def _kernel_from_dict(model, document, spec):
    """A random-Fourier-feature classifier: the stored public features and the linear model on them."""
    features = document.get("features")
    if not isinstance(features, dict):
        raise ValueError("a kernel model needs 'features' with its 'frequencies' and 'phases'.")
    frequencies = finite_array(features.get("frequencies"), "features.frequencies", ndim=2)
    phases = finite_array(features.get("phases"), "features.phases", ndim=1)
    n_components = int(model.n_components)
    if frequencies.shape != (n_components, spec.n_features) or phases.shape != (n_components,):
        raise ValueError(
            f"'features' has frequencies {frequencies.shape} and phases {phases.shape}; "
            f"n_components = {n_components} and {spec.n_features} input features need "
            f"({n_components}, {spec.n_features}) and ({n_components},).")
    feature_map = RandomFourierFeatures(kernel=model.kernel, gamma=model.gamma,
                                        n_components=model.n_components)
    feature_map.frequencies_, feature_map.phases_ = frequencies, phases
    feature_map.output_norm_bound_ = RFF_NORM_BOUND
    feature_map.n_features_in_ = spec.n_features
    linear = model._make_linear_model(RFF_NORM_BOUND)
    _set_classifier(linear, document, n_components)
    linear.n_features_in_ = n_components
    model.features_, model.linear_model_ = feature_map, linear
    model.classes_, model.privacy_ = linear.classes_, linear.privacy_
    model.n_features_in_ = spec.n_features
    return model


def _check_public_classes(model, classes):
    """A file with ``params.classes`` (the public label set) must list exactly those classes."""
    if model.classes is None:
        return
    public = check_classes(model.classes, name="'params.classes'")
    if public.tolist() != classes:
        raise ValueError(f"'classes' {classes} differs from the public label set "
                         f"'params.classes' {public.tolist()}.")


def _classifier_record(data, model):
    """The record; a file written before ``label_set_public`` existed read its labels from the data."""
    if isinstance(data, dict) and "label_set_public" not in data:
        data = {**data, "label_set_public": model.classes is not None}
    record = PrivacyRecord.from_dict(data)
    if record.label_set_public != (model.classes is not None):
        raise ValueError(f"'privacy.label_set_public' is {record.label_set_public!r} but "
                         f"'params.classes' is {model.classes!r}; they must agree.")
    return record


def finite_array(value, name, ndim):
    """``value`` as a finite float array of ``ndim`` dimensions, or a ValueError naming it."""
    shape = "1-D list" if ndim == 1 else "2-D list of lists"
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != ndim or not np.isfinite(array).all():
        raise ValueError(f"'{name}' must be a finite {shape} of numbers.")
    return array


def _json_scalar(value):
    return value.item() if isinstance(value, np.generic) else value


register_format(ModelFormat(_FORMAT, model_from_dict, _describe_linear))
