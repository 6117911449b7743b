"""
Data larger than memory: fitting on Dask
========================================

Give :class:`~dperm.PrivateLogisticRegression` (or ``PrivateLinearSVC`` with a
smooth loss) a Dask array or DataFrame and the fit runs as map-reduce passes
(:mod:`dperm.scale`): each chunk returns only its loss, gradient and Hessian
sums, the Newton steps happen on the driver, and the privacy noise is drawn
once, on the driver, by the same code as in memory. The privacy guarantee and
the record are the same; for the same seed the coefficients equal the
in-memory fit's to the solver tolerance.

To keep the build light this uses 20,000 rows of Adult split into 10 chunks
and Dask's ``"synchronous"`` scheduler (one thread, no cluster). With real data
you would read Parquet or CSV lazily (``dask.dataframe.read_parquet``) and pass
``scheduler="tcp://host:8786"``, or leave ``scheduler=None`` to start a local
cluster for the fit (see :doc:`/dask`).
"""

import time

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

from dperm import PrivateLogisticRegression
from dperm.datasets import load_adult

adult = load_adult()
rng = np.random.default_rng(5)
rows = rng.choice(len(adult.y_train), size=20_000, replace=False)
X, y = adult.X_train[rows], adult.y_train[rows]
X_dask = da.from_array(X, chunks=(2_000, X.shape[1]))     # 10 row chunks
y_dask = da.from_array(y, chunks=2_000)


def model():
    return PrivateLogisticRegression(epsilon=0.5, fit_intercept=False, classes=[0, 1], random_state=0)


# %%
# The same estimator, once on NumPy and once on Dask.
start = time.perf_counter()
in_memory = model().fit(X, y)
memory_seconds = time.perf_counter() - start
start = time.perf_counter()
on_dask = model().set_params(scheduler="synchronous").fit(X_dask, y_dask)
dask_seconds = time.perf_counter() - start
difference = np.abs(in_memory.coef_ - on_dask.coef_).max()
print(f"in memory {memory_seconds:.2f} s, on Dask {dask_seconds:.2f} s; "
      f"largest coefficient difference {difference:.2e}")
print(on_dask.privacy_)

# %%
# Prediction is lazy too: chunk by chunk, nothing computed until asked.
predictions = on_dask.predict(adult.X_test)
lazy = on_dask.predict(da.from_array(adult.X_test, chunks=5_000))
print(type(lazy).__name__, "->", np.mean(lazy.compute() == predictions), "agreement with NumPy")
print(f"test accuracy {np.mean(predictions == adult.y_test):.3f}")

# %%
fig, ax = plt.subplots(figsize=(5, 5))
ax.scatter(in_memory.coef_.ravel(), on_dask.coef_.ravel(), s=12)
limits = [min(in_memory.coef_.min(), on_dask.coef_.min()), max(in_memory.coef_.max(), on_dask.coef_.max())]
ax.plot(limits, limits, color="grey", linestyle=":")
ax.set_xlabel("coefficient, fitted in memory")
ax.set_ylabel("coefficient, fitted on Dask (10 chunks)")
ax.set_title(f"Same seed, same model: max difference {difference:.1e}")
fig.tight_layout()

# %%
# Every point lies on the diagonal: distributing the solve changes where the
# sums are computed, not what is released. On data this small Dask is slower
# (each pass is a task graph); it pays when the rows do not fit on one machine.
