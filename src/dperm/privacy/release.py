"""What a fit may release: the one release policy of dperm.

Every value that leaves a fit (a fitted attribute, a field of ``privacy_``, a
model-file entry, a CLI line) is exactly one of:

``PUBLIC``
    a public input: given by the user (parameters, feature bounds, the label
    set, ``n`` under replace-one neighbours) or fixed by dperm before any data
    is seen (references, tolerances, the radius the noise is calibrated to);
``NOISED``
    the output of a mechanism that spent budget for it (coefficients, answers,
    a privately selected index);
``DERIVED``
    a function of public inputs and noised outputs only (sensitivities, noise
    scales, epsilon', Delta, composition totals, whole records).

Anything else computed from private rows (iteration counts, achieved
gradient norms or solution radii, how many rows or labels were clipped, the
label set read from the data) is not released. The one exception is the label
set when the user gives none: then it is read from the data, a
:class:`~dperm.exceptions.PrivacyLeakWarning` is issued, and the record says
the label set is not protected (``label_set_public = False``).

Records declare the kind of every field with :func:`released`, and
:func:`privacy_record` refuses to build a record class with an undeclared
field, so the rule is enforced where records are defined. Estimators declare
their fitted attributes in :data:`FITTED_ATTRIBUTES`; :func:`released_attributes`
refuses an undeclared one, and the neighbour-swap tests compare everything it
returns between fits on neighbouring data sets.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import MISSING

__all__ = [
    "DERIVED", "FITTED_ATTRIBUTES", "KINDS", "NOISED", "PUBLIC", "RecordBase",
    "describe_guarantee", "privacy_record", "release_kinds", "released",
    "released_attributes",
]

PUBLIC = "public"
NOISED = "noised"
DERIVED = "derived"
KINDS = (PUBLIC, NOISED, DERIVED)

#: Fitted attributes an estimator may expose, with their kind. ``privacy_`` is
#: a record (itself checked field by field); a nested estimator (``estimator_``,
#: ``best_estimator_``) is checked recursively by :func:`released_attributes`.
FITTED_ATTRIBUTES = {
    "coef_": NOISED,
    "intercept_": NOISED,
    "classes_": PUBLIC,
    "n_features_in_": PUBLIC,
    "feature_names_in_": PUBLIC,
    "privacy_": DERIVED,
    "alpha_": PUBLIC,
    "mechanism_": PUBLIC,  # mechanism="auto" resolved from public n, d, epsilon, delta
    "multi_class_": PUBLIC,  # multi_class="auto" resolved from public K, n, d, epsilon, delta
    # random Fourier features: drawn from public randomness and the input dimension only
    "frequencies_": PUBLIC,
    "phases_": PUBLIC,
    "feature_map_": PUBLIC,
    "features_": PUBLIC,
    "output_norm_bound_": PUBLIC,
    "estimator_": DERIVED,
    "linear_model_": DERIVED,
    # private parameter search (003 Alg. 4 or random stopping): the private selection
    "best_index_": NOISED,
    "best_params_": NOISED,
    "best_estimator_": DERIVED,
    "candidates_": PUBLIC,
    # private prediction: answers are noised and paid per query
    "queries_answered_": PUBLIC,
    "epsilon_spent_": PUBLIC,
    "budget_remaining_": PUBLIC,
    "answers_remaining_": PUBLIC,
}


def released(kind: str, default=MISSING, *, doc: str = "", embed=None, names=None,
             omit_default: bool = False):
    """A dataclass field of a privacy record, declared ``PUBLIC``, ``NOISED`` or ``DERIVED``.

    ``omit_default``: the key is left out of the serialised record while the field has its
    default (a field added later that most fits never set, such as ``sample_weighted``:
    records and model files of the other fits stay byte for byte as they were).

    ``embed``: the field holds an instance of this dataclass (a calibration), declared as one
    field; it serialises as its own serialised fields (those without
    ``metadata={"serialised": False}``), each under the record's key ``names.get(name, name)``,
    and reads back the same way (:meth:`RecordBase.to_dict`, :meth:`RecordBase.from_dict`).
    The record's attribute of that key reads the embedded field. A name mapped to ``None`` is
    not part of this record (a number the calibration needs and the record never showed, such
    as PSGD's ``n_features``): not serialised, and ``None`` in a record read back.
    """
    if kind not in KINDS:
        raise ValueError(f"release kind must be one of {KINDS}; got {kind!r}.")
    metadata = {"release": kind, "doc": doc, "embed": embed, "names": dict(names or {}),
                "omit_default": omit_default}
    if default is MISSING:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def release_kinds(record_or_class) -> dict[str, str]:
    """``{field name: kind}`` of a record class or instance, and ``{serialised key: kind}``.

    A key of an embedded calibration (``noise_scale`` of ``calibration``) has its field's kind.
    """
    kinds = {f.name: f.metadata["release"] for f in dataclasses.fields(record_or_class)}
    cls = record_or_class if isinstance(record_or_class, type) else type(record_or_class)
    if issubclass(cls, RecordBase):
        kinds.update({key: kinds[field] for key, (field, _, _) in cls._serialised_keys().items()})
    return kinds


def privacy_record(cls):
    """Class decorator: a frozen dataclass whose every field declares its release kind.

    Raises ``TypeError`` at import time for a field without :func:`released`.
    """
    cls = dataclasses.dataclass(frozen=True, eq=False)(cls)  # equality: RecordBase.__eq__
    undeclared = [f.name for f in dataclasses.fields(cls) if f.metadata.get("release") not in KINDS]
    if undeclared:
        raise TypeError(
            f"{cls.__name__} has fields {undeclared} without a release kind; declare each with "
            "dperm.privacy.release.released(PUBLIC | NOISED | DERIVED)."
        )
    if issubclass(cls, RecordBase):
        cls._serialised_keys()  # refuses a SERIALISED_ORDER that drops or repeats a key
    return cls


def _required(f) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


class RecordBase:
    """Serialisation and checks shared by every privacy record (use with :func:`privacy_record`).

    A record is what dperm says about a fit's guarantee. Every field is public
    input or derived from public input and noised output (this module's
    policy), so a record may be printed and stored in model files. A field declared
    with ``released(..., embed=...)`` holds a calibration as one field and serialises as
    its numbers, each a key of the record's own. ``SERIALISED_ORDER`` (a class attribute,
    optional) fixes the order of the serialised keys; by default the fields' order, an
    embedded field's keys in its place.
    """

    SERIALISED_ORDER: tuple = ()

    @classmethod
    def _serialised_keys(cls) -> dict:
        """``{key: (field, embedded field or None, required)}`` in the serialised order."""
        keys = {}
        for f in dataclasses.fields(cls):
            embed = f.metadata.get("embed")
            if embed is None:
                keys[f.name] = (f.name, None, _required(f))
                continue
            for inner in dataclasses.fields(embed):
                key = f.metadata["names"].get(inner.name, inner.name)
                if inner.metadata.get("serialised", True) and key is not None:
                    keys[key] = (f.name, inner.name, _required(f) and _required(inner))
        if cls.SERIALISED_ORDER:
            if sorted(cls.SERIALISED_ORDER) != sorted(keys):
                raise TypeError(f"{cls.__name__}.SERIALISED_ORDER must list each serialised key once; "
                                f"it has {sorted(cls.SERIALISED_ORDER)}, the fields give {sorted(keys)}.")
            keys = {key: keys[key] for key in cls.SERIALISED_ORDER}
        return keys

    def __getattr__(self, name):
        """An embedded field's number, read under the record's key (``record.noise_scale``)."""
        if name.startswith("_"):
            raise AttributeError(name)
        where = type(self)._serialised_keys().get(name)
        if where is None or where[1] is None or where[0] not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        embedded = self.__dict__[where[0]]
        return None if embedded is None else getattr(embedded, where[1])  # an optional part not used

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (used in model files); tuples become lists."""
        data = {}
        omitted = {f.name for f in dataclasses.fields(self)
                   if f.metadata.get("omit_default") and getattr(self, f.name) == f.default}
        for key, (name, inner, _) in self._serialised_keys().items():
            if name in omitted:
                continue
            value = getattr(self, name)
            if inner is not None:
                value = getattr(value, inner)
            if dataclasses.is_dataclass(value):
                value = value.to_dict() if hasattr(value, "to_dict") else dataclasses.asdict(value)
            elif isinstance(value, tuple):
                value = list(value)
            data[key] = value
        return data

    @classmethod
    def from_dict(cls, data: dict):
        """Rebuild a record; raises ValueError naming missing or unknown keys."""
        if not isinstance(data, dict):
            raise ValueError(f"a privacy record must be a JSON object; got {type(data).__name__}.")
        keys = cls._serialised_keys()
        required = {key for key, (_, _, needed) in keys.items() if needed}
        missing = sorted(required - set(data))
        unknown = sorted(set(data) - set(keys))
        if missing or unknown:
            raise ValueError(
                f"malformed privacy record ({cls.__name__}): missing keys {missing}, unknown keys {unknown}."
            )
        values, embedded = {}, {}
        for key, (name, inner, _) in keys.items():
            if key in data:
                value = data[key]
                value = tuple(value) if isinstance(value, list) else value
                if inner is None:
                    values[name] = value
                else:
                    embedded.setdefault(name, {})[inner] = value
        for f in dataclasses.fields(cls):
            if f.name in embedded:
                unrecorded = {name: None for name, key in f.metadata["names"].items() if key is None}
                values[f.name] = f.metadata["embed"](**unrecorded, **embedded[f.name])
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @property
    def guarantee(self) -> str:
        """The headline ``(epsilon, delta)`` in words, e.g. ``"0.1-DP (pure epsilon-differential privacy)"``."""
        return describe_guarantee(self.epsilon, self.delta)

    def __eq__(self, other):
        """Records are equal when they say the same: same class, same serialised keys and values.

        An embedded calibration's numbers that the record does not show (``names`` to None,
        its unserialised laws) are not compared, so a record read back from a model file
        equals the one written.
        """
        if type(other) is not type(self):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(repr(self.to_dict()))

    def __str__(self) -> str:
        return self.summary()


