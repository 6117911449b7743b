"""
Choosing alpha privately: PrivateParameterSearch
================================================

Picking the regularisation strength by looking at validation or test error is
a use of the private data: the choice itself leaks, and the error you report
beside it is optimistic. :class:`~dperm.PrivateParameterSearch` makes the
choice part of the private release, with one stated epsilon for the whole
search:

- ``method="alg4"`` (Chaudhuri et al. 2011, Alg. 4): the rows are split into
  disjoint parts, one private model per candidate is trained on its own part,
  and the winner is drawn by the exponential mechanism on the mistakes counted
  on the last part;
- ``method="random_stopping"`` (Papernot & Steinke 2022): a random number of
  repetitions, each a random candidate on a random split, the best released.

We tune alpha over a public grid on 12,000 rows of Adult at a total epsilon of
1, several times, and compare the test error with two references: the
estimator's default alpha (chosen from public quantities, no tuning), and the
grid's best alpha chosen on the test set, which is *not* private and shows
what tuning could gain at best.
"""

import matplotlib.pyplot as plt
import numpy as np

from dperm import PrivateLogisticRegression, PrivateParameterSearch
from dperm.datasets import load_adult

adult = load_adult()
rng = np.random.default_rng(2)
rows = rng.choice(len(adult.y_train), size=12_000, replace=False)
X, y = adult.X_train[rows], adult.y_train[rows]
X_test, y_test = adult.X_test, adult.y_test
epsilon, grid = 1.0, [1e-4, 1e-3, 1e-2, 1e-1]
draws = 4


def base():
    return PrivateLogisticRegression(fit_intercept=False)


# %%
# The two private searches, each charged epsilon once for everything it does.
errors, chosen = {}, {}
for method, options in [("alg4", {}), ("random_stopping", {"stopping_mean": 6})]:
    errors[method], chosen[method] = [], []
    for seed in range(draws):
        search = PrivateParameterSearch(estimator=base(), param_grid={"alpha": grid}, epsilon=epsilon,
                                        classes=[0, 1], method=method, random_state=seed, **options)
        search.fit(X, y)
        errors[method].append(1 - search.score(X_test, y_test))
        chosen[method].append(search.best_params_["alpha"])
    print(f"{method:16s} test error {np.mean(errors[method]):.3f}; alphas chosen {chosen[method]}")
print(search.privacy_)

# %%
# The references: the default alpha on all rows at the same epsilon, and
# every grid value on all rows (the best of them is a non-private choice).
errors["default alpha"] = [1 - base().set_params(epsilon=epsilon, classes=[0, 1], random_state=seed)
                           .fit(X, y).score(X_test, y_test) for seed in range(draws)]
per_alpha = {alpha: np.mean([1 - base().set_params(epsilon=epsilon, alpha=alpha, classes=[0, 1],
                                                    random_state=seed).fit(X, y).score(X_test, y_test)
                             for seed in range(draws)]) for alpha in grid}
best_alpha = min(per_alpha, key=per_alpha.get)
print(f"default alpha   test error {np.mean(errors['default alpha']):.3f} "
      f"(alpha {base().set_params(epsilon=epsilon, classes=[0, 1]).fit(X, y).alpha_:.3g})")
print("every alpha on all rows:", {a: round(float(e), 3) for a, e in per_alpha.items()})
majority = min(y_test.mean(), 1 - y_test.mean())

# %%
fig, ax = plt.subplots(figsize=(6, 4))
names = list(errors)
ax.boxplot([errors[name] for name in names], widths=0.5)
ax.set_xticks(range(1, len(names) + 1))
ax.set_xticklabels(names)
ax.axhline(per_alpha[best_alpha], color="k", linestyle="--",
           label=f"alpha {best_alpha:g} chosen on the test set (NOT private)")
ax.axhline(majority, color="grey", linestyle=":", label="majority class")
ax.set_ylabel("test error")
ax.set_title(f"Adult, {len(y)} rows, total epsilon {epsilon}, {draws} draws each")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# A private search pays twice: each candidate sees only part of the rows (and,
# for random stopping, a third of epsilon), and the selection is noisy, so it
# often settles on a stronger regularisation than the test set would pick. Compare
# its boxes with the default's: when the default alpha, set from public
# quantities only, is as good, use it and keep the whole budget for one fit; the
# search is for when you have no public reason to prefer any value of the grid.
