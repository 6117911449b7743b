"""Command-line tool ``dperm``: parse, call the library, print.

Subcommands
-----------
demo       The main job: privacy vs accuracy on the embedded Adult data.
train      Fit a private model (classifier, regressor or kernel model) on a CSV file.
predict    Predict with a model file on a CSV file.
show       Print a model file's privacy guarantee.
reproduce  Reproduce a paper's experiments (chaudhuri2011, rajkumar2012).
audit      Empirically audit a mechanism: a statistical lower bound on epsilon.
experiment learning-rates: excess risk against m under the theory's parameter choice.
party      party keygen / party serve: one party of a multiparty training (Flower SuperNode).
coordinate Multiparty private training over Flower SecAgg+: SuperLink + ServerApp.

Imports are lazy: this module imports only the standard library, and a
subcommand's options are built only when that subcommand is run, so ``dperm
--help`` starts at once. The option builders read only import-free tables
(:mod:`dperm.mechanisms.catalog`, :mod:`dperm.catalog`, :mod:`dperm.experiments.options`,
:mod:`dperm.multiparty.defaults`), so every ``dperm COMMAND --help`` does too
(a test checks). The handlers import numpy, scikit-learn and dperm's
subpackages when they run.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Callable

__all__ = ["ADULT_ENCODING_NAMES", "Command", "EXIT_BROKEN_PIPE", "build_parser", "main"]


@cache
def _models() -> dict[str, tuple[str, str]]:
    """``train --model`` values and what each fits: (estimator family, loss), from :data:`dperm.catalog.LOSSES`.

    Read on first need: ``import dperm.cli`` and ``dperm --help`` import no other dperm module.
    """
    from dperm.catalog import cli_models

    return cli_models()


def _loss_params(loss: str) -> tuple[str, ...]:
    """The parameters the loss ``loss`` declares (``h``, ``quantile``, ``y_bound``)."""
    from dperm.catalog import LOSSES

    return LOSSES[loss].params

#: ``demo --encoding`` values (the keys of ``dperm.datasets.ADULT_ENCODINGS``; a test checks).
ADULT_ENCODING_NAMES = ("unit_norm", "constant", "unit_norm_log")



class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's line breaks and appends the default to an option's help."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.option_strings and "default" not in text and action.default not in
                (None, False, argparse.SUPPRESS) and not isinstance(action.default, list)):
            text += " (default: %(default)s)"
        return text


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dperm")
    except PackageNotFoundError:  # running from a source tree that is not installed
        import dperm

        return dperm.__version__


# ======================================================================================
# Handlers (heavy imports inside)
# ======================================================================================


def _demo(args) -> int:
    print("dperm demo: loading the Adult data ...", flush=True)  # before the slow imports
    import numpy as np

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


def _check_model_options(args) -> None:
    """Refuse option combinations the chosen ``--model`` cannot use, before any data is read."""
    family, loss = _models()[args.model]
    from dperm.mechanisms.catalog import check_min_epsilon

    if args.epsilon > 0:  # epsilon <= 0 is refused by the estimator's parameter constraints
        check_min_epsilon(args.epsilon, "--epsilon")  # the library's limit of the noise
    if family == "regressor":
        least_squares = args.model == "least_squares"
        allowed = (None, "auto", "output") + (_least_squares_mechanisms() if least_squares else ())
        if args.mechanism not in allowed:
            raise ValueError(
                f"--model {args.model} is fitted by output perturbation only (Nie & Wang 2017, "
                f"Thm 2); drop --mechanism {args.mechanism}." if not least_squares else
                f"--model least_squares is fitted by {', '.join(allowed[1:])}; drop --mechanism "
                f"{args.mechanism}.")
        if args.delta and not least_squares:
            raise ValueError(f"--model {args.model} is pure epsilon-DP; leave --delta at 0.")
        if args.classes is not None:
            raise ValueError(f"--model {args.model} is a regressor; --classes is for classifiers.")
        if args.y_bound is not None and args.y_bounds is not None:
            raise ValueError("give --y-bounds LOWER UPPER or its symmetric shorthand --y-bound M, "
                             "not both.")
        if least_squares and args.y_bound is None and args.y_bounds is None \
                and _bounds_file_target(args) is None:
            raise ValueError(
                "--model least_squares needs PUBLIC bounds on the target: --y-bounds LOWER UPPER "
                "(or --y-bound M for [-M, M], or a --bounds entry for the target column); targets "
                "beyond them are clipped to them and predictions lie within them. Choose them "
                "without looking at the data, e.g. from the target's documented range.")
    elif args.y_bound is not None or args.y_bounds is not None:
        raise ValueError("--y-bound and --y-bounds are for the regressors (least_squares, "
                         "quantile) only.")
    if "quantile" not in _loss_params(loss) and args.quantile is not None:
        raise ValueError(f"--quantile is for --model {_models_with('quantile')} only.")
    if family != "kernel" and (args.gamma is not None or args.n_components is not None):
        raise ValueError("--gamma and --n-components are for the kernel_* models only.")


def _models_with(param: str) -> str:
    """The ``--model`` values whose loss takes ``param`` (for error messages)."""
    return " / ".join(model for model, (_, loss) in _models().items() if param in _loss_params(loss))


def _least_squares_mechanisms() -> tuple[str, ...]:
    """``--mechanism`` values of ``--model least_squares`` besides auto and output: the rows of
    :data:`~dperm.mechanisms.catalog.MECHANISMS` declared for the squared loss only (AdaSSP)."""
    from dperm.mechanisms.catalog import MECHANISMS

    return tuple(m.name for m in MECHANISMS.values() if m.losses == ("squared",))


def _bounds_file_target(args):
    """``(lower, upper)`` of the target column in ``--bounds``, if the file gives two numbers."""
    if not args.bounds:
        return None
    from dperm.tabular import read_bounds_file

    entry = read_bounds_file(args.bounds).get(args.target)
    if (isinstance(entry, list) and len(entry) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in entry)):
        return float(entry[0]), float(entry[1])
    return None



def _model_help() -> str:
    """The ``--model`` help: the values by family, as :func:`_models` lists them."""
    def listed(family):
        return ", ".join(model + (" (needs --y-bounds)" if "y_bound" in _loss_params(loss) else "")
                         for model, (kind, loss) in _models().items() if kind == family)

    return (f"classifiers: {listed('classifier')}; regressors: {listed('regressor')}; kernel "
            f"classifiers by random Fourier features: {listed('kernel')}")


def _make_model(args):
    """The estimator ``--model`` names (:func:`dperm.catalog.build_estimator`), with the options given."""
    from dperm.catalog import build_estimator

    family, loss = _models()[args.model]
    # The classifiers' recipe fits no intercept (benchmarks/cli_recipe.py: it costs norm budget
    # and measured worse once the public ranges are centred); --fit-intercept asks for one. The
    # regressors fit one unless told not to (AdaSSP's is unpenalised; the quantile regressor's is
    # shrunk toward the centre of its target bounds, not toward 0, on the [-1, 1] scale the
    # bounds map its target onto, as the estimator does).
    intercept = args.fit_intercept if args.fit_intercept is not None else family == "regressor"
    y_bounds = None
    if family == "regressor":
        y_bounds = args.y_bounds or (None if args.y_bound is not None else _bounds_file_target(args))
    return build_estimator(
        loss, kernel=family == "kernel", epsilon=args.epsilon, alpha=args.alpha,
        random_state=args.random_state, fit_intercept=bool(intercept),
        data_norm=args.data_norm, delta=args.delta, mechanism=args.mechanism or "auto",
        classes=args.classes, h=args.h, y_bound=args.y_bound,
        y_bounds=None if y_bounds is None else tuple(y_bounds),
        quantile=0.5 if args.quantile is None else args.quantile,
        gamma=1.0 if args.gamma is None else args.gamma,
        n_components=100 if args.n_components is None else args.n_components)


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
    import numpy as np

    from dperm.privacy.labels import resolve_label_set

    try:
        resolve_label_set(np.asarray(classes), y, name="--classes")
    except ValueError as error:
        raise ValueError(f"target column {args.target!r} of {args.data}: {error}") from None


def _check_strict(args, from_data) -> None:
    """``--strict``: every schema item (bounds, categories, label set) must be given by the user."""
    if not args.strict:
        return
    problems = []
    if from_data:
        problems.append(f"bounds/categories of {from_data} would be read from the data (give "
                        "them in the --bounds file)")
    if _models()[args.model][0] != "regressor" and args.classes is None:
        problems.append("the label set would be read from the data (give --classes)")
    if problems:
        raise ValueError(f"--strict: {'; and '.join(problems)}.")


def _train_dask(args) -> int:
    """``dperm train --engine dask``: a lazy Parquet/CSV table, fitted on a Dask cluster."""
    from dperm.model_io import save_model
    from dperm.scale import dask_scheduler, lazy_design
    from dperm.tabular import read_bounds_file

    if _models()[args.model][0] != "classifier":
        raise ValueError(f"--engine dask fits the linear classifiers only; --model {args.model} "
                         "needs --engine memory.")
    _check_strict(args, [])  # the Dask reader itself refuses features without public bounds
    bounds = read_bounds_file(args.bounds) if args.bounds else None
    with dask_scheduler(args.scheduler) as runner:  # one cluster for the check pass and the fit
        scheduler = runner.client if runner.client is not None else runner.scheduler
        X, y, spec = lazy_design(args.data, args.target, features=args.features,
                                 categorical=args.categorical, public_bounds=bounds,
                                 row_norm_mode=args.row_norm, data_norm=args.data_norm,
                                 scheduler=scheduler, numeric_range=args.feature_range)
        model = _make_model(args).set_params(scheduler=scheduler).fit(X, y)
    digest = save_model(args.out, model, spec, args.target, [])
    print(f"trained on {model.privacy_.n_samples} rows (every row of the files; none is dropped), "
          f"{spec.n_features} features; classes {model.classes_.tolist()}")
    print(model.privacy_.summary())
    _print_written(args.out, digest)
    return 0


def _print_written(path, digest) -> None:
    """Where the model went and its digest, which the publisher prints beside it."""
    print(f"model written to {path}")
    print(f"model digest: {digest}")
    print("  publish this digest beside the model; a reader checks the file with "
          f"dperm show --model FILE --expect-digest {digest}")


def _read_rows(path):
    """The CSV file's columns; a file with a header and no data row is refused by name."""
    from dperm.tabular import read_csv_columns

    columns = read_csv_columns(path)
    if not columns.line_numbers:
        raise ValueError(f"no data rows in {path}: the file has a header but no rows; add the "
                         "rows below the header.")
    return columns


