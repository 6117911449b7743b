"""Command-line tool: train/predict round trip, demo smoke run, model-file checks."""

import json

import numpy as np
import pytest

from dperm import PrivacyLeakWarning
from dperm.cli import main
from dperm.model_io import load_model


@pytest.fixture
def csv_files(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    age = rng.integers(18, 80, n)
    color = rng.choice(["red", "green", "blue"], n)
    score = rng.normal(50, 10, n)
    signal = 0.08 * (age - 50) + 1.5 * (color == "red") + 0.1 * (score - 50)
    label = np.where(signal + 0.5 * rng.normal(size=n) > 0.3, "yes", "no")
    train = tmp_path / "train.csv"
    lines = ["age,color,score,label"] + [f"{a},{c},{s:.3f},{lab}" for a, c, s, lab in zip(age, color, score, label)]
    train.write_text("\n".join(lines) + "\n")
    new = tmp_path / "new.csv"
    new.write_text("age,color,score\n30,red,60\n70,blue,40\n45,purple,50\n")
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps({"age": [0, 120], "color": ["red", "green", "blue"], "score": [0, 100]}))
    return tmp_path, train, new, bounds


def test_train_predict_round_trip(csv_files, capsys):
    folder, train, new, bounds = csv_files
    model_path = folder / "model.json"
    code = main(["train", "--data", str(train), "--target", "label", "--categorical", "color",
                 "--bounds", str(bounds), "--epsilon", "2", "--alpha", "0.001",
                 "--classes", "yes, no", "--random-state", "1", "--out", str(model_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "trained on 400 rows (every row of the file; none is dropped), 5 features" in out
    assert "2-DP" in out and "NOT covered" not in out and "Label set: public (given)." in out
    document = json.loads(model_path.read_text())
    assert document["privacy"]["epsilon"] == 2.0 and document["schema_from_data"] == []
    assert document["params"]["classes"] == ["no", "yes"] and document["classes"] == ["no", "yes"]
    assert document["privacy"]["label_set_public"] is True
    assert document["params"]["random_state"] is None  # the seed is never stored
    model, spec, _ = load_model(model_path)
    assert spec.feature_names() == ["age", "color=red", "color=green", "color=blue", "score"]

    out_csv = folder / "pred.csv"
    assert main(["predict", "--model", str(model_path), "--data", str(new), "--proba",
                 "--out", str(out_csv)]) == 0
    rows = out_csv.read_text().strip().splitlines()
    assert rows[0] == "prediction,proba_no,proba_yes"
    assert len(rows) == 4
    probabilities = np.array([[float(v) for v in row.split(",")[1:]] for row in rows[1:]])
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)

    # predictions from the file equal the in-memory model's
    X = spec.transform({"age": ["30", "70", "45"], "color": ["red", "blue", "purple"],
                        "score": ["60", "40", "50"]})
    assert [r.split(",")[0] for r in rows[1:]] == model.predict(X).tolist()

    assert main(["show", "--model", str(model_path)]) == 0
    assert "2-DP" in capsys.readouterr().out


def test_training_rows_never_reach_the_model_file(csv_files):
    folder, train, _, bounds = csv_files
    model_path = folder / "model.json"
    main(["train", "--data", str(train), "--target", "label", "--categorical", "color",
          "--bounds", str(bounds), "--epsilon", "1", "--out", str(model_path)])
    text = model_path.read_text()
    first_row_score = train.read_text().splitlines()[1].split(",")[2]
    assert first_row_score not in text


def test_data_derived_bounds_warn_and_are_recorded(csv_files, capsys):
    folder, train, _, _ = csv_files
    model_path = folder / "model.json"
    with pytest.warns(PrivacyLeakWarning, match="taken from the private data"):
        code = main(["train", "--data", str(train), "--target", "label", "--categorical", "color",
                     "--epsilon", "1", "--model", "hinge", "--mechanism", "output",
                     "--out", str(model_path)])
    assert code == 0
    assert "NOT covered" in capsys.readouterr().out
    assert json.loads(model_path.read_text())["schema_from_data"] == ["age", "color", "score"]


def test_classes_set_the_label_set_and_split(csv_files, capsys):
    folder, train, _, bounds = csv_files
    model_path = folder / "model.json"
    code = main(["train", "--data", str(train), "--target", "label", "--categorical", "color",
                 "--bounds", str(bounds), "--epsilon", "3", "--classes", "no,yes,maybe",
                 "--random-state", "0", "--out", str(model_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "classes ['maybe', 'no', 'yes']" in out
    model, _, document = load_model(model_path)
    assert model.coef_.shape == (3, 5)
    # multi_class="auto" (issue 30): one 3-class multinomial model at the whole epsilon, the
    # choice stated; one-vs-rest would split it three ways
    assert "multi_class='multinomial'" in out and document["privacy"]["epsilon_per_problem"] == 3.0


@pytest.mark.parametrize(
    "classes,message",
    [
        ("no,maybe", "dperm: error: target column 'label' of "),
        ("no,maybe", "has label 'yes' not in --classes=['maybe', 'no']; add it to --classes"),
        ("no,,yes", "--classes 'no,,yes' has an empty label"),
        ("no,no,yes", "--classes repeats a label"),
        ("yes", "--classes must list at least two labels"),
    ],
)
def test_bad_classes_are_a_one_line_error(csv_files, capsys, classes, message):
    folder, train, _, bounds = csv_files
    model_path = folder / "model.json"
    code = main(["train", "--data", str(train), "--target", "label", "--categorical", "color",
                 "--bounds", str(bounds), "--epsilon", "1", "--classes", classes,
                 "--out", str(model_path)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
    assert not model_path.exists()


def test_without_classes_the_label_set_is_warned_and_recorded(csv_files, capsys):
    folder, train, _, bounds = csv_files
    model_path = folder / "model.json"
    with pytest.warns(PrivacyLeakWarning, match="classes=None: the label set"):
        code = main(["train", "--data", str(train), "--target", "label", "--categorical", "color",
                     "--bounds", str(bounds), "--epsilon", "1", "--out", str(model_path)])
    assert code == 0
    assert "Label set: read from the training data; NOT covered" in capsys.readouterr().out
    document = json.loads(model_path.read_text())
    assert document["params"]["classes"] is None and document["privacy"]["label_set_public"] is False
    assert main(["show", "--model", str(model_path)]) == 0
    assert "Label set: read from the training data" in capsys.readouterr().out


@pytest.mark.parametrize(
    "content,message",
    [
        ('{"format": "dperm-model"', "not valid JSON"),
        ("[1, 2]", "top level must be a JSON object"),
        ('{"format": "dperm-model"}', "missing keys"),
    ],
)
def test_malformed_model_file_gets_a_clear_error(csv_files, capsys, content, message):
    folder, _, new, _ = csv_files
    bad = folder / "bad.json"
    bad.write_text(content)
    assert main(["predict", "--model", str(bad), "--data", str(new)]) == 2
    assert message in capsys.readouterr().err


def test_tampered_model_file_shapes_are_checked(csv_files, capsys):
    folder, train, new, bounds = csv_files
    model_path = folder / "model.json"
    main(["train", "--data", str(train), "--target", "label", "--categorical", "color",
          "--bounds", str(bounds), "--epsilon", "1", "--out", str(model_path)])
    document = json.loads(model_path.read_text())
    document["coef"][0] = document["coef"][0][:-1]
    model_path.write_text(json.dumps(document))
    assert main(["predict", "--model", str(model_path), "--data", str(new)]) == 2
    assert "'coef' has shape" in capsys.readouterr().err
    document["coef"] = [["a"]]
    model_path.write_text(json.dumps(document))
    assert main(["predict", "--model", str(model_path), "--data", str(new)]) == 2
    assert "malformed model file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--epsilon", "0"], "'epsilon' parameter"),
        (["--epsilon", "1", "--mechanism", "gaussian_objective"], "needs delta > 0"),
        (["--epsilon", "1", "--model", "hinge", "--mechanism", "objective"], "mechanism='output'"),
        (["--epsilon", "1", "--delta", "1.5", "--mechanism", "gaussian_objective"], "'delta' parameter"),
    ],
)
def test_bad_training_options(csv_files, capsys, extra, message):
    folder, train, _, bounds = csv_files
    code = main(["train", "--data", str(train), "--target", "label", "--categorical", "color",
                 "--bounds", str(bounds), "--out", str(folder / "m.json")] + extra)
    assert code == 2
    assert message in capsys.readouterr().err


def test_missing_target_and_missing_file(csv_files, capsys):
    folder, train, _, _ = csv_files
    assert main(["train", "--data", str(train), "--target", "income", "--epsilon", "1",
                 "--out", str(folder / "m.json")]) == 2
    assert "target column 'income'" in capsys.readouterr().err
    assert main(["train", "--data", str(folder / "nope.csv"), "--target", "label",
                 "--epsilon", "1", "--out", str(folder / "m.json")]) == 2
    assert "nope.csv" in capsys.readouterr().err


# -- missing values: never a dropped row, n is the file's row count -------------------
def _replace_line(path, number, line, out):
    """Copy of the CSV at ``path`` with data row ``number`` (1-based) replaced: a neighbour."""
    lines = path.read_text().splitlines()
    lines[number] = line
    out.write_text("\n".join(lines) + "\n")
    return out


def _train(data, bounds, out, *extra):
    return main(["train", "--data", str(data), "--target", "label", "--categorical", "color",
                 "--bounds", str(bounds), "--epsilon", "1", "--random-state", "0",
                 "--out", str(out), *extra])


def _one_line_error(capsys):
    err = capsys.readouterr().err
    assert err.startswith("dperm: error: ") and err.count("\n") == 1, err
    return err


def test_missing_numeric_cell_is_a_one_line_error_naming_file_column_and_row(csv_files, capsys):
    folder, train, _, bounds = csv_files
    data = _replace_line(train, 7, "?,red,50,yes", folder / "holey.csv")
    assert _train(data, bounds, folder / "m.json") == 2
    err = _one_line_error(capsys)
    assert f"{data}: line 8, column 'age'" in err  # data row 7 is line 8 (the header is line 1)
    assert '"fill"' in err and "--bounds" in err
    assert not (folder / "m.json").exists()


def test_public_fill_keeps_every_row_and_n_is_the_row_count(csv_files, capsys):
    folder, train, _, _ = csv_files
    bounds = folder / "filled.json"
    bounds.write_text(json.dumps({"age": {"lower": 0, "upper": 120, "fill": 60},
                                  "color": ["red", "green", "blue"], "score": [0, 100]}))
    data = _replace_line(train, 7, ",,50,yes", folder / "holey.csv")  # age and color empty
    assert _train(data, bounds, folder / "m.json") == 0
    assert "trained on 400 rows" in capsys.readouterr().out
    document = json.loads((folder / "m.json").read_text())
    assert document["privacy"]["n_samples"] == len(data.read_text().splitlines()) - 1 == 400
    _, spec, _ = load_model(folder / "m.json")
    assert spec.columns[0].fill == 60.0  # the public fill is part of the stored schema


def test_neighbour_with_a_missing_value_gives_the_same_n(csv_files):
    # D' replaces one row of D by a row with missing cells; n must not tell them apart
    folder, train, _, _ = csv_files
    bounds = folder / "filled.json"
    bounds.write_text(json.dumps({"age": {"lower": 0, "upper": 120, "fill": 60},
                                  "color": ["red", "green", "blue"],
                                  "score": {"lower": 0, "upper": 100, "fill": 50}}))
    neighbour = _replace_line(train, 3, "?,,,no", folder / "neighbour.csv")
    assert _train(train, bounds, folder / "d.json") == 0
    assert _train(neighbour, bounds, folder / "d_prime.json") == 0
    d, d_prime = (json.loads((folder / name).read_text()) for name in ("d.json", "d_prime.json"))
    assert d["privacy"]["n_samples"] == d_prime["privacy"]["n_samples"] == 400
    assert d["spec"] == d_prime["spec"]


@pytest.mark.parametrize("label", ["", "?", "  "])
def test_missing_target_cell_is_a_one_line_error(csv_files, capsys, label):
    folder, train, _, bounds = csv_files
    data = _replace_line(train, 12, f"40,red,50,{label}", folder / "unlabelled.csv")
    assert _train(data, bounds, folder / "m.json") == 2
    err = _one_line_error(capsys)
    assert f"{data}: line 13, column 'label'" in err and "not a class" in err


def test_a_row_of_empty_cells_is_refused_not_skipped(csv_files, capsys):
    folder, train, _, bounds = csv_files
    data = _replace_line(train, 5, ",,,", folder / "empty_row.csv")
    assert _train(data, bounds, folder / "m.json") == 2
    assert "line 6, column 'age'" in _one_line_error(capsys)


def test_predict_names_the_file_of_a_missing_cell(csv_files, capsys):
    folder, train, new, bounds = csv_files
    assert _train(train, bounds, folder / "m.json") == 0
    holey = folder / "holey_new.csv"
    holey.write_text("age,color,score\n30,red,60\n70,blue,\n")
    assert main(["predict", "--model", str(folder / "m.json"), "--data", str(holey)]) == 2
    assert f"{holey}: line 3, column 'score'" in _one_line_error(capsys)


def test_demo_smoke_run(tmp_path, capsys):
    code = main(["demo", "--subset", "1500", "--repeats", "2", "--epsilons", "1",
                 "--reference-repeats", "1", "--jobs", "1", "--out", str(tmp_path / "demo")])
    assert code == 0
    out = capsys.readouterr().out
    assert "majority-class error" in out
    assert out.index("PRIVATE END TO END") < out.index("REFERENCE, NOT PRIVATE")
    results = json.loads((tmp_path / "demo" / "results.json").read_text())
    assert results["n_train"] == 1500 and results["epsilons"] == [1.0]
    assert len(results["private"]["cells"]) == len(results["reference"]["best"]) == 2 * 2
    assert all(0 <= cell["mean"] <= 1 for cell in results["private"]["cells"] + results["reference"]["best"])
    assert (tmp_path / "demo" / "privacy_accuracy.png").stat().st_size > 10_000


def test_audit_subcommand_passes_a_correct_mechanism(capsys):
    code = main(["audit", "--estimator", "huber", "--mechanism", "output", "--epsilon", "1",
                 "--runs", "600", "--seed", "0"])
    out = capsys.readouterr().out
    assert code == 0 and "PASS" in out and "lower bound" in out


@pytest.mark.slow  # the chaudhuri2011 driver end to end: ~55 s on a loaded 2-core machine
def test_reproduce_smoke_run(tmp_path, capsys):
    from dperm.experiments import chaudhuri2011

    results = chaudhuri2011.run(tmp_path, table1=True, table2=False, figures=False, runs=1,
                                folds=2, encodings=("constant",), progress=None)
    table = results["parts"]["table1_constant"]
    assert table["n_rows"] == 45_222 and table["n_features"] == 105
    cells = table["cells"]["logistic"]["objective"]
    assert [c["alpha"] for c in cells] == list(chaudhuri2011.TABLE1_GRID)
    assert all(c["n"] == 2 for c in cells)  # 2 folds x 1 run
    report = (tmp_path / "report.md").read_text()
    assert "paper 0.2161" in report and "Table 1: Adult, constant encoding" in report
    assert (tmp_path / "results.json").exists()


@pytest.mark.parametrize("argv, expected", [
    ([], {"2", "3", "4-5"}),                 # no part named: everything
    (["--figures"], {"2", "3", "4-5"}),      # --figures alone: every figure
    (["--figures", "4-5"], {"4-5"}),         # the learning curves without the tables
    (["--table2"], set()),
])
def test_reproduce_figures_flag_selects_the_figures(monkeypatch, tmp_path, argv, expected):
    from dperm.experiments import chaudhuri2011

    seen = {}

    def fake_run(out_dir, **kwargs):
        seen.update(kwargs)
        return {"seconds": 0.0}

    monkeypatch.setattr(chaudhuri2011, "run", fake_run)
    assert main(["reproduce", "chaudhuri2011", *argv, "--out", str(tmp_path)]) == 0
    assert chaudhuri2011._figure_set(seen["figures"]) == expected
    assert seen["table2"] == (argv != ["--figures", "4-5"] and argv != ["--figures"])


def test_reproduce_rejects_an_unknown_figure(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "chaudhuri2011", "--figures", "6", "--out", str(tmp_path)])
    assert "invalid choice" in capsys.readouterr().err


def _small_kdd_like(n=2_600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + 0.1 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_learning_curves_alone_run_alg4_without_the_tables(monkeypatch, tmp_path):
    # Figs. 4-5 at small size: 300 test + 300 validation rows, 5 candidate parts of n rows
    from sklearn.utils import Bunch

    import dperm.datasets
    from dperm.experiments import chaudhuri2011

    X, y = _small_kdd_like()
    monkeypatch.setattr(chaudhuri2011, "TEST_SIZE", 300)
    monkeypatch.setattr(chaudhuri2011, "VALIDATION_SIZE", 300)
    monkeypatch.setattr(dperm.datasets, "load_kddcup99", lambda **kw: Bunch(X_train=X, y_train=y))
    results = chaudhuri2011.run(tmp_path, figures=("4-5",), table1=False, table2=False, runs=1,
                                curve_runs=2, permutations=1, n_jobs=1, progress=None)
    assert set(results["parts"]) == {"figures4_5"}          # no table was computed
    curves = results["parts"]["figures4_5"]
    assert curves["sizes"] == [400]                          # (2600 - 600) // 5, the most that fits
    cells = {(c["loss"], c["algorithm"], c["epsilon"]) for c in curves["curves"]}
    assert len(cells) == 2 * (1 + 2 * len(chaudhuri2011.LEARNING_EPSILONS))
    nonprivate = [c["mean"] for c in curves["curves"] if c["algorithm"] == "nonprivate"]
    assert max(nonprivate) < 0.1                             # the task is nearly separable
    assert all(0.0 <= c["mean"] <= 1.0 for c in curves["curves"])
    assert "Figs. 4-5" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "results.json").read_text())["parts"].keys() == {"figures4_5"}


def test_predict_does_not_warn_about_clipping(csv_files, capsys):
    """Issue 18: clipping is reported once, at fit; predicting on out-of-bounds rows is silent."""
    import warnings

    from dperm.exceptions import DataClippingWarning

    folder, train, _, bounds = csv_files
    model_path = folder / "model.json"
    assert main(["train", "--data", str(train), "--target", "label", "--categorical", "color",
                 "--bounds", str(bounds), "--epsilon", "1", "--classes", "no,yes",
                 "--random-state", "0", "--out", str(model_path)]) == 0
    outside = folder / "outside.csv"
    outside.write_text("age,color,score\n130,red,160\n-5,blue,-40\n")  # beyond the public bounds
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataClippingWarning)
        assert main(["predict", "--model", str(model_path), "--data", str(outside)]) == 0
    with pytest.warns(DataClippingWarning):  # the same rows do warn when a model is trained on them
        from dperm.model_io import load_model
        from dperm.tabular import read_csv_columns

        _, spec, _ = load_model(model_path)
        spec.transform(read_csv_columns(outside))


def test_the_multiclass_mechanism_is_no_mechanism_choice():
    """--mechanism offers the table's binary rows only: the multinomial model is chosen by the
    estimator's multi_class (K > 2), never by name on the command line."""
    import pytest

    from dperm.cli import main
    from dperm.mechanisms.catalog import binary_mechanisms

    with pytest.raises(SystemExit):
        main(["train", "--data", "x.csv", "--target", "y", "--epsilon", "1",
              "--mechanism", "multinomial_objective"])
    assert "adassp" in binary_mechanisms() and "objective" in binary_mechanisms()
