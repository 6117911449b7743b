"""
Binary classification with public bounds: breast cancer
=======================================================

A private model is only as private as its preprocessing. Scaling each column by
its minimum and maximum *in the training rows* publishes those extremes through
the model; dperm instead scales by **public bounds**, ranges fixed without
looking at the private rows. Here the bounds are the per-feature minimum and
maximum printed in the data set's published documentation (scikit-learn's
``load_breast_cancer().DESCR``), standing in for the ranges a domain expert or
a questionnaire would give you. (They summarise these same 569 rows, so they
are public here only because they were already published.)

:func:`dperm.preprocessing.make_private_pipeline` is the recipe in one line:
public bounds map each column to [-1, 1], every row is scaled to norm 1, and
the private logistic regression (two labels) is fitted with an intercept whose
constant feature is 0.5 and the private majority fallback: a small public share
of epsilon chooses, with noise, between the model and the majority class. We fit it at
several epsilons, ten noise draws each, and compare the test error with the
non-private scikit-learn fit on the same features and with always predicting
the majority class, the floor any useful model must beat.
"""

import re

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler

from dperm import PrivateLogisticRegression
from dperm.preprocessing import make_private_pipeline

data = load_breast_cancer()
X_train, X_test, y_train, y_test = train_test_split(
    data.data, data.target, test_size=0.3, stratify=data.target, random_state=0)

# %%
# Public bounds from the documentation's "Summary Statistics" table (min, max per
# feature), in the order of ``data.feature_names``.
published = {name: (float(lo), float(hi)) for name, lo, hi in
             re.findall(r"^(\w[\w ]*\([\w ]+\)):\s+([\d.]+)\s+([\d.]+)\s*$", data.DESCR, re.M)}
lower, upper = np.array(list(published.values())).T
# The table rounds to a few digits: widen each range by 10 % of its width so that
# rounding does not clip the extreme rows (a public choice, made without the data).
lower, upper = np.maximum(lower - 0.1 * (upper - lower), 0), upper + 0.1 * (upper - lower)
print(f"{len(published)} published ranges, e.g. {next(iter(published))}: {lower[0]:.3g} to {upper[0]:.3g}")
assert len(published) == data.data.shape[1]

# %%
# Fit at several epsilons. The noise differs per draw, so each point is the mean
# (and standard deviation) over ten draws.
epsilons = [0.1, 0.3, 1.0, 3.0, 10.0]
errors = []
for epsilon in epsilons:
    draws = []
    for seed in range(10):
        model = make_private_pipeline(
            PrivateLogisticRegression(epsilon=epsilon, classes=[0, 1], random_state=seed),
            bounds=(lower, upper))
        draws.append(1 - model.fit(X_train, y_train).score(X_test, y_test))
    errors.append((np.mean(draws), np.std(draws)))
    print(f"epsilon {epsilon:>4}: test error {np.mean(draws):.3f} +- {np.std(draws):.3f}")

# %%
# What one released model guarantees, and the alpha and mechanism its defaults
# chose from public quantities only (n, d, epsilon, the norm bound).
record = model[-1].privacy_
print(record)

# %%
# References: the same features scaled with the *private* min and max, fitted
# without noise (what you could not publish), and the majority class.
baseline = 1 - make_pipeline(MinMaxScaler(), LogisticRegression(max_iter=1000)).fit(
    X_train, y_train).score(X_test, y_test)
majority = min(y_test.mean(), 1 - y_test.mean())
print(f"non-private: {baseline:.3f}; majority class: {majority:.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
mean, std = np.array(errors).T
ax.errorbar(epsilons, mean, yerr=std, marker="o", capsize=3,
            label=f"dperm, public bounds ({record.mechanism}, alpha from the record)")
ax.axhline(baseline, color="k", linestyle="--", label="non-private scikit-learn")
ax.axhline(majority, color="grey", linestyle=":", label="majority class")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("test error")
ax.set_title(f"Breast cancer, {len(y_train)} training rows, 10 draws per point")
ax.legend()
fig.tight_layout()

# %%
# With only ~400 training rows the noise dominates at small epsilon: there the private
# model is about as good as the majority class (compare the curve with the dotted line;
# the fallback releases the constant model in some draws), and it approaches the
# non-private error only at large epsilon. Noise shrinks like 1 / (n epsilon), so the
# same epsilon buys much more on a larger table (see the learning curve example).