def _read_table(args):
    """``(columns, spec, from_data)`` for ``--data``: the raw columns and the public schema."""
    from dperm.tabular import build_spec, read_bounds_file

    columns = _read_rows(args.data)
    if args.target not in columns:
        raise ValueError(f"target column {args.target!r} is not in {args.data}; columns are "
                         f"{list(columns)}.")
    features = args.features or [name for name in columns if name != args.target]
    missing_categorical = sorted(set(args.categorical) - set(features))
    if missing_categorical:
        raise ValueError(f"--categorical names columns that are not features: {missing_categorical}.")
    bounds = read_bounds_file(args.bounds) if args.bounds else None
    if bounds is not None and _models()[args.model][0] == "regressor":
        bounds.pop(args.target, None)  # the target's public bounds: y_bounds (_bounds_file_target)
    if args.strict:  # nothing may be read from the data: check before build_spec reads it
        unbounded = [name for name in features if name not in (bounds or {})]
        _check_strict(args, unbounded)
    spec, from_data = build_spec(columns, features, categorical=args.categorical,
                                 public_bounds=bounds, row_norm_mode=args.row_norm,
                                 data_norm=args.data_norm, numeric_range=args.feature_range,
                                 source=args.data)
    return columns, spec, from_data


def _targets(columns, args):
    """The target column: labels for a classifier, finite numbers for a regressor."""
    from dperm.tabular import TableCellError, finite_numbers, parse_labels

    try:
        if _models()[args.model][0] == "regressor":
            return finite_numbers(columns[args.target], args.target, source=args.data,
                                  remedy="a regressor's target holds finite numbers only; fix "
                                         "the cell (dperm never drops a row, since n is public)")
        return parse_labels(columns[args.target], args.target, source=args.data)
    except TableCellError as error:
        raise error.on_lines(columns) from None


