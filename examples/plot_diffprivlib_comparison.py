"""
dperm beside diffprivlib: the privacy-accuracy trade-off
========================================================

How does dperm compare with IBM's diffprivlib, the library most data
scientists know for private logistic regression? diffprivlib needs an older
scikit-learn than the documentation environment, so this example does **not**
run it: it reads and plots the results the benchmark scripts committed to the
repository, and prints where they come from (file, date, commit, versions).
Re-run them with ``make bench`` / ``make bench-pipeline`` in the benchmark
environment.

Two protocols, both on UCI Adult (official split, 30,162 training rows, 105
features, 20 noise draws per cell):

- **private end to end** (``benchmarks/results/private_pipeline.json``): each
  library with its defaults and nothing chosen on the test set; this is the
  number a user gets.
- **test-tuned** (``benchmarks/results/adult_logistic.json``): for each
  epsilon the regularisation with the best mean test error over a public grid
  (as in Chaudhuri et al.'s Table 1). Choosing on the test set is *not*
  private; it compares the mechanisms at their best, on identical data.
"""

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from dperm.datasets import load_adult

try:
    ROOT = Path(__file__).resolve().parents[1]
except NameError:                      # run interactively from examples/
    ROOT = Path.cwd().parent
RESULTS = ROOT / "benchmarks" / "results"

# %%
# Private end to end: every library's defaults at pure epsilon-DP.
pipeline = json.loads((RESULTS / "private_pipeline.json").read_text())
cells = [cell for cell in pipeline["datasets"]["adult"]["cells"]
         if cell["delta"] == 0 and cell.get("status") == "ok"]
commits = sorted({cell.get("git_commit", pipeline["git_commit"])[:7] for cell in cells})
print(f"private_pipeline.json: created {pipeline['created']}, commits {', '.join(commits)}, "
      f"versions {pipeline['versions']}")
shown = {"default": "dperm defaults", "recipe": "dperm make_private_pipeline",
         "diffprivlib": "diffprivlib defaults",
         "test_tuned_no_intercept": "dperm, test-tuned alpha (NOT private)",
         "diffprivlib_test_tuned": "diffprivlib, test-tuned (NOT private)"}
curves = {}
for method in shown:
    points = sorted((cell["epsilon"], cell["mean"], cell["std"]) for cell in cells
                    if cell["method"] == method)
    if points:
        curves[method] = np.array(points)
        print(f"{shown[method]:40s}", "  ".join(f"eps {e:g}: {m:.3f}" for e, m, _ in points))

# %%
# Test-tuned, the peers' protocol: the best alpha per epsilon for each library.
peers = json.loads((RESULTS / "adult_logistic.json").read_text())
print(f"adult_logistic.json: versions {peers['versions']}; alpha chosen by {peers['alpha_choice']}")
best = {(cell["method"], cell["encoding"], cell["epsilon"]): cell["mean"] for cell in peers["best"]}
differences = {}
for encoding in ["unit_norm", "constant"]:
    epsilons = sorted(e for (m, enc, e) in best if m == "dperm_lr" and enc == encoding)
    differences[encoding] = (epsilons, [best["dperm_lr", encoding, e] - best["diffprivlib_lr", encoding, e]
                                        for e in epsilons])
    print(encoding, "dperm - diffprivlib test error:",
          ", ".join(f"eps {e:g}: {d:+.4f}" for e, d in zip(*differences[encoding])))
nonprivate = peers["nonprivate"]["unit_norm"]["error"]

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
for method, curve in curves.items():
    dashed = "NOT private" in shown[method]
    left.errorbar(curve[:, 0], curve[:, 1], yerr=curve[:, 2], capsize=2,
                  linestyle="--" if dashed else "-", marker="o" if "dperm" in shown[method] else "s",
                  label=shown[method], alpha=0.6 if dashed else 1)
y_test = load_adult().y_test
left.axhline(nonprivate, color="k", linestyle=":", label="non-private")
left.axhline(min(y_test.mean(), 1 - y_test.mean()), color="grey", linestyle="-.", label="majority class")
left.set_xscale("log")
left.set_xlabel("epsilon (pure DP)")
left.set_ylabel("test error (mean +- sd, 20 draws)")
left.set_title("Adult: private end to end")
left.legend(fontsize=7)

for encoding, (epsilons, diff) in differences.items():
    right.plot(epsilons, diff, marker="o", label=f"{encoding} rows")
right.axhline(0, color="grey", linewidth=0.8)
right.set_xscale("log")
right.set_xlabel("epsilon")
right.set_ylabel("dperm minus diffprivlib test error")
right.set_title("Test-tuned alpha, identical data (below 0: dperm ahead)")
right.legend(fontsize=8)
fig.tight_layout()

# %%
# Read the left panel for what you would get: the solid curves use only public
# choices. In the files committed when this example was written, dperm's
# defaults stayed at about the majority-class error at epsilon 0.1 and below
# (the noise is too large for 30,000 rows there, and the default regularisation
# keeps the model near zero rather than worse than guessing), while diffprivlib's
# defaults were worse than the majority class; from epsilon 0.5 on dperm's
# defaults were within about 0.01 of the test-tuned errors. The right panel
# isolates the mechanisms: with the same data and each library's best alpha the
# two differ by less than one percentage point. The printed numbers above are
# the ones plotted: if the benchmark files are re-run, this page follows them at
# the next docs build.
