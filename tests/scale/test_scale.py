"""dperm.scale: private ERM on Dask collections equals the in-memory fit, chunk by chunk."""

from __future__ import annotations

import itertools
import os
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

from dperm import DataClippingWarning  # noqa: E402
from dperm.exceptions import DistributedFitError  # noqa: E402
from dperm.linear_model import (  # noqa: E402
    PrivateLeastSquares,
    PrivateLinearSVC,
    PrivateLogisticRegression,
)
from dperm.losses import LogisticLoss  # noqa: E402
from dperm.privacy.accounting import BudgetAccountant  # noqa: E402
from dperm.scale import ChunkSpec, newton_certified, prepare_chunk  # noqa: E402
from dperm.solvers import RegularizedERMObjective, loss_sums, minimize_certified  # noqa: E402

# Every in-memory fit here compares with a Dask fit, which has no majority fallback (its choice counts the
# rows in memory; fallback="auto" is off on Dask input), so the estimators pass fallback=None.

#: Uneven row chunks with an empty one; they add up to N.
CHUNKS = (700, 0, 1300, 451, 1049, 500)
N = sum(CHUNKS)
TOL = 1e-8


def make_data(n=N, d=6, n_classes=2, seed=0, norm=1.3):
    """Rows of norm up to ``norm`` (some above 1, so clipping happens) and noisy labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (rng.uniform(0.1, norm, size=n) / np.linalg.norm(X, axis=1))[:, None]
    w = rng.normal(size=(d, n_classes))
    y = np.argmax(X @ w + 0.3 * rng.normal(size=(n, n_classes)), axis=1)
    if n_classes == 2:
        y = (X @ w[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def as_dask(X, y, chunks=CHUNKS):
    return da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=(chunks,))


def fit_both(model, X, y, **dask_kw):
    """Fit a clone in memory and one on Dask chunks, warnings recorded."""
    from sklearn.base import clone

    in_memory = clone(model)
    with warnings.catch_warnings(record=True) as memory_warnings:
        warnings.simplefilter("always")
        in_memory.fit(X, y)
    distributed_model = clone(model).set_params(scheduler="threads")
    dX, dy = as_dask(X, y, **dask_kw)
    with warnings.catch_warnings(record=True) as dask_warnings:
        warnings.simplefilter("always")
        distributed_model.fit(dX, dy)
    return in_memory, distributed_model, memory_warnings, dask_warnings


MODELS = [
    PrivateLogisticRegression(fallback=None, mechanism="objective", epsilon=1.0, alpha=1e-3, random_state=7),
    PrivateLogisticRegression(fallback=None, mechanism="output", epsilon=1.0, alpha=1e-3, random_state=7),
    PrivateLogisticRegression(fallback=None, mechanism="gaussian_objective", epsilon=1.0, delta=1e-5,
                              alpha=1e-3, random_state=7),
    PrivateLinearSVC(loss="huber", mechanism="objective", epsilon=0.5, alpha=1e-2,
                     random_state=3),
    PrivateLinearSVC(loss="smooth_hinge", mechanism="output", epsilon=0.5, alpha=1e-2,
                     random_state=3),
    PrivateLogisticRegression(fallback=None, mechanism="objective", fit_intercept=False, alpha=1e-2,
                              random_state=11),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{type(m).__name__}-{m.mechanism}")
def test_dask_fit_equals_in_memory_fit(model):
    X, y = make_data()
    memory, chunked, _, _ = fit_both(model, X, y)
    alpha = chunked.privacy_.alpha + chunked.privacy_.extra_regularization
    # Both solves are within tol/alpha of the same minimiser, with the same noise.
    assert np.linalg.norm(chunked.coef_ - memory.coef_) <= 2 * TOL / alpha
    assert np.allclose(chunked.intercept_, memory.intercept_, atol=2 * TOL / alpha)
    assert chunked.privacy_.noise_scale == pytest.approx(memory.privacy_.noise_scale, rel=1e-12)
    assert chunked.privacy_.n_samples == N
    assert chunked.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(chunked.classes_, memory.classes_)


def test_parquet_columns_of_one_frame_are_partitioned_alike(tmp_path):
    """frame[features] and frame[label] of real Parquet files fit (issue 18's README example).

    Dask's reader fuses small files per projected column set, so the label column alone
    got fewer partitions than the features ("X has 10 row chunks and y has 3").
    """
    X, y = make_data(n=2000, d=3)
    for part in range(10):
        rows = slice(200 * part, 200 * (part + 1))
        frame = pd.DataFrame(X[rows], columns=["a", "b", "c"]).assign(label=y[rows])
        frame.to_parquet(tmp_path / f"part-{part}.parquet")
    frame = dd.read_parquet(str(tmp_path))
    assert frame[["a", "b", "c"]].npartitions != len(frame["label"].to_delayed())
    model = PrivateLogisticRegression(fallback=None, epsilon=1.0, alpha=1e-2, classes=[0, 1], random_state=5)
    memory = clone_of(model).fit(X, y)
    chunked = clone_of(model).set_params(scheduler="threads")
    chunked.fit(frame[["a", "b", "c"]], frame["label"])
    alpha = chunked.privacy_.alpha + chunked.privacy_.extra_regularization
    assert np.linalg.norm(chunked.coef_ - memory.coef_) <= 2 * TOL / alpha
    assert chunked.privacy_.n_samples == 2000


def clone_of(model):
    from sklearn.base import clone

    return clone(model)


def test_multiclass_one_vs_rest_on_chunks_matches_memory():
    X, y = make_data(n_classes=3, seed=4)
    # Dask input fits one-vs-rest whatever multi_class says ("auto"); in memory "ovr" asks for it
    model = PrivateLogisticRegression(fallback=None, epsilon=3.0, alpha=1e-2, random_state=5, multi_class="ovr")
    memory, chunked, _, _ = fit_both(model, X, y)
    assert chunked.coef_.shape == (3, X.shape[1])
    assert np.abs(chunked.coef_ - memory.coef_).max() <= 2 * TOL / 1e-2
    assert chunked.privacy_.n_problems == 3
    assert chunked.privacy_.engine == "dask" and not hasattr(chunked, "n_iter_")


def test_clipped_rows_warn_alike_across_chunks():
    X, y = make_data(norm=2.0, seed=9)
    expected = int((np.linalg.norm(X, axis=1) > 1.0).sum())
    assert 0 < expected < N
    memory, chunked, memory_warnings, dask_warnings = fit_both(
        PrivateLogisticRegression(fallback=None, random_state=0), X, y
    )
    clip_messages = [str(w.message) for w in dask_warnings if w.category is DataClippingWarning]
    assert clip_messages == [m for m in (str(w.message) for w in memory_warnings
                                         if w.category is DataClippingWarning)]
    assert clip_messages and str(expected) not in clip_messages[0]  # no private count


def test_newton_solve_is_certified_in_few_passes(monkeypatch):
    X, y = make_data(n=4000, d=20, seed=2)
    model = PrivateLogisticRegression(fallback=None, epsilon=0.1, alpha=1e-4, random_state=0,
                                      scheduler="synchronous")
    # the pass count is a function of the data, so it is not released; measure it inside
    from dperm.scale import ChunkedERMData, PassRunner

    passes, solves = [], []
    run, solve = PassRunner.run, ChunkedERMData.minimize_certified
    monkeypatch.setattr(PassRunner, "run", lambda self, *a: passes.append(1) or run(self, *a))
    monkeypatch.setattr(ChunkedERMData, "minimize_certified",
                        lambda self, *a: solves.append(solve(self, *a)) or solves[-1])
    model.fit(*as_dask(X, y, chunks=(1000,) * 4))
    assert len(passes) <= 16 and len(solves) == 1 and solves[0].certified
    assert "fitted on Dask" in model.privacy_.summary()
    assert not hasattr(model, "n_iter_") and "data_passes" not in model.privacy_.to_dict()


def test_dask_dataframe_with_string_labels():
    X, y = make_data(seed=6)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["label"] = np.where(y == 1, "yes", "no")
    ddf = dd.from_pandas(frame, npartitions=5)
    model = PrivateLogisticRegression(fallback=None, alpha=1e-2, random_state=1, scheduler="threads")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        model.fit(ddf[[f"f{i}" for i in range(X.shape[1])]], ddf["label"])
        memory = PrivateLogisticRegression(fallback=None, alpha=1e-2, random_state=1).fit(X, frame["label"])
    assert model.classes_.tolist() == ["no", "yes"]
    assert np.linalg.norm(model.coef_ - memory.coef_) <= 2 * TOL / 1e-2
    # prediction on the DataFrame is lazy and chunk-wise
    predictions = model.predict(ddf[[f"f{i}" for i in range(X.shape[1])]])
    assert hasattr(predictions, "compute")
    np.testing.assert_array_equal(predictions.compute(), memory.predict(X))


def test_lazy_prediction_matches_memory():
    X, y = make_data(n_classes=3, seed=8)
    model = PrivateLogisticRegression(fallback=None, alpha=1e-2, random_state=2).fit(X, y)
    dX, dy = as_dask(X, y)
    for method in ("decision_function", "predict", "predict_proba"):
        lazy = getattr(model, method)(dX)
        assert isinstance(lazy, da.Array), method
        np.testing.assert_allclose(lazy.compute(), getattr(model, method)(X))
    assert model.score(dX, dy) == pytest.approx(model.score(X, y))


def test_nan_inside_one_chunk_gets_the_in_memory_error():
    X, y = make_data()
    X[2100, 3] = np.nan  # inside the fourth chunk
    model = PrivateLogisticRegression(fallback=None, random_state=0, scheduler="threads")
    with pytest.raises(ValueError) as in_memory:
        PrivateLogisticRegression(fallback=None, random_state=0).fit(X, y)
    with pytest.raises(ValueError) as chunked:
        model.fit(*as_dask(X, y))
    assert "Input X contains NaN" in str(in_memory.value)
    assert "Input X contains NaN" in str(chunked.value)


def test_continuous_label_inside_one_chunk_gets_the_in_memory_error():
    X, y = make_data()
    y = y.astype(float)
    y[3000] = 0.5
    with pytest.raises(ValueError, match="Unknown label type"):
        PrivateLogisticRegression(fallback=None, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="Unknown label type"):
        PrivateLogisticRegression(fallback=None, random_state=0, scheduler="threads").fit(*as_dask(X, y))


def test_third_label_in_one_chunk_behaves_as_in_memory():
    """A third label is not an error in memory either: both fit one-vs-rest."""
    X, y = make_data(seed=12)
    y[2500] = 2
    memory, chunked, _, _ = fit_both(PrivateLogisticRegression(fallback=None, alpha=1e-2, random_state=4,
                                                               multi_class="ovr"), X, y)
    assert chunked.classes_.tolist() == memory.classes_.tolist() == [0, 1, 2]
    assert np.abs(chunked.coef_ - memory.coef_).max() <= 2 * TOL / 1e-2


def test_single_class_and_misaligned_labels_are_refused():
    X, _ = make_data()
    model = PrivateLogisticRegression(fallback=None, scheduler="threads")
    with pytest.raises(ValueError, match="at least two"):
        model.fit(*as_dask(X, np.zeros(N, dtype=int)))
    dX, _ = as_dask(X, np.zeros(N))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        model.fit(dX, np.zeros(N - 1))
    with pytest.raises(TypeError, match="dask.array.Array or a dask.dataframe.DataFrame"):
        model.fit(X.tolist(), da.from_array(np.zeros(N), chunks=1000))


def test_hinge_is_refused_before_any_budget_is_spent():
    X, y = make_data()
    accountant = BudgetAccountant(epsilon=10.0)
    model = PrivateLinearSVC(loss="hinge", mechanism="output", accountant=accountant,
                             scheduler="threads")
    with pytest.raises(ValueError, match="smooth_hinge"):
        model.fit(*as_dask(X, y))
    assert accountant.spent == (0.0, 0.0)


@pytest.mark.parametrize("estimator", [PrivateLeastSquares(y_bound=1.0)])
def test_estimators_without_a_dask_path_refuse_instead_of_loading(estimator):
    X, y = make_data()
    with pytest.raises(TypeError, match="does not accept Dask collections"):
        estimator.fit(*as_dask(X, y.astype(float)))


def test_unknown_scheduler_is_a_clear_error():
    X, y = make_data()
    with pytest.raises(ValueError, match="scheduler must be"):
        PrivateLogisticRegression(fallback=None, scheduler=42).fit(*as_dask(X, y))


def test_newton_cut_short_by_max_iter_still_releases_a_certified_model():
    """Issue 28: two Newton passes used to raise CertificateError after the spend."""
    X, y = make_data()
    short = PrivateLogisticRegression(fallback=None, max_iter=2, random_state=0, scheduler="threads").fit(*as_dask(X, y))
    full = PrivateLogisticRegression(fallback=None, max_iter=100, random_state=0, scheduler="threads").fit(*as_dask(X, y))
    assert short.privacy_.epsilon == full.privacy_.epsilon
    # same noise, both within tol/alpha of the same perturbed minimiser, both on the release grid
    assert np.allclose(short.coef_, full.coef_, atol=0.1)


def test_newton_certified_matches_the_in_memory_solver():
    X, y = make_data(n=3000, d=8, seed=3)
    signs = np.where(y == 1, 1.0, -1.0)
    b = np.random.default_rng(0).normal(size=8)
    loss = LogisticLoss()
    for alpha in (1e-1, 1e-3, 1e-6):
        reference = minimize_certified(
            RegularizedERMObjective(loss, X, signs, alpha, linear_term=b), tol=1e-10, max_iter=5000
        )
        result = newton_certified(lambda w: loss_sums(loss, X, signs, w, True), 8, 3000, alpha,
                                  1e-10, 100, linear_term=b)
        assert result.certified
        assert np.linalg.norm(result.coef - reference.coef) <= 2e-10 / alpha
        assert result.n_iter <= 40


def test_prepare_chunk_checks_columns_and_clips():
    spec = ChunkSpec(n_features=3, data_norm=1.0, fit_intercept=True, intercept_scaling=2.0)
    X, y, clipped = prepare_chunk(np.array([[3.0, 4.0, 0.0], [0.1, 0.0, 0.0]]), [0, 1], spec)
    assert clipped == 1
    np.testing.assert_allclose(X, [[0.6, 0.8, 0.0, 2.0], [0.1, 0.0, 0.0, 2.0]])
    with pytest.raises(ValueError, match="same columns"):
        prepare_chunk(np.ones((2, 2)), [0, 1], spec)
    empty_X, empty_y, none = prepare_chunk(np.empty((0, 3)), np.empty(0), spec)
    assert empty_X.shape == (0, 4) and empty_y.size == 0 and none == 0


# -- a real cluster: two worker processes on 127.0.0.1 -----------------------------
@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as local:
        yield local


@pytest.mark.slow  # a local Dask cluster started for the test (~30 s loaded)
def test_fit_on_a_cluster_given_by_address(cluster):
    X, y = make_data()
    model = PrivateLogisticRegression(fallback=None, alpha=1e-3, random_state=7)
    memory = model.fit(X, y).coef_.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        chunked = PrivateLogisticRegression(fallback=None, alpha=1e-3, random_state=7,
                                            scheduler=cluster.scheduler_address)
        chunked.fit(*as_dask(X, y))
    assert np.linalg.norm(chunked.coef_ - memory) <= 2 * TOL / 1e-3
    assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")


def _rows_that_kill_their_worker_once(X, marker):
    """The block's rows, after killing the worker process the first time it is computed."""
    if not os.path.exists(marker):
        with open(marker, "w") as handle:
            handle.write("killed")
        os._exit(1)  # the worker dies mid-pass; its nanny starts a fresh one
    return X


def _rows_that_always_kill_their_worker(X):
    os._exit(1)


def _dask_rows_with(function, X, y, *args):
    from dask import delayed

    blocks = [da.from_array(X[:1500], chunks=(1500, X.shape[1])),
              da.from_delayed(delayed(function)(X[1500:], *args), shape=(N - 1500, X.shape[1]),
                              dtype=float)]
    return da.concatenate(blocks), da.from_array(y, chunks=((1500, N - 1500),))


@pytest.mark.slow  # a local Dask cluster with a worker killed mid-fit (~40 s loaded)
def test_worker_killed_mid_fit_is_recomputed_to_the_same_model(cluster, tmp_path):
    X, y = make_data(seed=13)
    memory = PrivateLogisticRegression(fallback=None, alpha=1e-3, random_state=7).fit(X, y).coef_.copy()
    dX, dy = _dask_rows_with(_rows_that_kill_their_worker_once, X, y,
                             str(tmp_path / "killed-once"))
    with distributed.Client(cluster) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataClippingWarning)
            model = PrivateLogisticRegression(fallback=None, alpha=1e-3, random_state=7, scheduler=client)
            model.fit(dX, dy)
    assert (tmp_path / "killed-once").exists()  # the worker really died once
    assert np.linalg.norm(model.coef_ - memory) <= 2 * TOL / 1e-3


