"""The ``dperm`` command line as a new user meets it: help, version, every model family, CSV errors."""

import argparse
import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from dperm import cli
from dperm.cli import main
from dperm.model_io import load_model

# -- help, version, lazy imports -------------------------------------------------------


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"dperm {cli._version()}"
    assert cli._version().count(".") >= 1


def test_python_dash_m_runs_the_cli():
    result = subprocess.run([sys.executable, "-m", "dperm.cli", "--version"], capture_output=True,
                            text=True, check=True)
    assert result.stdout.startswith("dperm ")


def test_dask_engine_refuses_other_families_and_honours_strict(tmp_path, capsys):
    base = ["train", "--data", str(tmp_path), "--target", "y", "--engine", "dask", "--epsilon",
            "1", "--out", str(tmp_path / "m.json")]
    assert main([*base, "--model", "quantile"]) == 2
    assert "--engine dask fits the linear classifiers only" in _error(capsys)
    assert main([*base, "--strict"]) == 2
    assert "--strict: the label set would be read from the data" in _error(capsys)


def _modules_after(code):
    program = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            check=True)
    return set(result.stdout.split())


@pytest.mark.parametrize("code", [
    "import dperm.cli",
    "import dperm.cli\ntry:\n    dperm.cli.main(['--help'])\nexcept SystemExit:\n    pass",
])
def test_import_and_top_level_help_import_no_heavy_package(code):
    modules = _modules_after(code)
    heavy = {"sklearn", "scipy", "flwr", "numpy", "dask"} & {name.split(".")[0] for name in modules}
    assert not heavy, heavy
    assert not [name for name in modules if name.startswith("dperm.") and name != "dperm.cli"]


def test_a_subcommand_builds_only_its_own_options():
    modules = _modules_after("import dperm.cli\ndperm.cli.build_parser('show')")
    assert "sklearn" not in modules and "dperm.audit" not in modules


