"""Issue 30's classifier defaults: today's main against the candidate, from two runs of ``defaults.py``.

Both runs are ``benchmarks/defaults.py`` on the EVALUATION tables (13 binary, 4 multiclass) at
epsilon 0.5, 1 and 3 (5-fold CV x 5 noise draws) and the Adult check (official split, 20 draws),
with diffprivlib, scikit-learn and the majority class in the same run; ``--main`` ran with main's
``src`` on the path (the rule of issue 17), ``--candidate`` with this branch's (the
epsilon-monotone rule). ``logodds`` is the benchmark's prototype of the private log-odds intercept
(10% of epsilon on the class count); ``recipe`` is ``make_private_pipeline``'s centred,
no-intercept recipe. Nothing here fits a constant.

The decision rule (issue 30's brief): the candidate becomes the default only if it is better than
main on the evaluation set overall (mean binary accuracy over the 39 cells, and the issue's three
binary targets) and not worse on Adult (each of the four settings within the draws' standard
error). Writes ``results/defaults_classifiers.md`` and ``.png``.

Run: ``python benchmarks/defaults_classifiers.py --main A.json --candidate B.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SLACK = 0.005


def cells(path):
    data = json.loads(Path(path).read_text())
    return {(c["section"], c["table"], c["estimator"], c["epsilon"], c["delta"]): c for c in data["cells"]}


def mean(table, key):
    cell = table.get(key)
    return None if cell is None or cell.get("mean") is None else cell["mean"]


def binary_rows(main, cand):
    rows = []
    tables = sorted({k[1] for k in cand if k[0] == "cv" and cand[k].get("task") == "binary"},
                    key=lambda t: cand[("cv", t, "majority", None, 0.0)]["n"])
    for t in tables:
        for eps in (0.5, 1.0, 3.0):
            row = {"table": t, "n": cand[("cv", t, "majority", None, 0.0)]["n"], "eps": eps,
                   "main": mean(main, ("cv", t, "default", eps, 0.0)),
                   "candidate": mean(cand, ("cv", t, "default", eps, 0.0)),
                   "main_recipe": mean(main, ("cv", t, "recipe", eps, 0.0)),
                   "recipe": mean(cand, ("cv", t, "recipe", eps, 0.0)),
                   "main_logodds": mean(main, ("cv", t, "logodds", eps, 0.0)),
                   "logodds": mean(cand, ("cv", t, "logodds", eps, 0.0)),
                   "diffprivlib": mean(cand, ("cv", t, "diffprivlib", eps, 0.0)),
                   "sklearn": mean(cand, ("cv", t, "sklearn", None, 0.0)),
                   "majority": mean(cand, ("cv", t, "majority", None, 0.0))}
            rows.append(row)
    return rows


def targets(rows, column, recipe_column):
    """The issue's three binary targets for ``column`` (cells passed of those measured)."""
    ok = [r for r in rows if r[column] is not None]
    return {
        "not_behind_diffprivlib": sum(r[column] >= r["diffprivlib"] - SLACK for r in ok),
        "not_below_majority": sum(r[column] >= r["majority"] - SLACK for r in ok),
        "within_best_of_default_recipe": sum(r[column] >= max(r[column], r[recipe_column]) - SLACK for r in ok),
        "all_three": sum(r[column] >= r["diffprivlib"] - SLACK and r[column] >= r["majority"] - SLACK
                         and r[column] >= r[recipe_column] - SLACK for r in ok),
        "cells": len(ok),
    }


def summary(main, cand):
    rows = binary_rows(main, cand)
    both = [r for r in rows if r["main"] is not None and r["candidate"] is not None]
    out = {"binary_cells": len(both),
           "mean_accuracy": {c: float(np.mean([r[c] for r in both])) for c in
                             ("main", "candidate", "recipe", "main_recipe", "logodds", "main_logodds",
                              "diffprivlib", "sklearn", "majority") if all(r[c] is not None for r in both)},
           "candidate_ahead": sum(r["candidate"] > r["main"] + 1e-12 for r in both),
           "candidate_behind": sum(r["candidate"] < r["main"] - 1e-12 for r in both),
           "by_epsilon": {str(e): {c: float(np.mean([r[c] for r in both if r["eps"] == e])) for c in
                                   ("main", "candidate", "recipe", "logodds", "diffprivlib", "sklearn")}
                          for e in (0.5, 1.0, 3.0)},
           "targets_main": targets(both, "main", "main_recipe"),
           "targets_candidate": targets(both, "candidate", "recipe")}
    adult = {}
    for (section, _, estimator, eps, delta), c in cand.items():
        if section != "adult":
            continue
        m = main.get((section, "adult", estimator, eps, delta))
        adult[f"{eps:g},{delta:g}"] = {
            "target": c["target"], "candidate": c["mean"], "candidate_std": c["std"],
            "candidate_alpha": c["alpha"], "main": m and m["mean"], "main_std": m and m["std"],
            "main_alpha": m and m["alpha"], "draws": c["draws"]}
    out["adult"] = adult
    multi = {}
    for (section, t, estimator, eps, delta), c in cand.items():
        if section == "cv" and c.get("task") == "multiclass" and estimator in ("default", "ovr"):
            m = main.get((section, t, estimator, eps, delta))
            multi[f"{t}|{estimator}|{eps:g}"] = {"candidate": c["mean"], "main": m and m["mean"]}
    out["multiclass"] = multi
    return rows, out


