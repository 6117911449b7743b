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

``--collusion`` (issue 31) measures instead the accuracy cost of the public
collusion threshold ``t`` (:mod:`dperm.privacy.collusion`): K = 5 parties on
Adult, ``t`` in {0, 1, 2}, in process on Flower's grid (SecAgg+ over an
in-process grid), beside single-party objective perturbation; and K = 20
parties in process at ``t = 1``: rounds, bytes per party per round, time per
stage and the whole training against the <= 60 s target. The machine's load
average is recorded with each cell (other jobs may share its 2 cores). Writes
``benchmarks/results/multiparty_collusion.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
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
from dperm.privacy.newton import epsilon_by_colluders, packed_length

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


#: What each process of a loopback run is, from its command line (first match wins).
PROCESS_KINDS = (
    ("dperm.multiparty.flower.superlink", "superlink"), ("dperm.multiparty.flower.supernode", "supernode"),
    ("dperm.multiparty.flower.party_runtime", "party_runtime"), ("flwr-serverapp", "serverapp"),
    ("flower-superexec", "superexec"), ("flwr run", "flwr_run"), ("party serve", "party_serve"),
    ("coordinate", "coordinate"),
)


def _process_kind(cmdline: list) -> str:
    text = " ".join(cmdline)
    return next((kind for needle, kind in PROCESS_KINDS if needle in text), "other")


class CpuSampler:
    """CPU seconds (user + system) of every descendant of this process, by kind, sampled every ``interval`` s.

    ``samples`` holds ``(time.time(), {kind: cumulative CPU seconds})``; a
    process that has ended keeps its last sampled value, so up to one
    interval of a process's last CPU can be missed (the run's total from
    ``getrusage(RUSAGE_CHILDREN)`` is the check).
    """

    def __init__(self, interval: float = 0.25):
        import psutil

        self._psutil, self.interval, self.samples, self._last, self._kinds = psutil, interval, [], {}, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        psutil = self._psutil
        for child in psutil.Process().children(recursive=True):
            try:
                with child.oneshot():
                    key = (child.pid, child.create_time())
                    if self._kinds.get(key, "other") == "other":  # a fork shows its parent's command until exec
                        self._kinds[key] = _process_kind(child.cmdline())
                    times = child.cpu_times()
                self._last[key] = times.user + times.system
            except psutil.Error:
                continue
        totals = {}
        for key, cpu in self._last.items():
            totals[self._kinds[key]] = totals.get(self._kinds[key], 0.0) + cpu
        self.samples.append((time.time(), totals))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)
        self._sample()

    def at(self, stamp: float) -> dict:
        """The cumulative CPU seconds by kind at ``stamp`` (the last sample at or before it)."""
        chosen = {}
        for when, totals in self.samples:
            if when > stamp:
                break
            chosen = totals
        return chosen

    def between(self, begin: float, end: float) -> dict:
        before, after = self.at(begin), self.at(end)
        return {kind: round(after.get(kind, 0.0) - before.get(kind, 0.0), 3) for kind in sorted(after)}


def _stamped_lines(stream, into: list) -> threading.Thread:
    def read():
        with stream:
            for line in stream:
                into.append((time.time(), line))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _first(lines, needle):
    return next((stamp for stamp, line in lines if needle in line), None)


#: Phases of a loopback run, each from the previous mark to its own (``loopback_phases``).
PHASES = (
    ("superlink_ready", "launch to `dperm coordinate` printing that its SuperLink listens (imports, SuperLink "
                        "start, party keys registered)"),
    ("parties_connected", "to the last party's SuperNode holding its connection (`SuperNode ID`), or the "
                          "SuperLink's readiness if later"),
    ("serverapp_started", "to the ServerApp's first line (`flwr run`, the SuperExec's launch, its imports), "
                          "or the parties' connection if later"),
    ("first_query", "to the ServerApp's first message to the parties (it sees all K SuperNodes)"),
    ("set_up", "describe and set-up queries, to the first SecAgg+ round"),
    ("rounds", "the SecAgg+ rounds, first to last"),
    ("coordinator_exit", "to `dperm coordinate`'s exit (model and status written, `flwr run` and SuperLink "
                         "stopped)"),
    ("parties_stopped", "to every `dperm party serve` stopped (SIGTERM to each, waited for)"),
)


