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

One job per module: ``_cells`` (the cell parser and the missing-value rule),
``_columns`` (the column kinds), ``_spec`` (:class:`TabularSpec`), ``_csv``
(the CSV reader) and ``_bounds`` (a schema from a bounds file).
"""

from dperm.tabular._bounds import BoundsFile, build_spec, read_bounds_file
from dperm.tabular._cells import TableCellError, find_missing_rows, finite_numbers, parse_labels, parse_numbers
from dperm.tabular._columns import CategoricalColumn, NumericColumn, RawNumericColumn
from dperm.tabular._csv import CsvColumns, read_csv_columns
from dperm.tabular._spec import TABULAR_ROW_NORM_MODES, TabularSpec

__all__ = [
    "BoundsFile",
    "CategoricalColumn",
    "CsvColumns",
    "NumericColumn",
    "RawNumericColumn",
    "TABULAR_ROW_NORM_MODES",
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