def test_worker_that_keeps_dying_fails_with_a_clear_error(cluster):
    import dask

    X, y = make_data()
    dX, dy = _dask_rows_with(_rows_that_always_kill_their_worker, X, y)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with distributed.Client(cluster) as client:
            # the scheduler reads allowed-failures when it is created: set it there too
            client.run_on_scheduler(_set_allowed_failures, 0)
            model = PrivateLogisticRegression(fallback=None, random_state=0, scheduler=client)
            with pytest.raises(DistributedFitError, match="no model was released"):
                model.fit(dX, dy)
            client.run_on_scheduler(_set_allowed_failures, 3)
    assert not hasattr(model, "coef_")


def _set_allowed_failures(value, dask_scheduler=None):
    dask_scheduler.allowed_failures = value


@pytest.mark.slow  # starts and closes a local Dask cluster (~30 s loaded)
def test_default_scheduler_starts_and_closes_a_local_cluster():
    X, y = make_data(n=400, d=3, seed=1)
    with pytest.raises(ValueError):
        distributed.default_client()  # no client is active before the fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        model = PrivateLogisticRegression(fallback=None, alpha=1e-2, random_state=0)
        model.fit(*as_dask(X, y, chunks=(200, 200)))
    memory = PrivateLogisticRegression(fallback=None, alpha=1e-2, random_state=0).fit(X, y)
    assert np.linalg.norm(model.coef_ - memory.coef_) <= 2 * TOL / 1e-2
    with pytest.raises(ValueError):
        distributed.default_client()  # ... nor after: the fit closed its cluster