def run_loopback(paths, epsilon: float, rounds: int, timeout: float = 600.0) -> dict:
    """K `dperm party serve` + `dperm coordinate --protocol newton`, TLS and party keys, on 127.0.0.1.

    Also returns ``phases``: the wall and CPU seconds of each of
    :data:`PHASES` (CPU by process kind from :class:`CpuSampler`), from the
    processes' printed lines and the ServerApp's status file.
    """
    workdir = Path(tempfile.mkdtemp(prefix="dperm-bench-multiparty-"))
    n_parties = len(paths)
    superlink_port, control_port, *node_ports = free_loopback_ports(n_parties + 2)
    tls = write_loopback_certificates(workdir)
    keys = [write_party_key(workdir / f"party-{k}.key") for k in range(n_parties)]
    roster = write_party_roster(workdir / "roster.pub", keys)
    env = configure_flower_environment({**os.environ, "FLWR_HOME": str(workdir / "flwr-home")})
    dperm_cli = [sys.executable, "-m", "dperm.cli"]
    out, coordinator_dir = workdir / "model.json", workdir / "coordinator"
    processes, coordinator_lines, party_lines, readers = [], [], [[] for _ in paths], []
    load_before = _load()
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with CpuSampler() as cpu:
        launched = time.time()
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
            readers.append(_stamped_lines(coordinator.stdout, coordinator_lines))
            for k, port in enumerate(node_ports):
                party = subprocess.Popen(
                    dperm_cli + ["party", "serve", "--data", str(paths[k]), "--name", f"party-{k}", "--superlink",
                                 f"127.0.0.1:{superlink_port}", "--port", str(port), "--auth-key",
                                 str(workdir / f"party-{k}.key"), "--roster", str(roster),
                                 "--root-certificates", str(tls["ca.pem"]),
                                 "--max-epsilon", str(epsilon), "--max-delta", str(DELTA), "--max-rounds",
                                 str(rounds)],
                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
                processes.append(party)
                readers.append(_stamped_lines(party.stdout, party_lines[k]))
            coordinator.wait(timeout=timeout)
            coordinator_exit = time.time()
        finally:
            for process in processes:  # SIGTERM every party first, then wait for each
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGTERM)
            for process in reversed(processes):
                stop_process_group(process, grace_seconds=15)
        parties_stopped = time.time()
        wall = time.perf_counter() - started
    for reader in readers:
        reader.join(timeout=10)
    usage_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for k, lines in enumerate(party_lines):
        (workdir / f"party-{k}.log").write_text("".join(f"{stamp:.3f} {line}" for stamp, line in lines))
    (workdir / "coordinate.log").write_text("".join(f"{stamp:.3f} {line}" for stamp, line in coordinator_lines))
    output = "".join(line for _, line in coordinator_lines)
    if coordinator.returncode != 0:
        raise RuntimeError(f"the loopback run failed (logs in {workdir}):\n{output[-3000:]}")
    status = json.loads((coordinator_dir / "status.json").read_text(encoding="utf-8"))
    document = json.loads(out.read_text(encoding="utf-8"))
    exchanges = status["exchanges"]
    secagg = [item for item in exchanges if item["stage"].startswith("secagg+:")]
    superlink_ready = _first(coordinator_lines, "SuperLink: Fleet API")
    connected = [_first(lines, "SuperNode ID:") for lines in party_lines]
    marks = [launched, superlink_ready, max([superlink_ready, *connected]), status["serverapp_started_at"],
             exchanges[0]["started_at"], secagg[0]["started_at"], secagg[-1]["started_at"] + secagg[-1]["seconds"],
             coordinator_exit, parties_stopped]
    for index in range(1, len(marks)):  # a phase that overlapped the one before it takes no time of its own
        marks[index] = max(marks[index], marks[index - 1])
    phases = {name: {"wall_seconds": round(marks[i + 1] - marks[i], 3), "cpu_seconds": cpu.between(marks[i], marks[i + 1])}
              for i, (name, _) in enumerate(PHASES)}
    for phase in phases.values():
        phase["cpu_total_seconds"] = round(sum(phase["cpu_seconds"].values()), 3)
    return {"wall_seconds": wall, "serverapp_seconds": status["seconds"], "round_seconds": status["round_seconds"],
            "startup_seconds": wall - status["seconds"], "coef": document["coef"][0],
            "features": document["features"], "epsilon_claimed": document["privacy"]["epsilon"],
            "model_written_seconds": coordinator_exit - launched, "phases": phases,
            "party_connected_seconds": [round(stamp - launched, 3) for stamp in connected],
            "party_ready_seconds": [round(_first(lines, "accepts at most") - launched, 3) for lines in party_lines],
            "cpu_seconds_by_kind": cpu.between(launched, parties_stopped),
            "cpu_seconds_rusage": round(usage_after.ru_utime + usage_after.ru_stime - usage_before.ru_utime
                                        - usage_before.ru_stime, 3),
            "load_before": load_before, "load_after": _load(), "workdir": str(workdir)}


