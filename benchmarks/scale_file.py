"""Benchmark: one large Parquet file on small workers (issue 31, finding 8).

A ``LocalCluster`` on 127.0.0.1 of ``--workers`` worker processes with
``--worker-memory`` each (default 2 x 1 GiB, one thread each) fits
``PrivateLogisticRegression`` on one Parquet file made by
``benchmarks/scale_data.py --single-file`` (default 3M rows of the KDD design,
122 float64 features + the ``dos`` label, pyarrow's default 1,048,576-row row
groups), read either by

- ``--reader dperm``: :func:`dperm.scale.read_parquet`, partitions sized by the
  partition rule from the workers' memory limit (``docs/dask.md``), or
- ``--reader dask``: ``dd.read_parquet`` as the docs' example did before
  (one partition per row group, about 1 GiB of float64 each: the "before").

The model holds a ``BudgetAccountant``; after the fit, ``predict`` on the same
client computes the training error (that used to raise "a BudgetAccountant
cannot be pickled"). Peak worker memory is polled from the scheduler every 0.25 s
(:class:`scale.WorkerMemoryMonitor`); a fit still running after ``--timeout`` s
is abandoned and reported as such.

Writes ``benchmarks/results/scale_file_<reader>_<file stem>.json``.

Usage::

    python benchmarks/scale_data.py --single-file /tmp/kdd-3m.parquet --rows 3000000
    python benchmarks/scale_file.py --file /tmp/kdd-3m.parquet --reader dperm
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np
from scale import RESULTS, WorkerMemoryMonitor, fit_with_timeout  # benchmarks/scale.py

import dperm
from dperm import BudgetAccountant, PrivateLogisticRegression


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", required=True)
    parser.add_argument("--reader", choices=("dperm", "dask"), default="dperm")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="1GiB")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args(argv)

    import dask.dataframe as dd
    import distributed
    import pyarrow.parquet as pq

    from dperm.scale import partition_rows, read_parquet

    meta = pq.ParquetFile(args.file).metadata
    result = {"file_rows": meta.num_rows, "row_groups": meta.num_row_groups,
              "bytes_on_disk": Path(args.file).stat().st_size, "reader": args.reader,
              "workers": args.workers, "worker_memory": args.worker_memory,
              "threads_per_worker": 1, "epsilon": args.epsilon, "alpha": args.alpha,
              "dperm": dperm.__version__, "python": platform.python_version()}
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  memory_limit=args.worker_memory, host="127.0.0.1",
                                  dashboard_address=None, processes=True) as cluster, \
            distributed.Client(cluster) as client:
        frame = read_parquet(args.file) if args.reader == "dperm" else dd.read_parquet(args.file)
        features = [c for c in frame.columns if c != "dos"]
        result["partitions"] = int(frame.npartitions)
        result["worker_memory_limit"] = min(
            info["memory_limit"] for info in client.scheduler_info()["workers"].values())
        result["rule_rows_per_partition"] = partition_rows(result["worker_memory_limit"],
                                                           len(frame.columns), 1)
        budget = BudgetAccountant(epsilon=1.0)
        model = PrivateLogisticRegression(epsilon=args.epsilon, alpha=args.alpha,
                                          classes=[0, 1], accountant=budget,
                                          random_state=args.seed, scheduler=client)
        print(json.dumps(result), flush=True)
        with WorkerMemoryMonitor(client) as monitor:
            outcome, seconds = fit_with_timeout(model, frame[features], frame["dos"],
                                                args.timeout)
        result["fit"] = {"outcome": outcome, "seconds": round(seconds, 1),
                         "peak_worker_memory": max(monitor.peak.values(), default=0),
                         "workers_seen": len(monitor.peak),
                         "worker_restarts": len(monitor.peak) - args.workers}
        print(json.dumps(result["fit"]), flush=True)
        if outcome == "finished":  # the record releases no pass count (it depends on the data)
            result["fit"].update(n_samples=int(model.privacy_.n_samples),
                                 mechanism=model.privacy_.mechanism,
                                 guarantee=model.privacy_.guarantee)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                predicted = model.predict(frame[features]).compute()  # accountant attached
            labels = frame["dos"].compute().to_numpy()
            result["predict"] = {"seconds": round(time.perf_counter() - start, 1),
                                 "rows": int(predicted.size),
                                 "training_error": float(np.mean(predicted != labels)),
                                 "budget_spent": budget.summary()}
        print(json.dumps(result["fit"]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"scale_file_{args.reader}_{Path(args.file).stem}.json"
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