# -- the CLI: dperm train --engine dask on a directory of Parquet files --------------
def _write_table(directory, seed=0, parts=3, rows=400):
    rng = np.random.default_rng(seed)
    frames = []
    for part in range(parts):
        age = rng.uniform(17, 90, rows)
        color = rng.choice(["red", "green", "blue"], rows)
        label = np.where(age + 20 * (color == "red") + rng.normal(0, 10, rows) > 55, "yes", "no")
        frame = pd.DataFrame({"age": age, "color": color, "label": label})
        frame.to_parquet(directory / f"part-{part}.parquet")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_cli_train_engine_dask_matches_memory_and_round_trips(tmp_path, capsys):
    import json

    from dperm.cli import main

    table_dir = tmp_path / "table"
    table_dir.mkdir()
    table = _write_table(table_dir)
    csv_path = tmp_path / "table.csv"
    table.to_csv(csv_path, index=False)
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps({"age": [17, 90], "color": ["red", "green", "blue"]}))
    common = ["--target", "label", "--categorical", "color", "--bounds", str(bounds),
              "--epsilon", "1", "--alpha", "0.01", "--random-state", "3",
              "--no-fit-intercept"]  # in memory the default adds an intercept and the fallback
    assert main(["train", "--data", str(table_dir), "--engine", "dask", "--scheduler", "threads",
                 "--out", str(tmp_path / "dask.json"), *common]) == 0
    out = capsys.readouterr().out
    assert "trained on 1200 rows" in out and "fitted on Dask" in out
    assert main(["train", "--data", str(csv_path), "--out", str(tmp_path / "memory.json"),
                 *common]) == 0
    dask_model = json.loads((tmp_path / "dask.json").read_text())
    memory_model = json.loads((tmp_path / "memory.json").read_text())
    np.testing.assert_allclose(np.array(dask_model["coef"]), np.array(memory_model["coef"]),
                               atol=2 * TOL / 0.01)
    assert dask_model["params"]["scheduler"] is None
    assert dask_model["privacy"]["engine"] == "dask"
    assert main(["predict", "--model", str(tmp_path / "dask.json"), "--data", str(csv_path),
                 "--out", str(tmp_path / "predictions.csv")]) == 0
    predictions = pd.read_csv(tmp_path / "predictions.csv")
    assert len(predictions) == 1200


