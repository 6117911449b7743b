"""Row chunks of a Dask collection: pair X with y, and do the per-record steps in the chunk.

Every data pass of :mod:`dperm.scale` recomputes each chunk from its source
(a Parquet file, a CSV file, a random generator...) on a worker, validates it,
clips its rows to the public norm bound and appends the intercept feature
there, and returns only sums over its rows. Nothing is persisted in worker
memory and no row reaches the driver.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_X_y

from dperm.solvers import loss_sums
from dperm.validation import clip_rows_to_norm, is_dask_collection


@dataclass(frozen=True)
class ChunkSpec:
    """The public, per-record preparation every chunk gets (the same as in memory).

    Attributes
    ----------
    n_features : int
        Columns of X as given (before the intercept feature).
    data_norm : float
        Public bound on a row's L2 norm; longer rows are scaled onto it.
    fit_intercept : bool
    intercept_scaling : float
    """

    n_features: int
    data_norm: float
    fit_intercept: bool
    intercept_scaling: float


def prepare_chunk(X_block, y_block, spec: ChunkSpec):
    """Validate one chunk and apply the per-record steps of the in-memory fit.

    The checks are scikit-learn's (``check_X_y``), so a NaN, an infinity, a
    string feature or a continuous label inside one chunk raises the same
    ``ValueError`` as the whole array would in memory.

    ``y_block`` may be a :class:`FrameLabel`: then ``X_block`` is a DataFrame
    partition that carries its label column, split here, in the task that uses
    it (see :func:`_frame_pairs`).

    Returns
    -------
    X : ndarray of shape (m, n_features [+ 1])
        Rows clipped to ``data_norm``, intercept feature appended.
    y : ndarray of shape (m,)
        The labels as given.
    rows_clipped : int
    """
    augmented = None
    if isinstance(y_block, FrameLabel):
        X_block, y_block, augmented = y_block.split(X_block, int(spec.fit_intercept))
    X, y = check_X_y(X_block, y_block, accept_sparse="csr", dtype=np.float64,
                     ensure_min_samples=0)
    if sparse.issparse(X):
        X = X.toarray()
    if X.shape[1] != spec.n_features:
        raise ValueError(
            f"a chunk of X has {X.shape[1]} features where the others have "
            f"{spec.n_features}; every chunk must have the same columns."
        )
    if y.size:
        check_classification_targets(y)
    if not spec.fit_intercept:
        if augmented is not None:  # already this chunk's own float64 copy
            _, rows_clipped = clip_rows_to_norm(augmented, spec.data_norm, copy=False)
            return augmented, y, rows_clipped
        X, rows_clipped = clip_rows_to_norm(X, spec.data_norm)
        return X, y, rows_clipped
    # One new array holds the rows and the intercept feature; clip inside it, so a chunk
    # costs one copy (the chunk's input may be a view of someone else's memory).
    if augmented is None:
        augmented = np.empty((X.shape[0], X.shape[1] + 1))
        augmented[:, :-1] = X
    augmented[:, -1] = spec.intercept_scaling
    _, rows_clipped = clip_rows_to_norm(augmented[:, :-1], spec.data_norm, copy=False)
    return augmented, y, rows_clipped


@dataclass(frozen=True)
class ChunkScan:
    """What the first pass learns from a chunk: counts and its label set."""

    n_rows: int
    rows_clipped: int
    labels: np.ndarray


def scan_chunk(X_block, y_block, spec: ChunkSpec) -> ChunkScan:
    """Validate a chunk; count its rows and clipped rows; list its labels."""
    X, y, rows_clipped = prepare_chunk(X_block, y_block, spec)
    return ChunkScan(n_rows=X.shape[0], rows_clipped=rows_clipped, labels=np.unique(y))


def merge_scans(*scans: ChunkScan) -> ChunkScan:
    """Sum the counts and unite the label sets of several chunks (a tree-reduction step)."""
    labels = [scan.labels for scan in scans if scan.labels.size]
    return ChunkScan(
        n_rows=sum(scan.n_rows for scan in scans),
        rows_clipped=sum(scan.rows_clipped for scan in scans),
        labels=np.unique(np.concatenate(labels)) if labels else np.array([]),
    )


def chunk_loss_sums(X_block, y_block, spec: ChunkSpec, positive, loss, w, with_hessian):
    """:func:`dperm.solvers.loss_sums` of one chunk for the binary problem "``positive`` or not".

    Labels become ``+1`` for ``positive`` and ``-1`` otherwise, as in the
    in-memory one-vs-rest fit.
    """
    X, y, _ = prepare_chunk(X_block, y_block, spec)
    signs = np.where(y == positive, 1.0, -1.0)
    value, grad, hess = loss_sums(loss, X, signs, np.asarray(w, dtype=float), with_hessian)
    if with_hessian and hess is None:  # pragma: no cover - loss_sums returns it when asked
        raise RuntimeError("loss_sums returned no Hessian")
    return value, grad, hess


def add_loss_sums(*parts):
    """Add ``(value, grad, hess)`` triples (a tree-reduction step)."""
    value = sum(part[0] for part in parts)
    grad = sum(part[1] for part in parts)
    hessians = [part[2] for part in parts]
    hess = None if any(h is None for h in hessians) else sum(hessians)
    return value, grad, hess


def chunk_pairs(X, y):
    """Split a Dask X and y into aligned ``(X_block, y_block)`` pairs of Dask delayed objects.

    Parameters
    ----------
    X : dask.array.Array of shape (n, d) or dask.dataframe.DataFrame
    y : dask.array.Array of shape (n,), dask.dataframe.Series, or an in-memory
        array-like (then split along X's row chunks, which must be known).

    Returns
    -------
    pairs : list of (Delayed, Delayed)
    n_features : int
    """
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(X, dd.DataFrame) and isinstance(y, (dd.Series, dd.DataFrame)):
        return _frame_pairs(X, y), len(X.columns)
    if isinstance(X, dd.DataFrame):
        n_features = len(X.columns)
        x_blocks = list(X.to_delayed())
        x_rows = None
    elif isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional; got a Dask array of shape {X.shape}.")
        n_features = int(X.shape[1])
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})  # each chunk holds whole rows
        x_blocks = list(X.to_delayed().ravel())
        x_rows = X.chunks[0]
    else:
        raise TypeError(
            "with Dask input, X must be a dask.array.Array or a dask.dataframe.DataFrame; "
            f"got {type(X).__name__}."
        )
    y_blocks = _label_blocks(y, x_rows, len(x_blocks))
    return list(zip(x_blocks, y_blocks)), n_features


#: The label's column while X and y travel as one frame (:func:`_frame_pairs`).
_LABEL_COLUMN = "__dperm_label__"


def _frame_pairs(X, y):
    """Aligned pairs from a Dask DataFrame X and a Dask Series (or one-column frame) y.

    X and y go through one graph (``X.assign``), so Dask partitions them alike: on
    ``dd.read_parquet`` data, ``frame[features]`` and ``frame[label]`` optimised apart
    can get different partition counts (the reader fuses small files per projected
    column set), which made real Parquet fail with "X has 10 row chunks and y has 3".

    Each pair is ``(partition, FrameLabel)``: the partition is split into X and y
    inside the chunk's own task (:func:`prepare_chunk`), and copied once. Split in
    two separate tasks, a partition stayed in worker memory until both had run, could
    be fetched by the other worker, and was copied twice more: a 1 GiB worker that was
    restarted held two partitions and their halves at once (issue 31, finding 8).
    """
    import dask.dataframe as dd

    if isinstance(y, dd.DataFrame):
        if len(y.columns) != 1:
            raise ValueError(f"y must be one column; got a Dask DataFrame with {len(y.columns)}.")
        y = y[y.columns[0]]
    if _LABEL_COLUMN in X.columns:
        raise ValueError(f"X must not have a column named {_LABEL_COLUMN!r} (dperm's label column).")
    label = FrameLabel(_LABEL_COLUMN)
    return [(block, label) for block in X.assign(**{_LABEL_COLUMN: y}).to_delayed()]


@dataclass(frozen=True)
class FrameLabel:
    """Stands for ``y`` when the label travels as a column of X's partition."""

    column: str

    def split(self, frame, extra_columns=0):
        """``(X, y, augmented)`` of one partition.

        When every feature column is numeric, ``augmented`` is one new C-ordered
        float64 array of the features plus ``extra_columns`` unfilled columns, and
        ``X`` is a view of its feature part: the partition is copied once. Otherwise
        ``augmented`` is None and ``X`` is the feature frame (scikit-learn's checks
        then convert or refuse it, as in memory).
        """
        y = frame[self.column].rename(None)
        features = [name for name in frame.columns if name != self.column]
        numeric = frame.columns.is_unique and all(
            isinstance(frame[name].dtype, np.dtype) and frame[name].dtype.kind in "fiub"
            for name in features)
        if not numeric:
            return frame.drop(columns=self.column), y, None
        augmented = np.empty((len(frame), len(features) + extra_columns))
        for j, name in enumerate(features):
            augmented[:, j] = frame[name].to_numpy()
        return augmented[:, :len(features)], y, augmented


def _label_blocks(y, x_rows, n_blocks):
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(y, dd.DataFrame):
        if len(y.columns) != 1:
            raise ValueError(f"y must be one column; got a Dask DataFrame with {len(y.columns)}.")
        y = y[y.columns[0]]
    if not is_dask_collection(y):
        if x_rows is None or any(np.isnan(size) for size in x_rows):
            raise TypeError(
                "y is in memory but X's row chunks have unknown sizes; pass y as a Dask "
                "collection with the same partitions as X (e.g. two columns of one DataFrame)."
            )
        y = np.asarray(y)
        if y.shape[0] != sum(x_rows):
            raise ValueError(
                "Found input variables with inconsistent numbers of samples: "
                f"[{int(sum(x_rows))}, {y.shape[0]}]"
            )
        y = da.from_array(y, chunks=(x_rows,) + y.shape[1:])
    if isinstance(y, dd.Series):
        blocks = list(y.to_delayed())
    elif isinstance(y, da.Array):
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(f"y must be 1-dimensional; got a Dask array of shape {y.shape}.")
        known = x_rows is not None and not any(np.isnan(size) for size in x_rows)
        if known and not any(np.isnan(size) for size in y.chunks[0]) and y.chunks[0] != x_rows:
            if sum(y.chunks[0]) != sum(x_rows):
                raise ValueError(
                    "Found input variables with inconsistent numbers of samples: "
                    f"[{int(sum(x_rows))}, {int(sum(y.chunks[0]))}]"
                )
            y = y.rechunk({0: x_rows})
        blocks = list(y.to_delayed().ravel())
    else:
        raise TypeError(
            "with Dask input, y must be a dask.array.Array, a dask.dataframe.Series or an "
            f"in-memory array; got {type(y).__name__}."
        )
    if len(blocks) != n_blocks:
        raise ValueError(
            f"X has {n_blocks} row chunks and y has {len(blocks)}; they must be partitioned "
            "alike (take both from one DataFrame, or rechunk y to X.chunks[0])."
        )
    return blocks
