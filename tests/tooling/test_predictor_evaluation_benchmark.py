"""benchmarks/predictor_evaluation.py (issue 30, finding 4): its scores against the truth, its target
mapping and one small run on synthetic tables (never an evaluation or fitting table)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import predictor_evaluation

    yield predictor_evaluation
    for name in ("predictor_evaluation", "_tables"):
        sys.modules.pop(name, None)


def _regression_table(bench, n=120):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 10, n), rng.uniform(-1, 1, n), rng.integers(0, 3, n)])
    y = 50.0 + 20.0 * np.sin(X[:, 0] / 3.0) + 10.0 * X[:, 1] + rng.normal(scale=2.0, size=n)
    return bench._tables.Table("tiny_reg", "regression", X, y, np.array([0.0, -1.0]), np.array([10.0, 1.0]),
                               {2: [0, 1, 2]}, y_range=(float(y.min()), float(y.max())))


def _binary_table(bench, n=120):
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.uniform(0, 10, n), rng.uniform(-1, 1, n)])
    y = ((X[:, 1] + 1) / 2 > X[:, 0] / 10).astype(int)  # which scaled column is larger: kept by the row step
    return bench._tables.Table("tiny_bin", "binary", X, y, np.array([0.0, -1.0]), np.array([10.0, 1.0]),
                               {}, labels=(0, 1))


def test_target_map_is_the_public_range_onto_minus_one_one_and_back(bench):
    y = np.array([326.0, 1000.0, 18823.0])
    centred = bench.centre_target(y, (326.0, 18823.0))
    assert centred[0] == -1.0 and centred[-1] == 1.0 and -1 < centred[1] < 0
    np.testing.assert_allclose(bench.uncentre_target(centred, (326.0, 18823.0)), y, rtol=1e-12)
    assert bench.uncentre_target(0.0, (326.0, 18823.0)) == pytest.approx((326.0 + 18823.0) / 2)


def test_scores_against_the_truth(bench):
    y = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    quarter = 0.25 * y + 7.0  # answers shrunk to a quarter of the truth, shifted
    assert bench.slope_on_truth(y, quarter) == pytest.approx(0.25)
    assert bench.slope_on_truth(y, 4.0 * y) == pytest.approx(4.0)  # answers on truth, not truth on answers
    perfect, mean = bench.regression_scores(y, y), bench.regression_scores(y, np.full(5, y.mean()))
    assert perfect == {"r2": 1.0, "slope": pytest.approx(1.0), "rmse": 0.0}
    assert mean["r2"] == pytest.approx(0.0) and mean["slope"] == pytest.approx(0.0, abs=1e-12)
    assert mean["rmse"] == pytest.approx(np.std(y))
    assert bench.regression_scores(y, quarter)["r2"] < 0  # shrunk and shifted: worse than the mean
    assert bench.binary_scores(np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0])) == {"accuracy": 0.75}


def test_one_small_run_scores_every_estimator_against_the_truth(bench):
    from dperm.privacy.alpha import prediction_default_alpha

    table = _regression_table(bench)
    cells = bench.run_table(table, epsilons=(1.0,), n_folds=2, draws=2, log=lambda *a, **k: None)
    by = {(c["estimator"], c["epsilon"]): c for c in cells}
    expected = {("sklearn", None), ("constant", None), ("exact_0.1_centred", None), ("exact_0.1_raw", None)}
    expected |= {(f"{e}_{t}", 1.0) for e in ("auto", "alpha_0.1", "exact_auto") for t in ("centred", "raw")}
    assert set(by) == expected
    assert by[("auto_centred", 1.0)]["count"] == 4 and by[("exact_auto_centred", 1.0)]["count"] == 2
    # the default's alpha is the public rule at the training fold's m (60 rows) and eps; 0.1 is 0.1
    assert by[("auto_centred", 1.0)]["alpha_mean"] == pytest.approx(prediction_default_alpha(60, 1.0, "squared"))
    assert by[("alpha_0.1_raw", 1.0)]["alpha_mean"] == 0.1
    # the constant is the training fold's mean: R^2 at most 0 on held-out data, slope 0
    assert -0.1 < by[("constant", None)]["r2"]["mean"] <= 0 and by[("constant", None)]["slope"]["mean"] == pytest.approx(0, abs=1e-12)
    # answers are in the target's units: the exact centred model's RMSE is below the target's spread
    for estimator in ("exact_auto_centred", "auto_centred"):
        assert by[(estimator, 1.0)]["rmse"]["mean"] < np.std(table.y) * 1.5, estimator
    # the raw target (y_bound = max|y|) shrinks toward 0, far from these targets (about 57): worse
    assert by[("exact_auto_raw", 1.0)]["rmse"]["mean"] > 2 * by[("exact_auto_centred", 1.0)]["rmse"]["mean"]
    # noisy answers are scored draw by draw: two draws of one fold differ
    values = by[("alpha_0.1_centred", 1.0)]["r2"]["values"]
    assert values[0] != values[1]
    summary = bench.compare(cells)
    assert summary["regression_centred"]["cells"] == 1 and "regression_raw" in summary


def test_raw_target_is_fitted_in_its_own_units_with_y_bound_max_abs(bench):
    table = _regression_table(bench)
    X = bench._tables.encode(table)["unit"]
    answers, exact, alpha, solver, _ = bench.predictor_answers(table, X[:80], table.y[:80], X[80:], alpha=0.5,
                                                                epsilon=1.0, draws=2, seed=0, target="raw")
    assert alpha == 0.5 and solver == "exact" and len(answers) == 2
    # shrunk toward 0 but in the target's units (y is about 36-81), within [-max|y|, max|y|]
    assert 1.0 < np.max(np.abs(exact)) <= max(abs(v) for v in table.y_range)
    centred, exact_c, *_ = bench.predictor_answers(table, X[:80], table.y[:80], X[80:], alpha=0.5, epsilon=1.0,
                                                   draws=1, seed=0, target="centred")
    assert np.all((exact_c >= table.y_range[0]) & (exact_c <= table.y_range[1]))  # mapped back into the range
    assert np.mean(np.abs(exact_c - table.y[80:])) < np.mean(np.abs(exact - table.y[80:]))


def test_binary_run_answers_labels_and_the_majority(bench):
    table = _binary_table(bench)
    cells = bench.run_table(table, epsilons=(3.0,), n_folds=2, draws=2, log=lambda *a, **k: None)
    by = {(c["estimator"], c["epsilon"]): c for c in cells}
    assert {("auto", 3.0), ("alpha_0.1", 3.0), ("exact_auto", 3.0), ("exact_0.1", None)} <= set(by)
    majority = max(np.mean(table.y), 1 - np.mean(table.y))
    assert by[("constant", None)]["accuracy"]["mean"] == pytest.approx(majority, abs=0.02)
    assert all(0 <= v <= 1 for c in cells for v in c["accuracy"]["values"])
    # the noise-free models answer labels (not raw values): on this clear signal, well above chance
    assert by[("exact_0.1", None)]["accuracy"]["mean"] > 0.7
    md = bench.markdown({"protocol": "test", "runs": [{"git_head": "0" * 40}], "cells": cells,
                         "summary": bench.compare(cells)})
    assert "| tiny_bin (120) | 3 |" in md
