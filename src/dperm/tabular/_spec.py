"""The public schema of a whole table, :class:`TabularSpec`: raw columns in, encoded rows out."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dperm.preprocessing import normalize_rows, warn_clipped_values
from dperm.tabular._cells import TableCellError, _as_1d, _as_stripped_str
from dperm.tabular._columns import (
    _NUMERIC_KINDS,
    CategoricalColumn,
    NumericColumn,
    RawNumericColumn,
    _check_keys,
    _column_from_dict,
)
from dperm.tabular._csv import CsvColumns
from dperm.validation import check_positive, clip_rows_to_norm, warn_clipped_rows

#: Row steps of :class:`TabularSpec`; "constant" divides by the schema's worst-case norm.
TABULAR_ROW_NORM_MODES = ("clip", "scale", "constant")

#: Where a :class:`TabularSpec` maps a bounded numeric column: "unit" is [0, 1], "centred"
#: is [-1, 1] (the public bounds' midpoint goes to 0; see
#: :func:`dperm.preprocessing.make_private_pipeline` for the measurement behind it).
_NUMERIC_RANGES = ("unit", "centred")

_SPEC_KEYS = ({"columns"}, {"row_norm_mode", "data_norm", "numeric_range", "format", "version"})
_SPEC_FORMAT = "dperm.TabularSpec"
_SPEC_VERSION = 1


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