def _train(args) -> int:
    args.classes = _parse_classes(args.classes)
    _check_model_options(args)
    if args.engine == "dask":
        return _train_dask(args)
    from dperm.model_io import save_model

    columns, spec, from_data = _read_table(args)
    X = spec.transform(columns, source=args.data)  # one row per row of the file: n is public
    y = _targets(columns, args)
    _check_labels(y, args.classes, args)
    model = _make_model(args).fit(X, y)
    digest = save_model(args.out, model, spec, args.target, from_data)
    what = (f"classes {model.classes_.tolist()}" if hasattr(model, "classes_")
            else f"numeric target {args.target!r}")
    print(f"trained on {X.shape[0]} rows (every row of the file; none is dropped), "
          f"{X.shape[1]} features; {what} ({type(model).__name__})")
    print(model.privacy_.summary())
    if from_data:
        print(f"WARNING: bounds/categories of {from_data} came from the data and are NOT covered.")
    _print_written(args.out, digest)
    return 0


def _predict(args) -> int:
    import csv

    from dperm.model_io import load_model

    model, spec, _ = load_model(args.model, expected_digest=args.expect_digest)
    columns = _read_rows(args.data)
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


def _show(args) -> int:
    from dperm.model_io import describe_model, load_model

    # a single-party or a multiparty model file; its calibration and digest are checked on load
    model, spec, document = load_model(args.model, expected_digest=args.expect_digest)
    print(describe_model(document, spec))
    if hasattr(model, "fit_intercept"):  # a multiparty file's description says "no intercept"
        print(_intercept_line(model))
    print(model.privacy_.summary())
    if document.get("schema_from_data"):
        print(f"WARNING: bounds/categories of {document['schema_from_data']} came from the data.")
    digest = document.get("digest")
    if digest is None:
        print("Digest: none (the file carries no digest, so nothing shows it is the file its "
              "publisher wrote).")
    else:
        check = ("matches --expect-digest" if args.expect_digest
                 else "compare it with the digest the publisher printed")
        print(f"Digest: {digest} ({check}).")
    return 0


