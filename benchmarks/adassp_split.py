"""Issue 30's regression misses, measured: what limits the pure-DP AdaSSP default and which split of epsilon to use.

Everything here is a *simulation* of :mod:`dperm.mechanisms.sufficient_statistics`'s pure form
with continuous noise of the same laws and scales (the lattice L2 Laplace vector or per-entry
Laplace, whichever has the smaller RMS, for the Gram matrix and the moment vector; Laplace for
``lambda_min``; Wang 2018's ridge ``lambda = max(0, t - (lambda~_min - q))``; the unpenalised
intercept with its public Gram corner; the eigenvalue safeguard), so the knobs the mechanism
does not expose can be turned: the budget split, a multiplier on ``t``, the intercept column's
value ``c``, no noise, no ridge, the projection of the noised Gram matrix onto the PSD cone
(the estimator does it; ``psd=True`` here, off by default so the older rows stay comparable). Protocol: 5-fold CV (``shuffle=True, random_state=0``) x
``--draws`` noise draws, epsilon 0.5 / 1 / 3, the target mapped onto [-1, 1] by its public range
and predictions mapped back and clipped, as the estimator does.

Sections (``--parts``):

- ``split``: the budget split and ``t``'s multiplier on the FITTING regression tables of
  ``benchmarks/_tables.py`` only (the constants of the default are chosen here);
- ``encodings``: the default on the FITTING tables under four encodings (``unit``,
  ``centred``, ``columns / sqrt(k)``, ``linear``: see ``benchmarks/defaults.py``);
- ``noxemissions``: the decomposition of the evaluation table where diffprivlib wins
  (diagnosis only: no constant is chosen on it).

Writes ``benchmarks/results/adassp_split.json``. Run::

    OPENBLAS_NUM_THREADS=1 .venv-bench/bin/python benchmarks/adassp_split.py
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _tables  # noqa: E402

EPSILONS = (0.5, 1.0, 3.0)
RHO = 0.05  # Wang 2018's failure probability (dperm.privacy.sufficient_statistics.FAILURE_PROBABILITY)
SPLITS = [(1 / 3, 1 / 3, 1 / 3), (0.45, 0.45, 0.1), (0.475, 0.475, 0.05), (0.48, 0.48, 0.04),
          (0.49, 0.49, 0.02), (0.5, 0.5, 0.0), (0.4, 0.58, 0.02), (0.58, 0.4, 0.02)]
MULTIPLIERS = (0.5, 1.0, 1.5, 2.0)


def _svec(M):
    r, c = np.triu_indices(M.shape[0], 1)
    return np.concatenate([np.diag(M), math.sqrt(2) * M[r, c]])


def _smat(v, d):
    M = np.diag(v[:d])
    r, c = np.triu_indices(d, 1)
    M[r, c] = M[c, r] = v[d:] / math.sqrt(2)
    return M


def _noise(size, l2_sensitivity, epsilon, rng):
    """The pure form's vector noise: per-entry Laplace at the L1 bound sqrt(size) S or the L2 Laplace
    vector at S, whichever has the smaller RMS; returns (noise, per-entry std)."""
    s1, s2 = math.sqrt(size) * l2_sensitivity / epsilon, l2_sensitivity / epsilon
    if math.sqrt(size * (size + 1)) * s2 < math.sqrt(2 * size) * s1:
        direction = rng.normal(size=size)
        return direction / np.linalg.norm(direction) * rng.gamma(size, s2), math.sqrt(size + 1) * s2
    return rng.laplace(scale=s1, size=size), math.sqrt(2) * s1


def fit(X, y, epsilon, rng, split=(0.49, 0.49, 0.02), multiplier=1.0, c=1.0, noise=True, ridge=True, psd=False):
    """Coefficients (with the intercept's last) of the simulated pure AdaSSP; X rows in the unit ball, |y| <= 1."""
    n, k = X.shape
    Z, d = np.hstack([X, np.full((n, 1), c)]), k + 1
    R2 = 1.0 + c * c
    eps_gram, eps_moment, eps_eigen = (epsilon * share for share in split)
    G, m = Z.T @ Z, Z.T @ y
    zg, gram_std = _noise(d * (d + 1) // 2, math.sqrt(2) * R2, eps_gram, rng)
    zm, _ = _noise(d, 2 * math.sqrt(R2), eps_moment, rng)
    G_tilde = _smat(_svec(G) + (zg if noise else 0.0), d)
    G_tilde[-1, -1] = n * c * c
    if psd:  # the released Gram matrix projected onto the PSD cone (post-processing)
        values, vectors = np.linalg.eigh(G_tilde)
        G_tilde = (vectors * np.maximum(values, 0.0)) @ vectors.T
    t = multiplier * gram_std * math.sqrt(d * math.log(2 * d * d / RHO))
    lower = 0.0
    if eps_eigen > 0:
        scale = R2 / eps_eigen
        released = np.linalg.eigvalsh(G)[0] + (rng.laplace(scale=scale) if noise else 0.0)
        lower = max(0.0, released - scale * math.log(1 / RHO))
    lam = max(0.0, t - lower) if ridge else 0.0
    penalty = np.ones(d)
    penalty[-1] = 0.0
    values, vectors = np.linalg.eigh(G_tilde + lam * np.diag(penalty))
    return vectors @ ((vectors.T @ (m + (zm if noise else 0.0))) / np.maximum(values, gram_std))


def cv_r2(X, y, y_range, draws, **options):
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold

    lower, upper = y_range
    centre, half = (lower + upper) / 2, (upper - lower) / 2
    c = options.get("c", 1.0)
    out = {}
    for epsilon in EPSILONS:
        scores = []
        for f, (train, test) in enumerate(KFold(5, shuffle=True, random_state=0).split(X)):
            for k in range(draws):
                rng = np.random.default_rng(1000 * f + k)
                w = fit(X[train], (np.clip(y[train], lower, upper) - centre) / half, epsilon, rng, **options)
                pred = np.hstack([X[test], np.full((len(test), 1), c)]) @ w * half + centre
                scores.append(r2_score(y[test], np.clip(pred, lower, upper)))
        out[str(epsilon)] = round(float(np.mean(scores)), 4)
    return out


def sklearn_r2(X, y):
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold

    return round(float(np.mean([r2_score(y[te], LinearRegression().fit(X[tr], y[tr]).predict(X[te]))
                                for tr, te in KFold(5, shuffle=True, random_state=0).split(X)])), 4)


def _summary(per_table):
    cells = [v for scores in per_table.values() for v in scores.values()]
    return {"mean": round(float(np.mean(cells)), 4), "min": round(float(np.min(cells)), 4),
            "cells_at_least_-0.02": int(sum(v >= -0.02 for v in cells)), "cells": len(cells)}


def encoded(table):
    enc = _tables.encode(table)
    k, g = table.n_numeric, len(table.categories or {})
    return {"unit": enc["unit"], "centred": enc["centred"], "columns / sqrt(k)": enc["columns"] / math.sqrt(k + g),
            "linear": enc["linear"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="split,encodings,noxemissions")
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "adassp_split.json"))
    args = parser.parse_args(argv)
    parts, result = args.parts.split(","), {"protocol": {"folds": 5, "draws": args.draws, "epsilons": EPSILONS}}
    fitting = {name: _tables.load(name) for name in _tables.names("fitting", "regression")}
    if "split" in parts:
        rows = []
        for split in SPLITS:
            for multiplier in MULTIPLIERS if split == (0.49, 0.49, 0.02) else (1.0,):
                per_table = {name: cv_r2(_tables.encode(t)["unit"], t.y, t.y_range, args.draws, split=split,
                                         multiplier=multiplier) for name, t in fitting.items()}
                rows.append({"split": [round(s, 4) for s in split], "multiplier": multiplier,
                             **_summary(per_table), "tables": per_table})
                print(json.dumps(rows[-1]), flush=True)
        per_table = {name: cv_r2(_tables.encode(t)["unit"], t.y, t.y_range, args.draws, psd=True)
                     for name, t in fitting.items()}
        rows.append({"split": [0.49, 0.49, 0.02], "multiplier": 1.0, "psd_projection": True,
                     **_summary(per_table), "tables": per_table})
        print(json.dumps(rows[-1]), flush=True)
        result["split"] = rows
    if "encodings" in parts:
        rows = []
        for name, table in fitting.items():
            for encoding, X in encoded(table).items():
                rows.append({"table": name, "encoding": encoding, "sklearn": sklearn_r2(X, table.y),
                             "adassp": cv_r2(X, table.y, table.y_range, args.draws)})
                print(json.dumps(rows[-1]), flush=True)
        result["encodings"] = rows
    if "noxemissions" in parts:
        table = _tables.load("noxemissions")
        rows = []
        for encoding, X in encoded(table).items():
            row = {"encoding": encoding, "sklearn": sklearn_r2(X, table.y)}
            for label, options in [("thirds", dict(split=SPLITS[0])), ("thirds, no noise", dict(split=SPLITS[0], noise=False)),
                                   ("thirds, no ridge", dict(split=SPLITS[0], ridge=False)),
                                   ("49/49/2", {}), ("49/49/2, no noise", dict(noise=False))]:
                row[label] = cv_r2(X, table.y, table.y_range, args.draws, **options)
            rows.append(row)
            print(json.dumps(row), flush=True)
        result["noxemissions"] = rows
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
