"""``dperm train``'s classifier default: which recipe, measured on the FITTING tables only (issue 30).

``make_private_pipeline``'s recipe (numeric columns centred to [-1, 1] by their public bounds,
rows scaled to norm 1) fitted no intercept, so the majority fallback (which may release the
constant model, an intercept) was off there and ``dperm train`` had no majority-class guarantee.
This script scores the candidates for ``dperm train --model logistic``'s default on the
``centred`` encoding, with the real estimators (the fallback's own code path, not a simulation):

- ``recipe``: ``fit_intercept=False`` (no fallback possible), ``alpha="auto"`` -- the old default;
- ``intercept_fallback``: ``fit_intercept=True`` with ``fallback="auto"`` (the majority fallback
  and, under it, the epsilon-monotone alpha rule) -- the Python default's rule on the centred rows;
- ``intercept_fallback_s05`` / ``_s025``: the same with ``intercept_scaling`` 0.5 / 0.25 (the
  constant feature: the norm bound grows from 1 to 1.118 / 1.031 instead of 1.414, so the noise
  grows less; the intercept's weight, penalised like the others, must be 2x / 4x larger);
- references, not eligible to win (each isolates one part of the others): ``intercept``
  (``fit_intercept=True``, ``fallback=None``, ``alpha="auto"``: what the intercept alone costs) and
  ``monotone`` (``fit_intercept=False``, ``alpha="monotone"``: the rule alone, no guarantee).

Protocol: ``benchmarks/_tables.py``'s FITTING binary tables only (never an EVALUATION table, Adult
or KDD Cup), each table above ``MAX_ROWS`` rows subsampled once (fixed seed), epsilon in
``EPSILONS``, 3-fold stratified CV x ``DRAWS`` noise draws (same folds and seeds for every
candidate), test accuracy; the majority cell is the training fold's majority class on the test fold.

Decision rule (fixed before the full run): the issue requires that "at the smallest epsilons the
default must not be worse than a constant model"; so among the eligible candidates (``ELIGIBLE``)
whose mean accuracy over all cells is within ``MEAN_SLACK`` (0.005) of the best eligible one's, the
one with the fewest cells more than 0.005 below the majority class wins, then the higher mean
accuracy.

Run: ``OPENBLAS_NUM_THREADS=1 nice -n 10 PYTHONPATH=src python benchmarks/fallback_recipe_fit.py``
writes ``benchmarks/results/fallback_recipe_fit.json`` (resumable cell by cell).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _tables  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
EPSILONS = (0.1, 0.3, 1.0, 3.0)
FOLDS, DRAWS = 3, 10
MAX_ROWS = 4_000
SLACK = 0.005
MEAN_SLACK = 0.005
CANDIDATES = {
    "recipe": {"fit_intercept": False, "fallback": None},
    "intercept_fallback": {"fit_intercept": True, "fallback": "auto"},
    "intercept_fallback_s05": {"fit_intercept": True, "fallback": "auto", "intercept_scaling": 0.5},
    "intercept_fallback_s025": {"fit_intercept": True, "fallback": "auto", "intercept_scaling": 0.25},
    "intercept": {"fit_intercept": True, "fallback": None},
    "monotone": {"fit_intercept": False, "fallback": None, "alpha": "monotone"},
}
ELIGIBLE = ("recipe", "intercept_fallback", "intercept_fallback_s05", "intercept_fallback_s025")


def cell_scores(X, y, epsilon, params):
    """``(accuracies, majority accuracies, constants released, refusals)`` of one candidate."""
    from sklearn.model_selection import StratifiedKFold

    from dperm import PrivateLogisticRegression

    folds = list(StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(X, y))
    scores, majority, constant, refused = [], [], 0, 0
    for f, (train, test) in enumerate(folds):
        counts = np.bincount(y[train], minlength=2)
        majority.append(float(np.mean(y[test] == np.argmax(counts))))
        for draw in range(DRAWS):
            model = PrivateLogisticRegression(epsilon=epsilon, classes=[0, 1], random_state=7919 * f + 104729 * draw + 13,
                                              **params)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X[train], y[train])
            except ValueError:  # refused before spending: the user has no model, so the majority's score
                refused += 1
                scores.append(majority[-1])
                continue
            scores.append(float(np.mean(model.predict(X[test]) == y[test])))
            constant += getattr(model.privacy_, "fallback_choice", None) == "constant"
    return scores, float(np.mean(majority)), constant, refused


def summarise(cells):
    """``{candidate: {mean_accuracy, below_majority, behind_best, by_epsilon}}`` and the winner."""
    keys = sorted({(c["table"], c["epsilon"]) for c in cells})
    by = {(c["table"], c["epsilon"], c["candidate"]): c for c in cells}
    names = [n for n in CANDIDATES if all((t, e, n) in by for t, e in keys)]
    out = {}
    for name in names:
        mine = [by[(t, e, name)] for t, e in keys]
        best = [max(by[(t, e, m)]["mean"] for m in names) for t, e in keys]
        out[name] = {
            "mean_accuracy": float(np.mean([c["mean"] for c in mine])),
            "below_majority": int(sum(c["mean"] < c["majority"] - SLACK for c in mine)),
            "behind_best_candidate": int(sum(c["mean"] < b - SLACK for c, b in zip(mine, best))),
            "by_epsilon": {f"{e:g}": float(np.mean([c["mean"] for c in mine if c["epsilon"] == e]))
                           for e in sorted({e for _, e in keys})},
            "below_majority_cells": [f"{c['table']}@{c['epsilon']:g}: {c['mean']:.4f} < {c['majority']:.4f}"
                                     for c in mine if c["mean"] < c["majority"] - SLACK],
            "constants_released": int(sum(c["constant"] for c in mine)),
        }
    if not out:
        return out, None
    eligible = [n for n in out if n in ELIGIBLE]
    if not eligible:
        return out, None
    top = max(out[n]["mean_accuracy"] for n in eligible)
    near = [n for n in eligible if out[n]["mean_accuracy"] >= top - MEAN_SLACK]
    return out, min(near, key=lambda n: (out[n]["below_majority"], -out[n]["mean_accuracy"]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="comma-separated FITTING binary tables")
    parser.add_argument("--candidates", default=None, help=f"comma-separated, from {list(CANDIDATES)}")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else _tables.names("fitting", "binary")
    assert set(names) <= set(_tables.names("fitting", "binary")), "FITTING binary tables only"
    candidates = args.candidates.split(",") if args.candidates else list(CANDIDATES)
    out = Path(args.out) if args.out else RESULTS / "fallback_recipe_fit.json"
    data = json.loads(out.read_text()) if out.exists() else {"cells": []}
    done = {(c["table"], c["epsilon"], c["candidate"]) for c in data["cells"]}
    for name in names:
        X = y = None
        for eps in EPSILONS:
            for candidate in candidates:
                if (name, eps, candidate) in done:
                    continue
                if X is None:
                    table = _tables.load(name)
                    if len(table.y) > MAX_ROWS:
                        keep = np.sort(np.random.default_rng(0).choice(len(table.y), MAX_ROWS, replace=False))
                        table.X, table.y = table.X[keep], table.y[keep]
                    X, y = _tables.encode(table)["centred"], np.asarray(table.y, dtype=int)
                start = time.perf_counter()
                scores, majority, constant, refused = cell_scores(X, y, eps, CANDIDATES[candidate])
                data["cells"].append({"table": name, "epsilon": eps, "candidate": candidate, "n": int(len(y)),
                                      "d": int(X.shape[1]), "majority": majority, "mean": float(np.mean(scores)),
                                      "se": float(np.std(scores, ddof=1) / np.sqrt(len(scores))),
                                      "constant": constant, "refused": refused, "fits": len(scores),
                                      "seconds": time.perf_counter() - start})
                out.write_text(json.dumps(data, indent=1) + "\n")
                print(f"{name:14s} eps={eps:<4g} {candidate:24s} majority {majority:.4f} mean "
                      f"{np.mean(scores):.4f} constant {constant} refused {refused} "
                      f"({time.perf_counter() - start:.1f} s)", flush=True)
    summary, winner = summarise(data["cells"])
    data["summary"], data["chosen"] = summary, winner
    data["protocol"] = {"folds": FOLDS, "draws": DRAWS, "max_rows": MAX_ROWS, "epsilons": EPSILONS,
                        "encoding": "centred", "tables": names, "slack": SLACK, "mean_slack": MEAN_SLACK,
                        "candidates": CANDIDATES}
    out.write_text(json.dumps(data, indent=1) + "\n")
    for key, v in sorted(summary.items(), key=lambda kv: -kv[1]["mean_accuracy"]):
        print(f"{key:24s} mean {v['mean_accuracy']:.4f} below majority {v['below_majority']:2d} behind best "
              f"{v['behind_best_candidate']:2d} by eps {v['by_epsilon']} constants {v['constants_released']}")
    print("chosen", winner)


if __name__ == "__main__":
    main()
