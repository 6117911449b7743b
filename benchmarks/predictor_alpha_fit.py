"""Fit ``PrivatePredictor(alpha="auto")``'s multiplier against the TRUTH on synthetic data (issue 30).

The rule (:func:`dperm.privacy.alpha.prediction_default_alpha`) is ``alpha = C (m eps)^(-p)``
with ``p = 1/2`` for least squares (002 Thm 3) and ``2/3`` for the hinge (the noise on the
margin ``~ 1 / (alpha m eps)`` balanced against the shrinkage ``alpha``); only ``C`` is fitted.
Each answer is scored against the true regression function, not against the exact
(noise-free) model: the old default ``alpha = 0.1`` answered close to the exact model, whose
answers were shrunk to about a quarter of the truth.

Fitting set (synthetic, generated here; no table of ``benchmarks/_tables.py``, no Adult): a
random smooth function (six Gaussian bumps, max ``|f| = 0.9``) on ``[-1, 1]^d``, ``d`` in
{2, 5, 10}, ``m = 500`` training rows, epsilon per query in {0.1, 1, 10, 100}; least squares:
``y = f + N(0, 0.3^2)`` clipped to ``[-1, 1]``, scored by the answers' RMSE against ``f`` and
their slope on ``f``; hinge: labels with ``P(+1) = expit(6 f)``, scored by the sign error
against ``sign(f)``. ``C`` in ``4^-1 ... 4^4`` minimises the mean excess over each cell's best.
Ported from the rejected ``defaults`` branch's ``alpha_default_fit.py --study predictor``.

Run: ``PYTHONPATH=src python benchmarks/predictor_alpha_fit.py`` writes
``benchmarks/results/predictor_alpha_fit.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit

RESULTS = Path(__file__).resolve().parent / "results"
MULTIPLIERS = tuple(4.0**k for k in range(-1, 5))
EXPONENTS = {"squared": 0.5, "hinge": 2.0 / 3.0}
QUERIES = 500


def run_cell(d, m, eps, loss, draws):
    """Scores of every ``C`` on one synthetic cell (answers against the truth)."""
    from dperm.prediction import PrivatePredictor

    rng = np.random.default_rng([d, 3])
    centres, weights = rng.uniform(-1, 1, size=(6, d)), rng.uniform(-1, 1, size=6)

    def truth(X):
        return np.exp(-np.sum((X[:, None, :] - centres[None]) ** 2, axis=2) / (0.5 * d)) @ weights

    amplitude = 0.9 / np.abs(truth(rng.uniform(-1, 1, size=(5000, d)))).max()
    grid = []
    for C in MULTIPLIERS:
        alpha = C * (m * eps) ** (-EXPONENTS[loss])
        rmse, slope, err = [], [], []
        for draw in range(draws):
            r = np.random.default_rng([d, m, draw])
            X = r.uniform(-1, 1, size=(m, d))
            f = amplitude * truth(X)
            Q = r.uniform(-1, 1, size=(QUERIES, d))
            fq = amplitude * truth(Q)
            y = (np.clip(f + 0.3 * r.standard_normal(m), -1, 1) if loss == "squared"
                 else np.where(r.random(m) < expit(6 * f), 1.0, -1.0))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = PrivatePredictor(epsilon_total=eps * QUERIES, epsilon_per_query=eps, loss=loss, alpha=alpha,
                                         gamma=1.0 / d, random_state=np.random.default_rng([d, m, draw]),
                                         classes=[-1.0, 1.0] if loss == "hinge" else None).fit(X, y)
                answers = model.predict(Q) if loss == "squared" else model.decision_function(Q)
            if loss == "squared":
                rmse.append(float(np.sqrt(np.mean((answers - fq) ** 2))))
                slope.append(float(np.polyfit(fq, answers, 1)[0]))
            else:
                err.append(float(np.mean(np.sign(answers) != np.sign(fq))))
        grid.append({"C": C, "alpha": alpha, "rmse_vs_truth": float(np.mean(rmse)) if rmse else None,
                     "slope_on_truth": float(np.mean(slope)) if slope else None,
                     "sign_error_vs_truth": float(np.mean(err)) if err else None})
    return {"d": d, "m": m, "epsilon_per_query": eps, "loss": loss, "grid": grid}


def summarise(cells):
    summary = {}
    for loss in EXPONENTS:
        key = "rmse_vs_truth" if loss == "squared" else "sign_error_vs_truth"
        rows = [c for c in cells if c["loss"] == loss]
        excess = {C: float(np.mean([next(g[key] for g in r["grid"] if g["C"] == C) - min(g[key] for g in r["grid"])
                                    for r in rows])) for C in MULTIPLIERS}
        summary[loss] = {"mean_excess_by_C": {f"{C:g}": v for C, v in excess.items()},
                         "best_C": min(excess, key=excess.get)}
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "predictor_alpha_fit.json"))
    args = parser.parse_args(argv)
    start = time.time()
    cells = []
    for d, eps, loss in itertools.product((2, 5, 10), (0.1, 1.0, 10.0, 100.0), EXPONENTS):
        cells.append(run_cell(d, 500, eps, loss, args.draws))
        print(f"d={d} eps={eps:g} {loss} done", flush=True)
    out = {"benchmark": "predictor_alpha_fit", "issue": 30, "draws": args.draws, "seconds": time.time() - start,
           "summary": summarise(cells), "cells": cells}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["summary"], indent=1))


if __name__ == "__main__":
    main()
