"""Fit and use dperm's linear classifiers on Dask collections."""

from __future__ import annotations

from contextlib import contextmanager

from dperm.privacy.labels import resolve_label_set
from dperm.scale._chunks import ChunkSpec, chunk_pairs, merge_scans, scan_chunk
from dperm.scale._cluster import dask_scheduler
from dperm.scale._data import ChunkedERMData, effective_norm, require_twice_differentiable

# prediction on Dask collections: only public coefficients travel (scale/_predict.py)
from dperm.scale._predict import predict_blockwise, score_distributed
from dperm.validation import warn_clipped_rows


class ChunkedRows:
    """The fit skeleton's data provider for rows left in Dask chunks (``engine = "dask"``).

    Stands where :class:`dperm.linear_model._base.InMemoryRows` stands in
    ``PrivateLinearModelBase._fit_rows``: the public ``n_samples`` (the scan's
    row count) and ``n_features``; ``prepare`` after the spend; and
    ``binary_rows(positive)``, the :class:`ChunkedERMData` of one one-vs-rest
    problem, whose solve is Newton with one pass per trial point. The noise is
    drawn on the driver, from the same generator and in the same order as in
    memory, so a seeded fit gives the in-memory coefficients to within the
    solver tolerance.
    """

    engine = "dask"

    def __init__(self, pairs, spec: ChunkSpec, scan, runner):
        self.pairs = pairs
        self.spec = spec
        self.scan = scan
        self.runner = runner
        self.n_samples = scan.n_rows
        self.n_features = spec.n_features

    def prepare(self, estimator, params):
        """After the spend: the clipping warning (each pass clips its chunk's rows), the norm bound
        with the intercept's feature (added chunk by chunk)."""
        warn_clipped_rows(self.scan.rows_clipped, params.data_norm)
        return self, effective_norm(self.spec)

    def binary_rows(self, positive):
        """``(ChunkedERMData, None)``: the problem ``positive`` vs the rest; labels travel with the chunks."""
        return ChunkedERMData(self.pairs, self.spec, self.n_samples, positive, self.runner), None


@contextmanager
def chunked_rows(X, y, params, *, fit_intercept, scheduler):
    """Validate Dask ``X``, ``y`` in one pass and hold a cluster for the fit: ``(ChunkedRows, label_set)``.

    The scan is the Dask form of the in-memory ``validate_data`` and class
    check (a NaN, a string feature, a chunk with other columns, fewer than two
    rows or classes raise here), so it runs *before* the fit skeleton spends
    the budget, as those checks do in memory: a bad data set costs no budget,
    and a worker failure during the scan costs nothing. Nothing the scan
    computed leaves before the spend (the clipping warning is given in
    :meth:`ChunkedRows.prepare`); a worker failure during the solves comes
    after the spend, and the budget stays spent.

    Parameters
    ----------
    X, y : Dask collections
    params : FitParams
        The checked parameters (``data_norm``, ``scaling``, ``classes``).
    fit_intercept : bool
    scheduler : the estimator's ``scheduler``
        (:func:`dperm.scale.dask_scheduler`).

    Yields
    ------
    rows : ChunkedRows
    label_set : dperm.privacy.labels.LabelSet
        ``params.classes`` if given (every chunk's labels must lie in it), else
        the labels of all chunks (with a ``PrivacyLeakWarning``).
    """
    pairs, n_features = chunk_pairs(X, y)
    spec = ChunkSpec(n_features=n_features, data_norm=params.data_norm,
                     fit_intercept=fit_intercept, intercept_scaling=params.scaling)
    with dask_scheduler(scheduler) as runner:
        scan = runner.run(scan_chunk, pairs, merge_scans, spec)
        label_set = _check_scan(scan, params.classes)
        yield ChunkedRows(pairs, spec, scan, runner), label_set


def _check_scan(scan, classes):
    if scan.n_rows < 2:
        raise ValueError(
            f"Found array with {scan.n_rows} sample(s) while a minimum of 2 is required."
        )
    return resolve_label_set(classes, scan.labels)


#: Refuse, before any budget is spent, a loss the Newton passes cannot solve.
check_distributed_loss = require_twice_differentiable


__all__ = ["ChunkedRows", "check_distributed_loss", "chunked_rows", "predict_blockwise",
           "score_distributed"]
