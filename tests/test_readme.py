"""Every Python example in README.md runs as written (issue 19).

The examples use a user's own ``X, y`` (and the multiparty ones ``X1, y1, ...`` or ``shards``);
the test provides them from scikit-learn's bundled breast-cancer data, scaled so every row has
norm at most 1 (the examples' default ``data_norm``), with labels 0/1. The Dask example needs a
Parquet directory and a running cluster (``tcp://scheduler:8786``): it is the one example not run,
and the test says so by name. Warnings that an example's data trigger (rows clipped) are allowed;
a ``PrivacyLeakWarning`` is not: the examples show the private usage.
"""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from dperm.exceptions import PrivacyLeakWarning

README = Path(__file__).resolve().parents[1] / "README.md"
#: Examples that need infrastructure a test machine lacks, by a phrase they contain.
NOT_RUN = {"dd.read_parquet": "a Parquet directory and a Dask cluster at tcp://scheduler:8786"}


def readme_examples():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def user_data():
    data = load_breast_cancer()
    X = data.data - data.data.min(axis=0)
    X /= X.max(axis=0)
    X /= np.sqrt(X.shape[1])  # every row's norm is at most 1
    y = data.target
    parts = np.array_split(np.random.default_rng(0).permutation(len(y)), 3)
    shards = [(X[p], y[p]) for p in parts]
    names = {"X": X, "y": y, "shards": shards}
    for k, (Xk, yk) in enumerate(shards, start=1):
        names[f"X{k}"], names[f"y{k}"] = Xk, yk
    return names


def test_the_readme_has_examples_and_names_the_ones_not_run():
    examples = readme_examples()
    assert len(examples) >= 8
    assert all(any(phrase in example for example in examples) for phrase in NOT_RUN)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(readme_examples())))
def test_every_readme_example_runs_as_written(index, capsys):
    example = readme_examples()[index]
    skip = [reason for phrase, reason in NOT_RUN.items() if phrase in example]
    if skip:
        pytest.skip(f"needs {skip[0]}")
    if "secure_sum=\"flower\"" in example or "coordinator_accountant" in example:
        pytest.importorskip("flwr" if "flower" in example else "dp_accounting")
    namespace = {"PSGDClassifier": __import__("dperm").PSGDClassifier, **user_data()}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        exec(compile(example, f"README.md example {index}", "exec"), namespace)
