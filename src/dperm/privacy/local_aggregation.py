"""The calibration of the local-aggregation baseline (004 eq. 5, paper note 12): its public numbers.

:func:`dperm.multiparty.baselines.calibrate_local_aggregation` computes one from checked
public inputs (the sensitivity is :func:`~dperm.privacy.sensitivity.local_aggregation_sensitivity`);
the release draws with it and
:class:`~dperm.privacy.multiparty_record.LocalAggregationPrivacyRecord` embeds it as one field.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LocalAggregationCalibration"]


@dataclass(frozen=True)
class LocalAggregationCalibration:
    """Public numbers of one local-aggregation release (004 eq. 5, paper note 12).

    Attributes
    ----------
    epsilon : float
    alpha : float
        ``lambda`` of every local objective (004 eq. 4).
    n_samples_by_party : tuple of int
    n_min : int
    n_features : int
    lipschitz, data_norm : float
    tol : float
        Gradient-norm tolerance of each local solve.
    solution_radius_allowance : float
        ``r = tol / alpha``: a solve with ``||grad J_k|| <= tol`` is within
        ``r`` of the exact minimiser (strong convexity), as in
        :func:`dperm.mechanisms.output.solution_radius_allowance`.
    sensitivity : float
    noise_scale : float
        Per-coordinate discrete Laplace scale ``g k / epsilon``
        (:func:`~dperm.mechanisms.noise.discrete_laplace_calibration` for
        ``sensitivity``): the float-safe form of 004 eq. 2's ``sensitivity / epsilon``.
    noise_grid : float
        ``g``: every contribution is rounded to it; the noise is ``g`` times an integer.
    loss : str
    """

    epsilon: float
    alpha: float
    n_samples_by_party: tuple
    n_min: int
    n_features: int
    lipschitz: float
    data_norm: float
    tol: float
    solution_radius_allowance: float
    sensitivity: float
    noise_scale: float
    noise_grid: float
    loss: str
