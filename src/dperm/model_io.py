"""Model files: JSON with coefficients, the public schema and the privacy record.

:func:`load_model` reads every format in :data:`FORMATS`: this module's own
``dperm-model`` and the multiparty format written by ``dperm coordinate``,
which :mod:`dperm.multiparty.model_file` registers (:func:`register_format`;
``import dperm`` imports it), so this module never imports ``dperm.multiparty``.

A model file never contains training rows. Loading checks the schema and the
shapes, so a malformed, truncated or tampered file gets a clear ValueError
instead of a model that predicts garbage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from dperm.linear_model import PrivateLinearSVC, PrivateLogisticRegression
from dperm.tabular import TabularSpec
from dperm.privacy.labels import check_classes
from dperm.privacy.record import PrivacyRecord

FORMAT = "dperm-model"
FORMAT_VERSION = 1
ESTIMATORS = {cls.__name__: cls for cls in (PrivateLogisticRegression, PrivateLinearSVC)}
REQUIRED_KEYS = {
    "format", "version", "estimator", "params", "classes", "coef", "intercept",
    "target", "spec", "privacy", "schema_from_data",
}


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
FORMATS: dict = {}


def register_format(model_format: ModelFormat) -> None:
    """Make :func:`load_model` and :func:`describe_model` read ``model_format``."""
    FORMATS[model_format.name] = model_format


def model_to_dict(model, spec: TabularSpec, target: str, schema_from_data=()) -> dict:
    """Describe a fitted dperm estimator as a JSON-serialisable dict.

    Parameters
    ----------
    model : PrivateLogisticRegression or PrivateLinearSVC
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
    # Where the fit ran and which budget paid for it are not part of the model.
    params["scheduler"] = None
    params["accountant"] = None
    if params.get("classes") is not None:  # the public label set, as JSON scalars
        params["classes"] = [_json_scalar(c) for c in check_classes(params["classes"])]
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "estimator": type(model).__name__,
        "params": params,
        "classes": [_json_scalar(c) for c in model.classes_],
        "coef": model.coef_.tolist(),
        "intercept": model.intercept_.tolist(),
        "target": target,
        "spec": spec.to_dict(),
        "privacy": model.privacy_.to_dict(),
        "schema_from_data": list(schema_from_data),
    }


def save_model(path, model, spec: TabularSpec, target: str, schema_from_data=()) -> None:
    """Write a model file (see :func:`model_to_dict`)."""
    document = model_to_dict(model, spec, target, schema_from_data)
    Path(path).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def load_model(path):
    """Read a model file; returns ``(model, spec, document)``.

    Two formats are read:

    - ``dperm-model`` (``dperm train``): ``model`` is a
      :class:`~dperm.linear_model.PrivateLogisticRegression` or
      :class:`~dperm.linear_model.PrivateLinearSVC` and ``spec`` the
      :class:`~dperm.tabular.TabularSpec` that encodes raw columns;
    - ``dperm-multiparty-model`` (``dperm coordinate``): ``model`` is a
      :class:`~dperm.multiparty.PSGDClassifier` and ``spec`` the
      :class:`~dperm.tabular.TabularSpec` of the preprocessing the parties
      applied to their rows (:func:`~dperm.multiparty.model_file.party_spec`),
      or, for a row rule this dperm does not know,
      :class:`~dperm.multiparty.model_file.UnknownRowRule`, whose ``transform``
      refuses.

    Either way ``spec.transform(columns)`` turns a parsed CSV file into the
    model's features and ``model.privacy_.summary()`` states the guarantee.

    Raises
    ------
    ValueError
        If the file is not valid JSON or does not follow its format's schema.
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
    except (ValueError, TypeError, KeyError) as error:
        raise ValueError(f"malformed {model_format.kind} {path}: {error}") from None
    return model, spec, document


def _format_of(document) -> ModelFormat:
    """The registered format a document names; anything else goes to ``dperm-model``'s reader, which refuses it."""
    name = document.get("format") if isinstance(document, dict) else None
    return FORMATS.get(name if isinstance(name, str) else None, FORMATS[FORMAT])


def describe_model(document, spec) -> str:
    """The line(s) ``dperm show`` prints above the privacy record, for any registered format."""
    return _format_of(document).describe(document, spec)


def _describe_linear(document, spec) -> str:
    return (f"{document['estimator']} predicting {document['target']!r} from "
            f"{spec.n_features} features; classes {document['classes']}")


def model_from_dict(document):
    """Rebuild ``(model, spec)`` from :func:`model_to_dict`'s output, checking it."""
    if not isinstance(document, dict):
        raise ValueError("the top level must be a JSON object.")
    missing = sorted(REQUIRED_KEYS - set(document))
    if missing:
        raise ValueError(f"missing keys {missing}.")
    if document["format"] != FORMAT or document["version"] != FORMAT_VERSION:
        raise ValueError(
            f"unsupported format {document['format']!r} version {document['version']!r}; "
            f"this dperm reads {FORMAT!r} version {FORMAT_VERSION}"
            + "".join(f" and {name!r}" for name in sorted(FORMATS) if name != FORMAT) + "."
        )
    cls = ESTIMATORS.get(document["estimator"])
    if cls is None:
        raise ValueError(f"unknown estimator {document['estimator']!r}; expected one of {sorted(ESTIMATORS)}.")
    if not isinstance(document["params"], dict):
        raise ValueError("'params' must be an object.")
    model = cls().set_params(**document["params"])
    spec = TabularSpec.from_dict(document["spec"])
    coef = finite_array(document["coef"], "coef", ndim=2)
    intercept = finite_array(document["intercept"], "intercept", ndim=1)
    classes = document["classes"]
    if not isinstance(classes, list) or len(classes) < 2:
        raise ValueError("'classes' must list at least two labels.")
    n_problems = 1 if len(classes) == 2 else len(classes)
    if coef.shape != (n_problems, spec.n_features):
        raise ValueError(
            f"'coef' has shape {coef.shape}; {len(classes)} classes and a schema of "
            f"{spec.n_features} features need ({n_problems}, {spec.n_features})."
        )
    if intercept.shape != (n_problems,):
        raise ValueError(f"'intercept' has shape {intercept.shape}; expected ({n_problems},).")
    model.coef_ = coef
    model.intercept_ = intercept
    _check_public_classes(model, classes)
    model.classes_ = np.asarray(classes)
    model.n_features_in_ = spec.n_features
    model.privacy_ = _classifier_record(document["privacy"], model)
    model.alpha_ = float(model.privacy_.alpha)  # the value used (alpha="auto" is resolved in the record)
    return model, spec


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


register_format(ModelFormat(FORMAT, model_from_dict, _describe_linear))
