"""The DP-GD benchmark baseline (benchmarks/_dpgd.py): its noise calibration and sensitivity."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting import pld, rdp  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


dpgd = _load("_dpgd")


def _epsilon(accountant, z, steps, delta):
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), steps)
    return accountant.compose(event).get_epsilon(delta)


@pytest.mark.parametrize("n, d, epsilon", [(1000, 10, 0.5), (1000, 10, 2.0), (2000, 5, 0.1)])
def test_plan_noise_meets_target_per_dp_accounting_and_a_quarter_fails(n, d, epsilon):
    delta = 1e-5
    p = dpgd.plan(n, d, epsilon, delta)
    assert p.sensitivity == pytest.approx(2.0 * np.sqrt(2.0) / n)  # replace-one, C = sqrt(1 + 1)
    assert dpgd.T_MIN <= p.n_steps <= dpgd.T_MAX
    # dp-accounting's own epsilon for the chosen z, on fresh accountants (PLD tight, RDP looser)
    # (the PLD accountant agrees with the exact profile up to its discretisation)
    pld_eps = _epsilon(pld.PLDAccountant(value_discretization_interval=1e-5), p.noise_multiplier,
                       p.n_steps, delta)
    assert pld_eps == pytest.approx(epsilon, rel=2e-3)
    rdp_eps = _epsilon(rdp.RdpAccountant(), p.noise_multiplier, p.n_steps, delta)
    assert epsilon <= rdp_eps  # RDP conversion is an upper bound, never below the exact one
    # a quarter of the noise breaks the target
    assert _epsilon(pld.PLDAccountant(), p.noise_multiplier / 4, p.n_steps, delta) > 2 * epsilon


def test_plan_refuses_pure_epsilon():
    with pytest.raises(ValueError, match="delta > 0"):
        dpgd.plan(1000, 10, 1.0, 0.0)


def test_clipped_gradient_moves_by_at_most_the_sensitivity_under_replace_one():
    rng = np.random.default_rng(0)
    n, d = 200, 6
    Z = rng.normal(size=(n, d)) * 3.0  # rows longer than the clip: clipping must act
    signs = rng.choice([-1.0, 1.0], size=n)
    w = rng.normal(size=d)
    clip = 1.0
    base = dpgd.clipped_mean_gradient(Z, signs, w, clip)
    worst = 0.0
    for i in range(20):  # replace record i by a long row with the other label
        Z2, signs2 = Z.copy(), signs.copy()
        Z2[i], signs2[i] = -5.0 * Z[i], -signs[i]
        worst = max(worst, np.linalg.norm(dpgd.clipped_mean_gradient(Z2, signs2, w, clip) - base))
    assert worst <= 2.0 * clip / n * (1 + 1e-12)
    unclipped = dpgd.clipped_mean_gradient(Z, signs, w, np.inf)
    assert not np.allclose(unclipped, base)  # the test data does exercise the clip


def test_dpgd_learns_a_separable_problem_at_large_epsilon():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    model = dpgd.DPGDLogisticRegression(2.0, 1e-5, classes=[0, 1], random_state=0).fit(X, y)
    assert np.mean(model.predict(X) == y) > 0.9


def test_gdp_delta_matches_the_analytic_gaussian_formula():
    # Balle & Wang 2018 Thm 8 in plain floats at moderate values
    epsilon, mu = 1.0, 0.8
    expected = norm.cdf(-epsilon / mu + mu / 2) - np.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)
    assert dpgd.gdp_delta(epsilon, mu) == pytest.approx(expected, rel=1e-12)
    z = dpgd.noise_multiplier(epsilon, 1e-5, 9)
    assert dpgd.gdp_delta(epsilon, 3.0 / z) <= 1e-5 <= dpgd.gdp_delta(epsilon, 3.0 / z * (1 + 1e-6))
