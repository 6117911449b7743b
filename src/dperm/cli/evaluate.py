"""``dperm evaluate``: score a model file on private held-out rows, released with noise."""

from __future__ import annotations

import argparse

from dperm.cli._common import expect_digest_option, read_rows

__all__ = ["CLASSIFIER_METRICS", "REGRESSOR_METRICS", "options", "run"]


CLASSIFIER_METRICS = ("accuracy", "confusion_matrix")


#: --metric -> the dperm.metrics function.
REGRESSOR_METRICS = {"r2": "r2_score", "mse": "mean_squared_error", "rmse": "root_mean_squared_error"}


def _bounds_pair(text: str):
    try:
        lower, upper = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOWER,UPPER (two numbers), got {text!r}") from None
    return lower, upper


def options(evaluate) -> None:
    """Add ``dperm evaluate``'s options to its parser and set its handler, :func:`run`."""
    evaluate.add_argument("--model", required=True, help="the model file (from dperm train)")
    evaluate.add_argument("--data", required=True,
                          help="CSV file of private held-out rows, with the model's target column")
    evaluate.add_argument("--epsilon", type=float, required=True, help="the score's privacy budget")
    evaluate.add_argument("--metric", choices=[*CLASSIFIER_METRICS, *REGRESSOR_METRICS],
                          help="accuracy (a classifier's default), confusion_matrix, r2 (a regressor's "
                               "default), mse or rmse")
    evaluate.add_argument("--y-bounds", type=_bounds_pair, metavar="LOWER,UPPER",
                          help="a regressor's public target range")
    evaluate.add_argument("--out", help="write the evaluation's privacy record (JSON) here")
    expect_digest_option(evaluate)
    evaluate.set_defaults(func=run)


def run(args) -> int:
    """Run ``dperm evaluate`` with the parsed ``args``; return the exit status."""
    from dperm import metrics
    from dperm.model_io import load_model
    from dperm.tabular import TableCellError, finite_numbers, parse_labels

    model, spec, document = load_model(args.model, expected_digest=args.expect_digest)
    columns = read_rows(args.data)
    target = document["target"]
    if target not in columns:
        raise ValueError(f"target column {target!r} (the model's) is not in {args.data}; columns are "
                         f"{list(columns)}.")
    is_classifier = hasattr(model, "classes_")
    metric = args.metric or ("accuracy" if is_classifier else "r2")
    if (metric in CLASSIFIER_METRICS) != is_classifier:
        raise ValueError(f"--metric {metric} does not fit a {type(model).__name__}; use one of "
                         f"{CLASSIFIER_METRICS if is_classifier else REGRESSOR_METRICS}.")
    if not is_classifier and args.y_bounds is None:
        raise ValueError("--y-bounds LOWER,UPPER is required for a regressor: the public range of "
                         f"{target!r} (values outside it are clipped before scoring).")
    try:
        y = (parse_labels(columns[target], target, source=args.data) if is_classifier else
             finite_numbers(columns[target], target, source=args.data,
                            remedy="a regressor's target holds finite numbers only; fix the cell"))
    except TableCellError as error:
        raise error.on_lines(columns) from None
    predictions = model.predict(spec.transform(columns, source=args.data, warn=False))
    if is_classifier:
        y = y.astype(model.classes_.dtype) if model.classes_.dtype.kind in "iuf" else y
        score = (metrics.confusion_matrix(y, predictions, labels=model.classes_, epsilon=args.epsilon)
                 if metric == "confusion_matrix" else metrics.accuracy_score(y, predictions, epsilon=args.epsilon))
    else:
        score = getattr(metrics, REGRESSOR_METRICS[metric])(y, predictions, y_bounds=args.y_bounds,
                                                             epsilon=args.epsilon)
    print(score.privacy_.summary())
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(score.privacy_.to_json())
        print(f"evaluation record written to {args.out}; attach it with dperm report --evaluation")
    return 0
