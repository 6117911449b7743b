"""``dperm report``: a Markdown model card from a model file and its evaluation records."""

from __future__ import annotations

import sys

from dperm.cli._common import expect_digest_option

__all__ = ["options", "run"]


def options(report) -> None:
    """Add ``dperm report``'s options to its parser and set its handler, :func:`run`."""
    report.add_argument("--model", required=True, help="the model file (from dperm train)")
    report.add_argument("--evaluation", action="append", default=[], metavar="FILE",
                        help="an evaluation record from dperm evaluate --out (repeatable)")
    report.add_argument("--out", help="write the Markdown model card here (default: print it)")
    expect_digest_option(report)
    report.set_defaults(func=run)


def run(args) -> int:
    """Run ``dperm report`` with the parsed ``args``; return the exit status."""
    from dperm.model_io import load_model
    from dperm.report import load_evaluation, model_card

    model, _, document = load_model(args.model, expected_digest=args.expect_digest)
    evaluations = [load_evaluation(path) for path in args.evaluation]
    card = model_card(document, model.privacy_.summary(), evaluations)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(card)
        print(f"model card written to {args.out}")
    else:
        sys.stdout.write(card)
    return 0
