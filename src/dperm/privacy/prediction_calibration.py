"""How one private predictor is calibrated (000 Prop. 1, Lemma 1; paper notes 5, 7, 8): its public numbers.

:func:`dperm.mechanisms.prediction.calibrate_prediction` computes one from public inputs;
every answer draws with it and
:class:`~dperm.privacy.prediction_record.PredictionPrivacyRecord` embeds it as one field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PredictionCalibration"]


@dataclass(frozen=True)
class PredictionCalibration:
    """The calibration of one private predictor; every field is a function of public inputs.

    Attributes
    ----------
    kappa, lam, strong_convexity, lipschitz : float
        ``kappa``, ``lambda = alpha / 2``, ``gamma = 2`` and ``C_L`` of 000 Prop. 1.
    sensitivity : float
        ``B_Delta`` (:func:`~dperm.mechanisms.prediction.prediction_sensitivity`).
    radius_allowance : float
        The RKHS radius ``r`` the solve must certify
        (:func:`~dperm.mechanisms.prediction.solution_radius_allowance`).
    calibrated_sensitivity : float
        ``B_Delta + 2 kappa r``, what the noise is calibrated to.
    epsilon_per_query : float
    noise_scale, noise_grid : float
        Discrete Laplace scale ``g k / epsilon_per_query`` and grid ``g`` of one answer.
    noise : GridCalibration
        The exact law each answer draws from
        (:func:`~dperm.mechanisms.prediction.prediction_noise_calibration`), what the two
        numbers above say; not serialised, not compared (None in a record read back).
    """

    kappa: float
    lam: float
    strong_convexity: float
    lipschitz: float
    sensitivity: float
    radius_allowance: float
    calibrated_sensitivity: float
    epsilon_per_query: float
    noise_scale: float
    noise_grid: float
    noise: object = field(default=None, repr=False, compare=False, metadata={"serialised": False})
