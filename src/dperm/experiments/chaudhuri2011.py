"""Reproduction of Chaudhuri, Monteleoni & Sarwate (2011), Sec. 7: Tables 1-2, Figs. 2-5.

Protocol (003 Sec. 7.2): for each Lambda of the paper's grid, 10-fold
cross-validation; non-private error averaged over folds, private error over
folds x noise draws (50 in the paper); Table 1 on all Adult rows without
missing values, Table 2 on a 70,000-row subset of KDDCup99; epsilon = 0.1;
logistic loss and Huber loss with h = 0.5; output perturbation (Alg. 1) and
objective perturbation (Alg. 2). Figs. 2-3 plot error against epsilon at the
best Lambda of the table; Figs. 4-5 are learning curves with private tuning
(Alg. 4) on KDDCup99.

Every private fit goes through :mod:`dperm.mechanisms`. For output
perturbation the exact minimiser of a (fold, loss, Lambda) is solved once and
each draw adds fresh noise to it, which is exactly Alg. 1 run again (its solve
is deterministic). Seeds are recorded in the results.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.model_selection import StratifiedKFold

from dperm.catalog import LOSSES as LOSS_TABLE
from dperm.experiments._report import (
    misclassification_error,
    output_dir,
    pyplot_or_none,
    report_progress,
    save_figure,
    say,
    signed_labels,
    summary_stats,
    write_json,
    write_lines,
)
from dperm.losses import get_loss
from dperm.mechanisms import ERMProblem, objective_perturbation
from dperm.mechanisms.output import release_output
from dperm.solvers import RegularizedMarginObjective, minimize_certified

__all__ = [
    "EPSILON", "FIGURES", "HUBER_WIDTH", "LEARNING_EPSILONS", "LOSSES", "MAX_ITER", "TABLE1_GRID",
    "TEST_SIZE", "TOL", "VALIDATION_SIZE", "fold_cell", "run", "save", "table_markdown",
]

HUBER_WIDTH = 0.5
EPSILON = 0.1
TOL = 1e-8
MAX_ITER = 5000
#: The losses of 003's experiments (Sec. 6: LR and Huber SVM), from :data:`dperm.catalog.LOSSES`.
LOSSES = tuple(info.name for info in LOSS_TABLE.values() if info.paper_label)
_ROWS = ("nonprivate", "output", "objective")
TABLE1_GRID = (1e-10, 1e-7, 1e-4, 10**-3.5, 1e-3, 10**-2.5, 1e-2, 10**-1.5)
_TABLE2_GRID = (1e-9, 1e-7, 1e-5, 10**-3.5, 1e-3, 10**-2.5, 1e-2, 10**-1.5)

#: 003 Table 1 (Adult, eps = 0.1): loss -> row -> errors over TABLE1_GRID.
_PAPER_TABLE1 = {
    "logistic": {
        "nonprivate": (0.1540, 0.1533, 0.1654, 0.1694, 0.1758, 0.1895, 0.2322, 0.2478),
        "output": (0.5318, 0.5318, 0.5175, 0.4928, 0.4310, 0.3163, 0.2395, 0.2456),
        "objective": (0.8619, 0.8619, 0.8619, 0.2694, 0.2369, 0.2161, 0.2305, 0.2475),
    },
    "huber": {
        "nonprivate": (0.1527, 0.1521, 0.1632, 0.1669, 0.1719, 0.1793, 0.2454, 0.2478),
        "output": (0.5318, 0.5318, 0.5211, 0.5011, 0.4464, 0.3352, 0.2376, 0.2476),
        "objective": (0.2582, 0.2582, 0.2582, 0.2582, 0.2559, 0.2046, 0.2319, 0.2478),
    },
}
#: 003 Table 2 (KDDCup99, 70,000 examples, eps = 0.1) over _TABLE2_GRID.
_PAPER_TABLE2 = {
    "logistic": {
        "nonprivate": (0.0016, 0.0016, 0.0021, 0.0038, 0.0037, 0.0037, 0.0325, 0.0594),
        "output": (0.5245, 0.5245, 0.5093, 0.3518, 0.1114, 0.0359, 0.0304, 0.0678),
        "objective": (0.3170, 0.3170, 0.3170, 0.0196, 0.0118, 0.0113, 0.0285, 0.0909),
    },
    "huber": {
        "nonprivate": (0.0013, 0.0013, 0.0013, 0.0029, 0.0051, 0.0056, 0.0061, 0.0163),
        "output": (0.5245, 0.5245, 0.5229, 0.4611, 0.3353, 0.0590, 0.0092, 0.0179),
        "objective": (0.1207, 0.1207, 0.1207, 0.2622, 0.0478, 0.0086, 0.0064, 0.0157),
    },
}


def fold_cell(X, y_signed, train, test, loss_name, alpha, epsilon, runs, seed):
    """One (fold, loss, Lambda): the non-private error and ``runs`` draws of each mechanism.

    Returns
    -------
    dict with keys ``nonprivate`` (float), ``output`` and ``objective`` (lists).
    """
    problem = ERMProblem(X[train], y_signed[train], get_loss(loss_name, h=HUBER_WIDTH), alpha, 1.0)
    X_test, y_test = X[test], y_signed[test]
    exact = _exact(problem.loss, problem.X, problem.y, alpha)
    output, objective = _private_errors(problem, exact.coef, problem, epsilon, runs, np.random.default_rng(seed),
                                        X_test, y_test)
    return {"nonprivate": misclassification_error(exact.coef, X_test, y_test), "output": output,
            "objective": objective, "certified": bool(exact.certified)}


def _exact(loss, X, y_signed, alpha):
    """The certified non-private minimiser (what Alg. 1 perturbs)."""
    return minimize_certified(RegularizedMarginObjective(loss, X, y_signed, alpha), tol=TOL, max_iter=MAX_ITER)


def _private_errors(output_problem, exact_coef, objective_problem, epsilon, runs, rng, X_test, y_test):
    """Test errors of ``runs`` draws of output perturbation (Alg. 1 at ``exact_coef``), then of objective (Alg. 2)."""
    output = [misclassification_error(release_output(output_problem, exact_coef, epsilon, TOL, rng), X_test, y_test)
              for _ in range(runs)]
    objective = [misclassification_error(objective_perturbation(objective_problem, epsilon, 0.0, rng, TOL,
                                                                MAX_ITER).coef, X_test, y_test)
                 for _ in range(runs)]
    return output, objective


def _cross_validated_table(X, y, grid, *, epsilon=EPSILON, runs=50, folds=10, seed=0, n_jobs=2,
                          progress=sys.stderr) -> dict:
    """All cells of a Table 1/2-style grid: mean, std and standard error of the test error."""
    y_signed = signed_labels(y)
    splits = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y_signed))
    tasks = [(f, loss, i) for f in range(folds) for loss in LOSSES for i in range(len(grid))]
    started = time.perf_counter()
    jobs = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(fold_cell)(X, y_signed, splits[f][0], splits[f][1], loss, grid[i], epsilon, runs,
                           seed * 100_003 + 1_009 * f + 17 * i + LOSSES.index(loss))
        for f, loss, i in tasks
    )
    collected = {(loss, row, i): [] for loss in LOSSES for row in _ROWS for i in range(len(grid))}
    uncertified = 0
    for done, ((f, loss, i), cell) in enumerate(zip(tasks, jobs), start=1):
        collected[(loss, "nonprivate", i)].append(cell["nonprivate"])
        collected[(loss, "output", i)].extend(cell["output"])
        collected[(loss, "objective", i)].extend(cell["objective"])
        uncertified += not cell["certified"]
        report_progress(progress, done, len(tasks), started, f"fold {f} {loss} Lambda={grid[i]:.0e}")
    cells = {}
    for (loss, row, i), errors in collected.items():
        cells.setdefault(loss, {}).setdefault(row, []).append({"alpha": grid[i], **summary_stats(errors)})
    return {"grid": list(grid), "epsilon": epsilon, "runs": runs, "folds": folds, "seed": seed,
            "n_rows": int(X.shape[0]), "n_features": int(X.shape[1]), "cells": cells,
            "uncertified_solves": uncertified, "seconds": time.perf_counter() - started}


def _best_alphas(table: dict) -> dict:
    """The Lambda with the lowest mean error per (loss, row), as the paper picks it."""
    best = {}
    for loss, rows in table["cells"].items():
        for row, cells in rows.items():
            best[(loss, row)] = min(cells, key=lambda c: c["mean"])["alpha"]
    return best


def table_markdown(table: dict, paper: dict, title: str) -> str:
    """Paper's number beside ours (mean +- standard error) in every cell, with the z-score."""
    grid = table["grid"]
    header = "| loss | algorithm | " + " | ".join(f"10^{np.log10(a):.1f}" for a in grid) + " |"
    lines = [f"### {title}", "", header, "|---|---|" + "---|" * len(grid)]
    for loss in LOSSES:
        for row in _ROWS:
            cells = table["cells"][loss][row]
            best = min(range(len(cells)), key=lambda i: cells[i]["mean"])
            entries = []
            for i, cell in enumerate(cells):
                ours = f"{cell['mean']:.4f} +- {cell['se']:.4f}"
                if i == best:
                    ours = f"**{ours}**"
                paper_value = paper[loss][row][i]
                z = (cell["mean"] - paper_value) / cell["se"] if cell["se"] > 0 else float("nan")
                entries.append(f"{ours}<br>paper {paper_value:.4f} (z={z:+.1f})")
            lines.append(f"| {loss} | {row} | " + " | ".join(entries) + " |")
    lines.append("")
    lines.append(f"Ours: mean +- standard error over {table['folds']} folds"
                 + (f" x {table['runs']} noise draws" if table["runs"] else "")
                 + f" (private rows); n = {table['n_rows']}, d = {table['n_features']}, "
                 f"epsilon = {table['epsilon']}. z = (ours - paper) / our standard error.")
    return "\n".join(lines)


