"""Benchmark: private end to end (issue 17) - dperm's defaults vs private tuning, diffprivlib, DP-GD and test-tuned.

Adult (official split) and KDDCup99 (the protocol of benchmarks/peers_logistic.py: a random
70,000-row subset of the 10% file, the corrected test set), both ``unit_norm`` (rows of norm
<= 1, the public bound), public label set ``[0, 1]``. At every epsilon, pure and
``delta = 1e-5``, side by side in one run, on the same data and the same noise seeds
(``7919 * draw + 13``, as peers_logistic), test error of:

- ``default``: ``PrivateLogisticRegression(epsilon=eps, classes=[0, 1])`` as a user runs it
  (every other parameter at its default; its ``alpha_`` is recorded when the estimator sets
  one); for ``delta > 0`` with ``delta=1e-5, mechanism="gaussian_objective"``;
- ``gaussian_objective_004`` (``delta > 0``, when the registry has it): 004's sigma*;
- ``auto`` (when ``mechanism="auto"`` exists): the estimator's own mechanism choice;
- ``test_tuned`` (NOT private): the default estimator with ``alpha`` fixed to each value of the
  public grid ``ALPHAS``, the alpha of lowest mean test error (looks at the test set);
- ``alg4`` and ``random_stopping``: :class:`dperm.PrivateParameterSearch` over the same grid
  at the same *total* epsilon (random stopping needs pure candidates: pure only);
- ``diffprivlib`` (pure only): IBM diffprivlib's ``LogisticRegression(epsilon=eps,
  data_norm=1)`` with its defaults, as a user runs it; ``diffprivlib_test_tuned`` (NOT
  private): ``C = 1/(n alpha)`` over the grid without intercept, as peers_logistic;
  recorded as "not run" when diffprivlib does not import (it needs scikit-learn < 1.9:
  ``make bench``'s ``.venv-bench``);
- ``dpgd`` (``delta > 0`` only): full-batch DP gradient descent, benchmarks/_dpgd.py (its
  hyperparameters are a fixed public rule, not tuned on these data; its noise is calibrated
  exactly for replace-one neighbours and dp-accounting's PLD epsilon is recorded beside it).

Plus a learning curve of ``default`` against n (random Adult subsamples, eps 0.1 and 1).
Writes ``benchmarks/results/private_pipeline.{json,md,png}`` and
``private_pipeline_learning_curve.png`` (``--quick``: ``private_pipeline_quick.*``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from _dpgd import DPGDLogisticRegression, accounted_epsilon
from _dpgd import plan as dpgd_plan
from peers_logistic import DESCRIPTIONS, load_split

import dperm
from dperm import PrivateLogisticRegression, PrivateParameterSearch
from dperm.exceptions import NoiseSwampsSignalError
from dperm.mechanisms.catalog import MECHANISMS

EPSILONS = (0.05, 0.1, 0.5, 1.0, 5.0)
DELTAS = (0.0, 1e-5)
ALPHAS = tuple(float(10.0**k) for k in np.arange(-4.0, -1.25, 0.5))  # peers_logistic's public grid
CLASSES = [0, 1]  # both data sets' public label set
DATASETS = ("adult", "kddcup99")
METHODS = ("default", "gaussian_objective_004", "auto", "recipe", "test_tuned",
           "test_tuned_no_intercept", "alg4", "random_stopping", "diffprivlib",
           "diffprivlib_test_tuned", "dpgd")
LABELS = {
    "default": "dperm default", "gaussian_objective_004": "dperm gaussian_objective_004 (004 sigma*)",
    "auto": "dperm mechanism='auto'",
    "recipe": "dperm recipe (make_private_pipeline: auto mechanism and alpha, no intercept)",
    "test_tuned": "test-tuned alpha (NOT private)",
    "test_tuned_no_intercept": "test-tuned alpha, no intercept (NOT private; peers' protocol)",
    "alg4": "PrivateParameterSearch alg4", "random_stopping": "PrivateParameterSearch random_stopping",
    "diffprivlib": "diffprivlib defaults", "diffprivlib_test_tuned": "diffprivlib test-tuned (NOT private)",
    "dpgd": "DP-GD (full batch, Gaussian)",
}
NOT_PRIVATE = {"test_tuned", "test_tuned_no_intercept", "diffprivlib_test_tuned"}
LEARNING_CURVE_N = (1000, 2000, 5000, 10000, 20000)
LEARNING_CURVE_EPSILONS = (0.1, 1.0)
RESULTS = Path(__file__).parent / "results"
DIFFPRIVLIB_MISSING = "not run: diffprivlib not installed"


def seed(draw: int) -> int:
    """The noise seed of draw ``draw``, shared by every method (peers_logistic's)."""
    return 7919 * draw + 13


# -- what this dperm offers (the registry changes across branches) --------------------------------

def auto_mechanism_available() -> bool:
    """Whether ``mechanism="auto"`` exists: in the registry or in the estimator's constraints."""
    if "auto" in MECHANISMS:
        return True
    constraints = PrivateLogisticRegression._parameter_constraints.get("mechanism", [])
    return any("auto" in getattr(c, "options", ()) for c in constraints)


def diffprivlib_version():
    """diffprivlib's version, or None if it does not import (e.g. scikit-learn >= 1.9)."""
    try:
        import diffprivlib
    except Exception:  # ImportError, or its own import failing on a newer scikit-learn
        return None
    return diffprivlib.__version__


def not_run_reason(method: str, delta: float):
    """Why ``method`` has no cell at this delta, or None when it runs."""
    if method in {"diffprivlib", "diffprivlib_test_tuned"}:
        if delta > 0:
            return "not applicable: diffprivlib's logistic regression is pure epsilon only"
        return None if diffprivlib_version() else DIFFPRIVLIB_MISSING
    if method == "random_stopping" and delta > 0:
        return "not applicable: random stopping needs pure-DP candidates (Papernot & Steinke Thm 2, pure form)"
    if method == "dpgd" and delta == 0:
        return "not applicable: DP-GD (Gaussian noise) has no pure-epsilon form"
    if method == "gaussian_objective_004":
        if delta == 0:
            return "not applicable: a Gaussian mechanism needs delta > 0"
        if "gaussian_objective_004" not in MECHANISMS:
            return "not run: this dperm has no mechanism 'gaussian_objective_004'"
    if method == "auto" and not auto_mechanism_available():
        return "not run: this dperm has no mechanism='auto'"
    return None


# -- the estimators ----------------------------------------------------------------------------

def dperm_params(delta: float, mechanism=None) -> dict:
    """The user's parameters at this delta: nothing but the budget (and the mechanism for delta > 0)."""
    if delta == 0:
        return {} if mechanism is None else {"mechanism": mechanism}
    return {"delta": delta, "mechanism": mechanism or "gaussian_objective"}


def dperm_model(epsilon, delta, random_state, mechanism=None, **extra):
    return PrivateLogisticRegression(epsilon=epsilon, classes=CLASSES, random_state=random_state,
                                     **dperm_params(delta, mechanism), **extra)


def diffprivlib_model(epsilon, random_state, alpha=None, n=None):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LogisticRegression as DiffprivlibLR

    if alpha is None:  # as a user runs it: defaults, the public norm bound given
        return DiffprivlibLR(epsilon=epsilon, data_norm=1.0, random_state=random_state,
                             accountant=BudgetAccountant())
    # peers_logistic's protocol: 003 Alg. 2 with Lambda = 1/(n C), no intercept
    return DiffprivlibLR(epsilon=epsilon, data_norm=1.0, fit_intercept=False, C=1.0 / (n * alpha),
                         tol=1e-8, max_iter=1000, random_state=random_state, accountant=BudgetAccountant())


def search(method, epsilon, delta, random_state, stopping_mean):
    extra = {"stopping_mean": stopping_mean} if method == "random_stopping" else {}
    return PrivateParameterSearch(PrivateLogisticRegression(classes=CLASSES, **dperm_params(delta)),
                                  {"alpha": list(ALPHAS)}, epsilon=epsilon, classes=CLASSES,
                                  method=method, random_state=random_state, **extra)


def error(model, data) -> float:
    return float(np.mean(model.predict(data[2]) != data[3]))


def one_draw(method, data, epsilon, delta, draw, options) -> dict:
    """Test error(s) of one draw of ``method``: ``{"error": e, ...}`` or ``{"per_alpha": {...}}``."""
    X, y = data[0], data[1]
    rs = seed(draw)
    if method in {"default", "auto", "gaussian_objective_004"}:
        mechanism = {"default": None, "auto": "auto", "gaussian_objective_004": method}[method]
        model = dperm_model(epsilon, delta, rs, mechanism).fit(X, y)
        out = {"error": error(model, data), "alpha_": float(getattr(model, "alpha_", model.alpha))}
        chosen = getattr(getattr(model, "privacy_", None), "mechanism", None)
        return out if chosen is None else {**out, "mechanism": str(chosen)}
    if method == "recipe":  # the estimator settings of dperm.preprocessing.make_private_pipeline
        model = dperm_model(epsilon, delta, rs, "auto", fit_intercept=False).fit(X, y)
        return {"error": error(model, data), "alpha_": float(model.alpha_),
                "mechanism": str(model.privacy_.mechanism)}
    if method in {"test_tuned", "test_tuned_no_intercept"}:
        extra = {"fit_intercept": False} if method == "test_tuned_no_intercept" else {}
        return {"per_alpha": {a: error(dperm_model(epsilon, delta, rs, alpha=a, **extra).fit(X, y), data)
                              for a in ALPHAS}}
    if method in {"alg4", "random_stopping"}:
        fitted = search(method, epsilon, delta, rs, options["stopping_mean"]).fit(X, y)
        return {"error": error(fitted, data), "picked_alpha": float(fitted.best_params_["alpha"])}
    if method == "diffprivlib":
        return {"error": error(diffprivlib_model(epsilon, rs).fit(X, y), data)}
    if method == "diffprivlib_test_tuned":
        return {"per_alpha": {a: error(diffprivlib_model(epsilon, rs, a, X.shape[0]).fit(X, y), data)
                              for a in ALPHAS}}
    if method == "dpgd":
        model = DPGDLogisticRegression(epsilon, delta, CLASSES, random_state=rs).fit(X, y)
        p = model.plan_
        return {"error": error(model, data), "alpha": p.alpha, "n_steps": p.n_steps,
                "noise_multiplier": p.noise_multiplier}
    raise ValueError(f"unknown method {method!r}; choose from {METHODS}")


def summarise(method, draws: list) -> dict:
    """Mean/std over draws; a test-tuned cell picks the alpha of lowest mean test error."""
    if "per_alpha" in draws[0]:
        means = {a: float(np.mean([d["per_alpha"][a] for d in draws])) for a in ALPHAS}
        best = min(ALPHAS, key=means.get)
        errors = [d["per_alpha"][best] for d in draws]
        extra = {"alpha": best, "mean_per_alpha": {str(a): m for a, m in means.items()}}
    else:
        errors = [d["error"] for d in draws]
        keys = sorted({k for d in draws for k in d} - {"error"})
        extra = {k: [d.get(k) for d in draws] for k in keys}
    return {"mean": float(np.mean(errors)), "std": float(np.std(errors, ddof=1)) if len(errors) > 1 else 0.0,
            "errors": errors, **extra}


def cpu_seconds() -> float:
    """CPU time of this process and its reaped workers (load-independent, unlike wall time)."""
    children = os.times()
    return time.process_time() + children.children_user + children.children_system


#: The data of the running cell, inherited by forked workers (``--jobs``) instead of pickled.
_SHARED: dict = {}


def one_draw_quietly(method, epsilon, delta, draw, options, *, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return one_draw(method, data, epsilon, delta, draw, options)


def _draw_task(task):
    return one_draw_quietly(*task, data=_SHARED["data"])


def run_cell(dataset, data, epsilon, delta, method, options) -> dict:
    cell = {"dataset": dataset, "epsilon": epsilon, "delta": delta, "method": method,
            "label": LABELS[method], "private": method not in NOT_PRIVATE}
    reason = not_run_reason(method, delta)
    if reason:
        return {**cell, "status": reason}
    load_before, start, cpu_start = os.getloadavg(), time.perf_counter(), cpu_seconds()
    tasks = [(method, epsilon, delta, draw, options) for draw in range(options["draws"])]
    if options.get("jobs", 1) > 1:  # forked workers inherit the data; results do not depend on jobs
        _SHARED["data"] = data
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(options["jobs"], mp_context=context) as pool:
            draws = list(pool.map(_draw_task, tasks))
    else:
        draws = [one_draw_quietly(*task, data=data) for task in tasks]
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
    if method == "dpgd":  # the calibration (exact GDP) cross-checked by dp-accounting's PLD accountant
        cell["dp_accounting_pld_epsilon"] = accounted_epsilon(draws[0]["n_steps"], draws[0]["noise_multiplier"],
                                                              delta)
    return {**cell, "status": "ok", "draws": options["draws"], **summarise(method, draws),
            "seconds": seconds, "cpu_seconds": cpu, "loadavg_before": list(load_before), "loadavg_after": list(os.getloadavg())}


# -- learning curve ------------------------------------------------------------------------------

def learning_curve(data, sizes, epsilons, draws) -> list:
    """``default`` on random training subsamples of public size n (fresh subsample per draw)."""
    X, y = data[0], data[1]
    cells = []
    for delta in DELTAS:
        for epsilon in epsilons:
            for n in sizes:
                errors, alphas, start, cpu_start = [], [], time.perf_counter(), cpu_seconds()
                status = "ok"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for draw in range(draws):
                        rows = np.random.default_rng(10_000 + draw).choice(X.shape[0], size=n, replace=False)
                        try:
                            model = dperm_model(epsilon, delta, seed(draw)).fit(X[rows], y[rows])
                        except NoiseSwampsSignalError as refusal:  # public n, d, epsilon: every draw alike
                            status = f"refused: {refusal}"
                            break
                        errors.append(error(model, data))
                        alphas.append(float(getattr(model, "alpha_", model.alpha)))
                ran = len(errors)
                cells.append({"n": int(n), "epsilon": epsilon, "delta": delta, "status": status,
                              "mean": float(np.mean(errors)) if ran else None,
                              "std": float(np.std(errors, ddof=1)) if ran > 1 else 0.0, "errors": errors,
                              "alpha_": alphas, "draws": max(ran, 1), "seconds": time.perf_counter() - start,
                              "cpu_seconds": cpu_seconds() - cpu_start})
                shown = f"{cells[-1]['mean']:.4f}" if ran else "refused (the noise would swamp the signal)"
                print(f"  learning curve n={n} eps={epsilon:g} delta={delta:g}: {shown}", flush=True)
    return cells


# -- data ---------------------------------------------------------------------------------------

def subsample(data, n_train, n_test, rng_seed=0):
    """A fixed random subset of the rows (``--quick``/``--max-train``): public sizes, seed 0."""
    rng = np.random.default_rng(rng_seed)
    X, y, Xt, yt = data
    rows = rng.choice(X.shape[0], size=min(n_train, X.shape[0]), replace=False) if n_train else slice(None)
    test = rng.choice(Xt.shape[0], size=min(n_test, Xt.shape[0]), replace=False) if n_test else slice(None)
    return X[rows], y[rows], Xt[test], yt[test]


# -- reporting ----------------------------------------------------------------------------------

def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def setting(delta: float) -> str:
    return "pure" if delta == 0 else f"delta={delta:g}"


def markdown(result: dict) -> str:
    lines = [f"Test error, mean +- std over {result['options']['draws']} draws (same data and noise "
             "seeds for every column); NOT private columns choose alpha on the test set.", ""]
    for dataset, block in result["datasets"].items():
        for delta in result["options"]["deltas"]:
            cells = [c for c in block["cells"] if c["delta"] == delta]
            methods = [m for m in result["options"]["methods"]
                       if any(c["method"] == m and c["status"] == "ok" for c in cells)]
            skipped = sorted({f"{c['method']}: {c['status']}" for c in cells if c["status"] != "ok"})
            lines += [f"### {dataset}, {setting(delta)}", "",
                      "| epsilon | " + " | ".join(LABELS[m] for m in methods) + " |",
                      "|---" * (len(methods) + 1) + "|"]
            for eps in result["options"]["epsilons"]:
                row = []
                for m in methods:
                    c = next(c for c in cells if c["method"] == m and c["epsilon"] == eps)
                    note = f" (a={c['alpha']:.0e})" if "alpha" in c and not isinstance(c["alpha"], list) else ""
                    row.append(f"{c['mean']:.4f} +- {c['std']:.4f}{note}")
                lines.append(f"| {eps:g} | " + " | ".join(row) + " |")
            lines += [""] + [f"- {s}" for s in skipped] + [""]
    if result.get("learning_curve"):
        lines += ["### Learning curve of dperm default on Adult subsamples", "",
                  "| n | epsilon | setting | test error |", "|---|---|---|---|"]
        lines += [f"| {c['n']} | {c['epsilon']:g} | {setting(c['delta'])} | "
                  + (f"{c['mean']:.4f} +- {c['std']:.4f} |" if c["mean"] is not None
                     else "refused before the spend: the noise would swamp every coefficient |")
                  for c in result["learning_curve"]]
    return "\n".join(lines) + "\n"


STYLES = {"default": ("C0", "-", "o"), "recipe": ("C8", "-", "h"),
          "test_tuned_no_intercept": ("0.5", "--", "+"), "gaussian_objective_004": ("C5", "-", "v"), "auto": ("C6", "-", "P"),
          "test_tuned": ("k", "--", "x"), "alg4": ("C1", "-", "s"), "random_stopping": ("C2", "-", "^"),
          "diffprivlib": ("C3", "-", "D"), "diffprivlib_test_tuned": ("C3", "--", "d"),
          "dpgd": ("C4", "-", "*")}


def plot(result: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    datasets, deltas = list(result["datasets"]), result["options"]["deltas"]
    fig, axes = plt.subplots(len(datasets), len(deltas), figsize=(6 * len(deltas), 4.2 * len(datasets)),
                             squeeze=False)
    for i, dataset in enumerate(datasets):
        for j, delta in enumerate(deltas):
            ax = axes[i][j]
            for method in result["options"]["methods"]:
                cells = sorted((c for c in result["datasets"][dataset]["cells"]
                                if c["method"] == method and c["delta"] == delta and c["status"] == "ok"),
                               key=lambda c: c["epsilon"])
                if cells:
                    color, line, marker = STYLES[method]
                    ax.errorbar([c["epsilon"] for c in cells], [c["mean"] for c in cells],
                                yerr=[c["std"] for c in cells], color=color, linestyle=line, marker=marker,
                                capsize=2, label=LABELS[method])
            ax.set_xscale("log")
            ax.set_title(f"{dataset}, {setting(delta)}")
            ax.set_xlabel("total epsilon")
            ax.set_ylabel("test error")
            ax.legend(fontsize=7)
    fig.suptitle(f"Test error (mean +- std of {result['options']['draws']} draws) against total epsilon; "
                 "dashed: alpha chosen on the test set (NOT private)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_learning_curve(cells: list, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for k, (eps, delta) in enumerate(sorted({(c["epsilon"], c["delta"]) for c in cells})):
        sub = sorted((c for c in cells if c["epsilon"] == eps and c["delta"] == delta
                      and c["mean"] is not None), key=lambda c: c["n"])
        ax.errorbar([c["n"] for c in sub], [c["mean"] for c in sub], yerr=[c["std"] for c in sub],
                    marker="o", capsize=2, color=f"C{k}", label=f"default, eps={eps:g}, {setting(delta)}")
    ax.set_xscale("log")
    ax.set_xlabel("training rows n (Adult subsample)")
    ax.set_ylabel("test error")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def runtime_estimate(result: dict, draws: int = 20, epsilons=EPSILONS, key: str = "seconds") -> dict:
    """Seconds a full run would take, per dataset and method, from this run's per-draw times.

    Valid only when this run used the full data (no ``--quick``/``--max-train``): the fits'
    cost grows with n. DP-GD's cost is per step, and its number of steps grows with epsilon
    (:func:`_dpgd.plan`), so it is scaled by the full run's total steps; the learning curve
    by the full run's total of subsample sizes. ``key="cpu_seconds"``: CPU time, what one
    process would take on a quiet machine (divide by ``--jobs`` for the wall time).
    """
    out = {}
    for dataset, block in result["datasets"].items():
        per = {}
        for c in block["cells"]:
            if c["status"] != "ok":
                continue
            if c["method"] == "dpgd":
                full_steps = sum(dpgd_plan(block["n_train"], block["d"], e, c["delta"]).n_steps for e in epsilons)
                per.setdefault("dpgd", []).append(c[key] / sum(c["n_steps"]) * draws * full_steps)
            else:
                per.setdefault(c["method"], []).append(c[key] / c["draws"] * draws * len(epsilons))
        n_settings = {m: len({c["delta"] for c in block["cells"] if c["method"] == m and c["status"] == "ok"})
                      for m in per}
        out[dataset] = {m: float(np.mean(v) * n_settings[m]) for m, v in per.items()}
        if dataset == "adult" and result.get("learning_curve"):
            curve = result["learning_curve"]
            ran = sum(c["n"] for c in curve)
            full = sum(c["n"] for c in curve if c["n"] == block["n_train"]) * (1 + sum(LEARNING_CURVE_N)
                                                                                 / block["n_train"])
            out[dataset]["learning_curve"] = float(sum(c[key] / c["draws"] for c in curve) * draws
                                                   * full / ran)
        out[dataset]["total"] = float(sum(out[dataset].values()))
    return out


# -- main ---------------------------------------------------------------------------------------

def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", "--runs", dest="draws", type=int, default=20,
                        help="noise draws per cell (>= 20 for the issue's targets; --runs is the old name)")
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--deltas", type=float, nargs="+", default=list(DELTAS))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes over the draws of a cell (fork; same results as --jobs 1); "
                             "the machine's load changes the recorded seconds either way")
    parser.add_argument("--stopping-mean", type=float, default=10.0,
                        help="E[K] of random stopping (public; run time only under pure DP)")
    parser.add_argument("--learning-curve-n", type=int, nargs="*", default=list(LEARNING_CURVE_N),
                        help="Adult subsample sizes (the full training set is added); empty: no curve")
    parser.add_argument("--max-train", type=int, default=None, help="use a random subset of the training rows")
    parser.add_argument("--max-test", type=int, default=None, help="use a random subset of the test rows")
    parser.add_argument("--data-home", default=None, help="directory with the data (or DPERM_DATA)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2 draws, eps 0.1 and 1, 2,000 training / 5,000 test rows, "
                             "E[K]=3, a two-point learning curve; writes private_pipeline_quick.*")
    parser.add_argument("--out", default=None, help="JSON path (the .md and .png go beside it)")
    parser.add_argument("--merge", action="store_true",
                        help="replace only this run's cells (and learning curve) in the JSON at --out, "
                             "keeping the others; each replaced cell records this run's commit")
    args = parser.parse_args(argv)
    if args.quick:
        args.draws = min(args.draws, 2)
        args.epsilons = [e for e in args.epsilons if e in (0.1, 1.0)] or args.epsilons[:2]
        args.max_train = args.max_train or 2000
        args.max_test = args.max_test or 5000
        args.stopping_mean = min(args.stopping_mean, 3.0)
        args.learning_curve_n = [n for n in args.learning_curve_n if n < args.max_train][:1]
    default_name = "private_pipeline_quick.json" if args.quick else "private_pipeline.json"
    args.out = Path(args.out or RESULTS / default_name)
    return args


def run(args) -> dict:
    options = {"draws": args.draws, "jobs": args.jobs, "epsilons": args.epsilons, "deltas": args.deltas, "methods": args.methods,
               "stopping_mean": args.stopping_mean, "alphas": list(ALPHAS), "max_train": args.max_train,
               "max_test": args.max_test, "quick": args.quick}
    result = {"benchmark": "private_pipeline", "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "git_commit": git_commit(), "options": options,
              "versions": {"dperm": dperm.__version__, "diffprivlib": diffprivlib_version(),
                           "numpy": np.__version__, "python": platform.python_version()},
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "loadavg_start": list(os.getloadavg())},
              "available": {"mechanisms": sorted(MECHANISMS), "auto_mechanism": auto_mechanism_available()},
              "datasets": {}}
    started = time.perf_counter()
    for dataset in args.datasets:
        data = subsample(load_split(dataset, args.data_home), args.max_train, args.max_test)
        block = {"description": DESCRIPTIONS[dataset], "n_train": int(data[0].shape[0]),
                 "n_test": int(data[2].shape[0]), "d": int(data[0].shape[1]), "cells": []}
        result["datasets"][dataset] = block
        for delta in args.deltas:
            for epsilon in args.epsilons:
                for method in args.methods:
                    cell = run_cell(dataset, data, epsilon, delta, method, options)
                    block["cells"].append(cell)
                    if cell["status"] == "ok":
                        print(f"{dataset} {setting(delta)} eps={epsilon:g} {method}: {cell['mean']:.4f} "
                              f"+- {cell['std']:.4f} [{cell['seconds']:.1f} s]", flush=True)
        if dataset == "adult" and args.learning_curve_n:
            sizes = sorted({n for n in args.learning_curve_n if n < data[0].shape[0]} | {data[0].shape[0]})
            result["learning_curve"] = learning_curve(data, sizes, LEARNING_CURVE_EPSILONS, args.draws)
    result["runtime_seconds"] = time.perf_counter() - started
    result["machine"]["loadavg_end"] = list(os.getloadavg())
    result["runtime_estimate_full_seconds"] = {
        "note": "20 draws x 5 epsilons from this run's seconds per draw (DP-GD: per step); valid when "
                "this run used the full data (no --quick/--max-train); scales with machine load "
                "(see machine.loadavg_*)",
        **runtime_estimate(result)}
    result["cpu_estimate_full_seconds"] = {
        "note": "the same from CPU seconds: one process on a quiet machine (--jobs k: about 1/k of it)",
        **runtime_estimate(result, key="cpu_seconds")}
    return result


def merge(old: dict, new: dict) -> dict:
    """``old`` with ``new``'s cells (and learning curve) in place of the same (eps, delta, method)."""
    for dataset, block in new["datasets"].items():
        for cell in block["cells"]:
            cell["git_commit"] = new["git_commit"]
        key = lambda c: (c["epsilon"], c["delta"], c["method"])  # noqa: E731
        fresh = {key(c): c for c in block["cells"]}
        kept = old["datasets"].setdefault(dataset, {**block, "cells": []})
        kept["cells"] = [fresh.pop(key(c), c) for c in kept["cells"]] + list(fresh.values())
    if new.get("learning_curve"):
        old["learning_curve"] = new["learning_curve"]
    old.setdefault("updates", []).append({k: new[k] for k in ("created", "git_commit", "options", "runtime_seconds")})
    return old


def main(argv=None) -> dict:
    args = parse(argv)
    result = run(args)
    if args.merge and args.out.exists():
        result = merge(json.loads(args.out.read_text(encoding="utf-8")), result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    table = markdown(result)
    args.out.with_suffix(".md").write_text(table, encoding="utf-8")
    plot(result, args.out.with_suffix(".png"))
    if result.get("learning_curve"):
        plot_learning_curve(result["learning_curve"], args.out.with_name(args.out.stem + "_learning_curve.png"))
    print(table)
    print(f"runtime {result['runtime_seconds']:.0f} s; full-run estimate (s): "
          f"{json.dumps(result['runtime_estimate_full_seconds'], indent=1)}; from CPU time: "
          f"{json.dumps(result['cpu_estimate_full_seconds'], indent=1)}")
    return result


if __name__ == "__main__":
    main()
