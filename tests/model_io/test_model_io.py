"""Model files cannot lie quietly (issue 28, part 4): recomputed calibration, release grid, digest.

Every family ``save_model`` (and so ``dperm train``) writes is fitted once; every
privacy-relevant field of its file is then edited in turn, with the digest left
stale and with the digest recomputed (a naive editor), and loading must refuse,
naming the field.
"""

import json
import math
import warnings

import numpy as np
import pytest

from dperm import (
    PrivacyLeakWarning,
    PrivateKernelLogisticRegression,
    PrivateLeastSquares,
    PrivateLinearSVC,
    PrivateLogisticRegression,
    PrivateQuantileRegressor,
)
from dperm.cli import main
from dperm.model_io import document_digest, load_model, save_model, with_digest
from dperm.tabular import NumericColumn, TabularSpec

N_ROWS, N_FEATURES = 200, 3
LABELS = ["a", "b", "c"]

#: One estimator per family and mechanism the model file can hold.
FAMILIES = {
    "logistic-objective-3-classes": lambda: PrivateLogisticRegression(
        epsilon=1.0, classes=LABELS, mechanism="objective", fit_intercept=True,
        intercept_scaling=0.75),
    "svc-hinge-output-auto": lambda: PrivateLinearSVC(
        loss="hinge", epsilon=1.0, classes=["a", "b"], alpha=0.05),
    "logistic-gaussian-objective": lambda: PrivateLogisticRegression(
        epsilon=1.0, delta=1e-5, classes=["a", "b"], mechanism="gaussian_objective",
        fallback=None),  # the coefficients' grid checks; the fallback's files: test_fallback.py
    "svc-huber-gaussian-objective-004": lambda: PrivateLinearSVC(
        loss="huber", epsilon=2.0, delta=1e-5, classes=LABELS, mechanism="gaussian_objective_004"),
    "kernel-logistic": lambda: PrivateKernelLogisticRegression(
        epsilon=1.0, classes=LABELS, n_components=6, feature_random_state=5),
    "least-squares": lambda: PrivateLeastSquares(y_bound=1.0, epsilon=1.0),
    "least-squares-gaussian-adassp-asymmetric": lambda: PrivateLeastSquares(
        y_bounds=(-2.0, 3.0), epsilon=1.0, delta=1e-3, mechanism="gaussian_adassp"),
    "least-squares-output-asymmetric": lambda: PrivateLeastSquares(
        y_bounds=(-2.0, 3.0), epsilon=1.0, alpha=0.1),
    "quantile": lambda: PrivateQuantileRegressor(quantile=0.3, epsilon=1.0, fit_intercept=False),
    "quantile-centred": lambda: PrivateQuantileRegressor(quantile=0.3, epsilon=1.0,
                                                         y_bounds=(-2.0, 3.0)),
    # mapped onto [-1, 1] and back: the grid check multiplies by the half width (and, with a
    # centre of 0, checks the intercept too)
    "quantile-scaled-symmetric": lambda: PrivateQuantileRegressor(epsilon=1.0, y_bounds=(-50.0, 50.0)),
    "quantile-natural-units": lambda: PrivateQuantileRegressor(epsilon=1.0, y_bounds=(100.0, 400.0)),
}


