"""
A pandas table with public bounds: ColumnTransformer pipeline
=============================================================

A typical table mixes numeric columns, categorical columns and a label. Each
preprocessing step of a private model must use only **public** constants,
because any statistic of the private rows it learns (a mean, a maximum, the
list of categories that occur) would be released through the model without
noise. dperm's transformers take those constants as arguments:

- :class:`~dperm.preprocessing.PublicBoundsScaler`: each numeric column from
  its public range to [0, 1]; values outside are clipped (a per-row step) and
  counted in a warning;
- :class:`~dperm.preprocessing.PublicOneHotEncoder`: the public category list;
  a category not on the list becomes all zeros instead of being learnt;
- :class:`~dperm.preprocessing.RowNormalizer`: every row scaled to the norm
  bound the privacy proof assumes.

They slot into scikit-learn's ``ColumnTransformer`` and ``Pipeline``. The
table below is synthetic (a stand-in for a loan register); the figure compares
the private model's coefficients, over several noise draws, with the
non-private fit of the same pipeline.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from dperm import PrivateLogisticRegression
from dperm.preprocessing import PublicBoundsScaler, PublicOneHotEncoder, RowNormalizer

rng = np.random.default_rng(0)
n = 12_000
table = pd.DataFrame({
    "age": rng.integers(18, 90, n),
    "income": rng.gamma(2.0, 20_000, n),                  # a long tail above the public cap
    "debt_ratio": rng.beta(2, 5, n),
    "sector": rng.choice(["public", "private", "self-employed"], n, p=[0.3, 0.6, 0.1]),
    "region": rng.choice(["north", "south", "east", "west"], n),
})
risk = (-2.5 * (table["income"] / 100_000) + 3.0 * table["debt_ratio"]
        + 0.8 * (table["sector"] == "self-employed") - 0.01 * (table["age"] - 50))
table["default"] = (risk + rng.logistic(scale=0.5, size=n) > 0.4).astype(int)
X_train, X_test, y_train, y_test = train_test_split(
    table.drop(columns="default"), table["default"], test_size=0.25, random_state=0)
print(table.head())

# %%
# The public schema, written down before looking at the rows: numeric ranges
# (from the questionnaire and a regulatory cap on recorded income), the
# category lists and the label set.
numeric = ["age", "income", "debt_ratio"]
schema = ColumnTransformer([
    ("numeric", PublicBoundsScaler(bounds=([18, 0, 0], [100, 150_000, 1])), numeric),
    ("categories", PublicOneHotEncoder(categories=[["public", "private", "self-employed"],
                                                   ["north", "south", "east", "west"]]),
     ["sector", "region"]),
])


def pipeline(estimator):
    return make_pipeline(schema, RowNormalizer(data_norm=1.0, mode="scale"), estimator)


# %%
# Fit the private model a few times (each fit draws new noise) and the
# non-private one once. The income column's tail above 150,000 is clipped to the
# cap, and dperm says so once per fit (``DataClippingWarning``).
epsilon = 1.0
private = [pipeline(PrivateLogisticRegression(epsilon=epsilon, classes=[0, 1], random_state=seed))
           .fit(X_train, y_train) for seed in range(8)]
public = pipeline(LogisticRegression(C=100.0, max_iter=1000)).fit(X_train, y_train)
names = private[0][:-1].get_feature_names_out()
accuracy = [model.score(X_test, y_test) for model in private]
print(f"private accuracy {np.mean(accuracy):.3f} +- {np.std(accuracy):.3f}; "
      f"non-private {public.score(X_test, y_test):.3f}; "
      f"majority class {max(y_test.mean(), 1 - y_test.mean()):.3f}")
print(private[0][-1].privacy_)

# %%
# A row with a category missing from the public list is encoded as all zeros in
# that block, the same at fit and at predict time; nothing is learnt from it.
new = pd.DataFrame({"age": [40], "income": [35_000], "debt_ratio": [0.6],
                    "sector": ["charity"], "region": ["north"]})
print("unknown sector encoded as:", private[0][0].transform(new).round(3))
print("predicted probability of default:", private[0].predict_proba(new)[:, 1].round(3))

# %%
# Coefficients: the private models' spread against the non-private fit. The
# features the label depends on (income, debt ratio, age, self-employed) stand
# out from the noise; the region columns, which do not matter, scatter around 0.
coefs = np.array([model[-1].coef_.ravel() for model in private])
fig, ax = plt.subplots(figsize=(7, 4))
positions = np.arange(len(names))
ax.boxplot(coefs, positions=positions, widths=0.5)
ax.scatter(positions, public[-1].coef_.ravel() / np.abs(public[-1].coef_).max()
           * np.abs(coefs.mean(0)).max(), color="k", marker="x", zorder=3,
           label="non-private (rescaled to the private range)")
ax.axhline(0, color="grey", linewidth=0.5)
ax.set_xticks(positions)
ax.set_xticklabels([name.split("__")[-1] for name in names], rotation=45, ha="right")
ax.set_ylabel("coefficient")
ax.set_title(f"8 private fits at epsilon {epsilon}, {len(y_train)} rows")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# The non-private coefficients are rescaled because the private model is more
# strongly regularised (its alpha is in the record): compare directions, not
# magnitudes.
