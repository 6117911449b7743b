"""`dperm show` and `dperm predict` on the multiparty model file written by `dperm coordinate`.

The model file comes from the deployment's own writer (``flower_app.model_document``)
after a PSGD run of the deployment's ServerApp/ClientApp code on the in-process grid.
"""

from __future__ import annotations

import copy
import csv
import json

import numpy as np
import pytest

pytest.importorskip("flwr")

from dperm.cli import main  # noqa: E402
from dperm.exceptions import DataClippingWarning  # noqa: E402
from dperm.model_io import load_model  # noqa: E402
from dperm.multiparty import PSGDClassifier  # noqa: E402
from dperm.multiparty.flower import app as flower_app  # noqa: E402
from dperm.multiparty.flower.grid import InProcessGrid  # noqa: E402
from dperm.multiparty.model_file import UnknownRowRule, party_spec  # noqa: E402
from dperm.tabular import RawNumericColumn, TabularSpec  # noqa: E402

FEATURES = ["x0", "x1", "x2", "x3"]


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def coordinate_model(tmp_path_factory):
    """A model file as `dperm coordinate` writes it: 3 parties, 6 SecAgg+ rounds, R = 1."""
    folder = tmp_path_factory.mktemp("multiparty-model")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 4))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ np.array([2.0, -1.0, 0.5, 0.0]) + 0.2 * rng.normal(size=150) > 0, 1, 0)
    paths = []
    for k, (a, b) in enumerate([(0, 40), (40, 90), (90, 150)]):
        rows = [[repr(float(v)) for v in row] + [int(label)] for row, label in zip(X[a:b], y[a:b])]
        paths.append(write_csv(folder / f"shard{k}.csv", FEATURES + ["label"], rows))
    grid = InProcessGrid({node: flower_app.client_app for node in (11, 22, 33)},
                         {node: {"data-path": str(path), "party-name": f"bank-{k}", "max-epsilon": 6.0,
                                 "max-delta": 1e-5, "max-rounds": 6,
                                 "ledger-path": str(folder / f"ledger-{node}.json")}
                          for k, (node, path) in enumerate(zip((11, 22, 33), paths))})
    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=6,
                                              wait_seconds=1.0)
    result, parties, _, _ = flower_app.coordinate(grid, settings)
    document = flower_app.model_document(result, parties, settings)
    path = folder / "model.json"
    flower_app.write_json(path, document)
    return path, document


def test_show_prints_the_released_models_proven_guarantee_first(coordinate_model, capsys):
    path, document = coordinate_model
    assert main(["show", "--model", str(path)]) == 0
    out = capsys.readouterr().out
    assert "PSGDClassifier (multiparty, 3 parties: bank-0, bank-1, bank-2; engine flower_secaggplus_networked)" in out
    assert f"4 features {FEATURES}" in out
    assert "a row longer than R = 1 is scaled onto it" in out
    # the headline: w_T after 6 rounds of 1-DP sums is a post-processing of that view (basic composition
    # being the tighter here); 004 Thm 4.2's (1, 1e-05) is for the limit point and only in a note
    privacy = document["privacy"]
    assert (privacy["epsilon"], privacy["delta"]) == (privacy["coordinator_epsilon"], privacy["coordinator_delta"])
    assert (privacy["epsilon"], privacy["delta"]) == (6.0, 0.0)
    assert (privacy["target_epsilon"], privacy["target_delta"]) == (1.0, 1e-5)
    record_lines = out.split("Rows: ", 1)[1].splitlines()[1:]
    assert record_lines[0].startswith("Released model (w_T after 6 rounds): 6-DP (pure epsilon-differential")
    assert "Coordinator's view over 6 rounds: 6-DP (pure epsilon-differential privacy) by basic" in out
    assert "Note: 004 Thm 4.2: the point PSGD converges to" in out and "(1, 1e-05)-DP" in out
    assert "rows clipped" not in out and "rows_clipped" not in privacy
    model, spec, _ = load_model(path)
    assert isinstance(model, PSGDClassifier) and model.privacy_.to_dict() == document["privacy"]
    assert spec == TabularSpec(tuple(RawNumericColumn(f) for f in FEATURES), row_norm_mode="clip", data_norm=1.0)
    assert document["version"] == 4 and document["preprocessing"] == spec.to_dict()


