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

``--study tables`` (least squares): the same question on REAL data, the FITTING regression tables
of ``benchmarks/_tables.py`` (never an EVALUATION table; ``benchmarks/predictor_evaluation.py``
reports on those): each table ``unit``-encoded, the target mapped by its public range onto
[-1, 1], 3-fold CV, ``m`` = two thirds of the table (340-3,720 rows), epsilon per query in
{0.5, 1, 3}. For each fold and each ``alpha`` of the grid ``2^3 ... 2^-11`` the certified model is
solved once (:func:`dperm.mechanisms.prediction.fit_private_prediction`, the estimator's own
path) and answered at each epsilon with the estimator's calibrated exact noise
(:func:`~dperm.mechanisms.prediction.calibrate_prediction`,
:func:`~dperm.mechanisms.prediction.answer_queries`), ``DRAWS_TABLES`` draws; the score is R^2
against the true held-out target. A rule ``C (m eps)^(-p)`` is scored by interpolating each
cell's R^2 curve in ``log alpha`` (grid ``2^3 ... 2^-11``); its regret is the cell's best grid R^2
minus the rule's (both floored at -1: below that every model is as useless as another).
Writes ``benchmarks/results/predictor_alpha_fit_tables.json``.
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


ALPHA_GRID = tuple(2.0**-k for k in range(-3, 12))
TABLE_EPSILONS = (0.5, 1.0, 3.0)
DRAWS_TABLES = 2
#: the rules scored on the tables' curves: C in 2^-4 ... 2^5 x p in {1/2 (002 Thm 3, r >= 1/2), 2/3 (r -> 0)}
RULE_MULTIPLIERS = tuple(2.0**k for k in range(-4, 6))
#: R^2 below this counts as this in a regret (any model below -1 is as useless as another)
R2_FLOOR = -1.0
RULE_EXPONENTS = (0.5, 2.0 / 3.0)


def table_curves(name, draws=DRAWS_TABLES, folds=3):
    """R^2 against the truth of every grid alpha at every epsilon, per fold, on one FITTING table."""
    import sys

    from sklearn.model_selection import KFold

    from dperm.losses import get_loss
    from dperm.mechanisms.prediction import answer_queries, calibrate_prediction, fit_private_prediction, path_kappa
    from dperm.solvers.kernel import plan_prediction_solver

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _tables

    assert name in _tables.names("fitting", "regression"), f"{name} is not a FITTING regression table"
    table = _tables.load(name)
    X = _tables.encode(table)["unit"]
    lo, hi = table.y_range
    y = np.clip((2.0 * table.y - lo - hi) / (hi - lo), -1.0, 1.0)
    loss = get_loss("squared", y_bound=1.0)
    cells = []
    for f, (train, test) in enumerate(KFold(folds, shuffle=True, random_state=0).split(X)):
        m = len(train)
        plan = plan_prediction_solver("auto", loss, m, X.shape[1], 256, 2.0)
        total = float(np.sum((y[test] - y[test].mean()) ** 2))
        r2 = {eps: [] for eps in TABLE_EPSILONS}
        for alpha in ALPHA_GRID:
            fit = fit_private_prediction(X[train], y[train], loss=loss, kernel="rbf", gamma=1.0, alpha=alpha,
                                         max_iter=1000, epsilon_per_query=1.0, solver=plan.solver,
                                         n_components=256, feature_seed=0)
            values = fit.model.values(X[test])
            for eps in TABLE_EPSILONS:
                calibration = calibrate_prediction(loss, alpha, m, eps, kappa=path_kappa("rbf", plan.solver))
                scores = []
                for draw in range(draws):
                    rng = np.random.default_rng([f, draw, int(eps * 10), len(r2[eps])])
                    answers = answer_queries(values, calibration.noise, rng)
                    scores.append(1.0 - float(np.sum((y[test] - answers) ** 2)) / total)
                r2[eps].append(float(np.mean(scores)))
        for eps in TABLE_EPSILONS:
            cells.append({"table": name, "fold": f, "m": m, "epsilon_per_query": eps, "solver": plan.solver,
                          "alpha_grid": list(ALPHA_GRID), "r2": r2[eps]})
        print(f"{name} fold {f} (m={m}, {plan.solver}) done", flush=True)
    return cells


def rule_r2(cell, alpha):
    """A cell's R^2 at ``alpha``, interpolated in ``log alpha`` (clamped to the grid's ends)."""
    grid = np.log(np.asarray(cell["alpha_grid"]))[::-1]
    return float(np.interp(np.log(alpha), grid, np.asarray(cell["r2"])[::-1]))


def summarise_tables(cells):
    """Mean R^2 regret of every rule ``C (m eps)^(-p)`` against each cell's best grid alpha."""
    rules = []
    for p in RULE_EXPONENTS:
        for C in RULE_MULTIPLIERS:
            regret = [max(max(c["r2"]), R2_FLOOR)
                      - max(rule_r2(c, C * (c["m"] * c["epsilon_per_query"]) ** (-p)), R2_FLOOR) for c in cells]
            rules.append({"C": C, "p": p, "mean_r2_regret": float(np.mean(regret)),
                          "max_r2_regret": float(np.max(regret))})
    best = {eps: {} for eps in TABLE_EPSILONS}
    for c in cells:
        best[c["epsilon_per_query"]].setdefault(c["table"], []).append(c["alpha_grid"][int(np.argmax(c["r2"]))])
    return {"rules": sorted(rules, key=lambda r: r["mean_r2_regret"]),
            "best_alpha_per_table": {f"{e:g}": {t: float(np.exp(np.mean(np.log(v)))) for t, v in d.items()}
                                     for e, d in best.items()}}


def main_tables(args):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _tables

    start = time.time()
    cells = []
    for name in _tables.names("fitting", "regression"):
        cells += table_curves(name, draws=args.draws_tables)
    out = {"benchmark": "predictor_alpha_fit --study tables", "issue": 30, "draws": args.draws_tables,
           "seconds": time.time() - start, "summary": summarise_tables(cells), "cells": cells}
    Path(args.out_tables).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["summary"]["rules"][:6], indent=1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "predictor_alpha_fit.json"))
    parser.add_argument("--study", choices=("synthetic", "tables"), default="synthetic")
    parser.add_argument("--draws-tables", type=int, default=DRAWS_TABLES)
    parser.add_argument("--out-tables", default=str(RESULTS / "predictor_alpha_fit_tables.json"))
    parser.add_argument("--summarise", action="store_true", help="--study tables: only recompute the summary")
    args = parser.parse_args(argv)
    if args.study == "tables" and args.summarise:
        data = json.loads(Path(args.out_tables).read_text())
        data["summary"] = summarise_tables(data["cells"])
        Path(args.out_tables).write_text(json.dumps(data, indent=1) + "\n")
        print(json.dumps(data["summary"]["rules"][:6], indent=1))
        return data
    if args.study == "tables":
        return main_tables(args)
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
