"""Learning rates of private least squares and the private SVM, measured against Nie & Wang's theory.

With ``epsilon(m)`` and ``lambda(m)`` chosen as the theorems prescribe, the expected excess
risk of output-perturbed regularised ERM decays like ``m^(-1/3)`` for DP least squares
(002 Thm 3 with ``r = 1``; :func:`dperm.theory.least_squares_parameter_choice`) and for the
DP hinge SVM (000 Thm 4 with ``beta = 1``; :func:`dperm.theory.nie_wang_parameter_choice`).
Both estimators are fitted on a synthetic problem in the unit ball of ``R^2`` over a doubling
grid of ``m`` and many seeds; the log-log slope of the mean excess risk, with a bootstrap
interval, is compared with ``-1/3`` and the measured components (noise cost, non-private
error, projection) explain the verdict. dperm's ``alpha`` is ``2 lambda`` (paper note 7).
The synthetic problem and every measured quantity: ``docs/design/experiments.md``.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from scipy.optimize import minimize
from scipy.special import expit
from threadpoolctl import threadpool_limits

from dperm.experiments._report import (
    output_dir,
    pyplot_or_none,
    report_progress,
    save_figure,
    uniform_ball,
    write_csv,
    write_json,
)
from dperm.experiments.options import DIMENSION, N_SEEDS, N_TEST, SIZES  # import-free for --help
from dperm.linear_model import PrivateLeastSquares, PrivateLinearSVC
from dperm.losses import HuberLoss
from dperm.solvers import solve_hinge_svm
from dperm.theory import least_squares_parameter_choice, nie_wang_parameter_choice

__all__ = [
    "SIZES",
    "best_linear_hinge_risk",
    "conditional_hinge_risk",
    "fit_log_log_slope",
    "make_test_sample",
    "run_learning_rates",
    "run_learning_rates_command",
    "save_results",
]

# SIZES, N_SEEDS, N_TEST and DIMENSION (the defaults) are in dperm.experiments.options.
_DATA_NORM = 1.0
#: ``M``: the public bound on ``|y|`` (000 Sec. 2, 002).
_Y_BOUND = 1.0
#: ``||w*||``: ``|f*(x)| <= 1/2`` on the unit ball.
_REGRESSION_NORM = 0.5
#: Half width of the uniform label noise: ``|y| <= 1/2 + 1/2 = M``.
_LABEL_NOISE_HALF_WIDTH = 0.5
#: ``eta(x) = expit(_SHARPNESS u.x)``.
_SHARPNESS = 4.0
#: ``r`` of 002 Thm 3 (``f* in H_K``, finite-dimensional: any ``r >= 1/2`` gives 1/3).
_REGULARITY = 1.0
#: ``beta`` of 000 Thm 4 (``D(lambda) <= lambda ||f_H||^2``).
_BETA = 1.0
#: Huber widths of the continuation that finds the best linear hinge risk on the test sample.
_REFERENCE_WIDTHS = (0.5, 0.1, 1e-2, 1e-3, 1e-4)
#: Certified radius of the non-private SVM solve (far below the privacy noise).
_NONPRIVATE_RADIUS = 1e-6
#: Bootstrap resamples of the seeds for the slope interval.
_N_BOOTSTRAP = 1000

_TASKS = {
    "least_squares": {
        "label": "DP least squares (PrivateLeastSquares, output perturbation)",
        "theory": "002 Thm 3 (and 000 Sec. 5.1): m^(-min(1/3, 4r/(3+6r))), r = 1",
        "risk": "excess squared risk E(pi(f)) - E(f*)",
    },
    "svm": {
        "label": "DP SVM (PrivateLinearSVC, hinge, output perturbation)",
        "theory": "000 Thm 4 and Sec. 5.2: m^(-beta/(2 beta + 1)), beta = 1",
        "risk": "excess hinge risk E(f) - E(f_H), f_H the best linear function",
    },
}


# ---------------------------------------------------------------------------
# The synthetic problem
# ---------------------------------------------------------------------------
def _true_coefficients(dimension: int) -> np.ndarray:
    """``w*``: alternating, decreasing entries ``(1, -3/4, 9/16, ...)`` scaled to norm ``_REGRESSION_NORM``."""
    direction = (-0.75) ** np.arange(dimension)
    return _REGRESSION_NORM * direction / np.linalg.norm(direction)


def regression_function(X: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``f*(x) = w*.x``, bounded by ``_REGRESSION_NORM`` on the unit ball."""
    return X @ coef


