"""The public schema of a table and the CSV reader: raw columns in, encoded rows out.

* :class:`TabularSpec` (of :class:`NumericColumn`, :class:`CategoricalColumn`
  and :class:`RawNumericColumn`) holds every constant an encoding uses --
  bounds, categories, transforms, the row step -- as public input,
  JSON-serialisable; :func:`build_spec` makes one from a bounds file;
* :func:`read_csv_columns` reads a CSV file into string columns, and
  :func:`parse_numbers` is dperm's one parser of numeric cells;
* :func:`parse_labels` reads a label column.

No row is ever dropped (n is public, Chaudhuri et al. 2011, Sec. 2.3): a cell
that cannot be encoded refuses the whole input with a one-line
:class:`TableCellError` naming the file, column and row. The missing-value
rule and the reasons are in ``docs/design/tabular.md``.
"""

from __future__ import annotations

import csv
import json
import math
import numbers
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dperm.exceptions import PrivacyLeakWarning
from dperm.preprocessing import (
    clip_to_bounds,
    join_feature_category,
    normalize_rows,
    scale_to_unit_interval,
    warn_clipped_values,
)
from dperm.validation import check_positive, clip_rows_to_norm, warn_clipped_rows

__all__ = [
    "BoundsFile",
    "CategoricalColumn",
    "CsvColumns",
    "NumericColumn",
    "RawNumericColumn",
    "TableCellError",
    "TabularSpec",
    "build_spec",
    "find_missing_rows",
    "finite_numbers",
    "parse_labels",
    "parse_numbers",
    "read_bounds_file",
    "read_csv_columns",
]

#: Cell values that mean "missing" in text input (UCI files write ``?``, R and
#: pandas ``NA``); NaN, None and a numeric cell that parses to NaN (``"nan"``)
#: are missing too.
_MISSING_VALUES = ("?", "", "NA", "N/A")


class TableCellError(ValueError):
    """A cell that cannot be encoded: a missing value without a public fill, or not a number.

    The message is one line naming the file (when known), the column and the
    row, and saying what to do. The whole input is refused: dperm never drops
    a row, because n is a public input of every calibration.

    Parameters
    ----------
    column : str
    row : int
        0-based index of the row among the rows given; the message counts data
        rows from 1 (a header is not counted).
    problem, remedy : str
        What is wrong with the cell, and what to do about it.
    source : str, optional
        The file the rows come from.
    line : int, optional
        The row's line number in that file (1-based, the header is line 1 of
        a file without blank lines); named instead of the data row when known.
    """

    def __init__(self, column: str, row: int, problem: str, remedy: str, source=None, line=None):
        super().__init__(column, row, problem, remedy, source)
        self.column, self.row, self.problem, self.remedy = column, int(row), problem, remedy
        self.source = None if source is None else str(source)
        self.line = None if line is None else int(line)

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        if self.line is not None:
            return f"{where}line {self.line}, column {self.column!r}: {self.problem}; {self.remedy}"
        return (f"{where}column {self.column!r}, data row {self.row + 1} (1-based, header not "
                f"counted): {self.problem}; {self.remedy}")

    def located(self, source, first_row: int = 0) -> TableCellError:
        """The same error in ``source``, whose first given row is data row ``first_row``."""
        return TableCellError(self.column, self.row + first_row, self.problem, self.remedy, source,
                              self.line)

    def on_lines(self, columns, source=None) -> TableCellError:
        """The same error naming the file's line, if ``columns`` came from :func:`read_csv_columns`."""
        lines = getattr(columns, "line_numbers", None)
        line = None if lines is None or not 0 <= self.row < len(lines) else lines[self.row]
        return TableCellError(self.column, self.row, self.problem, self.remedy,
                              self.source if source is None else source, line)


class CsvColumns(dict):
    """``{column name: ndarray of str}`` read from a CSV file, with each row's line number.

    Attributes
    ----------
    line_numbers : list of int
        The 1-based line of the file each data row starts on, so an error
        names the line a user sees in an editor even after skipped blank lines.
    """

    def __init__(self, columns, line_numbers):
        super().__init__(columns)
        self.line_numbers = list(line_numbers)


#: Row steps of :class:`TabularSpec`; "constant" divides by the schema's worst-case norm.
TABULAR_ROW_NORM_MODES = ("clip", "scale", "constant")

