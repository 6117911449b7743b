"""Tests of the main job (``dperm demo``): private end-to-end cells first, test-tuned reference after."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from dperm.experiments import demo
from dperm.linear_model import PrivateLinearSVC, PrivateLogisticRegression


def _toy_data(seed=0, n_train=400, n_test=300, d=5):
    """Two Gaussian classes, rows scaled into the unit ball (the demo's data contract)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)

    def draw(n):
        X = rng.normal(size=(n, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        return X, (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)

    X_train, y_train = draw(n_train)
    X_test, y_test = draw(n_test)
    return X_train, y_train, X_test, y_test


def _run(data, **kwargs):
    options = dict(epsilons=(0.5, 2.0), repeats=2, alphas=(1e-3, 1e-1), seed=0, n_jobs=1,
                   progress=None, reference_repeats=2)
    options.update(kwargs)
    return demo.run_demo(data, **options)


@pytest.fixture(scope="module")
def toy_results():
    return _run(_toy_data())


def _default_alpha_used(estimator, data):
    """The alpha a user's default estimator ends up with: ``alpha_`` if it has one, else ``alpha``."""
    estimator.fit(data[0], data[1])
    return float(getattr(estimator, "alpha_", estimator.alpha))


def test_private_cells_come_first_and_use_the_estimators_default_alpha(toy_results):
    data = _toy_data()
    assert toy_results["schema"] == demo.SCHEMA
    assert list(toy_results)[:list(toy_results).index("reference")].count("private") == 1
    cells = toy_results["private"]["cells"]
    assert len(cells) == len(demo.LOSSES) * len(demo.DEMO_MECHANISMS) * 2
    for cell in cells:
        assert len(cell["errors"]) == 2 and 0 <= cell["mean"] <= 1
        common = dict(epsilon=cell["epsilon"], mechanism=cell["mechanism"], fit_intercept=False,
                      data_norm=1.0, classes=[0, 1], random_state=0)
        estimator = (PrivateLogisticRegression(**common) if cell["loss"] == "logistic"
                     else PrivateLinearSVC(loss="huber", h=demo.HUBER_WIDTH, **common))
        assert cell["alpha"] == pytest.approx(_default_alpha_used(estimator, data))
        assert cell["alphas_used"] == [cell["alpha"]] * 2
    assert toy_results["private"]["alpha_parameter"] == demo._default_alpha_parameter()


def test_private_cells_never_look_at_the_test_labels():
    """Flipping the test labels changes the errors but not the alphas the private cells use."""
    X_train, y_train, X_test, y_test = _toy_data()
    plain = _run((X_train, y_train, X_test, y_test), reference_repeats=0)
    flipped = _run((X_train, y_train, X_test, 1 - y_test), reference_repeats=0)
    for a, b in zip(plain["private"]["cells"], flipped["private"]["cells"]):
        assert a["alphas_used"] == b["alphas_used"]
        assert a["errors"] == pytest.approx([1 - e for e in b["errors"]])


def test_the_reference_picks_the_alpha_of_lowest_mean_test_error(toy_results):
    reference = toy_results["reference"]
    assert "NOT PRIVATE" in reference["note"] and reference["repeats"] == 2
    assert set(toy_results["cpu_seconds"]) == {"private", "nonprivate", "reference"}
    assert all(seconds > 0 for seconds in toy_results["cpu_seconds"].values())
    assert len(reference["grid"]) == len(demo.LOSSES) * len(demo.DEMO_MECHANISMS) * 2 * 2
    for best in reference["best"]:
        rivals = [c["mean"] for c in reference["grid"]
                  if (c["loss"], c["mechanism"], c["epsilon"]) == (best["loss"], best["mechanism"], best["epsilon"])]
        assert best["mean"] == min(rivals) and best["alpha"] in (1e-3, 1e-1)
    for loss in demo.LOSSES:
        assert 0 <= reference["nonprivate"][loss]["error"] <= 0.5
        assert reference["nonprivate"][loss]["alpha"] in demo.NONPRIVATE_ALPHA_GRID + (1e-3, 1e-1)


def test_warm_started_nonprivate_path_matches_cold_solves():
    data = _toy_data()
    alphas = (1e-4, 1e-2, 1e-1)
    path = demo._nonprivate_errors("logistic", alphas, data)
    for alpha in alphas:
        assert path[alpha] == demo._nonprivate_errors("logistic", (alpha,), data)[alpha]


def test_table_prints_the_private_numbers_before_the_labelled_reference(toy_results):
    text = demo.format_table(toy_results)
    assert text.index("PRIVATE END TO END") < text.index("REFERENCE, NOT PRIVATE") < text.index("non-private")
    assert "majority-class error" in text


def test_no_reference_when_reference_repeats_is_zero():
    results = _run(_toy_data(), reference_repeats=0, epsilons=(1.0,))
    assert results["reference"]["best"] == [] and results["reference"]["nonprivate"] == {}
    text = demo.format_table(results)
    assert "PRIVATE END TO END" in text and "REFERENCE" not in text


def test_progress_bar_counts_every_fit():
    stream = io.StringIO()
    _run(_toy_data(), epsilons=(1.0,), repeats=1, alphas=(1e-2,), reference_repeats=1, progress=stream)
    # 4 private fits, 2 non-private paths, 4 reference fits
    assert "10/10" in stream.getvalue()


def test_outputs_json_and_png(toy_results, tmp_path):
    paths = demo.save_results(toy_results, tmp_path / "out")
    saved = json.loads(paths["json"].read_text())
    assert saved["private"]["cells"] == toy_results["private"]["cells"]
    assert paths["png"].stat().st_size > 10_000


@pytest.mark.parametrize("bad", [dict(repeats=0), dict(reference_repeats=-1)])
def test_bad_repeat_counts_are_refused(bad):
    with pytest.raises(ValueError, match="repeats"):
        _run(_toy_data(), **bad)
