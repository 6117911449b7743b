"""Audits of AdaSSP (dperm.audit.audit_sufficient_statistics): the honest mechanism passes, a copy
with about a quarter of the noise (calibrated for 4 epsilon) is caught.

Each audit runs 2 x 2000 mechanism runs (8-20 s on a loaded 2-core machine): marked slow.
"""

import pytest

from dperm.audit import audit_sufficient_statistics

CASES = [pytest.param(0.0, id="adassp-pure"), pytest.param(1e-5, id="gaussian_adassp")]


@pytest.mark.slow
@pytest.mark.parametrize("delta", CASES)
def test_honest_adassp_passes(delta):
    result = audit_sufficient_statistics(1.0, delta, n_runs=2000, random_state=0)
    assert result.passed, result


@pytest.mark.slow
@pytest.mark.parametrize("delta", CASES)
def test_quarter_noise_adassp_is_caught(delta):
    result = audit_sufficient_statistics(1.0, delta, n_runs=2000, noise_factor=0.25, random_state=0)
    assert not result.passed, result
    assert result.eps_lower > 1.0


def test_audit_refuses_a_pair_without_an_eigenvalue_gap():
    with pytest.raises(ValueError, match="at least 3"):
        audit_sufficient_statistics(1.0, n_samples=2)


def test_dperm_audit_runs_the_adassp_audit(capsys):
    from dperm.cli import main

    assert main(["audit", "--mechanism", "adassp", "--epsilon", "1", "--runs", "500",
                 "--seed", "0"]) == 0
    assert "adassp, canary pair" in capsys.readouterr().out
    assert main(["audit", "--mechanism", "gaussian_adassp", "--epsilon", "1", "--runs", "500"]) == 2
