"""``dperm train``: fit a private model on a CSV file (or, with ``--engine dask``, on a Dask cluster)
and write a model file."""

from __future__ import annotations

import argparse
from functools import cache

from dperm.cli._common import read_rows

__all__ = ["options", "run"]


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


def _model_help() -> str:
    """The ``--model`` help: the values by family, as :func:`_models` lists them."""
    def listed(family):
        return ", ".join(model + (" (needs --y-bounds)" if "y_bound" in _loss_params(loss) else "")
                         for model, (kind, loss) in _models().items() if kind == family)

    return (f"classifiers: {listed('classifier')}; regressors: {listed('regressor')}; kernel "
            f"classifiers by random Fourier features: {listed('kernel')}")


#: ``--fallback``'s words: the estimator's ``fallback`` ("none" is ``None``).
FALLBACK_WORDS = ("auto", "majority", "none")

#: ``--alpha``'s words: the estimators' ``alpha="auto"`` and the classifiers' opt-in
#: epsilon-monotone rule ``alpha="monotone"`` (:data:`dperm.privacy.alpha.MONOTONE`).
ALPHA_WORDS = ("auto", "monotone")


def _alpha_option(text: str):
    """``--alpha``: a number (the estimator checks it is > 0), ``auto`` or ``monotone``."""
    if text in ALPHA_WORDS:
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, 'auto' or 'monotone'; got {text!r}") from None


def options(train) -> None:
    """Add ``dperm train``'s options to its parser and set its handler, :func:`run`."""
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
    model.add_argument("--smoothing-width", dest="h", type=float, default=None, metavar="H",
                       help=f"{_models_with('h')} models: width h of the smoothed part of the "
                            "loss (default: the model's estimator's h; the model file's params "
                            "record it)")
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
                            "mechanism, never from the data (dperm.mechanisms.choice.auto_alpha). "
                            "Or 'monotone' (classifiers): the opt-in rule whose noise's effect "
                            "falls as epsilon grows (alpha='monotone' in Python)")
    model.add_argument("--fit-intercept", "--intercept", action=argparse.BooleanOptionalAction,
                       default=None,
                       help="fit an intercept. Default: regressors yes (AdaSSP does not "
                            "penalise it); --model logistic with two labels and --engine memory "
                            "yes, as a constant feature 0.5 (not 1: it raises the norm bound "
                            "from R to sqrt(R^2 + 0.25) only), so that the majority fallback "
                            "(--fallback) can release the constant model; every other "
                            "classifier no (public bounds map numeric columns to [-1, 1], which "
                            "puts the middle of every range at 0). Measured on the fitting "
                            "tables (benchmarks/fallback_recipe_fit.py). --fit-intercept asks for "
                            "one with the constant feature 1; --no-fit-intercept for none (and "
                            "then no fallback). dperm show says whether a model has one")
    model.add_argument("--fallback", choices=FALLBACK_WORDS, default="auto",
                       help="--model logistic: the private majority fallback, a small public "
                            "share of epsilon on a noisy choice between the model and the constant "
                            "model (the privately estimated majority class), so that at small "
                            "epsilon the model is not worse than a constant. auto (default): on "
                            "for two labels with an intercept on in-memory rows; majority: on "
                            "(needs an intercept); none: off. The model file's record states "
                            "the share, the noise and the choice")

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
                              "quantile; a regressor takes the mechanisms its estimator takes "
                              "whose theorem covers its loss at --delta; " + mechanism_help())
    privacy.add_argument("--random-state", type=int, default=None,
                         help="seed of the noise: for testing only, never stored (default: fresh)")

    output = train.add_argument_group("output and engine")
    output.add_argument("--out", required=True, metavar="FILE", help="model file to write (JSON)")
    output.add_argument("--engine", choices=("memory", "dask"), default="memory",
                     help="dask: read --data (a Parquet/CSV file or directory) lazily and fit "
                          "a linear classifier on a Dask cluster without loading it (needs "
                          "dperm[dask] and a --bounds entry for every feature)")
    output.add_argument("--scheduler", default=None,
                     help="with --engine dask: scheduler address tcp://host:port, or "
                          "threads/synchronous (default: a LocalCluster on 127.0.0.1)")
    train.set_defaults(func=run)