def _conditional_probability(X: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``eta(x) = P(y = 1 | x) = expit(_SHARPNESS u.x)``, ``u = w* / ||w*||``."""
    return expit(_SHARPNESS * (X @ coef) / np.linalg.norm(coef))


def _make_sample(task: str, m: int, coef: np.ndarray, rng: np.random.Generator):
    """A training sample of size ``m``: real labels (least squares) or labels in {-1, +1} (SVM)."""
    X = uniform_ball(m, coef.shape[0], rng)
    if task == "least_squares":
        noise = rng.uniform(-_LABEL_NOISE_HALF_WIDTH, _LABEL_NOISE_HALF_WIDTH, size=m)
        return X, regression_function(X, coef) + noise
    return X, np.where(rng.uniform(size=m) < _conditional_probability(X, coef), 1.0, -1.0)


def make_test_sample(n_test: int, dimension: int, seed: int) -> dict:
    """Test rows with ``f*`` and ``eta`` at each, and the best linear hinge risk on them."""
    coef = _true_coefficients(dimension)
    X = uniform_ball(n_test, dimension, np.random.default_rng([seed, 0]))
    eta = _conditional_probability(X, coef)
    return {"X": X, "coef": coef, "f_star": regression_function(X, coef), "eta": eta,
            "reference_hinge_risk": best_linear_hinge_risk(X, eta)}


# ---------------------------------------------------------------------------
# Risks
# ---------------------------------------------------------------------------
def _squared_excess_risk(predictions: np.ndarray, f_star: np.ndarray) -> float:
    """``E(f) - E(f*) = ||f - f*||^2_{L2(rho_X)}`` for the squared loss (002, proof of Prop. 4)."""
    return float(np.mean((predictions - f_star) ** 2))


def conditional_hinge_risk(scores: np.ndarray, eta: np.ndarray) -> float:
    """``E[(1 - y f(x))_+] = mean(eta (1 - f)_+ + (1 - eta)(1 + f)_+)``, exact given ``eta``."""
    return float(np.mean(eta * np.maximum(0.0, 1.0 - scores) + (1.0 - eta) * np.maximum(0.0, 1.0 + scores)))


def _smoothed_hinge_risk(w, X, eta, loss):
    scores = X @ w
    value = np.mean(eta * loss.value(scores) + (1.0 - eta) * loss.value(-scores))
    slope = eta * loss.derivative(scores) - (1.0 - eta) * loss.derivative(-scores)
    return float(value), X.T @ slope / X.shape[0]


def best_linear_hinge_risk(X: np.ndarray, eta: np.ndarray) -> float:
    """``min_w`` of :func:`conditional_hinge_risk` over linear ``f(x) = w.x`` on the sample.

    The Huber hinge of width ``h`` lies within ``h/4`` above the hinge (003
    eq. 41), so a continuation ``h -> 1e-4`` with L-BFGS, warm-started,
    approaches the minimum from the smooth side; the smallest *hinge* risk of
    the iterates is returned (an upper bound on the minimum, within about
    ``1e-4 / 4`` of it).
    """
    w = np.zeros(X.shape[1])
    best = conditional_hinge_risk(X @ w, eta)
    for width in _REFERENCE_WIDTHS:
        result = minimize(_smoothed_hinge_risk, w, args=(X, eta, HuberLoss(width)), jac=True,
                          method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-12, "ftol": 1e-15})
        w = result.x
        best = min(best, conditional_hinge_risk(X @ w, eta))
    return best


# ---------------------------------------------------------------------------
# One cell: a size, a seed, a task
# ---------------------------------------------------------------------------
def _parameter_choice(task: str, m: int):
    """The theorem's ``(epsilon, lambda, alpha = 2 lambda)`` for ``m`` (paper note 7)."""
    if task == "least_squares":
        return least_squares_parameter_choice(m, _REGULARITY)
    return nie_wang_parameter_choice(m, _BETA)


def _ridge_minimiser(X: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """Exact ``argmin (1/m) sum (y_i - w.x_i)^2 + alpha/2 ||w||^2``: ``(X^T X / m + alpha/2 I) w = X^T y / m``."""
    m, d = X.shape
    return np.linalg.solve(X.T @ X / m + 0.5 * alpha * np.eye(d), X.T @ y / m)


def _noise_seed(base_seed: int, task: str, m: int, seed: int) -> int:
    return int(np.random.SeedSequence([base_seed, 1 + list(_TASKS).index(task), m, seed]).generate_state(1)[0])


def run_cell(task: str, m: int, seed: int, base_seed: int, test: dict) -> dict:
    """Fit the private estimator and the non-private minimiser on one sample; return their risks."""
    with threadpool_limits(1):
        started = time.perf_counter()
        choice = _parameter_choice(task, m)
        data_rng = np.random.default_rng([base_seed, 1 + list(_TASKS).index(task), m, seed, 0])
        X, y = _make_sample(task, m, test["coef"], data_rng)
        common = dict(epsilon=choice.epsilon, alpha=choice.alpha, data_norm=_DATA_NORM,
                      fit_intercept=False, random_state=_noise_seed(base_seed, task, m, seed))
        X_test = test["X"]
        if task == "least_squares":
            model = PrivateLeastSquares(y_bound=_Y_BOUND, **common).fit(X, y)
            private_raw = X_test @ model.coef_
            private_scores = model.predict(X_test)  # projected onto [-M, M] (002 eq. 2)
            exact_raw = X_test @ _ridge_minimiser(X, y, choice.alpha)
            exact_scores = np.clip(exact_raw, -_Y_BOUND, _Y_BOUND)
            risk_private = _squared_excess_risk(private_scores, test["f_star"])
            risk_exact = _squared_excess_risk(exact_scores, test["f_star"])
            projected = float(np.mean(np.abs(private_raw) > _Y_BOUND))
            unprojected = _squared_excess_risk(private_raw, test["f_star"])
        else:
            model = PrivateLinearSVC(loss="hinge", mechanism="output", **common).fit(X, y)
            private_raw = model.decision_function(X_test)
            exact_raw = X_test @ solve_hinge_svm(X, y, choice.alpha, _NONPRIVATE_RADIUS, 100000).coef
            risk_private = conditional_hinge_risk(private_raw, test["eta"])
            risk_exact = conditional_hinge_risk(exact_raw, test["eta"])
            projected = unprojected = math.nan
        return {
            "task": task, "m": m, "seed": seed, "epsilon": choice.epsilon, "lam": choice.lam,
            "alpha": choice.alpha, "risk_private": risk_private, "risk_nonprivate": risk_exact,
            "perturbation": float(np.mean(np.abs(private_raw - exact_raw))),
            "noise_scale": model.privacy_.noise_scale, "projected_fraction": projected,
            "excess_unprojected": unprojected, "seconds": time.perf_counter() - started,
        }


# ---------------------------------------------------------------------------
# Aggregation and slopes
# ---------------------------------------------------------------------------
def _add_excess(rows: list[dict], reference_hinge_risk: float) -> float:
    """Set ``excess_private``, ``excess_nonprivate`` and ``noise_cost`` in every row; return the SVM reference.

    For least squares the risks are already excess risks (``f*`` is in the
    class). For the SVM the reference is the smallest linear hinge risk known:
    the continuation's, or any fitted model's if lower, so no excess is negative.
    """
    svm_risks = [r[k] for r in rows if r["task"] == "svm" for k in ("risk_private", "risk_nonprivate")]
    reference = min([reference_hinge_risk] + svm_risks)
    for row in rows:
        offset = reference if row["task"] == "svm" else 0.0
        row["excess_private"] = row["risk_private"] - offset
        row["excess_nonprivate"] = row["risk_nonprivate"] - offset
        row["noise_cost"] = row["risk_private"] - row["risk_nonprivate"]
    return reference


def fit_log_log_slope(sizes, values) -> tuple[float, float]:
    """Least-squares line through ``(log m, log value)``: ``(slope, intercept)``; NaN if a value is <= 0."""
    values = np.asarray(values, dtype=float)
    if values.size < 2 or np.any(~np.isfinite(values)) or np.any(values <= 0):
        return math.nan, math.nan
    slope, intercept = np.polyfit(np.log(np.asarray(sizes, dtype=float)), np.log(values), 1)
    return float(slope), float(intercept)


def _per_size(rows, column):
    """``{m: array of the column over seeds}``, sizes ascending."""
    sizes = sorted({r["m"] for r in rows})
    return {m: np.array([r[column] for r in rows if r["m"] == m]) for m in sizes}


def _bootstrap_interval(by_size: dict, rng: np.random.Generator) -> tuple[float, float]:
    """95 % interval of the fitted slope, resampling the seeds at every size."""
    sizes = list(by_size)
    slopes = []
    for _ in range(_N_BOOTSTRAP):
        means = [rng.choice(by_size[m], size=by_size[m].size).mean() for m in sizes]
        slopes.append(fit_log_log_slope(sizes, means)[0])
    slopes = np.asarray(slopes)
    slopes = slopes[np.isfinite(slopes)]
    if slopes.size == 0:
        return math.nan, math.nan
    return float(np.quantile(slopes, 0.025)), float(np.quantile(slopes, 0.975))


def _slope_of(rows, column, sizes=None) -> float:
    """Fitted slope of the per-size means of ``column``, over the sizes where the mean is > 0.

    Returns NaN when fewer than two sizes have a positive mean (a noise cost can
    average below zero at a size where it is tiny against the sampling error).
    """
    by_size = _per_size(rows, column)
    means = {m: v.mean() for m, v in by_size.items() if (sizes is None or m in sizes)}
    positive = {m: v for m, v in means.items() if np.isfinite(v) and v > 0}
    if len(positive) < 2:
        return math.nan
    return fit_log_log_slope(list(positive), list(positive.values()))[0]


def _size_table(rows: list[dict]) -> list[dict]:
    """Per-size means (and the standard error of the private excess risk)."""
    table = []
    for m, cell in ((m, [r for r in rows if r["m"] == m]) for m in sorted({r["m"] for r in rows})):
        column = {k: np.array([r[k] for r in cell], dtype=float) for k in _MEAN_COLUMNS}
        se = float(column["excess_private"].std(ddof=1) / math.sqrt(len(cell))) if len(cell) > 1 else 0.0
        entry = {"m": m, "epsilon": cell[0]["epsilon"], "lam": cell[0]["lam"], "alpha": cell[0]["alpha"],
                 "n_seeds": len(cell), "excess_private_se": se,
                 "seconds": float(sum(r["seconds"] for r in cell))}
        entry.update({k: float(v.mean()) for k, v in column.items()})
        table.append(entry)
    return table


#: Columns averaged over seeds in the per-size table.
_MEAN_COLUMNS = ("excess_private", "excess_nonprivate", "noise_cost", "perturbation", "noise_scale",
                "projected_fraction", "excess_unprojected")


def _summarise_task(rows: list[dict], task: str, seed: int) -> dict:
    """Per-size means, the fitted slope with its interval, the components' slopes and the verdict."""
    rows = [r for r in rows if r["task"] == task]
    by_size = _per_size(rows, "excess_private")
    sizes = list(by_size)
    upper_sizes = sizes[len(sizes) // 2:]
    slope, intercept = fit_log_log_slope(sizes, [v.mean() for v in by_size.values()])
    bootstrap_rng = np.random.default_rng([seed, 99])
    summary = {
        "label": _TASKS[task]["label"], "risk": _TASKS[task]["risk"], "theory": _TASKS[task]["theory"],
        "theoretical_slope": -_parameter_choice(task, sizes[0]).rate_exponent,
        "fitted_slope": slope, "fitted_intercept": intercept,
        "slope_interval_95": list(_bootstrap_interval(by_size, bootstrap_rng)),
        "upper_half_sizes": upper_sizes,
        "upper_half_slope": _slope_of(rows, "excess_private", upper_sizes),
        "upper_half_interval_95": list(_bootstrap_interval(
            {m: by_size[m] for m in upper_sizes}, bootstrap_rng)),
        "component_slopes": {column: _slope_of(rows, column) for column in
                             ("excess_nonprivate", "noise_cost", "perturbation", "noise_scale",
                              "excess_unprojected")},
        "per_size": _size_table(rows),
    }
    summary["verdict"] = _verdict(summary["fitted_slope"], summary["slope_interval_95"],
                                  summary["theoretical_slope"])
    summary["upper_half_verdict"] = _verdict(summary["upper_half_slope"],
                                             summary["upper_half_interval_95"],
                                             summary["theoretical_slope"])
    summary["reason"] = _reason(task, summary)
    return summary


def _verdict(slope: float, interval, theory: float) -> str:
    """``"matches"`` if the theoretical slope is in the 95 % interval, else ``"faster"``/``"slower"``."""
    low, high = interval
    if not (math.isfinite(slope) and math.isfinite(low) and math.isfinite(high)):
        return "undetermined"
    if low <= theory <= high:
        return "matches"
    return "faster" if high < theory else "slower"


def _format_slope(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else "not fitted (a mean <= 0)"


def _reason(task: str, s: dict) -> str:
    """State the verdict plainly, then the measured components that explain it."""
    theory, slope = s["theoretical_slope"], s["fitted_slope"]
    (low, high), (upper_low, upper_high) = s["slope_interval_95"], s["upper_half_interval_95"]
    slopes = s["component_slopes"]
    first, last = s["per_size"][0], s["per_size"][-1]
    statement = {
        "matches": "the measured rate MATCHES the theoretical rate.",
        "faster": "the excess risk decays FASTER than the theoretical rate (the theorem is an upper "
                  "bound and is not tight here).",
        "slower": "the excess risk decays SLOWER than the theoretical rate over this grid.",
        "undetermined": "no slope could be fitted.",
    }[s["verdict"]]
    parts = [f"Fitted slope {_format_slope(slope)} (95 % bootstrap interval over seeds "
             f"[{low:.3f}, {high:.3f}]) vs theoretical {theory:.3f}: {statement}"]
    noise_share = last["noise_cost"] / last["excess_private"] if last["excess_private"] > 0 else math.nan
    if noise_share >= 0.5:
        parts.append(f"Measured: the privacy noise dominates the excess risk ({noise_share:.0%} at "
                     f"m={last['m']}); noise cost slope {_format_slope(slopes['noise_cost'])}; the "
                     f"non-private minimiser at the same lambda has slope "
                     f"{_format_slope(slopes['excess_nonprivate'])}.")
    else:
        parts.append(f"Measured: the non-private part (regularisation bias and sample error of the "
                     f"exact minimiser at lambda(m)) dominates the excess risk ({1 - noise_share:.0%} "
                     f"at m={last['m']}; slope {_format_slope(slopes['excess_nonprivate'])}); the noise "
                     f"cost is {noise_share:.1%} of it (slope {_format_slope(slopes['noise_cost'])}).")
    if task == "least_squares":
        parts.append(f"The projection pi onto [-M, M] (002 eq. 2) caps the noisy predictions: "
                     f"{first['projected_fraction']:.0%} of test predictions are projected at "
                     f"m={first['m']}, {last['projected_fraction']:.1%} at m={last['m']}; without the "
                     f"projection the private excess risk has slope "
                     f"{_format_slope(slopes['excess_unprojected'])}, and the noise scale S/epsilon "
                     f"has slope {_format_slope(slopes['noise_scale'])} (theory: its square decays as "
                     f"m^(-1/3) once C_L = 2M(1 + kappa/sqrt(lambda)) is dominated by its "
                     f"lambda^(-1/2) term).")
    else:
        ratio = last["noise_cost"] / last["perturbation"] if last["perturbation"] > 0 else math.nan
        parts.append(f"000 Prop. 3 bounds the noise cost by C_L E|b.x| (C_L = 1): the measured mean "
                     f"perturbation |f_priv - f_z| has slope {_format_slope(slopes['perturbation'])} "
                     f"and is {last['perturbation']:.2g} at m={last['m']}, while the measured noise "
                     f"cost there is {last['noise_cost']:.2g} ({ratio:.1%} of that linear bound"
                     + ("; consistent with a hinge risk that is smooth, hence locally quadratic, near "
                        "its linear minimiser)." if ratio < 0.5 else ")."))
    parts.append(f"Over the upper half of the grid (m >= {s['upper_half_sizes'][0]}) the slope is "
                 f"{_format_slope(s['upper_half_slope'])} [{upper_low:.3f}, {upper_high:.3f}]: "
                 f"{s['upper_half_verdict']}.")
    return " ".join(parts)


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------
def _check_sizes(sizes) -> list[int]:
    sizes = sorted({int(m) for m in sizes})
    if len(sizes) < 2 or sizes[0] < 10:
        raise ValueError(f"sizes must hold at least two distinct sizes >= 10 to fit a slope; got {sizes}.")
    return sizes


def run_learning_rates(sizes=SIZES, n_seeds=N_SEEDS, n_test=N_TEST, dimension=DIMENSION, seed=0,
                       n_jobs=2, progress=sys.stderr) -> dict:
    """Run every (task, size, seed) cell and summarise the slopes.

    Parameters
    ----------
    sizes : sequence of int
        Training sizes ``m`` (at least two).
    n_seeds : int
        Independent samples (and noise draws) per size.
    n_test : int
        Test points for the risks.
    dimension : int
        ``d``.
    seed : int
        Base seed: data, noise and bootstrap are all derived from it.
    n_jobs : int
        Parallel workers (joblib).
    progress : file or None
        Where to report progress.

    Returns
    -------
    dict
        JSON-serialisable: configuration, one row per cell, per-task summary
        with the verdict, timings.
    """
    sizes = _check_sizes(sizes)
    if n_seeds < 1 or n_test < 100 or dimension < 1:
        raise ValueError(f"need n_seeds >= 1, n_test >= 100 and dimension >= 1; "
                         f"got {n_seeds}, {n_test}, {dimension}.")
    started = time.perf_counter()
    test = make_test_sample(n_test, dimension, seed)
    cells = [(task, m, s) for m in reversed(sizes) for task in _TASKS for s in range(n_seeds)]
    jobs = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(run_cell)(task, m, s, seed, test) for task, m, s in cells)
    rows = []
    for done, row in enumerate(jobs, start=1):
        rows.append(row)
        report_progress(progress, done, len(cells), started,
                        f"{row['task']:13s} m={row['m']:<6d} seed={row['seed']}")
    rows.sort(key=lambda r: (r["task"], r["m"], r["seed"]))
    reference = _add_excess(rows, test["reference_hinge_risk"])
    return {
        "experiment": "learning rates of DP least squares and the DP SVM (Nie & Wang 2017, 000 Thm 4 "
                      "and Sec. 5; 002 Thm 3)",
        "config": {"sizes": sizes, "n_seeds": n_seeds, "n_test": n_test, "dimension": dimension,
                   "seed": seed, "data": "x uniform on the unit ball of R^d (kappa = data_norm = 1)",
                   "regression_function": f"f*(x) = w*.x, w* = {test['coef'].tolist()}",
                   "labels_regression": f"y = f*(x) + U[-{_LABEL_NOISE_HALF_WIDTH}, "
                                        f"{_LABEL_NOISE_HALF_WIDTH}], |y| <= M = {_Y_BOUND}",
                   "labels_classification": f"P(y = 1 | x) = expit({_SHARPNESS} u.x), u = w*/||w*||",
                   "regularity_r": _REGULARITY, "beta": _BETA, "fit_intercept": False,
                   "alpha_convention": "alpha = 2 lambda (paper note 7)"},
        "reference_hinge_risk": reference,
        "reference_hinge_risk_note": "best linear hinge risk on the test sample (Huber continuation "
                                     "to width 1e-4, or a fitted model's risk if lower)",
        "rows": rows,
        "summary": {task: _summarise_task(rows, task, seed) for task in _TASKS},
        "seconds": time.perf_counter() - started,
        "n_jobs": n_jobs,
    }


def _format_summary(results: dict) -> str:
    """Plain-text table of the mean excess risks and the slope verdicts."""
    lines = []
    for task, s in results["summary"].items():
        lines.append(f"{s['label']}: {s['risk']}")
        lines.append(f"  {'m':>7}  {'epsilon':>8}  {'lambda':>8}  {'excess (private)':>20}  "
                     f"{'non-private':>11}  {'noise cost':>10}")
        for row in s["per_size"]:
            lines.append(f"  {row['m']:>7}  {row['epsilon']:>8.4f}  {row['lam']:>8.4f}  "
                         f"{row['excess_private']:>11.5f} +- {row['excess_private_se']:<7.5f}  "
                         f"{row['excess_nonprivate']:>11.5f}  {row['noise_cost']:>10.5f}")
        lines.append(f"  verdict: {s['verdict'].upper()}")
        lines.append(f"  {s['reason']}")
        lines.append("")
    lines.append(f"{len(results['rows'])} fits in {results['seconds']:.1f} s ({results['n_jobs']} jobs)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Files: CSV, JSON, PNG
# ---------------------------------------------------------------------------
_CSV_COLUMNS = ("task", "m", "seed", "epsilon", "lam", "alpha", "risk_private", "risk_nonprivate",
               "excess_private", "excess_nonprivate", "noise_cost", "perturbation", "noise_scale",
               "projected_fraction", "excess_unprojected", "seconds")


def _write_rows_csv(rows: list[dict], path) -> Path:
    """One line per (task, m, seed) cell; floats to 5 significant digits."""
    return write_csv(path, _CSV_COLUMNS, ({c: row[c] if isinstance(row[c], (str, int)) else f"{row[c]:.5g}"
                                          for c in _CSV_COLUMNS} for row in rows))


def _plot_task(ax, s: dict) -> None:
    table = s["per_size"]
    sizes = np.array([r["m"] for r in table], dtype=float)
    excess = np.array([r["excess_private"] for r in table])
    ax.errorbar(sizes, excess, yerr=[r["excess_private_se"] for r in table], marker="o", capsize=3,
                color="C0", label="private estimator (mean +- s.e.)")
    for key, marker, color, label in (("excess_nonprivate", "s", "C2", "non-private, same lambda"),
                                      ("noise_cost", "^", "C3", "noise cost (difference)"),
                                      ("excess_unprojected", "v", "C1", "private, without projection")):
        values = np.array([r[key] for r in table])
        keep = np.isfinite(values) & (values > 0)
        if not keep.any():
            continue
        ax.plot(sizes[keep], values[keep], marker=marker, ls=":", color=color, label=label)
    if math.isfinite(s["fitted_slope"]):
        low, high = s["slope_interval_95"]
        ax.plot(sizes, np.exp(s["fitted_intercept"]) * sizes ** s["fitted_slope"], color="C0", lw=1,
                label=f"fit: slope {s['fitted_slope']:.3f} [{low:.3f}, {high:.3f}]")
        middle = math.exp(np.log(sizes).mean())
        anchor = math.exp(s["fitted_intercept"]) * middle ** s["fitted_slope"]
        ax.plot(sizes, anchor * (sizes / middle) ** s["theoretical_slope"], "k--", lw=1,
                label=f"theory: slope {s['theoretical_slope']:.3f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training size m")
    ax.set_ylabel(s["risk"].split(" E(")[0])
    ax.set_title(f"{s['label']}\nwhole grid: {s['verdict']}; upper half (slope "
                 f"{s['upper_half_slope']:.3f}): {s['upper_half_verdict']}", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)


def _plot_learning_rates(results: dict, path) -> Path | None:
    """Log-log excess risk against m, one panel per task; None if matplotlib is missing."""
    plt = pyplot_or_none()
    if plt is None:
        return None
    summaries = results["summary"]
    fig, axes = plt.subplots(1, len(summaries), figsize=(6 * len(summaries), 4.8))
    for ax, s in zip(np.atleast_1d(axes), summaries.values()):
        _plot_task(ax, s)
    fig.suptitle("Excess risk vs m under the theory's epsilon(m), lambda(m) "
                 f"({results['config']['n_seeds']} seeds per m, {results['config']['n_test']} test points)",
                 fontsize=10)
    return save_figure(plt, fig, path, dpi=110)


def _without_nan(value):
    """Replace NaN (e.g. the SVM's projected fraction) by None so the JSON is strict."""
    if isinstance(value, dict):
        return {key: _without_nan(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_nan(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def save_results(results: dict, out_dir) -> dict:
    """Write ``learning_rates.csv``, ``learning_rates.json`` and ``learning_rates.png`` under ``out_dir``."""
    out_dir = output_dir(out_dir)
    csv_path = _write_rows_csv(results["rows"], out_dir / "learning_rates.csv")
    document = _without_nan({key: value for key, value in results.items() if key != "rows"})
    json_path = write_json(out_dir / "learning_rates.json", document, allow_nan=False)
    png = _plot_learning_rates(results, out_dir / "learning_rates.png")
    return {"csv": csv_path, "json": json_path, "png": png}


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------
def run_learning_rates_command(args) -> int:
    """Run the experiment from parsed arguments, save the files, print the summary; exit code 0."""
    results = run_learning_rates(sizes=args.sizes, n_seeds=args.seeds, n_test=args.n_test,
                                 dimension=args.dimension, seed=args.seed, n_jobs=args.jobs)
    print(_format_summary(results))
    paths = save_results(results, args.out)
    print(f"csv:  {paths['csv']}\njson: {paths['json']}")
    print(f"plot: {paths['png']}" if paths["png"] else "plot skipped: install matplotlib for the PNG")
    return 0