def save(results: dict, out_dir, name: str) -> Path:
    """Write ``results`` to ``<out_dir>/<name>.json``."""
    return write_json(output_dir(out_dir) / f"{name}.json", results)


# ---------------------------------------------------------------------------
# Figs. 2-3: error against epsilon at the best Lambda of the table
# ---------------------------------------------------------------------------
_EPSILON_CURVE = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


def _epsilon_curve_cell(X, y_signed, train, test, loss_name, alphas, epsilons, runs, seed):
    """One (fold, loss): output and objective errors at each epsilon, at their own Lambda."""
    loss = get_loss(loss_name, h=HUBER_WIDTH)
    X_test, y_test = X[test], y_signed[test]
    rng = np.random.default_rng(seed)
    result = {"output": {}, "objective": {}}
    output_problem = ERMProblem(X[train], y_signed[train], loss, alphas["output"], 1.0)
    exact = _exact(loss, output_problem.X, output_problem.y, alphas["output"])
    objective_problem = ERMProblem(X[train], y_signed[train], loss, alphas["objective"], 1.0)
    for eps in epsilons:
        result["output"][eps], result["objective"][eps] = _private_errors(
            output_problem, exact.coef, objective_problem, eps, runs, rng, X_test, y_test)
    if alphas["output"] != alphas["nonprivate"]:
        exact = _exact(loss, X[train], y_signed[train], alphas["nonprivate"])
    result["nonprivate"] = misclassification_error(exact.coef, X_test, y_test)
    return result