def _evaluate(args) -> int:

    from dperm import metrics
    from dperm.model_io import load_model
    from dperm.tabular import TableCellError, finite_numbers, parse_labels

    model, spec, document = load_model(args.model, expected_digest=args.expect_digest)
    columns = _read_rows(args.data)
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


def _report(args) -> int:
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


def _intercept_line(model) -> str:
    """Whether ``model`` has an intercept: a public parameter of the fit, never its value."""
    if model.fit_intercept:
        return ("Intercept: fitted (fit_intercept=True); it is released with the coefficients, "
                "under the same guarantee.")
    return ("Intercept: none (fit_intercept=False; dperm train's default): predictions use "
            "w.x alone.")


def _reproduce(args) -> int:
    from pathlib import Path

    from dperm.experiments import chaudhuri2011

    if args.paper == "rajkumar2012":
        from dperm.experiments import rajkumar2012

        if args.datasets is None:
            args.datasets = rajkumar2012.N_DATASETS
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


# ======================================================================================
# Options of each subcommand (built only for the subcommand that runs)
# ======================================================================================


def _demo_options(demo) -> None:
    demo.add_argument("--epsilons", type=float, nargs="+", default=[0.01, 0.05, 0.1, 0.5, 1.0],
                      metavar="EPS", help="privacy budgets to run (default 0.01 0.05 0.1 0.5 1)")
    demo.add_argument("--repeats", type=int, default=5, help="noise draws per cell")
    demo.add_argument("--reference-repeats", type=int, default=2,
                      help="noise draws per (cell, alpha) of the test-tuned, not private, "
                           "reference; 0 skips it")
    demo.add_argument("--subset", type=int, default=0,
                      help="use this many training rows, drawn at random (0: all; for smoke runs)")
    demo.add_argument("--encoding", default="unit_norm", choices=ADULT_ENCODING_NAMES,
                      help="how Adult's rows are encoded: unit_norm scales every row to norm 1, "
                           "constant divides by the worst-case norm (the paper's), unit_norm_log "
                           "also takes log1p of the skewed numeric columns")
    demo.add_argument("--data-home", default=None,
                      help="directory with adult/ (default: the embedded copy)")
    demo.add_argument("--jobs", type=int, default=2, help="parallel workers")
    demo.add_argument("--seed", type=int, default=0, help="base seed of the noise (reproducible runs)")
    demo.add_argument("--out", default="dperm-demo", help="output directory")
    demo.set_defaults(func=_demo)


def _reproduce_options(reproduce) -> None:
    from dperm.experiments import options  # rajkumar2012's defaults, without NumPy

    reproduce.add_argument("paper", choices=("chaudhuri2011", "rajkumar2012"),
                           help="the paper: chaudhuri2011 (Chaudhuri, Monteleoni & Sarwate 2011) or "
                                "rajkumar2012 (Rajkumar & Agarwal 2012)")
    both = reproduce.add_argument_group("options of both papers")
    both.add_argument("--runs", type=int, default=None,
                      help="noise draws per fold and cell (default: chaudhuri2011 50, "
                           f"rajkumar2012 {options.RUNS})")
    both.add_argument("--jobs", type=int, default=2, help="parallel workers")
    both.add_argument("--seed", type=int, default=0, help="base seed of the noise")
    both.add_argument("--out", default="dperm-reproduce", help="output directory")

    chaudhuri = reproduce.add_argument_group("chaudhuri2011 options (Tables 1-2, Figs. 2-5)")
    chaudhuri.add_argument("--table1", action="store_true", help="Table 1 (Adult)")
    chaudhuri.add_argument("--table2", action="store_true", help="Table 2 (KDDCup99)")
    chaudhuri.add_argument("--figures", nargs="*", choices=("2", "3", "4-5"), default=None,
                           help="alone, Figs. 2-5; or a list, e.g. '--figures 4-5' for the "
                                "learning curves without the tables (default: with no part "
                                "named, everything)")
    chaudhuri.add_argument("--folds", type=int, default=10, help="cross-validation folds")
    chaudhuri.add_argument("--figure-runs", type=int, default=10, help="draws per fold in Figs. 2-3")
    chaudhuri.add_argument("--curve-runs", type=int, default=5, help="runs per point in Figs. 4-5")
    chaudhuri.add_argument("--permutations", type=int, default=3, help="permutations in Figs. 4-5")
    chaudhuri.add_argument("--encodings", nargs="+", choices=("constant", "unit_norm"),
                           default=["constant", "unit_norm"],
                           help="row encodings to run: constant = the paper's, unit_norm = "
                                "dperm's (default both)")
    chaudhuri.add_argument("--subsets", nargs="+", choices=("random", "stratified"),
                           default=["random", "stratified"],
                           help="Table 2: which 70,000-row KDD subsets (default both)")
    chaudhuri.add_argument("--data-home", default=None,
                           help="directory with adult/ and kddcup99/ (default: DPERM_DATA or the "
                                "embedded copy)")

    rounds = options.N_ROUNDS
    same = len(set(rounds.values())) == 1
    rounds_default = (f"{rounds['1']} for both figures" if same
                      else f"{rounds['1']} for Fig. 1, {rounds['2']} for Fig. 2")
    rajkumar = reproduce.add_argument_group("rajkumar2012 options (Figs. 1-2)")
    rajkumar.add_argument("--figure1", action="store_true", help="Fig. 1 (simulated data)")
    rajkumar.add_argument("--figure2", action="store_true", help="Fig. 2 (breast cancer)")
    rajkumar.add_argument("--rounds", type=int, default=None,
                          help=f"PSGD rounds T (default {rounds_default})")
    rajkumar.add_argument("--datasets", type=int, default=None,
                          help=f"simulated data sets / folds (default {options.N_DATASETS})")
    rajkumar.add_argument("--cancer-encoding", choices=options.ENCODINGS,
                          default="documented_ranges", help="how the breast-cancer rows are encoded")
    rajkumar.add_argument("--engine", choices=options.ENGINES, default="masked",
                          help="secure sum: masked runs in process; flower needs dperm[multiparty]")
    reproduce.set_defaults(func=_reproduce)


