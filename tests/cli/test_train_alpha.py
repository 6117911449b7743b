"""``dperm train --alpha``: a number, ``auto`` or the classifiers' opt-in ``monotone`` rule."""

import json

import numpy as np
import pytest

from dperm import PrivateLogisticRegression
from dperm.cli import main
from dperm.cli.train import ALPHA_WORDS, _alpha_option
from dperm.model_io import load_model
from dperm.privacy.alpha import MONOTONE


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    age = rng.integers(18, 80, n)
    score = rng.normal(50, 10, n)
    label = np.where(0.08 * (age - 50) + 0.1 * (score - 50) + 0.5 * rng.normal(size=n) > 0.3, "yes", "no")
    train = tmp_path / "train.csv"
    train.write_text("age,score,label\n" + "\n".join(f"{a},{s:.3f},{lab}" for a, s, lab in zip(age, score, label))
                     + "\n")
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps({"age": [0, 120], "score": [0, 100]}))
    return tmp_path, train, bounds


def _train(folder, train, bounds, alpha, name, *extra):
    out = folder / f"{name}.json"
    code = main(["train", "--data", str(train), "--target", "label", "--bounds", str(bounds),
                 "--classes", "no,yes", "--epsilon", "0.5", "--alpha", alpha, "--random-state", "1",
                 "--out", str(out), *extra])
    return code, out


def test_the_words_are_the_libraries():
    assert ALPHA_WORDS == ("auto", MONOTONE)
    assert _alpha_option("monotone") == "monotone" and _alpha_option("auto") == "auto"
    assert _alpha_option("1e-3") == 0.001 and _alpha_option("7") == 7.0


def test_monotone_runs_the_opt_in_rule_and_a_number_is_used_as_given(table):
    folder, train, bounds = table
    # without an intercept (no majority fallback, under which "auto" is the monotone rule too)
    code, path = _train(folder, train, bounds, "monotone", "monotone", "--no-fit-intercept")
    assert code == 0
    document = json.loads(path.read_text())
    assert document["params"]["alpha"] == "monotone"
    model, spec, _ = load_model(path)
    # the same public inputs in Python give the same alpha: the rule, not a number the CLI chose
    n, d = 400, len(spec.feature_names())
    python = PrivateLogisticRegression(epsilon=0.5, alpha="monotone", fit_intercept=False,
                                       classes=["no", "yes"])
    expected = python._public_record(n, d, 1, label_set_public=True).alpha
    assert document["privacy"]["alpha"] == expected
    auto_code, auto_path = _train(folder, train, bounds, "auto", "auto", "--no-fit-intercept")
    assert auto_code == 0 and json.loads(auto_path.read_text())["privacy"]["alpha"] != expected
    number_code, number_path = _train(folder, train, bounds, "0.0125", "number", "--no-fit-intercept")
    assert number_code == 0 and json.loads(number_path.read_text())["privacy"]["alpha"] == 0.0125


def test_a_word_that_is_not_an_alpha_is_refused_in_one_line(table, capsys):
    folder, train, bounds = table
    with pytest.raises(SystemExit):
        _train(folder, train, bounds, "monotonic", "bad")
    err = capsys.readouterr().err
    assert "--alpha: expected a number, 'auto' or 'monotone'; got 'monotonic'" in err


def test_monotone_for_a_regressor_is_refused_before_any_spend(table, capsys):
    folder, train, bounds = table
    rows = [line.rsplit(",", 1)[0] for line in train.read_text().splitlines()]
    numbers = folder / "numbers.csv"
    numbers.write_text("\n".join(rows) + "\n")
    out = folder / "reg.json"
    code = main(["train", "--data", str(numbers), "--target", "age", "--model", "least_squares",
                 "--bounds", str(bounds), "--y-bounds", "0", "120", "--epsilon", "1", "--alpha", "monotone",
                 "--out", str(out)])
    assert code != 0 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert "alpha" in err and "monotone" in err
