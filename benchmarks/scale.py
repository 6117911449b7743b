"""Benchmark: private ERM past one machine's memory, dperm on Dask vs dask-ml, side by side.

Needs ``pip install -e '.[dask]' dask-ml`` (``make bench-scale`` does it in ``.venv-bench``)
and data made by ``benchmarks/scale_data.py`` (the KDD Cup 1999 design replicated with fresh
per-record noise; the full 4.9M-row file is not available here).

Part 1, out of core: a ``LocalCluster`` on 127.0.0.1 with ``--workers`` workers of
``--worker-memory`` each reads the Parquet files lazily (one chunk per file). On the same
cluster and data, one after the other:

- dperm ``PrivateLogisticRegression`` (objective perturbation, ``--epsilon``, ``--alpha``)
  with Dask input: time, data passes (target <= 15 to the gradient certificate);
- dask-ml's non-private ``LogisticRegression`` (its default solver, ``C = 1/(alpha n)``, the
  same objective): time; ratio dperm / dask-ml (target <= 1.0);
- peak memory of every worker during each fit, sampled from the scheduler's worker metrics
  every 0.25 s (must stay within the limit), and the test error of both on KDD's labelled
  ``corrected`` set.

Part 2, in memory: dperm vs scikit-learn lbfgs (``tol=1e-8``, the same objective) on the
KDD Cup 10% file and on an in-memory replica of ``--memory-rows`` rows (target: dperm under
60 s for 4.9M rows on 2 cores).

Writes ``benchmarks/results/scale.json`` and ``scale.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import threading
import time
import warnings
from pathlib import Path

import numpy as np

import dperm
from dperm import PrivateLogisticRegression

RESULTS = Path(__file__).parent / "results"
TOL = 1e-8


class WorkerMemoryMonitor:
    """Peak resident memory of every worker, polled from the scheduler's metrics."""

    def __init__(self, client, interval=0.25):
        self.client = client
        self.interval = interval
        self.peak = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.is_set():
            try:
                workers = self.client.scheduler_info(n_workers=-1)["workers"]
            except Exception:  # noqa: BLE001 - a transient RPC failure just skips a sample
                workers = {}
            for address, info in workers.items():
                memory = info.get("metrics", {}).get("memory", 0)
                self.peak[address] = max(self.peak.get(address, 0), memory)
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def fit_with_timeout(model, X, y, timeout):
    """Fit in a thread; ``("finished" | "timed out after N s" | "failed: ...", seconds)``.

    A fit still running at the timeout is abandoned (the cluster is closed after it).
    """
    box = {}

    def target():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X, y)
            box["outcome"] = "finished"
        except Exception as error:  # noqa: BLE001 - the peer's failure is a result
            box["outcome"] = f"failed: {type(error).__name__}: {error}"[:500]

    start = time.perf_counter()
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    seconds = time.perf_counter() - start
    return box.get("outcome", f"timed out after {timeout:.0f} s"), seconds


