"""``dperm train``'s classifier default carries the majority guarantee (issue 30).

``--model logistic`` with two labels on rows in memory fits an intercept (constant feature 0.5)
and the majority fallback, so at a small epsilon where the model cannot beat the constant it
releases the privately estimated majority class instead of falling below it
(docs/defaults_classifiers.md, "dperm train"; chosen on the FITTING tables by
benchmarks/fallback_recipe_fit.py).
"""

import contextlib
import io
import json

import numpy as np
import pytest

from dperm.cli import main
from dperm.model_io import load_model
from dperm.privacy.fallback import RECIPE_INTERCEPT_SCALING, fallback_calibration, split_epsilon

N = 1_500
MAJORITY_SHARE = 0.75


def _write(folder, n=N, signal=0.0, labels=("no", "yes"), seed=5):
    """A table with two numeric columns, one categorical and a label; ``signal`` 0: labels independent."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(0, 10, n), rng.uniform(0, 10, n)
    colour = rng.choice(["red", "green", "blue"], n)
    if len(labels) == 2:
        score = signal * (x1 - 5) + rng.logistic(size=n) - np.log(MAJORITY_SHARE / (1 - MAJORITY_SHARE))
        y = np.where(score > 0, labels[1], labels[0])
    else:
        y = rng.choice(labels, n)
    data = folder / "table.csv"
    data.write_text("x1,x2,colour,label\n" + "\n".join(
        f"{a:.4f},{b:.4f},{c},{lab}" for a, b, c, lab in zip(x1, x2, colour, y)) + "\n")
    bounds = folder / "bounds.json"
    bounds.write_text(json.dumps({"x1": [0, 10], "x2": [0, 10], "colour": ["red", "green", "blue"]}))
    return data, bounds, y


def _train(folder, data, bounds, *extra, classes="no,yes", epsilon="0.05", seed=1, name="model"):
    out = folder / f"{name}.json"
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = ["train", "--data", str(data), "--target", "label", "--categorical", "colour", "--bounds",
            str(bounds), "--epsilon", epsilon, "--random-state", str(seed), "--out", str(out), *extra]
    if classes:
        argv += ["--classes", classes]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv)
    return code, out, stdout.getvalue(), stderr.getvalue()


def _train_accuracy(path, data, y):
    from dperm.cli._common import read_rows

    model, spec, _ = load_model(path)
    X = spec.transform(read_rows(str(data)), source=str(data))
    return float(np.mean(model.predict(X) == y))


def test_default_releases_the_constant_where_the_model_cannot_beat_it(tmp_path):
    """Labels independent of X (75% "no"), epsilon 0.1, n = 1,500: the default releases the noisy
    majority class in most seeded draws and is on average at the majority class; the old recipe (no
    intercept, no fallback) falls below it, which is what the default repairs."""
    data, bounds, y = _write(tmp_path)
    majority = max(np.mean(y == "no"), np.mean(y == "yes"))
    constant, default_accuracy, recipe_accuracy = 0, [], []
    for seed in range(10):
        code, path, _, _ = _train(tmp_path, data, bounds, epsilon="0.1", seed=seed)
        assert code == 0
        document = json.loads(path.read_text())
        if document["privacy"]["fallback_choice"] == "constant":
            constant += 1
            assert not np.any(document["coef"])  # the constant model: weights 0, the intercept only
        default_accuracy.append(_train_accuracy(path, data, y))
        code, path, _, _ = _train(tmp_path, data, bounds, "--no-fit-intercept", epsilon="0.1", seed=seed,
                                  name="recipe")
        assert code == 0
        recipe_accuracy.append(_train_accuracy(path, data, y))
    assert constant >= 6
    assert np.mean(default_accuracy) >= majority - 0.01
    assert np.mean(recipe_accuracy) < majority - 0.02


def test_default_keeps_a_model_that_beats_the_constant(tmp_path):
    data, bounds, y = _write(tmp_path, signal=2.0)
    code, path, _, _ = _train(tmp_path, data, bounds, epsilon="3")
    assert code == 0
    assert json.loads(path.read_text())["privacy"]["fallback_choice"] == "model"
    assert _train_accuracy(path, data, y) > max(np.mean(y == "no"), np.mean(y == "yes")) + 0.05


def test_record_and_output_state_the_fallback_share_from_public_inputs(tmp_path):
    data, bounds, _ = _write(tmp_path)
    code, path, printed, _ = _train(tmp_path, data, bounds, epsilon="0.5")
    assert code == 0
    document = json.loads(path.read_text())
    params, privacy = document["params"], document["privacy"]
    assert params["fit_intercept"] is True and params["intercept_scaling"] == RECIPE_INTERCEPT_SCALING
    assert params["fallback"] == "auto"
    calibration = fallback_calibration(N, 2, 0.5)  # public n, K and epsilon only
    assert privacy["fallback_share"] == calibration.share
    assert privacy["fallback_epsilon"] == calibration.epsilon
    assert privacy["fallback_noise_scale"] == calibration.noise_scale
    assert privacy["epsilon"] == 0.5
    assert privacy["fallback_choice"] in ("model", "constant")
    assert split_epsilon(0.5, calibration) + calibration.epsilon <= 0.5
    assert f"Majority fallback: {calibration.share:.4g} of epsilon" in printed
    assert "effective 1.118" in printed  # the norm bound sqrt(1 + 0.5^2), public


def test_model_file_round_trips_and_predicts(tmp_path):
    data, bounds, y = _write(tmp_path, signal=2.0)
    choices = set()
    for seed, epsilon in ((0, "3"), (0, "0.02")):  # a model and a constant
        code, path, _, _ = _train(tmp_path, data, bounds, epsilon=epsilon, seed=seed)
        assert code == 0
        model, _, document = load_model(path)
        assert model.fit_intercept and model.intercept_scaling == RECIPE_INTERCEPT_SCALING
        assert model.privacy_.fallback_choice == document["privacy"]["fallback_choice"]
        choices.add(model.privacy_.fallback_choice)
        out = tmp_path / "predictions.csv"
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["predict", "--model", str(path), "--data", str(data), "--out", str(out)]) == 0
            assert main(["show", "--model", str(path)]) == 0
        from dperm.cli._common import read_rows

        predicted = read_rows(str(out))
        column = [c for c in predicted if c != "label"][-1]
        assert np.mean(np.asarray(predicted[column]) == y) == pytest.approx(_train_accuracy(path, data, y))
    assert choices == {"model", "constant"}


def test_explicit_intercept_and_no_fallback_paths_still_work(tmp_path):
    data, bounds, _ = _write(tmp_path, signal=2.0)
    # --fit-intercept: the estimator's own constant feature 1, with the fallback
    code, path, _, _ = _train(tmp_path, data, bounds, "--fit-intercept", epsilon="1", name="one")
    document = json.loads(path.read_text())
    assert code == 0 and document["params"]["intercept_scaling"] == 1.0
    assert document["privacy"]["fallback_choice"] in ("model", "constant")
    # --no-fit-intercept and --fallback none: the previous recipe, the same file
    files = []
    for extra in (["--no-fit-intercept"], ["--fallback", "none"]):
        code, path, printed, _ = _train(tmp_path, data, bounds, *extra, epsilon="1", name=extra[-1][2:])
        document = json.loads(path.read_text())
        assert code == 0 and document["params"]["fit_intercept"] is False
        assert "fallback" not in document["params"] and "fallback_share" not in document["privacy"]
        assert "Majority fallback" not in printed
        files.append(path.read_bytes())
    assert files[0] == files[1]
    # --fit-intercept --fallback none: an intercept without the fallback
    code, path, _, _ = _train(tmp_path, data, bounds, "--fit-intercept", "--fallback", "none", epsilon="1",
                              name="plain")
    document = json.loads(path.read_text())
    assert code == 0 and document["params"]["fit_intercept"] is True
    assert "fallback_share" not in document["privacy"]


def test_three_labels_and_other_models_keep_the_recipe(tmp_path):
    data, bounds, _ = _write(tmp_path, labels=("a", "b", "c"))
    code, path, _, _ = _train(tmp_path, data, bounds, classes="a,b,c", epsilon="1")
    document = json.loads(path.read_text())
    assert code == 0 and document["params"]["fit_intercept"] is False
    assert "fallback_share" not in document["privacy"]
    data, bounds, _ = _write(tmp_path)
    code, path, _, _ = _train(tmp_path, data, bounds, "--model", "huber", epsilon="1", name="huber")
    assert code == 0 and json.loads(path.read_text())["params"]["fit_intercept"] is False
    # the label set read from the data (warned) decides as --classes would
    code, path, _, _ = _train(tmp_path, data, bounds, classes=None, epsilon="1", name="read")
    assert code == 0 and json.loads(path.read_text())["params"]["fit_intercept"] is True


@pytest.mark.parametrize("extra, message", [
    (["--fallback", "majority", "--no-fit-intercept"], "needs an intercept"),
    (["--fallback", "majority", "--model", "huber"], "is for --model logistic only"),
    (["--fallback", "none", "--model", "hinge"], "is for --model logistic only"),
    (["--fallback", "majority", "--engine", "dask"], "not available with --engine dask"),
])
def test_refusals_come_before_the_data_is_read(tmp_path, extra, message):
    """Refused from the options alone: the data file does not even exist, nothing is fitted or spent."""
    code, out, _, err = _train(tmp_path, tmp_path / "missing.csv", tmp_path / "missing.json", *extra)
    assert code != 0 and message in err and not out.exists()


def test_too_small_a_table_is_refused_naming_the_total_epsilon(tmp_path):
    data, bounds, _ = _write(tmp_path, n=12)
    code, out, _, err = _train(tmp_path, data, bounds, epsilon="0.05")
    assert code != 0 and "majority fallback's choice" in err and "Nothing was spent" in err
    assert not out.exists()


@pytest.mark.parametrize("argv, n_labels, fitted", [
    ([], 2, True), (["--engine", "dask"], 2, False), ([], 3, False), ([], None, False),
    (["--fallback", "none"], 2, False), (["--no-fit-intercept"], 2, False), (["--model", "huber"], 2, False),
    (["--model", "kernel_logistic"], 2, False),
])
def test_default_intercept_from_public_choices(argv, n_labels, fitted):
    """The intercept the CLI gives a classifier: only where the fallback can run (two labels, memory)."""
    from dperm.cli import build_parser
    from dperm.cli.train import _make_model

    args = build_parser("train").parse_args(["train", "--data", "d", "--target", "t", "--epsilon", "1",
                                             "--out", "m", *argv])
    args.classes = None
    model = _make_model(args, n_labels)
    assert model.fit_intercept is fitted
    if fitted:
        assert model.intercept_scaling == RECIPE_INTERCEPT_SCALING and model.fallback == "auto"
