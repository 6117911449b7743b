"""``ChunkedERMData``: an ERM problem's rows in Dask chunks, solving itself by Newton passes."""

from __future__ import annotations

import math

import numpy as np

from dperm.scale._chunks import ChunkSpec, add_loss_sums, chunk_loss_sums
from dperm.scale._newton import newton_certified


class ChunkedERMData:
    """The rows of one binary ERM problem, held in chunks on a Dask cluster.

    Stands in for the in-memory ``X`` of :class:`~dperm.mechanisms.ERMProblem`
    (with ``y=None``): it has a ``shape`` for the calibration, and
    ``minimize_certified`` for the solve, which
    :func:`dperm.solvers.minimize_erm` calls. The mechanisms' noise is drawn
    on the driver as in memory; only the solve is distributed.

    Parameters
    ----------
    pairs : list of (Delayed, Delayed)
        Aligned ``(X_block, y_block)`` chunks (:func:`dperm.scale.chunk_pairs`).
    spec : ChunkSpec
        The per-record steps each chunk does (clip rows, intercept feature).
    n_samples : int
        Rows over all chunks (from the first pass).
    positive : label
        The class coded ``+1``; every other label is ``-1``.
    runner : PassRunner
        Runs and counts the passes.
    """

    def __init__(self, pairs, spec: ChunkSpec, n_samples: int, positive, runner):
        self.pairs = pairs
        self.spec = spec
        self.n_samples = int(n_samples)
        self.positive = positive
        self.runner = runner

    @property
    def shape(self):
        return (self.n_samples, self.spec.n_features + int(self.spec.fit_intercept))

    def loss_sums(self, loss, w, with_hessian=True):
        """One pass: ``(sum loss, sum gradient, sum Hessian)`` over all rows at ``w``."""
        return self.runner.run(chunk_loss_sums, self.pairs, add_loss_sums, self.spec,
                               self.positive, loss, np.asarray(w, dtype=float), with_hessian)

    def minimize_certified(self, loss, alpha, tol, max_iter, linear_term=None):
        """Certified minimiser of ``J`` by :func:`dperm.scale.newton_certified`.

        ``max_iter`` bounds the Newton passes; the proven completion's passes
        follow (:func:`dperm.scale.newton_certified`). Needs a twice-differentiable
        loss; the hinge is refused (use ``loss="smooth_hinge"``).
        """
        require_twice_differentiable(loss)
        # the public bound c R^2 + alpha on J's Hessian (rows are clipped to the norm R chunk by chunk)
        smoothness = loss.curvature * effective_norm(self.spec) ** 2 + alpha
        return newton_certified(
            lambda w, with_hessian=True: self.loss_sums(loss, w, with_hessian), self.shape[1],
            self.n_samples, alpha, tol, max_iter, linear_term, smoothness=smoothness,
        )

    def __repr__(self):
        return (f"ChunkedERMData(n_samples={self.n_samples}, n_features={self.shape[1]}, "
                f"chunks={len(self.pairs)})")


def require_twice_differentiable(loss):
    """Refuse losses the Newton passes cannot certify, naming the alternative."""
    if not loss.twice_differentiable:
        raise ValueError(
            f"the {loss.name} loss is not twice differentiable, so dperm cannot certify its "
            "minimiser with a few passes over distributed data. Use loss='smooth_hinge' "
            "(the smoothed hinge of 003 Sec. 3.4.2) or 'huber' for a private SVM at scale."
        )


def effective_norm(spec: ChunkSpec) -> float:
    """The norm bound of augmented rows: ``sqrt(data_norm^2 + intercept_scaling^2)``."""
    if not spec.fit_intercept:
        return spec.data_norm
    return math.hypot(spec.data_norm, spec.intercept_scaling)
