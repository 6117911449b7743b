"""Read a directory of Parquet or CSV files lazily and encode it with a public schema.

The Dask counterpart of the in-memory ``dperm train`` path: the same
:class:`~dperm.preprocessing.TabularSpec` encodes each partition on a worker
(a per-record step), rows with a missing value are dropped inside the
partition, and labels are stripped strings as in memory. The schema must be
entirely public: reading bounds or categories from the data would be an extra,
unaccounted pass, so a column without a public bound is an error here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dperm.preprocessing import build_spec


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


def read_table(path, blocksize="64MB"):
    """A lazy Dask DataFrame over the Parquet or CSV files at ``path``.

    CSV cells are read as strings, exactly as :func:`dperm.preprocessing.read_csv_columns`
    does in memory, so the schema parses them the same way.
    """
    import dask.dataframe as dd

    files, kind = _table_files(path)
    names = [str(f) for f in files]
    if kind == "parquet":
        return dd.read_parquet(names)
    return dd.read_csv(names, dtype=str, blocksize=blocksize, skipinitialspace=True)


def _encode_partition(frame, spec, target):
    """Encode one partition: ``(X, y)`` with rows that miss a value dropped."""
    columns = {name: frame[name].to_numpy() for name in frame.columns}
    X, kept = spec.transform_with_mask(columns, drop_missing=True)
    labels = np.asarray(frame[target].to_numpy(), dtype=str)[kept]
    return X, np.char.strip(labels)


def lazy_design(path, target, features=None, categorical=(), public_bounds=None,
                row_norm_mode="scale", data_norm=1.0):
    """Lazy ``(X, y, spec)`` for a private fit of the table at ``path``.

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
        Public schema for every feature (see :func:`dperm.preprocessing.build_spec`);
        required, since bounds read from the data are not allowed at scale.
    row_norm_mode, data_norm
        As in :class:`~dperm.preprocessing.TabularSpec`.

    Returns
    -------
    X : dask.array.Array of shape (n, d), row chunks of unknown size
    y : dask.array.Array of shape (n,)
    spec : TabularSpec
    """
    import dask.array as da
    from dask import delayed

    frame = read_table(path)
    names = [str(c) for c in frame.columns]
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
                         row_norm_mode=row_norm_mode, data_norm=data_norm)
    frame = frame[features + [target]]
    xs, ys = [], []
    for partition in frame.to_delayed():
        encoded = delayed(_encode_partition, nout=2)(partition, spec, target)
        xs.append(da.from_delayed(encoded[0], shape=(np.nan, spec.n_features), dtype=float))
        ys.append(da.from_delayed(encoded[1], shape=(np.nan,), dtype=object))
    return da.concatenate(xs, axis=0), da.concatenate(ys, axis=0), spec