def _data(classifier: bool):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(N_ROWS, N_FEATURES))
    if not classifier:
        return X, np.clip(X @ [0.5, -0.5, 0.25] + 0.1 * rng.normal(size=N_ROWS), -1, 1)
    labels = np.array(LABELS)
    return X, labels[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0.2).astype(int)]


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def written(request, tmp_path_factory):
    """``(family name, the file's text)`` of one fitted model of each family."""
    model = FAMILIES[request.param]()
    classifier = hasattr(model, "classes")
    X, y = _data(classifier)
    if classifier and len(model.classes) == 2:
        y = np.where(y == "c", "b", y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model.set_params(random_state=1).fit(X, y)
    spec = TabularSpec([NumericColumn(f"x{i}", -0.5, 0.5) for i in range(N_FEATURES)])
    path = tmp_path_factory.mktemp("model") / "model.json"
    digest = save_model(path, model, spec, "label")
    assert digest == json.loads(path.read_text())["digest"]
    return request.param, path.read_text()


def _edit(value):
    """A different value of the same field: numbers moved by half, strings and nulls replaced."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 1.5 if value else 0.25
    if isinstance(value, str):
        return value + " (edited)"
    return 0.25  # None


def _other_parameter(name, value):
    """Another valid value of the parameter ``name``."""
    if name == "mechanism":
        return "objective" if value in ("output", "gaussian_objective", "gaussian_objective_004") \
            else "output"
    if name == "loss":
        return "smooth_hinge"
    return 0.5 if value == "auto" else _edit(value)


def _privacy_edits(document):
    """Every field of the privacy record but ``engine`` (it changes no number; the digest covers it).

    AdaSSP's calibration does not depend on ``n`` (its sensitivities are per row), so an
    edited ``n_samples`` is consistent with every other number and only the digest can
    catch it (:func:`test_adassp_n_samples_edit_is_caught_by_the_digest`).
    """
    adassp = "gram_sensitivity" in document["privacy"]
    return [name for name in document["privacy"]
            if name != "engine" and not (adassp and name == "n_samples")]


def _refusal(tmp_path, document, refresh_digest):
    path = tmp_path / "edited.json"
    if refresh_digest:
        document = with_digest(document)
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError) as refused:
        load_model(path)
    message = str(refused.value)
    assert str(path) in message and "\n" not in message
    return message


@pytest.mark.parametrize("refresh_digest", [False, True], ids=["stale-digest", "recomputed-digest"])
def test_every_privacy_field_edited_in_turn_is_refused_by_name(written, tmp_path, refresh_digest):
    _, text = written
    for name in _privacy_edits(json.loads(text)):
        document = json.loads(text)
        document["privacy"][name] = _edit(document["privacy"][name])
        message = _refusal(tmp_path, document, refresh_digest)
        if name == "n_samples":  # a public input: every number derived from it moves
            assert "recomputed from the file's public inputs" in message, message
        else:
            assert f"'privacy.{name}' is" in message, (name, message)


def test_adassp_n_samples_edit_is_caught_by_the_digest(tmp_path):
    X, y = _data(classifier=False)
    model = PrivateLeastSquares(y_bounds=(-2.0, 3.0), epsilon=1.0, random_state=0).fit(X, y)
    assert model.privacy_.mechanism == "adassp"
    path = tmp_path / "m.json"
    save_model(path, model, TabularSpec([NumericColumn(f"x{i}", -0.5, 0.5)
                                         for i in range(N_FEATURES)]), "y")
    document = json.loads(path.read_text())
    document["privacy"]["n_samples"] += 7
    message = _refusal(tmp_path, document, refresh_digest=False)
    assert "'digest' is" in message
    loaded = load_model(path)[0]  # the file as written loads, its predictions unchanged
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


@pytest.mark.parametrize("refresh_digest", [False, True], ids=["stale-digest", "recomputed-digest"])
def test_edited_public_parameters_are_refused(written, tmp_path, refresh_digest):
    """``params`` the calibration reads: each edit moves a recorded number, which is then named."""
    _, text = written
    params = json.loads(text)["params"]
    for name in ("epsilon", "delta", "alpha", "data_norm", "tol", "mechanism", "intercept_scaling",
                 "loss", "h", "quantile", "y_bound"):
        if name not in params or (name == "delta" and params["mechanism"] in ("auto", "objective",
                                                                              "output")):
            continue  # a pure mechanism's delta changes nothing it records
        if ((name == "intercept_scaling" and not params["fit_intercept"])
                or (name == "h" and params["loss"] == "hinge")
                or (name == "tol" and "gram_sensitivity" in json.loads(text)["privacy"])
                or (name == "y_bound" and "quantile" in params)):
            # not read by this calibration (AdaSSP has no iterative solve; the pinball loss's
            # noise does not depend on the target bounds): the digest covers it
            continue
        document = json.loads(text)
        document["params"][name] = _other_parameter(name, params[name])
        message = _refusal(tmp_path, document, refresh_digest)
        if name == "alpha" and params.get("mechanism") in ("adassp", "gaussian_adassp"):
            assert "would be ignored" in message, message  # refused as a parameter error
        elif name == "y_bound" and params.get("y_bounds") is not None:
            assert "not both" in message, message
        else:
            assert "'privacy." in message and "edited" in message, (name, message)


def test_the_issue_reproduction_is_refused(written, tmp_path):
    """Both ``params.epsilon`` and ``privacy.epsilon`` set to 0.001 (issue 28, item 4)."""
    _, text = written
    for refresh_digest in (False, True):
        document = json.loads(text)
        document["params"]["epsilon"] = document["privacy"]["epsilon"] = 0.001
        message = _refusal(tmp_path, document, refresh_digest)
        assert "recomputed from the file's public inputs" in message


def test_coefficients_off_the_release_grid_are_refused(written, tmp_path):
    _, text = written
    original = json.loads(text)
    if "gram_sensitivity" in original["privacy"]:
        # AdaSSP: the coefficients are computed from noised statistics, on no grid; the
        # digest covers them
        document = json.loads(text)
        document["coef"][-1] += 1e-3
        assert "'digest' is" in _refusal(tmp_path, document, refresh_digest=False)
        return
    grid = original["privacy"]["output_grid"] or original["privacy"]["noise_grid"]
    centred = original["params"].get("y_bounds") is not None  # a public centre added to the intercept
    for refresh_digest in (False, True):
        document = json.loads(text)
        coef = document["coef"]
        row = coef[0] if isinstance(coef[0], list) else coef
        row[-1] += grid / 3
        where = "coef[0][" if isinstance(coef[0], list) else "coef["
        assert f"'{where}{len(row) - 1}]' is" in _refusal(tmp_path, document, refresh_digest)
        if centred:
            continue
        document = json.loads(text)
        if isinstance(document["intercept"], list):
            document["intercept"][0] += grid / 3
            where = "intercept[0]"
        else:
            document["intercept"] += grid / 3
            where = "intercept"
        assert f"'{where}' is" in _refusal(tmp_path, document, refresh_digest)


def test_an_edit_the_calibration_cannot_see_is_caught_by_the_digest(written, tmp_path):
    """The target's name, the schema, the engine: only the digest covers them."""
    _, text = written
    document = json.loads(text)
    document["target"] = "another column"
    message = _refusal(tmp_path, document, refresh_digest=False)
    assert "'digest' is" in message and "hashes to" in message
    # a naive editor who recomputes the digest passes the file's own check, but not the
    # publisher's digest: that is what --expect-digest is for
    path = tmp_path / "relabelled.json"
    path.write_text(json.dumps(with_digest(document)))
    load_model(path)
    published = json.loads(text)["digest"]
    with pytest.raises(ValueError, match="not the expected"):
        load_model(path, expected_digest=published)


def test_an_untouched_file_loads_and_its_digest_ignores_layout(written, tmp_path):
    _, text = written
    document = json.loads(text)
    assert document["digest"] == document_digest(document) and document["version"] == 2
    path = tmp_path / "compact.json"
    path.write_text(json.dumps(dict(reversed(list(document.items())))))  # other layout, same content
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file with a digest loads without a warning
        model, _, loaded = load_model(path, expected_digest=document["digest"])
    assert loaded["digest"] == document["digest"]
    assert math.isclose(model.privacy_.epsilon, document["params"]["epsilon"])


def test_a_digest_removed_or_replaced_is_refused(written, tmp_path):
    _, text = written
    document = json.loads(text)
    document["digest"] = "sha256:" + "0" * 64
    assert "'digest' is 'sha256:000" in _refusal(tmp_path, document, refresh_digest=False)
    del document["digest"]
    assert "'digest' is missing" in _refusal(tmp_path, document, refresh_digest=False)


def test_a_version_1_file_without_a_digest_loads_with_a_warning(written, tmp_path):
    """Files written before digests existed: calibration still checked, the missing digest warned."""
    _, text = written
    document = json.loads(text)
    del document["digest"]
    document["version"] = 1
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(document))
    with pytest.warns(UserWarning, match="has no digest"):
        load_model(path)
    field = "moment_noise_scale" if "gram_sensitivity" in document["privacy"] else "noise_scale"
    document["privacy"][field] *= 2
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=f"'privacy.{field}' is"):
        load_model(path)


