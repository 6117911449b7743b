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
  sums with distributed discrete Gaussian noise (``newton``, ``newton_privacy``;
  the arithmetic is :mod:`dperm.privacy.newton`, PSGD's :mod:`dperm.privacy.psgd`);
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

The names are imported on first use (PEP 562), so ``dperm party --help`` and
``dperm coordinate --help`` build their parsers (:mod:`dperm.multiparty.flower.cli`)
without NumPy, SciPy or scikit-learn. ``model_file`` registers the multiparty
format with :mod:`dperm.model_io`, which imports it by name for the first such
file (``dperm.model_io.FORMAT_MODULES``).
"""

from dperm._lazy import lazy_attributes

#: Public name -> the module that defines it.
_PUBLIC = {
    "CalibrationRefusedError": "dperm.exceptions",
    "CoordinatorView": "dperm.privacy.psgd",
    "DropoutError": "dperm.exceptions",
    "GaussianRounds": "dperm.privacy.psgd",
    "GradientSumNetwork": "dperm.multiparty.protocol",
    "InProcessNetwork": "dperm.multiparty.protocol",
    "InProcessNewtonNetwork": "dperm.multiparty.newton",
    "LocalAggregationCalibration": "dperm.privacy.local_aggregation",
    "LocalAggregationClassifier": "dperm.multiparty.estimator",
    "LocalAggregationPrivacyRecord": "dperm.privacy.multiparty_record",
    "LocalAggregationResult": "dperm.multiparty.baselines",
    "MalformedReplyError": "dperm.exceptions",
    "MaskedAggregator": "dperm.multiparty.secure_sum",
    "MaskedSecureSum": "dperm.multiparty.secure_sum",
    "NewtonCalibration": "dperm.privacy.newton",
    "NewtonClassifier": "dperm.multiparty.estimator",
    "NewtonNetwork": "dperm.multiparty.newton",
    "NewtonParty": "dperm.multiparty.newton",
    "NewtonPrivacyRecord": "dperm.privacy.multiparty_record",
    "PSGDCalibration": "dperm.privacy.psgd",
    "PSGDClassifier": "dperm.multiparty.estimator",
    "PSGDPrivacyRecord": "dperm.privacy.multiparty_record",
    "PSGDResult": "dperm.multiparty.protocol",
    "Party": "dperm.multiparty.protocol",
    "PartyFloor": "dperm.privacy.psgd",
    "PartyUnavailableError": "dperm.exceptions",
    "RobbinsMonroSteps": "dperm.multiparty.protocol",
    "SecureSum": "dperm.multiparty.secure_sum",
    "SecureSumClippingWarning": "dperm.exceptions",
    "SecureSumReport": "dperm.multiparty.secure_sum",
    "SecureSumSummary": "dperm.multiparty.secure_sum",
    "accepting_floor": "dperm.privacy.psgd",
    "calibrate_coordinator_gaussian": "dperm.privacy.psgd",
    "calibrate_local_aggregation": "dperm.multiparty.baselines",
    "calibrate_newton": "dperm.multiparty.newton_privacy",
    "calibrate_psgd": "dperm.multiparty.privacy",
    "check_local_aggregation_calibration": "dperm.multiparty.baselines",
    "check_newton_calibration": "dperm.multiparty.newton_privacy",
    "check_psgd_calibration": "dperm.multiparty.privacy",
    "clipping_count_is_covered": "dperm.privacy.psgd",
    "coordinator_view_guarantee": "dperm.privacy.psgd",
    "gaussian_rounds_epsilon": "dperm.privacy.psgd",
    "gradient_sum_sensitivity": "dperm.privacy.sensitivity",
    "local_aggregation": "dperm.multiparty.baselines",
    "local_aggregation_sensitivity": "dperm.privacy.sensitivity",
    "private_newton": "dperm.multiparty.newton",
    "psgd": "dperm.multiparty.protocol",
    "psgd_coordinator_view": "dperm.privacy.psgd",
    "round_noise_scale": "dperm.multiparty.privacy",
}

__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC, globals())
