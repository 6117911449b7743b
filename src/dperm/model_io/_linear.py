"""The ``dperm-model`` format: every estimator family ``dperm train`` fits, written and read back checked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import dperm
from dperm.kernels import RFF_NORM_BOUND, RandomFourierFeatures
from dperm.model_io._checks import _check_record_agrees, check_calibration, check_on_grid
from dperm.model_io._digest import _DIGEST_KEY, InconsistentModelFile, with_digest
from dperm.model_io._formats import _FORMAT, _FORMATS, ModelFormat, finite_array, register_format
from dperm.privacy.labels import check_classes
from dperm.privacy.record import PrivacyRecord
from dperm.privacy.sufficient_statistics_record import SufficientStatisticsRecord
from dperm.tabular import TabularSpec

#: Version 2 added ``digest``; version 1 (no digest) is still read, with a warning.
_FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)


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


#: Parameters added after model files existed, with their defaults: left out of a file while they
#: have them (a fit that does not use them writes the bytes it always wrote).
_LATER_PARAMS = {"fallback": None}


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
    # Where the fit ran and which budget paid for it are not part of the model; a kernel
    # model's features are stored below, not their seed.
    for name in ("scheduler", "accountant", "feature_random_state"):
        if name in params:
            params[name] = None
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
    linear = model.linear_model_ if isinstance(model, KERNEL_CLASSIFIERS) else model
    if isinstance(model, REGRESSORS):
        document.update(classes=None, coef=model.coef_.tolist(), intercept=float(model.intercept_))
    else:
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


def _json_scalar(value):
    return value.item() if isinstance(value, np.generic) else value


register_format(ModelFormat(_FORMAT, model_from_dict, _describe_linear))