def test_a_file_written_before_solve_tol_was_recorded_still_loads(written, tmp_path):
    """Issue 30 added ``solve_tol``; at these sizes it equals ``tol``, as older files solved to."""
    _, text = written
    document = json.loads(text)
    if document["privacy"].pop("solve_tol", None) is None:
        pytest.skip("this record has no solve tolerance")
    path = tmp_path / "before.json"
    path.write_text(json.dumps(with_digest(document)))
    load_model(path)


# -- the command line ---------------------------------------------------------------------


@pytest.fixture
def trained(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X, y = _data(classifier=True)
    data = tmp_path / "train.csv"
    data.write_text("x0,x1,x2,label\n" + "".join(
        f"{a:.4f},{b:.4f},{c:.4f},{label}\n" for (a, b, c), label in zip(X, y)))
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps({f"x{i}": [-0.5, 0.5] for i in range(N_FEATURES)}))
    new = tmp_path / "new.csv"
    new.write_text("x0,x1,x2\n0.1,0.2,0.3\n")
    path = tmp_path / "model.json"
    assert main(["train", "--data", str(data), "--target", "label", "--bounds", str(bounds),
                 "--classes", "a,b,c", "--epsilon", "1", "--random-state", str(rng.integers(9)),
                 "--out", str(path)]) == 0
    out = capsys.readouterr().out
    digest = json.loads(path.read_text())["digest"]
    assert f"model digest: {digest}\n" in out and "publish this digest beside the model" in out
    return path, new, digest