def run_in_process(shards, epsilon: float, rounds: int, secure_sum, seed: int, collusion_threshold: int = 1):
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NewtonClassifier(epsilon=epsilon, delta=DELTA, alpha=ALPHA, n_rounds=rounds, secure_sum=secure_sum,
                                 collusion_threshold=collusion_threshold, random_state=seed,
                                 classes=[-1.0, 1.0]).fit(shards)
    return model, time.perf_counter() - started


def single_party_op(pooled, epsilon: float, seed: int):
    X, y = pooled
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateLogisticRegression(epsilon=epsilon, delta=DELTA, alpha=ALPHA, mechanism="objective",
                                         fit_intercept=False, random_state=seed, classes=[-1.0, 1.0]).fit(X, y)


def _median(values):
    return float(statistics.median(values)) if values else None


# -- issue 31: the accuracy cost of the collusion threshold, and K = 20 in process ---------------------


def _load() -> list:
    """The machine's 1, 5 and 15 minute load averages (other jobs share the cores)."""
    return [round(value, 2) for value in os.getloadavg()]


def collusion_cell(shards, pooled, test, epsilon: float, rounds: int, thresholds, runs: int,
                   masked_runs: int) -> dict:
    """Test error of K-party Newton for each ``t``, beside single-party OP.

    ``runs`` seeds on Flower's in-process grid (SecAgg+), and ``masked_runs``
    seeds on dperm's in-process masked sum (the same calibration and
    encoding, faster: more seeds for the medians).
    """
    n_op = max(runs, masked_runs)
    cell = {"epsilon": epsilon, "load_before": _load(), "op_error": [], "by_threshold": {}}
    for seed in range(n_op):
        cell["op_error"].append(test_error(single_party_op(pooled, epsilon, seed).coef_, test))
    for threshold in thresholds:
        entry = {"error": [], "seconds": [], "masked_error": [], "masked_seconds": []}
        for engine, n_runs, errors, times in (("flower", runs, entry["error"], entry["seconds"]),
                                              (None, masked_runs, entry["masked_error"], entry["masked_seconds"])):
            for seed in range(n_runs):
                model, seconds = run_in_process(shards, epsilon, rounds, engine, seed, threshold)
                errors.append(test_error(model.coef_, test))
                times.append(seconds)
                print(f"K={len(shards)} eps={epsilon:g} t={threshold} {engine or 'masked'} run {seed}: error "
                      f"{errors[-1]:.4f} ({seconds:.1f} s; load {_load()[0]})", flush=True)
        record = model.privacy_
        every = entry["error"] + entry["masked_error"]
        entry.update({
            "party_noise_std": record.party_noise_std, "gradient_noise_std": record.gradient_noise_std,
            "epsilon": record.epsilon, "epsilon_by_colluders": list(record.epsilon_by_colluders),
            "median_error": _median(every), "gap_to_op": _median(every) - _median(cell["op_error"]),
            "flower_median_error": _median(entry["error"]), "masked_median_error": _median(entry["masked_error"]),
            "median_seconds": _median(entry["seconds"]),
        })
        cell["by_threshold"][str(threshold)] = entry
    cell["op_median_error"] = _median(cell["op_error"])
    cell["load_after"] = _load()
    return cell


