"""Private ERM on data larger than one machine's memory, on Dask (``pip install 'dperm[dask]'``).

dperm's linear classifiers accept a Dask array or DataFrame for ``X`` and fit
without materialising it, through the estimators' one fit skeleton with
:class:`ChunkedRows` as its data provider (:func:`chunked_rows`): every data pass is a map-reduce of per-chunk loss,
gradient and Hessian sums (:func:`prepare_chunk`, :class:`PassRunner`), the
driver runs damped Newton to the in-memory gradient certificate
(:func:`newton_certified`), and the noise is drawn once on the driver
(:class:`ChunkedERMData`). :func:`read_parquet` reads large Parquet files in partitions
sized to the workers (:func:`partition_rows`); prediction ships only the public
coefficients (:class:`PublicLinearScores`). Twice-differentiable losses only. Design:
``docs/design/scale.md``.
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
from dperm.scale._estimator import ChunkedRows, check_distributed_loss, chunked_rows
from dperm.scale._newton import newton_certified
from dperm.scale._partitions import csv_blocksize, partition_rows, read_parquet
from dperm.scale._predict import (
    PublicLinearScores,
    predict_blockwise,
    score_distributed,
)
from dperm.scale._tabular import lazy_design

__all__ = [
    "ChunkScan",
    "ChunkSpec",
    "ChunkedERMData",
    "ChunkedRows",
    "PassRunner",
    "PublicLinearScores",
    "check_distributed_loss",
    "chunk_pairs",
    "chunked_rows",
    "csv_blocksize",
    "dask_scheduler",
    "is_dask_collection",
    "lazy_design",
    "newton_certified",
    "partition_rows",
    "predict_blockwise",
    "prepare_chunk",
    "read_parquet",
    "score_distributed",
]