def _one_line_error(capsys):
    err = capsys.readouterr().err
    assert err.startswith("dperm: error: ") and err.count("\n") == 1, err
    return err


def test_show_prints_the_digest_and_checks_the_expected_one(trained, capsys):
    path, new, digest = trained
    assert main(["show", "--model", str(path)]) == 0
    assert f"Digest: {digest} (compare it with the digest the publisher printed)." in \
        capsys.readouterr().out
    assert main(["show", "--model", str(path), "--expect-digest", digest]) == 0
    assert "(matches --expect-digest)" in capsys.readouterr().out
    assert main(["predict", "--model", str(path), "--data", str(new), "--expect-digest", digest]) == 0
    capsys.readouterr()
    for command in (["show"], ["predict", "--data", str(new)]):
        assert main([*command, "--model", str(path), "--expect-digest", "sha256:" + "1" * 64]) == 2
        assert "not the expected 'sha256:1111" in _one_line_error(capsys)


@pytest.mark.parametrize("command", ["show", "predict"])
def test_cli_refuses_the_issue_reproduction_in_one_line(trained, capsys, command):
    """Issue 28: both epsilons set to 0.001 printed "Guarantee: 0.001-DP"; now exit 2, one line."""
    path, new, _ = trained
    document = json.loads(path.read_text())
    document["params"]["epsilon"] = document["privacy"]["epsilon"] = 0.001
    path.write_text(json.dumps(with_digest(document), indent=2))
    extra = ["--data", str(new)] if command == "predict" else []
    assert main([command, "--model", str(path), *extra]) == 2
    err = _one_line_error(capsys)
    assert str(path) in err and "recomputed from the file's public inputs" in err
    assert "0.001-DP" not in err
