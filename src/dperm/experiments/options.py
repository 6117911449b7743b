"""The experiments' command-line defaults and the ``learning-rates`` parser, import-free.

``dperm reproduce --help`` and ``dperm experiment learning-rates --help`` show
these defaults and choices; this module imports the standard library only, so
building those parsers imports neither NumPy nor SciPy. The experiment modules
import their defaults from here (and keep them under the same names:
``rajkumar2012.RUNS``, ``learning_rates.SIZES``, ...).
"""

from __future__ import annotations

# -- rajkumar2012 (dperm reproduce rajkumar2012) ------------------------------------------

#: Simulated data sets (Fig. 1) and folds (Fig. 2).
N_DATASETS = 5
#: Defaults of the full run: noise draws per (data set, split, epsilon) and PSGD rounds T.
RUNS = 5
N_ROUNDS = {"1": 2000, "2": 2000}
#: ``--cancer-encoding``: how the breast-cancer rows are encoded.
ENCODINGS = ("documented_ranges", "per_record")
#: ``--engine``: the secure sum (masked in process, or Flower SecAgg+).
ENGINES = ("masked", "flower")

# -- learning_rates (dperm experiment learning-rates) -------------------------------------

#: Training sizes: a geometric grid, 500 to 512,000 (doubling).
SIZES = tuple(500 * 2**k for k in range(11))
#: Seeds (independent data and noise) averaged per size. The least-squares excess
#: risk is heavy-tailed over seeds (the noise norm is Gamma-distributed, then squared).
N_SEEDS = 100
#: Test points on which the risks are computed.
N_TEST = 20000
#: Input dimension; rows are uniform on the unit ball, so ``kappa = data_norm = 1``.
DIMENSION = 2


def add_learning_rates_subparser(subparsers, name: str = "learning-rates", func=None):
    """Add the ``learning-rates`` command to an ``argparse`` subparsers object; return its parser.

    ``func``, the parser's ``func`` default, is the command's handler: the
    caller's, so that this module imports nothing of the experiment it
    describes (``dperm.cli`` passes one that imports
    :func:`dperm.experiments.learning_rates.run_learning_rates_command` when it runs).
    """
    parser = subparsers.add_parser(
        name, help="empirical learning rates vs Nie & Wang's theory (000 Thm 4, 002 Thm 3)",
        description="Excess risk of DP least squares and the DP SVM against m under the theory's "
                    "epsilon(m) and lambda(m), with the fitted log-log slope beside the theoretical one.")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                        help="training sizes m (default 500 ... 64000, doubling)")
    parser.add_argument("--seeds", type=int, default=N_SEEDS, help=f"seeds per size (default {N_SEEDS})")
    parser.add_argument("--n-test", type=int, default=N_TEST, help=f"test points (default {N_TEST})")
    parser.add_argument("--dimension", type=int, default=DIMENSION, help=f"d (default {DIMENSION})")
    parser.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel workers (default 2)")
    parser.add_argument("--out", default="dperm-learning-rates", help="output directory")
    parser.set_defaults(func=func)
    return parser


__all__ = ["DIMENSION", "ENCODINGS", "ENGINES", "N_DATASETS", "N_ROUNDS", "N_SEEDS", "N_TEST", "RUNS",
           "SIZES", "add_learning_rates_subparser"]