def _train_options(train) -> None:
    from dperm.mechanisms.catalog import MIN_EPSILON, binary_mechanisms, mechanism_help

    data = train.add_argument_group("data and public schema")
    data.add_argument("--data", required=True,
                      help="CSV file with a header row (--engine dask: Parquet/CSV file or directory)")
    data.add_argument("--target", required=True,
                      help="the column to predict: labels (classifiers) or numbers (regressors)")
    data.add_argument("--features", nargs="+", default=None, metavar="NAME",
                      help="feature columns (default: every column but the target)")
    data.add_argument("--categorical", nargs="+", default=[], metavar="NAME",
                      help="columns to one-hot encode (default: none; every feature is numeric)")
    data.add_argument("--bounds", default=None, metavar="FILE",
                      help="JSON file of PUBLIC bounds: column -> [lower, upper] or [categories];"
                           " {\"lower\": .., \"upper\": .., \"fill\": ..} gives a numeric column a"
                           " public value for missing cells (else a missing cell is an error)."
                           " Without it the bounds are read from the data (warned, NOT covered)")
    data.add_argument("--classes", default=None, metavar="A,B,...",
                      help="the PUBLIC label set, comma-separated (e.g. no,yes): it sets the "
                           "classes and the one-vs-rest split of epsilon; a label outside it is "
                           "an error. Without it the labels are read from the data, which the "
                           "guarantee does not cover (warned)")
    data.add_argument("--strict", action="store_true",
                      help="refuse to read any schema from the data: every feature needs a "
                           "--bounds entry and a classifier needs --classes")
    data.add_argument("--feature-range", choices=("centred", "unit"), default="centred",
                      help="where public bounds map numeric columns: centred = [-1, 1] "
                           "(measured better, benchmarks/cli_recipe.py), unit = [0, 1]")
    data.add_argument("--row-norm", choices=("clip", "scale", "constant"), default="scale",
                      help="per-record row step: scale maps every row to norm --data-norm, clip "
                           "only shortens longer rows, constant divides by the worst-case norm")
    data.add_argument("--data-norm", type=float, default=1.0,
                      help="public bound R on every row's L2 norm")

    model = train.add_argument_group("model")
    model.add_argument("--model", choices=tuple(_models()), default="logistic",
                       help=_model_help())
    model.add_argument("--smoothing-width", dest="h", type=float, default=0.5, metavar="H",
                       help="huber/smooth_hinge models: width h of the smoothed part of the loss")
    model.add_argument("--y-bounds", type=float, nargs=2, default=None, metavar=("LOWER", "UPPER"),
                       help="regressors: PUBLIC bounds on the target (or a --bounds entry for "
                            "it; required for least_squares, optional for quantile); targets "
                            "beyond are clipped (warned, never dropped), the target is centred "
                            "(least_squares: mapped onto [-1, 1]) and predictions clipped to them")
    model.add_argument("--y-bound", type=float, default=None, metavar="M",
                       help="regressors: shorthand for --y-bounds -M M")
    model.add_argument("--quantile", type=float, default=None, metavar="TAU",
                       help="quantile: the quantile to estimate, in (0, 1) (default 0.5, the median)")
    model.add_argument("--gamma", type=float, default=None,
                       help="kernel_* models: RBF kernel width, k(x, z) = exp(-gamma ||x - z||^2) "
                            "(default 1)")
    model.add_argument("--n-components", type=int, default=None,
                       help="kernel_* models: number of random Fourier features (default 100)")
    model.add_argument("--alpha", type=_alpha_option, default="auto",
                       help="L2 regularisation strength alpha (> 0): the objective is "
                            "(1/n) sum loss + (alpha/2) ||w||^2, so alpha is Chaudhuri et al.'s "
                            "Lambda and Nie & Wang's lambda is alpha/2. Or 'auto' (default): set "
                            "from public n, d, epsilon, delta, the norm bound, the loss and the "
                            "mechanism, never from the data (dperm.mechanisms.choice.auto_alpha)")
    model.add_argument("--fit-intercept", "--intercept", action=argparse.BooleanOptionalAction,
                       default=None,
                       help="fit an intercept (regressors: yes by default; AdaSSP does not "
                            "penalise it; other models: no, unlike the linear Python "
                            "estimators, whose fit_intercept defaults to True; the kernel ones "
                            "default to no as well). dperm train follows "
                            "dperm.preprocessing.make_private_pipeline: public bounds map numeric "
                            "columns to [-1, 1], which puts the middle of every range at 0, and "
                            "an intercept's constant feature raises the norm bound and with it "
                            "the noise; it measured worse (benchmarks/cli_recipe.py). dperm show "
                            "says whether a model has one")

    privacy = train.add_argument_group("privacy")
    privacy.add_argument("--epsilon", type=float, required=True,
                         help=f"the privacy budget epsilon (>= {MIN_EPSILON:g})")
    privacy.add_argument("--delta", type=float, default=0.0,
                         help="delta in [0, 1) (default 0: pure epsilon-DP); with delta > 0, "
                              "--mechanism auto may choose the Gaussian objective mechanism")
    privacy.add_argument("--mechanism", choices=("auto", *binary_mechanisms()), default=None,
                         help="default auto for classifiers (chosen from public n, d, epsilon, "
                              "delta and the loss; the model file's record says why), for "
                              "least_squares auto (AdaSSP unless --alpha is a number), output for "
                              "quantile; " + mechanism_help())
    privacy.add_argument("--random-state", type=int, default=None,
                         help="seed of the noise: for testing only, never stored (default: fresh)")

    run = train.add_argument_group("output and engine")
    run.add_argument("--out", required=True, metavar="FILE", help="model file to write (JSON)")
    run.add_argument("--engine", choices=("memory", "dask"), default="memory",
                     help="dask: read --data (a Parquet/CSV file or directory) lazily and fit "
                          "a linear classifier on a Dask cluster without loading it (needs "
                          "dperm[dask] and a --bounds entry for every feature)")
    run.add_argument("--scheduler", default=None,
                     help="with --engine dask: scheduler address tcp://host:port, or "
                          "threads/synchronous (default: a LocalCluster on 127.0.0.1)")
    train.set_defaults(func=_train)


