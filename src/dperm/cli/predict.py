"""``dperm predict``: predict with a model file on a CSV file."""

from __future__ import annotations

import sys

from dperm.cli._common import expect_digest_option, read_rows

__all__ = ["options", "run"]


def options(predict) -> None:
    """Add ``dperm predict``'s options to its parser and set its handler, :func:`run`."""
    predict.add_argument("--model", required=True, metavar="FILE",
                         help="model file written by dperm train or dperm coordinate")
    predict.add_argument("--data", required=True, metavar="FILE",
                         help="CSV file with a header row holding the model's feature columns "
                              "(other columns are ignored)")
    predict.add_argument("--proba", action="store_true",
                         help="add class probabilities (logistic models only)")
    predict.add_argument("--out", default=None, metavar="FILE",
                         help="CSV to write (default: standard output)")
    expect_digest_option(predict)
    predict.set_defaults(func=run)


def run(args) -> int:
    """Run ``dperm predict`` with the parsed ``args``; return the exit status."""
    import csv

    from dperm.model_io import load_model

    model, spec, _ = load_model(args.model, expected_digest=args.expect_digest)
    columns = read_rows(args.data)
    X = spec.transform(columns, source=args.data, warn=False)  # clipping is reported at fit only
    predictions = model.predict(X)
    header = ["prediction"]
    is_regressor = not hasattr(model, "classes_")
    rows = [[f"{p:.10g}" if is_regressor else str(p)] for p in predictions]
    if args.proba:
        if not hasattr(model, "predict_proba"):
            raise ValueError(f"--proba needs a logistic model; {args.model} holds a "
                             f"{type(model).__name__}, which has no probabilities.")
        proba = model.predict_proba(X)
        header += [f"proba_{c}" for c in model.classes_]
        rows = [row + [f"{p:.6g}" for p in prob] for row, prob in zip(rows, proba)]
    out = open(args.out, "w", newline="", encoding="utf-8") if args.out else sys.stdout
    try:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
    finally:
        if args.out:
            out.close()
    return 0
