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

Usage::

    python benchmarks/scale_data.py --out /tmp/kdd-replica --files 110 --rows-per-file 100000
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


def in_memory_replica(n_rows, seed=0, noise=0.02, data_home=None):
    """An in-memory replica (for the in-memory comparison), same recipe."""
    X, y, numeric = load_source(data_home)
    return replicate(X, y, numeric, n_rows, seed, noise)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--files", type=int, default=110)
    parser.add_argument("--rows-per-file", type=int, default=100_000)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args(argv)
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