def _predict_options(predict) -> None:
    predict.add_argument("--model", required=True, metavar="FILE",
                         help="model file written by dperm train or dperm coordinate")
    predict.add_argument("--data", required=True, metavar="FILE",
                         help="CSV file with a header row holding the model's feature columns "
                              "(other columns are ignored)")
    predict.add_argument("--proba", action="store_true",
                         help="add class probabilities (logistic models only)")
    predict.add_argument("--out", default=None, metavar="FILE",
                         help="CSV to write (default: standard output)")
    _expect_digest_option(predict)
    predict.set_defaults(func=_predict)


def _show_options(show) -> None:
    show.add_argument("--model", required=True, metavar="FILE",
                      help="model file written by dperm train or dperm coordinate")
    _expect_digest_option(show)
    show.set_defaults(func=_show)


CLASSIFIER_METRICS = ("accuracy", "confusion_matrix")
#: --metric -> the dperm.metrics function.
REGRESSOR_METRICS = {"r2": "r2_score", "mse": "mean_squared_error", "rmse": "root_mean_squared_error"}


def _bounds_pair(text: str):
    try:
        lower, upper = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOWER,UPPER (two numbers), got {text!r}") from None
    return lower, upper


def _evaluate_options(evaluate) -> None:
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
    _expect_digest_option(evaluate)
    evaluate.set_defaults(func=_evaluate)


def _report_options(report) -> None:
    report.add_argument("--model", required=True, help="the model file (from dperm train)")
    report.add_argument("--evaluation", action="append", default=[], metavar="FILE",
                        help="an evaluation record from dperm evaluate --out (repeatable)")
    report.add_argument("--out", help="write the Markdown model card here (default: print it)")
    _expect_digest_option(report)
    report.set_defaults(func=_report)