def staged_in_process(shards, epsilon: float, rounds: int, threshold: int, seed: int) -> dict:
    """One K-party Newton training on Flower's in-process grid with each stage timed (what ``fit`` runs)."""
    from dperm.losses import get_loss
    from dperm.multiparty.estimator import newton_record
    from dperm.multiparty.newton import InProcessNewtonNetwork, NewtonParty, private_newton
    from dperm.multiparty.newton_privacy import calibrate_newton
    from dperm.multiparty.secure_sum import secure_sum_engine

    loss = get_loss("logistic")
    stages, started = {}, time.perf_counter()
    calibration = calibrate_newton(epsilon=epsilon, delta=DELTA, alpha=ALPHA, n_rounds=rounds,
                                   n_samples_by_party=[len(y) for _, y in shards], n_features=shards[0][0].shape[1],
                                   loss=loss, data_norm=1.0, collusion_threshold=threshold)
    stages["calibration"] = time.perf_counter() - started
    mark = time.perf_counter()
    rngs = np.random.default_rng(seed).spawn(len(shards))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parties = [NewtonParty(X, y, loss=loss, data_norm=1.0, party_id=k, random_state=rng, max_epsilon=epsilon,
                               max_delta=DELTA, max_rounds=rounds, min_collusion_threshold=threshold)
                   for k, ((X, y), rng) in enumerate(zip(shards, rngs))]
        engine = secure_sum_engine("flower")(calibration.clipping_range, calibration.quantization_range,
                                             calibration.modulus_range)
        network = InProcessNewtonNetwork(parties, engine)
        stages["parties_and_grid"] = time.perf_counter() - mark
        mark = time.perf_counter()
        result = private_newton(network, calibration)  # each party checks the calibration at set-up
        stages["set_up_and_rounds"] = time.perf_counter() - mark
    mark = time.perf_counter()
    record = newton_record(result)
    stages["record"] = time.perf_counter() - mark
    return {"stages_seconds": stages, "round_seconds": list(result.round_seconds),
            "whole_seconds": time.perf_counter() - started, "coef": result.coef, "record": record}


def many_parties_cell(n_parties: int, test, epsilon: float, rounds: int, threshold: int, runs: int) -> dict:
    """K = 20 (say) parties in process: rounds, bytes per party per round, time per stage, whole training."""
    shards, _, _, _ = adult_split(n_parties)
    dimension = packed_length(shards[0][0].shape[1])
    cell = {"n_parties": n_parties, "epsilon": epsilon, "collusion_threshold": threshold, "n_rounds": rounds,
            "numbers_per_party_per_round": dimension, "masked_vector_bytes_per_party_per_round": 8 * (dimension + 1),
            "load_before": _load(), "runs": []}
    for seed in range(runs):
        outcome = staged_in_process(shards, epsilon, rounds, threshold, seed)
        run = {key: outcome[key] for key in ("stages_seconds", "round_seconds", "whole_seconds")}
        run["error"] = test_error(outcome["coef"], test)
        run["load"] = _load()
        cell["runs"].append(run)
        print(f"K={n_parties} t={threshold} run {seed}: error {run['error']:.4f}, whole {run['whole_seconds']:.1f} s "
              f"(stages {json.dumps({k: round(v, 2) for k, v in run['stages_seconds'].items()})}; load "
              f"{run['load'][0]})", flush=True)
    record = outcome["record"]
    cell["epsilon_by_colluders"] = list(record.epsilon_by_colluders)
    cell["median_whole_seconds"] = _median([run["whole_seconds"] for run in cell["runs"]])
    cell["median_round_seconds"] = _median([s for run in cell["runs"] for s in run["round_seconds"]])
    cell["median_error"] = _median([run["error"] for run in cell["runs"]])
    cell["target_60s_met"] = cell["median_whole_seconds"] <= 60.0
    cell["load_after"] = _load()
    return cell


