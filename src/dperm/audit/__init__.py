"""Empirical privacy auditing: statistically valid lower bounds on epsilon.

Run a mechanism many times on two neighbouring datasets ``D`` and ``D'`` (``D'``
replaces one record by a canary), score each output with a statistic,
choose a threshold test on some of the runs, and turn the test's false-positive
and false-negative rates on the held-out runs into a lower bound on epsilon
with Clopper-Pearson intervals (Jagielski, Ullman & Oprea, NeurIPS 2020;
Nasr, Song, Thakurta, Papernot & Carlini, IEEE S&P 2021):

    eps_lower = max(log((1 - delta - FNR_upper) / FPR_upper), log((1 - delta - FPR_upper) / FNR_upper)).

What an audit proves: with probability at least ``confidence`` (over the
audit's own runs), the mechanism is not ``(epsilon, delta)``-DP for any
``epsilon < eps_lower``. So ``eps_lower > claimed epsilon`` at 95% confidence
(FAIL) means the implementation is broken; a correct one fails on at most 5%
of seeds. What it does not prove: a PASS is not a proof of privacy. It covers
one pair of datasets, one statistic of the released value, and events frequent
enough to be seen in ``n_runs`` runs; leaks elsewhere (other data, other
outputs, rare events, floating-point artefacts) go unseen, and the bound can
never exceed about ``log(n_eval / 3.7)``.

Entry points
------------
:func:`audit`
    Any mechanism: two callables ``run(rng) -> output`` and a statistic.
:func:`audit_samples`
    Statistics already computed on runs over ``D`` and ``D'``.
:func:`audit_mechanism`
    dperm's ERM mechanisms (by name) or any callable with their signature, on a
    worst-case canary pair (:func:`make_canary_pair`).
:func:`audit_estimator`
    A dperm estimator, refitted on a canary pair.
:func:`audit_exponential_mechanism`
    The private selection of parameter tuning (003 Alg. 4).
``noise_factor=`` / :func:`with_scaled_noise`
    A deliberately under-noised copy, to check that an audit has power.
:mod:`dperm.audit.cli`
    ``add_audit_subparser(subparsers)`` and ``run_audit_command(args)`` for
    ``dperm audit --estimator ... --epsilon ... --runs N``.
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
