"""Differentially private learning when K parties each hold part of the data.

Engine-free protocols of Rajkumar & Agarwal (2012, paper 004):

- :class:`PSGDClassifier` / :func:`psgd`: multiparty private SGD (Alg. 1,
  Procs. 2-3, Thm 4.2), one secure sum of noisy gradients per round; with
  ``coordinator_dp=True``, per-round Gaussian noise calibrated by
  dp-accounting so that the coordinator's whole view is (epsilon, delta)-DP;
- :class:`LocalAggregationClassifier` / :func:`local_aggregation`: the
  baseline of Pathak et al. (2010), 004 eq. 5;
- :class:`NewtonClassifier` / :func:`private_newton` (beyond the papers): a
  few-round protocol, damped Newton on securely summed gradient and Hessian
  sums with distributed discrete Gaussian noise (``newton``, ``newton_privacy``);
- :class:`SecureSum`, the interface an engine implements, and
  :class:`MaskedSecureSum`, an in-process simulation of secure aggregation
  (fixed point, pairwise masks, abort on dropout);
- :class:`PartyFloor`: every party's own maximum epsilon, delta and rounds;
  a party recomputes the coordinator's calibration and refuses a weaker one
  (:func:`check_psgd_calibration`).

``privacy_`` states the guarantee proven for what is released (for PSGD the
coordinator's view over the rounds run) and holds no count computed from
the private rows.

Modules: ``secure_sum`` (summation engines), ``privacy`` (calibration and
composition), ``protocol`` (parties, network, coordinator), ``baselines``
(local aggregation), ``record`` (``privacy_``), ``estimator`` (front ends),
``flower`` (Flower SecAgg+, optional: engine, apps, simulation, deployment),
``cli`` (``dperm party`` / ``dperm coordinate``), ``model_file`` (coordinator model files). Its errors live in
:mod:`dperm.exceptions`.
"""

from dperm.multiparty.baselines import (
    LocalAggregationCalibration,
    LocalAggregationResult,
    calibrate_local_aggregation,
    check_local_aggregation_calibration,
    local_aggregation,
)
from dperm.exceptions import (
    CalibrationRefusedError,
    DropoutError,
    MalformedReplyError,
    PartyUnavailableError,
    SecureSumClippingWarning,
)
from dperm.multiparty.estimator import LocalAggregationClassifier, NewtonClassifier, PSGDClassifier
from dperm.multiparty import model_file  # noqa: F401  (registers the multiparty format with dperm.model_io)
from dperm.multiparty.newton import InProcessNewtonNetwork, NewtonNetwork, NewtonParty, private_newton
from dperm.multiparty.newton_privacy import NewtonCalibration, calibrate_newton, check_newton_calibration
from dperm.multiparty.privacy import (
    CoordinatorView,
    GaussianRounds,
    PartyFloor,
    PSGDCalibration,
    accepting_floor,
    calibrate_coordinator_gaussian,
    calibrate_psgd,
    check_psgd_calibration,
    clipping_count_is_covered,
    coordinator_view_guarantee,
    gaussian_rounds_epsilon,
    psgd_coordinator_view,
    round_noise_scale,
)
from dperm.multiparty.protocol import (
    GradientSumNetwork,
    InProcessNetwork,
    Party,
    PSGDResult,
    RobbinsMonroSteps,
    psgd,
)
from dperm.privacy.multiparty_record import LocalAggregationPrivacyRecord, NewtonPrivacyRecord, PSGDPrivacyRecord
from dperm.multiparty.secure_sum import (
    MaskedAggregator,
    MaskedSecureSum,
    SecureSum,
    SecureSumReport,
    SecureSumSummary,
)
from dperm.privacy.sensitivity import gradient_sum_sensitivity, local_aggregation_sensitivity

__all__ = [
    "CalibrationRefusedError",
    "CoordinatorView",
    "DropoutError",
    "GaussianRounds",
    "GradientSumNetwork",
    "InProcessNewtonNetwork",
    "InProcessNetwork",
    "LocalAggregationCalibration",
    "LocalAggregationClassifier",
    "LocalAggregationPrivacyRecord",
    "LocalAggregationResult",
    "MalformedReplyError",
    "MaskedAggregator",
    "MaskedSecureSum",
    "NewtonCalibration",
    "NewtonClassifier",
    "NewtonNetwork",
    "NewtonParty",
    "NewtonPrivacyRecord",
    "PSGDCalibration",
    "PSGDClassifier",
    "PSGDPrivacyRecord",
    "PSGDResult",
    "Party",
    "PartyFloor",
    "PartyUnavailableError",
    "RobbinsMonroSteps",
    "SecureSum",
    "SecureSumClippingWarning",
    "SecureSumReport",
    "SecureSumSummary",
    "accepting_floor",
    "calibrate_coordinator_gaussian",
    "calibrate_local_aggregation",
    "calibrate_newton",
    "calibrate_psgd",
    "check_local_aggregation_calibration",
    "check_newton_calibration",
    "check_psgd_calibration",
    "clipping_count_is_covered",
    "coordinator_view_guarantee",
    "gaussian_rounds_epsilon",
    "gradient_sum_sensitivity",
    "local_aggregation",
    "local_aggregation_sensitivity",
    "private_newton",
    "psgd",
    "psgd_coordinator_view",
    "round_noise_scale",
]