def test_cli_engine_dask_needs_public_bounds_for_every_feature(tmp_path, capsys):
    from dperm.cli import main

    table_dir = tmp_path / "table"
    table_dir.mkdir()
    _write_table(table_dir, parts=1)
    code = main(["train", "--data", str(table_dir), "--engine", "dask", "--scheduler", "threads",
                 "--target", "label", "--categorical", "color", "--epsilon", "1",
                 "--out", str(tmp_path / "m.json")])
    assert code == 2
    assert "needs a public bound" in capsys.readouterr().err


def test_cli_engine_dask_reads_a_directory_of_csv_files(tmp_path, capsys):
    import json

    from dperm.cli import main

    table_dir = tmp_path / "csv"
    table_dir.mkdir()
    parquet_dir = tmp_path / "parquet"
    parquet_dir.mkdir()
    table = _write_table(parquet_dir, seed=5, parts=2)
    half = len(table) // 2
    table.iloc[:half].to_csv(table_dir / "a.csv", index=False)
    table.iloc[half:].to_csv(table_dir / "b.csv", index=False)
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps({"age": [17, 90], "color": ["red", "green", "blue"]}))
    common = ["--target", "label", "--categorical", "color", "--bounds", str(bounds),
              "--epsilon", "1", "--random-state", "0", "--engine", "dask",
              "--scheduler", "synchronous"]
    assert main(["train", "--data", str(table_dir), "--out", str(tmp_path / "csv.json"),
                 *common]) == 0
    assert main(["train", "--data", str(parquet_dir), "--out", str(tmp_path / "pq.json"),
                 *common]) == 0
    from_csv = json.loads((tmp_path / "csv.json").read_text())
    from_parquet = json.loads((tmp_path / "pq.json").read_text())
    assert from_csv["privacy"]["n_samples"] == len(table)
    np.testing.assert_allclose(from_csv["coef"], from_parquet["coef"], atol=2 * TOL / 0.01)


