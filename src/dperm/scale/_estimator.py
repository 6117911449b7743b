"""Fit and use dperm's linear classifiers on Dask collections."""

from __future__ import annotations

from dperm.mechanisms import MECHANISMS, ERMProblem
from dperm.privacy.labels import one_vs_rest_positives, resolve_label_set
from dperm.scale._chunks import ChunkSpec, chunk_pairs, merge_scans, scan_chunk
from dperm.scale._cluster import dask_scheduler
from dperm.scale._data import ChunkedERMData, effective_norm, require_twice_differentiable

# prediction on Dask collections: only public coefficients travel (scale/_predict.py)
from dperm.scale._predict import predict_blockwise, score_distributed
from dperm.validation import check_random_state, warn_clipped_rows


def fit_classifier_distributed(estimator, X, y, params, spend):
    """The Dask branch of ``PrivateLinearClassifierBase.fit``.

    One pass validates every chunk and counts rows, clipped rows and labels;
    then ``spend(params)`` charges the budget; then each binary problem of the
    one-vs-rest fit runs its mechanism, whose solve is
    :meth:`ChunkedERMData.minimize_certified` (Newton, one pass per trial point). The noise is
    drawn once, on the driver, from the same
    generator and in the same order as in memory, so a seeded fit gives the
    in-memory coefficients to within the solver tolerance.

    When the budget is spent: the scan is the Dask form of the in-memory
    ``validate_data`` and class check (a NaN, a string feature, a chunk with
    other columns, fewer than two rows or classes raise there), so it runs
    *before* the spend, as those checks do in memory: a bad data set costs no
    budget. Nothing computed by the scan leaves this function before
    ``spend(params)`` returns (the clipping warning comes after it), and no noise is
    drawn before it. A worker failure during the scan therefore costs nothing;
    one during the solves comes after the spend, and the budget stays spent.

    Parameters
    ----------
    estimator : PrivateLinearClassifierBase
    X, y : Dask collections
    params : FitParams
        The checked parameters.
    spend : callable
        Called with the resolved params (mechanism and alpha set) once every check
        has passed; raises :class:`~dperm.exceptions.BudgetExceededError` to refuse the fit.

    Returns
    -------
    outputs : list of MechanismOutput
    label_set : dperm.privacy.labels.LabelSet
        ``params.classes`` if given (every chunk's labels must lie in it), else
        the labels of all chunks (with a ``PrivacyLeakWarning``).
    scan : ChunkScan
        Rows, clipped rows, labels over all chunks.
    passes : int
        Data passes, the scan included.
    params : FitParams
        ``params`` with the mechanism and alpha chosen from public n and d.
    """
    pairs, n_features = chunk_pairs(X, y)
    spec = ChunkSpec(n_features=n_features, data_norm=params.data_norm,
                     fit_intercept=bool(estimator.fit_intercept),
                     intercept_scaling=params.scaling)
    with dask_scheduler(estimator.scheduler) as runner:
        scan = runner.run(scan_chunk, pairs, merge_scans, spec)
        label_set = _check_scan(scan, params.classes)
        params = estimator._with_public_choices(  # "auto": public n and d only
            params, scan.n_rows, n_features, one_vs_rest_positives(label_set.classes).size)
        rng = check_random_state(estimator.random_state)
        spend(params)  # check first, spend last-possible: after the validating scan, before any noise
        warn_clipped_rows(scan.rows_clipped, params.data_norm)
        positives = one_vs_rest_positives(label_set.classes)
        mechanism = MECHANISMS[params.mechanism]
        outputs = []
        for positive in positives:  # each problem releases with the fit's one calibration
            data = ChunkedERMData(pairs, spec, scan.n_rows, positive, runner)
            problem = ERMProblem(data, None, params.loss, params.alpha, effective_norm(spec))
            outputs.append(mechanism.release(problem, params.calibration, rng, params.tol,
                                             params.max_iter))
        passes = runner.passes
    estimator.n_features_in_ = n_features
    return outputs, label_set, scan, passes, params


def _check_scan(scan, classes):
    if scan.n_rows < 2:
        raise ValueError(
            f"Found array with {scan.n_rows} sample(s) while a minimum of 2 is required."
        )
    return resolve_label_set(classes, scan.labels)


def check_distributed_loss(loss):
    """Refuse, before any budget is spent, a loss the Newton passes cannot solve."""
    require_twice_differentiable(loss)


__all__ = ["check_distributed_loss", "fit_classifier_distributed", "predict_blockwise",
           "score_distributed"]
