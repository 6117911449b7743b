"""Model files of the networked PSGD deployment (format ``dperm-multiparty-model``).

``dperm coordinate`` writes one (:func:`dperm.multiparty.flower.app.model_document`);
``dperm show`` and ``dperm predict`` read it through
:func:`dperm.model_io.load_model`, which hands the document to
:func:`model_from_document` (this module registers the format with
:func:`dperm.model_io.register_format`, so ``model_io`` needs no import of
``dperm.multiparty``). This module does not import Flower: reading a
model needs only dperm.

What the file holds: the coefficients (no intercept: PSGD fits none), the
feature names the parties agreed on, the party names, the public training
parameters, the privacy record (headline: the guarantee proven for the
released ``w_T``, the coordinator's view over the rounds run, paper note 13) and
the per-row preprocessing the parties applied, as a
:class:`~dperm.tabular.TabularSpec` (:func:`party_spec`: every feature a
:class:`~dperm.tabular.RawNumericColumn`, row step ``"clip"`` to
``data_norm``), the schema class ``dperm train``'s model files use too.
It holds no training row, no seed and no count computed from the rows.

Version 2 dropped version 1's count of clipped rows and moved 004 Thm 4.2's
guarantee from the headline to a note (``target_epsilon``,
``target_delta``); a version-1 file is read by :func:`upgrade_v1_privacy`.
Version 3 (this dperm) writes the ``preprocessing`` entry as a
``TabularSpec`` dict; versions 1 and 2 wrote ``{"row_norm": "clip",
"data_norm": R}`` (features listed under ``features``), read by
:func:`preprocessing_from_entry` into the same spec.

Prediction repeats the parties' preprocessing exactly: the party reads its
shard with :func:`load_numeric_columns` (each feature a
:class:`~dperm.tabular.RawNumericColumn`, read by name) and
:class:`~dperm.multiparty.protocol.Party` scales every row longer than
``data_norm`` onto it (:func:`dperm.validation.clip_rows_to_norm`);
the spec's ``transform`` calls the same two functions.

Version 4 records the collusion threshold ``t`` (``params.collusion_threshold``
and the record's ``collusion_threshold``, ``threshold_epsilon``,
``threshold_delta``, ``epsilon_by_colluders``; :mod:`dperm.privacy.collusion`).
Files of versions 1-3 were calibrated with the noise split ``1/K`` per party,
which tolerates no collusion: they load with ``t = 0`` stated as such
(:func:`upgrade_collusion`: the headline is the guarantee at ``t = 0``, the
epsilon by colluders is not recorded) and a note saying so. A file that records a
row rule this dperm does not know is still shown (:class:`UnknownRowRule`)
and refused at prediction time.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, fields

import numpy as np

from dperm.model_io import ModelFormat, finite_array, register_format
from dperm.multiparty.estimator import MULTIPARTY_LOSSES, NewtonClassifier, PSGDClassifier
from dperm.privacy.multiparty_record import PSGDPrivacyRecord, SecureSumSummary
from dperm.privacy.release import RecordBase
from dperm.tabular import TABULAR_ROW_NORM_MODES, RawNumericColumn, TableCellError, TabularSpec

__all__ = [
    "CLASSES", "ESTIMATORS", "MODEL_FORMAT", "MODEL_FORMAT_VERSION", "NO_COLLUSION_NOTE", "READABLE_VERSIONS",
    "REQUIRED_KEYS", "SHARD_CELL_REMEDY", "UnknownRowRule", "describe_document",
    "load_numeric_columns", "model_from_document", "party_spec", "upgrade_collusion",
]

#: Written by ``dperm coordinate``; read by :func:`dperm.model_io.load_model` (registered below).
MODEL_FORMAT = "dperm-multiparty-model"
MODEL_FORMAT_VERSION = 4
#: Versions :func:`model_from_document` reads (1 through :func:`upgrade_v1_privacy`).
READABLE_VERSIONS = (1, 2, 3, 4)
#: The note a version-1 record gets when it is read.
V1_NOTE = ("Read from a version-1 model file: its un-noised count of clipped rows was dropped, and its "
           "headline restated as the guarantee proven for the released model, the coordinator's view.")
#: The note a record of a file written before dperm recorded the collusion threshold gets when it is read.
NO_COLLUSION_NOTE = ("Read from a model file written before dperm recorded a collusion threshold: its noise was "
                     "split 1/K per party, so its guarantee holds only if the coordinator colludes with no party "
                     "(collusion_threshold 0, no collusion tolerance).")
#: The parties' row rule (:class:`~dperm.multiparty.protocol.Party`): rows longer
#: than ``data_norm`` are scaled onto it, shorter rows are left as they are.
ROW_NORM_CLIP = "clip"
REQUIRED_KEYS = {"format", "version", "estimator", "params", "classes", "coef", "intercept", "features",
                 "parties", "privacy"}
#: The labels a party trains on (0/1 labels are read as -1/+1 by the party).
CLASSES = (-1, 1)
#: What to do about a cell of a shard, or of rows to predict, that is not a finite number.
SHARD_CELL_REMEDY = "a multiparty shard holds a label (-1/+1 or 0/1) in every row; fix the cell"


def load_numeric_columns(columns, names, source) -> np.ndarray:
    """The columns ``names`` of a parsed CSV file, in that order, as an ``(n, d)`` float array.

    Parameters
    ----------
    columns : mapping of str -> sequence of str
        From :func:`dperm.tabular.read_csv_columns`.
    names : sequence of str
    source : str or path-like
        The file (for messages).

    Raises
    ------
    ValueError
        A column is missing; a :class:`~dperm.tabular.TableCellError` names
        the column and row of the first cell that is missing, not a number or
        not finite (each column is a :class:`~dperm.tabular.RawNumericColumn`,
        as in :func:`party_spec`, so a shard and the rows to predict are
        parsed alike).
    """
    missing = [name for name in names if name not in columns]
    if missing:
        raise ValueError(f"{source} lacks the feature columns {missing}; the model needs {list(names)} "
                         f"and the file has {list(columns)}.")
    try:
        return np.column_stack([RawNumericColumn(name).parse(columns[name]) for name in names])
    except TableCellError as error:
        raise error.located(source) from None


def party_spec(features, data_norm) -> TabularSpec:
    """The per-row preprocessing every party applied to its shard before training.

    Every feature a :class:`~dperm.tabular.RawNumericColumn` read by name
    (other columns, such as the label, are ignored), and a row longer than
    ``data_norm`` scaled onto it, other rows unchanged
    (:func:`~dperm.validation.clip_rows_to_norm`, as
    :class:`~dperm.multiparty.protocol.Party` does).

    Parameters
    ----------
    features : sequence of str
        Feature columns, in the model's order.
    data_norm : float
        Public row-norm bound ``R``.
    """
    return TabularSpec(tuple(RawNumericColumn(name) for name in features), row_norm_mode=ROW_NORM_CLIP,
                       data_norm=data_norm)


@dataclass(frozen=True)
class UnknownRowRule:
    """A model file's row rule that this dperm cannot reproduce: shown by ``dperm show``, refused by predict.

    Parameters
    ----------
    features : tuple of str
        The model's feature columns.
    rule : str
        The rule as the file records it.
    """

    features: tuple
    rule: str

    @property
    def n_features(self) -> int:
        return len(self.features)

    def feature_names(self) -> list[str]:
        return list(self.features)

    def transform(self, columns, *, source=None, warn=True):
        """Refuse: rows prepared differently from the parties' rows would give wrong predictions."""
        raise ValueError(
            f"the parties preprocessed their rows with rule {self.rule!r}, which this dperm cannot "
            "reproduce from this model file; refusing to predict on rows prepared differently."
        )