def run(args) -> int:
    """Run ``dperm train`` with the parsed ``args``; return the exit status."""
    args.classes = _parse_classes(args.classes)
    _check_model_options(args)
    if args.engine == "dask":
        return _train_dask(args)
    from dperm.model_io import save_model

    columns, spec, from_data = _read_table(args)
    X = spec.transform(columns, source=args.data)  # one row per row of the file: n is public
    y = _targets(columns, args)
    _check_labels(y, args.classes, args)
    n_labels = None if _models()[args.model][0] == "regressor" else (
        len(args.classes) if args.classes is not None else len(set(y.tolist())))
    model = _make_model(args, n_labels).fit(X, y)
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


def _check_model_options(args) -> None:
    """Refuse option combinations the chosen ``--model`` cannot use, before any data is read."""
    family, loss = _models()[args.model]
    from dperm.mechanisms.catalog import check_min_epsilon

    if args.epsilon > 0:  # epsilon <= 0 is refused by the estimator's parameter constraints
        check_min_epsilon(args.epsilon, "--epsilon")  # the library's limit of the noise
    if family == "regressor":
        least_squares = args.model == "least_squares"
        _check_regressor_privacy(args, loss)
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
    if args.fallback != "auto" and not _has_fallback(args.model):
        raise ValueError(f"--fallback {args.fallback} is for --model logistic only; --model "
                         f"{args.model} has no majority fallback. Drop --fallback.")
    if args.fallback == "majority" and args.engine == "dask":
        raise ValueError("--fallback majority is not available with --engine dask (its choice counts "
                         "the rows in memory); use --fallback none or auto. Nothing was spent.")
    if args.fallback == "majority" and args.fit_intercept is False:
        raise ValueError("--fallback majority needs an intercept (the constant model it may release "
                         "is one); drop --no-fit-intercept or use --fallback none. Nothing was spent.")


def _models_with(param: str) -> str:
    """The ``--model`` values whose loss takes ``param`` (for error messages)."""
    return " / ".join(model for model, (_, loss) in _models().items() if param in _loss_params(loss))


def _estimator(model: str):
    """The estimator ``--model`` names, with its own defaults (:func:`dperm.catalog.build_estimator`)."""
    from dperm.catalog import build_estimator

    family, loss = _models()[model]
    return build_estimator(loss, kernel=family == "kernel")


def _estimator_mechanisms(model: str) -> tuple[str, ...]:
    """The mechanisms ``--model``'s estimator may be given, in the table's order, ``auto`` excepted.

    The options of its ``mechanism`` parameter (its ``_parameter_constraints``), or, for an
    estimator without one, the one mechanism it always runs (the quantile regressor's output
    perturbation).
    """
    from dperm.mechanisms.catalog import MECHANISMS

    estimator = _estimator(model)
    if "mechanism" not in estimator.get_params():
        return (estimator._mechanism_name(),)
    options = type(estimator)._parameter_constraints["mechanism"][0].options
    return tuple(name for name in MECHANISMS if name in options)


def _check_regressor_privacy(args, loss_name: str) -> None:
    """Refuse a ``--mechanism`` or ``--delta`` the regressor of ``--model`` cannot use (no data read).

    The one source is the library: the mechanisms the estimator's ``mechanism`` parameter
    takes (:func:`_estimator_mechanisms`), each kept only where its row of
    :data:`~dperm.mechanisms.catalog.MECHANISMS` covers the loss at ``--delta``
    (:meth:`~dperm.mechanisms.catalog.Mechanism.refusal`), and whether the estimator takes a
    ``delta`` at all.
    """
    from dperm.losses import get_loss
    from dperm.mechanisms.catalog import MECHANISMS

    if args.delta and "delta" not in _estimator(args.model).get_params():
        raise ValueError(f"--model {args.model} is pure epsilon-DP (its estimator takes no delta); "
                         "leave --delta at 0.")
    if args.mechanism in (None, "auto"):
        return
    loss = get_loss(loss_name)  # the rows read whether L is finite and c exists, not h's value
    offered = _estimator_mechanisms(args.model)
    if args.mechanism in offered:
        reason = MECHANISMS[args.mechanism].refusal(loss, args.delta)
        if reason is None:
            return
        raise ValueError(f"--model {args.model} --mechanism {args.mechanism} at --delta "
                         f"{args.delta:g}: {reason}")
    usable = [name for name in offered if MECHANISMS[name].accepts(loss, args.delta)]
    fitted_by = (f"{MECHANISMS[offered[0]].title} only" if len(offered) == 1 else
                 f"{', '.join(('auto', *usable))} at --delta {args.delta:g}")
    raise ValueError(f"--model {args.model} is fitted by {fitted_by}; drop --mechanism "
                     f"{args.mechanism}.")


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


