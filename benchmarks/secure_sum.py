"""Benchmark: per-round time of the secure sum (004 Thm 4.2's secure summation), d = 30.

Three engines:

- ``masked_in_process``: :class:`dperm.multiparty.MaskedSecureSum` (in-process
  simulation of secure aggregation);
- ``flower_in_process``: :class:`dperm.multiparty.flower.engine.FlowerSecureSum`
  (Flower 1.41's real SecAgg+ server workflow and client mod on an in-process
  message grid);
- ``flower_simulation`` (``--simulation-parties``, needs Ray:
  ``pip install 'dperm[multiparty-simulation]'``): the deployment's ServerApp
  and ClientApp under ``flwr.simulation.run_simulation`` with the Ray backend
  (:func:`dperm.multiparty.flower.simulation.simulate_deployment`), PSGD for a
  few rounds; per-round times from the ServerApp (Ray's start-up excluded);
- ``flower_loopback``: real processes on 127.0.0.1 -- ``dperm coordinate``
  (SuperLink + ServerApp) and K ``dperm party serve`` SuperNodes -- running
  PSGD for a couple of rounds; the per-round time is measured by the
  ServerApp around each SecAgg+ round (set-up and start-up excluded).

Run with ``python benchmarks/secure_sum.py`` (about 4 minutes on 2 cores, most
of it the loopback run; ``--no-loopback`` skips it). Writes
benchmarks/results/secure_sum.json and prints a markdown table. ``--merge``
keeps the cells already in the results file and replaces only those measured
now, e.g. ``--parties --loopback-parties 10 --merge`` adds the K = 10 loopback
cell. Every cell records its date and the 1-minute load average at its start.
Needs ``pip install 'dperm[multiparty]'``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import dperm
from dperm.multiparty import MaskedSecureSum
from dperm.multiparty.flower.deploy import (
    free_loopback_ports,
    stop_process_group,
    write_loopback_certificates,
    write_party_key,
    write_party_roster,
)
from dperm.multiparty.flower.engine import FlowerSecureSum, configure_flower_environment

RESULTS = Path(__file__).parent / "results"
DIMENSION = 30


def time_engine(engine, n_parties: int, rounds: int, seed: int = 0) -> dict:
    """Seconds per ``engine.sum`` call on fresh random vectors (one warm-up call first)."""
    rng = np.random.default_rng(seed)
    draw = lambda: {f"p{k}": rng.uniform(-1, 1, DIMENSION) for k in range(n_parties)}  # noqa: E731
    engine.sum(draw(), DIMENSION)
    seconds = []
    for _ in range(rounds):
        vectors = draw()
        started = time.perf_counter()
        total, report = engine.sum(vectors, DIMENSION)
        seconds.append(time.perf_counter() - started)
        assert np.abs(total - sum(vectors.values())).max() < report.error_bound
    return _summary(seconds)


def _conditions() -> dict:
    """When a cell was measured and how loaded the machine was (2 shared cores here)."""
    return {"measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "loadavg_1min_at_start": os.getloadavg()[0]}


def _summary(seconds) -> dict:
    return {"rounds": len(seconds), "median_s": statistics.median(seconds), "mean_s": statistics.fmean(seconds),
            "min_s": min(seconds), "max_s": max(seconds), "per_round_s": seconds}


def write_shards(folder: Path, n_parties: int) -> list:
    """``n_parties`` CSV shards of 40 rows, d = 30, rows inside the unit ball."""
    rng = np.random.default_rng(1)
    shards = []
    for k in range(n_parties):
        X = rng.normal(size=(40, DIMENSION))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        path = folder / f"shard{k}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([f"x{j}" for j in range(DIMENSION)] + ["label"])
            writer.writerows([list(row) + [int(row.sum() > 0)] for row in X])
        shards.append(path)
    return shards


def time_simulation(n_parties: int, rounds: int) -> dict:
    """PSGD with SecAgg+ under Flower's Ray simulation; per-round times from the ServerApp."""
    from dperm.multiparty.flower.app import CoordinatorSettings
    from dperm.multiparty.flower.simulation import simulate_deployment

    workdir = Path(tempfile.mkdtemp(prefix="dperm-bench-simulation-"))
    settings = CoordinatorSettings(n_parties=n_parties, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=rounds,
                                   wait_seconds=120.0)
    started = time.perf_counter()
    status = simulate_deployment(write_shards(workdir, n_parties), settings, workdir / "model.json",
                                 max_epsilon=float(rounds), max_delta=1e-5, max_rounds=rounds,  # view: rounds x 1
                                 backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    summary = _summary(status["round_seconds"])
    summary.update({"serverapp_seconds": status["seconds"],
                    "wall_seconds_including_startup": time.perf_counter() - started})
    return summary


def time_loopback(n_parties: int, rounds: int, timeout: float) -> dict:
    """PSGD with SecAgg+ over real processes on 127.0.0.1; per-round times from the ServerApp."""
    workdir = Path(tempfile.mkdtemp(prefix="dperm-bench-secure-sum-"))
    shards = write_shards(workdir, n_parties)
    superlink_port, control_port, *node_ports = free_loopback_ports(n_parties + 2)
    tls = write_loopback_certificates(workdir)  # the deployment refuses plain text (Flower's node auth needs TLS)
    keys = [write_party_key(workdir / f"party-{k}.key") for k in range(n_parties)]
    roster = write_party_roster(workdir / "roster.pub", keys)
    env = configure_flower_environment({**os.environ, "FLWR_HOME": str(workdir / "flwr-home")})
    dperm_cli = [sys.executable, "-m", "dperm.cli"]
    coordinator_dir = workdir / "coordinator"
    processes = []
    started = time.perf_counter()
    try:
        coordinator = subprocess.Popen(
            dperm_cli + ["coordinate", "--protocol", "psgd", "--shards", str(n_parties), "--epsilon", "1", "--alpha", "0.05",
                         "--rounds", str(rounds), "--port", str(superlink_port), "--control-port",
                         str(control_port), "--party-keys", *map(str, keys), "--ssl-certfile",
                         str(tls["server.pem"]), "--ssl-keyfile", str(tls["server.key"]),
                         "--ssl-ca-certfile", str(tls["ca.pem"]), "--wait", "120",
                         "--stage-timeout", "120", "--workdir", str(coordinator_dir),
                         "--out", str(workdir / "model.json")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        processes.append(coordinator)
        for k, port in enumerate(node_ports):
            processes.append(subprocess.Popen(
                dperm_cli + ["party", "serve", "--data", str(shards[k]), "--superlink",
                             f"127.0.0.1:{superlink_port}", "--port", str(port), "--auth-key",
                             str(workdir / f"party-{k}.key"), "--roster", str(roster),
                             "--root-certificates", str(tls["ca.pem"]),
                             "--max-epsilon", str(rounds), "--max-delta", "1e-5", "--max-rounds", str(rounds)],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        output, _ = coordinator.communicate(timeout=timeout)
    finally:
        for process in reversed(processes):
            stop_process_group(process, grace_seconds=15)
    total = time.perf_counter() - started
    if coordinator.returncode != 0:
        raise RuntimeError(f"the loopback run failed:\n{output}")
    status = json.loads((coordinator_dir / "status.json").read_text(encoding="utf-8"))
    summary = _summary(status["round_seconds"])
    summary.update({"serverapp_seconds": status["seconds"], "wall_seconds_including_startup": total})
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="in-process rounds per cell (20)")
    parser.add_argument("--parties", type=int, nargs="*", default=[5, 10],
                        help="K of the in-process cells (none: skip them)")
    parser.add_argument("--loopback-parties", type=int, nargs="+", default=[5])
    parser.add_argument("--loopback-rounds", type=int, default=2)
    parser.add_argument("--no-loopback", action="store_true")
    parser.add_argument("--simulation-parties", type=int, nargs="*", default=[],
                        help="K of Ray-simulation cells (default none; needs flwr[simulation])")
    parser.add_argument("--simulation-rounds", type=int, default=5)
    parser.add_argument("--merge", action="store_true",
                        help="keep the cells of an existing results file that are not measured now")
    parser.add_argument("--out", default=str(RESULTS / "secure_sum.json"))
    args = parser.parse_args(argv)

    import flwr

    results = {"dimension": DIMENSION, "dperm": dperm.__version__, "flwr": flwr.__version__,
               "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
               "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cells": []}
    for n_parties in args.parties:
        for name, engine in (("masked_in_process", MaskedSecureSum(random_state=0)),
                             ("flower_in_process", FlowerSecureSum())):
            cell = {"engine": name, "n_parties": n_parties, **_conditions(),
                    **time_engine(engine, n_parties, args.rounds)}
            results["cells"].append(cell)
            print(f"{name:20s} K={n_parties:3d}: {cell['median_s'] * 1e3:9.2f} ms per round", flush=True)
    for n_parties in args.simulation_parties:
        cell = {"engine": "flower_simulation", "n_parties": n_parties, **_conditions(),
                **time_simulation(n_parties, args.simulation_rounds)}
        results["cells"].append(cell)
        print(f"{'flower_simulation':20s} K={n_parties:3d}: {cell['median_s']:9.2f} s per round "
              f"({cell['wall_seconds_including_startup']:.0f} s in all)", flush=True)
    if not args.no_loopback:
        for n_parties in args.loopback_parties:
            cell = {"engine": "flower_loopback", "n_parties": n_parties, **_conditions(),
                    **time_loopback(n_parties, args.loopback_rounds, timeout=900 + 120 * n_parties)}
            results["cells"].append(cell)
            print(f"{'flower_loopback':20s} K={n_parties:3d}: {cell['median_s']:9.2f} s per round "
                  f"({cell['wall_seconds_including_startup']:.0f} s in all)", flush=True)
    if args.merge and Path(args.out).exists():
        previous = json.loads(Path(args.out).read_text(encoding="utf-8"))
        measured = {(cell["engine"], cell["n_parties"]) for cell in results["cells"]}
        kept = [cell for cell in previous["cells"] if (cell["engine"], cell["n_parties"]) not in measured]
        results["dates"] = sorted({previous["date"], *previous.get("dates", []), results["date"]})
        results["cells"] = kept + results["cells"]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print("\n| engine | K | median per round | rounds |\n| --- | --- | --- | --- |")
    for cell in results["cells"]:
        median = cell["median_s"]
        shown = f"{median * 1e3:.2f} ms" if median < 1 else f"{median:.1f} s"
        print(f"| {cell['engine']} | {cell['n_parties']} | {shown} | {cell['rounds']} |")
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
