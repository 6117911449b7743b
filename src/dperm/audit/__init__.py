"""Empirical privacy auditing: statistically valid lower bounds on epsilon.

Runs a mechanism many times on two neighbouring datasets ``D`` and ``D'`` (``D'``
holds a canary), separates the outputs with a threshold test and turns the
test's held-out error rates, with Clopper-Pearson intervals, into a lower bound
``eps_lower`` (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021). A FAIL
(``eps_lower`` above the claimed epsilon at 95% confidence) shows a broken
implementation; a PASS is not a proof of privacy.

Entry points: :func:`audit` (any mechanism), :func:`audit_samples`,
:func:`audit_mechanism`, :func:`audit_estimator`,
:func:`audit_exponential_mechanism`, :func:`audit_collusion` (the coordinator plus
colluding parties against a multiparty record), :func:`with_scaled_noise` (power check),
:mod:`dperm.audit.cli` (``dperm audit``). What an audit proves and how the
canaries are built: ``docs/design/audit.md``.

The names are imported on first use (PEP 562), so ``dperm audit --help``
builds its parser (:mod:`dperm.audit.cli`) without NumPy, SciPy or scikit-learn.
"""

from dperm._lazy import lazy_attributes

#: Public name -> the module that defines it.
_PUBLIC = {
    "AuditResult": "dperm.audit._core",
    "CanaryPair": "dperm.audit._canaries",
    "EpsilonBound": "dperm.audit._bounds",
    "MIN_RUNS": "dperm.audit._core",
    "audit": "dperm.audit._core",
    "audit_collusion": "dperm.audit._collusion",
    "audit_estimator": "dperm.audit._builders",
    "audit_exponential_mechanism": "dperm.audit._builders",
    "audit_kernel_estimator": "dperm.audit._composite",
    "audit_mechanism": "dperm.audit._builders",
    "audit_multiparty": "dperm.audit._composite",
    "audit_private_predictor": "dperm.audit._composite",
    "audit_samples": "dperm.audit._core",
    "audit_sufficient_statistics": "dperm.audit._sufficient_statistics",
    "choose_threshold": "dperm.audit._core",
    "clopper_pearson_interval": "dperm.audit._bounds",
    "clopper_pearson_upper": "dperm.audit._bounds",
    "epsilon_lower_bound": "dperm.audit._bounds",
    "exponential_audit_candidates": "dperm.audit._builders",
    "exponential_mechanism_neighbours": "dperm.audit._builders",
    "largest_provable_epsilon": "dperm.audit._bounds",
    "make_canary_pair": "dperm.audit._canaries",
    "strong_alpha": "dperm.audit._canaries",
    "strongest_kernel_canary": "dperm.audit._composite",
    "with_scaled_noise": "dperm.audit._noise",
}

__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC, globals())