def preprocessing_from_entry(entry, features, data_norm, version: int = MODEL_FORMAT_VERSION):
    """The ``preprocessing`` entry of a model file as a :class:`~dperm.tabular.TabularSpec`.

    Parameters
    ----------
    entry : dict
        Version 3: a ``TabularSpec`` dict. Versions 1 and 2: ``{"row_norm":
        rule, "data_norm": R}``, where rule ``"clip"`` is :func:`party_spec`.
    features : list of str
        The file's ``features``.
    data_norm : float
        The file's ``params.data_norm``; the entry must record the same bound.
    version : int

    Returns
    -------
    spec : TabularSpec or UnknownRowRule
        The latter for a row rule this dperm does not know (kept for ``dperm show``).

    Raises
    ------
    ValueError
        A malformed entry, or one whose features or bound differ from the file's.
    """
    if version < 3:
        if not isinstance(entry, dict) or set(entry) != {"row_norm", "data_norm"} or not isinstance(
                entry["row_norm"], str):
            raise ValueError("'preprocessing' must be an object with 'row_norm' (a string) and 'data_norm'.")
        _check_same_bound(entry["data_norm"], data_norm)
        if entry["row_norm"] != ROW_NORM_CLIP:
            return UnknownRowRule(tuple(features), entry["row_norm"])
        return party_spec(features, data_norm)
    if not isinstance(entry, dict):
        raise ValueError("'preprocessing' must be an object (a TabularSpec).")
    rule = entry.get("row_norm_mode", ROW_NORM_CLIP)
    if isinstance(rule, str) and rule not in TABULAR_ROW_NORM_MODES:
        return UnknownRowRule(tuple(features), rule)
    try:
        spec = TabularSpec.from_dict(entry)
    except ValueError as error:
        raise ValueError(f"'preprocessing': {error}") from None
    _check_same_bound(spec.data_norm, data_norm)
    if spec.feature_names() != list(features):
        raise ValueError(f"'preprocessing' encodes features {spec.feature_names()}; 'features' lists {features}.")
    return spec


