"""Benchmark: pure objective perturbation vs Gaussian objective perturbation (004's sigma* vs tight).

Adult (official split, ``load_adult("unit_norm")``), private logistic regression with a fixed
``alpha = 1e-3`` (not tuned: no test-set choice), ``delta = 1e-5`` for the Gaussian mechanisms,
epsilon in {0.1, 1}, 20 noise draws each, side by side in one process:

- ``objective``: pure epsilon-DP objective perturbation (003 Alg. 2);
- ``gaussian_objective_004``: 004 Alg. 4's sigma* calibration;
- ``gaussian_objective``: the tight calibration (docs/design/gaussian_objective.md).

Reports the test error (mean, std) and the noise scale each mechanism recorded (the per-coordinate
sigma for the Gaussian ones, the root-mean-square noise norm for all). Writes
benchmarks/results/gaussian_objective.json.

Run: ``python benchmarks/gaussian_objective.py [--draws 20]``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np

import dperm
from dperm import PrivateLogisticRegression
from dperm.datasets import load_adult

EPSILONS = (0.1, 1.0)
MECHANISMS = ("objective", "gaussian_objective_004", "gaussian_objective")
ALPHA = 1e-3
DELTA = 1e-5
RESULTS = Path(__file__).parent / "results"


def rms_noise_norm(record, dimension: int) -> float:
    """Root-mean-square norm of the objective's noise ``b``: ``sqrt(2 d) scale`` for dperm's
    per-coordinate (discrete) Laplace noise of the pure mechanism, ``sqrt(d) sigma`` for the
    (discrete) Gaussian ones (the discrete distributions' variances are at most these)."""
    if record.noise_distribution == "discrete-gaussian":
        return record.noise_scale * math.sqrt(dimension)
    return record.noise_scale * math.sqrt(2.0 * dimension)


def run(draws: int) -> dict:
    data = load_adult("unit_norm")
    d = data.X_train.shape[1]
    rows = []
    for epsilon in EPSILONS:
        for mechanism in MECHANISMS:
            errors, scales, started = [], [], time.perf_counter()
            for seed in range(draws):
                model = PrivateLogisticRegression(
                    epsilon=epsilon, delta=0.0 if mechanism == "objective" else DELTA, alpha=ALPHA,
                    mechanism=mechanism, classes=[0, 1], random_state=seed).fit(data.X_train, data.y_train)
                errors.append(float(np.mean(model.predict(data.X_test) != data.y_test)))
                scales.append(model.privacy_.noise_scale)
            record = model.privacy_
            row = {
                "epsilon": epsilon, "mechanism": mechanism,
                "delta": 0.0 if mechanism == "objective" else DELTA,
                "error_mean": float(np.mean(errors)), "error_std": float(np.std(errors)),
                "errors": errors, "noise_distribution": record.noise_distribution,
                "noise_scale": scales[0], "rms_noise_norm": rms_noise_norm(record, d),
                "seconds": time.perf_counter() - started,
            }
            rows.append(row)
            print(f"eps={epsilon:<4} {mechanism:<24} error {row['error_mean']:.4f} +- {row['error_std']:.4f}"
                  f"  noise scale {row['noise_scale']:.4g}  rms||b|| {row['rms_noise_norm']:.4g}",
                  flush=True)
    ratios = {}
    for epsilon in EPSILONS:
        by = {r["mechanism"]: r for r in rows if r["epsilon"] == epsilon}
        ratios[str(epsilon)] = {
            "sigma_tight_over_004": by["gaussian_objective"]["noise_scale"]
            / by["gaussian_objective_004"]["noise_scale"],
            "norm_tight_over_pure": by["gaussian_objective"]["rms_noise_norm"]
            / by["objective"]["rms_noise_norm"],
            "norm_004_over_pure": by["gaussian_objective_004"]["rms_noise_norm"]
            / by["objective"]["rms_noise_norm"],
        }
    return {
        "dataset": "adult (official split, unit_norm)", "n_train": int(data.X_train.shape[0]),
        "dimension": d, "alpha": ALPHA, "delta": DELTA, "draws": draws, "rows": rows,
        "ratios": ratios, "dperm": dperm.__version__, "python": platform.python_version(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20)
    args = parser.parse_args()
    result = run(args.draws)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "gaussian_objective.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["ratios"], indent=2))


if __name__ == "__main__":
    main()
