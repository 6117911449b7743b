"""The column kinds of a public schema: numeric with public bounds, categorical, raw numeric.

Each kind holds its public constants, parses its raw cells (:mod:`._cells`)
and encodes them one record at a time.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dperm.preprocessing import clip_to_bounds, join_feature_category, scale_to_unit_interval
from dperm.tabular._cells import _INFINITE_REMEDY, TableCellError, _refuse_infinite, finite_numbers, parse_numbers

#: Public per-record transforms a numeric column may apply before scaling.
_NUMERIC_TRANSFORMS = {"log1p": np.log1p}


def _check_name(name, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what} name must be a non-empty string; got {name!r}.")
    return name


def _check_real(value, what: str) -> float:
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, bool)
        or not math.isfinite(value)
    ):
        raise ValueError(f"{what} must be a finite number; got {value!r}.")
    return float(value)


@dataclass(frozen=True)
class NumericColumn:
    """A numeric column with public bounds, scaled to [0, 1].

    Parameters
    ----------
    name : str
        Column name in the input.
    lower, upper : float
        Public bounds on the raw scale, ``lower < upper``. Values outside are
        clipped to them (per record, counted).
    transform : {None, "log1p"}
        Optional public per-record transform applied after clipping and before
        scaling; the bounds are transformed too, so the output is
        ``(f(x) - f(lower)) / (f(upper) - f(lower))``. ``"log1p"`` needs
        ``lower > -1``.
    fill : float, optional
        Public value, in ``[lower, upper]``, that replaces a missing cell
        (:data:`_MISSING_VALUES`, NaN, None) before the column is encoded. Choose
        it without looking at the data (the midpoint of the bounds, a value from
        a public source); it is a constant, so filling is a per-record step and
        n stays the number of rows. Without it, a missing cell raises
        :class:`TableCellError`: no default is imposed on a column the schema
        says nothing about.
    """

    name: str
    lower: float
    upper: float
    transform: str | None = None
    fill: float | None = None

    def __post_init__(self):
        _check_name(self.name, "column")
        lower = _check_real(self.lower, f"column {self.name!r} lower bound")
        upper = _check_real(self.upper, f"column {self.name!r} upper bound")
        if upper <= lower:
            raise ValueError(
                f"column {self.name!r} bounds must satisfy lower < upper; got "
                f"lower={lower!r}, upper={upper!r}."
            )
        if self.transform is not None and self.transform not in _NUMERIC_TRANSFORMS:
            raise ValueError(
                f"column {self.name!r} transform must be None or one of "
                f"{sorted(_NUMERIC_TRANSFORMS)}; got {self.transform!r}."
            )
        if self.transform == "log1p" and lower <= -1:
            raise ValueError(
                f"column {self.name!r} uses transform 'log1p', which needs lower > -1; "
                f"got lower={lower!r}."
            )
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        if self.fill is not None:
            fill = _check_real(self.fill, f"column {self.name!r} fill value")
            if not lower <= fill <= upper:
                raise ValueError(
                    f"column {self.name!r} fill value {fill!r} must lie within its public "
                    f"bounds [{lower:g}, {upper:g}]."
                )
            object.__setattr__(self, "fill", fill)

    @property
    def n_features(self) -> int:
        return 1

    def feature_names(self) -> list[str]:
        """``["name"]``, or ``["log1p(name)"]`` when a transform is applied."""
        if self.transform is None:
            return [self.name]
        return [f"{self.transform}({self.name})"]

    def transformed_bounds(self) -> tuple[float, float]:
        """The bounds on the scale that is mapped to [0, 1]."""
        if self.transform is None:
            return self.lower, self.upper
        function = _NUMERIC_TRANSFORMS[self.transform]
        return float(function(self.lower)), float(function(self.upper))

    def parse(self, values: np.ndarray) -> np.ndarray:
        """Float values of raw cells, a missing cell replaced by the public ``fill``.

        Raises
        ------
        TableCellError
            At the first missing cell when the column has no ``fill``, or at
            the first cell that is not a number or is infinite (``inf``, or
            ``1e400``, beyond the largest float): refused as the Python API
            refuses it, never clipped to a bound.
        """
        numbers, missing = parse_numbers(values, self.name)
        _refuse_infinite(values, numbers, self.name, remedy=_INFINITE_REMEDY)
        if not missing.any():
            return numbers
        if self.fill is None:
            raise TableCellError(self.name, int(np.argmax(missing)), "the value is missing",
                                 self._missing_remedy())
        return np.where(missing, self.fill, numbers)

    def _missing_remedy(self) -> str:
        def plain(value):  # 17.0 -> 17 in the example
            return int(value) if float(value).is_integer() else value

        entry = {"lower": plain(self.lower), "upper": plain(self.upper)}
        if self.transform is not None:
            entry["transform"] = self.transform
        entry["fill"] = plain((self.lower + self.upper) / 2)
        return (f"give the column a public fill value in the schema (the --bounds file), e.g. "
                f"{json.dumps({self.name: entry})} with a value chosen without looking at the "
                "data, or complete the file; dperm never drops a row, since n is public")

    def encode(self, values: np.ndarray) -> tuple[np.ndarray, int]:
        """Clip, transform and scale float ``values``; return ``(column, n_clipped)``."""
        clipped, n_clipped = clip_to_bounds(
            values[:, None],
            np.array([self.lower]),
            np.array([self.upper]),
            clip=True,
            feature_labels=[self.name],
        )
        if self.transform is not None:
            clipped = _NUMERIC_TRANSFORMS[self.transform](clipped)
        lower, upper = self.transformed_bounds()
        return scale_to_unit_interval(clipped[:, 0], lower, upper), int(n_clipped[0])

    def to_dict(self) -> dict:
        """JSON-serialisable fields; ``"fill"`` only when one is set."""
        entry = {
            "name": self.name,
            "type": "numeric",
            "lower": self.lower,
            "upper": self.upper,
            "transform": self.transform,
        }
        if self.fill is not None:
            entry["fill"] = self.fill
        return entry


#: What to do about a cell of a :class:`RawNumericColumn` that is missing, not a number or infinite.
_RAW_NUMERIC_REMEDY = ("a column taken on the model's scale has no public bounds or fill, so every cell must "
                      "be a finite number; fix the cell (dperm never drops a row, since n is public)")


@dataclass(frozen=True)
class RawNumericColumn:
    """A numeric column already on the model's scale: taken as it is, every cell a finite number.

    No bound, clipping or scaling: the only per-record step on it is the
    spec's row step (``"clip"`` or ``"scale"`` to ``data_norm``), which is
    what keeps ``||x_i|| <= R`` (Chaudhuri et al. 2011, Sec. 2; 004 Sec. 4).
    Since nothing bounds the column, :meth:`TabularSpec.max_row_norm` is
    infinite and a spec with such a column refuses the ``"constant"`` row
    step. The multiparty parties train on such columns
    (:mod:`dperm.multiparty.model_file`).

    Parameters
    ----------
    name : str
        Column name in the input.
    """

    name: str

    def __post_init__(self):
        _check_name(self.name, "column")

    @property
    def n_features(self) -> int:
        return 1

    def feature_names(self) -> list[str]:
        """``["name"]``."""
        return [self.name]

    def parse(self, values: np.ndarray) -> np.ndarray:
        """Float values of raw cells with :func:`finite_numbers`.

        Raises
        ------
        TableCellError
            At the first cell that is missing, not a number, or infinite.
        """
        return finite_numbers(values, self.name, remedy=_RAW_NUMERIC_REMEDY)

    def encode(self, values: np.ndarray) -> tuple[np.ndarray, int]:
        """The parsed ``values`` unchanged, and 0 values clipped."""
        return values, 0

    def to_dict(self) -> dict:
        return {"name": self.name, "type": "raw_numeric"}


@dataclass(frozen=True)
class CategoricalColumn:
    """A categorical column one-hot encoded with a public list of categories.

    Input values are compared as stripped strings; a value not in the list
    becomes an all-zero block. A missing cell is the empty string (an empty
    CSV cell, or NaN/None in a Parquet file) and a marker such as ``"?"`` is
    kept as written: either is its own category when the public list names it
    (``["a", "b", "?"]``, or ``""``), and the all-zero block otherwise. Both
    are per-record rules with public constants, and the zero block keeps the
    row inside the norm bound of :meth:`TabularSpec.max_row_norm`.

    Parameters
    ----------
    name : str
    categories : sequence of str
        Public categories, in output order, without duplicates.
    """

    name: str
    categories: tuple[str, ...]

    def __post_init__(self):
        _check_name(self.name, "column")
        if isinstance(self.categories, str) or not isinstance(self.categories, Sequence):
            raise ValueError(
                f"column {self.name!r} categories must be a list of strings; "
                f"got {self.categories!r}."
            )
        categories = tuple(self.categories)
        if not categories:
            raise ValueError(f"column {self.name!r} has no categories; list its public categories.")
        bad = [value for value in categories if not isinstance(value, str)]
        if bad:
            raise ValueError(
                f"column {self.name!r} categories must be strings; got {bad[0]!r}."
            )
        if len(set(categories)) != len(categories):
            raise ValueError(f"column {self.name!r} has duplicate categories.")
        object.__setattr__(self, "categories", categories)

    @property
    def n_features(self) -> int:
        return len(self.categories)

    def feature_names(self) -> list[str]:
        """``["name=category", ...]`` in category order."""
        return [join_feature_category(self.name, value) for value in self.categories]

    def encode(self, values: np.ndarray) -> np.ndarray:
        """One-hot encode string ``values``; unknown values give zero rows."""
        index = {category: i for i, category in enumerate(self.categories)}
        codes = np.fromiter(
            (index.get(value, -1) for value in values.tolist()),
            dtype=np.intp,
            count=values.shape[0],
        )
        out = np.zeros((values.shape[0], len(self.categories)))
        known = np.flatnonzero(codes >= 0)
        out[known, codes[known]] = 1.0
        return out

    def to_dict(self) -> dict:
        return {"name": self.name, "type": "categorical", "categories": list(self.categories)}


_COLUMN_TYPES = {"numeric": NumericColumn, "categorical": CategoricalColumn, "raw_numeric": RawNumericColumn}
_COLUMN_KEYS = {
    "numeric": ({"name", "type", "lower", "upper"}, {"transform", "fill"}),
    "categorical": ({"name", "type", "categories"}, set()),
    "raw_numeric": ({"name", "type"}, set()),
}
#: Columns parsed as numbers before encoding (the others are one-hot encoded strings).
_NUMERIC_KINDS = (NumericColumn, RawNumericColumn)


def _check_keys(mapping, required: set, optional: set, where: str) -> None:
    if not isinstance(mapping, Mapping):
        raise ValueError(f"{where} must be a dict; got {type(mapping).__name__}.")
    missing = sorted(required - set(mapping))
    unknown = sorted(set(mapping) - required - optional)
    if missing:
        raise ValueError(f"{where} is missing key(s) {missing}.")
    if unknown:
        raise ValueError(
            f"{where} has unknown key(s) {unknown}; allowed: {sorted(required | optional)}."
        )


def _column_from_dict(entry, position: int):
    where = f"columns[{position}]"
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where} must be a dict; got {type(entry).__name__}.")
    kind = entry.get("type")
    if kind not in _COLUMN_TYPES:
        raise ValueError(
            f"{where} 'type' must be one of {sorted(_COLUMN_TYPES)}; got {kind!r}."
        )
    required, optional = _COLUMN_KEYS[kind]
    _check_keys(entry, required, optional, where)
    fields = {key: value for key, value in entry.items() if key != "type"}
    try:
        return _COLUMN_TYPES[kind](**fields)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
