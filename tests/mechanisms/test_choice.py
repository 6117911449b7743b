"""mechanism="auto": candidates, the public score, and agreement with the mechanisms' own calibration."""

import math

import numpy as np
import pytest

from dperm.losses import get_loss
from dperm.mechanisms import ERMProblem, run_mechanism
from dperm.mechanisms._problem import PublicProblem
from dperm.mechanisms.catalog import MECHANISMS
from dperm.mechanisms.choice import candidate_mechanisms, choose_mechanism

TOL = 1e-8


def _public(n=30000, d=105, loss="logistic", alpha=1e-3, norm=1.0):
    return PublicProblem(n, d, get_loss(loss), alpha, norm)


@pytest.mark.parametrize("loss", ["hinge"])
def test_non_smooth_loss_gets_output_perturbation(loss):
    choice = choose_mechanism(_public(loss=loss), 1.0, 1e-5, TOL)
    assert choice.name == "output"
    assert list(choice.expected_perturbation) == ["output"]
    assert "only mechanism" in choice.reason


def test_pure_budget_never_chooses_a_delta_mechanism():
    for d in (2, 105, 500):
        choice = choose_mechanism(_public(d=d), 0.5, 0.0, TOL)
        assert not MECHANISMS[choice.name].uses_delta


def test_smooth_loss_stays_in_the_objective_family():
    assert candidate_mechanisms(get_loss("logistic"), 1e-5) == ["objective", "gaussian_objective"]
    assert candidate_mechanisms(get_loss("huber"), 0.0) == ["objective"]


def test_reproduction_calibration_is_never_chosen():
    assert "gaussian_objective_004" not in candidate_mechanisms(get_loss("logistic"), 1e-5)


def test_gaussian_wins_at_large_d_and_pure_at_small_d():
    """E||b||: sqrt(2) d 2LR/eps' (Laplace, L1 calibration) against sqrt(d) sigma (Gaussian)."""
    assert choose_mechanism(_public(d=105), 1.0, 1e-5, TOL).name == "gaussian_objective"
    assert choose_mechanism(_public(d=2), 1.0, 1e-5, TOL).name == "objective"
    # a tiny delta makes the Gaussian's sigma grow: pure wins again at moderate d
    assert choose_mechanism(_public(d=10), 1.0, 1e-10, TOL).name == "objective"


def test_choice_is_the_minimum_and_the_reason_names_the_numbers():
    choice = choose_mechanism(_public(), 0.1, 1e-5, TOL)
    assert choice.expected_perturbation[choice.name] == min(choice.expected_perturbation.values())
    assert choice.name in choice.reason and f"{choice.expected_perturbation['objective']:.3g}" in choice.reason


@pytest.mark.parametrize("name", ["objective", "gaussian_objective", "gaussian_objective_004", "output"])
def test_score_uses_the_calibration_the_mechanism_runs_with(name):
    """The public score is built from the same noise scales the mechanism then draws with."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 6))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(rng.normal(size=400) > 0, 1.0, -1.0)
    problem = ERMProblem(X, y, get_loss("logistic"), 0.05, 1.0)
    out = run_mechanism(name, problem, 0.8, 1e-5, np.random.default_rng(0), TOL, 2000)
    public = PublicProblem(400, 6, problem.loss, 0.05, 1.0)
    score = MECHANISMS[name].expected_perturbation(public, 0.8, 1e-5, TOL)
    d = 6
    # E||z||^2 / scale^2: 2d (independent Laplace), 2 (floor(d/2) + 1) d (lattice L2 law), d (Gaussian)
    factors = {"discrete-laplace": 2 * d, "discrete-l2-laplace": 2 * (d // 2 + 1) * d,
               "discrete-gaussian": d}
    if name == "output":
        assert out.noise_distribution == "discrete-l2-laplace"
        expected = math.sqrt(factors[out.noise_distribution]) * out.noise_scale
    else:
        objective_stage = (math.sqrt(factors[out.noise_distribution]) * out.noise_scale
                           / (400 * (0.05 + out.extra_regularization)))
        expected = objective_stage + math.sqrt(factors[out.output_noise_distribution]) * out.output_noise_scale
    assert score == pytest.approx(expected, rel=1e-9)


def test_score_needs_no_rows():
    """PublicProblem has no X or y: the choice cannot read the data."""
    assert not {"X", "y"} & set(PublicProblem.__dataclass_fields__)
