"""``dperm experiment``: experiments beyond the papers' tables (``learning-rates``)."""

from __future__ import annotations

__all__ = ["options"]


def options(sub) -> None:
    """Add ``experiment`` and its sub-command ``learning-rates`` to ``dperm``'s subcommands."""
    from dperm.cli import COMMANDS
    from dperm.experiments.options import add_learning_rates_subparser

    experiment = sub.add_parser("experiment", help=COMMANDS["experiment"].help,
                                description=COMMANDS["experiment"].description,
                                epilog=COMMANDS["experiment"].epilog)
    inner = experiment.add_subparsers(dest="experiment", required=True, metavar="{learning-rates}")
    rates = add_learning_rates_subparser(inner, func=_learning_rates)
    rates.epilog = "example:\n  dperm experiment learning-rates --sizes 500 1000 2000 --seeds 5"


def _learning_rates(args) -> int:
    """``dperm experiment learning-rates``: imports the experiment (NumPy, SciPy) only when it runs."""
    from dperm.experiments.learning_rates import run_learning_rates_command

    return run_learning_rates_command(args)
