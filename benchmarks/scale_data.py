"""Generate the scale benchmark's data: the KDD Cup 1999 design replicated with fresh noise.

The full 4.9M-row KDD Cup 1999 file is not available here (only the 10% file
and the labelled test set are in ``DPERM_DATA``), so larger data sets are made
from the 10% file's 494,021 encoded rows (dperm's public ``unit_norm``
encoding, 122 features: 38 numeric columns in [0, 1] and one-hot blocks for
protocol, service and flag; ``load_kddcup99`` says why 122 and not the
paper's 119). Each replica row is a uniformly drawn source row whose numeric
columns get fresh Gaussian noise (sd ``--noise``, default 0.02, clipped back
into [0, 1]) while its one-hot blocks and DoS label stay; the row is then
rescaled to unit norm, as the encoding does. So every record is new, the
class mix and the feature design are the 10% file's, and no row repeats.

Output: ``--files`` Parquet files of ``--rows-per-file`` rows each (float64
columns ``x000..x121`` and an int8 column ``dos``), uncompressed so that the
bytes on disk equal the bytes a worker holds in memory for a chunk.

With ``--single-file PATH --rows N`` it writes one Parquet file of N rows instead,
generated and written in slices (so the generator never holds the whole file), with
``--row-group-rows`` rows per row group (default: pyarrow's own, 1,048,576, which is what
``DataFrame.to_parquet`` gives a user); issue 31's "one 3M-row Parquet file".

Usage::

    python benchmarks/scale_data.py --out /tmp/kdd-replica --files 110 --rows-per-file 100000
    python benchmarks/scale_data.py --single-file /tmp/kdd-3m.parquet --rows 3000000
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

FEATURE_COLUMNS = [f"x{j:03d}" for j in range(122)]


def load_source(data_home=None):
    """The encoded 10% file: rows, labels, and which columns are numeric."""
    from dperm.datasets import load_kddcup99

    kdd = load_kddcup99(data_home=data_home, encoding="unit_norm")
    numeric = np.array(["=" not in name for name in kdd.feature_names])
    return kdd.X_train, kdd.y_train.astype(np.int8), numeric


def replicate(X, y, numeric, n_rows, seed, noise):
    """``n_rows`` fresh records of the source design (see the module docstring)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, X.shape[0], size=n_rows)
    new = X[rows].copy()
    block = new[:, numeric]
    block += rng.normal(0.0, noise, size=block.shape)
    np.clip(block, 0.0, 1.0, out=block)
    new[:, numeric] = block
    norms = np.linalg.norm(new, axis=1)
    new /= np.where(norms > 0, norms, 1.0)[:, None]
    return new, y[rows]


def write_file(path, X, y):
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {name: X[:, j] for j, name in enumerate(FEATURE_COLUMNS)}
    columns["dos"] = y
    pq.write_table(pa.table(columns), path, compression="none")


def write_single_file(path, X, y, numeric, n_rows, seed, noise, row_group_rows=None,
                      slice_rows=250_000):
    """One Parquet file of ``n_rows`` replica rows, generated and appended slice by slice.

    ``row_group_rows=None`` keeps pyarrow's default row group size (1,048,576 rows).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(name, pa.float64()) for name in FEATURE_COLUMNS] + [("dos", pa.int8())])
    group = row_group_rows or 1024 * 1024
    # slices are whole multiples of the row group (or divide it), so groups come out exact
    slice_rows = group if group >= slice_rows else slice_rows - slice_rows % group
    with pq.ParquetWriter(path, schema, compression="none") as writer:
        for index, start in enumerate(range(0, n_rows, slice_rows)):
            m = min(slice_rows, n_rows - start)
            Xr, yr = replicate(X, y, numeric, m, [seed, index], noise)
            columns = {name: Xr[:, j] for j, name in enumerate(FEATURE_COLUMNS)}
            columns["dos"] = yr
            writer.write_table(pa.table(columns, schema=schema), row_group_size=group)
            del Xr, yr, columns


def in_memory_replica(n_rows, seed=0, noise=0.02, data_home=None):
    """An in-memory replica (for the in-memory comparison), same recipe."""
    X, y, numeric = load_source(data_home)
    return replicate(X, y, numeric, n_rows, seed, noise)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="directory of --files Parquet files")
    parser.add_argument("--single-file", help="write one Parquet file of --rows rows instead")
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--row-group-rows", type=int, default=None,
                        help="rows per row group of --single-file (default: pyarrow's)")
    parser.add_argument("--files", type=int, default=110)
    parser.add_argument("--rows-per-file", type=int, default=100_000)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args(argv)
    if args.single_file:
        X, y, numeric = load_source(args.data_home)
        start = time.perf_counter()
        write_single_file(args.single_file, X, y, numeric, args.rows, args.seed, args.noise,
                          args.row_group_rows)
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(args.single_file).metadata
        print(json.dumps({"file": args.single_file, "rows": meta.num_rows,
                          "row_groups": meta.num_row_groups,
                          "bytes_on_disk": Path(args.single_file).stat().st_size,
                          "seconds": round(time.perf_counter() - start, 1)}))
        return
    if not args.out:
        parser.error("give --out DIR (many files) or --single-file PATH (one file)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    X, y, numeric = load_source(args.data_home)
    start = time.perf_counter()
    for index in range(args.files):
        path = out / f"part-{index:04d}.parquet"
        if path.exists():
            continue
        Xr, yr = replicate(X, y, numeric, args.rows_per_file, [args.seed, index], args.noise)
        write_file(path, Xr, yr)
    size = sum(p.stat().st_size for p in out.glob("*.parquet"))
    manifest = {"files": args.files, "rows_per_file": args.rows_per_file,
                "rows": args.files * args.rows_per_file, "bytes_on_disk": size,
                "noise": args.noise, "seed": args.seed, "features": len(FEATURE_COLUMNS),
                "seconds": round(time.perf_counter() - start, 1)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    print(json.dumps(manifest))


if __name__ == "__main__":
    main()