def _read_part(path):
    """One file's rows and labels, column by column (one float64 copy of the chunk)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    y = table.column("dos").to_numpy()
    features = [name for name in table.column_names if name != "dos"]
    X = np.empty((table.num_rows, len(features)))
    for j, name in enumerate(features):
        X[:, j] = table.column(name).to_numpy()
    return X, y


def lazy_arrays(directory):
    """X, y as Dask arrays with one (known-size) chunk per Parquet file."""
    import dask.array as da
    import pyarrow.parquet as pq
    from dask import delayed

    files = sorted(Path(directory).glob("*.parquet"))
    if not files:
        raise SystemExit(f"no Parquet files in {directory}; run benchmarks/scale_data.py first")
    xs, ys = [], []
    for path in files:
        rows = pq.ParquetFile(path).metadata.num_rows
        part = delayed(_read_part, nout=2, pure=True)(str(path))
        xs.append(da.from_delayed(part[0], shape=(rows, 122), dtype=np.float64))
        ys.append(da.from_delayed(part[1], shape=(rows,), dtype=np.int8))
    return da.concatenate(xs), da.concatenate(ys), files


def test_error(coef, intercept, X_test, y_test):
    predictions = (X_test @ np.ravel(coef) + float(np.ravel(intercept)[0])) > 0
    return float(np.mean(predictions != y_test.astype(bool)))


def out_of_core(args, X_test, y_test, checkpoint=None):
    import distributed
    from dask_ml.linear_model import LogisticRegression as DaskMLLogisticRegression

    X, y, files = lazy_arrays(args.data)
    n = int(X.shape[0])
    bytes_on_disk = sum(p.stat().st_size for p in files)
    limit = dask_bytes(args.worker_memory)
    result = {"rows": n, "features": int(X.shape[1]), "files": len(files),
              "bytes_on_disk": bytes_on_disk, "bytes_in_memory_float64": n * 122 * 8,
              "workers": args.workers, "worker_memory_limit": limit,
              "data_over_worker_memory": round(n * 122 * 8 / (limit * args.workers), 2),
              "epsilon": args.epsilon, "alpha": args.alpha}
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  memory_limit=args.worker_memory, host="127.0.0.1",
                                  dashboard_address=None, processes=True) as cluster, \
            distributed.Client(cluster) as client:
        model = PrivateLogisticRegression(epsilon=args.epsilon, alpha=args.alpha,
                                          random_state=args.seed, scheduler=client)
        with WorkerMemoryMonitor(client) as monitor, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            model.fit(X, y)
            dperm_seconds = time.perf_counter() - start
        result["dperm"] = {
            "seconds": round(dperm_seconds, 1),
            "data_passes": int(model.privacy_.data_passes),
            "newton_passes": int(model.n_iter_[0]),
            "gradient_norm": model.privacy_.gradient_norm,
            "certified": bool(model.privacy_.certified),
            "peak_worker_memory": max(monitor.peak.values()),
            "worker_restarts": len(monitor.peak) - args.workers,
            "test_error": test_error(model.coef_, model.intercept_, X_test, y_test),
            "guarantee": model.privacy_.guarantee,
        }
        print("dperm on Dask:", result["dperm"], flush=True)
        result["dask_ml"] = []
        if checkpoint is not None:
            checkpoint(result)
        for solver in args.dask_ml_solvers:
            # normalize=False: the one-hot blocks have all-zero columns (services absent from
            # the 10% file), which dask-glm's standardisation refuses; dperm does not rescale.
            peer = DaskMLLogisticRegression(C=1.0 / (args.alpha * n), fit_intercept=True,
                                            solver=solver, solver_kwargs={"normalize": False})
            with WorkerMemoryMonitor(client) as monitor:
                outcome, peer_seconds = fit_with_timeout(peer, X, y, args.peer_timeout)
            row = {
                "solver": solver,
                "outcome": outcome,
                "seconds": round(peer_seconds, 1),
                "max_iter": peer.max_iter,
                "tol": peer.tol,
                "peak_worker_memory": max(monitor.peak.values()),
                "workers_seen": len(monitor.peak),
                "worker_restarts": len(monitor.peak) - args.workers,
            }
            if outcome == "finished":
                row["test_error"] = test_error(peer.coef_, peer.intercept_, X_test, y_test)
                row["time_ratio_dperm_over_dask_ml"] = round(dperm_seconds / peer_seconds, 3)
            result["dask_ml"].append(row)
            print("dask-ml:", row, flush=True)
            if checkpoint is not None:
                checkpoint(result)
    memory_verdicts(result)
    return result


def memory_verdicts(result):
    """Whether each fit stayed within the worker memory limit.

    The sampled peak can miss a spike: a worker whose nanny restarts it (at 95 %
    of the limit) did not stay within it, whatever the samples say.
    """
    limit = result["worker_memory_limit"]
    fits = [result["dperm"], *result["dask_ml"]]
    for fit in fits:
        fit["within_memory_limit"] = bool(fit["worker_restarts"] == 0
                                          and fit["peak_worker_memory"] <= limit)
    result["within_memory_limit"] = result["dperm"]["within_memory_limit"]


def in_memory(args, X_test, y_test):
    from scale_data import in_memory_replica
    from sklearn.linear_model import LogisticRegression

    from dperm.datasets import load_kddcup99

    kdd = load_kddcup99(data_home=args.data_home, encoding="unit_norm")
    data_sets = [("kddcup99_10_percent", kdd.X_train, kdd.y_train)]
    if args.memory_rows:
        Xr, yr = in_memory_replica(args.memory_rows, seed=args.seed + 1, data_home=args.data_home)
        data_sets.append((f"replica_{args.memory_rows}", Xr, yr))
    rows = []
    for name, X, y in data_sets:
        n = X.shape[0]
        model = PrivateLogisticRegression(epsilon=args.epsilon, alpha=args.alpha,
                                          random_state=args.seed)
        start = time.perf_counter()
        model.fit(X, y)
        dperm_seconds = time.perf_counter() - start
        peer = LogisticRegression(C=1.0 / (args.alpha * n), tol=TOL, max_iter=1000)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peer.fit(X, y)
        sklearn_seconds = time.perf_counter() - start
        row = {"data": name, "rows": n, "dperm_seconds": round(dperm_seconds, 1),
               "dperm_iterations": int(model.n_iter_[0]),
               "sklearn_seconds": round(sklearn_seconds, 1),
               "time_ratio_dperm_over_sklearn": round(dperm_seconds / sklearn_seconds, 3),
               "dperm_test_error": test_error(model.coef_, model.intercept_, X_test, y_test),
               "sklearn_test_error": test_error(peer.coef_, peer.intercept_, X_test, y_test)}
        print("in memory:", row, flush=True)
        rows.append(row)
        del X, y
    return rows


def dask_bytes(text):
    from dask.utils import parse_bytes

    return parse_bytes(text)


def markdown(results):
    gib = 2.0**30
    lines = []
    ooc = results.get("out_of_core")
    if ooc:
        lines += [
            f"Out of core: {ooc['rows']:,} rows x {ooc['features']} features, "
            f"{ooc['bytes_in_memory_float64'] / gib:.1f} GiB as float64 "
            f"({ooc['bytes_on_disk'] / gib:.1f} GiB of Parquet), {ooc['workers']} workers x "
            f"{ooc['worker_memory_limit'] / gib:.1f} GiB ({ooc['data_over_worker_memory']}x the "
            f"workers' memory); eps = {ooc['epsilon']}, alpha = {ooc['alpha']:g}.",
            "",
            "| fit | time (s) | data passes | peak worker memory (GiB) | test error |",
            "|---|---|---|---|---|",
            f"| dperm, objective perturbation ({ooc['dperm']['guarantee']}) | "
            f"{ooc['dperm']['seconds']} | {ooc['dperm']['data_passes']} "
            f"({ooc['dperm']['newton_passes']} Newton) | "
            f"{ooc['dperm']['peak_worker_memory'] / gib:.2f} ({ooc['dperm']['worker_restarts']} "
            f"worker restarts) | {ooc['dperm']['test_error']:.4f} |",
        ]
        for row in ooc["dask_ml"]:
            error = f"{row['test_error']:.4f}" if "test_error" in row else row["outcome"]
            lines.append(
                f"| dask-ml LogisticRegression ({row['solver']}, non-private) | {row['seconds']} | "
                f"- | {row['peak_worker_memory'] / gib:.2f} ({row['worker_restarts']} worker "
                f"restarts) | {error} |"
            )
        ratios = ", ".join(f"{row.get('time_ratio_dperm_over_dask_ml', row['outcome'])} vs "
                           f"{row['solver']}" for row in ooc["dask_ml"])
        lines += [
            "",
            f"Time ratio dperm / dask-ml: **{ratios}** (target <= 1.0). Within the worker "
            "memory limit (no nanny restart, sampled peak under the limit): dperm "
            f"{ooc['dperm']['within_memory_limit']}; "
            + ", ".join(f"dask-ml {row['solver']} {row['within_memory_limit']}"
                        for row in ooc["dask_ml"]) + ".",
            "",
        ]
    memory_rows = results.get("in_memory") or []
    if memory_rows:
        lines += ["| in memory | rows | dperm (s) | scikit-learn lbfgs (s) | ratio | dperm error | sklearn error |",
                  "|---|---|---|---|---|---|---|"]
        for row in memory_rows:
            lines.append(
                f"| {row['data']} | {row['rows']:,} | {row['dperm_seconds']} | "
                f"{row['sklearn_seconds']} | {row['time_ratio_dperm_over_sklearn']} | "
                f"{row['dperm_test_error']:.4f} | {row['sklearn_test_error']:.4f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="directory made by scale_data.py")
    parser.add_argument("--data-home", default=None, help="directory with kddcup99/ (DPERM_DATA)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="1GiB")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--memory-rows", type=int, default=4_900_000)
    parser.add_argument("--skip-in-memory", action="store_true")
    parser.add_argument("--dask-ml-solvers", nargs="+", default=["lbfgs", "admm"],
                        help="dask-ml solvers to run (admm is its default)")
    parser.add_argument("--peer-timeout", type=float, default=2400.0,
                        help="seconds before a dask-ml fit is abandoned")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS / "scale.json"))
    parser.add_argument("--report-only", action="store_true",
                        help="re-derive the verdicts and the markdown from --out's JSON")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.report_only:
        results = json.loads(out.read_text())
        if "out_of_core" in results:
            memory_verdicts(results["out_of_core"])
        out.write_text(json.dumps(results, indent=2))
        out.with_suffix(".md").write_text(markdown(results))
        print(markdown(results))
        return

    from dperm.datasets import load_kddcup99

    kdd = load_kddcup99(data_home=args.data_home, encoding="unit_norm")
    X_test, y_test = kdd.X_test, kdd.y_test
    results = {"dperm_version": dperm.__version__, "python": platform.python_version(),
               "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
               "date": time.strftime("%Y-%m-%d")}
    out.parent.mkdir(parents=True, exist_ok=True)

    def checkpoint(part):
        results["out_of_core"] = part
        out.write_text(json.dumps(results, indent=2))

    if not args.skip_in_memory:
        results["in_memory"] = in_memory(args, X_test, y_test)
        out.write_text(json.dumps(results, indent=2))
    elif out.exists():  # keep the in-memory part of an earlier run of this script
        earlier = json.loads(out.read_text())
        if "in_memory" in earlier:
            results["in_memory"] = earlier["in_memory"]
            results["in_memory_date"] = earlier.get("date")
    if args.data:
        checkpoint(out_of_core(args, X_test, y_test, checkpoint))
    table = markdown(results)
    out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
