"""
Learning curve: more rows, less privacy cost
============================================

At a fixed epsilon the noise dperm adds shrinks like ``1 / n``, so a private
model approaches the non-private one as the training set grows. Adult's
embedded data, training subsets from 1,000 to 16,000 rows, epsilon 0.5,
two noise draws per point (a subset of the paper's Figs. 4-5 protocol:
:doc:`/reproductions` has the full runs).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from dperm import PrivateLogisticRegression
from dperm.datasets import load_adult

adult = load_adult()
rng = np.random.default_rng(1)
order = rng.permutation(len(adult.y_train))
sizes = [1_000, 2_000, 4_000, 8_000, 16_000]
epsilon, alpha = 0.5, 1e-3

private, public = [], []
for n in sizes:
    X, y = adult.X_train[order[:n]], adult.y_train[order[:n]]
    draws = [
        1 - PrivateLogisticRegression(epsilon=epsilon, alpha=alpha, fit_intercept=False,
                                      classes=[0, 1], random_state=seed)
        .fit(X, y).score(adult.X_test, adult.y_test)
        for seed in range(2)
    ]
    private.append((np.mean(draws), np.std(draws)))
    public.append(1 - LogisticRegression(C=1 / (alpha * n), fit_intercept=False, tol=1e-8)
                  .fit(X, y).score(adult.X_test, adult.y_test))
    print(f"n={n:6d}: private {np.mean(draws):.3f}, non-private {public[-1]:.3f}")

# %%
fig, ax = plt.subplots(figsize=(6, 4))
mean, std = np.array(private).T
ax.errorbar(sizes, mean, yerr=std, marker="o", capsize=3,
            label=f"objective perturbation, epsilon {epsilon}")
ax.plot(sizes, public, "k--", marker="s", label="non-private, same objective")
ax.set_xscale("log")
ax.set_xlabel("training rows n")
ax.set_ylabel("test error on Adult's test file")
ax.legend()
fig.tight_layout()