#: Where a :class:`TabularSpec` maps a bounded numeric column: "unit" is [0, 1], "centred"
#: is [-1, 1] (the public bounds' midpoint goes to 0; see
#: :func:`dperm.preprocessing.make_private_pipeline` for the measurement behind it).
_NUMERIC_RANGES = ("unit", "centred")

#: Public per-record transforms a numeric column may apply before scaling.
_NUMERIC_TRANSFORMS = {"log1p": np.log1p}


# --------------------------------------------------------------------------------------
# Public table schema
# --------------------------------------------------------------------------------------


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
_SPEC_KEYS = ({"columns"}, {"row_norm_mode", "data_norm", "numeric_range", "format", "version"})
_SPEC_FORMAT = "dperm.TabularSpec"
_SPEC_VERSION = 1


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


@dataclass(frozen=True)
class TabularSpec:
    """The public schema of a table: how to encode raw columns without leaking.

    Every constant the encoding uses (bounds, categories, transforms, the row
    step and its norm) is stored here and must be chosen without looking at the
    private data; applying the spec is then a per-record transformation. It
    reproduces the preprocessing of Chaudhuri et al. (2011), Sec. 7.1, with the
    data-dependent column maxima replaced by public bounds (paper
    note 9).

    Parameters
    ----------
    columns : sequence of NumericColumn, CategoricalColumn or RawNumericColumn
        Output order of the encoded blocks.
    row_norm_mode : {"clip", "scale", "constant"}, default="clip"
        The per-record row step after the columns are encoded:
        ``"clip"`` scales rows longer than ``data_norm`` onto it;
        ``"scale"`` maps every nonzero row to norm exactly ``data_norm``;
        ``"constant"`` multiplies every row by ``data_norm / max_row_norm()``,
        the worst-case norm the schema allows (each numeric column contributes
        at most 1 and each categorical block at most 1 to the squared norm), so
        every row has norm at most ``data_norm``. A spec with a
        :class:`RawNumericColumn` has no finite worst-case norm and refuses
        ``"constant"``.
    data_norm : float, default=1.0
        Public bound on the row norm.
    numeric_range : {"unit", "centred"}, default="unit"
        Where a :class:`NumericColumn` is mapped: ``[0, 1]``, or ``[-1, 1]``
        (``2 u - 1``), which centres the public range on 0. Either way a
        numeric feature contributes at most 1 to the squared row norm.

    Notes
    -----
    Missing values: the spec never drops a row, so the encoded output has
    exactly one row per input row and n is the same for neighbouring
    datasets. A missing numeric cell takes the column's public ``fill``
    (:class:`NumericColumn`) or raises :class:`TableCellError`; a missing
    categorical cell is its own category if the public list names it, else
    the all-zero block (:class:`CategoricalColumn`). ``dperm train`` and the
    Dask reader both encode through :meth:`transform`, so they agree.

    Examples
    --------
    >>> from dperm.tabular import CategoricalColumn, NumericColumn, TabularSpec
    >>> spec = TabularSpec(
    ...     [NumericColumn("age", 17, 90), CategoricalColumn("sex", ["Female", "Male"])],
    ...     row_norm_mode="constant",
    ... )
    >>> spec.feature_names()
    ['age', 'sex=Female', 'sex=Male']
    >>> spec.transform({"age": ["53.5"], "sex": ["Male"]}).round(4).tolist()
    [[0.3536, 0.0, 0.7071]]
    """

    columns: tuple
    row_norm_mode: str = "clip"
    data_norm: float = 1.0
    numeric_range: str = "unit"
    _names: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if isinstance(self.columns, (str, bytes)) or not isinstance(self.columns, Sequence):
            raise ValueError(f"columns must be a list of column specs; got {self.columns!r}.")
        columns = tuple(self.columns)
        if not columns:
            raise ValueError("columns must list at least one column.")
        for position, column in enumerate(columns):
            if not isinstance(column, (NumericColumn, CategoricalColumn, RawNumericColumn)):
                raise ValueError(
                    f"columns[{position}] must be a NumericColumn, CategoricalColumn or "
                    f"RawNumericColumn; got {column!r}."
                )
        names = tuple(column.name for column in columns)
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"column names must be unique; duplicated: {duplicates}.")
        if self.row_norm_mode not in TABULAR_ROW_NORM_MODES:
            raise ValueError(
                f"row_norm_mode must be one of {TABULAR_ROW_NORM_MODES}; "
                f"got {self.row_norm_mode!r}."
            )
        raw = [column.name for column in columns if isinstance(column, RawNumericColumn)]
        if self.row_norm_mode == "constant" and raw:
            raise ValueError(
                f"row_norm_mode 'constant' needs a bound on every column, and {raw} have none "
                "(RawNumericColumn); use row_norm_mode 'clip' or 'scale', or give the columns "
                "public bounds (NumericColumn)."
            )
        data_norm = check_positive(
            self.data_norm, "data_norm", hint="It is a public bound on the row norm."
        )
        if self.numeric_range not in _NUMERIC_RANGES:
            raise ValueError(f"numeric_range must be one of {_NUMERIC_RANGES}; got "
                             f"{self.numeric_range!r}.")
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "data_norm", data_norm)
        object.__setattr__(self, "_names", names)

    # ---- description ------------------------------------------------------------------

    @property
    def column_names(self) -> list[str]:
        """Input column names, in spec order."""
        return list(self._names)

    @property
    def n_features(self) -> int:
        """Width of the encoded output."""
        return sum(column.n_features for column in self.columns)

    def feature_names(self) -> list[str]:
        """Names of the encoded features: ``"age"``, ``"workclass=Private"``, ..."""
        return [name for column in self.columns for name in column.feature_names()]

    def max_row_norm(self) -> float:
        """Worst-case L2 norm of an encoded row before the row step.

        Each numeric feature lies in [0, 1] (or [-1, 1]) and each one-hot block has at most
        one 1, so the squared norm is at most the number of columns; a
        :class:`RawNumericColumn` is unbounded, and the norm then infinite.
        """
        if any(isinstance(column, RawNumericColumn) for column in self.columns):
            return math.inf
        return math.sqrt(len(self.columns))

    # ---- serialisation ----------------------------------------------------------------

    def to_dict(self) -> dict:
        """A JSON-serialisable dict; :meth:`from_dict` inverts it."""
        spec = {
            "format": _SPEC_FORMAT,
            "version": _SPEC_VERSION,
            "columns": [column.to_dict() for column in self.columns],
            "row_norm_mode": self.row_norm_mode,
            "data_norm": self.data_norm,
        }
        if self.numeric_range != "unit":  # files of the default stay as older dperm wrote them
            spec["numeric_range"] = self.numeric_range
        return spec

    @classmethod
    def from_dict(cls, spec: Mapping) -> TabularSpec:
        """Build and validate a spec from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            Naming the malformed entry (missing or unknown key, bad type, bad
            bounds, duplicate names or categories).
        """
        _check_keys(spec, *_SPEC_KEYS, "TabularSpec dict")
        if spec.get("format", _SPEC_FORMAT) != _SPEC_FORMAT:
            raise ValueError(f"format must be {_SPEC_FORMAT!r}; got {spec['format']!r}.")
        if spec.get("version", _SPEC_VERSION) != _SPEC_VERSION:
            raise ValueError(
                f"version {spec['version']!r} is not supported (this dperm reads "
                f"version {_SPEC_VERSION})."
            )
        entries = spec["columns"]
        if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Sequence):
            raise ValueError(f"'columns' must be a list of column dicts; got {entries!r}.")
        columns = [_column_from_dict(entry, i) for i, entry in enumerate(entries)]
        return cls(
            columns,
            row_norm_mode=spec.get("row_norm_mode", "clip"),
            data_norm=spec.get("data_norm", 1.0),
            numeric_range=spec.get("numeric_range", "unit"),
        )

    def to_json(self, **kwargs) -> str:
        """The spec as a JSON string (keyword arguments go to :func:`json.dumps`)."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str) -> TabularSpec:
        """Parse :meth:`to_json` output; malformed JSON raises ValueError."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"TabularSpec JSON could not be parsed: {error}.") from None
        return cls.from_dict(data)

    # ---- encoding ---------------------------------------------------------------------

    def transform(self, columns: Mapping, *, source=None, warn: bool = True) -> np.ndarray:
        """Encode raw columns into an ``(n_rows, n_features)`` float array, one row per input row.

        Parameters
        ----------
        columns : dict of str to 1-D array-like
            Raw values by column name (for example from :func:`read_csv_columns`);
            extra columns, such as a label, are ignored. Numbers may be given as
            strings.
        source : str or os.PathLike, optional
            The file the columns come from, named in error messages.
        warn : bool, default=True
            Warn about clipped values and rows. ``dperm predict`` passes False:
            clipping is reported once, when the model is fitted, never at
            prediction.

        Returns
        -------
        X : ndarray of shape (n_rows, n_features)
            No row is ever dropped; missing values follow the class's rule.

        Raises
        ------
        TableCellError
            A missing numeric cell in a column without a public ``fill``, or a
            numeric cell that is not a number (file, column and row named).

        Warns
        -----
        DataClippingWarning
            When a value was outside its column's public bounds, or a row longer
            than ``data_norm`` was clipped.
        """
        raw = self._raw_columns(columns, source)
        X, n_clipped = self._encode_columns(self._parsed(raw, source))
        if warn:
            warn_clipped_values(n_clipped, self.column_names, X.shape[0])
        return self._row_step(X, warn)

    def validate(self, columns: Mapping, *, source=None) -> int:
        """Check that :meth:`transform` can encode ``columns``, without encoding them.

        The same checks as :meth:`transform` (columns present, equal lengths,
        numeric cells numbers or publicly filled) and no warnings; the Dask
        reader runs it over every partition before a fit spends any budget.

        Returns
        -------
        n_rows : int

        Raises
        ------
        TableCellError, ValueError
            As :meth:`transform`.
        """
        raw = self._raw_columns(columns, source)
        self._parsed(raw, source)
        return next(iter(raw.values())).shape[0]

    def _parsed(self, raw: dict, source) -> dict:
        """``raw`` with every numeric column parsed to floats (public fill applied)."""
        parsed = dict(raw)
        try:
            for column in self.columns:
                if isinstance(column, _NUMERIC_KINDS):
                    parsed[column.name] = column.parse(raw[column.name])
        except TableCellError as error:
            raise error.located(source).on_lines(raw) from None
        return parsed

    def _raw_columns(self, columns: Mapping, source=None) -> dict:
        if not isinstance(columns, Mapping):
            raise ValueError(
                "TabularSpec.transform expects a dict of column name -> 1-D values; "
                f"got {type(columns).__name__}."
            )
        absent = [name for name in self._names if name not in columns]
        if absent:
            where = f"{source}: " if source is not None else ""
            raise ValueError(
                f"{where}input is missing column(s) {absent} required by the spec; it has "
                f"{sorted(map(str, columns))}."
            )
        raw = {name: _as_1d(columns[name], name) for name in self._names}
        if isinstance(columns, CsvColumns):
            raw = CsvColumns(raw, columns.line_numbers)
        lengths = {name: values.shape[0] for name, values in raw.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"columns must all have the same length; got {lengths}.")
        return raw

    def _encode_columns(self, parsed: dict):
        n_rows = next(iter(parsed.values())).shape[0]
        X = np.empty((n_rows, self.n_features))
        n_clipped = np.zeros(len(self.columns), dtype=np.int64)
        start = 0
        for position, column in enumerate(self.columns):
            stop = start + column.n_features
            values = parsed[column.name]
            if isinstance(column, _NUMERIC_KINDS):
                X[:, start], n_clipped[position] = column.encode(values)
                if self.numeric_range == "centred" and isinstance(column, NumericColumn):
                    X[:, start] = 2.0 * X[:, start] - 1.0
            else:
                X[:, start:stop] = column.encode(_as_stripped_str(values))
            start = stop
        return X, n_clipped

    def _row_step(self, X: np.ndarray, warn: bool = True) -> np.ndarray:
        if self.row_norm_mode == "constant":
            # Worst-case constant (003 Sec. 7.1 row normalisation without data):
            # x * R / sqrt(#columns); a safety clip absorbs rounding.
            X = X * (self.data_norm / self.max_row_norm())
            return clip_rows_to_norm(X, self.data_norm)[0]
        X, n_clipped = normalize_rows(X, self.data_norm, self.row_norm_mode)
        if warn:
            warn_clipped_rows(n_clipped, self.data_norm)
        return X


