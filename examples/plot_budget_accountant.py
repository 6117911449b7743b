"""
One privacy budget over several fits: the accountant
====================================================

Every private release about the same rows adds to what an observer can learn:
three models at epsilon 0.4 each on the same table are, together, a 1.2-DP
release. A :class:`~dperm.BudgetAccountant` holds the total budget you have
decided to spend on a data set; pass it to every estimator (``accountant=``)
and each fit is charged before any noise is drawn. A fit that would overspend
is **refused**: it raises :class:`~dperm.BudgetExceededError`, fits nothing
and spends nothing, so the budget you stated is never exceeded, whatever the
analysts try.

Part 1 lets an analyst fit models of increasing epsilon on a subset of Adult
until the budget refuses one. Part 2 compares the accountant's composition
rules on many small releases: the advanced composition filter admits far more
small spends than the plain sum when there are many of them, at the price of a
small delta.
"""

import matplotlib.pyplot as plt
import numpy as np

from dperm import BudgetAccountant, BudgetExceededError, PrivateLogisticRegression
from dperm.datasets import load_adult

adult = load_adult()
rng = np.random.default_rng(0)
rows = rng.choice(len(adult.y_train), size=15_000, replace=False)
X, y = adult.X_train[rows], adult.y_train[rows]

# %%
# Part 1: a budget of epsilon 2 for this table; the analyst asks for 0.25,
# 0.5, 0.75, 1.0 in turn.
budget = BudgetAccountant(epsilon=2.0)
history = []
for epsilon in [0.25, 0.5, 0.75, 1.0]:
    model = PrivateLogisticRegression(epsilon=epsilon, fit_intercept=False, classes=[0, 1],
                                      accountant=budget)
    try:
        model.fit(X, y)
    except BudgetExceededError as refusal:
        print(f"epsilon {epsilon}: REFUSED, nothing fitted or spent.\n  {refusal}")
        history.append((epsilon, None))
        continue
    accuracy = model.score(adult.X_test, adult.y_test)   # Adult's public test file
    history.append((epsilon, accuracy))
    print(f"epsilon {epsilon}: fitted, test accuracy {accuracy:.3f}; spent so far {budget.spent[0]:g}")
print(budget.summary())
print(f"majority class on the test file: {max(adult.y_test.mean(), 1 - adult.y_test.mean()):.3f}")

# %%
# Part 2: how many releases of epsilon 0.01 each fit in a budget of 2 under
# each rule? (The rule alone: ``spend`` records a release without fitting.)
rules = {"basic (sum)": dict(composition="basic"),
         "advanced filter, slack 1e-6": dict(composition="advanced", slack=1e-6, delta=1e-6)}
admitted = {}
for name, options in rules.items():
    accountant = BudgetAccountant(epsilon=2.0, **options)
    count = 0
    try:
        while True:
            accountant.spend(0.01, label="small release")
            count += 1
    except BudgetExceededError:
        pass
    admitted[name] = count
    print(f"{name}: {count} releases of epsilon 0.01")

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
spent, labels, colours = 0.0, [], []
for epsilon, accuracy in history:
    colour = "tab:blue" if accuracy is not None else "tab:red"
    left.bar(len(labels), epsilon, bottom=spent, color=colour,
             hatch=None if accuracy is not None else "//", alpha=1 if accuracy is not None else 0.4)
    labels.append(f"eps {epsilon}\n" + (f"acc {accuracy:.2f}" if accuracy is not None else "refused"))
    if accuracy is not None:
        spent += epsilon
left.axhline(2.0, color="k", linestyle="--", label="budget")
left.set_xticks(range(len(labels)))
left.set_xticklabels(labels)
left.set_ylabel("cumulative epsilon")
left.set_title("Fits charged to one accountant")
left.legend()

right.bar(list(admitted), list(admitted.values()), color=["tab:grey", "tab:green"])
right.set_ylabel("releases of epsilon 0.01 admitted")
right.set_title("Budget 2: composition rules")
fig.tight_layout()

# %%
# The refused fit (red, hatched) would have taken the total past the budget,
# so it was stopped before it touched the data. Choose the rule when you make
# the accountant: the plain sum for a few large releases, the advanced filter
# (an (epsilon, delta) guarantee) for many small ones.
