"""Gaussian multinomial objective perturbation against one-vs-rest Gaussian at equal (epsilon, delta).

Evaluation only: nothing here is fitted or chosen (no constant, no rule). Tables: the
multiclass EVALUATION tables of ``benchmarks/defaults.py`` (``chile``, 4 classes, 2,431 rows;
``vote92``, 3, 909; ``fishing``, 4, 1,182; ``digits``, 10, 1,797), loaded and encoded by
``benchmarks/_tables.py`` exactly as ``defaults.py`` does (``unit``: categoricals one-hot,
numeric columns to [0, 1] by the public bounds, rows scaled to norm 1; scikit-learn on
``columns``), with its folds (stratified 5-fold, ``shuffle=True, random_state=0``) and its
noise seeds (``7919 f + 104729 k + 13``), 5 draws per fold.

At ``delta = 1e-5`` and epsilon in {0.5, 1, 3}, ``PrivateLogisticRegression(classes=labels,
epsilon=eps, delta=1e-5)`` otherwise at its defaults (``alpha="auto"``, an intercept):

- ``gaussian_multinomial``: ``multi_class="multinomial", mechanism="gaussian_objective"``
  (the new row, ``gaussian_multinomial_objective``, with the whole (eps, delta));
- ``ovr_gaussian``: ``multi_class="ovr", mechanism="gaussian_objective"`` (K binary Gaussian
  objective problems at (eps / K, delta / K) each);
- ``multinomial_pure``: ``multi_class="multinomial", mechanism="objective"`` (pure, for context);
- ``auto``: the defaults (``multi_class="auto", mechanism="auto"``) at delta 1e-5: which model
  and mechanism the public comparison chose, and its accuracy;
- ``majority`` and ``sklearn`` (scikit-learn's ``LogisticRegression(max_iter=1000)``), one
  fit per fold.

Run::

    OPENBLAS_NUM_THREADS=1 nice -n 10 .venv-bench/bin/python benchmarks/gaussian_multinomial.py

Writes ``benchmarks/results/gaussian_multinomial.json`` (every score) and prints the markdown
table of docs/design/gaussian_multinomial.md.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import defaults  # noqa: E402

from dperm import PrivateLogisticRegression  # noqa: E402

TABLES = ("chile", "vote92", "fishing", "digits")
EPSILONS = (0.5, 1.0, 3.0)
DELTA = 1e-5
DRAWS = 5
MODELS = {
    "gaussian_multinomial": {"multi_class": "multinomial", "mechanism": "gaussian_objective"},
    "ovr_gaussian": {"multi_class": "ovr", "mechanism": "gaussian_objective"},
    "multinomial_pure": {"multi_class": "multinomial", "mechanism": "objective"},
    "auto": {},
}
OUT = Path(__file__).resolve().parent / "results" / "gaussian_multinomial.json"


def run_model(table, X, folds, model, epsilon):
    scores, chosen, refused, wall = [], Counter(), [], time.perf_counter()
    for f, (train, test) in enumerate(folds):
        for k in range(DRAWS):
            estimator = PrivateLogisticRegression(epsilon=epsilon, delta=DELTA, classes=list(table.labels),
                                                  random_state=7919 * f + 104729 * k + 13,
                                                  **MODELS[model])
            try:
                estimator.fit(X[train], table.y[train])
            except ValueError as error:  # a refusal is what the user gets
                refused.append(f"{type(error).__name__}: {str(error)[:160]}")
                continue
            chosen[f"{estimator.multi_class_}/{estimator.mechanism_}"] += 1
            scores.append(float(np.mean(estimator.predict(X[test]) == table.y[test])))
    s = np.asarray(scores)
    return {"mean": float(s.mean()) if len(s) else None,
            "se": float(s.std(ddof=1) / np.sqrt(len(s))) if len(s) > 1 else 0.0,
            "scores": [round(v, 6) for v in scores], "refused": len(refused),
            "refusals": sorted(set(refused))[:2], "chosen": dict(chosen),
            "seconds_per_fit": (time.perf_counter() - wall) / (len(folds) * DRAWS)}


def baselines(table, enc, folds):
    from sklearn.linear_model import LogisticRegression

    sk, majority = [], []
    for train, test in folds:
        Xc = enc["columns"]
        sk.append(LogisticRegression(max_iter=1000).fit(Xc[train], table.y[train]).score(Xc[test], table.y[test]))
        values, counts = np.unique(table.y[train], return_counts=True)
        majority.append(float(np.mean(table.y[test] == values[np.argmax(counts)])))
    return float(np.mean(sk)), float(np.mean(majority))


def main():
    warnings.simplefilter("ignore")
    rows = []
    for name in TABLES:
        table, enc, folds = defaults.prepare(name, quick=False)
        X = enc["unit"]
        sklearn, majority = baselines(table, enc, folds)
        for epsilon in EPSILONS:
            row = {"table": name, "n": int(len(table.y)), "d": int(X.shape[1]), "K": len(table.labels),
                   "epsilon": epsilon, "delta": DELTA, "sklearn": sklearn, "majority": majority}
            for model in MODELS:
                row[model] = run_model(table, X, folds, model, epsilon)
            rows.append(row)
            print(json.dumps({k: (v["mean"] if isinstance(v, dict) else v) for k, v in row.items()}),
                  flush=True)
            OUT.write_text(json.dumps({"delta": DELTA, "draws": DRAWS, "folds": len(folds),
                                       "rows": rows}, indent=1))
    print(markdown(rows))


def markdown(rows):
    head = ("| table | n | d | K | eps | Gaussian multinomial | one-vs-rest Gaussian | pure multinomial "
            "| auto (chose) | majority | scikit-learn |\n| --- | --- | --- | --- | --- | --- | --- | --- "
            "| --- | --- | --- |")
    lines = [head]
    for r in rows:
        def cell(m):
            v = r[m]
            return "refused" if v["mean"] is None else f"{v['mean']:.3f} ± {v['se']:.3f}"
        chose = ", ".join(f"{k.split('/')[1]} {v}" for k, v in r["auto"]["chosen"].items())
        lines.append(f"| {r['table']} | {r['n']} | {r['d']} | {r['K']} | {r['epsilon']:g} | "
                     f"{cell('gaussian_multinomial')} | {cell('ovr_gaussian')} | {cell('multinomial_pure')} | "
                     f"{cell('auto')} ({chose}) | {r['majority']:.3f} | {r['sklearn']:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if "--report" in sys.argv:
        print(markdown(json.loads(OUT.read_text())["rows"]))
    else:
        main()
