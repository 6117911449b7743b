"""Command-line tool ``dperm``: parse, call the library, print.

Subcommands
-----------
demo      The main job: privacy vs accuracy on the embedded Adult data.
train     Fit a private model on a CSV file and write a JSON model file.
predict   Predict with a model file on a CSV file.
show      Print a model file's privacy guarantee.
reproduce Reproduce a paper's experiments (chaudhuri2011, rajkumar2012).
audit     Empirically audit a mechanism: a statistical lower bound on epsilon.
experiment learning-rates: excess risk against m under the theory's parameter choice.
party     party keygen / party serve: one party's key pair; its shard as a Flower SuperNode (multiparty PSGD, SecAgg+).
coordinate Multiparty private SGD (004) over Flower SecAgg+: SuperLink + ServerApp.
"""

from __future__ import annotations

import argparse
import csv
import sys
import warnings
from pathlib import Path

import numpy as np

from dperm.exceptions import CertificateError
from dperm.mechanisms.registry import MECHANISMS

MODELS = ("logistic", "huber", "smooth_hinge", "hinge")


def _demo(args) -> int:
    print("dperm demo: loading the Adult data ...", flush=True)  # before the slow imports
    from dperm.datasets import load_adult
    from dperm.experiments.demo import format_table, run_demo, save_results

    adult = load_adult(encoding=args.encoding, data_home=args.data_home)
    X_train, y_train = adult.X_train, adult.y_train
    if args.subset:
        rng = np.random.default_rng(args.seed)
        keep = rng.choice(X_train.shape[0], size=min(args.subset, X_train.shape[0]), replace=False)
        X_train, y_train = X_train[keep], y_train[keep]
    print(f"dperm demo: Adult ({adult.encoding} encoding), {X_train.shape[0]} training rows, "
          f"{adult.X_test.shape[0]} test rows, d = {X_train.shape[1]}", flush=True)
    results = run_demo((X_train, y_train, adult.X_test, adult.y_test), epsilons=args.epsilons,
                       repeats=args.repeats, seed=args.seed, n_jobs=args.jobs,
                       reference_repeats=args.reference_repeats)
    results["encoding"] = adult.encoding
    print(format_table(results))
    paths = save_results(results, args.out)
    print(f"results: {paths['json']}")
    if paths["png"] is None:
        print("plot skipped: install matplotlib (pip install 'dperm[plot]') for the PNG")
    else:
        print(f"plot:    {paths['png']}")
    print(f"finished in {results['seconds']:.1f} s")
    return 0


def _make_model(args):
    from dperm.linear_model import PrivateLinearSVC, PrivateLogisticRegression

    common = dict(epsilon=args.epsilon, delta=args.delta, alpha=args.alpha,
                  mechanism=args.mechanism, data_norm=args.data_norm,
                  fit_intercept=not args.no_intercept, random_state=args.random_state,
                  classes=args.classes)
    if args.model == "logistic":
        return PrivateLogisticRegression(**common)
    return PrivateLinearSVC(loss=args.model, h=args.h, **common)


def _parse_classes(text):
    """``--classes a,b,c`` as the sorted list of labels, checked; None without the option.

    The target column is read as text (stripped cells), so the labels stay
    strings, stripped the same way.
    """
    if text is None:
        return None
    from dperm.privacy.labels import check_classes

    labels = [label.strip() for label in text.split(",")]
    if "" in labels:
        raise ValueError(f"--classes {text!r} has an empty label; list the labels separated by "
                         "commas, e.g. --classes no,yes.")
    return check_classes(labels, name="--classes").tolist()


def _check_labels(y, classes, args):
    """Every target value lies in ``--classes`` (before anything is fitted or spent)."""
    if classes is None:
        return
    from dperm.privacy.labels import resolve_label_set

    try:
        resolve_label_set(np.asarray(classes), y, name="--classes")
    except ValueError as error:
        raise ValueError(f"target column {args.target!r} of {args.data}: {error}") from None


def _train_dask(args) -> int:
    """``dperm train --engine dask``: a lazy Parquet/CSV table, fitted on a Dask cluster."""
    from dperm.model_io import save_model
    from dperm.scale import dask_scheduler
    from dperm.scale import lazy_design
    from dperm.tabular import read_bounds_file

    bounds = read_bounds_file(args.bounds) if args.bounds else None
    with dask_scheduler(args.scheduler) as runner:  # one cluster for the check pass and the fit
        scheduler = runner.client if runner.client is not None else runner.scheduler
        X, y, spec = lazy_design(args.data, args.target, features=args.features,
                                 categorical=args.categorical, public_bounds=bounds,
                                 row_norm_mode=args.row_norm, data_norm=args.data_norm,
                                 scheduler=scheduler)
        model = _make_model(args).set_params(scheduler=scheduler).fit(X, y)
    save_model(args.out, model, spec, args.target, [])
    print(f"trained on {model.privacy_.n_samples} rows (every row of the files; none is dropped), "
          f"{spec.n_features} features; classes {model.classes_.tolist()}")
    print(model.privacy_.summary())
    print(f"model written to {args.out}")
    return 0