def _check_same_bound(recorded, data_norm) -> None:
    if recorded != data_norm:
        raise ValueError(f"the row-norm bound differs between 'preprocessing' ({recorded!r}) and 'params' "
                         f"({data_norm!r}).")


def describe_rows(spec) -> str:
    """The row rule in words (``dperm show``)."""
    if isinstance(spec, UnknownRowRule):
        return f"row rule {spec.rule!r} (unknown to this dperm: predict refuses it)"
    raw = all(isinstance(column, RawNumericColumn) for column in spec.columns)
    columns = "numeric columns by name, as they are" if raw else "columns encoded by the public schema"
    if spec.row_norm_mode == ROW_NORM_CLIP:
        return f"{columns}; a row longer than R = {spec.data_norm:g} is scaled onto it, as the parties did"
    return f"{columns}; row step {spec.row_norm_mode!r} to R = {spec.data_norm:g}, as the parties did"


#: The estimators a model file may hold, with their record class and mechanism name.
ESTIMATORS = {"PSGDClassifier": (PSGDClassifier, "psgd"), "NewtonClassifier": (NewtonClassifier, "multiparty_newton")}


def privacy_record_from_dict(data, estimator: str = "PSGDClassifier"):
    """Rebuild the record (a ``PSGDPrivacyRecord`` or ``NewtonPrivacyRecord``), checking it.

    Raises
    ------
    ValueError
        Not an object, missing or unknown fields, a malformed ``secure_sum``,
        or a non-finite / negative guarantee.
    """
    from dperm.privacy.multiparty_record import NewtonPrivacyRecord

    mechanism = ESTIMATORS[estimator][1]
    record_class = NewtonPrivacyRecord if estimator == "NewtonClassifier" else PSGDPrivacyRecord
    record = _dataclass_from_dict(record_class, data, "privacy")
    if record.mechanism != mechanism:
        raise ValueError(f"'privacy' describes mechanism {record.mechanism!r}; a {estimator} model needs "
                         f"{mechanism!r}.")
    names = ("coordinator_epsilon", "coordinator_delta") if estimator == "PSGDClassifier" else ("rdp_epsilon",)
    for name in ("epsilon", "delta", "target_epsilon", "target_delta", *names, "data_norm", "alpha"):
        value = getattr(record, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"'privacy.{name}' must be a finite number >= 0; got {value!r}.")
    return record


def upgrade_v1_privacy(data):
    """A version-1 ``privacy`` object in version 2's form (anything else is returned unchanged).

    Drops ``rows_clipped`` (an un-noised count of private rows), keeps 004
    Thm 4.2's ``epsilon``/``delta`` as ``target_epsilon``/``target_delta`` and
    makes the coordinator-view guarantee the headline, which is what a
    version-1 file's numbers prove for its ``w_T`` (paper note 13).
    """
    if not isinstance(data, dict):
        return data
    data = {key: value for key, value in data.items() if key != "rows_clipped"}
    if "target_epsilon" not in data:
        data["target_epsilon"], data["target_delta"] = data.get("epsilon"), data.get("delta")
        data["epsilon"], data["delta"] = data.get("coordinator_epsilon"), data.get("coordinator_delta")
    if isinstance(data.get("notes"), list):
        data["notes"] = data["notes"] + [V1_NOTE]
    return data


def upgrade_collusion(data):
    """A ``privacy`` object of a file of versions 1-3 with its collusion threshold stated: ``t = 0``.

    Those files split every Gaussian noise share ``1/K`` per party (004,
    KLS 2021), so their headline holds with no colluder only; the epsilon by
    colluders was not recorded (an empty list). Anything else is returned unchanged.
    """
    if not isinstance(data, dict) or "collusion_threshold" in data:
        return data
    data = dict(data, collusion_threshold=0, threshold_epsilon=data.get("epsilon"),
                threshold_delta=data.get("delta"), epsilon_by_colluders=[])
    if isinstance(data.get("notes"), list):
        data["notes"] = data["notes"] + [NO_COLLUSION_NOTE]
    return data


