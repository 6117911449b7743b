"""The main job (``dperm demo``): privacy versus accuracy on the embedded Adult data.

Trains output- and objective-perturbation logistic regression and Huber SVM
(h = 0.5) over a range of epsilon on the official Adult split, in the spirit of
Chaudhuri et al. (2011), Table 1 and Fig. 2, and reports two things, in this order:

1. **Private end to end.** Each estimator as a user would run it: the
   estimator's *default* ``alpha`` (whatever the estimators define; with
   ``alpha="auto"`` the value chosen from public quantities, read back from the
   fitted ``alpha_``), the public label set, nothing looked up on test labels.
   These numbers carry the privacy guarantee of one fit each.
2. **Reference, not private.** For each (loss, mechanism, epsilon) the
   ``alpha`` of a public grid with the lowest mean test error, as the paper's
   tables do, and the non-private exact minimiser with its alpha chosen the same
   way. That choice looks at test labels and is **not private**; the output
   labels it so. Private tuning is :class:`dperm.tuning.PrivateParameterSearch`.

Every fit is one job of a :mod:`joblib` pool (each draws fresh noise from its
own recorded seed); a :mod:`tqdm` bar counts them from the start.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from dperm.catalog import LOSSES as LOSS_TABLE
from dperm.catalog import build_estimator
from dperm.experiments._report import (
    misclassification_error,
    output_dir,
    pyplot_or_none,
    save_figure,
    signed_labels,
    summary_stats,
    write_json,
)
from dperm.linear_model import PrivateLogisticRegression
from dperm.losses import get_loss
from dperm.solvers import RegularizedMarginObjective, minimize_certified
from dperm.validation import check_positive_int

__all__ = [
    "ALPHA_GRID", "CLASSES", "DEMO_MECHANISMS", "EPSILONS", "Fit", "HUBER_WIDTH", "LOSSES",
    "NONPRIVATE_ALPHA_GRID", "SCHEMA", "format_table", "run_demo", "save_results",
]

#: Version of the ``results.json`` layout (2: private end-to-end cells first, reference after).
SCHEMA = "dperm-demo/2"
EPSILONS = (0.01, 0.05, 0.1, 0.5, 1.0)
#: Public grid of alpha for the test-tuned reference (the paper's Lambda): 10^-4, ..., 10^-1.5.
ALPHA_GRID = tuple(float(10.0**k) for k in np.arange(-4.0, -1.25, 0.5))
#: The non-private baseline needs no noise budget, so it may use weaker regularisation too.
NONPRIVATE_ALPHA_GRID = (1e-6, 1e-5) + ALPHA_GRID
#: Noise draws per grid cell of the reference (the private cells use ``repeats``). Two keep the
#: default run near 60 s on 2 cores: on Adult the reference's 240 fits cost ~62 CPU s, the 100
#: private fits ~18 s, the two non-private paths ~12 s (measured, results.json "cpu_seconds").
_REFERENCE_REPEATS = 2
DEMO_MECHANISMS = ("output", "objective")
#: The losses of 003's experiments, by their name there ("LR", "Huber SVM"): :data:`dperm.catalog.LOSSES`.
LOSSES = {info.name: info.paper_label for info in LOSS_TABLE.values() if info.paper_label}
HUBER_WIDTH = 0.5
#: Adult's label set is public (<=50K / >50K), so the estimators are told it.
CLASSES = (0, 1)
#: Tolerance of the non-private exact minimiser (no certificate is released from it).
_NONPRIVATE_TOL = 1e-8
_PRIVATE_NOTE = (
    "PRIVATE END TO END: each estimator with its default alpha (no test-set tuning); "
    "each number is the test error of an epsilon-DP model."
)
_REFERENCE_NOTE = (
    "REFERENCE, NOT PRIVATE: alpha chosen per cell from the public grid by mean TEST error, "
    "as in 003 Table 1; the non-private row is the exact minimiser, alpha chosen the same way. "
    "Private tuning: dperm.tuning.PrivateParameterSearch."
)


@dataclass(frozen=True)
class Fit:
    """One private fit: ``alpha=None`` is the estimator's default; ``part`` is private or reference."""

    part: str
    loss: str
    mechanism: str
    epsilon: float
    alpha: float | None
    repeat: int


def _make_estimator(loss: str, mechanism: str, epsilon: float, alpha, seed: int):
    """The estimator as a user would build it; ``alpha=None`` leaves the estimator's default."""
    common = dict(epsilon=epsilon, mechanism=mechanism, fit_intercept=False, data_norm=1.0,
                  classes=list(CLASSES), random_state=seed)
    if alpha is not None:
        common["alpha"] = alpha
    return build_estimator(loss, h=HUBER_WIDTH, **common)


