"""Empirical privacy auditing: statistically valid lower bounds on epsilon.

Runs a mechanism many times on two neighbouring datasets ``D`` and ``D'`` (``D'``
holds a canary), separates the outputs with a threshold test and turns the
test's held-out error rates, with Clopper-Pearson intervals, into a lower bound
``eps_lower`` (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021). A FAIL
(``eps_lower`` above the claimed epsilon at 95% confidence) shows a broken
implementation; a PASS is not a proof of privacy.

Entry points: :func:`audit` (any mechanism), :func:`audit_samples`,
:func:`audit_mechanism`, :func:`audit_estimator`,
:func:`audit_exponential_mechanism`, :func:`with_scaled_noise` (power check),
:mod:`dperm.audit.cli` (``dperm audit``). What an audit proves and how the
canaries are built: ``docs/design/audit.md``.
"""

from dperm.audit._bounds import (
    EpsilonBound,
    clopper_pearson_interval,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    largest_provable_epsilon,
)
from dperm.audit._builders import (
    audit_estimator,
    audit_exponential_mechanism,
    audit_mechanism,
    exponential_audit_candidates,
    exponential_mechanism_neighbours,
)
from dperm.audit._composite import (
    audit_kernel_estimator,
    audit_multiparty,
    audit_private_predictor,
    strongest_kernel_canary,
)
from dperm.audit._canaries import CanaryPair, make_canary_pair, strong_alpha
from dperm.audit._core import MIN_RUNS, AuditResult, audit, audit_samples, choose_threshold
from dperm.audit._noise import ScaledNoiseGenerator, with_scaled_noise

__all__ = [
    "audit_kernel_estimator",
    "audit_multiparty",
    "audit_private_predictor",
    "strongest_kernel_canary",
    "MIN_RUNS",
    "AuditResult",
    "CanaryPair",
    "EpsilonBound",
    "ScaledNoiseGenerator",
    "audit",
    "audit_estimator",
    "audit_exponential_mechanism",
    "audit_mechanism",
    "audit_samples",
    "choose_threshold",
    "clopper_pearson_interval",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "exponential_audit_candidates",
    "exponential_mechanism_neighbours",
    "largest_provable_epsilon",
    "make_canary_pair",
    "strong_alpha",
    "with_scaled_noise",
]