# --------------------------------------------------------------------------------------
# Raw column helpers (no pandas)
# --------------------------------------------------------------------------------------


def _as_1d(values, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"column {name!r} must be 1-D; got shape {array.shape}.")
    return array


def _is_missing_scalar(value) -> bool:
    """None or a float NaN: how Parquet and pandas hold a missing cell."""
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))


def _as_stripped_str(values: np.ndarray) -> np.ndarray:
    """Stripped strings; a missing cell (None, NaN) becomes the empty string, as in a CSV file."""
    if values.dtype.kind == "U":
        return np.char.strip(values)
    return np.array(
        ["" if _is_missing_scalar(value) else str(value).strip() for value in values], dtype=str
    )


def _missing_in(values: np.ndarray, missing_values) -> np.ndarray:
    """Boolean mask of missing cells in one column (text markers or NaN/None)."""
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind in "iub":
        return np.zeros(values.shape[0], dtype=bool)
    if values.dtype.kind == "U":
        return np.isin(np.char.strip(values), list(missing_values))
    return np.array(
        [
            _is_missing_scalar(value)
            or (isinstance(value, str) and value.strip() in missing_values)
            for value in values
        ],
        dtype=bool,
    )


def find_missing_rows(columns: Mapping, names=None, missing_values=_MISSING_VALUES) -> np.ndarray:
    """Mask of rows with a missing value in any of the named columns.

    Not for private data: removing a record because of its own values makes n
    differ between neighbouring datasets, while every calibration treats n as
    public, so dperm's training paths (``dperm train``, the Dask reader,
    :class:`TabularSpec`) never do it. It serves a fixed public preprocessing
    of a published dataset, such as :func:`dperm.datasets.load_adult`
    following Chaudhuri et al. (2011), Sec. 7.1 ("we removed all entries with
    missing values") on the checksummed UCI files: the rows kept are then a
    public dataset and its n a public constant.

    Parameters
    ----------
    columns : dict of str to 1-D array-like
    names : iterable of str, optional
        Columns to check; default all.
    missing_values : tuple of str, default=_MISSING_VALUES
        Text cells that mean "missing" (after stripping whitespace). NaN and
        None are always missing.

    Returns
    -------
    missing : ndarray of bool, shape (n_rows,)
    """
    names = list(columns) if names is None else list(names)
    if not names:
        raise ValueError("find_missing_rows needs at least one column.")
    masks = [_missing_in(_as_1d(columns[name], name), missing_values) for name in names]
    return np.logical_or.reduce(masks)


