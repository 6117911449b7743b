"""The one CSV reader: a file with a header row into string columns, each row with its line number."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


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
