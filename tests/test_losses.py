"""Losses: derivatives against finite differences, and the bounds L and c."""

import numpy as np
import pytest

from dperm.losses import LOSS_NAMES, HingeLoss, HuberLoss, SmoothHingeLoss, get_loss

SMOOTH = ["logistic", "huber", "smooth_hinge"]
H = 0.5


def _points_away_from_kinks(loss, rng, size=2000):
    z = rng.uniform(-6, 6, size=size)
    kinks = {"huber": [1 - H, 1 + H], "smooth_hinge": [], "logistic": [], "hinge": [1.0]}[loss.name]
    for k in kinks:
        z = z[np.abs(z - k) > 1e-3]
    return z


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_first_derivative_matches_finite_differences(name):
    loss = get_loss(name, h=H)
    z = _points_away_from_kinks(loss, np.random.default_rng(0))
    step = 1e-6
    numeric = (loss.value(z + step) - loss.value(z - step)) / (2 * step)
    np.testing.assert_allclose(loss.derivative(z), numeric, atol=1e-6)


@pytest.mark.parametrize("name", SMOOTH)
def test_second_derivative_matches_finite_differences(name):
    loss = get_loss(name, h=H)
    z = _points_away_from_kinks(loss, np.random.default_rng(1))
    step = 1e-5
    numeric = (loss.derivative(z + step) - loss.derivative(z - step)) / (2 * step)
    np.testing.assert_allclose(loss.second_derivative(z), numeric, atol=1e-5)


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_lipschitz_bound_holds_and_is_tight(name):
    loss = get_loss(name, h=H)
    z = np.linspace(-50, 50, 200001)
    slopes = np.abs(loss.derivative(z))
    assert slopes.max() <= loss.lipschitz + 1e-12
    assert slopes.max() >= 0.99 * loss.lipschitz


@pytest.mark.parametrize("name", SMOOTH)
def test_curvature_bound_holds_and_is_tight_and_loss_is_convex(name):
    loss = get_loss(name, h=H)
    z = np.linspace(-20, 20, 400001)
    curvature = loss.second_derivative(z)
    assert curvature.min() >= -1e-12  # convex
    assert curvature.max() <= loss.curvature + 1e-12
    assert curvature.max() >= 0.999 * loss.curvature


def test_curvature_constants_are_the_papers():
    assert get_loss("logistic").curvature == 0.25  # 003 Sec. 3.4.1
    assert HuberLoss(h=0.2).curvature == pytest.approx(1 / (2 * 0.2))  # 003 after eq. 41
    assert SmoothHingeLoss(h=0.2).curvature == pytest.approx(3 / (4 * 0.2))  # 003 eq. 40
    assert HingeLoss().curvature is None
    assert not HingeLoss().twice_differentiable


@pytest.mark.parametrize("name", ["huber", "smooth_hinge"])
def test_smoothed_losses_are_continuous_at_the_joins(name):
    loss = get_loss(name, h=H)
    for join in (1 - H, 1 + H):
        left, right = loss.value(join - 1e-9), loss.value(join + 1e-9)
        assert abs(left - right) < 1e-8
        assert abs(loss.derivative(join - 1e-9) - loss.derivative(join + 1e-9)) < 1e-7


def test_logistic_is_stable_for_large_margins():
    loss = get_loss("logistic")
    z = np.array([-1000.0, 1000.0])
    assert np.all(np.isfinite(loss.value(z)))
    np.testing.assert_allclose(loss.derivative(z), [-1.0, 0.0])


def test_hinge_has_no_second_derivative():
    with pytest.raises(ValueError, match="no second derivative"):
        HingeLoss().second_derivative(np.zeros(3))


@pytest.mark.parametrize("h", [0, -1, np.nan, np.inf, "a"])
def test_bad_width_is_rejected(h):
    with pytest.raises(ValueError, match="h must be"):
        HuberLoss(h=h)
    with pytest.raises(ValueError, match="h must be"):
        SmoothHingeLoss(h=h)


def test_unknown_loss_name():
    with pytest.raises(ValueError, match="loss must be one of"):
        get_loss("squared_hinge")
