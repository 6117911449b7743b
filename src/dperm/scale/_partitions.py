"""How many rows a partition may hold on a worker, and readers that respect it.

Issue 31, finding 8: ``dd.read_parquet`` on one 3M-row Parquet file gave one
partition (or one per 1,048,576-row row group, about 1 GiB of float64 each with
122 features), larger than a 1 GiB worker, so a pass could not finish. The
rule below sizes partitions from public quantities only, and
:func:`read_parquet` / :func:`csv_blocksize` apply it.

The partition rule
------------------
A worker running a data pass holds its own baseline (:data:`WORKER_BASELINE`,
the process with its libraries and the Parquet reader's buffers) and, per chunk
in flight, up to :data:`CHUNK_COPIES` float64 copies of it (as read, the clipped
rows with the intercept feature, and transient copies while reading and
converting). Each of its ``threads_per_worker`` threads may run one chunk at a
time, and the whole may use :data:`MEMORY_SHARE` (60 %) of the worker's
``memory_limit`` (Dask pauses a worker at 80 % and restarts it at 95 %). So::

    rows_per_partition = floor((MEMORY_SHARE * memory_limit - WORKER_BASELINE)
                               / (threads_per_worker * CHUNK_COPIES * n_columns * 8))

with ``n_columns`` the columns read (features and label) and 8 bytes per value
(float64, the dtype every chunk is computed in, whatever the file's dtype). For
workers of 1 GiB, one thread each, and the 122 features + 1 label of the KDD
benchmark: 57,117 rows (0.05 GiB as float64) per partition.

Privacy: the rule reads the cluster's configuration, the file's schema (column
count and dtypes) and its row-group sizes from the Parquet footer, never a data
value. The partition sizes depend on n (public in every calibration dperm uses:
neighbouring data sets have the same n) and on how the file was written, and
they are not released: the model and its record do not depend on them beyond
floating-point summation order.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np

#: Share of a worker's memory limit the worker may use during a pass (Dask pauses a worker
#: at 80 % and restarts it at 95 %).
MEMORY_SHARE = 0.6
#: Bytes a worker uses before it holds any chunk: the Python process with dask, pandas,
#: pyarrow, scikit-learn and dperm imported (about 0.25 GiB measured) and the Parquet
#: reader's own buffers and allocator caches (about 0.15 GiB measured with the settings
#: below).
WORKER_BASELINE = 400 * 2 ** 20
#: Float64 copies of a chunk a worker holds while it computes the chunk's sums
#: (as read; features without the label; validated array; clipped rows + intercept).
CHUNK_COPIES = 4
#: Bytes of one value as the chunk is computed (float64).
_VALUE_BYTES = 8
#: Rows read from Parquet at a time inside a row group (bounds the reader's own memory:
#: at 65,536 rows and 123 columns it held 0.35 GiB for a 0.12 GiB piece, at 8,192 0.26 GiB).
READ_BATCH_ROWS = 8_192
#: Read buffer per column (pyarrow's ``buffer_size``); 0 would read whole column chunks.
_READ_BUFFER_BYTES = 64 * 2 ** 10


def partition_rows(memory_limit, n_columns, threads_per_worker=1):
    """The partition rule (module docstring): rows one partition may hold on a worker.

    Parameters
    ----------
    memory_limit : int
        A worker's memory limit in bytes (the smallest over the cluster's workers).
    n_columns : int
        Columns read per row (features and label).
    threads_per_worker : int
        Chunks a worker may compute at once.
    """
    if not memory_limit or memory_limit <= 0:
        raise ValueError(
            f"memory_limit must be a positive number of bytes; got {memory_limit!r}. Give the "
            "workers a memory limit (LocalCluster(memory_limit='1GiB'), dask worker "
            "--memory-limit) or pass rows_per_partition= yourself."
        )
    if n_columns < 1 or threads_per_worker < 1:
        raise ValueError(f"n_columns and threads_per_worker must be >= 1; got {n_columns} "
                         f"and {threads_per_worker}.")
    per_row = threads_per_worker * CHUNK_COPIES * n_columns * _VALUE_BYTES
    rows = int((MEMORY_SHARE * memory_limit - WORKER_BASELINE) // per_row)
    if rows < 1:
        raise ValueError(
            f"a worker with memory_limit={memory_limit} bytes and {threads_per_worker} "
            f"thread(s) cannot hold even one row of {n_columns} columns next to its own "
            f"{WORKER_BASELINE / 2 ** 30:.2f} GiB; give the workers more memory (at least "
            "1 GiB is a sensible minimum) or fewer threads."
        )
    return rows


def cluster_memory(client):
    """``(memory_limit, threads_per_worker)``: the smallest limit and the most threads of any worker.

    Refuses a cluster whose workers have no memory limit (nothing to size partitions from).
    """
    workers = client.scheduler_info(n_workers=-1)["workers"]
    if not workers:
        raise ValueError("the Dask client has no workers yet; wait for them "
                         "(client.wait_for_workers(n)) before reading.")
    limits = [info.get("memory_limit") or 0 for info in workers.values()]
    threads = max(int(info.get("nthreads", 1)) for info in workers.values())
    if min(limits) <= 0:
        raise ValueError(
            "a Dask worker has no memory limit, so partitions cannot be sized to fit it; "
            "start the workers with a memory limit or pass rows_per_partition= yourself."
        )
    return int(min(limits)), threads


def csv_blocksize(rows, n_columns):
    """CSV bytes per partition so that no partition holds more than ``rows`` rows.

    Every row of a CSV file has at least one byte per cell (its separator or the
    newline), so a block of ``rows * n_columns`` bytes holds at most ``rows`` rows.
    """
    return max(int(rows) * int(n_columns), 1)


def parquet_pieces(row_group_rows, rows):
    """Split one file's row groups into pieces of at most ``rows`` rows.

    Parameters
    ----------
    row_group_rows : sequence of int
        Rows of each row group, from the file's footer.
    rows : int
        The rule's rows per partition.

    Returns
    -------
    list of (row_group, start, stop)
        A row group that fits is one piece; a larger one is cut into
        ``ceil(size / rows)`` pieces of near-equal size. Every row is in exactly one piece.
    """
    pieces = []
    for group, size in enumerate(row_group_rows):
        if size == 0:
            continue
        parts = math.ceil(size / rows)
        bounds = np.linspace(0, size, parts + 1).round().astype(int)
        pieces += [(group, int(a), int(b)) for a, b in itertools.pairwise(bounds)]
    return pieces


class _ParquetPiece:
    """Read rows ``[start, stop)`` of one row group of one Parquet file (a ``from_map`` function).

    The file is streamed in batches of :data:`READ_BATCH_ROWS` rows without
    pre-buffering, so reading never holds the whole row group: rows before
    ``start`` are decoded and dropped batch by batch.
    """

    def __init__(self, columns):
        self.columns = list(columns)

    def __call__(self, piece):
        import pyarrow as pa
        import pyarrow.parquet as pq

        path, group, start, stop = piece
        parquet = pq.ParquetFile(path, pre_buffer=False, buffer_size=_READ_BUFFER_BYTES)
        batches, offset = [], 0
        for batch in parquet.iter_batches(batch_size=READ_BATCH_ROWS, row_groups=[group],
                                          columns=self.columns, use_threads=False):
            end = offset + batch.num_rows
            if end > start:
                batches.append(batch.slice(max(start - offset, 0),
                                           min(stop, end) - max(start, offset)))
            offset = end
            if offset >= stop:
                break
        schema = parquet.schema_arrow
        table = pa.Table.from_batches(batches, schema=pa.schema([schema.field(name)
                                                                  for name in self.columns]))
        del batches  # the table is now the buffers' only owner: to_pandas frees them as it goes
        return table.to_pandas(self_destruct=True, split_blocks=True)


def _parquet_files(path):
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.parquet"))
        if not files:
            raise ValueError(f"{path} holds no *.parquet file.")
        return files
    if path.exists():
        return [path]
    import glob

    files = [Path(name) for name in sorted(glob.glob(str(path)))]
    if not files:
        raise FileNotFoundError(f"no Parquet file matches {path}.")
    return files


def read_parquet(path, columns=None, *, rows_per_partition=None, client=None):
    """A lazy Dask DataFrame over Parquet files, in partitions that fit the workers.

    Unlike ``dd.read_parquet``, which makes at most one partition per row group
    (one per file by default), this cuts large row groups into pieces by the
    partition rule (:mod:`dperm.scale._partitions`), so one 3M-row file becomes
    partitions a 1 GiB worker can hold. Nothing is read but the files' footers.

    Parameters
    ----------
    path : str or Path
        A Parquet file, a directory of them, or a glob.
    columns : sequence of str, optional
        Columns to read (default: all). Every file must have them.
    rows_per_partition : int, optional
        Override the rule.
    client : distributed.Client, optional
        Whose workers' memory limit and threads size the partitions (default: the
        current client). Needed unless ``rows_per_partition`` is given.

    Returns
    -------
    dask.dataframe.DataFrame
        One row per row of the files, in file and row order.
    """
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    files = _parquet_files(path)
    schema = pq.read_schema(files[0])
    names = list(schema.names)
    columns = list(columns) if columns is not None else names
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(f"{files[0]} lacks the column(s) {missing}; its columns are {names}.")
    if rows_per_partition is None:
        if client is None:
            import distributed

            try:
                client = distributed.default_client()
            except ValueError:
                raise ValueError(
                    "read_parquet sizes partitions from the workers' memory limit: call it "
                    "with a distributed.Client active (or client=), or pass "
                    "rows_per_partition=."
                ) from None
        memory_limit, threads = cluster_memory(client)
        rows_per_partition = partition_rows(memory_limit, len(columns), threads)
    rows = int(rows_per_partition)
    if rows < 1:
        raise ValueError(f"rows_per_partition must be >= 1; got {rows_per_partition!r}.")
    pieces = []
    for file in files:
        meta = pq.ParquetFile(file).metadata
        absent = [c for c in columns if c not in meta.schema.names]
        if absent:
            raise ValueError(f"{file} lacks the column(s) {absent}; every file needs {columns}.")
        sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        pieces += [(str(file), *piece) for piece in parquet_pieces(sizes, rows)]
    if not pieces:
        raise ValueError(f"{path} holds no rows.")
    reader = _ParquetPiece(columns)
    empty = schema.empty_table().select(columns).to_pandas()
    return dd.from_map(reader, pieces, meta=empty, label="dperm-read-parquet",
                       enforce_metadata=False)


__all__ = ["CHUNK_COPIES", "MEMORY_SHARE", "cluster_memory", "csv_blocksize",
           "parquet_pieces", "partition_rows", "read_parquet"]