def _fit_seed(fit: Fit, seed: int) -> int:
    """The recorded seed of one fit: the reference draws apart from the private cells' draws."""
    return seed + 1000 * fit.repeat + (1 if fit.part == "reference" else 0)


def _private_fit(fit: Fit, data, seed: int) -> dict:
    """Fit once, return the test error and the alpha the estimator used (its ``alpha_`` if any)."""
    X_train, y_train, X_test, y_test = data
    model = _make_estimator(fit.loss, fit.mechanism, fit.epsilon, fit.alpha, _fit_seed(fit, seed))
    model.fit(X_train, y_train)
    alpha_used = getattr(model, "alpha_", model.alpha)
    return {"error": float(np.mean(model.predict(X_test) != y_test)), "alpha": float(alpha_used)}


def _nonprivate_errors(loss: str, alphas, data) -> dict:
    """Test error of the exact regularised minimiser (no noise) at each alpha.

    Solved along the path from the largest alpha down, each solve warm-started
    at the previous minimiser (the same minimiser, found in far fewer steps).
    """
    X_train, y_train, X_test, y_test = data
    loss_function = get_loss(loss, h=HUBER_WIDTH)
    errors, coef = {}, None
    for alpha in sorted(alphas, reverse=True):
        objective = RegularizedMarginObjective(loss_function, X_train, signed_labels(y_train), alpha)
        coef = minimize_certified(objective, tol=_NONPRIVATE_TOL, max_iter=1000, w0=coef).coef
        errors[alpha] = misclassification_error(coef, X_test, signed_labels(y_test))
    return errors


def _job(item, data, seed):
    """Run one pool item (a private fit or one loss's non-private path); also its CPU seconds."""
    started = time.process_time()
    if isinstance(item, Fit):
        outcome = _private_fit(item, data, seed)
    else:
        loss, alphas = item
        outcome = _nonprivate_errors(loss, alphas, data)
    return item, outcome, time.process_time() - started


def _plan(epsilons, repeats, alphas, reference_repeats) -> tuple[list[Fit], list[Fit]]:
    cells = [(loss, mech, float(eps)) for loss in LOSSES for mech in DEMO_MECHANISMS for eps in epsilons]
    private = [Fit("private", loss, mech, eps, None, r) for loss, mech, eps in cells for r in range(repeats)]
    # Small alpha means slow fits: hand those out first so no long fit is left for the end.
    reference = [Fit("reference", loss, mech, eps, float(alpha), r)
                 for alpha in sorted(alphas) for loss, mech, eps in cells for r in range(reference_repeats)]
    return private, reference