def _collusion_from_dict(data, where):
    """The record's embedded :class:`~dperm.privacy.collusion.CollusionGuarantee`, checked."""
    from dperm.privacy.collusion import CollusionGuarantee

    threshold = data["collusion_threshold"]
    if not _is_int(threshold) or threshold < 0:
        raise ValueError(f"'{where}.collusion_threshold' must be an integer >= 0; got {threshold!r}.")
    by_colluders = data["epsilon_by_colluders"]
    if not isinstance(by_colluders, list):
        raise ValueError(f"'{where}.epsilon_by_colluders' must be a list.")
    for name, value in [("threshold_epsilon", data["threshold_epsilon"]), ("threshold_delta", data["threshold_delta"]),
                        *((f"epsilon_by_colluders[{c}]", v) for c, v in enumerate(by_colluders))]:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"'{where}.{name}' must be a finite number >= 0; got {value!r}.")
    return CollusionGuarantee(threshold, data["threshold_epsilon"], data["threshold_delta"], tuple(by_colluders))


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_TYPE_CHECKS = {
    "float": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "int": _is_int,
    "int | None": lambda value: value is None or _is_int(value),
    "str": lambda value: isinstance(value, str),
    "bool": lambda value: isinstance(value, bool),
}


def _field_keys(cls) -> dict:
    """``{key: (declared field, required)}`` of a record's serialised keys or a plain dataclass's fields."""
    if issubclass(cls, RecordBase):
        declared = {field.name: field for field in fields(cls)}
        keys = {}
        for key, (name, inner, required) in cls._serialised_keys().items():
            field = declared[name] if inner is None else declared[name].metadata["embed"].__dataclass_fields__[inner]
            keys[key] = (field, required or name == "collusion")  # files state every collusion key
        return keys
    return {field.name: (field, field.default is MISSING and field.default_factory is MISSING)
            for field in fields(cls)}


def _dataclass_from_dict(cls, data, where):
    if not isinstance(data, dict):
        raise ValueError(f"'{where}' must be an object.")
    keys = _field_keys(cls)
    required = {key for key, (_, needed) in keys.items() if needed}
    missing, unknown = sorted(required - set(data)), sorted(set(data) - set(keys))
    if missing or unknown:
        raise ValueError(f"'{where}' has missing fields {missing} and unknown fields {unknown}.")
    if issubclass(cls, RecordBase):
        _collusion_from_dict(data, where)  # checked first, with its own messages
    for key, value in data.items():
        check = _TYPE_CHECKS.get(keys[key][0].type)  # annotations are strings (postponed evaluation)
        if check is not None and not check(value):
            raise ValueError(f"'{where}.{key}' must be of type {keys[key][0].type}; got {value!r}.")
    if not issubclass(cls, RecordBase):
        return cls(**data)
    values = dict(data)
    values["secure_sum"] = _dataclass_from_dict(SecureSumSummary, data["secure_sum"], f"{where}.secure_sum")
    for name in ("n_samples_by_party", "notes"):
        if not isinstance(values[name], list):
            raise ValueError(f"'{where}.{name}' must be a list.")
    return cls.from_dict(values)


