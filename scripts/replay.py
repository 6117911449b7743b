"""Replay: fingerprints of every value dperm releases, to prove a refactoring changed none of them.

Fits every public estimator, every mechanism through the standalone API, the
in-process multiparty protocols, the parameter search, the private predictor,
the kernel classifiers, the Dask path, the audit, small experiment runs and
``dperm train``, all with fixed seeds on small data, and records the SHA-256 of
what each releases: coefficient bytes (with dtype and shape), the privacy
record (canonical JSON of ``to_dict()`` and ``str()``) and model-file bytes.

Usage (from any worktree; ``dperm`` is imported, so ``PYTHONPATH`` chooses the code)::

    PYTHONPATH=$PWD/src python scripts/replay.py --out after.json [--only SUBSTR]
    python scripts/replay.py --compare before.json after.json   # exit 1 if anything differs

Wall-clock entries of experiment and audit results (``seconds``, ``*_seconds``) are left
out, and the temporary folder is masked in ``dperm train``'s output, so two runs of one
commit give the same file.

A case that raises is recorded as ``{"error": "..."}`` and reported by ``--compare``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from types import SimpleNamespace

# One BLAS thread, set before NumPy loads it: summation order, hence the bytes, must not
# depend on the machine's thread count.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402

#: Case name -> function returning ``{field: value}`` (hashed by :func:`fingerprint`).
CASES: dict = {}
ERROR = "error"


def case(name):
    """Register the decorated function as the replay case ``name``."""

    def register(function):
        if name in CASES:
            raise ValueError(f"duplicate case {name!r}")
        CASES[name] = function
        return function

    return register


# --------------------------------------------------------------------------- hashing


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def array_digest(value) -> str:
    """SHA-256 of an array's dtype, shape and C-contiguous bytes."""
    array = np.ascontiguousarray(np.asarray(value))
    header = f"{array.dtype.str}|{array.shape}|".encode()
    return _sha(header + array.tobytes())


