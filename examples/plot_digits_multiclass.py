"""
Multiclass classification: handwritten digits
=============================================

scikit-learn's digits are 8 x 8 images whose pixels are integers from 0 to 16,
so the public bounds are known before any row is seen: every feature lies in
[0, 16]. With ten labels there are two ways to spend the budget: ten
one-vs-rest problems, each at a tenth of epsilon, or one multinomial (softmax)
model whose ten weight vectors share one noise draw at the whole epsilon.
``multi_class="auto"`` (the default) compares their public noise per class and
fits the smaller; either way a multiclass model needs a larger epsilon (or more
rows) than a binary one for the same accuracy. The label set itself is public
(``classes=range(10)``): dperm never reads it from the rows.

We fit at several epsilons on about 1,250 training rows and draw the confusion
matrix of one private model. The matrix here is computed exactly on the test
rows to show where the errors are; publishing it would need
:func:`dperm.metrics.confusion_matrix` (see the private evaluation example).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import confusion_matrix
from sklearn.model_selection import train_test_split

from dperm import PrivateLogisticRegression
from dperm.preprocessing import make_private_pipeline

digits = load_digits()
X_train, X_test, y_train, y_test = train_test_split(
    digits.data, digits.target, test_size=0.3, stratify=digits.target, random_state=0)
bounds = (0.0, 16.0)            # pixel intensities: public by construction of the data
labels = list(range(10))        # the public label set

# %%
# Accuracy against epsilon, five noise draws per point. dperm warns that an
# epsilon above 10 protects little (``WeakGuaranteeWarning``); the last point is
# there to show where the accuracy comes back, not as a recommended setting.
epsilons = [1.0, 3.0, 10.0, 30.0]
accuracy = []
for epsilon in epsilons:
    draws = [make_private_pipeline(
                 PrivateLogisticRegression(epsilon=epsilon, classes=labels, random_state=seed),
                 bounds=bounds).fit(X_train, y_train).score(X_test, y_test)
             for seed in range(5)]
    accuracy.append((np.mean(draws), np.std(draws)))
    print(f"epsilon {epsilon:>4}: test accuracy {np.mean(draws):.3f} +- {np.std(draws):.3f}")

baseline = LogisticRegression(max_iter=2000).fit(X_train / 16, y_train).score(X_test / 16, y_test)
majority = np.bincount(y_test).max() / len(y_test)

# %%
# The record says which model ``multi_class="auto"`` chose and why (public
# quantities only).
model = make_private_pipeline(PrivateLogisticRegression(epsilon=10.0, classes=labels, random_state=0),
                              bounds=bounds).fit(X_train, y_train)
record = model[-1].privacy_
print(f"model: {model[-1].multi_class_}; mechanism {record.mechanism}, epsilon {record.epsilon:g}, "
      f"alpha {record.alpha:.3g}")
print(f"why: {record.mechanism_choice}")

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
mean, std = np.array(accuracy).T
left.errorbar(epsilons, mean, yerr=std, marker="o", capsize=3, label="dperm, bounds [0, 16]")
left.axhline(baseline, color="k", linestyle="--", label="non-private scikit-learn")
left.axhline(majority, color="grey", linestyle=":", label="majority class")
left.set_xscale("log")
left.set_xlabel("epsilon (total over the 10 classes)")
left.set_ylabel("test accuracy")
left.set_title(f"Digits, {len(y_train)} training rows")
left.legend()

matrix = confusion_matrix(y_test, model.predict(X_test), labels=labels)
right.imshow(matrix, cmap="Blues")
right.set_xticks(labels)
right.set_yticks(labels)
right.set_xlabel("predicted digit")
right.set_ylabel("true digit")
right.set_title(f"epsilon 10: accuracy {np.trace(matrix) / matrix.sum():.2f} (exact, not for publication)")
fig.tight_layout()

# %%
# Ten classes and 64 pixels make 640 noisy weights from about 1,250 rows: at a
# total epsilon of 1 the model is close to guessing whichever way the budget is
# spent. On a table this small a ten-class private model is only useful at
# budgets that protect little; more rows, fewer classes or fewer features (the
# noise grows with the dimension) are the way out. In the matrix, some classes
# are recovered well and others are absorbed by a neighbour's score; which
# classes suffer changes from one noise draw to the next.