def test_budget_is_checked_before_any_pass():
    from dperm.privacy.accounting import BudgetExceededError

    X, y = make_data()
    X[0, 0] = np.nan  # a pass would raise ValueError; the budget check must come first
    accountant = BudgetAccountant(epsilon=0.5)
    model = PrivateLogisticRegression(fallback=None, epsilon=1.0, accountant=accountant, scheduler="threads")
    with pytest.raises(BudgetExceededError):
        model.fit(*as_dask(X, y))
    assert accountant.spent == (0.0, 0.0)


# -- missing values: the Dask reader and dperm train apply one rule, never drop a row ---
def _lines(rows=60, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.uniform(17, 90, rows).round(2)
    color = rng.choice(["red", "green", "blue"], rows)
    label = np.where(age + 20 * (color == "red") > 55, "yes", "no")
    return [f"{a},{c},{lab}" for a, c, lab in zip(age, color, label)]


def _csv(path, lines):
    path.write_text("age,color,label\n" + "\n".join(lines) + "\n")
    return path


def _lazy(data, bounds, **kwargs):
    from dperm.scale._tabular import lazy_design

    return lazy_design(data, "label", categorical=["color"], public_bounds=bounds,
                       scheduler="synchronous", blocksize=300, **kwargs)


def _in_memory(path, bounds):
    from dperm.tabular import build_spec, parse_labels, read_csv_columns

    columns = read_csv_columns(path)
    spec, _ = build_spec(columns, ["age", "color"], categorical=["color"], public_bounds=bounds,
                         row_norm_mode="scale")
    return spec.transform(columns, source=path), parse_labels(columns["label"], "label",
                                                                source=path)


FILLED = {"age": {"lower": 17, "upper": 90, "fill": 53.5}, "color": ["red", "green", "blue", "?"]}


def test_dask_reader_encodes_missing_cells_exactly_as_in_memory(tmp_path):
    lines = _lines()
    lines[5], lines[40], lines[41] = "?,red,yes", ",,no", "nan,?,yes"
    path = _csv(tmp_path / "holey.csv", lines)
    X, y, _ = _lazy(path, FILLED)
    assert len(X.chunks[0]) > 1 and sum(X.chunks[0]) == len(lines)  # several blocks, known sizes
    X_memory, y_memory = _in_memory(path, FILLED)
    np.testing.assert_array_equal(X.compute(), X_memory)
    assert y.compute().tolist() == y_memory.tolist()


def test_parquet_missing_cells_follow_the_same_rule(tmp_path):
    frame = pd.DataFrame({"age": [20.0, np.nan, 40.0], "color": ["red", None, "?"],
                          "label": ["yes", "no", "yes"]})
    frame.to_parquet(tmp_path / "t.parquet")
    path = _csv(tmp_path / "t.csv", ["20,red,yes", ",,no", "40,?,yes"])
    X, _, _ = _lazy(tmp_path / "t.parquet", FILLED)
    np.testing.assert_array_equal(X.compute(), _in_memory(path, FILLED)[0])


@pytest.mark.parametrize("line, column", [("?,red,yes", "age"), ("30,red,", "label"),
                                          ("30,red,?", "label"), ("1e400,red,yes", "age")])
def test_dask_reader_refuses_a_missing_cell_naming_file_column_and_row(tmp_path, line, column):
    # 2 files, several blocks each: the row is counted within its file, across blocks
    from dperm.tabular import TableCellError

    (tmp_path / "t").mkdir()
    _csv(tmp_path / "t" / "a.csv", _lines(seed=1))
    lines = _lines(seed=2)
    lines[47] = line
    second = _csv(tmp_path / "t" / "b.csv", lines)
    bounds = {"age": [17, 90], "color": ["red", "green", "blue"]}
    with pytest.raises(TableCellError) as dask_error:
        _lazy(tmp_path / "t", bounds)
    with pytest.raises(TableCellError) as memory_error:
        _in_memory(second, bounds)
    dask_error, memory_error = dask_error.value, memory_error.value
    assert (dask_error.column, dask_error.row, dask_error.problem, dask_error.remedy) == (
        memory_error.column, memory_error.row, memory_error.problem, memory_error.remedy)
    assert str(dask_error).startswith(f"{second}: column '{column}', data row 48 ")
    # the in-memory reader knows the file's lines: data row 48 is line 49 (after the header)
    if column == "age":
        assert str(memory_error).startswith(f"{second}: line 49, column 'age': ")


def test_cli_engine_dask_keeps_n_for_a_neighbour_with_missing_values(tmp_path, capsys):
    import json

    from dperm.cli import main

    lines = _lines(rows=200, seed=3)
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps(FILLED))
    n_samples = []
    for name, replaced in (("d", lines[9]), ("d_prime", ",,no")):
        neighbour = lines[:9] + [replaced] + lines[10:]
        data = _csv(tmp_path / f"{name}.csv", neighbour)
        assert main(["train", "--data", str(data), "--engine", "dask", "--scheduler",
                     "synchronous", "--target", "label", "--categorical", "color", "--bounds",
                     str(bounds), "--epsilon", "1", "--random-state", "0",
                     "--out", str(tmp_path / f"{name}.json")]) == 0
        document = json.loads((tmp_path / f"{name}.json").read_text())
        n_samples.append(document["privacy"]["n_samples"])
    assert n_samples == [200, 200]
    out = capsys.readouterr().out
    assert "trained on 200 rows (every row of the files; none is dropped)" in out