def main_collusion(args) -> int:
    import flwr

    shards, pooled, test, _ = adult_split(args.parties)
    results = {
        "dataset": "adult (unit_norm encoding)", "n_parties": args.parties, "n_rounds": args.rounds,
        "delta": DELTA, "alpha": ALPHA, "thresholds": args.thresholds, "runs": args.runs,
        "engine": "Flower SecAgg+ on an in-process grid (secure_sum='flower')",
        "dperm": dperm.__version__, "flwr": flwr.__version__, "python": platform.python_version(),
        "cpus": os.cpu_count(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_note": "1/5/15-minute load averages recorded per cell: other jobs shared the machine's cores",
        "masked_runs": args.masked_runs,
        "cells": [collusion_cell(shards, pooled, test, epsilon, args.rounds, args.thresholds, args.runs,
                                 args.masked_runs) for epsilon in args.epsilons],
        "epsilon_by_colluders_exact": {
            str(t): list(epsilon_by_colluders(_calibration_for(shards, 1.0, args.rounds, t))) for t in args.thresholds},
    }
    if args.many_parties:
        results["many_parties"] = many_parties_cell(args.many_parties, test, 1.0, args.rounds, 1, args.many_runs)
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


def _calibration_for(shards, epsilon, rounds, threshold):
    from dperm.losses import get_loss
    from dperm.multiparty.newton_privacy import calibrate_newton

    return calibrate_newton(epsilon=epsilon, delta=DELTA, alpha=ALPHA, n_rounds=rounds,
                            n_samples_by_party=[len(y) for _, y in shards], n_features=shards[0][0].shape[1],
                            loss=get_loss("logistic"), data_norm=1.0, collusion_threshold=threshold)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0])
    parser.add_argument("--loopback-runs", type=int, default=5, help="real-process runs per epsilon (0: none)")
    parser.add_argument("--out", default=None, help="default results/multiparty.json (--collusion: "
                                                    "results/multiparty_collusion.json)")
    parser.add_argument("--collusion", action="store_true",
                        help="issue 31: the accuracy cost of each collusion threshold, and K = --many-parties")
    parser.add_argument("--thresholds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--many-parties", type=int, default=20, help="--collusion: K of the in-process cell (0: none)")
    parser.add_argument("--many-runs", type=int, default=3)
    parser.add_argument("--masked-runs", type=int, default=10,
                        help="--collusion: more seeds per t on dperm's in-process masked sum (same calibration)")
    parser.add_argument("--label", default=None,
                        help="append this run to --out's series under LABEL (before/after comparisons, interleaved)")
    args = parser.parse_args(argv)
    if args.collusion:
        args.out = args.out or str(RESULTS / "multiparty_collusion.json")
        return main_collusion(args)
    args.out = args.out or str(RESULTS / "multiparty.json")

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
                "loopback_startup_seconds": [], "loopback_round_seconds": [], "loopback_runs": []}
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
            cell["loopback_runs"].append({key: outcome[key] for key in (
                "wall_seconds", "model_written_seconds", "phases", "party_ready_seconds", "party_connected_seconds",
                "cpu_seconds_by_kind", "cpu_seconds_rusage", "load_before", "load_after")})
            print(f"eps={epsilon:g} loopback run {run}: error {cell['loopback_error'][-1]:.4f}, "
                  f"{outcome['wall_seconds']:.1f} s wall ({outcome['startup_seconds']:.1f} s outside the rounds, "
                  f"median round {_median(outcome['round_seconds']):.2f} s; model written at "
                  f"{outcome['model_written_seconds']:.1f} s; load {outcome['load_before'][0]})", flush=True)
            print("  " + "; ".join(f"{name} {phase['wall_seconds']:.1f} s wall, {phase['cpu_total_seconds']:.1f} s CPU"
                                   for name, phase in outcome["phases"].items()), flush=True)
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
    if args.label:  # one run of a before/after series: appended to the file's runs under this label
        document = json.loads(Path(args.out).read_text(encoding="utf-8")) if Path(args.out).exists() else {}
        document.setdefault("series", {}).setdefault(args.label, []).append(results)
        results = document
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
