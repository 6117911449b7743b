"""Fit the majority fallback's share rule on the FITTING tables only (issue 30).

``PrivateLogisticRegression(fallback="majority")`` spends ``s epsilon`` on a private choice between
the fitted model and the privately estimated majority class, and ``(1 - s) epsilon`` on the ERM
(:mod:`dperm.privacy.fallback`). The share rule is ``s = min(s_max, kappa Delta / (n epsilon))``;
this script chooses ``(kappa, s_max)`` -- and whether the fallback pairs with ``alpha="auto"`` or
``alpha="monotone"`` -- by cross-validated accuracy on ``benchmarks/_tables.py``'s FITTING binary
tables only, never on an EVALUATION table, Adult or KDD Cup (``benchmarks/defaults.py`` reports on
those).

Protocol: every FITTING binary table on ``defaults.py``'s ``unit`` encoding (tables above
``MAX_ROWS`` rows subsampled once, fixed seed), epsilon in ``EPSILONS``, 3-fold stratified CV x 4
ERM noise draws, and for each ERM fit ``CHOICE_DRAWS`` draws of the choice's noise. Each cell
(table, epsilon, alpha rule) scores a grid of shares ``SHARES``: the ERM is fitted at
``(1 - s) epsilon`` and the choice released at ``s epsilon`` with dperm's own
:func:`dperm.mechanisms.fallback.release_fallback` on the training fold; the test accuracy is the
model's or the constant class's, whichever was chosen. A rule's accuracy on a cell is read off the
grid by linear interpolation in ``s``. Objective: mean accuracy over cells; rules within ``TIE``
(0.001) of the best tie, and among them the fewest cells below the majority class by more than
0.005 wins (then the mean accuracy).

Run: ``OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/fallback_fit.py`` writes
``benchmarks/results/fallback_fit.json``.
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
EPSILONS = (0.3, 1.0, 3.0)
SHARES = (0.0, 0.05, 0.1, 0.2, 0.3)
RULES = ("auto", "monotone")
FOLDS, DRAWS, CHOICE_DRAWS = 3, 4, 20
MAX_ROWS = 4_000
KAPPAS = (5.0, 10.0, 20.0, 35.0, 50.0, 75.0, 100.0, 150.0, 200.0)
MAX_SHARES = (0.05, 0.1, 0.15, 0.2, 0.3)
SLACK = 0.005
#: rules within this of the best mean accuracy tie (well inside the draws' error); among them the
#: fewest cells below the majority class by more than ``SLACK`` wins, then the mean accuracy.
TIE = 0.001


def cell_scores(X, y, labels, epsilon, rule):
    """``{share: mean test accuracy with the fallback}``, and the majority's and the model's."""
    from sklearn.model_selection import StratifiedKFold

    from dperm import PrivateLogisticRegression
    from dperm.mechanisms.fallback import release_fallback
    from dperm.privacy.fallback import fallback_calibration

    labels = np.asarray(sorted(labels))
    folds = list(StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(X, y))
    out = {}
    majority = []
    for s in SHARES:
        guarded, plain = [], []
        for f, (train, test) in enumerate(folds):
            ytr, yte = y[train], y[test]
            counts = np.array([np.count_nonzero(ytr == c) for c in labels])
            test_share = np.array([np.mean(yte == c) for c in labels])
            if s == 0.0:
                majority.append(float(test_share[np.argmax(counts)]))
            for draw in range(DRAWS):
                model = PrivateLogisticRegression(epsilon=epsilon * (1 - s), alpha=rule, classes=list(labels),
                                                  random_state=1000 * f + draw)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(X[train], ytr)
                    correct = int(np.count_nonzero(model.predict(X[train]) == ytr))
                    accuracy = float(np.mean(model.predict(X[test]) == yte))
                except ValueError:  # refused before spending: no model; the user has the majority only
                    correct, accuracy = -1, float(test_share[np.argmax(counts)])
                plain.append(accuracy)
                if s == 0.0:
                    continue
                calibration = fallback_calibration(len(train), len(labels), epsilon, share=s)
                rng = np.random.default_rng(7 + 1000 * f + draw)
                for _ in range(CHOICE_DRAWS):
                    release = release_fallback(max(correct, 0), counts, calibration, len(train), rng)
                    guarded.append(accuracy if release.choice == "model"
                                   else float(test_share[np.argmax(release.class_counts)]))
        out[f"{s:g}"] = {"guarded": float(np.mean(guarded)) if guarded else float(np.mean(plain)),
                         "model": float(np.mean(plain))}
    return out, float(np.mean(majority)), min(len(t) for t, _ in folds)


def rule_share(n, epsilon, kappa, s_max, delta_l1=2):
    return min(s_max, kappa * delta_l1 / (n * epsilon))


def accuracy_at(cell, share):
    points = sorted((float(k), v["guarded"]) for k, v in cell["scores"].items())
    return float(np.interp(share, [p for p, _ in points], [a for _, a in points]))


def choose(cells):
    """``{rule: {"kappa,s_max": (mean accuracy, cells below majority)}}`` and the best."""
    table = {}
    for rule in RULES:
        mine = [c for c in cells if c["rule"] == rule]
        if not mine:
            continue
        plain = [c["scores"]["0"]["model"] for c in mine]
        table[f"{rule}: no fallback"] = (float(np.mean(plain)),
                                         int(sum(p < c["majority"] - SLACK for p, c in zip(plain, mine))))
        for kappa in KAPPAS:
            for s_max in MAX_SHARES:
                acc = [accuracy_at(c, rule_share(c["n_train"], c["epsilon"], kappa, s_max)) for c in mine]
                below = int(sum(a < c["majority"] - SLACK for a, c in zip(acc, mine)))
                table[f"{rule}: kappa={kappa:g},s_max={s_max:g}"] = (float(np.mean(acc)), below)
    top = max(v[0] for v in table.values())
    near = [k for k in table if table[k][0] >= top - TIE]
    best = min(near, key=lambda k: (table[k][1], -table[k][0]))
    return table, best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="comma-separated FITTING tables")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else _tables.names("fitting", "binary")
    assert set(names) <= set(_tables.names("fitting", "binary")), "FITTING binary tables only"
    out = Path(args.out) if args.out else RESULTS / "fallback_fit.json"
    data = json.loads(out.read_text()) if out.exists() else {"cells": []}
    done = {(c["table"], c["epsilon"], c["rule"]) for c in data["cells"]}
    for name in names:
        table = None
        for eps in EPSILONS:
            for rule in RULES:
                if (name, eps, rule) in done:
                    continue
                if table is None:
                    table = _tables.load(name)
                    if len(table.y) > MAX_ROWS:
                        keep = np.sort(np.random.default_rng(0).choice(len(table.y), MAX_ROWS, replace=False))
                        table.X, table.y = table.X[keep], table.y[keep]
                    X = _tables.encode(table)["unit"]
                start = time.perf_counter()
                scores, majority, n_train = cell_scores(X, np.asarray(table.y), table.labels, eps, rule)
                data["cells"].append({"table": name, "epsilon": eps, "rule": rule, "n_train": n_train,
                                      "d": int(X.shape[1]), "majority": majority, "scores": scores,
                                      "seconds": time.perf_counter() - start})
                out.write_text(json.dumps(data, indent=1) + "\n")
                print(f"{name:14s} eps={eps:<4g} {rule:9s} n={n_train:5d} majority {majority:.4f} model "
                      f"{scores['0']['model']:.4f} " + " ".join(f"{k}:{v['guarded']:.4f}" for k, v in scores.items())
                      + f" ({time.perf_counter() - start:.1f} s)", flush=True)
    table, best = choose(data["cells"])
    data["rules"] = {k: {"mean_accuracy": v[0], "below_majority": v[1]} for k, v in table.items()}
    data["chosen"] = best
    data["protocol"] = {"folds": FOLDS, "draws": DRAWS, "choice_draws": CHOICE_DRAWS, "shares": SHARES,
                        "max_rows": MAX_ROWS, "kappas": KAPPAS, "max_shares": MAX_SHARES, "tables": names,
                        "epsilons": EPSILONS, "rules": RULES, "tie": TIE, "slack": SLACK}
    out.write_text(json.dumps(data, indent=1) + "\n")
    for key in sorted(table, key=lambda k: -table[k][0])[:12]:
        print(f"{key:40s} mean accuracy {table[key][0]:.4f}, below majority {table[key][1]}")
    for rule in RULES:
        key = f"{rule}: no fallback"
        if key in table:
            print(f"{key:40s} mean accuracy {table[key][0]:.4f}, below majority {table[key][1]}")
    print("chosen", best)


if __name__ == "__main__":
    main()
