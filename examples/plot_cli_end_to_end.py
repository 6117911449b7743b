"""
The command line end to end: train, show, evaluate, report, predict
===================================================================

Everything a data holder needs without writing Python: ``dperm train`` fits a
private model from a CSV file and a public schema, ``dperm show`` prints its
guarantee, ``dperm evaluate`` releases its accuracy on private held-out rows
with its own epsilon, ``dperm report`` turns the model file and the evaluation
record into a Markdown model card for a reviewer, and ``dperm predict`` scores
new rows. This example runs each command as a subprocess (exactly what you
would type in a shell, with ``python -m dperm.cli`` in place of ``dperm``) in a
temporary directory, on a synthetic table.

The schema file ``bounds.json`` is the public part: each numeric column's
range and each categorical column's categories, written down without looking at
the rows. The label set is given with ``--classes``.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


def dperm(*args):
    """Run one dperm command as a shell would, print what it prints, fail loudly."""
    print("$ dperm", " ".join(args))
    run = subprocess.run([sys.executable, "-m", "dperm.cli", *args],
                         capture_output=True, text=True, cwd=work)
    print(run.stdout.rstrip())
    if run.returncode != 0:
        raise RuntimeError(run.stderr)
    return run.stdout


# %%
# A synthetic register: the label depends on income, debt ratio and the sector.
work = Path(tempfile.mkdtemp(prefix="dperm-cli-"))
rng = np.random.default_rng(3)


def table(n):
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "income": rng.gamma(2.0, 20_000, n).round(),
        "debt_ratio": rng.beta(2, 5, n).round(3),
        "sector": rng.choice(["public", "private", "self-employed"], n, p=[0.3, 0.6, 0.1]),
    })
    risk = (-2.5 * frame["income"] / 100_000 + 3.0 * frame["debt_ratio"]
            + 0.8 * (frame["sector"] == "self-employed"))
    frame["default"] = np.where(risk + rng.logistic(scale=0.5, size=n) > 0.4, "yes", "no")
    return frame


table(8_000).to_csv(work / "train.csv", index=False)       # private training rows
table(2_000).to_csv(work / "heldout.csv", index=False)     # private held-out rows
table(500).drop(columns="default").to_csv(work / "new.csv", index=False)  # rows to score
(work / "bounds.json").write_text(json.dumps({
    "age": [18, 100], "income": [0, 150000], "debt_ratio": [0, 1],
    "sector": ["public", "private", "self-employed"],
}))

# %%
# Train at epsilon 1 (the defaults choose the mechanism and alpha from public
# quantities; ``dperm show`` prints what they chose).
dperm("train", "--data", "train.csv", "--target", "default", "--categorical", "sector",
      "--bounds", "bounds.json", "--classes", "no,yes", "--epsilon", "1",
      "--random-state", "0", "--out", "model.json")
dperm("show", "--model", "model.json")

# %%
# Release the accuracy on the held-out rows with a separate epsilon of 0.5, and
# keep the evaluation's record for the model card.
dperm("evaluate", "--model", "model.json", "--data", "heldout.csv", "--epsilon", "0.5",
      "--out", "evaluation.json")
evaluation = json.loads((work / "evaluation.json").read_text())

# %%
# The model card: guarantee, schema, calibration and the private evaluation on
# one page.
dperm("report", "--model", "model.json", "--evaluation", "evaluation.json", "--out", "card.md")
print((work / "card.md").read_text())

# %%
# Score new rows, with probabilities.
dperm("predict", "--model", "model.json", "--data", "new.csv", "--proba", "--out", "predictions.csv")
predictions = pd.read_csv(work / "predictions.csv")
print(predictions.head())

# %%
# The predicted probability of default on the new rows, by sector; the title
# carries the released (noised) held-out accuracy from the evaluation record.
# The self-employed rows sit to the right: the private model has learnt the
# sector effect the synthetic label was built with.
new = pd.read_csv(work / "new.csv")
probability = predictions[[c for c in predictions.columns if c.endswith("yes")][0]]
fig, ax = plt.subplots(figsize=(6, 4))
for sector in ["public", "private", "self-employed"]:
    ax.hist(probability[new["sector"] == sector], bins=20, range=(0, 1), alpha=0.5, density=True,
            label=sector)
ax.set_xlabel("predicted probability of 'yes'")
ax.set_ylabel("density over the sector's new rows")
ax.set_title(f"Model at epsilon 1 on 8,000 rows\nreleased held-out accuracy {evaluation['value']} "
             f"(epsilon {evaluation['epsilon']})", fontsize=10)
ax.legend(title="sector")
fig.tight_layout()

# %%
# The card's "Total" section adds the model's and the evaluation's epsilons
# (1.5): what you state when training and held-out rows might overlap. Publish
# ``model.json``, its digest and ``card.md`` together.
shutil.rmtree(work)
