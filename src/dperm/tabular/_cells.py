"""The cells of a table: dperm's one parser of numeric cells and labels, and the missing-value rule.

A cell that cannot be read refuses the whole input with a one-line
:class:`TableCellError` naming the file, column and row: no row is ever
dropped (n is public, Chaudhuri et al. 2011, Sec. 2.3). The rule and the
reasons are in ``docs/design/tabular.md``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

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