# -- prediction ships only the public coefficients (issue 31, finding 8) ------------
def in_process_cluster(**kwargs):
    """A one-worker cluster in this process, every port on 127.0.0.1 (the inproc:// default
    would still open its HTTP server on all interfaces); closed by the caller's ``with``."""
    return distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                    host="127.0.0.1", protocol="tcp",
                                    dashboard_address="127.0.0.1:0", **kwargs)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_predict_on_a_distributed_client_with_an_accountant_attached(n_classes):
    """The accountant cannot be pickled, so it must stay on the driver: the workers get only
    the coefficients, intercepts and classes (``PublicLinearScores``)."""
    from dperm.scale import PublicLinearScores

    X, y = make_data(n_classes=n_classes, seed=12)
    budget = BudgetAccountant(epsilon=2.0)
    model = PrivateLogisticRegression(fallback=None, epsilon=0.5, alpha=1e-2, classes=list(range(n_classes)),
                                      accountant=budget, random_state=4).fit(X, y)
    spent = budget.summary()
    dX, dy = as_dask(X, y)
    # an in-process cluster still serialises every task it runs
    with in_process_cluster() as local, distributed.Client(local):
        for method in ("predict", "predict_proba", "decision_function"):
            lazy = getattr(model, method)(dX)
            np.testing.assert_allclose(lazy.compute(), getattr(model, method)(X), err_msg=method)
        assert model.score(dX, dy) == pytest.approx(model.score(X, y))
    assert budget.summary() == spent  # predicting spends nothing
    shipped = PublicLinearScores.of(model)
    assert set(vars(shipped)) == {"coef", "intercept", "classes"}


def test_prediction_refuses_a_wrong_width_before_any_task_runs():
    X, y = make_data(seed=13)
    model = PrivateLogisticRegression(fallback=None, alpha=1e-2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="X has 5 features, but PrivateLogisticRegression is "
                                         "expecting 6"):
        model.predict(da.from_array(X[:, :5], chunks=(500, 5)))
    with pytest.raises(Exception, match="not fitted"):
        PrivateLogisticRegression().predict(da.from_array(X, chunks=(500, 6)))


