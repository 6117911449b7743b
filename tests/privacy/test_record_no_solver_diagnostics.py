"""No privacy record shows a solver diagnostic (issue 18).

The achieved gradient norm, solution radius and iteration count of a solve are
functions of the private rows; the release policy (:mod:`dperm.privacy.release`)
forbids releasing them. Every solve made during a fit is recorded here (by
wrapping :class:`dperm.solvers.erm.SolveResult`), and neither the record's
``str`` nor its ``to_dict`` may contain any of its diagnostics or words that
report one ("gradient norm 1.07e-05 (tolerance 1e-08, met)" once did).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import dperm.scale._newton
import dperm.solvers.erm
import dperm.solvers.kernel
from dperm import (
    LocalAggregationClassifier,
    PrivateKernelSVC,
    PrivateLeastSquares,
    PrivateLinearSVC,
    PrivateLogisticRegression,
    PrivateParameterSearch,
    PrivatePredictor,
    PrivateQuantileRegressor,
    PSGDClassifier,
)
from dperm.multiparty import NewtonClassifier

#: Words that only a solver diagnostic would bring into a record's text.
DIAGNOSTIC_WORDS = ("gradient norm", "iteration", "n_iter", "met)", "not met", "certified=",
                    "gradient_norm", "solution_radius\"")


def _data(regression=False, n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    if regression:
        return X, np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=n), -1, 1)
    return X, np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)


def _shards():
    X, y = _data(n=150)
    return [(X[:50], y[:50]), (X[50:100], y[50:100]), (X[100:], y[100:])]


CLASSES = {"classes": [-1.0, 1.0]}
FITS = {
    "logistic-objective": lambda: PrivateLogisticRegression(epsilon=1.0, random_state=3, **CLASSES),
    "logistic-output": lambda: PrivateLogisticRegression(epsilon=1.0, mechanism="output",
                                                         random_state=3, **CLASSES),
    "logistic-gaussian": lambda: PrivateLogisticRegression(epsilon=1.0, delta=1e-5,
                                                           mechanism="gaussian_objective",
                                                           random_state=3, **CLASSES),
    "svc-hinge-output": lambda: PrivateLinearSVC(loss="hinge", mechanism="output", epsilon=1.0,
                                                 random_state=3, **CLASSES),
    "kernel-svc": lambda: PrivateKernelSVC(n_components=20, epsilon=2.0, random_state=3,
                                           feature_random_state=1, **CLASSES),
    "quantile": lambda: PrivateQuantileRegressor(quantile=0.3, epsilon=1.0, random_state=3),
    "least-squares": lambda: PrivateLeastSquares(y_bound=1.0, epsilon=1.0, alpha=0.1,
                                                 random_state=3),
    "least-squares-adassp": lambda: PrivateLeastSquares(y_bounds=(-1.0, 2.0), epsilon=1.0,
                                                        random_state=3),
    "predictor": lambda: PrivatePredictor(epsilon_total=2.0, epsilon_per_query=0.5, loss="hinge",
                                          random_state=3),
    "search": lambda: PrivateParameterSearch(
        PrivateLogisticRegression(**CLASSES), {"alpha": [0.01, 0.1]}, epsilon=1.0, random_state=3),
    "psgd": lambda: PSGDClassifier(epsilon=1.0, alpha=0.05, n_rounds=5, random_state=0),
    "local-aggregation": lambda: LocalAggregationClassifier(epsilon=1.0, alpha=0.05, random_state=0),
    "newton": lambda: NewtonClassifier(epsilon=4.0, alpha=0.05, random_state=0, **CLASSES),
}
REGRESSION = {"quantile", "least-squares", "least-squares-adassp"}
MULTIPARTY = {"psgd", "local-aggregation", "newton"}
#: Protocols and mechanisms with no private solve (noised sums only; AdaSSP solves its noised
#: statistics in closed form): only the words are checked.
NO_SOLVE = {"psgd", "newton", "least-squares-adassp"}


@pytest.fixture
def solves(monkeypatch):
    """Every :class:`SolveResult` and :class:`KernelSolve` built while the test runs."""
    seen = []

    def recording(cls):
        class Recording(cls):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                seen.append(self)

        return Recording

    for module in (dperm.solvers.erm, dperm.scale._newton):
        monkeypatch.setattr(module, "SolveResult", recording(dperm.solvers.erm.SolveResult))
    monkeypatch.setattr(dperm.solvers.kernel, "KernelSolve", recording(dperm.solvers.kernel.KernelSolve))
    return seen


def _renderings(value: float) -> set[str]:
    """The ways a float could be printed in a record."""
    return {repr(value), f"{value:g}", f"{value:.3g}", f"{value:.4g}", f"{value:.2e}", f"{value:.3e}"}


def _fit(name):
    estimator = FITS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in MULTIPARTY:
            return estimator.fit(_shards())
        return estimator.fit(*_data(regression=name in REGRESSION))


@pytest.mark.parametrize("name", sorted(FITS))
def test_no_record_shows_a_solver_diagnostic(name, solves):
    record = _fit(name).privacy_
    assert bool(solves) is (name not in NO_SOLVE), "the value check below would be vacuous"
    texts = {"str": str(record), "dict": json.dumps(record.to_dict(), default=str)}
    for kind, text in texts.items():
        lowered = text.lower()
        for word in DIAGNOSTIC_WORDS:
            assert word not in lowered, f"{name}: {kind} mentions {word!r}:\n{text}"
        for solve in solves:
            for value in (getattr(solve, "gradient_norm", 0.0), solve.solution_radius):
                if value == 0.0 or value == getattr(record, "tol", None):
                    continue  # 0 and the public tolerance are not diagnostics
                for shown in _renderings(float(value)):
                    assert shown not in text, f"{name}: {kind} shows a solver value {shown}:\n{text}"


def test_the_check_catches_a_record_that_shows_a_gradient_norm(solves):
    """The test above fails on the text that once leaked (so it can fail)."""
    record = _fit("quantile").privacy_
    leaked = f"{record}\nSolver: gradient norm {solves[-1].gradient_norm:.3g} (tolerance 1e-08, met)"
    assert any(word in leaked.lower() for word in DIAGNOSTIC_WORDS)
    assert any(shown in leaked for shown in _renderings(float(solves[-1].gradient_norm)))


def test_output_perturbation_record_says_why_it_has_no_curvature():
    record = _fit("quantile").privacy_
    assert record.curvature is None
    assert "c = None" not in str(record)
    assert "c not used (output perturbation" in str(record)
    assert "c = 0.25" in str(_fit("logistic-objective").privacy_)