def _epsilon_curves(X, y, table: dict, *, epsilons=_EPSILON_CURVE, runs=10, folds=10, seed=0,
                   n_jobs=2, progress=sys.stderr) -> dict:
    """Figs. 2-3: mean test error against epsilon, each algorithm at its Lambda from ``table``."""
    best = _best_alphas(table)
    y_signed = signed_labels(y)
    splits = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y_signed))
    tasks = [(f, loss) for f in range(folds) for loss in LOSSES]
    started = time.perf_counter()
    jobs = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_epsilon_curve_cell)(X, y_signed, splits[f][0], splits[f][1], loss,
                                    {row: best[(loss, row)] for row in _ROWS}, epsilons, runs,
                                    seed * 7_919 + 31 * f + LOSSES.index(loss))
        for f, loss in tasks)
    collected = {}
    for done, ((f, loss), cell) in enumerate(zip(tasks, jobs), start=1):
        for row in ("output", "objective"):
            for eps, errors in cell[row].items():
                collected.setdefault((loss, row, eps), []).extend(errors)
        collected.setdefault((loss, "nonprivate", None), []).append(cell["nonprivate"])
        report_progress(progress, done, len(tasks), started, f"fold {f} {loss}")
    curves = {}
    for (loss, row, eps), errors in collected.items():
        stats = summary_stats(errors)
        entry = {"mean": stats["mean"], "se": stats["se"], "alpha": best[(loss, row)]}
        curves.setdefault(loss, {}).setdefault(row, {})[str(eps)] = entry
    return {"epsilons": list(epsilons), "runs": runs, "folds": folds, "seed": seed,
            "curves": curves, "seconds": time.perf_counter() - started}


