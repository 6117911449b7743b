"""The table of model-file formats and the one reader: :func:`load_model` hands a document to its format."""

from __future__ import annotations

import importlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from dperm.model_io._digest import _DIGEST_KEY, InconsistentModelFile, check_digest

#: The format ``dperm train`` writes (:mod:`dperm.model_io._linear`), and the reader of a
#: document that names no registered format.
_FORMAT = "dperm-model"
#: Modules that register further formats, imported on first need: ``import dperm``
#: is lazy, so ``load_model`` must not rely on it having imported them.
FORMAT_MODULES = {"dperm-multiparty-model": "dperm.multiparty.model_file"}


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


def register_format(model_format: ModelFormat) -> None:
    """Make :func:`load_model` and :func:`describe_model` read ``model_format``."""
    _FORMATS[model_format.name] = model_format


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

