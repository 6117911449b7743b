"""Issue 30's benchmark: dperm's estimators at their DEFAULTS on tables nobody fitted a rule on.

Each estimator is run as a new user would run it, given only what a user knows -- the public
bounds, the label set, epsilon -- beside IBM diffprivlib's defaults and scikit-learn, on the
same data in one run. ``benchmarks/_tables.py`` holds the tables (and a disjoint FITTING set
that no number here is ever computed on); its docstring says how bounds are stood in for.

Which table serves which purpose (the EVALUATION set; nothing here fits a constant):

- **binary** (default vs recipe vs diffprivlib vs majority class): ``benefits`` (4,877),
  ``hdma`` (2,380), ``participation`` (872), ``males`` (3,115), ``flchain`` (6,524), ``nwtco``
  (4,028), ``verbagg`` (7,584), ``cowles`` (1,421), ``turnout`` (2,000), ``aids2`` (2,843),
  ``biopsy`` (683), ``medpar`` (1,495), ``kddcup99`` (a 20,000-row random subset of the 10%
  file, dperm's public encoding);
- **regression** (R^2 of the default regressor vs diffprivlib's ``LinearRegression`` vs
  scikit-learn's, and the constant mean): ``diamonds`` (53,940: also the fit-time table),
  ``budgetfood`` (23,971), ``vocab`` (21,638), ``noxemissions`` (8,088), ``computers``
  (6,259): the five with n >= 5,000 for the 0.8x-scikit-learn target; ``slid`` (3,987),
  ``retschool`` (3,059), ``wages1`` (3,294), ``diabetes`` (442, issue 30's CLI example);
- **multiclass** (the default vs one-vs-rest at equal epsilon): ``chile`` (4 classes, 2,431),
  ``vote92`` (3, 909), ``fishing`` (4, 1,182), ``digits`` (10, 1,797);
- **Adult**, official split (``dperm.datasets.load_adult``, ``unit_norm``), 20 noise draws of
  the default at pure epsilon 0.1 and 1 and (epsilon, 1e-5) at 0.1 and 1: test error.

Protocol (section ``cv``): epsilon in {0.5, 1, 3}; 5-fold cross-validation (stratified for
classifiers, ``shuffle=True, random_state=0``) x 5 noise draws per fold, the same folds and
noise seeds for every estimator. Encodings, all per-record with public constants
(:mod:`dperm.preprocessing`): ``unit`` = categoricals one-hot, numeric columns to [0, 1] by the
bounds, rows scaled to norm 1 (``make_private_pipeline(..., feature_range="unit")``'s steps:
dperm's documented encoding, what the estimators' ``data_norm=1`` default expects);
``centred`` = ``make_private_pipeline``'s recipe (numeric columns to [-1, 1]); ``columns`` =
``unit`` without the row step (for diffprivlib's ``LinearRegression``, which takes per-column
bounds, and for scikit-learn); ``linear`` = ``centred`` without the row step, divided by the
public ``sqrt(numeric + categorical columns)`` (rows in the unit ball by a linear map; measured
for the regressor with ``dperm:<Class>@linear``). The estimators (``ESTIMATORS``):

- ``default``: ``PrivateLogisticRegression(epsilon=eps, classes=labels)`` on ``unit`` (its own
  defaults: ``alpha="auto"``, ``mechanism="auto"``, an intercept); multiclass is whatever the
  default does (today one-vs-rest with epsilon split K ways);
- ``recipe``: the same with ``fit_intercept=False`` on ``centred`` (``make_private_pipeline``'s
  and ``dperm train``'s recipe until the majority fallback reached them);
- ``train_default`` (binary): ``dperm train --model logistic``'s default on ``centred`` since then,
  ``fit_intercept=True, intercept_scaling=0.5`` with the estimator's ``fallback="auto"`` (the
  majority fallback and the monotone alpha rule), chosen on the FITTING tables
  (``benchmarks/fallback_recipe_fit.py``); where a file has its cells, the "best of (default,
  recipe)" target compares with it instead of ``recipe``;
- ``ovr`` (multiclass): K binary defaults at epsilon / K each, argmax of their scores, built
  here so it stays one-vs-rest whatever the default becomes;
- ``logodds`` (binary; a measurement prototype, not a dperm estimator): 10% of epsilon on the
  positive count (exact discrete Laplace), its log-odds as an offset inside the default's loss,
  the rest of epsilon on the default's ERM (``_LogOddsOffset``; issue 30's intercept question);
- ``diffprivlib``: ``diffprivlib.models.LogisticRegression(epsilon=eps, data_norm=1)`` on
  ``unit`` (its defaults otherwise: C = 1, an intercept);
- ``lsq``: ``PrivateLeastSquares(y_bound=max|y|, epsilon=eps)`` on ``unit`` (issue 30's call);
- ``quantile``: ``PrivateQuantileRegressor(y_bounds=(min y, max y), epsilon=eps)`` on ``unit``
  (the public target range, as ``lsq`` and diffprivlib get it);
- ``diffprivlib_linreg``: ``LinearRegression(epsilon=eps, bounds_X=(0, 1) per column,
  bounds_y=(min y, max y))`` on ``columns``;
- ``sklearn`` / ``sklearn_unit``: scikit-learn's ``LogisticRegression(max_iter=1000)`` (its
  defaults otherwise) or ``LinearRegression()`` on ``columns`` / ``unit`` (one fit per fold, no
  noise); the regression targets compare with ``sklearn``;
- ``majority`` / ``mean``: the training fold's majority class / mean, scored on the test fold.

``--default-regressor`` names the estimator the regression targets judge: ``lsq`` today; once
the new regressor exists, ``--default-regressor dperm:<Class> --parts cv,timing --estimators
dperm:<Class>`` runs just it into the same JSON (any class dperm exports, at its defaults, given
the public target range; see ``register_dperm_regressor``), and ``--report --default-regressor
dperm:<Class>`` judges it beside the stored peers.

Targets (``evaluate_targets``, cell by cell, never loosened): regression (the default
regressor) R^2 >= -0.02 at every table and epsilon; at epsilon 1 on tables with n >= 5,000
R^2 >= 0.8x ``sklearn``'s; R^2 at the next epsilon not below this one's by more than two
standard errors (``2 sqrt(se1^2 + se2^2)``, se = std of the 25 scores / 5, folds treated as
draws); R^2 above ``diffprivlib_linreg``'s. Binary: ``default`` >= ``diffprivlib`` - 0.005,
>= ``majority`` - 0.005 and >= ``recipe`` - 0.005 (i.e. within 0.005 of the better of the
two). Multiclass: ``default`` > ``ovr``. Adult: mean test error <= 0.232 / 0.176 (pure eps
0.1 / 1), <= 0.205 / 0.168 (delta 1e-5). Fit time: CPU ratio <= 3.

Section ``timing``: on the largest regression table, median process CPU time (and wall time)
of fitting the default regressor vs scikit-learn's ``LinearRegression`` and
``PrivateQuantileRegressor`` vs ``QuantileRegressor(solver="highs")`` (its defaults), one
thread each (``OPENBLAS_NUM_THREADS=1``); CPU time judges the target because the machine is
shared.

The run is resumable and runnable in parts: every finished cell is written to ``--out`` at
once (atomic replace), a re-run skips the cells already there (``--fresh`` starts over), and
``--parts``, ``--only``, ``--estimators``, ``--epsilons`` select what runs; ``--report`` only
rewrites the targets, the markdown table and the plot from the JSON. ``--quick`` is a smoke
run (<= 600 rows per table, 2 folds x 2 draws, 2 Adult draws on 3,000 rows).

Run (one process, ``make bench-defaults``)::

    OPENBLAS_NUM_THREADS=1 nice -n 10 .venv-bench/bin/python benchmarks/defaults.py

Writes ``benchmarks/results/defaults.json`` (every cell, every score, each target of issue 30
evaluated pass / miss with its numbers, the commit measured), ``defaults.md`` and
``defaults.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _tables  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
EPSILONS = (0.5, 1.0, 3.0)
FOLDS, DRAWS = 5, 5
ADULT_DRAWS = 20
ADULT_TARGETS = {(0.1, 0.0): 0.232, (1.0, 0.0): 0.176, (0.1, 1e-5): 0.205, (1.0, 1e-5): 0.168}
#: issue 30's slack: binary "by more than 0.005", regression "R^2 >= -0.02", "0.8x", "3x".
BINARY_SLACK, R2_FLOOR, R2_SHARE, TIME_RATIO = 0.005, -0.02, 0.8, 3.0
LARGE_N = 5000
QUICK_ROWS, QUICK_FOLDS, QUICK_DRAWS, QUICK_ADULT_ROWS = 600, 2, 2, 3000
DIFFPRIVLIB_MISSING = "skipped: diffprivlib is not installed (make bench's .venv-bench has it)"
#: the loaders the harness may run: the evaluation set only (tests add a tiny one).
TABLES = {spec.name: (lambda name=spec.name: _tables.load(name)) for spec in _tables.EVALUATION}


# ---------------------------------------------------------------------------------------------
# encodings
# ---------------------------------------------------------------------------------------------
#: the encodings an estimator can be run on (see the module docstring and ``register_dperm_regressor``)
ENCODINGS = ("unit", "centred", "columns", "linear")


def encodings(table):
    """``{"unit", "centred", "columns"}`` -> encoded X (see the module docstring)."""
    return _tables.encode(table)


# ---------------------------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimator:
    tasks: tuple
    encoding: str
    noisy: bool  # True: one fit per noise draw and epsilon; False: one fit per fold
    private: bool
    label: str


ESTIMATORS = {
    "default": Estimator(("binary", "multiclass"), "unit", True, True, "dperm default"),
    "recipe": Estimator(("binary", "multiclass"), "centred", True, True, "dperm recipe (no intercept)"),
    "train_default": Estimator(("binary",), "centred", True, True,
                               "dperm train default (intercept 0.5 + fallback)"),
    "ovr": Estimator(("multiclass",), "unit", True, True, "dperm one-vs-rest (eps/K each)"),
    "logodds": Estimator(("binary",), "unit", True, True, "prototype: private log-odds offset (10% of eps)"),
    "guarded": Estimator(("binary", "multiclass"), "unit", True, True, "dperm default + majority fallback"),
    "monotone_guarded": Estimator(("binary", "multiclass"), "unit", True, True,
                                  "dperm alpha='monotone' + majority fallback"),
    "diffprivlib": Estimator(("binary", "multiclass"), "unit", True, True, "diffprivlib LR default"),
    "sklearn": Estimator(("binary", "multiclass", "regression"), "columns", False, False, "scikit-learn"),
    "sklearn_unit": Estimator(("binary", "multiclass", "regression"), "unit", False, False,
                              "scikit-learn (unit rows)"),
    "majority": Estimator(("binary", "multiclass"), "unit", False, False, "majority class"),
    "lsq": Estimator(("regression",), "unit", True, True, "dperm PrivateLeastSquares"),
    "quantile": Estimator(("regression",), "unit", True, True, "dperm PrivateQuantileRegressor"),
    "diffprivlib_linreg": Estimator(("regression",), "columns", True, True, "diffprivlib LinearRegression"),
    "mean": Estimator(("regression",), "unit", False, False, "constant mean"),
}


class _Constant:
    def __init__(self, task):
        self.task = task

    def fit(self, X, y):
        if self.task == "regression":
            self.value_ = float(np.mean(y))
        else:
            values, counts = np.unique(y, return_counts=True)
            self.value_ = values[np.argmax(counts)]
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.value_, dtype=object if self.task == "multiclass" else None)


class _OneVsRest:
    """K binary dperm defaults at epsilon / K each (sequential composition), argmax of the scores."""

    def __init__(self, labels, epsilon, seed):
        self.labels, self.epsilon, self.seed = list(labels), epsilon, seed

    def fit(self, X, y):
        from dperm import PrivateLogisticRegression

        k = len(self.labels)
        self.models_ = [PrivateLogisticRegression(epsilon=self.epsilon / k, classes=[0, 1],
                                                  random_state=self.seed * 1009 + j)
                        .fit(X, (y == label).astype(int)) for j, label in enumerate(self.labels)]
        return self

    def predict(self, X):
        scores = np.column_stack([m.decision_function(X) for m in self.models_])
        return np.asarray(self.labels)[np.argmax(scores, axis=1)]


#: The majority-fallback variants (``fallback="majority"``, docs/defaults_classifiers.md): their
#: parameters beside the default's; the Adult section runs them too when ``--estimators`` names them.
FALLBACK_VARIANTS = {"guarded": {"fallback": "majority"},
                     "monotone_guarded": {"alpha": "monotone", "fallback": "majority"}}
ADULT_ESTIMATORS = {"default": {}, **FALLBACK_VARIANTS}


#: ``dperm train``'s binary logistic default's constant feature (benchmarks/fallback_recipe_fit.py).
TRAIN_INTERCEPT_SCALING = 0.5


#: The log-odds prototype's share of epsilon on the class count (the rejected candidate's 0.1).
LOGODDS_SHARE = 0.1


def _offset_loss(loss, offset):
    """A copy of ``loss`` taken at ``w.x + offset`` (a released, so public, constant: same L and c)."""
    import copy

    class OffsetLoss(type(loss)):
        def argument(self, y, scores):
            return super().argument(y, scores + self.offset)

    shifted = copy.copy(loss)
    shifted.__class__ = OffsetLoss
    shifted.offset = float(offset)
    return shifted


class _LogOddsOffset:
    """Prototype of issue 30's intercept with its own accounted share (binary, pure objective).

    ``LOGODDS_SHARE`` of epsilon buys the positive count with exact discrete Laplace noise (L1
    sensitivity 1 under replace-one; scale rounded up to a rational); its log-odds, shrunk toward
    1/2 by a pseudo-count of the noise scale, is the offset ``b0``; the rest of epsilon runs the
    default's ERM (objective perturbation, the default alpha rule at that epsilon, the intercept
    column kept) on the loss at ``w.x + b0``. Sequential composition: epsilon in all. Measured here
    only; not a dperm estimator (it would need its record field and model-file support)."""

    def __init__(self, labels, epsilon, seed, share=LOGODDS_SHARE):
        self.labels, self.epsilon, self.seed, self.share = list(labels), epsilon, seed, share

    def fit(self, X, y):
        import math
        from fractions import Fraction

        from dperm.losses import LogisticLoss
        from dperm.mechanisms import ERMProblem
        from dperm.mechanisms.catalog import run_mechanism
        from dperm.mechanisms.choice import auto_alpha
        from dperm.mechanisms.noise._exact import BitSource, sample_discrete_laplace

        rng = np.random.default_rng(self.seed)
        n = len(y)
        positive = self.labels[1]
        count_epsilon = self.share * self.epsilon
        scale = Fraction(math.ceil(1e6 / count_epsilon), 10**6)  # >= 1 / count_epsilon
        noisy = int(np.count_nonzero(y == positive)) + sample_discrete_laplace(scale, BitSource(rng))
        share = min(max((noisy + float(scale)) / (n + 2 * float(scale)), 0.5 / n), 1 - 0.5 / n)
        self.offset_ = math.log(share / (1 - share))
        erm_epsilon = self.epsilon - count_epsilon
        Xa = np.hstack([X, np.ones((n, 1))])
        norm = math.sqrt(2.0)
        loss = _offset_loss(LogisticLoss(), self.offset_)
        alpha = auto_alpha(n, Xa.shape[1], erm_epsilon, mechanism="objective", loss=LogisticLoss(),
                           data_norm=norm, feature_norm=1.0)
        signed = np.where(y == positive, 1.0, -1.0)
        out = run_mechanism("objective", ERMProblem(Xa, signed, loss, alpha, norm), erm_epsilon, 0.0, rng,
                            1e-8, 1000)
        self.w_ = np.asarray(out.coef, dtype=float)
        return self

    def predict(self, X):
        scores = X @ self.w_[:-1] + self.w_[-1] + self.offset_
        return np.where(scores > 0, self.labels[1], self.labels[0])


def diffprivlib_version():
    try:
        import diffprivlib
    except ImportError:
        return None
    return diffprivlib.__version__


def register_dperm_regressor(name):
    """``"dperm:<Class>"``: any regressor dperm exports, at its defaults, as the new default to judge
    (``--default-regressor dperm:PrivateLinearRegression``); given the public target range through the
    first parameter it has of ``y_bounds`` / ``target_bounds`` (``(min y, max y)``) or ``y_bound``
    (``max |y|``, the symmetric shorthand), nothing else. ``"dperm:<Class>@<encoding>"`` runs it on
    another of :data:`ENCODINGS` (``centred``: ``make_private_pipeline``'s default recipe, what
    ``dperm train`` uses; ``linear``: numeric columns centred to [-1, 1] by their public bounds, the
    one-hot columns as they are, every row divided by the public ``sqrt(numeric + categorical
    columns)``, a linear map, so no row is rescaled by its own norm)."""
    if name.startswith("dperm:") and name not in ESTIMATORS:
        cls, _, encoding = name[len("dperm:"):].partition("@")
        encoding = encoding or "unit"
        if encoding not in ENCODINGS:
            raise ValueError(f"{name!r}: the encoding after '@' must be one of {sorted(ENCODINGS)}")
        label = f"dperm {cls} (default)" + ("" if encoding == "unit" else f" on {encoding}")
        ESTIMATORS[name] = Estimator(("regression",), encoding, True, True, label)
    return name


def _dperm_default_regressor(name, table, epsilon, seed):
    import dperm

    model = getattr(dperm, name[len("dperm:"):].partition("@")[0])(epsilon=epsilon, random_state=seed)
    params = model.get_params()
    for bounds in ("y_bounds", "target_bounds"):
        if bounds in params:
            return model.set_params(**{bounds: table.y_range})
    if "y_bound" in params:
        model.set_params(y_bound=max(abs(table.y_range[0]), abs(table.y_range[1])))
    return model


def make_estimator(name, table, epsilon, seed, X_columns=None):
    """An unfitted model for ``name`` (see ``ESTIMATORS``)."""
    task, labels = table.task, list(table.labels)
    if name.startswith("dperm:"):
        return _dperm_default_regressor(name, table, epsilon, seed)
    if name == "default":
        from dperm import PrivateLogisticRegression

        return PrivateLogisticRegression(epsilon=epsilon, classes=labels, random_state=seed)
    if name in FALLBACK_VARIANTS:
        from dperm import PrivateLogisticRegression

        return PrivateLogisticRegression(epsilon=epsilon, classes=labels, random_state=seed, **FALLBACK_VARIANTS[name])
    if name == "recipe":
        from dperm import PrivateLogisticRegression

        return PrivateLogisticRegression(epsilon=epsilon, classes=labels, fit_intercept=False, random_state=seed)
    if name == "train_default":
        from dperm import PrivateLogisticRegression

        return PrivateLogisticRegression(epsilon=epsilon, classes=labels, fit_intercept=True,
                                         intercept_scaling=TRAIN_INTERCEPT_SCALING, random_state=seed)
    if name == "ovr":
        return _OneVsRest(labels, epsilon, seed)
    if name == "logodds":
        return _LogOddsOffset(labels, epsilon, seed)
    if name == "lsq":
        from dperm import PrivateLeastSquares

        return PrivateLeastSquares(y_bound=max(abs(table.y_range[0]), abs(table.y_range[1])), epsilon=epsilon,
                                   random_state=seed)
    if name == "quantile":
        from dperm import PrivateQuantileRegressor

        return PrivateQuantileRegressor(y_bounds=tuple(table.y_range), epsilon=epsilon, random_state=seed)
    if name == "diffprivlib":
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import LogisticRegression

        return LogisticRegression(epsilon=epsilon, data_norm=1.0, random_state=seed, accountant=BudgetAccountant())
    if name == "diffprivlib_linreg":
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import LinearRegression

        d = X_columns.shape[1]
        return LinearRegression(epsilon=epsilon, bounds_X=(np.zeros(d), np.ones(d)), bounds_y=table.y_range,
                                random_state=seed, accountant=BudgetAccountant())
    if name in ("sklearn", "sklearn_unit"):
        from sklearn.linear_model import LinearRegression, LogisticRegression

        return LinearRegression() if task == "regression" else LogisticRegression(max_iter=1000)
    if name in ("majority", "mean"):
        return _Constant(task)
    raise ValueError(f"unknown estimator {name!r}; choose from {sorted(ESTIMATORS)}")


def score(task, y_true, y_pred):
    if task == "regression":
        from sklearn.metrics import r2_score

        return float(r2_score(y_true, y_pred))
    return float(np.mean(np.asarray(y_pred).astype(str) == np.asarray(y_true).astype(str)))


# ---------------------------------------------------------------------------------------------
# bookkeeping
# ---------------------------------------------------------------------------------------------
def git(*args):
    try:
        return subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def key_of(cell):
    return "|".join(str(cell.get(k)) for k in ("section", "table", "estimator", "epsilon", "delta"))


class Store:
    """The JSON on disk: cells are added one at a time and written at once (atomic replace)."""

    def __init__(self, path, protocol, fresh, record_run=True):
        self.path = Path(path)
        self.data = None
        if self.path.exists() and not fresh:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("protocol") != protocol:
                raise SystemExit(f"{self.path} was written with protocol {data.get('protocol')}, not "
                                 f"{protocol}: pass --fresh to start over or --out for another file.")
            self.data = data
        if self.data is None:
            self.data = {"benchmark": "defaults (issue 30)", "protocol": protocol, "cells": []}
        self.done = {key_of(c) for c in self.data["cells"]}
        self.data.setdefault("runs", [])
        if record_run:
            self.record_run()

    def record_run(self):
        self.data["runs"] = self.data["runs"] + [{
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "git_head": git("rev-parse", "HEAD"),
            "base_commit": git("merge-base", "HEAD", "main"),
            "dperm_source_commit": git("log", "-1", "--format=%H", "--", "../src"),
            "dirty_src": bool(git("status", "--porcelain", "--", "../src")),
            "argv": sys.argv[1:],
            "versions": versions(),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")},
        }]

    def has(self, cell):
        return key_of(cell) in self.done

    def add(self, cell):
        cell["run"] = len(self.data["runs"]) - 1
        self.data["cells"] = [c for c in self.data["cells"] if key_of(c) != key_of(cell)] + [cell]
        self.done.add(key_of(cell))
        self.save()

    def save(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.path)


def versions():
    import sklearn

    import dperm

    return {"dperm": dperm.__version__, "diffprivlib": diffprivlib_version(), "scikit-learn": sklearn.__version__,
            "numpy": np.__version__, "python": platform.python_version()}


def _warning_texts(caught):
    texts = sorted({f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught})
    return texts[:5]


# ---------------------------------------------------------------------------------------------
# section cv
# ---------------------------------------------------------------------------------------------
def prepare(name, quick):
    table = TABLES[name]()
    if quick and len(table.y) > QUICK_ROWS:
        keep = np.sort(np.random.default_rng(0).choice(len(table.y), QUICK_ROWS, replace=False))
        table.X, table.y = table.X[keep], table.y[keep]
    from sklearn.model_selection import KFold, StratifiedKFold

    n_folds = QUICK_FOLDS if quick else FOLDS
    if table.task == "regression":
        folds = list(KFold(n_folds, shuffle=True, random_state=0).split(table.X))
    else:
        folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=0).split(table.X, table.y))
    return table, encodings(table), folds


def run_cv_cell(table, enc, folds, estimator, epsilon, draws):
    spec = ESTIMATORS[estimator]
    cell = {"section": "cv", "table": table.name, "task": table.task, "estimator": estimator,
            "epsilon": epsilon if spec.noisy else None, "delta": 0.0, "n": int(len(table.y)),
            "d": int(enc[spec.encoding].shape[1]), "folds": len(folds), "private": spec.private,
            "draws": draws if spec.noisy else 1}
    if estimator.startswith("diffprivlib") and diffprivlib_version() is None:
        return {**cell, "status": DIFFPRIVLIB_MISSING}
    X = enc[spec.encoding]
    scores, refused, choices, load = [], [], [], os.getloadavg()
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for f, (train, test) in enumerate(folds):
            for k in range(cell["draws"]):
                seed = 7919 * f + 104729 * k + 13
                model = make_estimator(estimator, table, epsilon, seed, X_columns=enc["columns"])
                try:
                    model.fit(X[train], table.y[train])
                except ValueError as error:  # a refusal (e.g. NoiseSwampsSignalError) is what the user gets
                    refused.append(f"{type(error).__name__}: {str(error)[:200]}")
                    continue
                scores.append(score(table.task, table.y[test], model.predict(X[test])))
                choices.append(getattr(getattr(model, "privacy_", None), "fallback_choice", None))
    s = np.asarray(scores)
    return {**cell, "status": "ok" if len(s) else "refused", "scores": [round(v, 6) for v in scores],
            "mean": float(s.mean()) if len(s) else None,
            "std": float(s.std(ddof=1)) if len(s) > 1 else 0.0,
            "se": float(s.std(ddof=1) / np.sqrt(len(s))) if len(s) > 1 else 0.0,
            "refused": len(refused), "refusals": sorted(set(refused))[:3], "warnings": _warning_texts(caught),
            "seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu,
            "loadavg_before": list(load),
            **({"constant_chosen": choices.count("constant")} if "constant" in choices or "model" in choices else {})}


def section_cv(store, names, estimators, epsilons, quick, log):
    draws = QUICK_DRAWS if quick else DRAWS
    for name in names:
        table = None
        for estimator in estimators:
            spec = ESTIMATORS[estimator]
            eps_list = epsilons if spec.noisy else [None]
            for eps in eps_list:
                probe = {"section": "cv", "table": name, "estimator": estimator,
                         "epsilon": eps, "delta": 0.0}
                task = _tables.SPECS[name].task if name in _tables.SPECS else (table and table.task)
                if task is not None and task not in spec.tasks:
                    break
                if store.has(probe):
                    continue
                if table is None:
                    table, enc, folds = prepare(name, quick)
                if table.task not in spec.tasks:
                    break
                cell = run_cv_cell(table, enc, folds, estimator, eps, draws)
                store.add(cell)
                log(f"cv {name:13s} {estimator:18s} eps={eps!s:4s} {cell['status'][:10]:10s} "
                    f"mean={cell.get('mean') if cell.get('mean') is None else format(cell['mean'], '.4g')} "
                    f"({cell.get('seconds', 0):.1f} s)")


# ---------------------------------------------------------------------------------------------
# section adult
# ---------------------------------------------------------------------------------------------
def section_adult(store, quick, log, draws=None, estimators=("default",)):
    for estimator in estimators:
        if estimator in ADULT_ESTIMATORS:
            _section_adult(store, quick, log, draws, estimator)


def _section_adult(store, quick, log, draws, estimator):
    from dperm import PrivateLogisticRegression
    from dperm.datasets import load_adult

    bunch = None
    draws = draws or (QUICK_DRAWS if quick else ADULT_DRAWS)
    for (eps, delta), target in ADULT_TARGETS.items():
        probe = {"section": "adult", "table": "adult", "estimator": estimator, "epsilon": eps, "delta": delta}
        if store.has(probe):
            continue
        if bunch is None:
            bunch = load_adult(encoding="unit_norm")
            Xtr, ytr, Xte, yte = bunch.X_train, bunch.y_train, bunch.X_test, bunch.y_test
            if quick:
                Xtr, ytr = Xtr[:QUICK_ADULT_ROWS], ytr[:QUICK_ADULT_ROWS]
            majority = float(min(np.mean(yte), 1 - np.mean(yte)))
        errors, alphas, mechanisms, choices = [], [], [], []
        wall, cpu = time.perf_counter(), time.process_time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for k in range(draws):
                model = PrivateLogisticRegression(epsilon=eps, delta=delta, classes=[0, 1], random_state=7919 * k + 13,
                                                  **ADULT_ESTIMATORS[estimator]).fit(Xtr, ytr)
                errors.append(float(np.mean(model.predict(Xte) != yte)))
                alphas.append(float(model.alpha_))
                mechanisms.append(str(model.privacy_.mechanism) if hasattr(model, "privacy_") else "")
                choices.append(getattr(model.privacy_, "fallback_choice", None))
        e = np.asarray(errors)
        cell = {**probe, "n_train": int(len(ytr)), "n_test": int(len(yte)), "draws": draws, "status": "ok",
                "errors": [round(v, 6) for v in errors], "mean": float(e.mean()), "std": float(e.std(ddof=1)),
                "target": target, "majority_error": majority, "alpha": float(np.median(alphas)),
                "mechanisms": sorted(set(mechanisms)), "warnings": _warning_texts(caught),
                **({"constant_chosen": choices.count("constant")} if any(choices) else {}),
                "seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu}
        store.add(cell)
        log(f"adult {estimator} eps={eps} delta={delta}: {cell['mean']:.4f} +- {cell['std']:.4f} (target <= {target})")


# ---------------------------------------------------------------------------------------------
# section timing
# ---------------------------------------------------------------------------------------------
def _timed(make, X, y, repeats):
    walls, cpus = [], []
    for _ in range(repeats):
        model = make()
        wall, cpu = time.perf_counter(), time.process_time()
        model.fit(X, y)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {"wall_seconds": walls, "cpu_seconds": cpus, "median_wall": float(np.median(walls)),
            "median_cpu": float(np.median(cpus))}


def section_timing(store, names, quick, repeats, default_regressor, log):
    regression = [n for n in names if _tables.SPECS.get(n) and _tables.SPECS[n].task == "regression"]
    if not regression:
        return
    sizes = {n: SIZES.get(n, 0) for n in regression}
    name = max(sizes, key=sizes.get)
    pairs = {"regressor": (default_regressor, "sklearn_linreg"), "quantile": ("quantile", "sklearn_quantile_highs")}
    table = enc = None
    for label, (ours, theirs) in pairs.items():
        probe = {"section": "timing", "table": name, "estimator": ours, "epsilon": 1.0, "delta": 0.0}
        if store.has(probe):
            continue
        if table is None:
            table, enc, _ = prepare(name, quick)
        from sklearn.linear_model import LinearRegression, QuantileRegressor

        X, y = enc["unit"], table.y
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mine = _timed(lambda: make_estimator(ours, table, 1.0, 0), X, y, repeats)
            peer = _timed((lambda: LinearRegression()) if label == "regressor"
                          else (lambda: QuantileRegressor(solver="highs")), X, y, repeats)
        ratio_cpu = mine["median_cpu"] / peer["median_cpu"]
        cell = {**probe, "pair": label, "peer": theirs, "n": int(X.shape[0]), "d": int(X.shape[1]),
                "repeats": repeats, "status": "ok", "dperm": mine, "sklearn": peer, "ratio_cpu": ratio_cpu,
                "ratio_wall": mine["median_wall"] / peer["median_wall"], "loadavg": list(os.getloadavg())}
        store.add(cell)
        log(f"timing {label}: {ours} {mine['median_cpu']:.3f} s CPU vs {theirs} {peer['median_cpu']:.3f} s "
            f"(ratio {ratio_cpu:.2f})")


# ---------------------------------------------------------------------------------------------
# targets, table, plot
# ---------------------------------------------------------------------------------------------
def _cells(data, section="cv"):
    return {(c["table"], c["estimator"], c["epsilon"], c["delta"]): c for c in data["cells"]
            if c["section"] == section and c.get("status") == "ok"}


def _mean(cells, table, estimator, eps):
    cell = cells.get((table, estimator, eps, 0.0))
    return None if cell is None else cell["mean"]


def _verdict(items):
    status = [i["status"] for i in items]
    if not items:
        return "not measured"
    if "miss" in status:
        return "miss"
    return "pass" if all(s == "pass" for s in status) else "incomplete"


def _check(ok, **numbers):
    if any(v is None for v in numbers.values()):
        return {"status": "not measured", **numbers}
    return {"status": "pass" if ok() else "miss", **numbers}


def evaluate_targets(data, default_regressor="lsq"):
    """Each target of issue 30, cell by cell, pass / miss / not measured with the numbers."""
    cells, tasks = _cells(data), {}
    for c in data["cells"]:
        if c["section"] == "cv":
            tasks.setdefault(c["table"], (c["task"], c["n"]))
    epsilons = sorted({c["epsilon"] for c in data["cells"] if c["section"] == "cv" and c["epsilon"] is not None})
    out = {}
    reg = [t for t, (task, _) in tasks.items() if task == "regression"]
    binary = [t for t, (task, _) in tasks.items() if task == "binary"]
    multi = [t for t, (task, _) in tasks.items() if task == "multiclass"]
    r = default_regressor

    def items(tables, fn, eps_list=epsilons):
        return [{"table": t, "epsilon": e, **fn(t, e)} for t in tables for e in eps_list]

    def floor(t, e):
        m = _mean(cells, t, r, e)
        return _check(lambda: m >= R2_FLOOR, r2=m, bound=R2_FLOOR)

    def share(t, e):
        m, s = _mean(cells, t, r, e), _mean(cells, t, "sklearn", None)
        return _check(lambda: m >= R2_SHARE * s, r2=m, sklearn_r2=s, bound=None if s is None else R2_SHARE * s)

    def ahead_dpl(t, e):
        m, p = _mean(cells, t, r, e), _mean(cells, t, "diffprivlib_linreg", e)
        return _check(lambda: m > p, r2=m, diffprivlib_r2=p)

    def monotone(t, pair):
        lo, hi = (cells.get((t, r, e, 0.0)) for e in pair)
        if lo is None or hi is None:
            return {"status": "not measured"}
        slack = 2 * np.hypot(lo["se"], hi["se"])
        return {"status": "pass" if hi["mean"] >= lo["mean"] - slack else "miss", "r2_low_eps": lo["mean"],
                "r2_high_eps": hi["mean"], "allowed_drop_2se": float(slack)}

    out["regression_r2_floor"] = items(reg, floor)
    large = [t for t in reg if tasks[t][1] >= LARGE_N]
    out["regression_08x_sklearn_eps1_large_n"] = items(large, share, [1.0])
    out["regression_nondecreasing_in_eps"] = [{"table": t, "epsilons": [a, b], **monotone(t, (a, b))}
                                              for t in reg for a, b in zip(epsilons, epsilons[1:])]
    out["regression_ahead_of_diffprivlib"] = items(reg, ahead_dpl)

    def vs(other, slack):
        def fn(t, e):
            m = _mean(cells, t, "default", e)
            o = _mean(cells, t, other, e if ESTIMATORS[other].noisy else None)
            return _check(lambda: m >= o - slack, accuracy=m, **{f"{other}_accuracy": o}, bound=None if o is None
                          else o - slack)
        return fn

    out["binary_not_behind_diffprivlib"] = items(binary, vs("diffprivlib", BINARY_SLACK))
    out["binary_not_below_majority"] = items(binary, vs("majority", BINARY_SLACK))
    recipe = "train_default" if any(k[1] == "train_default" for k in cells) else "recipe"
    out["binary_within_best_of_default_recipe"] = items(binary, vs(recipe, BINARY_SLACK))

    def ahead_ovr(t, e):
        m, o = _mean(cells, t, "default", e), _mean(cells, t, "ovr", e)
        return _check(lambda: m > o, accuracy=m, ovr_accuracy=o)

    out["multiclass_ahead_of_ovr"] = items(multi, ahead_ovr)
    adult = _cells(data, "adult")
    out["adult"] = []
    for (eps, delta), target in ADULT_TARGETS.items():
        c = adult.get(("adult", "default", eps, delta))
        quick = c is not None and c["n_train"] < 30000
        entry = {"epsilon": eps, "delta": delta, "target": target}
        if c is None:
            entry["status"] = "not measured"
        else:
            entry.update(status=("quick run, not judged" if quick else
                                 "pass" if c["mean"] <= target else "miss"),
                         error=c["mean"], std=c["std"], draws=c["draws"], alpha=c["alpha"],
                         majority_error=c["majority_error"])
        out["adult"].append(entry)
    timing = {c["pair"]: c for c in data["cells"] if c["section"] == "timing"
              and (c["pair"] == "quantile" or c["estimator"] == r)}
    out["fit_time"] = []
    for pair in ("regressor", "quantile"):
        c = timing.get(pair)
        out["fit_time"].append({"pair": pair, "status": "not measured"} if c is None else {
            "pair": pair, "table": c["table"], "n": c["n"], "d": c["d"], "dperm": c["estimator"], "peer": c["peer"],
            "dperm_cpu_s": c["dperm"]["median_cpu"], "peer_cpu_s": c["sklearn"]["median_cpu"],
            "ratio_cpu": c["ratio_cpu"], "ratio_wall": c["ratio_wall"], "bound": TIME_RATIO,
            "status": "pass" if c["ratio_cpu"] <= TIME_RATIO else "miss"})
    summary = {}
    for name, entries in out.items():
        counts = {}
        for e in entries:
            counts[e["status"]] = counts.get(e["status"], 0) + 1
        summary[name] = {"verdict": _verdict(entries), **counts}
    return {"default_regressor": r, "summary": summary, "cells": out}


COLUMNS = {
    "binary": ["default", "train_default", "recipe", "diffprivlib", "sklearn", "sklearn_unit", "majority"],
    "multiclass": ["default", "ovr", "recipe", "diffprivlib", "sklearn", "majority"],
    "regression": ["lsq", "quantile", "diffprivlib_linreg", "sklearn", "sklearn_unit", "mean"],
}


def markdown(data, targets):
    cells = _cells(data)
    runs = [data["runs"][i] for i in sorted({c["run"] for c in data["cells"]})]
    measured = "; ".join(sorted({f"dperm at {r.get('base_commit', '?')[:7]} (src/ last changed in "
                                 f"{r['dperm_source_commit'][:7]}{', src dirty' if r.get('dirty_src') else ''})"
                                 for r in runs}))
    heads = ", ".join(sorted({r["git_head"][:7] for r in runs}))
    lines = [f"Measured: {measured}; benchmark at {heads}, "
             f"protocol {data['protocol']}. Mean over folds x draws (+- std); accuracy for classifiers, "
             f"R^2 for regressors. Status: {data.get('status', 'partial')}.", ""]
    for task in ("binary", "regression", "multiclass"):
        tables = sorted({c["table"] for c in data["cells"] if c["section"] == "cv" and c["task"] == task},
                        key=lambda t: next(c["n"] for c in data["cells"] if c.get("table") == t))
        if not tables:
            continue
        cols = list(COLUMNS[task])
        if task == "regression":  # the dperm:<Class>[@encoding] regressors measured into this file, first
            extra = sorted({c["estimator"] for c in data["cells"] if c["section"] == "cv"
                            and c["estimator"].startswith("dperm:")})
            cols = [register_dperm_regressor(name) for name in extra] + cols
        lines += [f"**{task}**", "", "| table (n) | eps | " + " | ".join(ESTIMATORS[c].label for c in cols) + " |",
                  "|---" * (len(cols) + 2) + "|"]
        for t in tables:
            n = next(c["n"] for c in data["cells"] if c.get("table") == t)
            for eps in EPSILONS:
                row = []
                for c in cols:
                    cell = cells.get((t, c, eps if ESTIMATORS[c].noisy else None, 0.0))
                    if cell is None:
                        row.append("")
                    elif ESTIMATORS[c].noisy:
                        row.append(f"{cell['mean']:.3f} +- {cell['std']:.3f}" + (
                            f" ({cell['refused']} refused)" if cell["refused"] else ""))
                    else:
                        row.append(f"{cell['mean']:.3f}")
                lines.append(f"| {t} ({n}) | {eps:g} | " + " | ".join(row) + " |")
        lines.append("")
    lines += ["**Adult** (official split, the default, test error)", "",
              "| epsilon | delta | error | target | |", "|---|---|---|---|---|"]
    for a in targets["cells"]["adult"]:
        err = f"{a['error']:.4f} +- {a['std']:.4f} ({a['draws']} draws)" if "error" in a else ""
        lines.append(f"| {a['epsilon']:g} | {a['delta']:g} | {err} | <= {a['target']} | {a['status']} |")
    lines += ["", "**Fit time** (median process CPU seconds, one thread)", "",
              "| pair | table (n x d) | dperm | scikit-learn | ratio (CPU) | ratio (wall) | target | |",
              "|---|---|---|---|---|---|---|---|"]
    for f in targets["cells"]["fit_time"]:
        if f["status"] == "not measured":
            lines.append(f"| {f['pair']} | | | | | | <= {TIME_RATIO:g}x | not measured |")
            continue
        lines.append(f"| {f['dperm']} vs {f['peer']} | {f['table']} ({f['n']} x {f['d']}) | {f['dperm_cpu_s']:.3f} | "
                     f"{f['peer_cpu_s']:.3f} | {f['ratio_cpu']:.2f} | {f['ratio_wall']:.2f} | <= {TIME_RATIO:g}x | "
                     f"{f['status']} |")
    lines += ["", f"**Targets** (default regressor: `{targets['default_regressor']}`)", "",
              "| target | verdict | cells passed / missed / not measured |", "|---|---|---|"]
    for name, s in targets["summary"].items():
        lines.append(f"| {name} | {s['verdict']} | {s.get('pass', 0)} / {s.get('miss', 0)} / "
                     f"{s.get('not measured', 0)} |")
    return "\n".join(lines) + "\n"


def plot(data, path, default_regressor="lsq"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = _cells(data)
    panels = [("binary", ["default", "recipe", "diffprivlib", "majority"], "accuracy - scikit-learn's"),
              ("multiclass", ["default", "ovr", "diffprivlib", "majority"], "accuracy - scikit-learn's"),
              ("regression", [default_regressor, "quantile", "diffprivlib_linreg", "mean"], "R^2 (clipped at -1)")]
    fig, axes = plt.subplots(len(panels), len(EPSILONS), figsize=(4.2 * len(EPSILONS), 3.6 * len(panels)),
                             squeeze=False)
    markers = ["o", "s", "^", "_"]
    for row, (task, ests, ylabel) in enumerate(panels):
        tables = sorted({c["table"] for c in data["cells"] if c["section"] == "cv" and c["task"] == task})
        for col, eps in enumerate(EPSILONS):
            ax = axes[row][col]
            for m, est in enumerate(ests):
                xs, ys = [], []
                for i, t in enumerate(tables):
                    v = _mean(cells, t, est, eps if ESTIMATORS[est].noisy else None)
                    ref = _mean(cells, t, "sklearn", None)
                    if v is None or (task != "regression" and ref is None):
                        continue
                    xs.append(i + (m - 1.5) * 0.12)
                    ys.append(max(v, -1.0) if task == "regression" else v - ref)
                ax.scatter(xs, ys, marker=markers[m], s=28, label=ESTIMATORS[est].label)
            if task == "regression":
                ax.scatter(range(len(tables)), [_mean(cells, t, "sklearn", None) or np.nan for t in tables],
                           marker="*", color="k", s=30, label="scikit-learn")
            ax.axhline(0.0, color="grey", lw=0.6)
            ax.set_xticks(range(len(tables)))
            ax.set_xticklabels(tables, rotation=60, fontsize=7)
            ax.set_title(f"{task}, eps = {eps:g}", fontsize=9)
            if col == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            if row == 0 and col == 0 or (col == 0):
                ax.legend(fontsize=6, loc="lower left")
    fig.suptitle(f"dperm defaults on the evaluation set ({data.get('status', 'partial')}, "
                 f"dperm at {', '.join(sorted({data['runs'][c['run']].get('base_commit', '?')[:7] for c in data['cells']}))})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(store, out, default_regressor, expected_cells=None):
    data = store.data
    if expected_cells is not None:
        data["status"] = "complete" if expected_cells <= store.done else (
            f"partial: {len(expected_cells & store.done)} of {len(expected_cells)} cells")
    data["targets"] = evaluate_targets(data, default_regressor)
    store.save()
    Path(out).with_suffix(".md").write_text(markdown(data, data["targets"]), encoding="utf-8")
    try:
        plot(data, Path(out).with_suffix(".png"), default_regressor)
    except ImportError:
        pass


def expected_keys(names, estimators, epsilons, parts, default_regressor):
    keys = set()
    for name in names:
        task = _tables.SPECS[name].task if name in _tables.SPECS else None
        for est in estimators:
            spec = ESTIMATORS[est]
            if task is not None and task not in spec.tasks:
                continue
            for eps in (epsilons if spec.noisy else [None]):
                keys.add(key_of({"section": "cv", "table": name, "estimator": est, "epsilon": eps, "delta": 0.0}))
    return keys if "cv" in parts else set()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small tables, 2 folds x 2 draws")
    parser.add_argument("--only", default=None, help="comma-separated tables (default: the evaluation set)")
    parser.add_argument("--estimators", default=None, help=f"comma-separated, from {sorted(ESTIMATORS)}")
    parser.add_argument("--epsilons", default=None, help="comma-separated (default 0.5,1,3)")
    parser.add_argument("--parts", default="adult,timing,cv", help="sections to run: adult, timing, cv")
    parser.add_argument("--default-regressor", default="lsq",
                        help="the estimator the regression targets judge (lsq, or dperm:<Class>)")
    parser.add_argument("--timing-repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="JSON path (default results/defaults.json, "
                                                     "results/defaults_quick.json with --quick)")
    parser.add_argument("--fresh", action="store_true", help="ignore an existing JSON (default: resume it)")
    parser.add_argument("--report", action="store_true", help="only rewrite targets, table and plot")
    args = parser.parse_args(argv)
    register_dperm_regressor(args.default_regressor)
    for name in (args.estimators or "").split(","):
        register_dperm_regressor(name)
    out = Path(args.out or RESULTS / ("defaults_quick.json" if args.quick else "defaults.json"))
    names = args.only.split(",") if args.only else list(TABLES)
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        parser.error(f"--only: {unknown} are not evaluation tables; choose from {sorted(TABLES)}")
    estimators = args.estimators.split(",") if args.estimators else list(ESTIMATORS)
    epsilons = [float(e) for e in args.epsilons.split(",")] if args.epsilons else list(EPSILONS)
    parts = args.parts.split(",")
    protocol = {"folds": QUICK_FOLDS if args.quick else FOLDS, "draws": QUICK_DRAWS if args.quick else DRAWS,
                "quick": args.quick, "adult_draws": QUICK_DRAWS if args.quick else ADULT_DRAWS}
    store = Store(out, protocol, args.fresh, record_run=not args.report)

    def log(message):
        print(time.strftime("%H:%M:%S"), message, flush=True)

    if not args.report:
        # small tables first, so a run cut short has covered the most tables
        order = _by_size(names)
        for part in parts:
            if part == "adult":
                section_adult(store, args.quick, log, estimators=estimators)
            elif part == "timing":
                section_timing(store, order, args.quick, args.timing_repeats, args.default_regressor, log)
            elif part == "cv":
                section_cv(store, order, estimators, epsilons, args.quick, log)
            else:
                parser.error(f"--parts: unknown section {part!r}")
    all_names = list(TABLES)
    expected = expected_keys(all_names, list(ESTIMATORS),
                             list(EPSILONS), ["cv"], args.default_regressor)
    expected |= {key_of({"section": "adult", "table": "adult", "estimator": "default", "epsilon": e, "delta": d})
                 for e, d in ADULT_TARGETS}
    report(store, out, args.default_regressor, expected)
    print(out.with_suffix(".md").read_text(encoding="utf-8"))
    return store.data


#: rows per evaluation table (from _tables' loaders; a cache so ordering needs no loading)
SIZES = {"biopsy": 683, "participation": 872, "vote92": 909, "fishing": 1182, "cowles": 1421, "medpar": 1495,
         "digits": 1797, "turnout": 2000, "hdma": 2380, "chile": 2431, "aids2": 2843, "males": 3115,
         "retschool": 3059, "wages1": 3294, "slid": 3987, "nwtco": 4028, "benefits": 4877, "computers": 6259,
         "flchain": 6524, "verbagg": 7584, "noxemissions": 8088, "kddcup99": 20000, "vocab": 21638,
         "budgetfood": 23971, "diamonds": 53940, "diabetes": 442}


def _by_size(names):
    return sorted(names, key=lambda n: SIZES.get(n, 0))


if __name__ == "__main__":
    main()
