"""
Auditing output perturbation
============================

An empirical privacy audit (:mod:`dperm.audit`) runs a mechanism many times on
two neighbouring data sets ``D`` and ``D'`` (``D'`` replaces one record by a
worst-case canary) and asks how well a threshold on one statistic tells the
two apart. The histogram shows that statistic, the released model's margin on
the canary, over the runs; the audit turns the overlap into a lower bound on
epsilon that a correct mechanism cannot exceed (at 95 % confidence). A copy
with a quarter of the noise is caught. 400 runs per data set keep the build
short; the tests and ``benchmarks/audit.py`` use many more.
"""

import matplotlib.pyplot as plt
import numpy as np

from dperm import PrivateLinearSVC
from dperm.audit import audit_mechanism, audit_samples, make_canary_pair, strong_alpha

epsilon, n_runs, n_samples = 1.0, 400, 20
pair = make_canary_pair(n_samples=n_samples, random_state=0)
alpha = strong_alpha(n_samples)


def margins(X, y, seed0):
    """The canary's margin y_c w.x_c of each released model."""
    values = []
    for seed in range(seed0, seed0 + n_runs):
        model = PrivateLinearSVC(loss="huber", mechanism="output", epsilon=epsilon,
                                 alpha=alpha, fit_intercept=False, classes=[-1, 1],
                                 random_state=seed).fit(X, y)
        values.append(pair.canary_y * model.coef_.ravel() @ pair.canary_x)
    return np.array(values)


on_d = margins(pair.X, pair.y, 0)
on_d_prime = margins(pair.X_prime, pair.y_prime, 10_000)
result = audit_samples(on_d, on_d_prime, epsilon, label="huber output, eps=1")
print(result)

# %%
# The two distributions overlap as much as epsilon = 1 requires.
fig, ax = plt.subplots(figsize=(6, 4))
bins = np.linspace(min(on_d.min(), on_d_prime.min()), max(on_d.max(), on_d_prime.max()), 40)
ax.hist(on_d, bins=bins, alpha=0.6, label="D (canary's mirror)")
ax.hist(on_d_prime, bins=bins, alpha=0.6, label="D' (canary)")
ax.set_xlabel("margin of the released model on the canary")
ax.set_ylabel("runs")
ax.set_title(f"claimed epsilon {epsilon}; empirical lower bound {result.eps_lower:.2f}")
ax.legend()
fig.tight_layout()

# %%
# Power: the same audit on a copy of the mechanism with a quarter of the noise.
weak = audit_mechanism("output", epsilon, loss="huber", n_runs=n_runs, noise_factor=0.25,
                       random_state=1)
print(f"quarter noise: lower bound {weak.eps_lower:.2f} > {epsilon}: "
      f"{'caught' if not weak.passed else 'not caught'}")
