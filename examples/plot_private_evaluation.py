"""
Publishing a model with its private test accuracy
=================================================

A private fit makes the **model** safe to publish. The score you print beside
it is a different release: ``model.score(X_test, y_test)`` on private held-out
rows is an exact statistic of those rows, covered by no guarantee.
:mod:`dperm.metrics` releases the same scores with noise, each with its own
epsilon, charged to the same accountant as the model, and each with a record.

This example treats Adult's test file as private held-out rows and publishes,
under one accountant:

1. the model (epsilon 1),
2. its accuracy (epsilon 0.2),
3. its confusion matrix (epsilon 0.2),
4. a reliability table of its probabilities (epsilon 0.3),

then estimates accuracy on the training rows alone with a private
``cross_val_score`` that states one budget for all its fits and scores.
"""

import matplotlib.pyplot as plt
import numpy as np

from dperm import BudgetAccountant, PrivateLogisticRegression, metrics
from dperm.datasets import load_adult

adult = load_adult()
rng = np.random.default_rng(4)
rows = rng.choice(len(adult.y_train), size=15_000, replace=False)
X_train, y_train = adult.X_train[rows], adult.y_train[rows]
X_test, y_test = adult.X_test, adult.y_test               # private held-out rows here
labels = [0, 1]

# %%
# The model and its scores, charged to one accountant.
budget = BudgetAccountant(epsilon=2.0)
model = PrivateLogisticRegression(epsilon=1.0, fit_intercept=False, classes=labels,
                                  accountant=budget).fit(X_train, y_train)
predicted = model.predict(X_test)
accuracy = metrics.accuracy_score(y_test, predicted, epsilon=0.2, accountant=budget)
matrix = metrics.confusion_matrix(y_test, predicted, labels=labels, epsilon=0.2, accountant=budget)
reliability = metrics.calibration_summary(y_test, model.predict_proba(X_test)[:, 1], labels=labels,
                                          epsilon=0.3, n_bins=10, accountant=budget)
print(f"released accuracy {accuracy:.4f}")
print(accuracy.privacy_)
print("released confusion matrix (rows: true, columns: predicted):\n", matrix.values)
print(f"released expected calibration error {float(reliability.values):.3f}")
print(budget.summary())

# %%
# How much noise is that? The accuracy's noise has standard deviation
# sqrt(2) / (n epsilon); with 15,060 held-out rows at epsilon 0.2 it is tiny
# next to the sampling error of the test set itself.
n = len(y_test)
print(f"noise sd {np.sqrt(2) / (n * 0.2):.5f}; sampling sd of the accuracy "
      f"{np.sqrt(accuracy * (1 - accuracy) / n):.5f}")

# %%
# Cross-validation on the training rows under one budget of epsilon 2: each of
# the 5 fits gets its share, the fold scores share the rest (the split is in
# the record).
scores = metrics.cross_val_score(PrivateLogisticRegression(fit_intercept=False, classes=labels),
                                 X_train, y_train, epsilon=2.0, cv=5)
print("released fold accuracies:", np.round(scores.values, 3))
print(scores.privacy_)
print("each fold's fit:", scores.privacy_.fits)

# %%
# The reliability diagram: the released positive rate per probability bin
# against the bin's midpoint (a well calibrated model lies on the diagonal).
columns = reliability.columns
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
shown = ~np.isnan(columns["rate"])
left.plot([0, 1], [0, 1], color="grey", linestyle=":")
left.plot(columns["midpoint"][shown], columns["rate"][shown], marker="o",
          label=f"released (epsilon 0.3), ECE {float(reliability.values):.3f}")
left.set_xlabel("predicted probability of >50K (bin midpoint)")
left.set_ylabel("released positive rate")
left.set_title("Calibration on private held-out rows")
left.legend(fontsize=8)

right.bar(range(1, len(scores.values) + 1), scores.values, color="tab:blue")
right.axhline(accuracy, color="k", linestyle="--", label=f"released test accuracy {accuracy:.3f}")
right.set_ylim(0.5, 1.0)
right.set_xlabel("fold")
right.set_ylabel("released accuracy")
right.set_title("Private 5-fold cross-validation, epsilon 2 in total")
right.legend(fontsize=8)
fig.tight_layout()

# %%
# The fold accuracies are below the published model's because each fold's fit
# gets only a share of the cross-validation's epsilon (printed above) and fewer
# rows: cross-validation under a budget estimates a weaker model than the one
# you would publish.
#
# What to publish: the model, the released accuracy, matrix and reliability
# table, and their records; the accountant's total (here the sum, which is
# never wrong) is the guarantee for all of them together. The cross-validation
# models are never returned: only their scores are released. The CLI does the
# same with ``dperm evaluate`` and ``dperm report`` (see the command line
# example).
