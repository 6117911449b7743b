"""The pseudo-Huber robust regressor against AdaSSP least squares on heavy-tailed targets.

Synthetic, public and seeded: ``X`` uniform on ``[-0.5, 0.5]^2``, ``y = 20 + X [10, -5] + t_1``
(Cauchy noise of scale 1, i.e. 0.05 on the ``[-1, 1]`` scale of ``y_bounds = (0, 40)``), and
with ``--outliers`` a share of the targets replaced by wild values in ``[30, 1e4]``. For each
``n`` and each estimator (``PrivateRobustRegressor`` at several widths ``h``, and
``PrivateLeastSquares``, both with ``y_bounds=(0, 40)`` and ``epsilon=1``) it records the median
over draws of ``||(coef_, intercept_) - (10, -5, 20)||``. Writes
``benchmarks/results/robust_regression.json``; ``docs/regression.md`` and
``PrivateRobustRegressor``'s ``h`` quote it. Run it with ``nice`` (about a minute)::

    PYTHONPATH=src python benchmarks/robust_regression.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from dperm import PrivateLeastSquares, PrivateRobustRegressor

TRUTH = np.array([10.0, -5.0, 20.0])
BOUNDS = (0.0, 40.0)
WIDTHS = (0.05, 0.1, 0.3, 1.0)
SIZES = (3_000, 20_000)
OUTLIER_SHARES = (0.0, 0.1)
DRAWS = 6


def synthetic(n: int, seed: int, outliers: float):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, 2))
    y = 20 + X @ TRUTH[:2] + rng.standard_t(1, size=n)
    wild = rng.uniform(size=n) < outliers
    y[wild] = rng.uniform(30, 1e4, wild.sum())
    return X, y


def error(model) -> float:
    return float(np.linalg.norm(np.r_[model.coef_, model.intercept_] - TRUTH))


def main() -> dict:
    estimators = {f"robust_h{h}": (lambda seed, h=h: PrivateRobustRegressor(
        y_bounds=BOUNDS, epsilon=1.0, h=h, random_state=seed)) for h in WIDTHS}
    estimators["least_squares_adassp"] = lambda seed: PrivateLeastSquares(
        y_bounds=BOUNDS, epsilon=1.0, random_state=seed)
    cells = []
    for n in SIZES:
        for share in OUTLIER_SHARES:
            medians = {}
            for name, make in estimators.items():
                errors = []
                for draw in range(DRAWS):
                    X, y = synthetic(n, 100 + draw, share)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        errors.append(error(make(draw).fit(X, y)))
                medians[name] = round(float(np.median(errors)), 3)
            cells.append({"n": n, "outlier_share": share, "median_error": medians})
            print(cells[-1], flush=True)
    result = {"epsilon": 1.0, "y_bounds": BOUNDS, "draws": DRAWS, "truth": TRUTH.tolist(), "cells": cells}
    out = Path(__file__).parent / "results" / "robust_regression.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