def _parsers(parser, path=("dperm",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, path + (name,))


def _leaf_parsers():
    parser = cli.build_parser()
    for path, child in _parsers(parser):
        has_sub = any(isinstance(a, argparse._SubParsersAction) for a in child._actions)
        if len(path) > 1 and not has_sub:
            yield path, child


def test_every_subcommand_has_a_description_and_an_example():
    seen = set()
    for path, parser in _leaf_parsers():
        seen.add(" ".join(path[1:]))
        assert parser.description, path
        assert parser.epilog and f"dperm {path[1]}" in parser.epilog, path
    assert {"train", "predict", "show", "demo", "reproduce", "audit", "experiment learning-rates",
            "party serve", "party keygen", "coordinate"} <= seen


def test_every_option_has_help_text():
    for path, parser in _leaf_parsers():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            assert action.help and action.help.strip(), (path, action.option_strings or action.dest)


def test_the_static_choices_agree_with_the_library():
    from dperm.datasets import ADULT_ENCODINGS

    assert set(cli.ADULT_ENCODING_NAMES) == set(ADULT_ENCODINGS)


def _option(parser, flag):
    return next(action for action in parser._actions if flag in action.option_strings)


def test_mechanism_choices_are_the_table_s():
    """``--mechanism`` reads the one import-free table of mechanisms, and the help shows each row;
    the multiclass rows (chosen by ``multi_class``, K > 2) are no choice."""
    from dperm.mechanisms.catalog import MECHANISMS

    binary = tuple(name for name, row in MECHANISMS.items() if not row.multiclass)
    assert len(binary) < len(MECHANISMS)  # the multinomial row is left out
    parsers = dict(_leaf_parsers())
    train = _option(parsers[("dperm", "train")], "--mechanism")
    assert tuple(train.choices) == ("auto", *binary)
    assert tuple(_option(parsers[("dperm", "audit")], "--mechanism").choices) == binary
    for name in binary:
        assert f"{name}: {MECHANISMS[name].summary}" in train.help


def test_the_library_refuses_an_epsilon_below_the_noise_s_limit():
    """MIN_EPSILON is the library's: an estimator refuses it too (the CLI keeps its own wording)."""
    from dperm import PrivateLogisticRegression

    X, y = [[0.1, 0.2], [0.3, -0.1], [-0.2, 0.1]], [0, 1, 0]
    with pytest.raises(ValueError, match="epsilon 1e-12 is below 1e-09, the smallest epsilon"):
        PrivateLogisticRegression(epsilon=1e-12, classes=[0, 1]).fit(X, y)


def test_every_help_page_imports_no_heavy_package():
    """``dperm [COMMAND ...] --help`` builds and renders its parser with the standard library only.

    One fresh interpreter per help page (every command and sub-command the
    parser has), so a heavy import in one builder cannot hide behind another.
    """
    program = ("import sys\nimport dperm.cli\ntry:\n    dperm.cli.main(sys.argv[1:] + ['--help'])\n"
               "except SystemExit as done:\n    assert done.code == 0, done.code\n"
               "print('MODULES', ' '.join(sorted(sys.modules)))")
    pages = [path[1:] for path, _ in _parsers(cli.build_parser())]
    assert {("train",), ("audit",), ("reproduce",), ("experiment", "learning-rates"),
            ("party", "serve"), ("coordinate",)} <= set(pages)
    heavy = {}
    for page in pages:
        result = subprocess.run([sys.executable, "-c", program, *page], capture_output=True,
                                text=True, check=True)
        help_text, modules = result.stdout.split("MODULES")
        assert help_text.startswith(f"usage: {' '.join(('dperm', *page))}"), page
        found = {"sklearn", "scipy", "flwr", "numpy", "dask"} & {m.split(".")[0] for m in modules.split()}
        if found:
            heavy[" ".join(page) or "(top level)"] = sorted(found)
    assert heavy == {}


def test_help_texts_list_values_and_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = capsys.readouterr().out
    assert "--encoding {unit_norm,constant,unit_norm_log}" in out
    assert "(default: 5)" in out  # --repeats
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "--smoothing-width H" in out and "--h " not in out
    assert "least_squares" in out and "kernel_logistic" in out and "--strict" in out


def test_reproduce_help_separates_the_papers(capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    out = capsys.readouterr().out
    chaudhuri, rajkumar = out.index("chaudhuri2011 options"), out.index("rajkumar2012 options")
    assert chaudhuri < out.index("\n  --table1") < rajkumar < out.index("\n  --figure1")
    assert "2000 for Fig. 1, 2000 for Fig. 2" not in out
    assert "default 2000 for both figures" in " ".join(out.split())


# -- a small table ---------------------------------------------------------------------


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    age = rng.integers(18, 80, n)
    color = rng.choice(["red", "green", "blue"], n)
    score = rng.normal(50, 10, n)
    signal = 0.08 * (age - 50) + 1.5 * (color == "red") + 0.1 * (score - 50)
    label = np.where(signal + 0.5 * rng.normal(size=n) > 0.3, "yes", "no")
    value = np.clip(0.01 * (age - 50) + 0.3 * (color == "red"), -1, 1)
    data = tmp_path / "train.csv"
    rows = [f"{a},{c},{s:.3f},{lab},{v:.4f}" for a, c, s, lab, v in zip(age, color, score, label, value)]
    data.write_text("\n".join(["age,color,score,label,value"] + rows) + "\n")
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps({"age": [0, 120], "color": ["red", "green", "blue"],
                                  "score": [0, 100]}))
    new = tmp_path / "new.csv"
    new.write_text("age,color,score\n30,red,60\n70,blue,40\n")
    return tmp_path, data, bounds, new


def _train(table, *extra, target="label"):
    folder, data, bounds, _ = table
    features = ["age", "color", "score"]
    return main(["train", "--data", str(data), "--target", target, "--features", *features,
                 "--categorical", "color", "--bounds", str(bounds), "--random-state", "0",
                 "--out", str(folder / "m.json"), *extra])


def _error(capsys):
    err = capsys.readouterr().err
    assert err.startswith("dperm: error: ") and err.count("\n") == 1, err
    return err


# -- every estimator family, one model-file format ---------------------------------------


@pytest.mark.parametrize("model,extra,estimator", [
    ("logistic", [], "PrivateLogisticRegression"),
    ("huber", ["--smoothing-width", "0.1"], "PrivateLinearSVC"),
    ("hinge", ["--mechanism", "output"], "PrivateLinearSVC"),
    ("kernel_logistic", ["--gamma", "0.5", "--n-components", "20"],
     "PrivateKernelLogisticRegression"),
    ("kernel_huber", ["--n-components", "20"], "PrivateKernelSVC"),
])
def test_train_each_classifier_family_then_predict_and_show(table, capsys, model, extra, estimator):
    folder, _, _, new = table
    assert _train(table, "--model", model, "--epsilon", "1", "--classes", "no,yes", *extra) == 0
    assert f"({estimator})" in capsys.readouterr().out
    loaded, spec, document = load_model(folder / "m.json")
    assert type(loaded).__name__ == estimator == document["estimator"]
    assert document["params"]["random_state"] is None
    columns = {"age": ["30", "70"], "color": ["red", "blue"], "score": ["60", "40"]}
    expected = loaded.predict(spec.transform(columns)).tolist()
    assert main(["predict", "--model", str(folder / "m.json"), "--data", str(new)]) == 0
    assert capsys.readouterr().out.split() == ["prediction", *expected]
    assert main(["show", "--model", str(folder / "m.json")]) == 0
    out = capsys.readouterr().out
    assert estimator in out and "1-DP" in out


def test_a_kernel_model_file_keeps_its_random_features(table):
    folder = table[0]
    assert _train(table, "--model", "kernel_logistic", "--n-components", "8", "--epsilon", "1",
                  "--classes", "no,yes") == 0
    document = json.loads((folder / "m.json").read_text())
    assert np.array(document["features"]["frequencies"]).shape == (8, 5)
    assert document["params"]["feature_random_state"] is None
    model, _, _ = load_model(folder / "m.json")
    np.testing.assert_array_equal(model.features_.phases_, document["features"]["phases"])


@pytest.mark.parametrize("model,extra,mechanism", [
    ("least_squares", ["--y-bound", "1"], "adassp"),
    ("least_squares", ["--y-bounds", "-0.5", "0.9", "--delta", "1e-4"], None),
    ("least_squares", ["--y-bounds", "-0.5", "0.9", "--alpha", "0.1"], "output"),
    ("quantile", ["--quantile", "0.3"], "output"),
])
def test_train_a_regressor_then_predict_numbers(table, capsys, model, extra, mechanism):
    folder, _, _, new = table
    assert _train(table, "--model", model, "--epsilon", "2", *extra, target="value") == 0
    assert "numeric target 'value'" in capsys.readouterr().out
    document = json.loads((folder / "m.json").read_text())
    assert document["classes"] is None
    assert document["privacy"]["mechanism"] == (mechanism or document["privacy"]["mechanism"])
    assert document["params"]["fit_intercept"] is True  # the regressors' default
    model_, spec, _ = load_model(folder / "m.json")
    assert main(["predict", "--model", str(folder / "m.json"), "--data", str(new)]) == 0
    predictions = [float(v) for v in capsys.readouterr().out.split()[1:]]
    columns = {"age": ["30", "70"], "color": ["red", "blue"], "score": ["60", "40"]}
    np.testing.assert_allclose(predictions, model_.predict(spec.transform(columns)), rtol=1e-9)
    assert main(["show", "--model", str(folder / "m.json")]) == 0
    assert "a regressor" in capsys.readouterr().out


@pytest.mark.parametrize("extra,message", [
    (["--model", "least_squares"], "--model least_squares needs PUBLIC bounds on the target"),
    (["--model", "least_squares", "--y-bound", "1", "--y-bounds", "0", "1"], "not both"),
    (["--model", "least_squares", "--mechanism", "objective"], "fitted by auto, output, adassp"),
    (["--model", "quantile", "--delta", "1e-5"], "pure epsilon-DP"),
    (["--model", "quantile", "--mechanism", "objective"], "output perturbation only"),
    (["--model", "quantile", "--classes", "a,b"], "--classes is for classifiers"),
    (["--model", "logistic", "--y-bound", "2"], "--y-bound and --y-bounds are for the regressors"),
    (["--model", "quantile", "--y-bound", "2", "--y-bounds", "0", "1"], "not both"),
    (["--model", "logistic", "--gamma", "2"], "kernel_* models only"),
])
def test_regressor_options_are_checked_up_front(table, capsys, extra, message):
    assert _train(table, "--epsilon", "1", *extra, target="value") == 2
    assert message in _error(capsys)
    assert not (table[0] / "m.json").exists()


def test_least_squares_reads_the_target_bounds_from_the_bounds_file(table, capsys):
    """The same target handling as in Python: public (lower, upper), mapped, predictions within."""
    folder, data, bounds, new = table
    entries = json.loads(bounds.read_text())
    entries["value"] = [-0.6, 0.8]
    bounds.write_text(json.dumps(entries))
    assert _train(table, "--model", "least_squares", "--epsilon", "3", target="value") == 0
    document = json.loads((folder / "m.json").read_text())
    assert document["params"]["y_bounds"] == [-0.6, 0.8]
    assert (document["privacy"]["target_lower"], document["privacy"]["target_upper"]) == (-0.6, 0.8)
    model, spec, _ = load_model(folder / "m.json")
    columns = {"age": ["0", "120"], "color": ["red", "blue"], "score": ["100", "0"]}
    assert np.all((model.predict(spec.transform(columns)) >= -0.6)
                  & (model.predict(spec.transform(columns)) <= 0.8))


def test_quantile_takes_the_target_bounds_too(table, capsys):
    folder, data, bounds, new = table
    assert _train(table, "--model", "quantile", "--epsilon", "3", "--y-bounds", "-0.6", "0.8",
                  target="value") == 0
    document = json.loads((folder / "m.json").read_text())
    assert document["params"]["y_bounds"] == [-0.6, 0.8] and document["params"]["fit_intercept"]
    model, spec, _ = load_model(folder / "m.json")
    columns = {"age": ["0", "120"], "color": ["red", "blue"], "score": ["100", "0"]}
    predictions = model.predict(spec.transform(columns))
    assert np.all((predictions >= -0.6) & (predictions <= 0.8))


def test_a_label_target_is_not_a_regression_target(table, capsys):
    assert _train(table, "--model", "quantile", "--epsilon", "1", target="label") == 2
    assert "line 2, column 'label'" in _error(capsys)


# -- --strict ---------------------------------------------------------------------------


def test_strict_refuses_bounds_read_from_the_data(table, capsys):
    folder, data, _, _ = table
    partial = folder / "partial.json"
    partial.write_text(json.dumps({"age": [0, 120], "color": ["red", "green", "blue"]}))
    code = main(["train", "--data", str(data), "--target", "label", "--features", "age", "color",
                 "score", "--categorical", "color", "--bounds", str(partial), "--classes",
                 "no,yes", "--epsilon", "1", "--strict", "--out", str(folder / "m.json")])
    assert code == 2
    err = _error(capsys)
    assert "--strict" in err and "['score']" in err and "--bounds" in err


def test_strict_refuses_a_label_set_read_from_the_data(table, capsys):
    assert _train(table, "--epsilon", "1", "--strict") == 2
    assert "--strict: the label set would be read from the data (give --classes)" in _error(capsys)


def test_strict_accepts_a_fully_public_schema(table, capsys, recwarn):
    assert _train(table, "--epsilon", "1", "--strict", "--classes", "no,yes") == 0
    assert "NOT covered" not in capsys.readouterr().out
    from dperm.exceptions import PrivacyLeakWarning

    assert not [w for w in recwarn if issubclass(w.category, PrivacyLeakWarning)]


# -- CSV errors: one line naming file, line, column and what to do ------------------------


def _write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return path


def _train_file(folder, data, bounds, *extra):
    return main(["train", "--data", str(data), "--target", "y", "--bounds", str(bounds),
                 "--epsilon", "1", "--classes", "0,1", "--out", str(folder / "m.json"), *extra])


@pytest.mark.parametrize("marker", ["NA", "N/A", ""])
def test_na_is_missing_and_takes_the_public_fill(tmp_path, capsys, marker):
    bounds = _write(tmp_path, "b.json", json.dumps({"x": {"lower": 0, "upper": 10, "fill": 5}}))
    data = _write(tmp_path, "d.csv", f"x,y\n1,0\n{marker},1\n9,1\n")
    assert _train_file(tmp_path, data, bounds) == 0
    assert "trained on 3 rows" in capsys.readouterr().out


def test_na_without_a_fill_names_file_line_and_column(tmp_path, capsys):
    bounds = _write(tmp_path, "b.json", json.dumps({"x": [0, 10]}))
    data = _write(tmp_path, "d.csv", "x,y\n1,0\nNA,1\n9,1\n")
    assert _train_file(tmp_path, data, bounds) == 2
    err = _error(capsys)
    assert f"{data}: line 3, column 'x': the value is missing" in err and '"fill"' in err


def test_a_text_column_suggests_categorical(tmp_path, capsys):
    data = _write(tmp_path, "d.csv", "x,y\n1,0\nred,1\n")
    code = main(["train", "--data", str(data), "--target", "y", "--epsilon", "1",
                 "--classes", "0,1", "--out", str(tmp_path / "m.json")])
    assert code == 2
    err = _error(capsys)
    assert f"{data}: line 3, column 'x': 'red' is not a number" in err
    assert "--categorical x" in err


@pytest.mark.parametrize("cell", ["inf", "-inf", "1e400"])
@pytest.mark.parametrize("bounds_given", [True, False])
def test_an_infinite_cell_is_refused_before_anything_is_spent(tmp_path, capsys, recwarn, cell,
                                                              bounds_given):
    bounds = _write(tmp_path, "b.json", json.dumps({"x": [0, 10]}))
    data = _write(tmp_path, "d.csv", f"x,y\n1,0\n{cell},1\n9,1\n")
    extra = ["--bounds", str(bounds)] if bounds_given else []
    code = main(["train", "--data", str(data), "--target", "y", "--epsilon", "1",
                 "--classes", "0,1", "--out", str(tmp_path / "m.json"), *extra])
    assert code == 2
    err = _error(capsys)
    assert f"{data}: line 3, column 'x': '{cell}' is not a finite number" in err
    assert not (tmp_path / "m.json").exists()  # nothing fitted, nothing released
    from dperm.exceptions import DataClippingWarning

    assert not [w for w in recwarn if issubclass(w.category, DataClippingWarning)]


def test_line_numbers_count_the_skipped_blank_lines(tmp_path, capsys):
    bounds = _write(tmp_path, "b.json", json.dumps({"x": [0, 10]}))
    data = _write(tmp_path, "d.csv", "x,y\n1,0\n\n\n2,1\n?,1\n")
    assert _train_file(tmp_path, data, bounds) == 2
    assert f"{data}: line 6, column 'x'" in _error(capsys)


def test_line_numbers_with_bounds_read_from_the_data(tmp_path, capsys):
    data = _write(tmp_path, "d.csv", "x,y\n1,0\n?,1\n\n2,1\nabc,0\n")
    code = main(["train", "--data", str(data), "--target", "y", "--epsilon", "1",
                 "--classes", "0,1", "--out", str(tmp_path / "m.json")])
    assert code == 2
    assert f"{data}: line 6, column 'x': 'abc' is not a number" in _error(capsys)


def test_a_quoted_decimal_comma_gets_a_hint(tmp_path, capsys):
    bounds = _write(tmp_path, "b.json", json.dumps({"x": [0, 10]}))
    data = _write(tmp_path, "d.csv", 'x,y\n1.5,0\n"2,5",1\n')
    assert _train_file(tmp_path, data, bounds) == 2
    err = _error(capsys)
    assert "line 3, column 'x': '2,5' is not a number (it looks like a decimal comma" in err
    assert "2.5" in err


def test_an_unquoted_decimal_comma_gets_a_hint(tmp_path, capsys):
    bounds = _write(tmp_path, "b.json", json.dumps({"x": [0, 10]}))
    data = _write(tmp_path, "d.csv", "x,y\n1,5,0\n")
    assert _train_file(tmp_path, data, bounds) == 2
    err = _error(capsys)
    assert f"{data}: line 2 has 3 field(s) but the header has 2" in err and "decimal comma" in err


@pytest.mark.parametrize("separator,name", [(";", "';'"), ("\t", "tab")])
def test_a_semicolon_or_tab_file_gets_a_hint(tmp_path, capsys, separator, name):
    bounds = _write(tmp_path, "b.json", json.dumps({"x": [0, 10]}))
    data = _write(tmp_path, "d.csv", f"x{separator}y\n1,5{separator}0\n")
    assert _train_file(tmp_path, data, bounds) == 2
    err = _error(capsys)
    assert f"{data}: the header is one column" in err and f"looks {name}-separated" in err


@pytest.mark.parametrize("content,message", [
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "must hold a JSON object"),
    ('{"x": [10, 0]}', "lower < upper"),
    ('{"x": "wide"}', "must be [lower, upper]"),
    ('{"z": [0, 1]}', "names columns that are not features: ['z']"),
])
def test_an_invalid_bounds_file_is_named(tmp_path, capsys, content, message):
    bounds = _write(tmp_path, "bad_bounds.json", content)
    data = _write(tmp_path, "d.csv", "x,y\n1,0\n2,1\n")
    assert _train_file(tmp_path, data, bounds) == 2
    err = _error(capsys)
    assert f"bounds file {bounds}" in err and message in err