# -- partitions that fit the workers (issue 31, finding 8) --------------------------
def test_partition_rule_from_memory_limit_columns_and_threads():
    from dperm.scale import partition_rows
    from dperm.scale._partitions import CHUNK_COPIES, MEMORY_SHARE, WORKER_BASELINE

    gib = 2 ** 30
    rows = partition_rows(gib, 123)  # the KDD benchmark: 122 features + the label
    assert rows == int((MEMORY_SHARE * gib - WORKER_BASELINE) // (CHUNK_COPIES * 123 * 8))
    assert rows == 57_117  # the number docs/dask.md gives
    assert partition_rows(gib, 123, threads_per_worker=2) == rows // 2
    assert partition_rows(4 * gib, 123) > 4 * rows  # the baseline is paid once
    with pytest.raises(ValueError, match="memory_limit must be a positive number of bytes"):
        partition_rows(0, 10)
    with pytest.raises(ValueError, match="cannot hold even one row"):
        partition_rows(2 ** 29, 10)  # 0.6 * 0.5 GiB is below the worker's own 0.39 GiB


@pytest.mark.parametrize("sizes, rows", [([10_000], 1_500), ([1_000, 0, 4_096, 7], 1_000),
                                         ([5], 100)])
def test_parquet_pieces_cover_every_row_once_within_the_rule(sizes, rows):
    from dperm.scale._partitions import parquet_pieces

    pieces = parquet_pieces(sizes, rows)
    for group, size in enumerate(sizes):
        mine = [(a, b) for g, a, b in pieces if g == group]
        assert sum(b - a for a, b in mine) == size
        assert all(0 < b - a <= rows for a, b in mine)
        assert all(b == a2 for (_, b), (a2, _) in itertools.pairwise(mine))  # contiguous, in order


def _write_parquet(path, X, y, row_group_size):
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]).assign(label=y)
    frame.to_parquet(path, row_group_size=row_group_size)
    return frame


def test_read_parquet_cuts_one_big_row_group_and_the_fit_equals_memory(tmp_path, monkeypatch):
    """One file, one row group (what made one partition): cut by the rule, read in small
    batches, every row once and in order; the fit on it equals the in-memory fit."""
    from dperm.scale import _partitions, read_parquet

    monkeypatch.setattr(_partitions, "READ_BATCH_ROWS", 256)  # several batches per piece
    X, y = make_data(seed=14)
    frame = _write_parquet(tmp_path / "one.parquet", X, y, row_group_size=N)
    assert dd.read_parquet(tmp_path / "one.parquet").npartitions == 1
    lazy = read_parquet(tmp_path / "one.parquet", rows_per_partition=700)
    assert lazy.npartitions == 6  # ceil(4000 / 700)
    sizes = lazy.map_partitions(len).compute(scheduler="threads")
    assert max(sizes) <= 700 and sum(sizes) == N
    pd.testing.assert_frame_equal(lazy.compute(scheduler="threads").reset_index(drop=True),
                                  frame)
    features = [f"f{i}" for i in range(X.shape[1])]
    model = PrivateLogisticRegression(fallback=None, epsilon=1.0, alpha=1e-3, random_state=5,
                                      scheduler="threads")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        model.fit(lazy[features], lazy["label"])
        memory = PrivateLogisticRegression(fallback=None, epsilon=1.0, alpha=1e-3, random_state=5).fit(X, y)
    assert np.linalg.norm(model.coef_ - memory.coef_) <= 2 * TOL / 1e-3


def test_read_parquet_sizes_partitions_from_the_clients_workers(tmp_path):
    from dperm.scale import partition_rows, read_parquet

    X, y = make_data(seed=15)
    _write_parquet(tmp_path / "a.parquet", X, y, row_group_size=1_000)
    _write_parquet(tmp_path / "b.parquet", X, y, row_group_size=1_000)
    with pytest.raises(ValueError, match="read_parquet sizes partitions from the workers' "
                                         "memory limit"):
        read_parquet(tmp_path)
    limit = 2 ** 30
    with in_process_cluster(memory_limit=limit) as local, distributed.Client(local) as client:
        rows = partition_rows(limit, X.shape[1] + 1)
        lazy = read_parquet(tmp_path, client=client)
        assert rows == 1_003_637
        # row groups of 1000 fit: one partition each, 4 per file
        assert lazy.npartitions == 8
        assert len(read_parquet(tmp_path / "*.parquet", columns=["f0", "label"],
                                client=client).columns) == 2
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['nope'\]"):
        read_parquet(tmp_path, columns=["nope"], rows_per_partition=10)


def test_csv_blocksize_bounds_the_rows_of_every_partition(tmp_path):
    from dperm.scale import csv_blocksize

    X, y = make_data(seed=16)
    path = tmp_path / "rows.csv"
    pd.DataFrame(X).assign(label=y).to_csv(path, index=False)
    frame = dd.read_csv(path, blocksize=csv_blocksize(500, X.shape[1] + 1))
    sizes = frame.map_partitions(len).compute(scheduler="threads")
    assert sum(sizes) == N and max(sizes) <= 500