def _expect_digest_option(parser) -> None:
    parser.add_argument("--expect-digest", default=None, metavar="sha256:HEX",
                        help="refuse the model file unless its digest is this one (the digest "
                             "its publisher printed; dperm train prints it). A digest detects "
                             "edits and swapped files; it is not a signature")


def _audit_options(sub) -> None:
    from dperm.audit.cli import add_audit_subparser

    add_audit_subparser(sub)


def _learning_rates(args) -> int:
    """``dperm experiment learning-rates``: imports the experiment (NumPy, SciPy) only when it runs."""
    from dperm.experiments.learning_rates import run_learning_rates_command

    return run_learning_rates_command(args)


def _experiment_options(sub) -> None:
    from dperm.experiments.options import add_learning_rates_subparser

    experiment = sub.add_parser("experiment", help=COMMANDS["experiment"].help,
                                description=COMMANDS["experiment"].description,
                                epilog=COMMANDS["experiment"].epilog)
    inner = experiment.add_subparsers(dest="experiment", required=True, metavar="{learning-rates}")
    rates = add_learning_rates_subparser(inner, func=_learning_rates)
    rates.epilog = "example:\n  dperm experiment learning-rates --sizes 500 1000 2000 --seeds 5"


def _multiparty_options(sub) -> None:
    from dperm.multiparty.flower.cli import add_commands

    add_commands(sub)


@dataclass(frozen=True)
class Command:
    """A subcommand: its one-line help, description, example epilog and option builder.

    ``options(parser)`` fills the subcommand's own parser; with ``external=True``
    it is ``options(subparsers)`` and adds the parser itself (a module outside
    this one owns it).
    """

    help: str
    description: str
    epilog: str
    options: Callable
    external: bool = False


COMMANDS = {
    "demo": Command(
        "privacy vs accuracy on the embedded Adult data",
        "Train dperm's private classifiers on the UCI Adult data at several epsilons, print the "
        "test error of each beside the majority-class and non-private baselines, and write "
        "results.json and a plot.",
        "examples:\n  dperm demo\n  dperm demo --subset 2000 --epsilons 0.1 1 --repeats 2",
        _demo_options),
    "train": Command(
        "fit a private model on a CSV file",
        "Fit a differentially private model on a CSV file and write a JSON model file. The "
        "default recipe: public bounds map every numeric column to [-1, 1], categorical columns "
        "are one-hot encoded with their public categories, every row is scaled to norm "
        "--data-norm, and no intercept is fitted (as dperm.preprocessing.make_private_pipeline; "
        "measured in benchmarks/cli_recipe.py). No row is ever dropped: n is public.",
        "examples:\n"
        "  dperm train --data train.csv --target income --categorical sex --bounds bounds.json "
        "--classes no,yes --epsilon 1 --out model.json\n"
        "  dperm train --data houses.csv --target price --model least_squares --y-bound 1 "
        "--bounds bounds.json --epsilon 1 --out model.json\n"
        "  dperm train --data train.csv --target label --model kernel_logistic --gamma 0.5 "
        "--bounds bounds.json --classes 0,1 --strict --epsilon 1 --out model.json",
        _train_options),
    "predict": Command(
        "predict with a model file",
        "Encode a CSV file with the model file's public schema and write one prediction per "
        "row (a label, or a number for a regressor).",
        "example:\n  dperm predict --model model.json --data new.csv --proba --out predictions.csv",
        _predict_options),
    "show": Command(
        "print a model file's privacy guarantee",
        "Print what a model file predicts, from which features, and its privacy record: the "
        "guarantee, the mechanism and every number behind its calibration, checked against the "
        "calibration recomputed from the file's public inputs; and the file's digest.",
        "examples:\n  dperm show --model model.json\n"
        "  dperm show --model model.json --expect-digest sha256:...",
        _show_options),
    "evaluate": Command(
        "score a model file on private held-out rows, with noise",
        "Score a model file on a CSV file of private held-out rows and print the score released "
        "with its own epsilon (dperm.metrics: exact discrete Laplace noise). A score computed "
        "on private rows without noise must not be published.",
        "examples:\n  dperm evaluate --model model.json --data test.csv --epsilon 0.5 --out eval.json\n"
        "  dperm evaluate --model model.json --data test.csv --epsilon 0.5 --metric r2 "
        "--y-bounds 0,500000",
        _evaluate_options),
    "report": Command(
        "write a model card (Markdown)",
        "Write one Markdown page for a reviewer: what is published, the guarantee, the public "
        "schema, the calibration, the private evaluations and the total budget.",
        "example:\n  dperm report --model model.json --evaluation eval.json --out card.md",
        _report_options),
    "reproduce": Command(
        "reproduce a paper's experiments",
        "Re-run the experiments of Chaudhuri, Monteleoni & Sarwate (2011) or Rajkumar & "
        "Agarwal (2012) and write a report with the paper's numbers beside ours. Each paper has "
        "its own group of options below.",
        "examples:\n  dperm reproduce chaudhuri2011 --table1 --runs 5\n"
        "  dperm reproduce rajkumar2012 --figure2 --runs 2",
        _reproduce_options),
    "audit": Command(
        "empirical lower bound on epsilon (privacy audit)", "", "", _audit_options, external=True),
    "experiment": Command(
        "run an experiment (learning-rates)",
        "Experiments beyond the papers' tables: learning-rates measures excess risk against the "
        "training size m under the theory's choice of epsilon(m) and Nie & Wang's lambda(m) "
        "(dperm's alpha is 2 lambda).",
        "example:\n  dperm experiment learning-rates --sizes 500 1000 2000 --seeds 5",
        _experiment_options, external=True),
    "party": Command(
        "take part in multiparty training (Flower SuperNode)", "", "", _multiparty_options,
        external=True),
    "coordinate": Command(
        "train one private classifier over K parties' SecAgg+ sums", "", "", _multiparty_options,
        external=True),
}


