"""Audits of mechanisms built on others: kernel models (003 Alg. 3), private prediction
(000 Prop. 1), multiparty PSGD (004 Alg. 1, and its coordinator-DP option), local
aggregation and the few-round Newton protocol.

Same standard as tests/audit/test_audit.py: the real mechanism passes (eps_lower <= claimed
epsilon at 95 % confidence) and a copy calibrated for 4 epsilon (a quarter of the noise) is caught.
"""

import pytest

from dperm.audit import audit_kernel_estimator, audit_multiparty, audit_private_predictor

RUNS = 1200
CASES = {
    "kernel": (lambda **kw: audit_kernel_estimator(1.0, **kw), 1.0),
    "prediction": (lambda **kw: audit_private_predictor(1.0, **kw), 1.0),
    "local_aggregation": (lambda **kw: audit_multiparty("local_aggregation", 1.0, **kw), 1.0),
    "psgd": (lambda **kw: audit_multiparty("psgd", 3.0, 0.04, **kw), 3.0),
    "psgd_coordinator_dp": (lambda **kw: audit_multiparty("psgd_coordinator_dp", 3.0, 0.04, **kw), 3.0),
    "newton": (lambda **kw: audit_multiparty("newton", 3.0, 0.04, **kw), 3.0),
}


#: The copies are calibrated for epsilon / factor. Newton's discrete Gaussian sigma shrinks
#: less than the factor: at a quarter its copy reached eps_lower 1.67 (claim 3), at 0.1 3.68.
UNDER_NOISED = {"newton": 0.1}


@pytest.mark.slow  # 2 x 1200 audited fits each: minutes per case on a loaded 2-core machine
@pytest.mark.parametrize("name", sorted(CASES))
def test_mechanism_passes_and_under_noised_copy_is_caught(name):
    run_audit, epsilon = CASES[name]
    honest = run_audit(n_runs=RUNS, random_state=1)
    assert honest.passed, honest.summary()
    weak = run_audit(n_runs=RUNS, random_state=2, noise_factor=UNDER_NOISED.get(name, 0.25))
    assert not weak.passed and weak.eps_lower > epsilon, weak.summary()


def test_multiparty_kind_is_checked():
    with pytest.raises(ValueError, match="kind must be"):
        audit_multiparty("gossip", 1.0)
