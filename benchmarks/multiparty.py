"""Benchmark the few-round multiparty Newton protocol on Adult split over K parties (issue 15).

Targets (issue 15): K = 5 parties as separate processes on loopback with TLS
and node authentication, Adult split 5 ways, a whole private training in
<= 120 s wall on 2 cores, the model within 0.01 test error of single-party
objective perturbation at the same (epsilon, delta) on the pooled data
(epsilon in {0.5, 1}, delta = 1e-5), >= 5 runs; in process on Flower's grid,
<= 10 s. Reports rounds, numbers and bytes per party per round, and time per
stage.

Every run trains on the same random 5-way split of Adult's training file and
is scored on Adult's test file. Single-party objective perturbation is
``PrivateLogisticRegression(mechanism="objective")`` with the same epsilon,
delta, alpha and no intercept, on the pooled rows. alpha is fixed at 1e-3
for both (a value of 003's Adult grid, not tuned on this test set).

Run: ``DPERM_DATA=../shared/data python benchmarks/multiparty.py`` (writes
``benchmarks/results/multiparty.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import dperm
from dperm import PrivateLogisticRegression
from dperm.datasets import load_adult
from dperm.multiparty import NewtonClassifier
from dperm.multiparty.flower.deploy import (
    free_loopback_ports,
    stop_process_group,
    write_loopback_certificates,
    write_party_key,
    write_party_roster,
)
from dperm.multiparty.flower.engine import configure_flower_environment
from dperm.privacy.newton import packed_length

RESULTS = Path(__file__).parent / "results"
DELTA = 1e-5
ALPHA = 1e-3


def adult_split(n_parties: int, seed: int = 0):
    data = load_adult(data_home=os.environ.get("DPERM_DATA"))
    X, y = data.X_train, np.where(data.y_train == 1, 1.0, -1.0)
    order = np.random.default_rng(seed).permutation(len(y))
    shards = [(X[part], y[part]) for part in np.array_split(order, n_parties)]
    return shards, (X, y), (data.X_test, np.where(data.y_test == 1, 1.0, -1.0)), list(data.feature_names)


def test_error(coef, test) -> float:
    X, y = test
    return float(np.mean(np.where(X @ np.ravel(coef) > 0, 1.0, -1.0) != y))


def write_shards(workdir: Path, shards, features) -> list:
    paths = []
    for k, (X, y) in enumerate(shards):
        path = workdir / f"party-{k}.csv"
        header = ",".join([*features, "label"])
        np.savetxt(path, np.column_stack([X, (y > 0).astype(float)]), delimiter=",", header=header, comments="",
                   fmt="%.17g")
        paths.append(path)
    return paths


def run_loopback(paths, epsilon: float, rounds: int, timeout: float = 600.0) -> dict:
    """K `dperm party serve` + `dperm coordinate --protocol newton`, TLS and party keys, on 127.0.0.1."""
    workdir = Path(tempfile.mkdtemp(prefix="dperm-bench-multiparty-"))
    n_parties = len(paths)
    superlink_port, control_port, *node_ports = free_loopback_ports(n_parties + 2)
    tls = write_loopback_certificates(workdir)
    keys = [write_party_key(workdir / f"party-{k}.key") for k in range(n_parties)]
    roster = write_party_roster(workdir / "roster.pub", keys)
    env = configure_flower_environment({**os.environ, "FLWR_HOME": str(workdir / "flwr-home")})
    dperm_cli = [sys.executable, "-m", "dperm.cli"]
    out, coordinator_dir = workdir / "model.json", workdir / "coordinator"
    processes = []
    started = time.perf_counter()
    try:
        coordinator = subprocess.Popen(
            dperm_cli + ["coordinate", "--protocol", "newton", "--shards", str(n_parties), "--epsilon",
                         str(epsilon), "--delta", str(DELTA), "--alpha", str(ALPHA), "--rounds", str(rounds),
                         "--port", str(superlink_port), "--control-port", str(control_port),
                         "--party-keys", *map(str, keys), "--ssl-certfile", str(tls["server.pem"]),
                         "--ssl-keyfile", str(tls["server.key"]), "--ssl-ca-certfile", str(tls["ca.pem"]),
                         "--wait", "300", "--stage-timeout", "300", "--workdir", str(coordinator_dir),
                         "--out", str(out)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        processes.append(coordinator)
        for k, port in enumerate(node_ports):
            processes.append(subprocess.Popen(
                dperm_cli + ["party", "serve", "--data", str(paths[k]), "--name", f"party-{k}", "--superlink",
                             f"127.0.0.1:{superlink_port}", "--port", str(port), "--auth-key",
                             str(workdir / f"party-{k}.key"), "--roster", str(roster),
                             "--root-certificates", str(tls["ca.pem"]),
                             "--max-epsilon", str(epsilon), "--max-delta", str(DELTA), "--max-rounds", str(rounds)],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        output, _ = coordinator.communicate(timeout=timeout)
    finally:
        for process in reversed(processes):
            stop_process_group(process, grace_seconds=15)
    wall = time.perf_counter() - started
    if coordinator.returncode != 0:
        raise RuntimeError(f"the loopback run failed:\n{output[-3000:]}")
    status = json.loads((coordinator_dir / "status.json").read_text(encoding="utf-8"))
    document = json.loads(out.read_text(encoding="utf-8"))
    return {"wall_seconds": wall, "serverapp_seconds": status["seconds"], "round_seconds": status["round_seconds"],
            "startup_seconds": wall - status["seconds"], "coef": document["coef"][0],
            "features": document["features"], "epsilon_claimed": document["privacy"]["epsilon"]}


def run_in_process(shards, epsilon: float, rounds: int, secure_sum, seed: int):
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NewtonClassifier(epsilon=epsilon, delta=DELTA, alpha=ALPHA, n_rounds=rounds, secure_sum=secure_sum,
                                 random_state=seed, classes=[-1.0, 1.0]).fit(shards)
    return model, time.perf_counter() - started


def single_party_op(pooled, epsilon: float, seed: int):
    X, y = pooled
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateLogisticRegression(epsilon=epsilon, delta=DELTA, alpha=ALPHA, mechanism="objective",
                                         fit_intercept=False, random_state=seed, classes=[-1.0, 1.0]).fit(X, y)


def _median(values):
    return float(statistics.median(values)) if values else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0])
    parser.add_argument("--loopback-runs", type=int, default=5, help="real-process runs per epsilon (0: none)")
    parser.add_argument("--out", default=str(RESULTS / "multiparty.json"))
    args = parser.parse_args(argv)

    import flwr

    shards, pooled, test, features = adult_split(args.parties)
    d = pooled[0].shape[1]
    dimension = packed_length(d)
    results = {
        "dataset": "adult (unit_norm encoding)", "n_parties": args.parties, "n_rounds": args.rounds,
        "n_features": d, "numbers_per_party_per_round": dimension,
        # what a party's SecAgg+ masked vector carries per round: D int64 entries (+ Flower's weight entry)
        "masked_vector_bytes_per_party_per_round": 8 * (dimension + 1),
        "delta": DELTA, "alpha": ALPHA, "dperm": dperm.__version__, "flwr": flwr.__version__,
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cells": [],
    }
    workdir = Path(tempfile.mkdtemp(prefix="dperm-bench-shards-"))
    paths = write_shards(workdir, shards, features)
    for epsilon in args.epsilons:
        cell = {"epsilon": epsilon, "op_error": [], "masked_error": [], "masked_seconds": [], "flower_error": [],
                "flower_seconds": [], "flower_round_seconds": [], "loopback_error": [], "loopback_wall_seconds": [],
                "loopback_startup_seconds": [], "loopback_round_seconds": []}
        for seed in range(args.runs):
            cell["op_error"].append(test_error(single_party_op(pooled, epsilon, seed).coef_, test))
            model, seconds = run_in_process(shards, epsilon, args.rounds, None, seed)
            cell["masked_error"].append(test_error(model.coef_, test))
            cell["masked_seconds"].append(seconds)
            model, seconds = run_in_process(shards, epsilon, args.rounds, "flower", seed)
            cell["flower_error"].append(test_error(model.coef_, test))
            cell["flower_seconds"].append(seconds)
            print(f"eps={epsilon:g} run {seed}: OP {cell['op_error'][-1]:.4f}, Newton masked "
                  f"{cell['masked_error'][-1]:.4f} ({cell['masked_seconds'][-1]:.1f} s), Flower grid "
                  f"{cell['flower_error'][-1]:.4f} ({seconds:.1f} s)", flush=True)
        for run in range(args.loopback_runs):
            outcome = run_loopback(paths, epsilon, args.rounds)
            assert outcome["features"] == features
            cell["loopback_error"].append(test_error(outcome["coef"], test))
            cell["loopback_wall_seconds"].append(outcome["wall_seconds"])
            cell["loopback_startup_seconds"].append(outcome["startup_seconds"])
            cell["loopback_round_seconds"].extend(outcome["round_seconds"])
            print(f"eps={epsilon:g} loopback run {run}: error {cell['loopback_error'][-1]:.4f}, "
                  f"{outcome['wall_seconds']:.1f} s wall ({outcome['startup_seconds']:.1f} s outside the rounds, "
                  f"median round {_median(outcome['round_seconds']):.2f} s)", flush=True)
        op, newton = _median(cell["op_error"]), _median(cell["masked_error"] + cell["loopback_error"])
        cell["summary"] = {
            "op_median_error": op, "newton_median_error": newton, "gap": newton - op,
            "within_0.01": newton - op <= 0.01,
            "flower_grid_median_seconds": _median(cell["flower_seconds"]),
            "in_process_target_met": (_median(cell["flower_seconds"]) or 1e9) <= 10.0,
            "loopback_median_wall_seconds": _median(cell["loopback_wall_seconds"]),
            "loopback_target_met": (max(cell["loopback_wall_seconds"]) <= 120.0) if cell["loopback_wall_seconds"]
            else None,
            "loopback_median_round_seconds": _median(cell["loopback_round_seconds"]),
        }
        print(json.dumps({"epsilon": epsilon, **cell["summary"]}), flush=True)
        results["cells"].append(cell)
    RESULTS.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