def _make_model(args, n_labels=None):
    """The estimator ``--model`` names (:func:`dperm.catalog.build_estimator`), with the options given.

    ``n_labels`` is the size of the label set (``--classes``, or the labels read from the data,
    which the fitted model releases as ``classes_`` either way); it decides the classifier's
    default intercept (:func:`_default_intercept`). The Dask path passes none.
    """
    from dperm.catalog import build_estimator

    family, loss = _models()[args.model]
    intercept, scaling = _default_intercept(args, family, n_labels)
    y_bounds = None
    if family == "regressor":
        y_bounds = args.y_bounds or (None if args.y_bound is not None else _bounds_file_target(args))
    extra = {} if scaling is None else {"intercept_scaling": scaling}
    return build_estimator(
        loss, kernel=family == "kernel", epsilon=args.epsilon, alpha=args.alpha,
        random_state=args.random_state, fit_intercept=intercept,
        data_norm=args.data_norm, delta=args.delta, mechanism=args.mechanism or "auto",
        classes=args.classes, y_bound=args.y_bound,
        y_bounds=None if y_bounds is None else tuple(y_bounds),
        quantile=0.5 if args.quantile is None else args.quantile,
        gamma=1.0 if args.gamma is None else args.gamma,
        n_components=100 if args.n_components is None else args.n_components,
        fallback=None if args.fallback == "none" else args.fallback, **extra,
        **({} if args.h is None else {"h": args.h}))  # without --smoothing-width: the estimator's h


def _default_intercept(args, family, n_labels):
    """``(fit_intercept, intercept_scaling or None for the estimator's own)`` from public choices.

    ``--fit-intercept`` / ``--no-fit-intercept`` win. Otherwise the regressors fit one (AdaSSP's
    is unpenalised; the quantile regressor's is shrunk toward the centre of its target bounds on
    the [-1, 1] scale they map its target onto). A classifier with the majority fallback
    (``--model logistic``) fits one, with the constant feature ``RECIPE_INTERCEPT_SCALING`` (0.5), when
    the fallback can run (two labels, rows in memory, ``--fallback`` not none): the fallback's
    constant model is an intercept, and at small epsilon it keeps the model from falling below
    the majority class. Measured on the FITTING tables (benchmarks/fallback_recipe_fit.py, 13
    tables x 4 epsilons): below the majority class by more than 0.005 in 3 of 52 cells against 13
    for the no-intercept recipe, mean accuracy 0.7031 against 0.7001. Every other classifier
    fits none (the recipe: the centred columns already put the middle of every range at 0, and a
    constant feature raises the norm bound and with it the noise; benchmarks/cli_recipe.py).
    """
    if args.fit_intercept is not None:
        return bool(args.fit_intercept), None
    if family == "regressor":
        return True, None
    if (family == "classifier" and _has_fallback(args.model) and args.engine == "memory"
            and n_labels == 2 and args.fallback != "none"):
        from dperm.privacy.fallback import RECIPE_INTERCEPT_SCALING

        return True, RECIPE_INTERCEPT_SCALING
    return False, None


def _has_fallback(model: str) -> bool:
    """Whether ``--model``'s estimator has the majority fallback (a ``fallback`` parameter)."""
    from dperm.catalog import build_estimator

    family, loss = _models()[model]
    return "fallback" in build_estimator(loss, kernel=family == "kernel").get_params()


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


def _read_table(args):
    """``(columns, spec, from_data)`` for ``--data``: the raw columns and the public schema."""
    from dperm.tabular import build_spec, read_bounds_file

    columns = read_rows(args.data)
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
