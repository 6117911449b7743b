"""The learning-rate experiment (000 Thm 4, Sec. 5; 002 Thm 3): a tiny run, the files and the slopes."""

import argparse
import csv
import json
import math

import numpy as np
import pytest

from dperm.experiments.learning_rates import (
    best_linear_hinge_risk,
    conditional_hinge_risk,
    fit_log_log_slope,
    make_test_sample,
    run_learning_rates,
    run_learning_rates_command,
    save_results,
)
from dperm.experiments.options import add_learning_rates_subparser


@pytest.fixture(scope="module")
def tiny_results():
    return run_learning_rates(sizes=[300, 600, 1200], n_seeds=1, n_test=1000, n_jobs=1, progress=None)


def test_tiny_run_writes_files_with_finite_slopes(tiny_results, tmp_path):
    paths = save_results(tiny_results, tmp_path)
    with open(paths["csv"], newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 3  # two tasks, three sizes, one seed
    document = json.loads(paths["json"].read_text(encoding="utf-8"))  # strict JSON: no NaN
    for task in ("least_squares", "svm"):
        summary = document["summary"][task]
        assert math.isfinite(summary["fitted_slope"])
        assert summary["theoretical_slope"] == pytest.approx(-1.0 / 3.0)
        assert summary["verdict"] in ("matches", "faster", "slower")
        assert "theoretical" in summary["reason"]
    assert paths["png"] is not None and paths["png"].stat().st_size > 10_000


def test_every_excess_risk_is_non_negative(tiny_results):
    for row in tiny_results["rows"]:
        assert row["excess_private"] >= 0.0
        assert row["excess_nonprivate"] >= 0.0


def test_theory_parameter_choice_is_used(tiny_results):
    """000 Thm 4 / 002 Thm 3 with r = beta = 1: epsilon = lambda = m^(-1/3), alpha = 2 lambda (note 7)."""
    for row in tiny_results["rows"]:
        assert row["epsilon"] == pytest.approx(row["m"] ** (-1.0 / 3.0))
        assert row["lam"] == pytest.approx(row["m"] ** (-1.0 / 3.0))
        assert row["alpha"] == pytest.approx(2.0 * row["lam"])


def test_fit_log_log_slope_recovers_a_power_law():
    sizes = [100, 1000, 10000]
    slope, intercept = fit_log_log_slope(sizes, [3.0 * m ** -0.4 for m in sizes])
    assert slope == pytest.approx(-0.4)
    assert intercept == pytest.approx(math.log(3.0))
    assert math.isnan(fit_log_log_slope(sizes, [1.0, -1.0, 0.5])[0])


def test_best_linear_hinge_risk_is_below_any_linear_function():
    test = make_test_sample(2000, 2, seed=1)
    reference = best_linear_hinge_risk(test["X"], test["eta"])
    rng = np.random.default_rng(0)
    for _ in range(20):
        w = rng.normal(scale=3.0, size=2)
        assert reference <= conditional_hinge_risk(test["X"] @ w, test["eta"]) + 1e-4


def test_subparser_hook_runs_the_command(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="dperm")
    add_learning_rates_subparser(parser.add_subparsers(dest="command"), func=run_learning_rates_command)
    args = parser.parse_args(["learning-rates", "--sizes", "300", "600", "--seeds", "1", "--n-test",
                              "1000", "--jobs", "1", "--out", str(tmp_path / "out")])
    assert args.func(args) == 0
    assert "verdict" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "learning_rates.csv", "learning_rates.json", "learning_rates.png"]


def test_a_single_size_is_rejected():
    with pytest.raises(ValueError, match="at least two distinct sizes"):
        run_learning_rates(sizes=[500], n_seeds=1, n_test=1000, n_jobs=1, progress=None)


def test_the_options_module_imports_no_experiment():
    """options <-> learning_rates was a file-level circle closed by a function-level import (issue 29):
    the import-free options module now imports no dperm module at all, at any level."""
    import ast
    import inspect

    from dperm.experiments import options

    tree = ast.parse(inspect.getsource(options))
    imported = [node.module if isinstance(node, ast.ImportFrom) else alias.name
                for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names]
    assert not [name for name in imported if name and name.startswith("dperm")]
