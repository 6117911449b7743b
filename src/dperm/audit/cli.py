"""The ``dperm audit`` subcommand: parse, call :mod:`dperm.audit`, print.

Wire it into ``dperm.cli.build_parser`` with one line,
``add_audit_subparser(sub)``; the parser's ``func`` default is
:func:`run_audit_command`, which returns the exit code: 0 for PASS, 1 for FAIL
(the audit showed ``eps_lower > epsilon``). Bad arguments raise ValueError,
which ``dperm.cli.main`` turns into exit code 2.

Examples
--------
``dperm audit --estimator logistic --mechanism output --epsilon 1 --runs 2000``
``dperm audit --estimator huber --mechanism gaussian_objective --epsilon 1 --delta 1e-3``
``dperm audit --estimator tuning --epsilon 1 --runs 20000``
``dperm audit --estimator huber --mechanism output --epsilon 1 --noise-factor 0.25``
``dperm audit --mechanism adassp --epsilon 1 --runs 2000`` (least squares; ``--estimator`` unused)
(a copy with a quarter of the noise: should FAIL, which shows the audit has power).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dperm.catalog import LOSSES, build_estimator
from dperm.mechanisms.catalog import MECHANISMS, binary_mechanisms, mechanism_help

#: ``--estimator`` values: a dperm linear classifier by its loss (:data:`dperm.catalog.LOSSES`),
#: or the private selection of parameter tuning.
AUDIT_TARGETS = (*(info.name for info in LOSSES.values() if info.family == "classifier" and info.estimator),
                 "tuning")


def add_audit_subparser(subparsers) -> argparse.ArgumentParser:
    """Add ``audit`` to an ``argparse`` subparsers object and return its parser."""
    parser = subparsers.add_parser(
        "audit",
        help="empirical lower bound on epsilon (privacy audit)",
        description=(
            "Fit the estimator many times on two neighbouring datasets (one record replaced by "
            "a worst-case canary) and turn how well a threshold test tells them apart into a "
            "lower bound on epsilon that holds with the given confidence. FAIL (exit code 1) "
            "means the implementation breaks its claimed epsilon; PASS is not a proof of privacy."
        ),
        epilog=(
            "examples:\n"
            "  dperm audit --estimator logistic --mechanism output --epsilon 1 --runs 2000\n"
            "  dperm audit --estimator huber --mechanism output --epsilon 1 --noise-factor 0.25"
            "   (a quarter of the noise: should FAIL)"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--estimator", choices=AUDIT_TARGETS, default="logistic",
                        help="logistic regression, a linear SVC by loss, or the tuning "
                             "selection (exponential mechanism); default logistic")
    parser.add_argument("--mechanism", choices=binary_mechanisms(), default="objective",
                        help="the mechanism to audit (default objective); " + mechanism_help())
    parser.add_argument("--epsilon", type=float, required=True, help="the claimed epsilon")
    parser.add_argument("--delta", type=float, default=0.0,
                        help="claimed delta (gaussian_objective only; default 0)")
    parser.add_argument("--runs", type=int, default=1000,
                        help="runs per dataset (default 1000; tuning: use 10000+)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="confidence of the lower bound, in (0, 1) (default 0.95)")
    parser.add_argument("--n-samples", type=int, default=20,
                        help="rows of each of the two neighbouring datasets (default 20)")
    parser.add_argument("--n-features", type=int, default=1,
                        help="features of the audit data (default 1: the sharpest audit)")
    parser.add_argument("--alpha", type=float, default=None,
                        help="L2 strength (default 100 / n-samples: strong, nearly tight)")
    parser.add_argument("--data-norm", type=float, default=1.0, help="row norm bound (default 1)")
    parser.add_argument("--smoothing-width", dest="h", type=float, default=0.5,
                        help="huber/smooth_hinge: the width h of the smoothed part of the loss "
                             "(default 0.5)")
    parser.add_argument("--intercept", action="store_true",
                        help="fit an intercept (default off: with --n-features 1 the problem is "
                             "then 1-D, the sharpest audit; the guarantee must hold either way)")
    parser.add_argument("--statistic", choices=("margin", "loss"), default="margin",
                        help="what the threshold test reads from each fitted model: the canary's "
                             "margin or its loss (default margin)")
    parser.add_argument("--candidates", type=int, default=None,
                        help="tuning only: number of candidates (default from epsilon)")
    parser.add_argument("--noise-factor", type=float, default=1.0,
                        help="calibrate the audited copy for epsilon / this: 0.25 audits a "
                             "copy with about a quarter of the noise (power check)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the audit (reproducible)")
    parser.add_argument("--json", default=None, help="also write the result to this JSON file")
    parser.set_defaults(func=run_audit_command)
    return parser


def _estimator(args):
    return build_estimator(args.estimator, epsilon=args.epsilon, delta=args.delta,
                           mechanism=args.mechanism, data_norm=args.data_norm,
                           fit_intercept=args.intercept, h=args.h)


def run_audit_command(args) -> int:
    """Run the audit described by parsed ``args``; print the summary; 0 = PASS, 1 = FAIL."""
    from dperm.audit import audit_estimator, audit_exponential_mechanism, audit_sufficient_statistics

    row = MECHANISMS[args.mechanism]
    if row.losses == ("squared",):  # AdaSSP, least squares only: its own canary pair
        gaussian = row.uses_delta
        if gaussian and not args.delta:
            raise ValueError("--mechanism gaussian_adassp is (epsilon, delta)-DP; give --delta.")
        result = audit_sufficient_statistics(
            args.epsilon, args.delta if gaussian else 0.0, n_samples=max(args.n_samples, 3),
            n_runs=args.runs, confidence=args.confidence, noise_factor=args.noise_factor,
            random_state=args.seed,
        )
    elif args.estimator == "tuning":
        if args.delta:
            raise ValueError("--estimator tuning is pure epsilon-DP; leave --delta at 0.")
        result = audit_exponential_mechanism(
            args.epsilon, n_candidates=args.candidates, n_runs=args.runs,
            confidence=args.confidence, noise_factor=args.noise_factor, random_state=args.seed,
        )
    else:
        result = audit_estimator(
            _estimator(args), n_runs=args.runs, n_samples=args.n_samples,
            n_features=args.n_features, alpha="strong" if args.alpha is None else args.alpha,
            statistic=args.statistic, confidence=args.confidence,
            noise_factor=args.noise_factor, random_state=args.seed,
        )
    print(result.summary())
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
        print(f"result written to {args.json}")
    return 0 if result.passed else 1


__all__ = ["AUDIT_TARGETS", "add_audit_subparser", "run_audit_command"]
