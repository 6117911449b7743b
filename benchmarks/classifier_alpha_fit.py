"""Fit the classifiers' epsilon-monotone default alpha on the FITTING tables only (issue 30).

The rule (:func:`dperm.privacy.alpha.default_alpha`, margin losses) is
``alpha = max(C base, k / n)`` with the theory's exponent 1 on the base (so the noise's effect
on the weights never grows with epsilon; ``tests/privacy/test_alpha.py`` checks it). This
script chooses ``C`` (and checks the floor ``k``) by cross-validated accuracy on
``benchmarks/_tables.py``'s FITTING binary tables only -- never on an EVALUATION table,
Adult or KDD Cup, which ``benchmarks/defaults.py`` reports on.

Protocol: every FITTING binary table, encoded as ``defaults.py``'s ``unit`` (one-hot, numeric
columns to [0, 1] by the public bounds, rows scaled to norm 1), epsilon in ``EPSILONS``,
3-fold stratified CV x 3 noise draws, ``PrivateLogisticRegression`` with an intercept and the
rule's mechanism (``objective`` for the objective rule, ``output`` for the output rule). Each
cell scores a grid of alphas: ``C base`` for ``C`` in ``MULTIPLIERS`` and ``k / n`` for ``k`` in
``FLOORS`` (and, for the objective rule, its Jacobian term ``J``); a rule ``(C, p)`` gets the
accuracy of ``max(C base^p, 1 / n, J)``, read off the cell's grid by linear interpolation in
``log alpha``. ``p <= 1`` keeps the noise's effect non-increasing in epsilon (``1 / (C R_x)``
times ``base^(1 - p)``); ``k = 1`` is scikit-learn's ``C = 1``. Tables above ``MAX_ROWS`` rows are subsampled once (fixed
seed) to keep the run short. The chosen ``(C, k)``
minimises the mean regret (best accuracy of the cell's grid minus the rule's), over cells.
(The objective run's first two tables' cells, hi and vietnam, were run with a finer grid and 3 draws on 12,000
rows before the run was shortened; their cells say so by their grid and ``n_train``. The output
run's cells were first run with ``C`` up to 1, then extended with the missing grid points.)

Run: ``OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/classifier_alpha_fit.py --rule objective``
writes ``benchmarks/results/classifier_alpha_fit_<rule>.json``.
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
EPSILONS = (0.3, 1.0, 3.0, 10.0)
MULTIPLIERS = (0.01, 0.03, 0.1, 0.3, 1.0)
#: the output rule's best multipliers sat at the first grid's edge (1): its grid reaches 10.
MULTIPLIERS_BY_RULE = {"objective": MULTIPLIERS, "output": (0.1, 0.3, 1.0, 3.0, 10.0)}
FLOORS = (1.0,)
FOLDS, DRAWS = 3, 2
MAX_ROWS = 6_000
#: the rules scored: ``max(C base^p, k / n, J)``, ``p <= 1`` (monotone), ``k = 1`` (scikit-learn).
RULE_C = tuple(float(c) for c in np.geomspace(0.01, 10.0, 31))
RULE_P = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def jacobian_alpha(n, epsilon, norm):
    """The rule's Jacobian term for the logistic loss (:func:`dperm.privacy.alpha.jacobian_alpha`)."""
    from dperm.losses import LogisticLoss
    from dperm.privacy.alpha import jacobian_alpha as rule

    return rule(n, epsilon, LogisticLoss(), norm)


def base_alpha(rule, n, dimension, epsilon, norm, feature_norm):
    """The rule's base (``C = 1``, exponent 1, no floor), from public quantities only."""
    from dperm.losses import LogisticLoss
    from dperm.mechanisms.choice import auto_alpha

    return auto_alpha(n, dimension, epsilon, 0.0, mechanism=rule, loss=LogisticLoss(), data_norm=norm,
                      feature_norm=feature_norm, multiplier=1.0)


def cell_scores(X, y, labels, epsilon, rule, log, skip=frozenset()):
    """``{alpha: mean accuracy}`` over the grid, and the base, on one table at one epsilon."""
    from sklearn.model_selection import StratifiedKFold

    from dperm import PrivateLogisticRegression

    folds = list(StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(X, y))
    n_train = min(len(train) for train, _ in folds)
    base = base_alpha(rule, n_train, X.shape[1] + 1, epsilon, np.hypot(1.0, 1.0), 1.0)
    grid = {("C", c): c * base for c in MULTIPLIERS_BY_RULE[rule]} | {("k", k): k / n_train for k in FLOORS}
    if rule == "objective":
        grid[("J", 1)] = jacobian_alpha(n_train, epsilon, np.hypot(1.0, 1.0))
    scores = {}
    for key, alpha in grid.items():
        if f"{key[0]}={key[1]:g}" in skip:
            continue
        accuracies = []
        for f, (train, test) in enumerate(folds):
            for draw in range(DRAWS):
                model = PrivateLogisticRegression(epsilon=epsilon, alpha=alpha, mechanism=rule, classes=list(labels),
                                                  random_state=1000 * f + draw)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(X[train], y[train])
                    accuracies.append(float(np.mean(model.predict(X[test]) == y[test])))
                except ValueError:  # refused before spending: the user gets no model; score it as majority
                    values, counts = np.unique(y[train], return_counts=True)
                    accuracies.append(float(np.mean(y[test] == values[np.argmax(counts)])))
        scores[f"{key[0]}={key[1]:g}"] = {"alpha": alpha, "accuracy": float(np.mean(accuracies))}
    return base, n_train, scores