#: What to do about a numeric cell that is not a number, when the caller says nothing else.
_NOT_A_NUMBER_REMEDY = ("a numeric column holds numbers only; fix the cell, or list the column "
                       "with --categorical and give its public categories")


def parse_numbers(values, column: str, *, source=None, remedy: str = _NOT_A_NUMBER_REMEDY):
    """Floats of a numeric column and the mask of its missing cells: dperm's one cell parser.

    A cell is missing if it is a :data:`_MISSING_VALUES` marker, None, NaN, or
    text that parses to NaN (``"nan"``); missing cells are NaN in the floats.
    Every row is kept; what a missing cell becomes is the caller's rule.

    Parameters
    ----------
    values : 1-D array-like
        The raw cells (strings from :func:`read_csv_columns`, or a Parquet column).
    column : str
        Its name, for the error message.
    source : str or os.PathLike, optional
        The file, for the error message.
    remedy : str, optional
        What the message tells the user to do about a cell that is not a number.

    Returns
    -------
    numbers : ndarray of float64, shape (n_rows,)
    missing : ndarray of bool, shape (n_rows,)

    Raises
    ------
    TableCellError
        At the first cell that is neither missing nor a number (file, column, row).
    """
    try:  # no cell is a text marker: one conversion (the common case)
        numbers = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        numbers = _numbers_with_markers(_as_1d(values, column), column, remedy, source)
    numbers = _as_1d(numbers, column)
    return numbers, np.isnan(numbers)