def model_from_document(document):
    """Rebuild ``(model, preprocessing)`` from a ``dperm-multiparty-model`` document, checking it.

    Parameters
    ----------
    document : dict
        The parsed JSON of a model file written by ``dperm coordinate``.

    Returns
    -------
    model : PSGDClassifier
        With ``coef_``, ``intercept_``, ``classes_`` (-1, 1), ``n_features_in_``
        and ``privacy_`` set; ready for ``predict`` (and ``predict_proba``
        with the logistic loss).
    preprocessing : TabularSpec or UnknownRowRule
        What ``transform`` must do to new rows (:func:`preprocessing_from_entry`).
        Files without a ``preprocessing`` entry (written before it was
        recorded) get the rule of format version 1, ``clip`` at
        ``params.data_norm``.

    Raises
    ------
    ValueError
        A missing key, a wrong format or version, a shape that does not
        match the features, non-finite numbers, or an inconsistent record.
    """
    if not isinstance(document, dict):
        raise ValueError("the top level must be a JSON object.")
    missing = sorted(REQUIRED_KEYS - set(document))
    if missing:
        raise ValueError(f"missing keys {missing}.")
    if document["format"] != MODEL_FORMAT or document["version"] not in READABLE_VERSIONS:
        raise ValueError(f"unsupported format {document['format']!r} version {document['version']!r}; this "
                         f"dperm reads {MODEL_FORMAT!r} versions {list(READABLE_VERSIONS)}.")
    if document["estimator"] not in ESTIMATORS:
        raise ValueError(f"unknown estimator {document['estimator']!r}; expected one of {sorted(ESTIMATORS)}.")
    estimator = document["estimator"]
    params = document["params"]
    if not isinstance(params, dict):
        raise ValueError("'params' must be an object.")
    if document["version"] < 4 and "collusion_threshold" not in params:  # noise split 1/K: t = 0 (upgrade_collusion)
        privacy_entry = document["privacy"] if isinstance(document["privacy"], dict) else {}
        params = {**params, "collusion_threshold": privacy_entry.get("collusion_threshold", 0)}
    if params.get("loss") not in MULTIPARTY_LOSSES:
        raise ValueError(f"'params.loss' must be one of {MULTIPARTY_LOSSES}; got {params.get('loss')!r}.")
    model = ESTIMATORS[estimator][0]().set_params(**params)
    features = document["features"]
    if (not isinstance(features, list) or not features or not all(isinstance(f, str) and f for f in features)
            or len(set(features)) != len(features)):
        raise ValueError("'features' must be a non-empty list of distinct column names.")
    parties = document["parties"]
    if not isinstance(parties, list) or len(parties) < 2 or not all(isinstance(p, str) for p in parties):
        raise ValueError("'parties' must list the names of at least two parties.")
    if document["classes"] != list(CLASSES):
        raise ValueError(f"'classes' must be {list(CLASSES)} (the parties' labels); got {document['classes']!r}.")
    coef = finite_array(document["coef"], "coef", ndim=2)
    if coef.shape != (1, len(features)):
        raise ValueError(f"'coef' has shape {coef.shape}; {len(features)} features need (1, {len(features)}).")
    intercept = finite_array(document["intercept"], "intercept", ndim=1)
    if intercept.shape != (1,):
        raise ValueError(f"'intercept' has shape {intercept.shape}; expected (1,).")
    privacy = upgrade_v1_privacy(document["privacy"]) if document["version"] == 1 else document["privacy"]
    if document["version"] < 4:
        privacy = upgrade_collusion(privacy)
    record = privacy_record_from_dict(privacy, estimator)
    if params.get("collusion_threshold") != record.collusion_threshold:
        raise ValueError(f"'params.collusion_threshold' ({params.get('collusion_threshold')!r}) differs from "
                         f"'privacy.collusion_threshold' ({record.collusion_threshold!r}).")
    if record.n_parties != len(parties) or record.loss != params["loss"]:
        raise ValueError(f"'privacy' ({record.n_parties} parties, {record.loss} loss) does not match the model "
                         f"({len(parties)} parties, {params['loss']} loss).")
    if record.epsilon_by_colluders and len(record.epsilon_by_colluders) != record.n_parties:
        raise ValueError(f"'privacy.epsilon_by_colluders' has {len(record.epsilon_by_colluders)} entries; "
                         f"{record.n_parties} parties need one per number of colluders 0..{record.n_parties - 1}.")
    if not record.collusion_threshold <= record.n_parties - 1:
        raise ValueError(f"'privacy.collusion_threshold' {record.collusion_threshold} is not below the "
                         f"{record.n_parties} parties.")
    data_norm = params.get("data_norm")
    if isinstance(data_norm, bool) or not isinstance(data_norm, (int, float)) or not (0 < data_norm < math.inf):
        raise ValueError(f"'params.data_norm' must be a finite number > 0; got {data_norm!r}.")
    if data_norm != record.data_norm:
        raise ValueError(f"the row-norm bound differs between 'params' ({data_norm!r}) and 'privacy' "
                         f"({record.data_norm!r}).")
    if "preprocessing" in document:
        preprocessing = preprocessing_from_entry(document["preprocessing"], features, data_norm, document["version"])
    else:  # written before the entry was recorded: version 1's rule
        preprocessing = party_spec(features, data_norm)
    model.coef_ = coef
    model.intercept_ = intercept
    model.classes_ = np.asarray(CLASSES)
    model.n_features_in_ = len(features)
    model.privacy_ = record
    return model, preprocessing


def describe_document(document, preprocessing) -> str:
    """The header ``dperm show`` prints above the privacy record."""
    parties = document["parties"]
    return (f"{document['estimator']} (multiparty, {len(parties)} parties: {', '.join(parties)}; engine "
            f"{document.get('engine', 'unknown')}) predicting -1/+1 from {preprocessing.n_features} features "
            f"{preprocessing.feature_names()}; no intercept\n"
            f"Rows: {describe_rows(preprocessing)}.")


register_format(ModelFormat(MODEL_FORMAT, model_from_document, describe_document, kind="multiparty model file"))