def test_a_pass_whose_workers_all_stay_paused_fails_instead_of_hanging(monkeypatch):
    """All workers paused (memory above Dask's pause threshold) start no task: the pass is
    abandoned with DistributedFitError naming the partition rule, not waited on forever."""
    from dperm.scale import _cluster

    class Future:
        cancelled = False

        def result(self, timeout):
            raise TimeoutError

        def cancel(self):
            Future.cancelled = True

    class Client:
        status = "paused"

        def compute(self, graph):
            return Future()

        def scheduler_info(self, n_workers):
            return {"workers": {"tcp://127.0.0.1:1": {"status": Client.status},
                                "tcp://127.0.0.1:2": {"status": "paused"}}}

    monkeypatch.setattr(_cluster, "CHECK_INTERVAL", 0.0)
    monkeypatch.setattr(_cluster, "PAUSED_TIMEOUT", 0.05)
    with pytest.raises(DistributedFitError, match="every Dask worker has been paused .* "
                                                  "dperm.scale.read_parquet"):
        _cluster.PassRunner(client=Client())._compute(None)
    assert Future.cancelled
    runner = _cluster.PassRunner(client=Client())
    Client.status = "running"  # one worker still runs: keep waiting
    assert runner._check_paused(0.0) is None


def test_frame_chunks_split_in_their_own_task_keep_the_in_memory_checks():
    """Numeric columns of any dtype are copied once into float64 rows; a string feature
    still gets scikit-learn's in-memory error."""
    X, y = make_data(seed=18)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["f0"] = frame["f0"].astype(np.float32)
    frame["f1"] = (frame["f1"] > 0).astype(int)
    frame["label"] = y
    ddf = dd.from_pandas(frame, npartitions=4)
    features = [f"f{i}" for i in range(X.shape[1])]
    model = PrivateLogisticRegression(fallback=None, alpha=1e-2, classes=[0, 1], random_state=3,
                                      scheduler="threads")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        model.fit(ddf[features], ddf["label"])
        memory = PrivateLogisticRegression(fallback=None, alpha=1e-2, classes=[0, 1], random_state=3).fit(
            frame[features].to_numpy(dtype=float), y)
    assert np.linalg.norm(model.coef_ - memory.coef_) <= 2 * TOL / 1e-2
    frame["f2"] = frame["f2"].astype(str).where(frame.index != 1500, "n/a")
    ddf = dd.from_pandas(frame, npartitions=4)
    with pytest.raises(ValueError, match="could not convert string to float"):
        PrivateLogisticRegression(fallback=None, classes=[0, 1], scheduler="threads").fit(ddf[features],
                                                                            ddf["label"])


def test_cli_reader_cuts_parquet_row_groups_by_the_rule_on_a_client(tmp_path, monkeypatch):
    """``lazy_design`` with a client: one Parquet row group becomes several partitions, the
    encoding equals the in-memory one, and a bad cell is still located by its row in the file."""
    from dperm.scale import _partitions
    from dperm.scale._tabular import lazy_design
    from dperm.tabular import TableCellError

    monkeypatch.setattr(_partitions, "partition_rows", lambda *args: 7)
    lines = _lines()
    frame = pd.DataFrame([line.split(",") for line in lines], columns=["age", "color", "label"])
    frame.to_parquet(tmp_path / "t.parquet", row_group_size=len(lines))  # text cells
    path = _csv(tmp_path / "t.csv", lines)
    bounds = {"age": [17, 90], "color": ["red", "green", "blue"]}
    with in_process_cluster() as local, distributed.Client(local) as client:
        X, y, _ = lazy_design(tmp_path / "t.parquet", "label", categorical=["color"],
                              public_bounds=bounds, scheduler=client)
        assert len(X.chunks[0]) == 9 and max(X.chunks[0]) <= 7  # ceil(60 / 7)
        X_memory, y_memory = _in_memory(path, bounds)
        np.testing.assert_array_equal(X.compute(), X_memory)
        assert y.compute().tolist() == y_memory.tolist()
        frame.loc[47, "age"] = "?"
        frame.to_parquet(tmp_path / "t.parquet", row_group_size=len(lines))
        with pytest.raises(TableCellError, match="column 'age', data row 48 "):
            lazy_design(tmp_path / "t.parquet", "label", categorical=["color"],
                        public_bounds=bounds, scheduler=client)


def test_dask_input_runs_the_one_fit_skeleton_with_another_data_provider(monkeypatch):
    """Issue 29: the Dask path is the estimators' fit skeleton (``_fit_rows``) on ``ChunkedRows``."""
    from dperm.linear_model._base import PrivateLinearModelBase

    providers = []
    skeleton = PrivateLinearModelBase._fit_rows
    monkeypatch.setattr(PrivateLinearModelBase, "_fit_rows",
                        lambda self, rows, *a: providers.append(type(rows).__name__) or skeleton(self, rows, *a))
    X, y = make_data(n=600, d=4, seed=3)
    model = PrivateLogisticRegression(fallback=None, alpha=1e-2, random_state=0, scheduler="synchronous")
    model.fit(*as_dask(X, y, chunks=(300, 300)))
    PrivateLogisticRegression(fallback=None, alpha=1e-2, random_state=0).fit(X, y)
    assert providers == ["ChunkedRows", "InMemoryRows"]
    assert model.n_features_in_ == 4 and model.privacy_.to_dict()["engine"] == "dask"
