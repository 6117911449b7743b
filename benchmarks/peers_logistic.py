"""Benchmark: dperm vs IBM diffprivlib vs scikit-learn, on Adult and KDDCup99.

Run with ``make bench`` (a separate venv: diffprivlib 0.6.6 needs scikit-learn < 1.9).
``--dataset adult``: the official Adult split. ``--dataset kddcup99``: a random
70,000-row subset of the 10% training file (as 003 Table 2), tested on the
labelled ``corrected`` test set; needs ``DPERM_DATA`` or ``--data-home``.
Everything runs side by side in one process on the same data:

- accuracy: test error (mean, std over >= 20 noise draws) of private logistic regression at
  epsilon in {0.05, 0.1, 0.5, 1, 5}, best alpha of the public grid 10^-4 ... 10^-1.5 (chosen on
  test error, as the paper's tables do: not private), for
    * dperm objective perturbation on its default encoding (``unit_norm``),
    * dperm and diffprivlib on the paper's plain encoding (``constant``: rows / sqrt(14)),
    * diffprivlib on dperm's encoding (same data, same algorithm),
    * dperm Huber SVM (objective perturbation) for reference,
  beside non-private scikit-learn;
- fit time: dperm's private fit vs scikit-learn's non-private lbfgs fit at the same tolerance,
  and diffprivlib's private fit, at one (epsilon, alpha), repeated sequentially.

Writes benchmarks/results/<dataset>_logistic.json (and .md) and prints the markdown table.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from joblib import Parallel, delayed
from sklearn.linear_model import LogisticRegression

import dperm
from dperm import PrivateLinearSVC, PrivateLogisticRegression
from dperm.datasets import load_adult, load_kddcup99
from dperm.losses import get_loss
from dperm.solvers import RegularizedMarginObjective

EPSILONS = (0.05, 0.1, 0.5, 1.0, 5.0)
ALPHAS = tuple(float(10.0**k) for k in np.arange(-4.0, -1.25, 0.5))
TOL = 1e-8
MAX_ITER = 1000
RESULTS = Path(__file__).parent / "results"


def _diffprivlib_model(epsilon, alpha, n, seed):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LogisticRegression as DiffprivlibLR

    # 003 Alg. 2 term for term with data_norm=1, no intercept, Lambda = 1/(n C).
    return DiffprivlibLR(epsilon=epsilon, data_norm=1.0, fit_intercept=False, C=1.0 / (n * alpha),
                         tol=TOL, max_iter=MAX_ITER, random_state=seed,
                         accountant=BudgetAccountant())


def _model(method, epsilon, alpha, n, seed):
    common = dict(epsilon=epsilon, alpha=alpha, fit_intercept=False, tol=TOL, max_iter=MAX_ITER,
                  random_state=seed)
    if method == "dperm_lr":
        return PrivateLogisticRegression(**common)
    if method == "dperm_huber":
        return PrivateLinearSVC(loss="huber", h=0.5, **common)
    if method == "diffprivlib_lr":
        return _diffprivlib_model(epsilon, alpha, n, seed)
    raise ValueError(method)


def _cell(method, encoding, epsilon, alpha, runs, data):
    X_train, y_train, X_test, y_test = data[encoding]
    errors = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for run in range(runs):
            seed = 7919 * run + 13
            model = _model(method, epsilon, alpha, X_train.shape[0], seed).fit(X_train, y_train)
            errors.append(float(np.mean(model.predict(X_test) != y_test)))
    return {"method": method, "encoding": encoding, "epsilon": epsilon, "alpha": alpha,
            "errors": errors, "mean": float(np.mean(errors)), "std": float(np.std(errors, ddof=1))}


def _nonprivate(encoding, data):
    X_train, y_train, X_test, y_test = data[encoding]
    best = None
    for alpha in (1e-6, 1e-5) + ALPHAS:
        model = LogisticRegression(C=1.0 / (X_train.shape[0] * alpha), fit_intercept=False,
                                   tol=TOL, max_iter=MAX_ITER).fit(X_train, y_train)
        error = float(np.mean(model.predict(X_test) != y_test))
        if best is None or error < best["error"]:
            best = {"alpha": alpha, "error": error}
    return best


def _gradient_norm(X, y, alpha, coef):
    signed = np.where(y == 1, 1.0, -1.0)
    objective = RegularizedMarginObjective(get_loss("logistic"), X, signed, alpha)
    return float(np.linalg.norm(objective.gradient(np.ravel(coef))))


def load_split(dataset, data_home=None, encoding="unit_norm"):
    """One encoding of a dataset under this benchmark's protocol, as (X_train, y_train, X_test, y_test).

    Adult: the official split. KDDCup99: a random 70,000-row subset of the 10% training file
    (``random_state=0``), the labelled corrected test set. benchmarks/private_pipeline.py reuses it.
    """
    if dataset == "adult":
        bunch = load_adult(encoding=encoding, data_home=data_home)
    else:
        bunch = load_kddcup99(data_home=data_home, subset="random", n_samples=70_000,
                              random_state=0, encoding=encoding)
    return bunch.X_train, bunch.y_train, bunch.X_test, bunch.y_test


def load(dataset, data_home):
    """Both encodings of a dataset as (X_train, y_train, X_test, y_test)."""
    return {encoding: load_split(dataset, data_home, encoding) for encoding in ("unit_norm", "constant")}


DESCRIPTIONS = {
    "adult": "UCI Adult, official split, rows with missing values dropped, d = 105",
    "kddcup99": "KDD Cup 1999, denial-of-service or not: a random 70,000-row subset of the 10% "
                "training file, tested on the labelled corrected set (311,029 rows), d = 122",
}


def _timing(data, epsilon, alpha, repeats):
    """Sequential wall-clock fit times on the default encoding."""
    X, y = data["unit_norm"][:2]
    n = X.shape[0]
    timings = {"dperm_lr": [], "sklearn_lbfgs": [], "diffprivlib_lr": []}
    gradient_norms = {"sklearn_lbfgs": []}  # dperm releases no solver diagnostic; its bound is tol
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for run in range(repeats):
            start = time.perf_counter()
            _model("dperm_lr", epsilon, alpha, n, run).fit(X, y)  # raises unless ||grad|| <= tol
            timings["dperm_lr"].append(time.perf_counter() - start)

            start = time.perf_counter()
            model = LogisticRegression(C=1.0 / (n * alpha), fit_intercept=False, tol=TOL,
                                       max_iter=MAX_ITER).fit(X, y)
            timings["sklearn_lbfgs"].append(time.perf_counter() - start)
            gradient_norms["sklearn_lbfgs"].append(_gradient_norm(X, y, alpha, model.coef_))

            start = time.perf_counter()
            _model("diffprivlib_lr", epsilon, alpha, n, run).fit(X, y)
            timings["diffprivlib_lr"].append(time.perf_counter() - start)
    medians = {k: float(np.median(v)) for k, v in timings.items()}
    return {
        "epsilon": epsilon, "alpha": alpha, "tol": TOL, "repeats": repeats,
        "median_seconds": medians,
        "ratio_dperm_to_sklearn": medians["dperm_lr"] / medians["sklearn_lbfgs"],
        "ratio_diffprivlib_to_sklearn": medians["diffprivlib_lr"] / medians["sklearn_lbfgs"],
        "median_final_gradient_norm": {k: float(np.median(v)) for k, v in gradient_norms.items()},
        "note": "dperm tol bounds the L2 norm of the gradient of the perturbed objective and is "
                "certified (a fit that misses it raises; the solver's own gradient norm is a function "
                "of the private rows and is not released, so it is not reported); scikit-learn's tol is L-BFGS-B's max-abs projected gradient (gtol) "
                "with ftol = 64 machine eps, so it may stop earlier: its final L2 gradient norm "
                "of the unperturbed objective is reported beside it.",
    }


def _best(cells):
    best = {}
    for cell in cells:
        key = (cell["method"], cell["encoding"], cell["epsilon"])
        if key not in best or cell["mean"] < best[key]["mean"]:
            best[key] = cell
    return best


COLUMNS = [
    ("dperm_lr", "unit_norm", "dperm LR (unit_norm, default)"),
    ("diffprivlib_lr", "unit_norm", "diffprivlib LR (unit_norm)"),
    ("dperm_lr", "constant", "dperm LR (constant)"),
    ("diffprivlib_lr", "constant", "diffprivlib LR (constant)"),
    ("dperm_huber", "unit_norm", "dperm Huber (unit_norm)"),
]


def markdown_table(results):
    best = {(c["method"], c["encoding"], c["epsilon"]): c for c in results["best"]}
    lines = ["| epsilon | " + " | ".join(label for *_, label in COLUMNS)
             + " | dperm default - diffprivlib (constant) |",
             "|---" * (len(COLUMNS) + 2) + "|"]
    for eps in results["epsilons"]:
        cells = []
        for method, encoding, _ in COLUMNS:
            cell = best[(method, encoding, eps)]
            cells.append(f"{cell['mean']:.4f} +- {cell['std']:.4f} (a=10^{np.log10(cell['alpha']):.1f})")
        gain = best[("dperm_lr", "unit_norm", eps)]["mean"] - best[("diffprivlib_lr", "constant", eps)]["mean"]
        lines.append(f"| {eps:g} | " + " | ".join(cells) + f" | {gain:+.4f} |")
    nonprivate = results["nonprivate"]
    lines.append(f"| non-private (sklearn) | {nonprivate['unit_norm']['error']:.4f} | "
                 f"{nonprivate['unit_norm']['error']:.4f} | {nonprivate['constant']['error']:.4f} | "
                 f"{nonprivate['constant']['error']:.4f} | | |")
    t = results["timing"]
    lines.append("")
    lines.append(f"Fit time at eps={t['epsilon']:g}, alpha={t['alpha']:.2g}, tol={t['tol']:g} "
                 f"(median of {t['repeats']}): dperm {t['median_seconds']['dperm_lr']*1000:.0f} ms, "
                 f"scikit-learn lbfgs {t['median_seconds']['sklearn_lbfgs']*1000:.0f} ms, diffprivlib "
                 f"{t['median_seconds']['diffprivlib_lr']*1000:.0f} ms; ratio dperm/sklearn "
                 f"{t['ratio_dperm_to_sklearn']:.2f}, diffprivlib/sklearn {t['ratio_diffprivlib_to_sklearn']:.2f}. "
                 f"Final L2 gradient norm: dperm <= {t['tol']:g} (certified), "
                 f"sklearn {t['median_final_gradient_norm']['sklearn_lbfgs']:.1e}.")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="noise draws per cell (>= 20 for the README)")
    parser.add_argument("--timing-repeats", type=int, default=15)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--dataset", choices=sorted(DESCRIPTIONS), default="adult")
    parser.add_argument("--data-home", default=None, help="directory with kddcup99/ (or DPERM_DATA)")
    parser.add_argument("--out", default=None, help="JSON path (default results/<dataset>_logistic.json)")
    parser.add_argument("--timing-only", action="store_true",
                        help="re-measure only the fit times (run alone on a quiet machine) and "
                             "update them in the existing JSON")
    args = parser.parse_args()
    out = Path(args.out or RESULTS / f"{args.dataset}_logistic.json")
    data = load(args.dataset, args.data_home)
    if args.timing_only:
        results = json.loads(out.read_text(encoding="utf-8"))
        results["timing"] = _timing(data, 0.1, 10**-2.5, args.timing_repeats)
        results["timing"]["measured"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        table = markdown_table(results)
        out.with_suffix(".md").write_text(table + "\n", encoding="utf-8")
        print(table)
        return
    tasks = [(method, encoding, eps, alpha) for method, encoding, _ in COLUMNS
             for eps in EPSILONS for alpha in ALPHAS]
    started = time.perf_counter()
    cells = Parallel(n_jobs=args.jobs, verbose=5)(
        delayed(_cell)(method, encoding, eps, alpha, args.runs, data)
        for method, encoding, eps, alpha in tasks
    )
    accuracy_seconds = time.perf_counter() - started
    import diffprivlib

    results = {
        "benchmark": f"{args.dataset}_logistic",
        "data": DESCRIPTIONS[args.dataset],
        "epsilons": list(EPSILONS),
        "alphas": list(ALPHAS),
        "runs": args.runs,
        "alpha_choice": "best mean test error over the public grid (as 003 Table 1; not private)",
        "nonprivate": {enc: _nonprivate(enc, data) for enc in data},
        "best": list(_best(cells).values()),
        "cells": cells,
        "timing": _timing(data, 0.1, 10**-2.5, args.timing_repeats),
        "accuracy_seconds": accuracy_seconds,
        "versions": {"dperm": dperm.__version__, "diffprivlib": diffprivlib.__version__,
                     "scikit-learn": sklearn.__version__, "numpy": np.__version__,
                     "python": platform.python_version()},
        "machine": {"cpus": __import__("os").cpu_count(), "platform": platform.platform()},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    table = markdown_table(results)
    out.with_suffix(".md").write_text(table + "\n", encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