def _train(args) -> int:
    from dperm.model_io import save_model
    from dperm.tabular import build_spec, parse_labels, read_bounds_file, read_csv_columns

    args.classes = _parse_classes(args.classes)
    if args.engine == "dask":
        return _train_dask(args)

    columns = read_csv_columns(args.data)
    if args.target not in columns:
        raise ValueError(f"target column {args.target!r} is not in {args.data}; columns are {list(columns)}.")
    features = args.features or [name for name in columns if name != args.target]
    missing_categorical = sorted(set(args.categorical) - set(features))
    if missing_categorical:
        raise ValueError(f"--categorical names columns that are not features: {missing_categorical}.")
    bounds = read_bounds_file(args.bounds) if args.bounds else None
    spec, from_data = build_spec(columns, features, categorical=args.categorical,
                                 public_bounds=bounds, row_norm_mode=args.row_norm,
                                 data_norm=args.data_norm)
    X = spec.transform(columns, source=args.data)  # one row per row of the file: n is public
    y = parse_labels(columns[args.target], args.target, source=args.data)
    _check_labels(y, args.classes, args)
    model = _make_model(args).fit(X, y)
    save_model(args.out, model, spec, args.target, from_data)
    print(f"trained on {X.shape[0]} rows (every row of the file; none is dropped), "
          f"{X.shape[1]} features; classes {model.classes_.tolist()}")
    print(model.privacy_.summary())
    if from_data:
        print(f"WARNING: bounds/categories of {from_data} came from the data and are NOT covered.")
    print(f"model written to {args.out}")
    return 0


def _predict(args) -> int:
    from dperm.model_io import load_model
    from dperm.tabular import read_csv_columns

    model, spec, _ = load_model(args.model)
    columns = read_csv_columns(args.data)
    X = spec.transform(columns, source=args.data)
    predictions = model.predict(X)
    header = ["prediction"]
    rows = [[str(p)] for p in predictions]
    if args.proba:
        if not hasattr(model, "predict_proba"):
            raise ValueError("--proba needs a logistic model; this model has no probabilities.")
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


def _show(args) -> int:
    from dperm.model_io import describe_model, load_model

    model, spec, document = load_model(args.model)  # a single-party or a multiparty model file
    print(describe_model(document, spec))
    print(model.privacy_.summary())
    if document.get("schema_from_data"):
        print(f"WARNING: bounds/categories of {document['schema_from_data']} came from the data.")
    return 0