def test_a_missing_bounds_file_is_named(tmp_path, capsys):
    data = _write(tmp_path, "d.csv", "x,y\n1,0\n2,1\n")
    assert _train_file(tmp_path, data, tmp_path / "nowhere.json") == 2
    assert f"the bounds file {tmp_path / 'nowhere.json'} does not exist" in _error(capsys)


@pytest.mark.parametrize("command", ["train", "predict"])
def test_a_header_only_file_has_no_data_rows(table, tmp_path, capsys, command):
    data = _write(tmp_path, "empty.csv", "age,color,score,label\n")
    if command == "train":
        folder, _, bounds, _ = table
        code = main(["train", "--data", str(data), "--target", "label", "--categorical", "color",
                     "--bounds", str(bounds), "--epsilon", "1", "--out", str(folder / "m.json")])
    else:
        assert _train(table, "--epsilon", "1", "--classes", "no,yes") == 0
        capsys.readouterr()
        code = main(["predict", "--model", str(table[0] / "m.json"), "--data", str(data)])
    assert code == 2
    assert f"no data rows in {data}" in _error(capsys)


@pytest.mark.parametrize("epsilon", ["1e-300", "1e-12"])
def test_a_vanishing_epsilon_is_refused_up_front(table, capsys, recwarn, epsilon):
    assert _train(table, "--epsilon", epsilon, "--classes", "no,yes") == 2
    err = _error(capsys)
    assert f"--epsilon {float(epsilon)!r} is below 1e-09" in err
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_the_smallest_epsilon_is_refused_with_one_that_works(table, capsys):
    # Issue 28 B: at MIN_EPSILON the noise swamps every coefficient of this small table; the
    # refusal names an epsilon that would work, and that epsilon trains.
    from dperm.mechanisms.catalog import MIN_EPSILON

    assert _train(table, "--epsilon", str(MIN_EPSILON), "--classes", "no,yes",
                  "--mechanism", "output") == 2
    err = _error(capsys)
    assert "would swamp every coefficient" in err and "Nothing was spent" in err
    suggested = re.search(r"[Ee]psilon >= ([0-9.e+-]+) would", err).group(1)
    assert _train(table, "--epsilon", suggested, "--classes", "no,yes", "--mechanism", "output") == 0


