"""Benchmark: private alpha selection on Adult, 003 Alg. 4 vs random stopping (Papernot & Steinke 2022).

Official Adult split, ``load_adult("unit_norm")``, :class:`dperm.PrivateLogisticRegression`
(objective perturbation, pure epsilon, no intercept, public label set), public grid
``alpha in [1e-4, 3e-4, 1e-3, 3e-3, 1e-2]``. For each total epsilon and each of ``--draws``
seeds, side by side on the same data:

- ``alg4``: ``PrivateParameterSearch(method="alg4")`` (6 disjoint parts, exponential mechanism);
- ``random_stopping_eta1``: ``method="random_stopping"``, geometric stopping (3 x per repetition);
- ``random_stopping_eta0``: logarithmic stopping (2 x per repetition);
- ``test_tuned`` (NOT private): every fixed alpha trained on all rows with the total epsilon,
  the alpha with the lowest mean test error chosen by looking at the test set.

Every private method is charged the same *total* epsilon. Writes
benchmarks/results/private_tuning.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np

import dperm
from dperm import PrivateLogisticRegression, PrivateParameterSearch
from dperm.datasets import load_adult

ALPHAS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
EPSILONS = (0.1, 1.0)
RESULTS = Path(__file__).parent / "results"


def _estimator():
    return PrivateLogisticRegression(fit_intercept=False, classes=[0, 1])


def _search(method, epsilon, seed, shape, mean):
    extra = {} if method == "alg4" else {"method": "random_stopping", "stopping_shape": shape,
                                         "stopping_mean": mean}
    return PrivateParameterSearch(_estimator(), {"alpha": list(ALPHAS)}, epsilon=epsilon,
                                  random_state=seed, **extra)


def _error(model, data):
    return float(np.mean(model.predict(data.X_test) != data.y_test))


def _methods(mean):
    return {"alg4": ("alg4", None), "random_stopping_eta1": ("random_stopping", 1.0),
            "random_stopping_eta0": ("random_stopping", 0.0)}


def run(draws: int, mean: float) -> dict:
    data = load_adult("unit_norm")
    cells = []
    for epsilon in EPSILONS:
        for name, (method, shape) in _methods(mean).items():
            errors, picks, start = [], [], time.perf_counter()
            for seed in range(draws):
                search = _search(method, epsilon, 1000 + seed, shape, mean).fit(data.X_train, data.y_train)
                errors.append(_error(search, data))
                picks.append(search.best_params_["alpha"])
            cells.append({"epsilon": epsilon, "method": name, "private": True,
                          "mean_error": float(np.mean(errors)), "std_error": float(np.std(errors)),
                          "errors": errors, "picked_alpha": picks,
                          "seconds": time.perf_counter() - start})
        per_alpha = {}
        for alpha in ALPHAS:
            per_alpha[alpha] = [
                _error(_estimator().set_params(alpha=alpha, epsilon=epsilon, random_state=2000 + s)
                       .fit(data.X_train, data.y_train), data) for s in range(draws)]
        best = min(ALPHAS, key=lambda a: np.mean(per_alpha[a]))
        cells.append({"epsilon": epsilon, "method": "test_tuned (NOT private)", "private": False,
                      "mean_error": float(np.mean(per_alpha[best])),
                      "std_error": float(np.std(per_alpha[best])), "errors": per_alpha[best],
                      "picked_alpha": best,
                      "mean_error_per_alpha": {str(a): float(np.mean(v)) for a, v in per_alpha.items()}})
    return {"benchmark": "private_tuning", "dataset": "adult (official split, unit_norm)",
            "estimator": "PrivateLogisticRegression(objective, fit_intercept=False)",
            "alphas": list(ALPHAS), "draws": draws, "stopping_mean": mean,
            "dperm": dperm.__version__, "python": platform.python_version(), "cells": cells}


def _table(result: dict) -> str:
    lines = ["| total eps | method | test error (mean +- std) |", "|---|---|---|"]
    for cell in result["cells"]:
        lines.append(f"| {cell['epsilon']:g} | {cell['method']} | "
                     f"{cell['mean_error']:.4f} +- {cell['std_error']:.4f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--stopping-mean", type=float, default=10.0,
                        help="E[K] of random stopping (public; run time only under pure DP)")
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run(args.draws, args.stopping_mean)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "private_tuning.json").write_text(json.dumps(result, indent=2) + "\n")
    print(_table(result))


if __name__ == "__main__":
    main()