def decide(out):
    acc = out["mean_accuracy"]
    better_overall = (acc["candidate"] > acc["main"]
                      and out["targets_candidate"]["all_three"] >= out["targets_main"]["all_three"])
    adult_ok = all(a["main"] is None or a["candidate"] <= a["main"] + a["main_std"] / np.sqrt(a["draws"])
                   + a["candidate_std"] / np.sqrt(a["draws"]) for a in out["adult"].values())
    return {"better_on_evaluation": bool(better_overall), "not_worse_on_adult": bool(adult_ok),
            "land": bool(better_overall and adult_ok)}


def fmt(v, digits=3):
    return "" if v is None else f"{v:.{digits}f}"


def markdown(rows, out, verdict):
    lines = ["**binary** (mean accuracy over 5 folds x 5 draws; main = today's rule, candidate = this branch's)", "",
             "| table (n) | eps | main default | candidate default | recipe | log-odds prototype | diffprivlib | "
             "scikit-learn | majority |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['table']} ({r['n']}) | {r['eps']:g} | {fmt(r['main'])} | {fmt(r['candidate'])} | "
                     f"{fmt(r['recipe'])} | {fmt(r['logodds'])} | {fmt(r['diffprivlib'])} | {fmt(r['sklearn'])} | "
                     f"{fmt(r['majority'])} |")
    acc = out["mean_accuracy"]
    lines += ["", f"Mean over {out['binary_cells']} cells: " + ", ".join(f"{k} {v:.4f}" for k, v in acc.items())
              + f". Candidate ahead of main in {out['candidate_ahead']} cells, behind in {out['candidate_behind']}.",
              "", "| eps | " + " | ".join(out["by_epsilon"]["0.5"]) + " |",
              "|---|" + "---|" * len(out["by_epsilon"]["0.5"])]
    for e, v in out["by_epsilon"].items():
        lines.append(f"| {e} | " + " | ".join(f"{x:.4f}" for x in v.values()) + " |")
    lines += ["", "| issue 30 binary target (cells passed) | main | candidate |", "|---|---|---|"]
    for k in out["targets_main"]:
        lines.append(f"| {k} | {out['targets_main'][k]} | {out['targets_candidate'][k]} |")
    lines += ["", "**Adult** (official split, test error, mean +- std over draws)", "",
              "| eps, delta | target | main (alpha) | candidate (alpha) |", "|---|---|---|---|"]
    for k, a in sorted(out["adult"].items()):
        main = "" if a["main"] is None else f"{a['main']:.4f} +- {a['main_std']:.4f} ({a['main_alpha']:.3g})"
        lines.append(f"| {k} | <= {a['target']} | {main} | {a['candidate']:.4f} +- {a['candidate_std']:.4f} "
                     f"({a['candidate_alpha']:.3g}) |")
    lines += ["", "**multiclass** (accuracy)", "", "| table | estimator | eps | main | candidate |", "|---|---|---|---|---|"]
    for k, m in sorted(out["multiclass"].items()):
        t, est, eps = k.split("|")
        lines.append(f"| {t} | {est} | {eps} | {fmt(m['main'])} | {fmt(m['candidate'])} |")
    lines += ["", f"**Decision**: {verdict}"]
    return "\n".join(lines) + "\n"


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    for ax, eps in zip(axes, (0.5, 1.0, 3.0)):
        sel = [r for r in rows if r["eps"] == eps and r["main"] is not None and r["candidate"] is not None]
        x = np.arange(len(sel))
        ref = np.array([r["sklearn"] for r in sel])
        for column, marker in (("main", "o"), ("candidate", "s"), ("recipe", "^"), ("diffprivlib", "x"),
                               ("majority", "_")):
            values = np.array([np.nan if r[column] is None else r[column] for r in sel])
            ax.plot(x, values - ref, marker, label=column)
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_xticks(x, [r["table"] for r in sel], rotation=70, fontsize=7)
        ax.set_title(f"epsilon {eps:g}")
    axes[0].set_ylabel("accuracy - scikit-learn")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--main", required=True)
    parser.add_argument("--candidate", required=True)
    parser.add_argument("--out", default=str(RESULTS / "defaults_classifiers"))
    args = parser.parse_args(argv)
    rows, out = summary(cells(args.main), cells(args.candidate))
    verdict = decide(out)
    out["decision"] = verdict
    text = ("land the candidate" if verdict["land"] else "keep today's default") + f" ({verdict})"
    Path(args.out + ".md").write_text(markdown(rows, out, text), encoding="utf-8")
    Path(args.out + "_summary.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    plot(rows, args.out + ".png")
    print(json.dumps({k: out[k] for k in ("mean_accuracy", "targets_main", "targets_candidate", "adult",
                                          "decision")}, indent=1))


if __name__ == "__main__":
    main()