def describe_guarantee(epsilon: float, delta: float) -> str:
    """``"0.1-DP (pure epsilon-differential privacy)"`` or ``"(1, 1e-05)-DP"``."""
    if delta == 0:
        return f"{epsilon:g}-DP (pure epsilon-differential privacy)"
    return f"({epsilon:g}, {delta:g})-DP"


def released_attributes(estimator) -> dict:
    """Every public fitted attribute of ``estimator`` with its value, checked against the policy.

    Raises ``TypeError`` for a fitted attribute (public name ending in ``_``)
    that :data:`FITTED_ATTRIBUTES` does not declare: nothing leaves a fit
    unless the policy says what it is. Nested estimators are expanded as
    ``"estimator_.coef_"`` and so on.
    """
    attributes = {}
    for name, value in vars(estimator).items():
        if name.startswith("_") or not name.endswith("_"):
            continue
        if name not in FITTED_ATTRIBUTES:
            raise TypeError(
                f"{type(estimator).__name__}.{name} is not declared in "
                "dperm.privacy.release.FITTED_ATTRIBUTES; a fit may release only public "
                "inputs, noised outputs and functions of those."
            )
        if hasattr(value, "get_params") and hasattr(value, "fit"):
            for inner, inner_value in released_attributes(value).items():
                attributes[f"{name}.{inner}"] = inner_value
        else:
            attributes[name] = value
    return attributes