def test_predict_uses_the_coefficients_by_feature_name_and_the_parties_row_rule(coordinate_model, tmp_path):
    path, document = coordinate_model
    w = np.array(document["coef"][0])
    rows = np.array([[0.3, -0.2, 0.1, 0.0], [-0.5, 0.4, 0.0, 0.2], [3.0, -1.0, 2.0, 0.5], [-2.0, 4.0, 1.0, 1.0]])
    # columns in another order, plus columns the model does not use
    header = ["id", "x3", "x1", "label", "x0", "x2"]
    cells = [[f"r{i}", str(x3), str(x1), "1", str(x0), str(x2)] for i, (x0, x1, x2, x3) in enumerate(rows.tolist())]
    data = write_csv(tmp_path / "new.csv", header, cells)
    out = tmp_path / "pred.csv"
    assert main(["predict", "--model", str(path), "--data", str(data), "--proba", "--out", str(out)]) == 0
    lines = out.read_text().strip().splitlines()
    assert lines[0] == "prediction,proba_-1,proba_1"
    predicted = [int(line.split(",")[0]) for line in lines[1:]]
    proba = np.array([[float(v) for v in line.split(",")[1:]] for line in lines[1:]])
    # the parties' rule, computed here independently: rows 2 and 3 (norm > 1) are scaled onto R = 1
    norms = np.linalg.norm(rows, axis=1)
    scaled = rows / np.maximum(1.0, norms)[:, None]
    scores = scaled @ w
    assert predicted == np.where(scores > 0, 1, -1).tolist()
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-scores)), rtol=1e-5)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)
    unscaled = 1 / (1 + np.exp(-(rows @ w)))
    assert np.abs(proba[2:, 1] - unscaled[2:]).max() > 1e-3  # the rule really changed the long rows


def test_predict_refuses_missing_and_non_numeric_columns(coordinate_model, tmp_path, capsys):
    path, _ = coordinate_model
    missing = write_csv(tmp_path / "missing.csv", ["x0", "x1", "x3"], [["0.1", "0.2", "0.3"]])
    assert main(["predict", "--model", str(path), "--data", str(missing)]) == 2
    assert "missing.csv: input is missing column(s) ['x2']" in capsys.readouterr().err
    text = write_csv(tmp_path / "text.csv", FEATURES, [["0.1", "?", "0.2", "0.3"]])
    assert main(["predict", "--model", str(path), "--data", str(text)]) == 2
    err = capsys.readouterr().err
    assert "text.csv: line 2, column 'x1': the value is missing" in err  # the header is line 1


def _set(document, dotted, value):
    target = document
    *parents, last = dotted.split(".")
    for key in parents:
        target = target[key]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value