def _numbers_with_markers(cells: np.ndarray, column: str, remedy: str, source) -> np.ndarray:
    """Floats of ``cells`` with every missing cell (a marker, None, NaN) as NaN."""
    missing = _missing_in(cells, _MISSING_VALUES)
    if missing.any():
        cells = cells.astype(object)
        cells[missing] = math.nan
    try:
        return cells.astype(np.float64)
    except (TypeError, ValueError):
        raise _first_non_number(cells, column, remedy, source) from None


def finite_numbers(values, column: str, *, source=None, remedy: str = "fix the cell") -> np.ndarray:
    """Floats of a numeric column that has no public fill: every cell a finite number.

    The reader of :class:`RawNumericColumn` (the multiparty shards and rows
    to predict, :mod:`dperm.multiparty.model_file`) and of the KDD Cup files
    (:mod:`dperm.datasets`): :func:`parse_numbers` with a missing or
    non-finite cell refused instead of passed on.

    Parameters
    ----------
    values, column, source, remedy
        As in :func:`parse_numbers`; ``remedy`` also ends the message about a
        missing or non-finite cell.

    Returns
    -------
    numbers : ndarray of float64, shape (n_rows,)

    Raises
    ------
    TableCellError
        At the first cell that is missing, not a number, or infinite.
    """
    numbers, missing = parse_numbers(values, column, source=source, remedy=remedy)
    if missing.any():
        raise TableCellError(column, int(np.argmax(missing)), "the value is missing", remedy, source)
    _refuse_infinite(values, numbers, column, remedy=remedy, source=source)
    return numbers


