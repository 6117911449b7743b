"""Benchmark: PrivatePredictor at real sizes (issue 19), exact vs random-feature path.

For m in {1000, 3000, 10000, 30000, 100000} training rows of Adult's 105 features
(``dperm.datasets.load_adult``; DPERM_DATA=/work/shared/data or the embedded copy),
squared and hinge loss, each fit in its own subprocess (2 BLAS threads):

- fit time and peak resident memory of the process (``ru_maxrss``, interpreter and
  data included) and the RSS just before the fit;
- time to answer 10,000 queries (Adult test rows);
- error of the answers against the exact model's noiseless values at the same budget
  (epsilon_per_query), where the exact path runs (m <= 10000): RMSE for least squares,
  sign agreement for the hinge, for the features path's answers and for the exact
  path's own answers (the noise alone).

Above Adult's 30,162 training rows the training set is Adult's 45,222 rows (train +
test) resampled with replacement from a fixed seed: Adult-shaped, not new people.
Targets (issue 19): m = 100,000 fits in < 60 s and < 2 GB on 2 cores; 10,000 queries in
< 5 s. Writes benchmarks/results/prediction_scale.json and prediction_scale.png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SIZES = (1000, 3000, 10000, 30000, 100000)
EXACT_MAX_M = 10000
N_QUERIES = 10000
EPSILON_PER_QUERY = 0.1
ALPHA = 0.1  # PrivatePredictor's default until issue 30 (now alpha="auto"); kept so the table stays comparable
GAMMA = 1.0
RUN_TIMEOUT_S = 400
RESULTS = Path(__file__).parent / "results"
TARGETS = {"fit_seconds": 60.0, "peak_gb": 2.0, "query_seconds": 5.0, "m": 100000}


def adult_shaped(m: int):
    """``m`` training rows of Adult (resampled beyond 30,162) and the 10,000 query rows."""
    from dperm.datasets import load_adult

    adult = load_adult()
    queries = adult.X_test[:N_QUERIES]
    if m <= adult.X_train.shape[0]:
        X, y = adult.X_train[:m], adult.y_train[:m]
    else:
        pool_X = np.vstack([adult.X_train, adult.X_test])
        pool_y = np.concatenate([adult.y_train, adult.y_test])
        rows = np.random.default_rng(0).integers(pool_X.shape[0], size=m)
        X, y = pool_X[rows], pool_y[rows]
    return np.ascontiguousarray(X), np.where(y == 1, 1.0, -1.0), queries


def one_run(m: int, loss: str, solver: str) -> dict:
    """Fit and answer once in this process; report times, memory and the (secret) values."""
    from dperm import PrivatePredictor

    X, y, queries = adult_shaped(m)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    predictor = PrivatePredictor(
        epsilon_total=EPSILON_PER_QUERY * N_QUERIES, epsilon_per_query=EPSILON_PER_QUERY,
        loss=loss, alpha=ALPHA, gamma=GAMMA, y_bound=1.0, solver=solver, max_memory_gb=64.0,
        classes=[-1.0, 1.0] if loss == "hinge" else None, random_state=m,
    )
    start = time.perf_counter()
    predictor.fit(X, y)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    answers = predictor.decision_function(queries) if loss == "hinge" else predictor.predict(queries)
    query_seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "m": m, "loss": loss, "solver": predictor.privacy_.solver, "fit_seconds": fit_seconds,
        "query_seconds": query_seconds, "peak_bytes": peak, "rss_before_fit_bytes": rss_before,
        "noise_scale": predictor.privacy_.noise_scale,
        # benchmark-only: the secret noiseless values, to measure the error against the exact model
        "values": predictor._exact_model.values(queries).tolist(), "answers": answers.tolist(),
    }


def spawn(m: int, loss: str, solver: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="2")
    command = [sys.executable, __file__, "--one", str(m), loss, solver]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"m": m, "loss": loss, "solver": solver, "error": f"timeout after {RUN_TIMEOUT_S} s"}
    if done.returncode != 0:
        return {"m": m, "loss": loss, "solver": solver,
                "error": (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(loss: str, exact: dict, run: dict) -> dict:
    """Error of ``run``'s answers against the exact model's noiseless values."""
    truth = np.asarray(exact["values"])
    answers, values = np.asarray(run["answers"]), np.asarray(run["values"])
    if loss == "squared":
        return {"answers_rmse_vs_exact_model": float(np.sqrt(np.mean((answers - truth) ** 2))),
                "model_rmse_vs_exact_model": float(np.sqrt(np.mean((values - truth) ** 2)))}
    return {"answers_sign_agreement_with_exact_model": float(np.mean(np.sign(answers) == np.sign(truth))),
            "model_sign_agreement_with_exact_model": float(np.mean(np.sign(values) == np.sign(truth)))}


def main(sizes) -> dict:
    rows = []
    for loss in ("squared", "hinge"):
        for m in sizes:
            exact = spawn(m, loss, "exact") if m <= EXACT_MAX_M else None
            features = spawn(m, loss, "features")
            for run in (exact, features):
                if run is None:
                    continue
                if exact is not None and "error" not in exact and "error" not in run:
                    run.update(compare(loss, exact, run))
                rows.append(run)
                print({k: v for k, v in run.items() if k not in ("values", "answers")}, flush=True)
    for run in rows:
        run.pop("values", None)
        run.pop("answers", None)
    big = [r for r in rows if r["m"] == TARGETS["m"] and r.get("solver") == "features" and "error" not in r]
    verdicts = {r["loss"]: {"fit_under_60s": r["fit_seconds"] < TARGETS["fit_seconds"],
                            "peak_under_2GB": r["peak_bytes"] < TARGETS["peak_gb"] * 1e9,
                            "queries_under_5s": r["query_seconds"] < TARGETS["query_seconds"]} for r in big}
    return {
        "benchmark": "prediction_scale", "issue": 19,
        "data": "Adult (105 features, unit-norm rows); m > 30,162 resampled from Adult's 45,222 rows",
        "settings": {"alpha": ALPHA, "gamma": GAMMA, "epsilon_per_query": EPSILON_PER_QUERY,
                     "n_queries": N_QUERIES, "n_components": 256, "blas_threads": 2,
                     "memory": "peak_bytes is ru_maxrss of the run's process (interpreter and data included)"},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "targets": TARGETS, "target_met_at_100000": verdicts, "runs": rows,
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_time, ax_memory) = plt.subplots(1, 2, figsize=(10, 4))
    for loss in ("squared", "hinge"):
        for solver, style in (("exact", "o--"), ("features", "s-")):
            runs = [r for r in result["runs"] if r["loss"] == loss and r.get("solver") == solver
                    and "error" not in r]
            if not runs:
                continue
            m = [r["m"] for r in runs]
            label = f"{loss}, {solver}"
            ax_time.loglog(m, [r["fit_seconds"] for r in runs], style, label=label)
            ax_memory.loglog(m, [r["peak_bytes"] / 1e9 for r in runs], style, label=label)
    ax_time.axhline(TARGETS["fit_seconds"], color="grey", lw=0.8)
    ax_memory.axhline(TARGETS["peak_gb"], color="grey", lw=0.8)
    ax_time.set(xlabel="training rows m", ylabel="fit time (s)", title="PrivatePredictor fit time")
    ax_memory.set(xlabel="training rows m", ylabel="peak RSS (GB)", title="PrivatePredictor peak memory")
    ax_time.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", nargs=3, metavar=("M", "LOSS", "SOLVER"), help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    arguments = parser.parse_args()
    if arguments.one:
        m, loss, solver = arguments.one
        print(json.dumps(one_run(int(m), loss, solver)))
        sys.exit(0)
    RESULTS.mkdir(exist_ok=True)
    outcome = main(arguments.sizes)
    (RESULTS / "prediction_scale.json").write_text(json.dumps(outcome, indent=2) + "\n")
    plot(outcome, RESULTS / "prediction_scale.png")
    print(json.dumps(outcome["target_met_at_100000"], indent=2))
