"""Benchmark: large-N privacy audits of every dperm mechanism (dperm.audit).

For each mechanism (output perturbation with logistic, huber and hinge losses;
objective perturbation with logistic and huber; Gaussian objective perturbation
with logistic and huber; the exponential-mechanism selection of parameter tuning)
and each epsilon, run the audit with N runs per dataset on the worst-case canary
pair and record the empirical lower bound eps_lower next to the claimed epsilon.
With ``--under-noised`` the copies with a quarter of the noise are audited too
(they should FAIL: the audit's power).

Run with ``python benchmarks/audit.py --runs 10000`` (a few minutes on one core;
``--jobs 2`` halves it). Writes benchmarks/results/audit.json and prints a
markdown table.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

import dperm
from dperm.audit import (
    audit_exponential_mechanism,
    audit_kernel_estimator,
    audit_mechanism,
    audit_multiparty,
    audit_private_predictor,
)

RESULTS = Path(__file__).parent / "results"
EPSILONS = (0.5, 1.0, 2.0)
#: (mechanism, loss); "tuning" is the exponential-mechanism selection.
MECHANISMS = (
    ("output", "logistic"),
    ("output", "huber"),
    ("output", "hinge"),
    ("objective", "logistic"),
    ("objective", "huber"),
    ("gaussian_objective", "logistic"),
    ("gaussian_objective", "huber"),
    ("tuning", None),
)
#: Gaussian objective perturbation is audited at the usual delta and at a large one:
#: at 1e-5 its calibration is driven by a tail no audit of this size sees.
GAUSSIAN_DELTAS = (1e-5, 1e-2)
UNDER_NOISED = 0.25


def _cases(epsilons, gaussian_deltas, under_noised):
    factors = (1.0, UNDER_NOISED) if under_noised else (1.0,)
    for epsilon in epsilons:
        for mechanism, loss in MECHANISMS:
            deltas = gaussian_deltas if mechanism == "gaussian_objective" else (0.0,)
            for delta in deltas:
                for factor in factors:
                    yield dict(mechanism=mechanism, loss=loss, epsilon=epsilon, delta=delta,
                               noise_factor=factor)


COMPOSITE = ("kernel", "prediction", "local_aggregation", "psgd", "psgd_coordinator_dp")
#: PSGD (both schemes) is (epsilon, delta)-DP; its audit uses a delta large enough to be visible.
PSGD_DELTA = 0.05


def _composite_cases(epsilons, under_noised):
    factors = (1.0, UNDER_NOISED) if under_noised else (1.0,)
    for epsilon in epsilons:
        for mechanism in COMPOSITE:
            for factor in factors:
                yield dict(mechanism=mechanism, loss="huber" if mechanism != "prediction" else "hinge",
                           epsilon=epsilon, delta=PSGD_DELTA if mechanism.startswith("psgd") else 0.0,
                           noise_factor=factor)


def _run_composite(case, n_runs, confidence, seed):
    common = dict(n_runs=n_runs, confidence=confidence, noise_factor=case["noise_factor"],
                  random_state=seed)
    if case["mechanism"] == "kernel":
        return audit_kernel_estimator(case["epsilon"], **common)
    if case["mechanism"] == "prediction":
        return audit_private_predictor(case["epsilon"], **common)
    if case["mechanism"].startswith("psgd"):
        return audit_multiparty(case["mechanism"], case["epsilon"], case["delta"], **common)
    return audit_multiparty("local_aggregation", case["epsilon"], **common)


def _run(case, n_runs, confidence, seed):
    if case["mechanism"] in COMPOSITE:
        result = _run_composite(case, n_runs, confidence, seed)
    elif case["mechanism"] == "tuning":
        result = audit_exponential_mechanism(case["epsilon"], n_runs=n_runs, confidence=confidence,
                                             noise_factor=case["noise_factor"], random_state=seed)
    else:
        result = audit_mechanism(case["mechanism"], case["epsilon"], case["delta"],
                                 loss=case["loss"], n_runs=n_runs, confidence=confidence,
                                 noise_factor=case["noise_factor"], random_state=seed)
    record = result.to_dict()
    return {**case, **{key: record[key] for key in (
        "eps_lower", "claimed_epsilon", "claimed_delta", "n_runs", "n_eval_runs", "confidence",
        "eps_empirical", "eps_lower_max", "fpr", "fnr", "threshold", "passed", "seconds", "label")}}


def format_table(rows) -> str:
    lines = ["| mechanism | loss | noise | eps | delta | eps_lower | point est. | max provable | "
             "result | seconds |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for row in rows:
        point = "inf" if row["eps_empirical"] is None else f"{row['eps_empirical']:.3f}"
        lines.append(
            f"| {row['mechanism']} | {row['loss'] or '-'} | x{row['noise_factor']:g} | "
            f"{row['epsilon']:g} | {row['delta']:g} | {row['eps_lower']:.3f} | {point} | "
            f"{row['eps_lower_max']:.2f} | {'PASS' if row['passed'] else 'FAIL'} | "
            f"{row['seconds']:.1f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000, help="runs per dataset (default 10000)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--gaussian-deltas", type=float, nargs="+", default=list(GAUSSIAN_DELTAS))
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--under-noised", action="store_true",
                        help="also audit the copies with a quarter of the noise (power)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel workers (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS / "audit.json"))
    args = parser.parse_args(argv)

    cases = list(_cases(args.epsilons, args.gaussian_deltas, args.under_noised))
    cases += list(_composite_cases(args.epsilons, args.under_noised))
    seeds = np.random.SeedSequence(args.seed).spawn(len(cases))
    start = time.perf_counter()
    rows = Parallel(n_jobs=args.jobs)(
        delayed(_run)(case, args.runs, args.confidence, np.random.default_rng(seed))
        for case, seed in zip(cases, seeds)
    )
    total = time.perf_counter() - start
    document = {
        "benchmark": "dperm.audit: empirical lower bounds on epsilon (canary pair n=20, d=1, "
                     "n alpha = 100; exponential mechanism on the worst-case mistake vectors)",
        "dperm_version": dperm.__version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "n_runs_per_dataset": args.runs,
        "confidence": args.confidence,
        "jobs": args.jobs,
        "seed": args.seed,
        "seconds": total,
        "results": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(format_table(rows))
    print(f"\n{len(rows)} audits, N = {args.runs} per dataset, {total:.1f} s; written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