def _jsonable(value):
    """A JSON-serialisable copy: dataclasses as dicts, arrays as lists, tuples as lists."""
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return _jsonable(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"ndarray": array_digest(value)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def without_timings(value):
    """``value`` (JSON-like) without wall-clock entries: keys ``seconds``, ``cpu_seconds``, ``*_seconds``."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items()
                if not (k == "seconds" or k.endswith("_seconds") or k == "cpu_seconds")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def json_digest(value, timings=True) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no whitespace) of ``value``.

    ``timings=False`` drops wall-clock entries first (:func:`without_timings`):
    experiment summaries and audit results time themselves.
    """
    value = _jsonable(value)
    if not timings:
        value = without_timings(value)
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return _sha(text.encode("utf-8"))


def record_fields(record, prefix="privacy") -> dict:
    """The record's canonical JSON digest and the digest of its ``str``."""
    return {f"{prefix}.json": json_digest(record), f"{prefix}.str": _sha(str(record).encode("utf-8"))}


def estimator_fields(model, prefix="") -> dict:
    """Digests of ``coef_``, ``intercept_`` and ``privacy_`` (those the model has)."""
    out = {}
    for name in ("coef_", "intercept_"):
        if hasattr(model, name):
            out[prefix + name] = array_digest(getattr(model, name))
    if hasattr(model, "privacy_"):
        out.update(record_fields(model.privacy_, prefix + "privacy"))
    return out


def file_digest(path) -> str:
    return _sha(Path(path).read_bytes())


# --------------------------------------------------------------------------- data


def classification_data(n=300, d=4, n_classes=2, seed=0):
    """Rows in the unit ball, labels from a noisy linear rule (``n_classes`` labels 0..k-1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    scores = X @ rng.normal(size=(d, n_classes)) + 0.3 * rng.normal(size=(n, n_classes))
    if n_classes == 2:
        return X, (scores[:, 0] > 0).astype(int)
    return X, np.argmax(scores, axis=1)


def regression_data(n=300, d=3, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    y = np.clip(X @ np.array([0.5, -0.5, 0.25, 0.1])[:d] + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


def adult_slice(n=400):
    """The first ``n`` training rows of the bundled Adult data (unit-norm encoding)."""
    from dperm.datasets import load_adult

    bunch = load_adult()
    return np.asarray(bunch.X_train[:n], dtype=float), np.asarray(bunch.y_train[:n])


def shards(n=240, d=4, sizes=(60, 80, 100), seed=1):
    """Multiparty shards: labels in {-1, +1}, consecutive parts of the given sizes."""
    X, y = classification_data(n=n, d=d, seed=seed)
    y = np.where(y == 1, 1.0, -1.0)
    bounds = np.cumsum((0,) + tuple(sizes))
    return [(X[a:b], y[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _spec(n_features):
    from dperm.tabular import NumericColumn, TabularSpec

    return TabularSpec([NumericColumn(f"x{i}", -1.0, 1.0) for i in range(n_features)])


def saved_model_fields(model, n_features) -> dict:
    """Digest of the file :func:`dperm.model_io.save_model` writes for ``model``."""
    from dperm.model_io import save_model

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.json"
        save_model(path, model, _spec(n_features), "label")
        return {"model_file": file_digest(path)}


def fit_and_save(model, X, y, save=True) -> dict:
    model.fit(X, y)
    out = estimator_fields(model)
    if hasattr(model, "linear_model_"):
        out.update(estimator_fields(model.linear_model_, "linear_model_."))
    if hasattr(model, "features_"):
        features = model.features_
        out["features_.frequencies_"] = array_digest(features.frequencies_)
        out["features_.phases_"] = array_digest(features.phases_)
    if save:
        out.update(saved_model_fields(model, X.shape[1]))
    return out


# --------------------------------------------------------------------------- single-party estimators

LABELS3 = np.array(["a", "b", "c"])


def _estimator_cases():
    from dperm import (
        PrivateKernelLogisticRegression,
        PrivateKernelSVC,
        PrivateLeastSquares,
        PrivateLinearSVC,
        PrivateLogisticRegression,
        PrivateQuantileRegressor,
    )

    clf = classification_data()
    clf3 = classification_data(n_classes=3, seed=2)
    reg = regression_data()
    return {
        "logistic-default": (lambda: PrivateLogisticRegression(random_state=1, classes=[0, 1]), clf),
        "logistic-objective": (lambda: PrivateLogisticRegression(mechanism="objective", alpha=0.05,
                                                                 classes=[0, 1], random_state=2), clf),
        "logistic-output": (lambda: PrivateLogisticRegression(mechanism="output", alpha=0.05,
                                                              classes=[0, 1], random_state=3), clf),
        "logistic-gaussian-objective": (lambda: PrivateLogisticRegression(
            mechanism="gaussian_objective", delta=1e-5, classes=[0, 1], random_state=4), clf),
        "logistic-gaussian-objective-004": (lambda: PrivateLogisticRegression(
            mechanism="gaussian_objective_004", delta=1e-5, classes=[0, 1], random_state=5), clf),
        "logistic-auto-delta": (lambda: PrivateLogisticRegression(delta=1e-5, classes=[0, 1], random_state=6), clf),
        "logistic-3-classes-intercept": (lambda: PrivateLogisticRegression(
            classes=[0, 1, 2], fit_intercept=True, intercept_scaling=0.75, random_state=7), clf3),
        "logistic-labels-from-data": (lambda: PrivateLogisticRegression(random_state=8), clf),
        "svc-huber-default": (lambda: PrivateLinearSVC(classes=[0, 1], random_state=9), clf),
        "svc-hinge-output": (lambda: PrivateLinearSVC(loss="hinge", alpha=0.05, classes=[0, 1],
                                                      random_state=10), clf),
        "svc-smooth-hinge-objective": (lambda: PrivateLinearSVC(loss="smooth_hinge", mechanism="objective",
                                                                classes=[0, 1], random_state=11), clf),
        "svc-huber-gaussian-004-3-classes": (lambda: PrivateLinearSVC(
            loss="huber", epsilon=2.0, delta=1e-5, mechanism="gaussian_objective_004", classes=[0, 1, 2],
            random_state=12), clf3),
        "least-squares": (lambda: PrivateLeastSquares(y_bound=1.0, epsilon=1.0, random_state=13), reg),
        "least-squares-intercept": (lambda: PrivateLeastSquares(y_bound=1.0, epsilon=1.0, fit_intercept=True,
                                                                random_state=14), reg),
        "quantile": (lambda: PrivateQuantileRegressor(quantile=0.3, epsilon=1.0, fit_intercept=False,
                                                      random_state=15), reg),
        "kernel-logistic": (lambda: PrivateKernelLogisticRegression(
            epsilon=1.0, classes=[0, 1, 2], n_components=6, feature_random_state=5, random_state=16), clf3),
        "kernel-svc": (lambda: PrivateKernelSVC(epsilon=1.0, classes=[0, 1], n_components=8,
                                                feature_random_state=6, random_state=17), clf),
    }


def _register_estimator(name, make, data):
    @case(f"estimator/{name}")
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fit_and_save(make(), *data)


@case("estimator/logistic-with-accountant")
def logistic_with_accountant():
    """A default fit charging an accountant: the ledger's labels and amounts are part of what it prints."""
    from dperm import PrivateLogisticRegression
    from dperm.privacy.accounting import BudgetAccountant

    accountant = BudgetAccountant(epsilon=5.0, delta=1e-4)
    X, y = classification_data(n=300, n_classes=3, seed=3)
    model = PrivateLogisticRegression(delta=1e-5, classes=[0, 1, 2], accountant=accountant, random_state=23)
    fields = fit_and_save(model, X, y)
    return {**fields, "accountant.summary": _sha(accountant.summary().encode("utf-8"))}


@case("estimator/adult-logistic")
def adult_logistic():
    from dperm import PrivateLogisticRegression

    X, y = adult_slice()
    return fit_and_save(PrivateLogisticRegression(epsilon=0.5, classes=np.unique(y).tolist(), random_state=21),
                        X, y)


@case("estimator/adult-svc-output")
def adult_svc():
    from dperm import PrivateLinearSVC

    X, y = adult_slice()
    return fit_and_save(PrivateLinearSVC(loss="hinge", mechanism="output", alpha=0.01,
                                         classes=np.unique(y).tolist(), random_state=22), X, y)


# --------------------------------------------------------------------------- standalone mechanisms


def _problem(loss="logistic", n=200, d=3, alpha=0.05, data_norm=1.0, seed=0):
    from dperm.losses import get_loss
    from dperm.mechanisms import ERMProblem

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (data_norm * rng.uniform(0.1, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    if loss in ("squared", "pinball"):
        y = np.clip(X[:, 0] + 0.1 * rng.normal(size=n), -1, 1)
    else:
        y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return ERMProblem(X, y, get_loss(loss, h=0.5), alpha, data_norm)


def _output_fields(output) -> dict:
    out = {"coef": array_digest(output.coef)}
    calibration = getattr(output, "calibration", None)
    if calibration is not None:
        out["calibration.json"] = json_digest(calibration)
    return out


MECHANISM_RUNS = {
    # name -> (function name in dperm.mechanisms, loss, delta)
    "output-logistic": ("output_perturbation", "logistic", 0.0),
    "output-hinge": ("output_perturbation", "hinge", 0.0),
    "objective-logistic": ("objective_perturbation", "logistic", 0.0),
    "objective-huber": ("objective_perturbation", "huber", 0.0),
    "gaussian-objective-logistic": ("gaussian_objective_perturbation", "logistic", 1e-5),
    "gaussian-objective-004-huber": ("gaussian_objective_perturbation_004", "huber", 1e-5),
}


def _register_mechanism(name, function_name, loss, delta):
    @case(f"mechanism/{name}")
    def run():
        import dperm.mechanisms as mechanisms

        function = getattr(mechanisms, function_name)
        rng = np.random.default_rng(31)
        return _output_fields(function(_problem(loss), epsilon=0.8, delta=delta, rng=rng, tol=1e-9, max_iter=1000))


for _name, (_function, _loss, _delta) in MECHANISM_RUNS.items():
    _register_mechanism(_name, _function, _loss, _delta)


def _register_run_mechanism(name):
    @case(f"mechanism/run_mechanism/{name}")
    def run():
        from dperm.mechanisms import run_mechanism
        from dperm.privacy.accounting import BudgetAccountant

        delta = 1e-5 if "gaussian" in name else 0.0
        rng = np.random.default_rng(32)
        accountant = BudgetAccountant(epsilon=10.0, delta=1e-3)
        output = run_mechanism(name, _problem("huber", seed=3), epsilon=1.0, delta=delta, rng=rng, tol=1e-9,
                               max_iter=1000, accountant=accountant)
        return {**_output_fields(output), "accountant.summary": _sha(accountant.summary().encode("utf-8"))}


for _name in ("objective", "output", "gaussian_objective", "gaussian_objective_004"):
    _register_run_mechanism(_name)


@case("mechanism/samplers-exact")
def samplers_exact():
    from fractions import Fraction

    import dperm.mechanisms as mechanisms
    from dperm.mechanisms.noise import BitSource

    rng = np.random.default_rng(33)
    return {
        "discrete_laplace": array_digest([mechanisms.sample_discrete_laplace(Fraction(5, 2), rng)
                                          for _ in range(20)]),
        "discrete_gaussian": array_digest([mechanisms.sample_discrete_gaussian(Fraction(9, 1), rng)
                                           for _ in range(20)]),
        "discrete_l2_laplace": array_digest(mechanisms.sample_discrete_l2_laplace_vector(
            3, Fraction(40, 7), BitSource(np.random.default_rng(34)))),
    }


@case("mechanism/samplers-float")
def samplers_float():
    import dperm.mechanisms as mechanisms

    rng = np.random.default_rng(35)
    return {"l2_laplace": array_digest(mechanisms.noise.sample_l2_laplace(3, 0.7, rng)),
            "gaussian": array_digest(mechanisms.noise.sample_gaussian(3, 0.7, rng))}


@case("mechanism/release_on_grid")
def release_grid():
    from dperm.mechanisms import release_on_grid
    from dperm.mechanisms.noise import discrete_laplace_calibration

    calibration = discrete_laplace_calibration(0.01, 3, 1.0)
    return {"released": array_digest(release_on_grid(np.array([0.1, -0.2, 0.3]), calibration,
                                                     np.random.default_rng(36)))}


# --------------------------------------------------------------------------- multiparty


def _multiparty_document(model, protocol, n_features):
    """The coordinator's model-file bytes for ``model``'s coefficients and record (``dperm coordinate``'s writer)."""
    from dperm.multiparty.flower import app as flower_app

    params = model.get_params()
    settings = flower_app.CoordinatorSettings(
        n_parties=3, epsilon=params["epsilon"], delta=params.get("delta", 0.0), alpha=params["alpha"],
        n_rounds=params["n_rounds"], protocol=protocol)
    result = SimpleNamespace(coef=np.asarray(model.coef_).ravel(), record=model.privacy_)
    features = [f"x{i}" for i in range(n_features)]
    parties = [SimpleNamespace(features=features, name=f"party-{k}") for k in range(3)]
    document = flower_app.model_document(result, parties, settings)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.json"
        flower_app.write_json(path, document)
        return {"multiparty_model_file": file_digest(path)}


@case("multiparty/psgd")
def multiparty_psgd():
    from dperm.multiparty import PSGDClassifier

    model = PSGDClassifier(epsilon=1.0, alpha=0.05, n_rounds=30, classes=[-1, 1], random_state=41).fit(shards())
    return {**estimator_fields(model), **_multiparty_document(model, "psgd", 4)}


@case("multiparty/psgd-coordinator-dp")
def multiparty_psgd_coordinator_dp():
    from dperm.multiparty import PSGDClassifier

    model = PSGDClassifier(epsilon=0.5, delta=1e-5, alpha=0.05, n_rounds=20, coordinator_dp=True,
                           classes=[-1, 1], random_state=42).fit(shards())
    return {**estimator_fields(model), **_multiparty_document(model, "psgd", 4)}


@case("multiparty/psgd-huber")
def multiparty_psgd_huber():
    from dperm.multiparty import PSGDClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PSGDClassifier(alpha=0.05, n_rounds=20, loss="huber", h=0.5, random_state=43).fit(shards())
    return estimator_fields(model)


@case("multiparty/newton")
def multiparty_newton():
    from dperm.multiparty import NewtonClassifier

    model = NewtonClassifier(epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=5, classes=[-1, 1], random_state=44)
    model.fit(shards())
    return {**estimator_fields(model), **_multiparty_document(model, "newton", 4)}


@case("multiparty/local-aggregation")
def multiparty_local_aggregation():
    from dperm.multiparty import LocalAggregationClassifier

    model = LocalAggregationClassifier(epsilon=1.0, alpha=0.05, classes=[-1, 1], random_state=45).fit(shards())
    return estimator_fields(model)


@case("multiparty/adult-psgd")
def multiparty_adult_psgd():
    from dperm.multiparty import PSGDClassifier

    X, y = adult_slice(300)
    y = np.where(y == np.unique(y)[1], 1.0, -1.0)
    parts = [(X[:100], y[:100]), (X[100:200], y[100:200]), (X[200:], y[200:])]
    model = PSGDClassifier(epsilon=1.0, alpha=0.01, n_rounds=20, random_state=46).fit(parts)
    return estimator_fields(model)


@case("multiparty/flower-inprocess-record")
def multiparty_flower_record():
    """The Flower apps on the in-process grid (OS randomness: only the record is deterministic)."""
    from dperm.multiparty.flower import app as flower_app
    from dperm.multiparty.flower.grid import InProcessGrid

    parts = shards(n=150, sizes=(40, 50, 60), seed=4)
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for k, (X, y) in enumerate(parts):
            path = Path(folder) / f"shard{k}.csv"
            rows = ["x0,x1,x2,x3,label"] + [",".join([*(repr(float(v)) for v in row), str(int(label))])
                                             for row, label in zip(X, y)]
            path.write_text("\n".join(rows) + "\n")
            paths.append(path)
        nodes = (11, 22, 33)
        grid = InProcessGrid({node: flower_app.client_app for node in nodes},
                             {node: {"data-path": str(path), "party-name": f"bank-{k}", "max-epsilon": 6.0,
                                     "max-delta": 1e-5, "max-rounds": 4,
                                     "ledger-path": str(Path(folder) / f"ledger-{node}.json")}
                              for k, (node, path) in enumerate(zip(nodes, paths))})
        settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=4,
                                                  wait_seconds=1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result, _, _, _ = flower_app.coordinate(grid, settings)
    return record_fields(result.record)


# --------------------------------------------------------------------------- tuning, prediction, kernels


def _register_tuning(method):
    @case(f"tuning/{method}")
    def run():
        from dperm import PrivateLogisticRegression, PrivateParameterSearch

        X, y = classification_data(n=400, seed=5)
        search = PrivateParameterSearch(estimator=PrivateLogisticRegression(),
                                        param_grid={"alpha": [0.01, 0.1, 1.0]}, epsilon=1.0, random_state=51,
                                        classes=[0, 1], method=method, stopping_mean=4.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            search.fit(X, y)
        return {"best_index_": array_digest(np.int64(search.best_index_)),
                "best_params_": json_digest(search.best_params_),
                **estimator_fields(search.best_estimator_, "best_estimator_."),
                **record_fields(search.privacy_)}


for _method in ("alg4", "random_stopping"):
    _register_tuning(_method)


def _register_predictor(solver):
    @case(f"prediction/{solver}")
    def run():
        from dperm import PrivatePredictor

        X, y = classification_data(n=200, d=3, seed=6)
        predictor = PrivatePredictor(epsilon_total=2.0, epsilon_per_query=0.25, alpha=0.5, gamma=1.0, solver=solver,
                                     n_components=50,
                                     random_state=61)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            predictor.fit(X, y)
            answers = predictor.predict(X[:5])
        return {"predictions": array_digest(answers), **record_fields(predictor.privacy_)}


for _solver in ("exact", "features"):
    _register_predictor(_solver)


@case("prediction/hinge-exact")
def predictor_hinge():
    from dperm import PrivatePredictor

    X, y = classification_data(n=200, d=3, seed=7)
    predictor = PrivatePredictor(epsilon_total=2.0, epsilon_per_query=0.5, loss="hinge", alpha=0.5, solver="exact",
                                 classes=[0, 1],
                                 random_state=62)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        predictor.fit(X, y)
        answers = predictor.predict(X[:4])
    return {"predictions": array_digest(answers), **record_fields(predictor.privacy_)}


# --------------------------------------------------------------------------- Dask


def _register_dask(name, make, n_classes):
    @case(f"dask/{name}")
    def run():
        import dask
        import dask.array as da

        X, y = classification_data(n=400, d=4, n_classes=n_classes, seed=8)
        dX = da.from_array(X, chunks=(150, 4))
        dy = da.from_array(y, chunks=(150,))
        with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make().set_params(scheduler="synchronous").fit(dX, dy)
        return {**estimator_fields(model), **saved_model_fields(model, X.shape[1])}


def _dask_cases():
    from dperm import PrivateLinearSVC, PrivateLogisticRegression

    return {
        "logistic": (lambda: PrivateLogisticRegression(classes=[0, 1], random_state=71), 2),
        "svc-3-classes": (lambda: PrivateLinearSVC(classes=[0, 1, 2], random_state=72), 3),
    }


# --------------------------------------------------------------------------- audit, experiments, CLI


def _register_audit(mechanism, delta):
    @case(f"audit/{mechanism}")
    def run():
        from dperm.audit import audit_mechanism

        result = audit_mechanism(mechanism, 1.0, delta, n_runs=60, random_state=81)
        return {"result.json": json_digest(result, timings=False)}


for _mechanism, _delta in (("output", 0.0), ("objective", 0.0), ("gaussian_objective", 1e-5),
                           ("gaussian_objective_004", 1e-5)):
    _register_audit(_mechanism, _delta)


@case("experiments/demo")
def experiments_demo():
    from dperm.experiments import demo

    X, y = classification_data(n=300, d=5, seed=9)
    Xt, yt = classification_data(n=200, d=5, seed=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = demo.run_demo((X, y, Xt, yt), epsilons=(1.0,), repeats=1, alphas=(1e-2,), seed=0, n_jobs=1,
                                progress=None, reference_repeats=1)
    return {"results.json": json_digest(results, timings=False)}


@case("experiments/learning-rates")
def experiments_learning_rates():
    from dperm.experiments.learning_rates import run_learning_rates

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = run_learning_rates(sizes=[200, 400], n_seeds=1, n_test=300, n_jobs=1, progress=None)
    return {"results.json": json_digest(results, timings=False)}


@case("experiments/chaudhuri2011-fold-cell")
def experiments_chaudhuri():
    from dperm.experiments.chaudhuri2011 import fold_cell

    X, y = classification_data(n=300, d=4, seed=11)
    y = np.where(y == 1, 1.0, -1.0)
    train, test = np.arange(200), np.arange(200, 300)
    return {"cell.json": json_digest(fold_cell(X, y, train, test, "logistic", 0.05, 0.5, 2, 12))}


@case("experiments/rajkumar2012-psgd")
def experiments_rajkumar():
    from dperm.experiments.rajkumar2012 import run_psgd

    X, y = classification_data(n=300, d=4, seed=13)
    y = np.where(y == 1, 1.0, -1.0)
    data = {"X_train": X[:240], "y_train": y[:240], "X_test": X[240:], "y_test": y[240:]}
    parts = [np.arange(0, 80), np.arange(80, 160), np.arange(160, 240)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run_psgd(data, parts, 1.0, 0.05, 20, np.random.default_rng(14))
    return {"result.json": json_digest(out)}


@case("experiments/rajkumar2012-psgd-coordinator-dp")
def experiments_rajkumar_coordinator_dp():
    from dperm.experiments.rajkumar2012 import run_psgd

    X, y = classification_data(n=300, d=4, seed=15)
    y = np.where(y == 1, 1.0, -1.0)
    data = {"X_train": X[:240], "y_train": y[:240], "X_test": X[240:], "y_test": y[240:]}
    parts = [np.arange(0, 120), np.arange(120, 240)]
    out = run_psgd(data, parts, 1.0, 0.05, 10, np.random.default_rng(16), coordinator_dp=True)
    return {"result.json": json_digest(out)}


def _cli_csv(folder):
    rng = np.random.default_rng(0)
    n = 300
    age = rng.integers(18, 80, n)
    color = rng.choice(["red", "green", "blue"], n)
    score = rng.normal(50, 10, n)
    signal = 0.08 * (age - 50) + 1.5 * (color == "red") + 0.1 * (score - 50)
    label = np.where(signal + 0.5 * rng.normal(size=n) > 0.3, "yes", "no")
    train = folder / "train.csv"
    lines = ["age,color,score,label"] + [f"{a},{c},{s:.3f},{lab}" for a, c, s, lab in zip(age, color, score, label)]
    train.write_text("\n".join(lines) + "\n")
    bounds = folder / "bounds.json"
    bounds.write_text(json.dumps({"age": [0, 120], "color": ["red", "green", "blue"], "score": [0, 100]}))
    return train, bounds


def _register_cli(name, extra):
    @case(f"cli/train-{name}")
    def run():
        from dperm.cli import main

        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            train, bounds = _cli_csv(folder)
            model = folder / "model.json"
            argv = ["train", "--data", str(train), "--target", "label", "--categorical", "color",
                    "--bounds", str(bounds), "--epsilon", "2", "--classes", "yes, no", "--random-state", "1",
                    "--out", str(model), *extra]
            stdout = io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                code = main(argv)
            if code != 0:
                raise RuntimeError(f"dperm train exited {code}")
            printed = stdout.getvalue().replace(str(folder), "<folder>")  # the temporary folder differs
            return {"model_file": file_digest(model), "stdout": _sha(printed.encode("utf-8"))}


_register_cli("logistic", ["--alpha", "0.001"])
_register_cli("hinge-output", ["--model", "hinge", "--mechanism", "output", "--alpha", "0.01"])
_register_cli("dask-logistic", ["--engine", "dask", "--scheduler", "synchronous", "--alpha", "0.001"])


# --------------------------------------------------------------------------- registration needing imports


def _register_late():
    """Cases whose parameters come from dperm (registered at run time, so a failing import is one error)."""
    if any(name.startswith(("estimator/logistic-default", "estimator/*")) for name in CASES):
        return  # already registered in this process
    try:
        for name, (make, data) in _estimator_cases().items():
            _register_estimator(name, make, data)
    except Exception as error:  # noqa: BLE001 - recorded as the case's result
        CASES["estimator/*"] = _raiser(error)
    try:
        for name, (make, n_classes) in _dask_cases().items():
            _register_dask(name, make, n_classes)
    except Exception as error:  # noqa: BLE001
        CASES["dask/*"] = _raiser(error)


def _raiser(error):
    def run():
        raise error

    return run


# --------------------------------------------------------------------------- running and comparing


def run_cases(only=None, stream=sys.stderr) -> dict:
    """Run every case (whose name contains ``only``); returns ``{case: {field: sha256}}``."""
    _register_late()
    results = {}
    for name in sorted(CASES):
        if only and only not in name:
            continue
        started = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # warnings are not released values
                fields = CASES[name]()
            results[name] = dict(sorted(fields.items()))
            status = f"{len(fields)} fields"
        except (Exception, SystemExit) as error:  # noqa: BLE001 - one failing case must not stop the replay
            last = traceback.extract_tb(error.__traceback__)[-1]
            results[name] = {ERROR: f"{type(error).__name__}: {error} ({Path(last.filename).name}:{last.lineno})"}
            status = "ERROR " + results[name][ERROR]
        if stream is not None:
            print(f"{time.perf_counter() - started:6.2f} s  {name}: {status}", file=stream, flush=True)
    return results


def compare(before: dict, after: dict) -> tuple[list, bool]:
    """Rows ``(case, field, verdict)`` and whether everything is the same."""
    rows = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            rows.append((name, "*", "missing in " + ("A" if a is None else "B")))
            continue
        for field in sorted(set(a) | set(b)):
            if field == ERROR or field not in a or field not in b:
                if field == ERROR:
                    verdict = "ERROR in " + " and ".join(s for s, d in (("A", a), ("B", b)) if ERROR in d)
                else:
                    verdict = "missing in " + ("A" if field not in a else "B")
            else:
                verdict = "same" if a[field] == b[field] else "CHANGED"
            rows.append((name, field, verdict))
    return rows, all(verdict == "same" for _, _, verdict in rows)


def markdown_table(rows) -> str:
    lines = ["| case | field | verdict |", "|---|---|---|"]
    lines += [f"| {name} | {field} | {verdict} |" for name, field, verdict in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", help="write {case: {field: sha256}} to this JSON file")
    group.add_argument("--compare", nargs=2, metavar=("A", "B"),
                       help="compare two replay files; exit 1 on any difference")
    parser.add_argument("--only", help="run (or compare) only the cases whose name contains this string")
    args = parser.parse_args(argv)
    if args.compare:
        before, after = ({name: fields for name, fields in json.loads(Path(p).read_text()).items()
                          if not args.only or args.only in name} for p in args.compare)
        rows, same = compare(before, after)
        print(markdown_table(rows))
        changed = sum(verdict != "same" for _, _, verdict in rows)
        print(f"\n{len(rows)} fields, {changed} not the same.")
        return 0 if same else 1
    import dperm

    print(f"dperm from {Path(dperm.__file__).parent}", file=sys.stderr)
    started = time.perf_counter()
    results = run_cases(args.only)
    Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    errors = sum(ERROR in fields for fields in results.values())
    print(f"{len(results)} cases ({errors} errors) in {time.perf_counter() - started:.1f} s -> {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