def _set_formatter(parser) -> None:
    """Give ``parser`` and its subcommands' parsers :class:`_HelpFormatter`."""
    parser.formatter_class = _HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _set_formatter(child)


def _command_of(argv) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), or None."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``dperm`` parser; with ``command``, only that subcommand's options are built.

    ``command=""`` builds no subcommand's options (enough for ``--help`` and ``--version``).

    Every subcommand is listed either way (``dperm --help`` needs only their
    one-line help); building one's options imports only the standard library
    and dperm's import-free tables (the mechanism catalog, the experiments'
    parameters), never NumPy, SciPy, scikit-learn or Flower, so every
    ``dperm COMMAND --help`` starts at once.
    """
    parser = argparse.ArgumentParser(
        prog="dperm",
        description="Differentially private empirical risk minimisation: train, use and audit "
                    "private models, and reproduce the papers behind them.",
        epilog="examples:\n  dperm demo --subset 2000\n"
               "  dperm train --data train.csv --target label --bounds bounds.json "
               "--classes no,yes --epsilon 1 --out model.json\n"
               "  dperm show --model model.json\n\n"
               "Run dperm COMMAND --help for a command's options.",
        formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"dperm {_version()}",
                        help="print dperm's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = {name for name in COMMANDS if command is None or command == name}
    # an external builder adds every command it owns (party and coordinate come together)
    external = {COMMANDS[name].options for name in wanted if COMMANDS[name].external}
    done = set()
    for name, spec in COMMANDS.items():
        if spec.external and spec.options in external:
            if spec.options not in done:
                spec.options(sub)
                done.add(spec.options)
            continue
        child = sub.add_parser(name, help=spec.help, description=spec.description or spec.help,
                               epilog=spec.epilog, formatter_class=_HelpFormatter)
        if name in wanted:
            spec.options(child)
    _set_formatter(parser)
    return parser


def _alpha_option(text: str):
    """``--alpha``: a number or ``auto``."""
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto'; got {text!r}") from None


#: Exit status when the reader of standard output went away (``dperm predict ... | head``):
#: 128 + SIGPIPE, what a shell reports for a command ended by a closed pipe.
EXIT_BROKEN_PIPE = 128 + 13


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as the CLI prints it: ``dperm: warning: <message>``, one line.

    No file and line: they would point at dperm's entry-point script (``bin/dperm:6``)
    or at library code, neither of which is the user's to act on; the message says
    what happened and what to do.
    """
    return f"dperm: warning: {' '.join(str(message).split())}\n"


def _quiet_stdout() -> None:
    """Point standard output at the null device, so a later flush cannot fail again.

    The recipe of the Python documentation for SIGPIPE (``signal`` module notes):
    Python's final flush of ``sys.stdout`` would raise BrokenPipeError once more.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (an in-process capture)
        pass


def main(argv=None) -> int:
    """Run ``dperm`` with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    0 on success, 2 on an error (one line, ``dperm: error: ...``), and
    :data:`EXIT_BROKEN_PIPE` quietly when the reader of standard output closed
    it early (``dperm predict ... | head``). While it runs, warnings print as
    ``dperm: warning: <message>``; the warning format is restored on return.
    """
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # a closed pipe surfaces here, not at interpreter exit
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE


def _main(argv) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # no subcommand named (dperm --help, --version, a typo): build none of their options
    args = build_parser(_command_of(argv) or "").parse_args(argv)
    from dperm.exceptions import CertificateError

    original_format = warnings.formatwarning
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.formatwarning = _format_warning
            return args.func(args)
    except (ValueError, FileNotFoundError, IsADirectoryError, CertificateError) as error:
        print(f"dperm: error: {error}", file=sys.stderr)
        return 2
    finally:
        warnings.formatwarning = original_format


if __name__ == "__main__":
    sys.exit(main())