@pytest.mark.parametrize("key, value, message", [
    ("coef", KeyError, r"missing keys \['coef'\]"),
    ("version", 5, "unsupported format 'dperm-multiparty-model' version 5"),
    ("coef", [[0.1, 0.2, 0.3]], r"'coef' has shape \(1, 3\); 4 features need \(1, 4\)"),
    ("coef", [[0.1, float("nan"), 0.3, 0.4]], "'coef' must be a finite"),
    ("features", ["x0", "x0", "x2", "x3"], "'features' must be a non-empty list of distinct"),
    ("classes", [0, 1], r"'classes' must be \[-1, 1\]"),
    ("params.loss", "hinge", "'params.loss' must be one of"),
    ("params.colour", "red", "Invalid parameter 'colour'"),
    ("privacy.epsilon", KeyError, r"'privacy' has missing fields \['epsilon'\]"),
    ("privacy.secure_sum", "flower", "'privacy.secure_sum' must be an object"),
    ("privacy.round_epsilon", "one", "'privacy.round_epsilon' must be of type float"),
    ("privacy.secure_sum.n_sums", 2.5, "'privacy.secure_sum.n_sums' must be of type int"),
    ("privacy.coordinator_epsilon", -1.0, "'privacy.coordinator_epsilon' must be a finite number >= 0"),
    ("privacy.n_parties", 4, r"'privacy' \(4 parties, logistic loss\) does not match"),
    ("preprocessing.data_norm", 2.0, "the row-norm bound differs"),
    ("preprocessing.columns", [{"name": "x0", "type": "raw_numeric"}], "'preprocessing' encodes features"),
    ("preprocessing.columns", [{"name": "x0", "type": "raw"}], "'preprocessing': columns.0. 'type' must be"),
    ("preprocessing", [], "'preprocessing' must be an object"),
])
def test_malformed_multiparty_files_get_a_clear_error(coordinate_model, tmp_path, capsys, key, value, message):
    _, document = coordinate_model
    bad = copy.deepcopy(document)
    _set(bad, key, value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match=f"malformed multiparty model file .*{message}"):
        load_model(path)
    assert main(["show", "--model", str(path)]) == 2
    assert "malformed multiparty model file" in capsys.readouterr().err


@pytest.mark.parametrize("version, entry", [
    (4, {"row_norm_mode": "standardize"}),  # a spec from a newer dperm
    (3, {"row_norm_mode": "standardize"}),
    (2, {"row_norm": "standardize", "data_norm": 1.0}),  # a version-2 entry
])
def test_an_unknown_row_rule_is_shown_but_refused_by_predict(coordinate_model, tmp_path, capsys, version, entry):
    _, document = coordinate_model
    other = copy.deepcopy(document)
    other["version"] = version
    other["preprocessing"] = {**other["preprocessing"], **entry} if version >= 3 else entry
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other), encoding="utf-8")
    assert main(["show", "--model", str(path)]) == 0
    out = capsys.readouterr().out
    assert "row rule 'standardize' (unknown to this dperm" in out and f"4 features {FEATURES}" in out
    assert load_model(path)[1] == UnknownRowRule(tuple(FEATURES), "standardize")
    data = write_csv(tmp_path / "new.csv", FEATURES, [["0.1", "0.2", "0.3", "0.4"]])
    assert main(["predict", "--model", str(path), "--data", str(data)]) == 2
    assert "cannot reproduce" in capsys.readouterr().err


def test_a_file_without_the_preprocessing_entry_gets_the_version_1_rule(coordinate_model, tmp_path):
    _, document = coordinate_model
    older = copy.deepcopy(document)
    del older["preprocessing"]
    path = tmp_path / "older.json"
    path.write_text(json.dumps(older), encoding="utf-8")
    _, spec, _ = load_model(path)
    assert spec == party_spec(FEATURES, 1.0)
    with pytest.warns(DataClippingWarning):
        X = spec.transform({name: ["3", "0", "0", "4"][i:i + 1] for i, name in enumerate(FEATURES)})
    np.testing.assert_allclose(X, [[0.6, 0.0, 0.0, 0.8]])