def run_demo(data, epsilons=EPSILONS, repeats=5, alphas=ALPHA_GRID, seed=0, n_jobs=2,
             progress=sys.stderr, reference_repeats=_REFERENCE_REPEATS) -> dict:
    """Run the private end-to-end cells, then the test-tuned reference.

    Parameters
    ----------
    data : tuple (X_train, y_train, X_test, y_test)
        Labels in {0, 1}; rows of norm at most 1.
    epsilons : sequence of float
    repeats : int
        Noise draws per private end-to-end cell.
    alphas : sequence of float
        The reference's public grid; empty for no reference.
    seed : int
        Base seed; every fit gets its own, derived from it and recorded.
    n_jobs : int
        joblib workers.
    progress : file or None
        Where the progress bar goes (``None``: silent).
    reference_repeats : int
        Noise draws per (cell, alpha) of the reference; 0 for no reference.

    Returns
    -------
    dict
        JSON-serialisable results (layout :data:`SCHEMA`): ``private`` cells
        first, then ``reference`` (best alpha per cell, the grid and the
        non-private baselines).
    """
    repeats = check_positive_int(repeats, "repeats")
    if reference_repeats != 0:
        reference_repeats = check_positive_int(reference_repeats, "reference_repeats (0 skips the reference)")
    else:
        alphas = ()
    private_fits, reference_fits = _plan(epsilons, repeats, alphas, reference_repeats)
    nonprivate_alphas = tuple(sorted(set(NONPRIVATE_ALPHA_GRID) | set(alphas))) if alphas else ()
    nonprivate_jobs = [(loss, nonprivate_alphas) for loss in LOSSES] if alphas else []
    items = private_fits + nonprivate_jobs + reference_fits
    started = time.perf_counter()
    outcomes, nonprivate, private_done = {}, {}, 0
    cpu_seconds = {"private": 0.0, "nonprivate": 0.0, "reference": 0.0}
    bar = tqdm(total=len(items), file=progress, disable=progress is None, unit="fit", mininterval=0.5,
               desc="private (default alpha)", dynamic_ncols=True)
    # One BLAS thread per fit: the fits are small (d ~ 100) and the workers already use the
    # cores; with OpenBLAS's threads on top, a fit on a busy 2-core machine ran ~15x slower.
    # joblib's worker processes get the same limit from joblib itself.
    with bar, threadpool_limits(limits=1, user_api="blas"):
        jobs = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(_job)(item, data, seed) for item in items
        )
        for item, outcome, cpu in jobs:
            if isinstance(item, Fit):
                outcomes[item] = outcome
                private_done += item.part == "private"
            else:
                nonprivate[item[0]] = outcome
            cpu_seconds[item.part if isinstance(item, Fit) else "nonprivate"] += cpu
            bar.update(1)
            if private_done == len(private_fits):
                bar.set_description("reference (test-tuned, not private)", refresh=False)
    y_test = data[3]
    results = {
        "schema": SCHEMA,
        "epsilons": list(map(float, epsilons)),
        "repeats": repeats,
        "seed": seed,
        "n_train": int(data[0].shape[0]),
        "n_test": int(data[2].shape[0]),
        "n_features": int(data[0].shape[1]),
        "majority_error": float(min(np.mean(y_test == 1), np.mean(y_test == 0))),
        "private": {"note": _PRIVATE_NOTE, "alpha_parameter": _default_alpha_parameter(),
                    "cells": _cells(private_fits, outcomes)},
        "reference": _reference(reference_fits, outcomes, nonprivate, alphas, reference_repeats),
        "seconds": time.perf_counter() - started,
        # Where the time goes: CPU seconds of the fits of each part, summed over the workers.
        "cpu_seconds": cpu_seconds,
    }
    return results


def _default_alpha_parameter():
    """The estimators' default ``alpha`` argument as JSON (a number or a rule's name such as ``"auto"``)."""
    value = PrivateLogisticRegression().alpha
    return value if isinstance(value, str) else float(value)


def _cells(fits, outcomes) -> list[dict]:
    """Group fits by (loss, mechanism, epsilon, alpha): errors, alphas used, mean and std."""
    groups: dict = {}
    for fit in fits:
        key = (fit.loss, fit.mechanism, fit.epsilon, fit.alpha)
        groups.setdefault(key, []).append(outcomes[fit])
    cells = []
    for (loss, mechanism, epsilon, alpha), draws in groups.items():
        errors = [draw["error"] for draw in draws]
        stats = summary_stats(errors)
        cells.append({"loss": loss, "mechanism": mechanism, "epsilon": epsilon,
                      "alpha": alpha if alpha is not None else _one_alpha([d["alpha"] for d in draws]),
                      "alphas_used": [draw["alpha"] for draw in draws], "errors": errors,
                      "mean": stats["mean"], "std": stats["std"]})
    return cells


def _one_alpha(alphas):
    """The alpha of a cell's draws: one number if they agree (a public rule), else their median."""
    return float(alphas[0]) if len(set(alphas)) == 1 else float(np.median(alphas))


def _reference(fits, outcomes, nonprivate, alphas, reference_repeats) -> dict:
    grid = _cells(fits, outcomes)
    return {
        "note": _REFERENCE_NOTE,
        "alphas": list(map(float, alphas)),
        "repeats": reference_repeats,
        "best": _best_cells(grid),
        "grid": grid,
        "nonprivate": {loss: _best_nonprivate(errors) for loss, errors in nonprivate.items()},
    }


def _best_nonprivate(errors_by_alpha: dict) -> dict:
    alpha = min(errors_by_alpha, key=errors_by_alpha.get)
    return {"alpha": float(alpha), "error": errors_by_alpha[alpha]}


def _best_cells(grid) -> list[dict]:
    """Per (loss, mechanism, epsilon), the grid cell of lowest mean test error (not private)."""
    best = {}
    for cell in grid:
        key = (cell["loss"], cell["mechanism"], cell["epsilon"])
        if key not in best or cell["mean"] < best[key]["mean"]:
            best[key] = {name: cell[name] for name in ("loss", "mechanism", "epsilon", "alpha", "mean", "std")}
    return list(best.values())