# -- model files whose record was edited --------------------------------------------------


@pytest.mark.parametrize("key,value", [("epsilon", 0.01), ("delta", 1e-9)])
@pytest.mark.parametrize("command", ["show", "predict"])
def test_an_edited_privacy_record_is_refused(table, capsys, key, value, command):
    folder, _, _, new = table
    assert _train(table, "--epsilon", "1", "--classes", "no,yes") == 0
    capsys.readouterr()
    path = folder / "m.json"
    document = json.loads(path.read_text())
    document["privacy"][key] = value
    path.write_text(json.dumps(document))
    argv = ["--model", str(path)] + (["--data", str(new)] if command == "predict" else [])
    assert main([command, *argv]) == 2
    err = _error(capsys)
    assert str(path) in err and f"'privacy.{key}' is {value!r} but 'params.{key}' is" in err


# -- the default preprocessing recipe --------------------------------------------------------


def test_train_maps_public_bounds_to_a_centred_range_by_default(table):
    folder = table[0]
    assert _train(table, "--epsilon", "1", "--classes", "no,yes") == 0
    _, spec, document = load_model(folder / "m.json")
    assert document["spec"]["numeric_range"] == "centred"
    X = spec.transform({"age": ["0", "120"], "color": ["x", "x"], "score": ["50", "50"]})
    # age at its lower/upper bound -> -1/+1 before the row step; score at its midpoint -> 0
    np.testing.assert_allclose(X[:, 0], [-1.0, 1.0])
    np.testing.assert_allclose(X[:, -1], [0.0, 0.0], atol=1e-12)
    # the recipe for two labels: an intercept (constant feature 0.5) for the majority fallback
    assert document["params"]["fit_intercept"] is True and document["params"]["intercept_scaling"] == 0.5