# ---------------------------------------------------------------------------
# Figs. 4-5: learning curves with private tuning (Alg. 4) on KDDCup99
# ---------------------------------------------------------------------------
_TUNING_GRID = (1e-3, 10**-2.5, 1e-2, 10**-1.5, 1e-1)
LEARNING_EPSILONS = (0.01, 0.05)
VALIDATION_SIZE = 25_000
TEST_SIZE = 25_000


def _learning_curve_sizes(n_available: int, n_candidates: int = len(_TUNING_GRID),
                         wanted=(60_000, 80_000, 100_000, 120_000)) -> list[int]:
    """Training sizes per candidate of 003 Sec. 7.3 that fit in the data, plus the largest that does.

    Alg. 4 needs ``m`` training parts of size ``n`` plus a validation part, and
    the experiment a test part: ``m n + 25,000 + 25,000`` rows.
    """
    largest = (n_available - VALIDATION_SIZE - TEST_SIZE) // n_candidates
    sizes = [n for n in wanted if n <= largest]
    if not sizes or sizes[-1] < largest and largest < wanted[-1]:
        sizes.append(int(largest))
    return sizes


def _tuned_run(parts, validation, X, y_signed, X_test, y_test, loss_name, mechanism, epsilon,
              exact_solves, rng):
    """One run of Alg. 4: a private model per candidate on its own part, selection by the
    exponential mechanism on the validation part; returns the selected model's test error."""
    from dperm.tuning import select_by_exponential_mechanism

    loss = get_loss(loss_name, h=HUBER_WIDTH)
    coefs, mistakes = [], []
    for alpha, part, exact in zip(_TUNING_GRID, parts, exact_solves):
        problem = ERMProblem(X[part], y_signed[part], loss, alpha, 1.0)
        if mechanism == "output":
            coef = release_output(problem, exact, epsilon, TOL, rng)
        elif mechanism == "objective":
            coef = objective_perturbation(problem, epsilon, 0.0, rng, TOL, MAX_ITER).coef
        else:
            coef = exact
        coefs.append(coef)
        mistakes.append(int(np.sum(np.where(X[validation] @ coef > 0, 1.0, -1.0) != y_signed[validation])))
    if mechanism == "nonprivate":
        index = int(np.argmin(mistakes))
    else:
        index = select_by_exponential_mechanism(mistakes, epsilon, rng)
    return misclassification_error(coefs[index], X_test, y_test)


def _learning_curve_cell(X, y_signed, permutation_seed, size, loss_name, epsilons, runs, seed):
    """One (permutation, size, loss): errors of non-private, output and objective with tuning."""
    rng = np.random.default_rng(permutation_seed)
    order = rng.permutation(X.shape[0])
    test = order[:TEST_SIZE]
    validation = order[TEST_SIZE:TEST_SIZE + VALIDATION_SIZE]
    start = TEST_SIZE + VALIDATION_SIZE
    parts = [order[start + i * size:start + (i + 1) * size] for i in range(len(_TUNING_GRID))]
    loss = get_loss(loss_name, h=HUBER_WIDTH)
    exact_solves = [_exact(loss, X[p], y_signed[p], a).coef for a, p in zip(_TUNING_GRID, parts)]
    noise_rng = np.random.default_rng(seed)
    X_test, y_test = X[test], y_signed[test]
    result = {"nonprivate": _tuned_run(parts, validation, X, y_signed, X_test, y_test, loss_name,
                                      "nonprivate", None, exact_solves, noise_rng)}
    for mechanism in ("output", "objective"):
        for eps in epsilons:
            result[(mechanism, eps)] = [
                _tuned_run(parts, validation, X, y_signed, X_test, y_test, loss_name, mechanism,
                          eps, exact_solves, noise_rng) for _ in range(runs)]
    return result


