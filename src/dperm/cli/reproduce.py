"""``dperm reproduce``: re-run the experiments of Chaudhuri et al. (2011) or Rajkumar & Agarwal (2012)."""

from __future__ import annotations

__all__ = ["options", "run"]


def options(reproduce) -> None:
    """Add ``dperm reproduce``'s options to its parser and set its handler, :func:`run`."""
    from dperm.experiments import options as defaults  # rajkumar2012's defaults, without NumPy

    reproduce.add_argument("paper", choices=("chaudhuri2011", "rajkumar2012"),
                           help="the paper: chaudhuri2011 (Chaudhuri, Monteleoni & Sarwate 2011) or "
                                "rajkumar2012 (Rajkumar & Agarwal 2012)")
    both = reproduce.add_argument_group("options of both papers")
    both.add_argument("--runs", type=int, default=None,
                      help="noise draws per fold and cell (default: chaudhuri2011 50, "
                           f"rajkumar2012 {defaults.RUNS})")
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

    rounds = defaults.N_ROUNDS
    same = len(set(rounds.values())) == 1
    rounds_default = (f"{rounds['1']} for both figures" if same
                      else f"{rounds['1']} for Fig. 1, {rounds['2']} for Fig. 2")
    rajkumar = reproduce.add_argument_group("rajkumar2012 options (Figs. 1-2)")
    rajkumar.add_argument("--figure1", action="store_true", help="Fig. 1 (simulated data)")
    rajkumar.add_argument("--figure2", action="store_true", help="Fig. 2 (breast cancer)")
    rajkumar.add_argument("--rounds", type=int, default=None,
                          help=f"PSGD rounds T (default {rounds_default})")
    rajkumar.add_argument("--datasets", type=int, default=None,
                          help=f"simulated data sets / folds (default {defaults.N_DATASETS})")
    rajkumar.add_argument("--cancer-encoding", choices=defaults.ENCODINGS,
                          default="documented_ranges", help="how the breast-cancer rows are encoded")
    rajkumar.add_argument("--engine", choices=defaults.ENGINES, default="masked",
                          help="secure sum: masked runs in process; flower needs dperm[multiparty]")
    reproduce.set_defaults(func=run)


def run(args) -> int:
    """Run ``dperm reproduce`` with the parsed ``args``; return the exit status."""
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