def test_feature_range_unit_keeps_the_old_encoding(table):
    folder = table[0]
    assert _train(table, "--epsilon", "1", "--classes", "no,yes", "--feature-range", "unit") == 0
    document = json.loads((folder / "m.json").read_text())
    assert "numeric_range" not in document["spec"]


# -- output to a closed pipe, and how warnings print ------------------------------------------


def _cli(*args, **kwargs):
    """``python -m dperm.cli ARGS`` in a subprocess (stderr captured as text)."""
    return subprocess.run([sys.executable, "-m", "dperm.cli", *map(str, args)],
                          stderr=subprocess.PIPE, text=True, timeout=120, **kwargs)


@pytest.mark.parametrize("command", ["predict", "show"])
def test_a_closed_stdout_ends_quietly(table, command):
    folder, _, _, new = table
    assert _train(table, "--epsilon", "1", "--classes", "no,yes") == 0
    read, write = os.pipe()
    os.close(read)  # the reader is gone before dperm writes a byte: every write fails
    try:
        extra = ["--data", new] if command == "predict" else []
        result = _cli(command, "--model", folder / "m.json", *extra, stdout=write)
    finally:
        os.close(write)
    assert result.stderr == ""  # no BrokenPipeError traceback, no "Exception ignored"
    assert result.returncode == cli.EXIT_BROKEN_PIPE == 141