def _learning_curves(X, y, *, sizes=None, epsilons=LEARNING_EPSILONS, runs=5, permutations=3,
                    seed=0, n_jobs=2, progress=sys.stderr) -> dict:
    """Figs. 4-5: test error of the privately tuned model against the training size."""
    y_signed = signed_labels(y)
    sizes = _learning_curve_sizes(X.shape[0]) if sizes is None else list(sizes)
    tasks = [(p, n, loss) for p in range(permutations) for n in sizes for loss in LOSSES]
    started = time.perf_counter()
    jobs = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_learning_curve_cell)(X, y_signed, seed * 1_000 + p, n, loss, epsilons, runs,
                                     seed * 3_571 + 97 * p + 7 * sizes.index(n) + LOSSES.index(loss))
        for p, n, loss in tasks)
    collected = {}
    for done, ((p, n, loss), cell) in enumerate(zip(tasks, jobs), start=1):
        collected.setdefault((loss, "nonprivate", None, n), []).append(cell["nonprivate"])
        for (mechanism, eps), errors in ((k, v) for k, v in cell.items() if k != "nonprivate"):
            collected.setdefault((loss, mechanism, eps, n), []).extend(errors)
        report_progress(progress, done, len(tasks), started, f"permutation {p} n={n} {loss}")
    curves = []
    for (loss, row, eps, n), errors in collected.items():
        stats = summary_stats(errors)
        curves.append({"loss": loss, "algorithm": row, "epsilon": eps, "n": n, "mean": stats["mean"],
                       "se": stats["se"]})
    return {"sizes": sizes, "epsilons": list(epsilons), "grid": list(_TUNING_GRID), "runs": runs,
            "permutations": permutations, "seed": seed, "n_available": int(X.shape[0]),
            "curves": curves, "seconds": time.perf_counter() - started}


