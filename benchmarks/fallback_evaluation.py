"""Issue 30's majority fallback on the EVALUATION tables: the chosen configuration beside main's default.

Reads one run of ``benchmarks/defaults.py`` (``results/defaults_fallback.json``): the 13 EVALUATION
binary tables at epsilon 0.5, 1 and 3 (5-fold CV x 5 noise draws) with ``default`` (main's
``PrivateLogisticRegression`` defaults), ``monotone_guarded`` (``alpha="monotone",
fallback="majority"``, the configuration chosen on the FITTING tables by
``benchmarks/fallback_fit.py``), diffprivlib's default and the majority class in the same run, and
Adult (official split, 20 draws) for both dperm configurations. Nothing here fits a constant.

Decision rule (the brief): the fallback becomes the default only if it is better than the default on
the evaluation set overall (mean binary accuracy over the 39 cells and issue 30's two binary targets)
and not worse on Adult (each of the four settings no worse than the default by more than the two
means' combined standard error). Writes ``results/fallback_evaluation.md`` and ``.json``.

Run: ``python benchmarks/fallback_evaluation.py [--run results/defaults_fallback.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SLACK = 0.005
EPSILONS = (0.5, 1.0, 3.0)
CANDIDATES = ("default", "monotone_guarded")


def load(path):
    data = json.loads(Path(path).read_text())
    return {(c["section"], c["table"], c["estimator"], c["epsilon"], c["delta"]): c for c in data["cells"]}


def binary_rows(cells):
    tables = sorted({k[1] for k in cells if k[0] == "cv" and cells[k].get("task") == "binary"})
    rows = []
    for t in tables:
        majority = cells[("cv", t, "majority", None, 0.0)]["mean"]
        for eps in EPSILONS:
            row = {"table": t, "n": cells[("cv", t, "majority", None, 0.0)]["n"], "epsilon": eps, "majority": majority,
                   "diffprivlib": cells[("cv", t, "diffprivlib", eps, 0.0)]["mean"]}
            for c in CANDIDATES:
                cell = cells[("cv", t, c, eps, 0.0)]
                row[c] = cell["mean"]
                row[f"{c}_se"] = cell["se"]
                row[f"{c}_refused"] = cell["refused"]
                row[f"{c}_constant"] = cell.get("constant_chosen")
            rows.append(row)
    return rows


def multiclass_rows(cells):
    """The multiclass EVALUATION tables, when the run has them (informational: not in the decision)."""
    tables = sorted({k[1] for k in cells if k[0] == "cv" and cells[k].get("task") == "multiclass"})
    rows = []
    for t in tables:
        majority = cells.get(("cv", t, "majority", None, 0.0))
        for eps in EPSILONS:
            found = {c: cells.get(("cv", t, c, eps, 0.0)) for c in CANDIDATES}
            if majority is None or any(v is None for v in found.values()):
                continue
            rows.append({"table": t, "n": majority["n"], "epsilon": eps, "majority": majority["mean"],
                         **{c: v["mean"] for c, v in found.items()},
                         "monotone_guarded_constant": found["monotone_guarded"].get("constant_chosen")})
    return rows


def summary(rows, cells):
    out = {}
    for c in CANDIDATES:
        acc = np.array([r[c] for r in rows])
        out[c] = {
            "mean_accuracy": float(acc.mean()),
            "mean_by_epsilon": {f"{e:g}": float(np.mean([r[c] for r in rows if r["epsilon"] == e])) for e in EPSILONS},
            "not_below_majority": int(sum(r[c] >= r["majority"] - SLACK for r in rows)),
            "not_behind_diffprivlib": int(sum(r[c] >= r["diffprivlib"] - SLACK for r in rows)),
            "both": int(sum(r[c] >= r["majority"] - SLACK and r[c] >= r["diffprivlib"] - SLACK for r in rows)),
            "below_majority_cells": [f"{r['table']} {r['epsilon']:g} ({r[c] - r['majority']:+.3f})" for r in rows
                                     if r[c] < r["majority"] - SLACK],
            "behind_diffprivlib_cells": [f"{r['table']} {r['epsilon']:g} ({r[c] - r['diffprivlib']:+.3f})"
                                         for r in rows if r[c] < r["diffprivlib"] - SLACK],
            "refused": int(sum(r[f"{c}_refused"] for r in rows)),
            "adult": {},
        }
        for (section, _, est, eps, delta), cell in cells.items():
            if section == "adult" and est == c:
                out[c]["adult"][f"{eps:g},{delta:g}"] = {"error": cell["mean"], "std": cell["std"],
                                                         "draws": cell["draws"], "target": cell["target"],
                                                         "constant_chosen": cell.get("constant_chosen")}
    cand, base = "monotone_guarded", "default"
    out["cells_ahead"] = {cand: int(sum(r[cand] > r[base] for r in rows)),
                          base: int(sum(r[base] > r[cand] for r in rows))}
    return out


def decide(out):
    cand, base = out["monotone_guarded"], out["default"]
    overall = (cand["mean_accuracy"] > base["mean_accuracy"]
               and cand["not_below_majority"] >= base["not_below_majority"]
               and cand["not_behind_diffprivlib"] >= base["not_behind_diffprivlib"])
    worse = []
    for key, a in cand["adult"].items():
        b = base["adult"][key]
        se = math.hypot(a["std"] / math.sqrt(a["draws"]), b["std"] / math.sqrt(b["draws"]))
        if a["error"] > b["error"] + se:
            worse.append(key)
    return {"better_overall": overall, "adult_worse_settings": worse, "make_default": overall and not worse}


def markdown(rows, out, verdict, multiclass=()):
    lines = ["| table (n) | eps | majority | diffprivlib | default | alpha='monotone' + fallback (constant chosen / 25) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['table']} ({r['n']}) | {r['epsilon']:g} | {r['majority']:.3f} | {r['diffprivlib']:.3f} | "
                     f"{r['default']:.3f} | {r['monotone_guarded']:.3f} ({r['monotone_guarded_constant']}) |")
    lines += ["", "| over the 39 binary cells | default | monotone + fallback |", "|---|---|---|"]
    d, g = out["default"], out["monotone_guarded"]
    lines.append(f"| mean accuracy | {d['mean_accuracy']:.4f} | {g['mean_accuracy']:.4f} |")
    lines.append("| eps 0.5 / 1 / 3 | " + " / ".join(f"{v:.4f}" for v in d["mean_by_epsilon"].values()) + " | "
                 + " / ".join(f"{v:.4f}" for v in g["mean_by_epsilon"].values()) + " |")
    for key in ("not_below_majority", "not_behind_diffprivlib", "both"):
        lines.append(f"| {key.replace('_', ' ')} (of 39) | {d[key]} | {g[key]} |")
    lines.append(f"| cells ahead of the other | {out['cells_ahead']['default']} | {out['cells_ahead']['monotone_guarded']} |")
    lines += ["", "| Adult test error | target | default | monotone + fallback |", "|---|---|---|---|"]
    for key, a in g["adult"].items():
        b = d["adult"][key]
        lines.append(f"| eps, delta = {key} | <= {a['target']} | {b['error']:.4f} +- {b['std']:.4f} | "
                     f"{a['error']:.4f} +- {a['std']:.4f} (constant {a['constant_chosen']} / {a['draws']}) |")
    lines += ["", f"Decision: {verdict}"]
    if multiclass:
        lines += ["", "Multiclass (informational; not part of the decision):", "",
                  "| table (n) | eps | majority | default | monotone + fallback (constant chosen / 25) |",
                  "|---|---|---|---|---|"]
        for r in multiclass:
            lines.append(f"| {r['table']} ({r['n']}) | {r['epsilon']:g} | {r['majority']:.3f} | {r['default']:.3f} | "
                         f"{r['monotone_guarded']:.3f} ({r['monotone_guarded_constant']}) |")
        lines.append(f"| mean | | | {np.mean([r['default'] for r in multiclass]):.4f} | "
                     f"{np.mean([r['monotone_guarded'] for r in multiclass]):.4f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default=str(RESULTS / "defaults_fallback.json"))
    args = parser.parse_args(argv)
    cells = load(args.run)
    rows = binary_rows(cells)
    out = summary(rows, cells)
    verdict = decide(out)
    (RESULTS / "fallback_evaluation.json").write_text(json.dumps({"rows": rows, "summary": out, "decision": verdict,
                                                                 "multiclass_rows": multiclass_rows(cells)},
                                                                 indent=1) + "\n")
    multiclass = multiclass_rows(cells)
    text = markdown(rows, out, verdict, multiclass)
    (RESULTS / "fallback_evaluation.md").write_text(text)
    print(text)
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk.endswith("cells")} for k, v in out.items()
                      if k in CANDIDATES}, indent=1))


if __name__ == "__main__":
    main()
