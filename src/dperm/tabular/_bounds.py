"""A schema for a CSV file from a bounds file (the command line's ``--bounds``), or from the data with a warning."""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from dperm.exceptions import PrivacyLeakWarning
from dperm.tabular._cells import (
    _INFINITE_REMEDY,
    _MISSING_VALUES,
    TableCellError,
    _as_1d,
    _as_stripped_str,
    _missing_in,
    _refuse_infinite,
    parse_numbers,
)
from dperm.tabular._columns import CategoricalColumn, NumericColumn, _check_keys
from dperm.tabular._spec import TabularSpec


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