# ---------------------------------------------------------------------------
# Plots, report and the driver behind `dperm reproduce chaudhuri2011`
# ---------------------------------------------------------------------------
def _plot_epsilon_curves(curves: dict, title: str, path) -> Path | None:
    """Figs. 2-3: one panel per loss, error against epsilon with standard-error bars."""
    plt = pyplot_or_none()
    if plt is None:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, loss in zip(axes, LOSSES):
        rows = curves["curves"][loss]
        for row, marker in (("output", "s"), ("objective", "o")):
            eps = curves["epsilons"]
            ax.errorbar(eps, [rows[row][str(e)]["mean"] for e in eps],
                        yerr=[rows[row][str(e)]["se"] for e in eps], marker=marker, capsize=3,
                        label=f"{row} perturbation (Lambda={rows[row][str(eps[0])]['alpha']:.0e})")
        ax.axhline(rows["nonprivate"]["None"]["mean"], color="k", ls="--", label="non-private")
        ax.set_xlabel("epsilon")
        ax.set_title(f"{title}: {'logistic regression' if loss == 'logistic' else 'Huber SVM'}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("test error (10-fold CV)")
    return save_figure(plt, fig, path, dpi=120)


def _plot_learning_curves(curves: dict, path) -> Path | None:
    """Figs. 4-5: one panel per (loss, epsilon), error against training size per candidate."""
    plt = pyplot_or_none()
    if plt is None:
        return None
    epsilons = curves["epsilons"]
    fig, axes = plt.subplots(len(LOSSES), len(epsilons), figsize=(5 * len(epsilons), 7), squeeze=False)
    for i, loss in enumerate(LOSSES):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            for row, marker, key in (("nonprivate", "^", None), ("output", "s", eps), ("objective", "o", eps)):
                points = sorted((c["n"], c["mean"], c["se"]) for c in curves["curves"]
                                if c["loss"] == loss and c["algorithm"] == row and c["epsilon"] == key)
                if points:
                    n, mean, se = zip(*points)
                    ax.errorbar(n, mean, yerr=se, marker=marker, capsize=3, label=row)
            ax.set_title(f"KDDCup99 {loss}, epsilon={eps}")
            ax.set_xlabel("training rows per candidate")
            ax.set_ylabel("test error")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    return save_figure(plt, fig, path, dpi=120)


def _known_discrepancies(table: dict, paper: dict) -> list[str]:
    """Cells more than two of our standard errors from the paper, worst first."""
    rows = []
    for loss in LOSSES:
        for row in _ROWS:
            for cell, paper_value in zip(table["cells"][loss][row], paper[loss][row]):
                if cell["se"] > 0:
                    z = (cell["mean"] - paper_value) / cell["se"]
                    if abs(z) > 2:
                        rows.append((abs(z), f"{loss} {row} at Lambda=1e{np.log10(cell['alpha']):.1f}: "
                                             f"ours {cell['mean']:.4f} +- {cell['se']:.4f}, paper "
                                             f"{paper_value:.4f} (z={z:+.1f})"))
    return [text for _, text in sorted(rows, reverse=True)]


def _adult_all_rows(encoding, data_home):
    from dperm.datasets import load_adult

    adult = load_adult(encoding=encoding, data_home=data_home)
    return np.vstack([adult.X_train, adult.X_test]), np.concatenate([adult.y_train, adult.y_test])


def _small_lambda_note(table, paper, loss, row, name):
    ours = table["cells"][loss][row][0]
    return (f"- {name}: the paper reports {paper[loss][row][0]:.4f} for {loss} {row} perturbation at "
            f"the smallest Lambda; ours is {ours['mean']:.4f} +- {ours['se']:.4f}. At such Lambda "
            "eps' <= 0, so Alg. 2 switches to eps'/2 and Delta = c/(n(e^(eps/4) - 1)) - Lambda: "
            "Lambda + Delta is the same for every small Lambda, so the cells share one "
            "distribution and their error is that of a well-regularised model. A correct "
            "implementation does not reproduce the paper's number there.")


def _previous_parts(out_dir: Path, *, runs, folds, seed) -> dict:
    """Table parts of an earlier ``results.json`` in ``out_dir`` made with the same settings."""
    path = out_dir / "results.json"
    if not path.exists():
        return {}
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    if (earlier.get("runs"), earlier.get("folds"), earlier.get("seed")) != (runs, folds, seed):
        return {}
    return {name: part for name, part in earlier.get("parts", {}).items() if name.startswith("table")}


#: The figures of 003 Sec. 7 that :func:`run` reproduces: Fig. 2 (Adult, error
#: against eps), Fig. 3 (KDDCup99, the same) and Figs. 4-5 (learning curves).
FIGURES = ("2", "3", "4-5")


def _figure_set(figures) -> frozenset:
    """``True`` means every figure, ``False``/``None`` none, else names from :data:`FIGURES`."""
    if figures is True:
        return frozenset(FIGURES)
    if isinstance(figures, str):
        figures = (figures,)
    chosen = frozenset(figures or ())
    unknown = chosen - set(FIGURES)
    if unknown:
        raise ValueError(f"unknown figures {sorted(unknown)}; choose from {list(FIGURES)}")
    return chosen


def run(out_dir, *, table1=True, table2=True, figures=True, runs=50, folds=10, figure_runs=10,
        curve_runs=5, permutations=3, encodings=("constant", "unit_norm"),
        subsets=("random", "stratified"), data_home=None, seed=0,
        n_jobs=2, progress=sys.stderr) -> dict:
    """Run the requested parts, save JSON, PNG and ``report.md`` under ``out_dir``.

    ``figures`` is ``True`` (Figs. 2-5), ``False``, or a collection of names from
    :data:`FIGURES`. Fig. 2 needs Table 1 and Fig. 3 Table 2 (their best Lambda),
    so asking for them computes those tables too (or reuses them from an earlier
    ``results.json`` in ``out_dir`` made with the same runs, folds and seed).
    """
    figures = _figure_set(figures)
    out_dir = output_dir(out_dir)
    started = time.perf_counter()
    previous = _previous_parts(out_dir, runs=runs, folds=folds, seed=seed)
    results = {"seed": seed, "runs": runs, "folds": folds, "encodings": list(encodings), "parts": {}}

    def checkpoint():
        """Save what is done so far, so that an interrupted run keeps its finished parts."""
        save({**results, "parts": {**previous, **results["parts"]}}, out_dir, "results")
        write_lines(out_dir / "report.md", report)

    def table_part(name, compute):
        """Reuse a table computed earlier in ``out_dir`` with the same runs, folds and seed."""
        if name in previous:
            say(progress, f"  reusing {name} from {out_dir / 'results.json'}")
            results["parts"][name] = previous[name]
        else:
            results["parts"][name] = compute()
            checkpoint()
        return results["parts"][name]
    report = ["# Chaudhuri, Monteleoni & Sarwate (2011), Sec. 7, reproduced by dperm", "",
              "Paper numbers beside ours in every cell; ours are mean +- standard error. "
              "Lambda (alpha in dperm) is chosen per row by the lowest error, as in the paper: "
              "that choice is not private.", ""]

    if table1 or "2" in figures:
        for encoding in encodings:
            say(progress, f"Table 1: Adult, encoding {encoding}")
            X, y = _adult_all_rows(encoding, data_home)
            table = table_part(f"table1_{encoding}", lambda: _cross_validated_table(
                X, y, TABLE1_GRID, runs=runs, folds=folds, seed=seed, n_jobs=n_jobs, progress=progress))
            report += [table_markdown(table, _PAPER_TABLE1, f"Table 1: Adult, {encoding} encoding"), "",
                       _small_lambda_note(table, _PAPER_TABLE1, "logistic", "objective", "Table 1"), ""]
            report += ["Cells more than two standard errors from the paper:", ""]
            report += [f"- {line}" for line in _known_discrepancies(table, _PAPER_TABLE1)] + [""]
            if "2" in figures:
                say(progress, f"Fig. 2: Adult, encoding {encoding}")
                curves = _epsilon_curves(X, y, table, runs=figure_runs, folds=folds, seed=seed,
                                        n_jobs=n_jobs, progress=progress)
                results["parts"][f"figure2_{encoding}"] = curves
                checkpoint()
                png = _plot_epsilon_curves(curves, f"Adult ({encoding})", out_dir / f"figure2_{encoding}.png")
                if png:
                    report += [f"![Fig. 2, {encoding}]({png.name})", ""]
    if table2 or "3" in figures:
        from dperm.datasets import load_kddcup99

        for subset in subsets:
            for encoding in encodings:
                say(progress, f"Table 2: KDDCup99, {subset} 70,000-row subset, encoding {encoding}")
                kdd = load_kddcup99(data_home=data_home, subset=subset, n_samples=70_000,
                                    random_state=seed, encoding=encoding)
                table = table_part(f"table2_{subset}_{encoding}", lambda: _cross_validated_table(
                    kdd.X_train, kdd.y_train, _TABLE2_GRID, runs=runs, folds=folds, seed=seed,
                    n_jobs=n_jobs, progress=progress))
                table["positive_share"] = float(np.mean(kdd.y_train))
                report += [table_markdown(table, _PAPER_TABLE2,
                                          f"Table 2: KDDCup99, {subset} subset, {encoding} encoding"), "",
                           f"Share of denial-of-service rows: {table['positive_share']:.4f}.", "",
                           _small_lambda_note(table, _PAPER_TABLE2, "logistic", "objective", "Table 2"),
                           "", "Cells more than two standard errors from the paper:", ""]
                report += [f"- {line}" for line in _known_discrepancies(table, _PAPER_TABLE2)] + [""]
                if "3" in figures and subset == "random" and encoding == encodings[0]:
                    say(progress, "Fig. 3: KDDCup99")
                    curves = _epsilon_curves(kdd.X_train, kdd.y_train, table, runs=figure_runs,
                                            folds=folds, seed=seed, n_jobs=n_jobs, progress=progress)
                    results["parts"][f"figure3_{encoding}"] = curves
                    checkpoint()
                    png = _plot_epsilon_curves(curves, "KDDCup99", out_dir / "figure3.png")
                    if png:
                        report += [f"![Fig. 3]({png.name})", ""]
    if "4-5" in figures:
        from dperm.datasets import load_kddcup99

        say(progress, "Figs. 4-5: learning curves with private tuning on KDDCup99 (10% file)")
        kdd = load_kddcup99(data_home=data_home, encoding=encodings[0])
        curves = _learning_curves(kdd.X_train, kdd.y_train, runs=curve_runs, permutations=permutations,
                                 seed=seed, n_jobs=n_jobs, progress=progress)
        results["parts"]["figures4_5"] = curves
        png = _plot_learning_curves(curves, out_dir / "figures4_5.png")
        report += ["### Figs. 4-5: learning curves with private tuning (Alg. 4)", "",
                   f"Training sizes per candidate {curves['sizes']} (the paper: 60,000 to 120,000 "
                   f"from the full 4.9M-row file, which is not available here; the 10% file has "
                   f"{curves['n_available']} rows and Alg. 4 needs {len(_TUNING_GRID)} parts plus "
                   f"25,000 validation and 25,000 test rows). Lambda grid {list(_TUNING_GRID)}; "
                   f"{curves['permutations']} permutations x {curves['runs']} runs.", ""]
        if png:
            report += [f"![Figs. 4-5]({png.name})", ""]
    results["seconds"] = time.perf_counter() - started
    checkpoint()
    return results