def test_a_version_2_file_with_the_old_preprocessing_entry_predicts_the_same(coordinate_model, tmp_path):
    path, document = coordinate_model
    older = copy.deepcopy(document)
    older["version"] = 2
    older["preprocessing"] = {"row_norm": "clip", "data_norm": 1.0}  # what dperm wrote before version 3
    old_path = tmp_path / "v2.json"
    old_path.write_text(json.dumps(older), encoding="utf-8")
    model, spec, _ = load_model(old_path)
    assert spec == party_spec(FEATURES, 1.0) and model.privacy_.to_dict() == document["privacy"]
    rows = [["0.3", "-0.2", "0.1", "0.0"], ["3.0", "-1.0", "2.0", "0.5"]]
    data = write_csv(tmp_path / "new.csv", FEATURES, rows)
    predictions = []
    for model_path in (path, old_path):
        out = tmp_path / "pred.csv"
        assert main(["predict", "--model", str(model_path), "--data", str(data), "--proba", "--out",
                     str(out)]) == 0  # clipped, silently: clipping is reported at fit only
        predictions.append(out.read_text())
    assert predictions[0] == predictions[1]
    older["preprocessing"]["data_norm"] = 2.0
    old_path.write_text(json.dumps(older), encoding="utf-8")
    with pytest.raises(ValueError, match="the row-norm bound differs"):
        load_model(old_path)


def test_a_version_1_file_is_read_without_its_row_count_and_with_the_proven_headline(coordinate_model, tmp_path,
                                                                                     capsys):
    _, document = coordinate_model
    older = copy.deepcopy(document)
    older["version"] = 1
    older["preprocessing"] = {"row_norm": "clip", "data_norm": 1.0}
    privacy = older["privacy"]
    privacy["rows_clipped"] = 2  # what version 1 stored: an un-noised count of private rows
    privacy["epsilon"], privacy["delta"] = privacy.pop("target_epsilon"), privacy.pop("target_delta")
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(older), encoding="utf-8")
    model, _, _ = load_model(path)
    record = model.privacy_
    assert (record.epsilon, record.delta, record.target_epsilon) == (6.0, 0.0, 1.0)
    assert "rows_clipped" not in record.to_dict() and "version-1 model file" in record.notes[-1]
    assert main(["show", "--model", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Released model (w_T after 6 rounds): 6-DP" in out and "rows clipped" not in out


# -- the collusion threshold (format version 4, issue 31) ---------------------------------------------


def test_a_file_states_its_collusion_threshold(coordinate_model):
    path, document = coordinate_model
    threshold = document["privacy"]["collusion_threshold"]
    assert document["params"]["collusion_threshold"] == threshold == 1  # dperm coordinate's default
    assert len(document["privacy"]["epsilon_by_colluders"]) == document["privacy"]["n_parties"]
    model, _, _ = load_model(path)
    assert model.collusion_threshold == model.privacy_.collusion_threshold == threshold


def test_a_file_written_before_the_threshold_loads_with_no_collusion_tolerance(coordinate_model, tmp_path, capsys):
    _, document = coordinate_model
    older = copy.deepcopy(document)
    older["version"] = 3
    del older["params"]["collusion_threshold"]
    for key in ("collusion_threshold", "threshold_epsilon", "threshold_delta", "epsilon_by_colluders"):
        del older["privacy"][key]
    path = tmp_path / "v3.json"
    path.write_text(json.dumps(older), encoding="utf-8")
    model, _, _ = load_model(path)
    record = model.privacy_
    assert model.collusion_threshold == record.collusion_threshold == 0 and record.epsilon_by_colluders == ()
    assert (record.threshold_epsilon, record.threshold_delta) == (record.epsilon, record.delta)
    assert "no collusion tolerance" in record.notes[-1]
    assert main(["show", "--model", str(path)]) == 0
    assert "Collusion: none tolerated (t = 0" in capsys.readouterr().out
    # a version-4 file must state it
    newer = copy.deepcopy(older)
    newer["version"] = 4
    newer["params"]["collusion_threshold"] = 0
    path.write_text(json.dumps(newer), encoding="utf-8")
    with pytest.raises(ValueError, match="missing fields .*collusion_threshold"):
        load_model(path)


def test_a_file_whose_params_and_record_disagree_on_the_threshold_is_refused(coordinate_model, tmp_path):
    _, document = coordinate_model
    bad = copy.deepcopy(document)
    bad["params"]["collusion_threshold"] = 0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match="'params.collusion_threshold' .0. differs"):
        load_model(path)
