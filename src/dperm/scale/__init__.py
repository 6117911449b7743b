"""Private ERM on data larger than one machine's memory, on Dask (``pip install 'dperm[dask]'``).

dperm's linear classifiers accept a ``dask.array.Array`` or a
``dask.dataframe.DataFrame`` for ``X`` (and a Dask or in-memory ``y``) and then
fit without materialising the data anywhere:

- every data pass is map-reduce over the row chunks: each chunk is
  validated, clipped to the public ``data_norm`` and given its intercept
  feature on a worker (:func:`prepare_chunk`), and returns its loss,
  gradient and ``d x d`` Hessian sums (:func:`dperm.solvers.loss_sums`);
  the partial sums are added in a tree on the workers (:class:`PassRunner`);
- the driver runs damped Newton with one pass per trial point to the same
  gradient certificate as in memory (:func:`newton_certified`), so the
  released model is the in-memory one to within the solver tolerance;
- each mechanism's noise is drawn once, on the driver
  (:class:`ChunkedERMData` only replaces the solve).

Runs on the current ``distributed.Client``, else a ``LocalCluster`` on
127.0.0.1, or on any scheduler given by address (``scheduler=`` of the
estimators). Only twice-differentiable losses (logistic, Huber, smoothed
hinge) are supported; the hinge is refused with a pointer to
``loss="smooth_hinge"``.
"""

from dperm.scale._chunks import (
    ChunkScan,
    ChunkSpec,
    chunk_pairs,
    is_dask_collection,
    prepare_chunk,
)
from dperm.scale._cluster import PassRunner, dask_scheduler
from dperm.scale._data import ChunkedERMData
from dperm.scale._estimator import (
    check_distributed_loss,
    fit_classifier_distributed,
    predict_blockwise,
    score_distributed,
)
from dperm.scale._newton import newton_certified
from dperm.scale._tabular import lazy_design

__all__ = [
    "ChunkScan",
    "ChunkSpec",
    "ChunkedERMData",
    "check_distributed_loss",
    "PassRunner",
    "chunk_pairs",
    "dask_scheduler",
    "fit_classifier_distributed",
    "is_dask_collection",
    "lazy_design",
    "newton_certified",
    "predict_blockwise",
    "prepare_chunk",
    "score_distributed",
]
