"""
Privacy-accuracy curve on Adult
===============================

Test error of private logistic regression on UCI Adult (the copy embedded in
dperm) as epsilon grows, for objective and output perturbation, beside the
non-private fit and the majority class. To keep the build short this uses a
random subset of 6,000 training rows, three values of epsilon and two noise
draws each; :doc:`/benchmarks` has the full-data numbers.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from dperm import PrivateLogisticRegression
from dperm.datasets import load_adult

adult = load_adult()                                   # rows of norm 1, 105 features
rng = np.random.default_rng(0)
subset = rng.choice(len(adult.y_train), size=6_000, replace=False)
X, y = adult.X_train[subset], adult.y_train[subset]
X_test, y_test = adult.X_test, adult.y_test
n = len(y)
alpha = 10**-2.5

# %%
# Fit each mechanism at each epsilon a few times (the noise differs per draw).
epsilons = [0.1, 0.5, 2.0]
errors = {}
for mechanism in ["objective", "output"]:
    errors[mechanism] = []
    for epsilon in epsilons:
        draws = [
            1 - PrivateLogisticRegression(epsilon=epsilon, alpha=alpha, mechanism=mechanism,
                                          fit_intercept=False, classes=[0, 1],
                                          random_state=seed).fit(X, y).score(X_test, y_test)
            for seed in range(2)
        ]
        errors[mechanism].append((np.mean(draws), np.std(draws)))
        print(f"{mechanism:9s} epsilon={epsilon:<4} test error {np.mean(draws):.3f}")

# scikit-learn's C = 1 / (alpha n) is the same objective without noise.
baseline = 1 - LogisticRegression(C=1 / (alpha * n), fit_intercept=False,
                                  tol=1e-8).fit(X, y).score(X_test, y_test)
majority = min(y_test.mean(), 1 - y_test.mean())

# %%
# The curve: private error approaches the non-private one as epsilon grows, and
# objective perturbation needs less noise than output perturbation (003 Sec. 7).
fig, ax = plt.subplots(figsize=(6, 4))
for mechanism, marker in [("objective", "o"), ("output", "s")]:
    mean, std = np.array(errors[mechanism]).T
    ax.errorbar(epsilons, mean, yerr=std, marker=marker, capsize=3,
                label=f"{mechanism} perturbation")
ax.axhline(baseline, color="k", linestyle="--", label="non-private")
ax.axhline(majority, color="grey", linestyle=":", label="majority class")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("test error")
ax.set_title(f"Adult, {n} training rows, alpha = 10^-2.5")
ax.legend()
fig.tight_layout()
