"""Tests of the 004 Sec. 6 reproduction (``dperm reproduce rajkumar2012``)."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
from scipy import stats

from dperm.cli import main
from dperm.experiments import rajkumar2012 as rk

# -- data and splits -------------------------------------------------------------------


def test_uniform_ball_is_uniform_in_the_ball():
    points = rk.uniform_ball(4000, 10, np.random.default_rng(0))
    radii = np.linalg.norm(points, axis=1)
    assert radii.max() < 1.0
    # uniform in the ball <=> radius^d ~ U(0, 1) and direction uniform on the sphere
    assert stats.kstest(radii**10, "uniform").pvalue > 1e-3
    directions = points / radii[:, None]
    assert np.abs(directions.mean(axis=0)).max() < 5 / np.sqrt(4000)


def test_simulated_datasets_follow_the_paper():
    datasets = rk.simulated_datasets(n_datasets=2, seed=3)
    assert len(datasets) == 2
    for data in datasets:
        assert data["X_train"].shape == (1000, 10) and data["X_test"].shape == (1000, 10)
        assert np.linalg.norm(data["X_train"], axis=1).max() <= 1.0
        assert set(np.unique(data["y_train"])) == {-1.0, 1.0}
    again = rk.simulated_datasets(n_datasets=2, seed=3)
    assert np.array_equal(again[1]["X_test"], datasets[1]["X_test"])  # seeded
    assert not np.array_equal(datasets[0]["X_train"], datasets[1]["X_train"])


@pytest.mark.parametrize("fractions, n_rows, expected", [
    (rk.SKEWS[0], 1000, [200] * 5),
    (rk.SKEWS[2], 1000, [10, 290, 200, 250, 250]),
    (rk.SKEWS[2], 455, [4, 132, 91, 114, 114]),
    ([0.5, 0.5, 0.0], 10, [4, 5, 1]),  # every party keeps at least one row
])
def test_split_sizes(fractions, n_rows, expected):
    sizes = rk.split_sizes(fractions, n_rows)
    assert sizes == expected
    assert sum(sizes) == n_rows and min(sizes) >= 1


def test_random_splits_cover_every_row_once():
    for config in rk.split_configs():
        parts = rk.assign_parties(config, 455, np.random.default_rng(1))
        assert len(parts) == config["n_parties"]
        assert sorted(np.concatenate(parts).tolist()) == list(range(455))
    with pytest.raises(ValueError, match="fractions"):
        rk.split_sizes([-0.1, 1.1], 10)


def test_documented_ranges_are_the_published_table():
    from sklearn.datasets import load_breast_cancer

    table = [tuple(float(v) for v in line.split(":")[1].split())
             for line in load_breast_cancer().DESCR.splitlines()
             if re.match(r"^[a-z ()]+:\s+[0-9.]+\s+[0-9.]+\s*$", line)]
    assert table == list(rk.DOCUMENTED_RANGES)


@pytest.mark.parametrize("encoding", rk.ENCODINGS)
def test_breast_cancer_rows_are_unit_norm_and_encoded_per_record(encoding):
    from sklearn.datasets import load_breast_cancer

    X = load_breast_cancer().data
    rows, _ = rk.encode_breast_cancer(X, encoding)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    # per record: a row's encoding does not depend on the other rows (no column statistics)
    for index in (0, 17, 568):
        alone, _ = rk.encode_breast_cancer(X[index:index + 1], encoding)
        assert np.allclose(alone[0], rows[index])
    shifted, _ = rk.encode_breast_cancer(X[:50] * 1.5, encoding)  # other data, same map
    assert not np.allclose(shifted[:1], rows[:1])


def test_breast_cancer_folds_follow_the_paper():
    folds, info = rk.breast_cancer_folds(seed=0)
    assert len(folds) == 5
    assert sorted(len(f["y_test"]) for f in folds) == [113, 114, 114, 114, 114]
    assert info["n_rows"] == 569 and info["n_features"] == 30 and info["max_row_norm"] <= 1.0 + 1e-12
    with pytest.raises(ValueError, match="encoding"):
        rk.encode_breast_cancer(np.ones((2, 30)), "zscore")


# -- the algorithms of one cell --------------------------------------------------------


def test_psgd_run_converges_to_its_paired_gop_as_rounds_grow():
    data = rk.simulated_datasets(n_datasets=1, seed=5)[0]
    parts = rk.assign_parties(rk.split_configs()[3], 1000, np.random.default_rng(2))  # skew 1
    distances = [rk.run_psgd(data, parts, 1.0, 0.1, rounds, np.random.default_rng(7))["distance_to_gop"]
                 for rounds in (50, 1500)]
    assert distances[1] < distances[0]
    assert distances[1] < 0.05


def test_coordinator_dp_run_has_no_gop_pairing():
    data = rk.simulated_datasets(n_datasets=1, seed=5)[0]
    parts = rk.assign_parties(rk.split_configs()[0], 1000, np.random.default_rng(2))
    out = rk.run_psgd(data, parts, 0.5, 0.1, 50, np.random.default_rng(7), coordinator_dp=True)
    assert set(out) == {"psgd"}  # no GOP pairing, and no clipping count: not revealed under coordinator_dp
    with pytest.raises(ValueError, match="engine"):
        rk.run_psgd(data, parts, 0.5, 0.1, 5, np.random.default_rng(7), engine="carrier pigeon")


# -- claims: computed, and able to fail ------------------------------------------------


def fake_summary(psgd_offset=0.0, la_slope=0.05, psgd_k_slope=0.0, se=0.002):
    """A summary with GOP at 0.30, PSGD = GOP + offset (+ slope in K), LA growing with K and skew."""
    entries = []
    for eps in rk.EPSILONS:
        for index, config in enumerate(rk.split_configs()):
            position = index % 3
            psgd = 0.30 + psgd_offset + (psgd_k_slope * position if config["panel"] == "parties" else 0.0)
            base = {"figure": "1", "config": config["name"], "panel": config["panel"],
                    "n_parties": config["n_parties"], "epsilon": eps, "alpha": 1.0, "n_min_mean": 10.0,
                    "std": se * 5, "se": se, "n": 25}
            entries.append({**base, "method": "gop", "mean": 0.30})
            entries.append({**base, "method": "psgd", "mean": psgd, "minus_gop_mean": psgd - 0.30,
                            "minus_gop_se": se / 4, "distance_to_gop_mean": 0.01, "coordinates_clipped": 0})
            entries.append({**base, "method": "psgd_coordinator_dp", "mean": 0.1})
            entries.append({**base, "method": "local_aggregation", "mean": 0.35 + la_slope * position})
    return entries


def test_claims_pass_when_the_numbers_agree_with_the_paper():
    claims = rk.check_claims(fake_summary(), "1")
    assert {c["claim"] for c in claims} == set(rk.CLAIMS)
    assert len(claims) == len(rk.CLAIMS) * len(rk.EPSILONS)
    assert all(c["pass"] for c in claims), [c for c in claims if not c["pass"]]
    target = rk.targets(fake_summary(), "1")
    assert target["psgd_within_1pp_of_gop_everywhere"] and target["psgd_no_worse_than_la_everywhere"]


def test_claims_miss_when_the_numbers_disagree():
    far = {c["claim"]: c["pass"] for c in rk.check_claims(fake_summary(psgd_offset=0.03), "1")}
    assert not far["psgd_close_to_gop"]
    flat_la = {c["claim"]: c["pass"] for c in rk.check_claims(fake_summary(la_slope=0.0), "1")}
    assert not flat_la["la_degrades_with_k"] and not flat_la["la_degrades_with_skew"]
    worse = {c["claim"]: c["pass"] for c in rk.check_claims(fake_summary(psgd_offset=0.1), "1")}
    assert not worse["psgd_beats_la"]
    sloped = {c["claim"]: c["pass"] for c in rk.check_claims(fake_summary(psgd_k_slope=0.05), "1")}
    assert not sloped["psgd_independent_of_k"] and sloped["psgd_independent_of_skew"]
    target = rk.targets(fake_summary(psgd_offset=0.1), "1")
    assert not target["psgd_within_1pp_of_gop_everywhere"] and not target["psgd_no_worse_than_la_everywhere"]


# -- the driver and the command line ---------------------------------------------------


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rajkumar2012")
    results = rk.run(out, figures=("1", "2"), runs=1, n_rounds=20, n_datasets=2, n_jobs=1, progress=None)
    return out, results


@pytest.mark.slow  # the smoke_run fixture: both figures, 20 rounds (~3.5 min on a loaded 2-core machine)
def test_smoke_run_writes_every_file(smoke_run):
    out, results = smoke_run
    for name in ("report.md", "results.json", "targets.json", "figure1.png", "figure2.png",
                 "figure1_draws.csv", "figure1_summary.csv", "figure2_draws.csv", "figure2_summary.csv"):
        assert (out / name).stat().st_size > 0, name
    with open(out / "figure1_draws.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    # 2 data sets x 6 splits x 2 epsilons x 1 draw x 4 algorithms
    assert len(rows) == 2 * 6 * 2 * 1 * 4
    assert {row["method"] for row in rows} == {"gop", "psgd", "psgd_coordinator_dp", "local_aggregation"}
    assert all(0.0 <= float(row["error"]) <= 1.0 for row in rows)
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert saved["seed"] == 0 and saved["parts"]["figure2"]["data"]["encoding"] == "documented_ranges"
    assert saved["parts"]["figure1"]["n_rounds"] == 20
    target = json.loads((out / "targets.json").read_text(encoding="utf-8"))
    assert "under_2_minutes" in target["figure2"] and len(target["figure1"]["cells"]) == 12


@pytest.mark.slow  # the smoke_run fixture, as above
def test_smoke_report_states_every_claim_with_a_verdict(smoke_run):
    out, results = smoke_run
    report = (out / "report.md").read_text(encoding="utf-8")
    for text in rk.CLAIMS.values():
        assert report.count(text) == 2 * len(rk.EPSILONS)  # both figures, both epsilons
    verdicts = re.findall(r"\| (PASS|MISS) \|", report)
    assert len(verdicts) == 2 * len(rk.CLAIMS) * len(rk.EPSILONS)
    for part in results["parts"].values():
        for claim in part["claims"]:
            assert ("PASS" if claim["pass"] else "MISS") in report
    assert "figure1.png" in report and "documented_ranges" in report


@pytest.mark.slow  # two figure-2 runs (~4.5 min on a loaded 2-core machine)
def test_seeded_runs_are_reproducible(tmp_path):
    first = rk.run(tmp_path / "a", figures=("2",), runs=1, n_rounds=10, n_datasets=2, n_jobs=1, progress=None)
    second = rk.run(tmp_path / "b", figures=("2",), runs=1, n_rounds=10, n_datasets=2, n_jobs=1, progress=None)
    errors = [[row["error"] for row in r["parts"]["figure2"]["draws"]] for r in (first, second)]
    assert errors[0] == errors[1]
    with pytest.raises(ValueError, match="figures"):
        rk.run(tmp_path / "c", figures=("3",))


def test_cli_round_trip(tmp_path, capsys):
    out = tmp_path / "cli"
    code = main(["reproduce", "rajkumar2012", "--figure2", "--runs", "1", "--rounds", "10", "--datasets", "2",
                 "--jobs", "1", "--cancer-encoding", "per_record", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "figure2:" in printed and "claim checks PASS" in printed and "report.md" in printed
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert list(saved["parts"]) == ["figure2"] and saved["runs"] == 1
    assert saved["parts"]["figure2"]["data"]["encoding"] == "per_record"
    assert saved["parts"]["figure2"]["data"]["n_features"] == 31  # the intercept feature


def test_cli_keeps_chaudhuri2011_defaults(monkeypatch, tmp_path):
    from dperm.experiments import chaudhuri2011

    seen = {}

    def fake_run(out_dir, **kwargs):
        seen.update(kwargs)
        return {"seconds": 0.0}

    monkeypatch.setattr(chaudhuri2011, "run", fake_run)
    assert main(["reproduce", "chaudhuri2011", "--table1", "--out", str(tmp_path)]) == 0
    assert seen["runs"] == 50 and seen["table1"] and not seen["table2"]
