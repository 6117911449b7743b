"""benchmarks/private_pipeline.py runs end to end in its quick mode on a tiny subset."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def pipeline(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import private_pipeline

    yield private_pipeline
    for name in ("private_pipeline", "peers_logistic", "_dpgd"):
        sys.modules.pop(name, None)


@pytest.mark.slow  # ~20 s on a quiet machine (two cores)
def test_quick_mode_writes_json_table_and_plot(pipeline, tmp_path):
    out = tmp_path / "pp.json"
    pipeline.main(["--quick", "--datasets", "adult", "--epsilons", "1", "--max-train", "400",
                   "--max-test", "400", "--methods", "default", "test_tuned", "random_stopping",
                   "diffprivlib", "dpgd", "--learning-curve-n", "200", "--out", str(out)])
    result = json.loads(out.read_text())
    cells = {(c["method"], c["delta"]): c for c in result["datasets"]["adult"]["cells"]}
    assert result["datasets"]["adult"]["n_train"] == 400
    for key in [("default", 0.0), ("test_tuned", 0.0), ("random_stopping", 0.0), ("default", 1e-5),
                ("dpgd", 1e-5)]:
        cell = cells[key]
        assert cell["status"] == "ok" and cell["draws"] == 2 and len(cell["errors"]) == 2
        assert 0.0 <= cell["mean"] <= 1.0 and cell["seconds"] > 0 and len(cell["loadavg_before"]) == 3
        assert cell["cpu_seconds"] >= 0
    assert not cells[("test_tuned", 0.0)]["private"] and cells[("default", 0.0)]["private"]
    assert cells[("random_stopping", 1e-5)]["status"].startswith("not applicable")
    assert cells[("dpgd", 0.0)]["status"].startswith("not applicable")
    expected = "ok" if pipeline.diffprivlib_version() else pipeline.DIFFPRIVLIB_MISSING
    assert cells[("diffprivlib", 0.0)]["status"] == expected
    curve = {(c["n"], c["epsilon"], c["delta"]) for c in result["learning_curve"]}
    assert curve == {(n, e, d) for n in (200, 400) for e in (0.1, 1.0) for d in (0.0, 1e-5)}
    assert len(result["git_commit"]) == 40 or result["git_commit"] == "unknown"
    assert out.with_suffix(".png").stat().st_size > 0 and out.with_suffix(".md").read_text().count("|") > 10
    assert (tmp_path / "pp_learning_curve.png").exists()
    assert set(result["runtime_estimate_full_seconds"]["adult"]) >= {"default", "dpgd", "learning_curve", "total"}
    assert "dpgd" in result["cpu_estimate_full_seconds"]["adult"]
    pld_epsilon = cells[("dpgd", 1e-5)]["dp_accounting_pld_epsilon"]
    assert pld_epsilon is None or pld_epsilon == pytest.approx(1.0, rel=1e-2)


def test_jobs_do_not_change_the_draws(pipeline):
    data = pipeline.subsample(pipeline.load_split("adult"), 300, 300)
    options = {"draws": 2, "stopping_mean": 3.0}
    cells = [pipeline.run_cell("adult", data, 1.0, 1e-5, "dpgd", {**options, "jobs": jobs})
             for jobs in (1, 2)]
    assert cells[0]["errors"] == cells[1]["errors"]
    assert cells[0]["n_steps"] == cells[1]["n_steps"]


def test_merge_replaces_only_the_rerun_cells(pipeline):
    """--merge: a re-run cell replaces the stored one (and records its commit); the rest stay."""
    def cell(eps, delta, method, mean):
        return {"epsilon": eps, "delta": delta, "method": method, "mean": mean}

    old = {"datasets": {"adult": {"n_train": 10, "cells": [cell(0.1, 0.0, "default", 0.3),
                                                           cell(0.1, 0.0, "diffprivlib", 0.4),
                                                           cell(1.0, 0.0, "default", 0.2)]}},
           "learning_curve": ["old"]}
    new = {"created": "now", "git_commit": "abc", "options": {}, "runtime_seconds": 1.0,
           "datasets": {"adult": {"n_train": 10, "cells": [cell(0.1, 0.0, "default", 0.25),
                                                           cell(0.1, 1e-5, "default", 0.22)]}}}
    merged = pipeline.merge(old, new)
    cells = {(c["epsilon"], c["delta"], c["method"]): c for c in merged["datasets"]["adult"]["cells"]}
    assert cells[(0.1, 0.0, "default")]["mean"] == 0.25 and cells[(0.1, 0.0, "default")]["git_commit"] == "abc"
    assert cells[(0.1, 0.0, "diffprivlib")]["mean"] == 0.4 and "git_commit" not in cells[(0.1, 0.0, "diffprivlib")]
    assert cells[(1.0, 0.0, "default")]["mean"] == 0.2 and cells[(0.1, 1e-5, "default")]["mean"] == 0.22
    assert len(cells) == 4 and merged["learning_curve"] == ["old"] and merged["updates"][0]["git_commit"] == "abc"