def accuracy_at(cell, alpha):
    """The cell's accuracy at ``alpha``: linear in ``log alpha`` between its grid points (flat outside)."""
    points = sorted((v["alpha"], v["accuracy"]) for v in cell["scores"].values())
    logs = np.log([a for a, _ in points])
    return float(np.interp(np.log(alpha), logs, [acc for _, acc in points]))


def rule_alpha(cell, C, p, k=1.0):
    """``max(C base^p, k / n, J)`` on one cell (``J`` the objective rule's Jacobian term)."""
    alpha = max(C * cell["base"] ** p, k / cell["n_train"])
    if "J=1" in cell["scores"]:
        alpha = max(alpha, cell["scores"]["J=1"]["alpha"])
    return alpha


def choose(cells):
    """``{"C=..,p=..": mean regret}`` (best grid accuracy of a cell minus the rule's) and the minimiser."""
    table = {}
    for C in RULE_C:
        for p in RULE_P:
            regrets = [max(v["accuracy"] for v in c["scores"].values()) - accuracy_at(c, rule_alpha(c, C, p))
                       for c in cells]
            table[f"C={C:.4g},p={p:g}"] = float(np.mean(regrets))
    best = min(table, key=table.get)
    return table, best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rule", choices=("objective", "output"), default="objective")
    parser.add_argument("--only", default=None, help="comma-separated FITTING tables")
    parser.add_argument("--epsilons", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else _tables.names("fitting", "binary")
    assert set(names) <= set(_tables.names("fitting", "binary")), "FITTING binary tables only"
    epsilons = [float(e) for e in args.epsilons.split(",")] if args.epsilons else list(EPSILONS)
    out = Path(args.out) if args.out else RESULTS / f"classifier_alpha_fit_{args.rule}.json"
    data = json.loads(out.read_text()) if out.exists() else {"rule": args.rule, "cells": []}
    done = {(c["table"], c["epsilon"]) for c in data["cells"]
            if all(f"C={m:g}" in c["scores"] for m in MULTIPLIERS_BY_RULE[args.rule])}
    partial = {(c["table"], c["epsilon"]): c for c in data["cells"] if (c["table"], c["epsilon"]) not in done}
    for name in names:
        table = None
        for eps in epsilons:
            if (name, eps) in done:
                continue
            if table is None:
                table = _tables.load(name)
                if len(table.y) > MAX_ROWS:
                    keep = np.sort(np.random.default_rng(0).choice(len(table.y), MAX_ROWS, replace=False))
                    table.X, table.y = table.X[keep], table.y[keep]
                X = _tables.encode(table)["unit"]
            start = time.perf_counter()
            old = partial.get((name, eps))
            base, n_train, scores = cell_scores(X, table.y, table.labels, eps, args.rule, print,
                                                skip=set(old["scores"]) if old else set())
            if old:  # a finished cell of a coarser grid: only the missing grid points were run
                old["scores"].update(scores)
                out.write_text(json.dumps(data, indent=1) + "\n")
                print(f"{name:14s} eps={eps:<5g} extended ({time.perf_counter() - start:.1f} s)", flush=True)
                continue
            data["cells"].append({"table": name, "epsilon": eps, "n_train": n_train, "d": int(X.shape[1]),
                                  "folds": FOLDS, "draws": DRAWS,
                                  "base": base, "scores": scores, "seconds": time.perf_counter() - start})
            out.write_text(json.dumps(data, indent=1) + "\n")
            best = max(scores, key=lambda key: scores[key]["accuracy"])
            print(f"{name:14s} eps={eps:<5g} n={n_train:6d} base={base:.3g} best {best} "
                  f"{scores[best]['accuracy']:.4f} ({time.perf_counter() - start:.1f} s)", flush=True)
    table, best = choose(data["cells"])
    data["regret"], data["chosen"] = table, best
    data["protocol"] = {"folds": FOLDS, "draws": DRAWS, "multipliers": MULTIPLIERS, "floors": FLOORS,
                        "max_rows": MAX_ROWS, "rule_C": RULE_C, "rule_p": RULE_P, "tables": names,
                        "epsilons": epsilons}
    out.write_text(json.dumps(data, indent=1) + "\n")
    for key in sorted(table, key=table.get)[:8]:
        print(f"{key:16s} mean regret {table[key]:.4f}")
    print("chosen", best)


if __name__ == "__main__":
    main()