#: What to do about an infinite cell of a column with public bounds (:class:`NumericColumn`).
_INFINITE_REMEDY = ("write a finite number (a value outside the public bounds is clipped to them, "
                   "but an infinite one is refused, as the Python estimators refuse it); dperm "
                   "never drops a row, since n is public")


def _refuse_infinite(values, numbers: np.ndarray, column: str, *, remedy: str,
                    source=None) -> None:
    """Refuse the first infinite cell of a parsed numeric column, naming what it holds.

    A cell such as ``inf``, ``-Infinity`` or ``1e400`` (beyond the largest
    float, so it parses to infinity) is an error, not a value to clip: the
    estimators' input checks refuse infinity too, and a bound would hide a
    cell that is almost surely a mistake. The error stops the run before
    anything is fitted or spent.

    Parameters
    ----------
    values : 1-D array-like
        The raw cells, quoted in the message.
    numbers : ndarray of float64
        Their floats, from :func:`parse_numbers`.
    column, remedy, source
        As in :class:`TableCellError`.

    Raises
    ------
    TableCellError
        At the first infinite cell.
    """
    infinite = np.isinf(numbers)
    if not infinite.any():
        return
    row = int(np.argmax(infinite))
    cell = _as_1d(values, column)[row:row + 1].tolist()[0]  # a Python scalar, any dtype
    problem = f"{cell!r} is not a finite number"
    if isinstance(cell, str) and "inf" not in cell.lower():
        problem += " (it is beyond the largest float, about 1.8e308, so it reads as infinity)"
    raise TableCellError(column, row, problem, remedy, source)


def _first_non_number(cells: np.ndarray, column: str, remedy: str, source) -> TableCellError:
    for row, value in enumerate(cells.tolist()):
        try:
            float(value)
        except (TypeError, ValueError):
            problem = f"{value!r} is not a number"
            if isinstance(value, str) and _DECIMAL_COMMA.match(value.strip()):
                problem += " (it looks like a decimal comma: write the number with a point, e.g. " \
                           f"{value.strip().replace(',', '.')})"
            if remedy == _NOT_A_NUMBER_REMEDY:
                remedy = (f"if {column!r} is categorical, pass --categorical {column} and list its "
                          "public categories in the --bounds file; else fix the cell")
            return TableCellError(column, row, problem, remedy, source)
    return TableCellError(column, 0, "the column could not be converted to float", remedy, source)


#: A number written with a decimal comma, such as ``1,5`` or ``-0,25``.
_DECIMAL_COMMA = re.compile(r"^[-+]?\d+,\d+$")


def parse_labels(values, column: str, *, source=None) -> np.ndarray:
    """Labels as stripped strings; a missing label is an error, never a class.

    Parameters
    ----------
    values : 1-D array-like
        The raw label column (strings from a CSV file, or a Parquet column).
    column : str
        Its name, for the error message.
    source : str or os.PathLike, optional
        The file, for the error message.

    Returns
    -------
    labels : ndarray of str, one per row

    Raises
    ------
    TableCellError
        At the first empty label, :data:`_MISSING_VALUES` marker (``"?"``),
        None or NaN. Neither dropping the row (n is public) nor treating the
        marker as a class (it would join the label set) is safe.
    """
    values = _as_1d(values, column)
    missing = _missing_in(values, _MISSING_VALUES)
    if missing.any():
        raise TableCellError(
            column, int(np.argmax(missing)),
            "the label is missing (an empty cell or a marker such as '?' is not a class)",
            "every row needs a label: fill it in the file; dperm never drops a row, since n "
            "is public", source,
        )
    return _as_stripped_str(values)