def test_predict_into_head_ends_quietly(table, tmp_path):
    folder = table[0]
    assert _train(table, "--epsilon", "1", "--classes", "no,yes") == 0
    many = tmp_path / "many.csv"  # about 200 kB of predictions, more than a pipe holds
    many.write_text("age,color,score\n" + "30,red,60\n" * 50_000)
    process = subprocess.Popen([sys.executable, "-m", "dperm.cli", "predict", "--model",
                                str(folder / "m.json"), "--data", str(many)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "prediction\n"  # `| head -1`
    process.stdout.close()
    stderr = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=120) == 141 and stderr == ""


def test_warnings_print_as_one_dperm_line_without_a_file(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x,y\n1,0\n50,1\n2,1\n")  # 50 is outside the public bounds: clipped
    bounds = tmp_path / "b.json"
    bounds.write_text(json.dumps({"x": [0, 10]}))
    result = _cli("train", "--data", data, "--target", "y", "--bounds", bounds, "--classes", "0,1",
                  "--epsilon", "1", "--out", tmp_path / "m.json", stdout=subprocess.DEVNULL)
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("dperm: warning: 1 value(s) in 3 rows were outside the public bounds")
    assert "Warning:" not in lines[0] and ".py:" not in lines[0] and "runpy" not in lines[0]


def test_the_warning_format_is_the_cli_s_only_while_main_runs(table):
    original = warnings.formatwarning
    assert original is not cli._format_warning  # importing dperm.cli changed nothing
    assert _train(table, "--epsilon", "1", "--classes", "no,yes") == 0
    assert warnings.formatwarning is original
    message = cli._format_warning(UserWarning("two\nlines"), UserWarning, "/venv/bin/dperm", 6)
    assert message == "dperm: warning: two lines\n"


# -- one name and one definition for alpha -------------------------------------------------

#: The definition of alpha every user-facing text gives (CLI help, estimators, docs).
ALPHA_OBJECTIVE = "sum loss + (alpha/2) ||"
ALPHA_NAMES = "alpha is Chaudhuri et al.'s Lambda and Nie & Wang's lambda is alpha/2"


def _one_line(text):
    return " ".join(text.replace("``", "").replace("`", "").split())


def test_train_help_defines_alpha_as_the_estimators_do(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = _one_line(capsys.readouterr().out)
    assert "--alpha ALPHA L2 regularisation strength alpha (> 0): the objective is (1/n) " \
           + ALPHA_OBJECTIVE in help_text
    assert ALPHA_NAMES in help_text
    assert "strength lambda" not in help_text

    import dperm

    # PrivateLinearSVC, PrivateLeastSquares and PrivateKernelLogisticRegression document
    # alpha "as in" one of these
    for name in ("PrivateLogisticRegression", "PrivateQuantileRegressor", "PrivateKernelSVC",
                 "PrivatePredictor"):
        doc = _one_line(getattr(dperm, name).__doc__)
        assert ALPHA_OBJECTIVE in doc and ALPHA_NAMES in doc, name


# -- the intercept: the CLI's default differs from the estimators', and says so ---------------


@pytest.mark.parametrize("option, fitted", [(None, True), ("--fit-intercept", True),
                                            ("--no-fit-intercept", False), ("--intercept", True)])
def test_fit_intercept_option_reaches_the_model_and_show_states_it(table, capsys, option, fitted):
    folder = table[0]
    extra = [option] if option else []
    assert _train(table, "--epsilon", "1", "--classes", "no,yes", *extra) == 0
    document = json.loads((folder / "m.json").read_text())
    assert document["params"]["fit_intercept"] is fitted
    assert (document["intercept"] != [0.0]) is fitted  # released only when fitted
    capsys.readouterr()
    assert main(["show", "--model", str(folder / "m.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = "Intercept: fitted (fit_intercept=True)" if fitted else \
        "Intercept: none (fit_intercept=False)"
    assert lines[1].startswith(expected)


def test_train_help_says_its_intercept_default_differs_from_the_estimators(capsys):
    import dperm

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = _one_line(capsys.readouterr().out)
    assert "--fit-intercept, --no-fit-intercept" in help_text
    assert ("fit an intercept. Default: regressors yes (AdaSSP does not penalise it); --model "
            "logistic with two labels and --engine memory yes, as a constant feature 0.5") in help_text
    assert "every other classifier no" in help_text
    # the help's claim about the estimators is true (a test to update if their default changes)
    for name in ("PrivateLogisticRegression", "PrivateLinearSVC", "PrivateLeastSquares",
                 "PrivateQuantileRegressor"):
        assert getattr(dperm, name)().fit_intercept is True, name
    for name in ("PrivateKernelSVC", "PrivateKernelLogisticRegression"):
        assert getattr(dperm, name)().fit_intercept is False, name
    assert cli.build_parser("train").parse_args(
        ["train", "--data", "d", "--target", "t", "--epsilon", "1", "--out", "m"]).fit_intercept is None
    # unset, label set unknown: no intercept, except for the regressors
    for model, expected in (("logistic", False), ("least_squares", True), ("quantile", True)):
        args = cli.build_parser("train").parse_args(
            ["train", "--data", "d", "--target", "t", "--epsilon", "1", "--out", "m", "--model", model,
             "--y-bound", "1"])
        args.classes = None
        assert cli._make_model(args).fit_intercept is expected