def _reproduce(args) -> int:
    from dperm.experiments import chaudhuri2011

    if args.paper == "rajkumar2012":
        from dperm.experiments import rajkumar2012

        return rajkumar2012.main_from_args(args)
    everything = not (args.table1 or args.table2 or args.figures is not None)
    # --figures alone means every figure; --figures 4-5 only the learning curves
    figures = chaudhuri2011.FIGURES if everything or args.figures == [] else tuple(args.figures or ())
    results = chaudhuri2011.run(
        args.out, table1=args.table1 or everything, table2=args.table2 or everything,
        figures=figures, runs=50 if args.runs is None else args.runs, folds=args.folds,
        figure_runs=args.figure_runs, curve_runs=args.curve_runs, permutations=args.permutations,
        encodings=args.encodings, subsets=args.subsets, data_home=args.data_home, seed=args.seed,
        n_jobs=args.jobs)
    print(f"report: {Path(args.out) / 'report.md'} ({results['seconds']:.0f} s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dperm", description="Differentially private ERM.")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="privacy vs accuracy on the embedded Adult data")
    demo.add_argument("--epsilons", type=float, nargs="+", default=[0.01, 0.05, 0.1, 0.5, 1.0])
    demo.add_argument("--repeats", type=int, default=5, help="noise draws per cell (default 5)")
    demo.add_argument("--reference-repeats", type=int, default=2,
                      help="noise draws per (cell, alpha) of the test-tuned, not private, reference "
                           "(default 2; 0 skips it)")
    demo.add_argument("--subset", type=int, default=0, help="use this many training rows (smoke runs)")
    demo.add_argument("--encoding", default="unit_norm", help="load_adult encoding (default unit_norm)")
    demo.add_argument("--data-home", default=None, help="directory with adult/ (default: embedded copy)")
    demo.add_argument("--jobs", type=int, default=2, help="parallel workers (default 2)")
    demo.add_argument("--seed", type=int, default=0, help="base seed of the noise (reproducible runs)")
    demo.add_argument("--out", default="dperm-demo", help="output directory (default dperm-demo)")
    demo.set_defaults(func=_demo)

    reproduce = sub.add_parser("reproduce", help="reproduce a paper's experiments")
    reproduce.add_argument("paper", choices=("chaudhuri2011", "rajkumar2012"))
    reproduce.add_argument("--table1", action="store_true", help="Table 1 (Adult)")
    reproduce.add_argument("--table2", action="store_true", help="Table 2 (KDDCup99)")
    reproduce.add_argument("--figures", nargs="*", choices=("2", "3", "4-5"), default=None,
                           help="chaudhuri2011 figures: alone, Figs. 2-5; or a list, e.g. "
                                "'--figures 4-5' for the learning curves without the tables")
    reproduce.add_argument("--runs", type=int, default=None,
                           help="noise draws per fold and cell (chaudhuri2011: 50; rajkumar2012: 5)")
    reproduce.add_argument("--folds", type=int, default=10, help="cross-validation folds (10)")
    reproduce.add_argument("--figure-runs", type=int, default=10, help="draws per fold in Figs. 2-3")
    reproduce.add_argument("--curve-runs", type=int, default=5, help="runs per point in Figs. 4-5")
    reproduce.add_argument("--permutations", type=int, default=3, help="permutations in Figs. 4-5")
    reproduce.add_argument("--encodings", nargs="+", default=["constant", "unit_norm"],
                           help="row encodings to run (constant = the paper's; unit_norm = dperm's)")
    reproduce.add_argument("--subsets", nargs="+", choices=("random", "stratified"),
                           default=["random", "stratified"],
                           help="chaudhuri2011 Table 2: which 70,000-row KDD subsets (default both)")
    reproduce.add_argument("--data-home", default=None, help="directory with adult/ and kddcup99/")
    reproduce.add_argument("--jobs", type=int, default=2)
    reproduce.add_argument("--seed", type=int, default=0)
    reproduce.add_argument("--out", default="dperm-reproduce", help="output directory")
    from dperm.experiments.rajkumar2012 import add_reproduce_arguments

    add_reproduce_arguments(reproduce)
    reproduce.set_defaults(func=_reproduce)

    train = sub.add_parser("train", help="fit a private model on a CSV file")
    train.add_argument("--data", required=True,
                       help="CSV file with a header row (--engine dask: Parquet/CSV file or directory)")
    train.add_argument("--target", required=True, help="label column")
    train.add_argument("--features", nargs="+", default=None, help="feature columns (default: all others)")
    train.add_argument("--categorical", nargs="+", default=[], help="columns to one-hot encode")
    train.add_argument("--bounds", default=None,
                       help="JSON file of PUBLIC bounds: column -> [lower, upper] or [categories];"
                            " {\"lower\": .., \"upper\": .., \"fill\": ..} gives a numeric column a"
                            " public value for missing cells (else a missing cell is an error)")
    train.add_argument("--classes", default=None, metavar="A,B,...",
                       help="the PUBLIC label set, comma-separated (e.g. no,yes): it sets the "
                            "classes and the one-vs-rest split of epsilon; a label outside it is "
                            "an error. Without it the labels are read from the data, which the "
                            "guarantee does not cover (warned)")
    train.add_argument("--model", choices=MODELS, default="logistic")
    train.add_argument("--h", type=float, default=0.5, help="width of huber/smooth_hinge")
    train.add_argument("--epsilon", type=float, required=True)
    train.add_argument("--delta", type=float, default=0.0)
    train.add_argument("--mechanism", choices=tuple(MECHANISMS), default="objective",
                       help="; ".join(f"{m.name}: {m.summary}" for m in MECHANISMS.values()))
    train.add_argument("--alpha", type=float, default=0.01, help="L2 strength (default 0.01)")
    train.add_argument("--data-norm", type=float, default=1.0, help="row norm bound (default 1)")
    train.add_argument("--row-norm", choices=("clip", "scale", "constant"), default="scale",
                       help="per-record row step (default scale: every row to norm data-norm)")
    train.add_argument("--no-intercept", action="store_true")
    train.add_argument("--random-state", type=int, default=None, help="seed: for testing only")
    train.add_argument("--out", required=True, help="model file to write (JSON)")
    train.add_argument("--engine", choices=("memory", "dask"), default="memory",
                       help="dask: read --data (a Parquet/CSV file or directory) lazily and fit "
                            "on a Dask cluster without loading it (needs dperm[dask] and a "
                            "--bounds entry for every feature)")
    train.add_argument("--scheduler", default=None,
                       help="with --engine dask: scheduler address tcp://host:port, or "
                            "threads/synchronous (default: a LocalCluster on 127.0.0.1)")
    train.set_defaults(func=_train)

    predict = sub.add_parser("predict", help="predict with a model file")
    predict.add_argument("--model", required=True)
    predict.add_argument("--data", required=True)
    predict.add_argument("--proba", action="store_true", help="add class probabilities (logistic)")
    predict.add_argument("--out", default=None, help="CSV to write (default: standard output)")
    predict.set_defaults(func=_predict)

    from dperm.audit.cli import add_audit_subparser
    from dperm.experiments.learning_rates import add_learning_rates_subparser

    add_audit_subparser(sub)
    from dperm.multiparty.flower.cli import add_commands as add_multiparty_commands

    add_multiparty_commands(sub)
    experiment = sub.add_parser("experiment", help="run an experiment (learning-rates)")
    add_learning_rates_subparser(experiment.add_subparsers(dest="experiment", required=True))

    show = sub.add_parser("show", help="print a model file's privacy guarantee")
    show.add_argument("--model", required=True)
    show.set_defaults(func=_show)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            return args.func(args)
    except (ValueError, FileNotFoundError, IsADirectoryError, CertificateError) as error:
        print(f"dperm: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
