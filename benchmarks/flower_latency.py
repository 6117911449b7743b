"""Benchmark: where the wall time of a multiparty run on real processes goes (issue 15, "Latency").

Starts, on 127.0.0.1, ``dperm coordinate`` (the locked-down SuperLink over
TLS with node authentication, then ``flwr run`` of dperm's app) and K
``dperm party serve`` processes, exactly as a deployment does, runs PSGD for
a few SecAgg+ rounds and splits the wall time into stages from time stamps:

- ``startup``: from launching the processes to the ServerApp's first line,
  split into ``startup_superlink_ready`` (SuperLink start and party-key
  registration, until ``dperm coordinate`` says it listens) and
  ``startup_flwr_run_to_serverapp`` (``flwr run``, the SuperExec's launch
  of the ServerApp process and its imports);
- ``parties_connected``: until the ServerApp sees all K SuperNodes;
- ``describe`` and ``setup``: the two public set-up queries;
- each SecAgg+ round and its four stages (``setup``, ``share_keys``,
  ``collect_masked_vectors``, ``unmask``: one message round trip each),
  timed by the ServerApp around each exchange (:class:`PollingGrid`);
- ``shutdown``: from the last exchange to ``dperm coordinate``'s exit
  (model file written, SuperLink stopped).

``--poll-seconds 3`` sets ``DPERM_FLOWER_POLL_SECONDS=3`` (and Flower's
``FLWR_SUPEREXEC_TASK_POLL_INTERVAL=1``) in every process, which restores
Flower 1.41's own waits (the "before" column: grid and SuperNode polls 3 s,
object-pull backoff from 1 s, SuperExec poll 1 s); without it dperm's
defaults apply. Writes benchmarks/results/flower_latency.json
(``--merge`` keeps cells not measured now). Needs ``pip install 'dperm[multiparty]'``.

Example: ``python benchmarks/flower_latency.py --parties 3 5 --rounds 3 --poll-seconds 3 --label flower-waits``.
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
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import dperm
from dperm.multiparty.flower.deploy import (
    free_loopback_ports,
    stop_process_group,
    write_loopback_certificates,
    write_party_key,
    write_party_roster,
)
from dperm.multiparty.flower.engine import POLL_SECONDS_ENV, configure_flower_environment

RESULTS = Path(__file__).parent / "results"
SECAGG_STAGES = ("setup", "share_keys", "collect_masked_vectors", "unmask")


def write_shards(folder: Path, n_parties: int, dimension: int, rows: int) -> list:
    """``n_parties`` CSV shards of ``rows`` rows inside the unit ball (public synthetic data)."""
    rng = np.random.default_rng(1)
    shards = []
    for k in range(n_parties):
        X = rng.normal(size=(rows, dimension))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        path = folder / f"shard{k}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([f"x{j}" for j in range(dimension)] + ["label"])
            writer.writerows([[f"{value:.6g}" for value in row] + [int(row.sum() > 0)] for row in X])
        shards.append(path)
    return shards


def run_loopback(n_parties: int, rounds: int, dimension: int, rows: int, poll_seconds, timeout: float) -> dict:
    """One ``dperm coordinate`` + K ``dperm party serve`` run; the time stamps of its stages."""
    workdir = Path(tempfile.mkdtemp(prefix="dperm-bench-latency-"))
    shards = write_shards(workdir, n_parties, dimension, rows)
    superlink_port, control_port, *node_ports = free_loopback_ports(n_parties + 2)
    tls = write_loopback_certificates(workdir)
    keys = [write_party_key(workdir / f"party-{k}.key") for k in range(n_parties)]
    roster = write_party_roster(workdir / "roster.pub", keys)
    env = configure_flower_environment({**os.environ, "FLWR_HOME": str(workdir / "flwr-home")})
    env.pop(POLL_SECONDS_ENV, None)
    env.pop("FLWR_SUPEREXEC_TASK_POLL_INTERVAL", None)
    if poll_seconds is not None:
        env[POLL_SECONDS_ENV] = str(poll_seconds)
        if poll_seconds >= 1:  # "before": Flower's own SuperExec poll too
            env["FLWR_SUPEREXEC_TASK_POLL_INTERVAL"] = "1.0"
    dperm_cli = [sys.executable, "-m", "dperm.cli"]
    coordinator_dir = workdir / "coordinator"
    processes = []
    started = time.time()
    try:
        coordinator = subprocess.Popen(
            dperm_cli + ["coordinate", "--shards", str(n_parties), "--epsilon", "1", "--alpha", "0.05",
                         "--rounds", str(rounds), "--port", str(superlink_port), "--control-port",
                         str(control_port), "--party-keys", *map(str, keys), "--ssl-certfile",
                         str(tls["server.pem"]), "--ssl-keyfile", str(tls["server.key"]),
                         "--ssl-ca-certfile", str(tls["ca.pem"]), "--wait", "300",
                         "--stage-timeout", "300", "--workdir", str(coordinator_dir),
                         "--out", str(workdir / "model.json")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        processes.append(coordinator)
        for k, port in enumerate(node_ports):
            with (workdir / f"party-{k}.log").open("w", encoding="utf-8") as log:
                processes.append(subprocess.Popen(
                    dperm_cli + ["party", "serve", "--data", str(shards[k]), "--superlink",
                                 f"127.0.0.1:{superlink_port}", "--port", str(port), "--auth-key",
                                 str(workdir / f"party-{k}.key"), "--roster", str(roster),
                             "--root-certificates", str(tls["ca.pem"]),
                                 "--max-epsilon", str(rounds), "--max-delta", "1e-5", "--max-rounds",
                                 str(rounds)],
                    env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        lines = []  # (time stamp, line) of the coordinator's output
        reader = threading.Thread(target=lambda: lines.extend((time.time(), line) for line in coordinator.stdout),
                                  daemon=True)
        reader.start()
        coordinator.wait(timeout=timeout)
        ended = time.time()
        reader.join(timeout=10)
        output = "".join(line for _, line in lines)
    finally:
        for process in reversed(processes):
            stop_process_group(process, grace_seconds=15)
    if coordinator.returncode != 0:
        raise RuntimeError(f"the loopback run failed (logs in {workdir}):\n{output}")
    status = json.loads((coordinator_dir / "status.json").read_text(encoding="utf-8"))
    summary = summarise(status, started, ended, n_parties, rounds)
    ready = [stamp for stamp, line in lines if line.startswith("SuperLink:")]
    if ready:  # `dperm coordinate` prints this once the SuperLink listens with the keys registered
        summary["startup_superlink_ready_seconds"] = ready[0] - started
        summary["startup_flwr_run_to_serverapp_seconds"] = status["serverapp_started_at"] - ready[0]
    return summary


def summarise(status: dict, started: float, ended: float, n_parties: int, rounds: int) -> dict:
    """Stage times (seconds) from the ServerApp's status file and the benchmark's own stamps."""
    exchanges = status["exchanges"]
    queries = {item["stage"]: item for item in exchanges if not item["stage"].startswith("secagg+:")}
    secagg = [item for item in exchanges if item["stage"].startswith("secagg+:")]
    if len(secagg) != 4 * rounds:
        raise RuntimeError(f"expected {4 * rounds} SecAgg+ exchanges, got {len(secagg)}")
    describe = queries["query:describe"]
    setup = queries["query:setup"]
    per_round = []
    stages = {name: [] for name in SECAGG_STAGES}
    for index in range(rounds):
        block = secagg[4 * index: 4 * index + 4]
        names = [item["stage"].split(":", 1)[1] for item in block]
        if names != list(SECAGG_STAGES):
            raise RuntimeError(f"round {index}: unexpected stage order {names}")
        for name, item in zip(names, block):
            stages[name].append(item["seconds"])
        per_round.append(block[-1]["started_at"] + block[-1]["seconds"] - block[0]["started_at"])
    last = secagg[-1]["started_at"] + secagg[-1]["seconds"]
    return {
        "n_parties": n_parties, "rounds": rounds,
        "wall_seconds": ended - started,
        "startup_seconds": status["serverapp_started_at"] - started,
        "parties_connected_seconds": describe["started_at"] - status["serverapp_started_at"],
        "describe_seconds": describe["seconds"],
        "setup_seconds": setup["seconds"],
        "round_median_seconds": statistics.median(per_round),
        "round_seconds": per_round,
        "stage_median_seconds": {name: statistics.median(values) for name, values in stages.items()},
        "stage_seconds": stages,
        "rounds_total_seconds": last - secagg[0]["started_at"],
        "shutdown_seconds": ended - last,
    }


def _commit() -> str:
    """The checkout's commit (which waits were measured), or ``"unknown"``."""
    try:
        return "commit " + subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent,
                                          capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dimension", type=int, default=30, help="features d = numbers summed per round (30)")
    parser.add_argument("--rows", type=int, default=40, help="rows per shard (40)")
    parser.add_argument("--poll-seconds", type=float, default=None,
                        help=f"set {POLL_SECONDS_ENV} (3 = Flower's own waits; default: dperm's)")
    parser.add_argument("--label", default=None, help="name of this configuration in the results")
    parser.add_argument("--merge", action="store_true")
    parser.add_argument("--out", default=str(RESULTS / "flower_latency.json"))
    args = parser.parse_args(argv)

    import flwr

    label = args.label or ("dperm-defaults" if args.poll_seconds is None else f"poll-{args.poll_seconds:g}s")
    results = {"dperm": dperm.__version__, "flwr": flwr.__version__, "python": platform.python_version(),
               "cpus": os.cpu_count(), "cells": []}
    for n_parties in args.parties:
        load = os.getloadavg()[0]
        cell = {"label": label, "code": _commit(), "poll_seconds_env": args.poll_seconds,
                "dimension": args.dimension,
                "rows_per_party": args.rows,
                "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "loadavg_1min_at_start": load,
                **run_loopback(n_parties, args.rounds, args.dimension, args.rows, args.poll_seconds,
                               timeout=1800)}
        results["cells"].append(cell)
        stages = ", ".join(f"{name} {value:.2f}" for name, value in cell["stage_median_seconds"].items())
        print(f"{label} K={n_parties} d={args.dimension}: round median {cell['round_median_seconds']:.2f} s "
              f"({stages}); start-up {cell['startup_seconds']:.1f} s, parties connected +"
              f"{cell['parties_connected_seconds']:.1f} s, describe {cell['describe_seconds']:.2f} s, setup "
              f"{cell['setup_seconds']:.2f} s, shutdown {cell['shutdown_seconds']:.1f} s; wall "
              f"{cell['wall_seconds']:.1f} s (load {load:.1f})", flush=True)
    out = Path(args.out)
    if args.merge and out.exists():
        previous = json.loads(out.read_text(encoding="utf-8"))
        measured = {(c["label"], c["n_parties"], c["dimension"], c["rounds"]) for c in results["cells"]}
        if "note" in previous:
            results["note"] = previous["note"]
        results["cells"] = [c for c in previous["cells"]
                            if (c["label"], c["n_parties"], c["dimension"], c["rounds"]) not in measured] + results["cells"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