def read_csv_columns(path, *, delimiter: str = ",", encoding: str = "utf-8") -> dict:
    """Read a CSV file with a header row into ``{column name: ndarray of str}``.

    Every cell and header name is stripped of surrounding whitespace. A blank
    line (nothing but whitespace) is not a record and is skipped, as pandas
    and Dask skip it; any line with a delimiter is a record, even if all its
    cells are empty, so the number of rows never depends on which cells are
    missing. Values stay strings: :meth:`TabularSpec.transform` parses numeric
    columns and applies the missing-value rule (``"?"`` or empty cells).

    Parameters
    ----------
    path : str or os.PathLike
    delimiter : str, default=","
    encoding : str, default="utf-8"

    Returns
    -------
    columns : dict of str to ndarray of str

    Raises
    ------
    ValueError
        If the file has no header, a duplicated or empty column name, or a row
        whose number of fields differs from the header (the line is named).
    """
    with Path(path).open(newline="", encoding=encoding) as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        header = _read_header(reader, path, delimiter)
        rows, lines = [], []
        while True:
            line = reader.line_num + 1  # where the next record starts
            try:
                row = next(reader)
            except StopIteration:
                break
            if _is_blank_line(row):
                continue
            if len(row) != len(header):
                raise ValueError(
                    f"{path}: line {line} has {len(row)} field(s) but the header has "
                    f"{len(header)}; {_field_count_hint(row, header, delimiter)}"
                )
            rows.append([cell.strip() for cell in row])
            lines.append(line)
    if not rows:
        return CsvColumns({name: np.array([], dtype=str) for name in header}, [])
    return CsvColumns({name: np.array(values, dtype=str) for name, values in zip(header, zip(*rows))},
                      lines)


def _field_count_hint(row, header, delimiter) -> str:
    """What to do about a record with the wrong number of fields."""
    if delimiter == "," and len(row) > len(header) and any(
            cell.strip().isdigit() for cell in row):
        return ("a decimal comma (1,5) splits a number into two fields: write 1.5, or quote "
                "text that holds commas")
    return "every line needs one field per header column (quote text that holds the delimiter)"


def _is_blank_line(row: list) -> bool:
    """A line without a delimiter and without text: not a record."""
    return len(row) == 0 or (len(row) == 1 and not row[0].strip())


def _read_header(reader, path, delimiter=",") -> list[str]:
    for row in reader:
        if any(cell.strip() for cell in row):
            header = [cell.strip() for cell in row]
            break
    else:
        raise ValueError(f"{path}: the CSV file is empty; it needs a header row.")
    for other in (";", "\t"):
        if len(header) == 1 and other != delimiter and other in header[0]:
            name = "tab" if other == "\t" else repr(other)
            raise ValueError(
                f"{path}: the header is one column {header[0]!r}: the file looks {name}-"
                f"separated, and dperm reads {delimiter!r}-separated CSV; save it with "
                f"{delimiter!r} between fields (and a decimal point, not a comma).")
    if not all(header):
        raise ValueError(f"{path}: the header has an empty column name: {header!r}.")
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise ValueError(f"{path}: duplicated column name(s) in the header: {duplicates}.")
    return header


# --------------------------------------------------------------------------------------
# Building a schema for a CSV file (used by the command-line tool)
# --------------------------------------------------------------------------------------


class BoundsFile(dict):
    """The JSON object of a bounds file, with the file's name for error messages."""

    def __init__(self, bounds, path):
        super().__init__(bounds)
        self.path = str(path)


def read_bounds_file(path) -> dict:
    """The public schema in a bounds file: a JSON object, column -> bounds (see :func:`build_spec`).

    Returns
    -------
    bounds : BoundsFile
        A dict that remembers ``path``, so that :func:`build_spec` names the
        file in an error about one of its entries.

    Raises
    ------
    ValueError
        Naming the file, if it is missing, not UTF-8, not valid JSON or does
        not hold an object.
    """
    try:
        bounds = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"the bounds file {path} does not exist.") from None
    except UnicodeDecodeError:
        raise ValueError(f"the bounds file {path} is not UTF-8 text; it must hold a JSON "
                         "object: column -> bounds.") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"the bounds file {path} is not valid JSON ({error}); it must hold a "
                         "JSON object such as {\"age\": [0, 120]}.") from None
    if not isinstance(bounds, dict):
        raise ValueError(f"the bounds file {path} must hold a JSON object: column -> bounds.")
    return BoundsFile(bounds, path)


