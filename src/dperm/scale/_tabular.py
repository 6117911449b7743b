"""Read a directory of Parquet or CSV files lazily and encode it with a public schema.

The Dask counterpart of the in-memory ``dperm train`` path: the same
:class:`~dperm.tabular.TabularSpec` encodes each partition on a worker
(a per-record step) and the labels go through the same
:func:`~dperm.tabular.parse_labels`, so both paths apply one
missing-value rule and never drop a row: a missing numeric cell takes its
column's public ``fill`` or the input is refused, a missing categorical cell
is its own public category or the all-zero block, and a missing label is an
error. n is the number of rows in the files, the same for neighbouring
datasets (one entry replaced; Chaudhuri et al. 2011, Sec. 2.3, Def. 2), as
every calibration assumes.

:func:`lazy_design` runs one validation pass before it returns, so a bad cell
is refused, with its file, column and row named, before a fit spends any
budget; that pass also fixes the row count of every partition. The schema must
be entirely public: reading bounds or categories from the data would be an
extra, unaccounted pass, so a column without a public bound is an error here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dperm.tabular import TableCellError, build_spec, parse_labels


def _table_files(path):
    """The Parquet or CSV files under ``path`` (a file, a directory, or a glob)."""
    path = Path(path)
    if path.is_dir():
        parquet = sorted(path.glob("*.parquet"))
        csv = sorted(path.glob("*.csv"))
        if parquet and csv:
            raise ValueError(f"{path} holds both Parquet and CSV files; keep one format.")
        files = parquet or csv
        if not files:
            raise ValueError(f"{path} holds no *.parquet or *.csv file.")
        return files, "parquet" if parquet else "csv"
    if path.exists():
        return [path], "parquet" if path.suffix == ".parquet" else "csv"
    raise FileNotFoundError(f"no such file or directory: {path}")


def _read_file(path, kind, blocksize="64MB"):
    """A lazy Dask DataFrame over one Parquet or CSV file.

    CSV cells are read as strings exactly as
    :func:`dperm.tabular.read_csv_columns` reads them in memory: no
    pandas NA conversion (``"NA"`` stays text and an empty cell stays ``""``),
    blank lines skipped, every other line a row.
    """
    import dask.dataframe as dd

    if kind == "parquet":
        return dd.read_parquet(str(path))
    return dd.read_csv(str(path), dtype=str, blocksize=blocksize, skipinitialspace=True,
                       na_filter=False)


def _partition_columns(frame):
    """Raw columns of one partition; every missing cell (NaN, None, pd.NA) as None or NaN."""
    columns = {}
    for name in frame.columns:
        series = frame[name]
        if isinstance(series.dtype, np.dtype) and series.dtype.kind in "fiub":
            columns[name] = series.to_numpy()
        else:
            columns[name] = series.to_numpy(dtype=object, na_value=None)
    return columns


def _check_partition(frame, spec, target):
    """``(n_rows, first TableCellError or None)`` of one partition, without encoding it."""
    columns = _partition_columns(frame)
    try:
        n_rows = spec.validate(columns)
        parse_labels(columns[target], target)
    except TableCellError as error:
        return len(frame), error
    return n_rows, None


def _encode_partition(frame, spec, target):
    """Encode one partition: ``(X, y)``, one row per input row."""
    columns = _partition_columns(frame)
    return spec.transform(columns), parse_labels(columns[target], target)


#: Bytes a CSV cell read as text takes in a worker (a short Python str), in float64 values:
#: the partition rule counts such a cell as this many columns.
_TEXT_CELL_VALUES = 8


def _partition_sizes(files, kind, columns, width, scheduler, blocksize):
    """``(rows per Parquet partition, CSV blocksize)`` by the partition rule.

    With a ``distributed.Client`` whose workers have a memory limit, the rule of
    :mod:`dperm.scale._partitions` for the wider of the columns read and the encoded
    row (``width``); a CSV cell is text, counted as :data:`_TEXT_CELL_VALUES` values.
    Otherwise (Dask's local schedulers) one partition per Parquet row group and the
    given CSV ``blocksize``, as before.
    """
    from dask.utils import parse_bytes

    from dperm.scale._partitions import cluster_memory, csv_blocksize, partition_rows

    blocksize = parse_bytes(blocksize) if isinstance(blocksize, str) else int(blocksize)
    client = None if scheduler is None or isinstance(scheduler, str) else scheduler
    if client is None:
        if kind != "parquet":
            return None, blocksize
        import pyarrow.parquet as pq

        groups = [pq.ParquetFile(f).metadata for f in files]
        largest = max((m.row_group(g).num_rows for m in groups for g in range(m.num_row_groups)),
                      default=1)
        return max(largest, 1), blocksize
    memory_limit, threads = cluster_memory(client)
    if kind == "parquet":
        return partition_rows(memory_limit, max(len(columns), width), threads), blocksize
    rows = partition_rows(memory_limit, max(len(columns) * _TEXT_CELL_VALUES, width), threads)
    return None, min(blocksize, csv_blocksize(rows, len(columns)))


def _file_partitions(files, kind, columns, blocksize, parquet_rows=None):
    """``[(file, delayed partition), ...]`` in file and row order, ``columns`` selected."""
    from dperm.scale._partitions import read_parquet

    parts = []
    for file in files:
        if kind == "parquet" and parquet_rows is not None:
            frame = read_parquet(file, columns, rows_per_partition=parquet_rows)
            parts += [(file, partition) for partition in frame.to_delayed()]
            continue
        frame = _read_file(file, kind, blocksize)
        absent = [c for c in columns if c not in {str(name) for name in frame.columns}]
        if absent:
            raise ValueError(f"{file} lacks the column(s) {absent}; every file needs the "
                             f"columns {columns}.")
        parts += [(file, partition) for partition in frame[columns].to_delayed()]
    return parts


def _validated_sizes(parts, spec, target, scheduler):
    """Row count of every partition, after one pass that checks every cell.

    Raises the first :class:`TableCellError` in file and row order, with the
    file named and the row counted within the file.
    """
    from dask import delayed

    from dperm.scale._cluster import dask_scheduler

    checks = delayed(list)([delayed(_check_partition, pure=True)(part, spec, target)
                            for _, part in parts])
    with dask_scheduler(scheduler) as runner:
        reports = runner._compute(checks)
    first_row, sizes = {}, []
    for (file, _), (n_rows, error) in zip(parts, reports):
        if error is not None:
            raise error.located(file, first_row.get(file, 0))
        first_row[file] = first_row.get(file, 0) + n_rows
        sizes.append(int(n_rows))
    return sizes


def lazy_design(path, target, features=None, categorical=(), public_bounds=None,
                row_norm_mode="scale", data_norm=1.0, scheduler=None, blocksize="64MB",
                numeric_range="unit"):
    """Lazy ``(X, y, spec)`` for a private fit of the table at ``path``.

    One validation pass reads every partition before this returns (no
    encoding, nothing kept): a missing numeric cell without a public fill, a
    numeric cell that is not a number, or a missing label raises
    :class:`~dperm.tabular.TableCellError` naming the file, column and
    row, before any budget is spent. No row is ever dropped, so ``X`` has one
    row per row of the files.

    Parameters
    ----------
    path : str or Path
        A Parquet or CSV file, or a directory of them (one format).
    target : str
        Label column.
    features : sequence of str, optional
        Feature columns (default: every other column).
    categorical : sequence of str
        Feature columns to one-hot encode.
    public_bounds : dict
        Public schema for every feature (see :func:`dperm.tabular.build_spec`),
        with the optional public ``fill`` of a numeric column; required, since
        bounds read from the data are not allowed at scale.
    row_norm_mode, data_norm, numeric_range
        As in :class:`~dperm.tabular.TabularSpec`.
    scheduler : None, str or distributed.Client
        Where the validation pass runs, as the estimators' ``scheduler``.
    blocksize : str or int, default="64MB"
        CSV bytes per partition; with a ``distributed.Client`` at most what the
        partition rule allows (``docs/dask.md``), and Parquet row groups larger than
        the rule are cut into pieces (:func:`dperm.scale.read_parquet`).

    Returns
    -------
    X : dask.array.Array of shape (n, d), row chunks of known size
    y : dask.array.Array of shape (n,)
    spec : TabularSpec
    """
    import dask.array as da
    from dask import delayed

    files, kind = _table_files(path)
    names = [str(c) for c in _read_file(files[0], kind, blocksize).columns]
    if target not in names:
        raise ValueError(f"target column {target!r} is not in {path}; columns are {names}.")
    features = list(features) if features else [c for c in names if c != target]
    unknown = sorted(set(features) - set(names))
    if unknown:
        raise ValueError(f"feature columns {unknown} are not in {path}; columns are {names}.")
    bounds = dict(public_bounds or {})
    unbounded = [c for c in features if c not in bounds]
    if unbounded:
        raise ValueError(
            f"with --engine dask every feature needs a public bound (numeric) or category "
            f"list (categorical) in --bounds; missing: {unbounded}. Reading them from the "
            "data would be an unaccounted pass over it."
        )
    empty = {name: np.array([], dtype=str) for name in names}
    spec, _ = build_spec(empty, features, categorical=categorical, public_bounds=bounds,
                         row_norm_mode=row_norm_mode, data_norm=data_norm,
                         numeric_range=numeric_range)
    parquet_rows, blocksize = _partition_sizes(files, kind, features + [target],
                                               spec.n_features + 1, scheduler, blocksize)
    parts = _file_partitions(files, kind, features + [target], blocksize, parquet_rows)
    sizes = _validated_sizes(parts, spec, target, scheduler)
    xs, ys = [], []
    for (_, partition), n_rows in zip(parts, sizes):
        encoded = delayed(_encode_partition, nout=2)(partition, spec, target)
        xs.append(da.from_delayed(encoded[0], shape=(n_rows, spec.n_features), dtype=float))
        ys.append(da.from_delayed(encoded[1], shape=(n_rows,), dtype=object))
    return da.concatenate(xs, axis=0), da.concatenate(ys, axis=0), spec
