"""``dperm demo``: privacy vs accuracy on the embedded Adult data."""

from __future__ import annotations

__all__ = ["ADULT_ENCODING_NAMES", "options", "run"]


#: ``demo --encoding`` values (the keys of ``dperm.datasets.ADULT_ENCODINGS``; a test checks).
ADULT_ENCODING_NAMES = ("unit_norm", "constant", "unit_norm_log")


def options(demo) -> None:
    """Add ``dperm demo``'s options to its parser and set its handler, :func:`run`."""
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
    demo.set_defaults(func=run)


def run(args) -> int:
    """Run ``dperm demo`` with the parsed ``args``; return the exit status."""
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