def _columns():
    return [(loss, mech) for loss in LOSSES for mech in DEMO_MECHANISMS]


def _aligned(header, rows) -> list[str]:
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in [header] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _table(cells, epsilons, show_alpha: bool) -> tuple[list[str], list[list[str]]]:
    by_key = {(c["loss"], c["mechanism"], c["epsilon"]): c for c in cells}
    header = ["epsilon"] + [f"{LOSSES[loss]} {mech}" for loss, mech in _columns()]
    rows = []
    for eps in epsilons:
        row = [f"{eps:g}"]
        for loss, mech in _columns():
            cell = by_key[(loss, mech, eps)]
            text = f"{cell['mean']:.4f} +- {cell['std']:.4f}"
            row.append(text + (f" (alpha {cell['alpha']:.2g})" if show_alpha else ""))
        rows.append(row)
    return header, rows


def format_table(results: dict) -> str:
    """Plain text: the private end-to-end table first, then the labelled test-tuned reference."""
    private = results["private"]
    header, rows = _table(private["cells"], results["epsilons"], show_alpha=True)
    lines = [f"{private['note']}",
             f"test error, mean +- std over {results['repeats']} noise draws per cell; "
             f"alpha = the estimators' default ({private['alpha_parameter']!r}), value used in brackets"]
    lines += _aligned(header, rows)
    lines.append(f"majority-class error: {results['majority_error']:.4f}; "
                 f"n_train={results['n_train']}, n_test={results['n_test']}, d={results['n_features']}")
    reference = results["reference"]
    if reference["best"]:
        header, rows = _table(reference["best"], results["epsilons"], show_alpha=True)
        rows.append(["non-private"] + [
            f"{reference['nonprivate'][loss]['error']:.4f} (alpha {reference['nonprivate'][loss]['alpha']:.2g})"
            for loss, _ in _columns()])
        lines += ["", reference["note"],
                  f"test error, mean +- std over {reference['repeats']} noise draws per (cell, alpha); "
                  f"best of alpha in {', '.join(f'{a:.2g}' for a in reference['alphas'])}"]
        lines += _aligned(header, rows)
    return "\n".join(lines)


def _plot_results(results: dict, path):
    """Save the privacy-accuracy plot as PNG; returns None if matplotlib is missing.

    Solid: private end to end (default alpha). Dashed, faint: the test-tuned
    reference (not private).
    """
    plt = pyplot_or_none()
    if plt is None:
        return None
    private = {(c["loss"], c["mechanism"], c["epsilon"]): c for c in results["private"]["cells"]}
    reference = {(c["loss"], c["mechanism"], c["epsilon"]): c for c in results["reference"]["best"]}
    eps = results["epsilons"]
    fig, axes = plt.subplots(1, len(LOSSES), figsize=(10, 4), sharey=True)
    for ax, (loss, label) in zip(np.atleast_1d(axes), LOSSES.items()):
        for mech, marker, color in zip(DEMO_MECHANISMS, ("s", "o"), ("C0", "C1")):
            cells = [private[(loss, mech, e)] for e in eps]
            ax.errorbar(eps, [c["mean"] for c in cells], yerr=[c["std"] for c in cells], marker=marker,
                        color=color, capsize=3, label=f"{mech}, default alpha (private)")
            if reference:
                cells = [reference[(loss, mech, e)] for e in eps]
                ax.plot(eps, [c["mean"] for c in cells], ls="--", marker=marker, color=color, alpha=0.4,
                        mfc="none", label=f"{mech}, test-tuned alpha (NOT private)")
        if loss in results["reference"]["nonprivate"]:
            ax.axhline(results["reference"]["nonprivate"][loss]["error"], color="k", ls="--",
                       label="non-private (test-tuned)")
        ax.axhline(results["majority_error"], color="grey", ls=":", label="majority class")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_title(f"{label} on Adult (d={results['n_features']})")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("test error")
    first = np.atleast_1d(axes)[0]
    handles, labels = first.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: "(private)" not in labels[i])  # private first
    first.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7)
    fig.suptitle("dperm demo: private end to end (solid) vs test-tuned reference (dashed, not private)",
                 fontsize=9)
    return save_figure(plt, fig, path, dpi=120)


def save_results(results: dict, out_dir) -> dict:
    """Write ``results.json`` and ``privacy_accuracy.png`` under ``out_dir``."""
    out_dir = output_dir(out_dir)
    json_path = write_json(out_dir / "results.json", results)
    png = _plot_results(results, out_dir / "privacy_accuracy.png")
    return {"json": json_path, "png": png}
