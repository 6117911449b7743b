"""``dperm train --model pseudo_huber`` and the regressors' ``--mechanism`` / ``--delta`` check.

The check asks the library (the estimator's ``mechanism`` options and the mechanisms' rows),
so it refuses exactly what the estimator refuses, before the data is read.
"""

import json

import numpy as np
import pytest

from dperm import PrivateLinearSVC, PrivateRobustRegressor
from dperm.catalog import build_estimator
from dperm.cli import build_parser, main
from dperm.cli.train import _check_model_options, _models
from dperm.mechanisms.catalog import binary_mechanisms
from dperm.mechanisms.choice import AUTO

pytestmark = pytest.mark.filterwarnings("ignore::dperm.DataClippingWarning")  # Cauchy targets


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    x1, x2 = rng.uniform(0, 10, n), rng.uniform(-5, 5, n)
    y = 2 + 0.5 * x1 - 0.3 * x2 + rng.standard_t(1, n)  # Cauchy noise: the robust loss's case
    data = tmp_path / "rows.csv"
    data.write_text("x1,x2,y\n" + "\n".join(f"{a:.4f},{b:.4f},{c:.4f}" for a, b, c in zip(x1, x2, y))
                    + "\n")
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps({"x1": [0, 10], "x2": [-5, 5]}))
    return tmp_path, data, bounds


def _train(folder, data, bounds, *extra, name="m"):
    out = folder / f"{name}.json"
    code = main(["train", "--data", str(data), "--target", "y", "--bounds", str(bounds),
                 "--epsilon", "1", "--random-state", "0", "--out", str(out), *extra])
    return code, out


def _error(capsys):
    err = capsys.readouterr().err
    assert err.startswith("dperm: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("extra,mechanism,delta", [
    (["--mechanism", "objective"], "objective", 0.0),
    (["--delta", "1e-6", "--mechanism", "gaussian_objective"], "gaussian_objective", 1e-6),
])
def test_pseudo_huber_runs_the_mechanisms_its_estimator_takes(table, extra, mechanism, delta):
    folder, data, bounds = table
    code, out = _train(folder, data, bounds, "--model", "pseudo_huber", "--y-bounds", "-20", "25",
                       *extra)
    assert code == 0
    document = json.loads(out.read_text())
    assert document["privacy"]["mechanism"] == mechanism
    assert document["privacy"]["delta"] == delta
    assert document["params"]["mechanism"] == mechanism


@pytest.mark.parametrize("extra,message,fine", [
    (["--model", "pseudo_huber", "--mechanism", "adassp"], "covers the squared loss only",
     ["--model", "pseudo_huber", "--mechanism", "output"]),
    (["--model", "pseudo_huber", "--mechanism", "gaussian_objective"], "needs delta > 0",
     ["--model", "pseudo_huber", "--mechanism", "gaussian_objective", "--delta", "1e-6"]),
    (["--model", "quantile", "--mechanism", "objective"], "fitted by output perturbation only",
     ["--model", "quantile", "--mechanism", "output"]),
    (["--model", "quantile", "--delta", "1e-6"], "--model quantile is pure epsilon-DP",
     ["--model", "quantile"]),
    (["--model", "least_squares", "--y-bound", "3", "--mechanism", "gaussian_objective"],
     "fitted by auto, output, adassp at --delta 0; drop --mechanism gaussian_objective",
     ["--model", "least_squares", "--y-bound", "3", "--mechanism", "adassp"]),
    (["--model", "least_squares", "--y-bound", "3", "--delta", "1e-6", "--mechanism", "objective"],
     "fitted by auto, output, adassp, gaussian_adassp at --delta 1e-06",
     ["--model", "least_squares", "--y-bound", "3", "--delta", "1e-6"]),
])
def test_an_unsupported_combination_is_refused_in_one_line_before_the_data_is_read(
        table, capsys, extra, message, fine):
    folder, _, bounds = table
    missing = folder / "no_such_file.csv"
    code, out = _train(folder, missing, bounds, *extra)
    assert code == 2 and message in _error(capsys) and not out.exists()
    # a combination the estimator takes gets as far as reading --data, which is missing
    assert _train(folder, missing, bounds, *fine)[0] == 2
    assert "no_such_file.csv" in _error(capsys)


def _regressor_cases():
    for model, (family, _) in _models().items():
        if family == "regressor":
            for mechanism in (AUTO, *binary_mechanisms()):
                for delta in (0.0, 1e-6):
                    yield model, mechanism, delta


@pytest.mark.parametrize("model,mechanism,delta", list(_regressor_cases()))
def test_the_check_refuses_exactly_what_the_estimator_refuses(model, mechanism, delta):
    """One source: the CLI's check and the estimator's own parameter check agree on every pair."""
    loss = _models()[model][1]
    estimator = build_estimator(loss, mechanism=mechanism, delta=delta, y_bounds=(-3.0, 3.0))
    taken = mechanism in (AUTO, estimator._mechanism_name()) or "mechanism" in estimator.get_params()
    try:
        estimator._check_params()
        library = taken and (delta == 0 or "delta" in estimator.get_params())
    except ValueError:
        library = False
    args = build_parser("train").parse_args(
        ["train", "--data", "missing.csv", "--target", "y", "--out", "m.json", "--epsilon", "1",
         "--model", model, "--mechanism", mechanism, "--delta", str(delta), "--y-bound", "3"])
    try:
        _check_model_options(args)
        cli = True
    except ValueError as error:
        assert "\n" not in str(error) and f"--model {model}" in str(error)
        cli = False
    assert cli == library, (model, mechanism, delta)


def test_the_default_smoothing_width_is_the_estimator_s(table):
    folder, data, bounds = table
    code, out = _train(folder, data, bounds, "--model", "pseudo_huber", "--y-bounds", "-20", "25")
    assert code == 0
    assert json.loads(out.read_text())["params"]["h"] == PrivateRobustRegressor().h == 0.1
    code, out = _train(folder, data, bounds, "--model", "pseudo_huber", "--y-bounds", "-20", "25",
                       "--smoothing-width", "0.3", name="given")
    assert code == 0 and json.loads(out.read_text())["params"]["h"] == 0.3
    # the SVC's default is unchanged: the classifiers' h stays 0.5
    labels = folder / "labels.csv"
    rows = data.read_text().splitlines()
    labels.write_text("\n".join([rows[0]] + [f"{r.rsplit(',', 1)[0]},{int(float(r.rsplit(',', 1)[1]) > 4)}"
                                             for r in rows[1:]]) + "\n")
    code, out = _train(folder, labels, bounds, "--model", "huber", "--classes", "0,1", name="svc")
    assert code == 0
    assert json.loads(out.read_text())["params"]["h"] == PrivateLinearSVC().h == 0.5
