"""Command-line tool ``dperm``: parse, call the library, print.

Subcommands (one module of this package each; :data:`COMMANDS` wires them)
-------------------------------------------------------------------------
demo       The main job: privacy vs accuracy on the embedded Adult data.
train      Fit a private model (classifier, regressor or kernel model) on a CSV file.
predict    Predict with a model file on a CSV file.
show       Print a model file's privacy guarantee.
evaluate   Score a model file on private held-out rows, with noise.
report     Write a model card (Markdown) from a model file and its evaluations.
reproduce  Reproduce a paper's experiments (chaudhuri2011, rajkumar2012).
audit      Empirically audit a mechanism: a statistical lower bound on epsilon.
experiment learning-rates: excess risk against m under the theory's parameter choice.
party      party keygen / party serve: one party of a multiparty training (Flower SuperNode).
coordinate Multiparty private training over Flower SecAgg+: SuperLink + ServerApp.

Each command module ``dperm.cli.<module>`` has ``options(parser)``, which adds the
command's options and sets ``func`` to its handler (``run(args)``); an external
command's ``options(subparsers)`` adds the parser itself (:mod:`dperm.audit.cli`,
:mod:`dperm.multiparty.flower.cli` own theirs).

Imports are lazy: this module imports only the standard library, and a
subcommand's module is imported and its options built only when that
subcommand is run, so ``dperm --help`` starts at once. The option builders read
only import-free tables (:mod:`dperm.mechanisms.catalog`, :mod:`dperm.catalog`,
:mod:`dperm.experiments.options`, :mod:`dperm.multiparty.defaults`), so every
``dperm COMMAND --help`` does too (a test checks). The handlers import numpy,
scikit-learn and dperm's subpackages when they run.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from dataclasses import dataclass
from importlib import import_module

__all__ = ["ADULT_ENCODING_NAMES", "COMMANDS", "Command", "EXIT_BROKEN_PIPE", "build_parser", "main"]


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


@dataclass(frozen=True)
class Command:
    """A subcommand: its one-line help, description, example epilog and the module that builds it.

    ``dperm.cli.<module>.options(parser)`` fills the subcommand's own parser;
    with ``external=True`` it is ``options(subparsers)`` and adds the parser
    itself; ``module`` may name a builder outside this package as
    ``"package.module:function"`` (:mod:`dperm.audit.cli` and
    :mod:`dperm.multiparty.flower.cli` own their parsers).
    """

    help: str
    description: str
    epilog: str
    module: str
    external: bool = False

    def options(self):
        """The command module's option builder (imports the module: only for a command that runs)."""
        module, _, builder = self.module.partition(":")
        return getattr(import_module(module if builder else f"{__name__}.{module}"), builder or "options")


COMMANDS = {
    "demo": Command(
        "privacy vs accuracy on the embedded Adult data",
        "Train dperm's private classifiers on the UCI Adult data at several epsilons, print the "
        "test error of each beside the majority-class and non-private baselines, and write "
        "results.json and a plot.",
        "examples:\n  dperm demo\n  dperm demo --subset 2000 --epsilons 0.1 1 --repeats 2",
        "demo"),
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
        "train"),
    "predict": Command(
        "predict with a model file",
        "Encode a CSV file with the model file's public schema and write one prediction per "
        "row (a label, or a number for a regressor).",
        "example:\n  dperm predict --model model.json --data new.csv --proba --out predictions.csv",
        "predict"),
    "show": Command(
        "print a model file's privacy guarantee",
        "Print what a model file predicts, from which features, and its privacy record: the "
        "guarantee, the mechanism and every number behind its calibration, checked against the "
        "calibration recomputed from the file's public inputs; and the file's digest.",
        "examples:\n  dperm show --model model.json\n"
        "  dperm show --model model.json --expect-digest sha256:...",
        "show"),
    "evaluate": Command(
        "score a model file on private held-out rows, with noise",
        "Score a model file on a CSV file of private held-out rows and print the score released "
        "with its own epsilon (dperm.metrics: exact discrete Laplace noise). A score computed "
        "on private rows without noise must not be published.",
        "examples:\n  dperm evaluate --model model.json --data test.csv --epsilon 0.5 --out eval.json\n"
        "  dperm evaluate --model model.json --data test.csv --epsilon 0.5 --metric r2 "
        "--y-bounds 0,500000",
        "evaluate"),
    "report": Command(
        "write a model card (Markdown)",
        "Write one Markdown page for a reviewer: what is published, the guarantee, the public "
        "schema, the calibration, the private evaluations and the total budget.",
        "example:\n  dperm report --model model.json --evaluation eval.json --out card.md",
        "report"),
    "reproduce": Command(
        "reproduce a paper's experiments",
        "Re-run the experiments of Chaudhuri, Monteleoni & Sarwate (2011) or Rajkumar & "
        "Agarwal (2012) and write a report with the paper's numbers beside ours. Each paper has "
        "its own group of options below.",
        "examples:\n  dperm reproduce chaudhuri2011 --table1 --runs 5\n"
        "  dperm reproduce rajkumar2012 --figure2 --runs 2",
        "reproduce"),
    "audit": Command(
        "empirical lower bound on epsilon (privacy audit)", "", "", "dperm.audit.cli:add_audit_subparser",
        external=True),
    "experiment": Command(
        "run an experiment (learning-rates)",
        "Experiments beyond the papers' tables: learning-rates measures excess risk against the "
        "training size m under the theory's choice of epsilon(m) and Nie & Wang's lambda(m) "
        "(dperm's alpha is 2 lambda).",
        "example:\n  dperm experiment learning-rates --sizes 500 1000 2000 --seeds 5",
        "experiment", external=True),
    "party": Command(
        "take part in multiparty training (Flower SuperNode)", "", "", "dperm.multiparty.flower.cli:add_commands",
        external=True),
    "coordinate": Command(
        "train one private classifier over K parties' SecAgg+ sums", "", "",
        "dperm.multiparty.flower.cli:add_commands", external=True),
}


def _set_formatter(parser) -> None:
    """Give ``parser`` and its subcommands' parsers :class:`_HelpFormatter` (built with argparse's default)."""
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
               "Run dperm COMMAND --help for a command's options.")
    parser.add_argument("--version", action="version", version=f"dperm {_version()}",
                        help="print dperm's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = {name for name in COMMANDS if command is None or command == name}
    # an external builder adds every command it owns (party and coordinate come together)
    external = {COMMANDS[name].module for name in wanted if COMMANDS[name].external}
    done = set()
    for name, spec in COMMANDS.items():
        if spec.external and spec.module in external:
            if spec.module not in done:
                spec.options()(sub)
                done.add(spec.module)
            continue
        child = sub.add_parser(name, help=spec.help, description=spec.description or spec.help,
                               epilog=spec.epilog)
        if name in wanted:
            spec.options()(child)
    _set_formatter(parser)
    return parser


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


#: Names of the command modules that ``dperm.cli`` also answers to, loaded on first use
#: (``import dperm.cli`` imports no other dperm module).
_LAZY = {"ADULT_ENCODING_NAMES": "demo", "_make_model": "train"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