def build_spec(columns: Mapping, features, *, categorical=(), public_bounds=None,
               row_norm_mode: str = "clip", data_norm: float = 1.0,
               numeric_range: str = "unit", source=None):
    """Build a :class:`TabularSpec` from public bounds, falling back to the data with a warning.

    Parameters
    ----------
    columns : dict of str to 1-D array
        Raw columns (for example from :func:`read_csv_columns`).
    features : sequence of str
        Columns to encode, in order.
    categorical : sequence of str
        Feature columns to one-hot encode; the others are numeric.
    public_bounds : dict, optional
        Public schema: column -> ``[lower, upper]`` for a numeric column,
        ``{"lower": .., "upper": .., "transform": "log1p", "fill": ..}`` for a
        numeric column with a transform or a public fill value for missing
        cells (both keys optional; see :class:`NumericColumn`), or a list of
        category strings for a categorical column (list ``"?"`` or ``""`` to
        give missing cells their own category; see :class:`CategoricalColumn`).
    row_norm_mode, data_norm, numeric_range
        As in :class:`TabularSpec`.
    source : str or os.PathLike, optional
        The file ``columns`` came from, named in error messages.

    Returns
    -------
    spec : TabularSpec
    from_data : list of str
        Columns whose bounds or categories were read from the data. Those are
        outside the privacy guarantee; a :class:`PrivacyLeakWarning` names them.
    """
    where = f"the bounds file {public_bounds.path}" if isinstance(public_bounds, BoundsFile) \
        else "the bounds"
    public_bounds = {} if public_bounds is None else dict(public_bounds)
    unknown = sorted(set(public_bounds) - set(features))
    if unknown:
        raise ValueError(f"{where} names columns that are not features: {unknown}.")
    absent = [name for name in features if name not in columns]
    if absent:
        raise ValueError(f"feature column(s) {absent} are not in the data.")
    specs, from_data = [], []
    for name in features:
        is_categorical = name in categorical
        if name in public_bounds:
            try:
                specs.append(_column_from_public_bounds(name, public_bounds[name], is_categorical))
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            continue
        from_data.append(name)
        values = _as_stripped_str(_as_1d(columns[name], name))
        missing = _missing_in(values, _MISSING_VALUES)
        if is_categorical:
            specs.append(CategoricalColumn(name, tuple(sorted(set(values[~missing].tolist())))))
        else:
            try:  # the whole column, so an error names the cell's own row
                numbers, missing = parse_numbers(values, name, source=source)
                _refuse_infinite(values, numbers, name, remedy=_INFINITE_REMEDY, source=source)
            except TableCellError as error:
                raise error.on_lines(columns) from None
            numbers = numbers[~missing]
            if numbers.size == 0:
                raise ValueError(f"numeric column {name!r} has no value to read bounds from; "
                                 "give its public bounds in the bounds file.")
            lower, upper = float(numbers.min()), float(numbers.max())
            specs.append(NumericColumn(name, lower, upper if upper > lower else lower + 1.0))
    if from_data:
        warnings.warn(
            f"bounds or categories of {from_data} were taken from the private data; the "
            "privacy guarantee does not cover that step (paper note 9, docs/paper_notes.md). Give them "
            "as public input in a bounds file.",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    spec = TabularSpec(specs, row_norm_mode=row_norm_mode, data_norm=data_norm,
                       numeric_range=numeric_range)
    return spec, from_data


def _column_from_public_bounds(name, entry, is_categorical):
    if isinstance(entry, Mapping):
        _check_keys(entry, {"lower", "upper"}, {"transform", "fill"},
                    f"bounds of column {name!r}")
        return NumericColumn(name, entry["lower"], entry["upper"], entry.get("transform"),
                             entry.get("fill"))
    if isinstance(entry, Sequence) and not isinstance(entry, str):
        entry = list(entry)
        if entry and all(isinstance(value, str) for value in entry):
            return CategoricalColumn(name, tuple(entry))
        if is_categorical:
            raise ValueError(f"categorical column {name!r} needs a list of category strings; got {entry!r}.")
        if len(entry) == 2:
            return NumericColumn(name, entry[0], entry[1])
    raise ValueError(
        f"bounds of column {name!r} must be [lower, upper], an object with lower/upper"
        f"/transform/fill, or a list of category strings; got {entry!r}."
    )
