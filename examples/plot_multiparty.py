"""
Several data holders: multiparty training in one process
========================================================

When the rows are held by several parties (hospitals, branches) that may not
pool them, :mod:`dperm.multiparty` trains one model from **secure sums**: each
party sends its noised gradient and Hessian sums through secure aggregation, so
the coordinator sees only their total, and the released model is
(epsilon, delta)-DP for every party's records. In deployment the parties are
separate processes on Flower's SecAgg+ (``dperm party serve`` and
``dperm coordinate``, :doc:`/multiparty`); here the same protocol runs in one
Python process with the in-process masked secure sum, which is how to try it.

We split 15,000 rows of Adult over five parties and compare, on Adult's test
file:

- :class:`~dperm.multiparty.NewtonClassifier`: a few Newton rounds on secure sums;
- :class:`~dperm.LocalAggregationClassifier`: each party fits alone and the
  average of the five models is released with noise (Pathak et al. 2010);
- a single private model fitted on the pooled rows, which the parties could
  only have if they trusted one curator with all of them.
"""

import matplotlib.pyplot as plt
import numpy as np

from dperm import LocalAggregationClassifier, PrivateLogisticRegression
from dperm.datasets import load_adult
from dperm.multiparty import NewtonClassifier

adult = load_adult()
rng = np.random.default_rng(6)
rows = rng.choice(len(adult.y_train), size=15_000, replace=False)
X, y = adult.X_train[rows], adult.y_train[rows]
shards = [(X[k::5], y[k::5]) for k in range(5)]          # five parties, 3,000 rows each
alpha, delta = 1e-3, 1e-5
epsilons = [0.5, 1.0, 2.0]


def error(model):
    return 1 - np.mean(model.predict(adult.X_test) == adult.y_test)


# %%
# One fit per epsilon and method (the noise makes each fit a draw; the
# benchmark in :doc:`/multiparty` repeats them).
errors = {"Newton, 5 parties": [], "local averaging, 5 parties": [], "pooled (one curator)": []}
for epsilon in epsilons:
    newton = NewtonClassifier(epsilon=epsilon, delta=delta, alpha=alpha, n_rounds=5, classes=[0, 1],
                              random_state=0).fit(shards)
    local = LocalAggregationClassifier(epsilon=epsilon, alpha=alpha, classes=[0, 1],
                                       random_state=0).fit(shards)
    pooled = PrivateLogisticRegression(epsilon=epsilon, alpha=alpha, fit_intercept=False,
                                       classes=[0, 1], random_state=0).fit(X, y)
    for name, model in zip(errors, [newton, local, pooled]):
        errors[name].append(error(model))
    print(f"epsilon {epsilon}: " + ", ".join(f"{name} {errors[name][-1]:.3f}" for name in errors))

# %%
# The guarantee of the last Newton model, as the coordinator would publish it.
print(newton.privacy_.summary())

# %%
fig, ax = plt.subplots(figsize=(6, 4))
for (name, values), marker in zip(errors.items(), ["o", "s", "^"]):
    ax.plot(epsilons, values, marker=marker, label=name)
ax.axhline(min(adult.y_test.mean(), 1 - adult.y_test.mean()), color="grey", linestyle=":",
           label="majority class")
ax.set_xscale("log")
ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
ax.minorticks_off()
ax.set_xlabel("epsilon (delta 1e-5 for Newton; pure for the others)")
ax.set_ylabel("test error")
ax.set_title(f"Adult, 5 parties x {len(shards[0][1])} rows, alpha {alpha:g}")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Newton on secure sums tracks the pooled model: the parties lose little by
# not pooling their rows. Averaging local models pays for each party's small
# sample, because its noise is calibrated to the smallest party's n.
