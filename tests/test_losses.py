"""Losses: derivatives against finite differences, the bounds L and c, smoothing gaps."""

import numpy as np
import pytest

from dperm.catalog import loss_names
from dperm.losses import (
    HingeLoss,
    HuberLoss,
    PinballLoss,
    SmoothHingeLoss,
    SmoothPinballLoss,
    SquaredLoss,
    get_loss,
)
from dperm.privacy.sensitivity import least_squares_lipschitz

#: The margin losses objective perturbation accepts (smooth margin losses of the table).
SMOOTH = loss_names(objective=True, kind="margin")
H = 0.5


def _points_away_from_kinks(loss, rng, size=2000):
    z = rng.uniform(-6, 6, size=size)
    kinks = {"huber": [1 - H, 1 + H], "smooth_hinge": [], "logistic": [], "hinge": [1.0]}[loss.name]
    for k in kinks:
        z = z[np.abs(z - k) > 1e-3]
    return z


@pytest.mark.parametrize("name", loss_names(kind="margin"))
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


@pytest.mark.parametrize("name", loss_names(kind="margin"))
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


# -- residual losses (regression) and the generic ERM glue ---------------------------

RESIDUAL = [PinballLoss(0.2), PinballLoss(0.5), PinballLoss(0.9),
            SmoothPinballLoss(0.3, h=0.4), SmoothPinballLoss(0.8, h=0.1), SquaredLoss(2.0)]


def _away_from(points, kinks, gap=1e-3):
    for k in kinks:
        points = points[np.abs(points - k) > gap]
    return points


def _kinks(loss):
    if isinstance(loss, PinballLoss):
        return [0.0]
    if isinstance(loss, SmoothPinballLoss):
        return [-loss.h, loss.h]
    return []


@pytest.mark.parametrize("loss", RESIDUAL, ids=repr)
def test_residual_first_derivative_matches_finite_differences(loss):
    r = _away_from(np.random.default_rng(2).uniform(-6, 6, size=2000), _kinks(loss))
    step = 1e-6
    numeric = (loss.value(r + step) - loss.value(r - step)) / (2 * step)
    np.testing.assert_allclose(loss.derivative(r), numeric, atol=1e-5)


@pytest.mark.parametrize("loss", [loss for loss in RESIDUAL if loss.twice_differentiable], ids=repr)
def test_residual_second_derivative_and_curvature(loss):
    r = _away_from(np.random.default_rng(3).uniform(-3, 3, size=2000), _kinks(loss))
    step = 1e-5
    numeric = (loss.derivative(r + step) - loss.derivative(r - step)) / (2 * step)
    np.testing.assert_allclose(loss.second_derivative(r), numeric, atol=1e-5)
    curvature = loss.second_derivative(np.linspace(-5, 5, 100001))
    assert curvature.min() >= 0 and curvature.max() == pytest.approx(loss.curvature)


@pytest.mark.parametrize("loss", [loss for loss in RESIDUAL if np.isfinite(loss.lipschitz)], ids=repr)
def test_residual_lipschitz_bound_holds_and_is_tight(loss):
    slopes = np.abs(loss.derivative(np.linspace(-50, 50, 200001)))
    assert slopes.max() <= loss.lipschitz + 1e-12
    assert slopes.max() >= 0.99 * loss.lipschitz
    assert loss.lipschitz == max(loss.quantile, 1 - loss.quantile)


@pytest.mark.parametrize("loss", [HingeLoss(), PinballLoss(0.2), PinballLoss(0.75)], ids=repr)
@pytest.mark.parametrize("h", [0.5, 1e-3])
def test_smoothed_loss_is_above_by_at_most_the_smoothing_gap(loss, h):
    smooth = loss.smoothed(h)
    t = np.concatenate([np.linspace(-5, 5, 200001), loss.kink + np.linspace(-2 * h, 2 * h, 20001)])
    excess = smooth.value(t) - loss.value(t)
    assert excess.min() >= -1e-12
    assert excess.max() <= loss.smoothing_gap * h + 1e-12
    assert excess.max() >= 0.999 * loss.smoothing_gap * h  # attained at the kink
    assert smooth.lipschitz == loss.lipschitz and smooth.twice_differentiable


@pytest.mark.parametrize("loss", [HingeLoss(), PinballLoss(0.3)], ids=repr)
def test_piecewise_linear_form_matches_value(loss):
    t = np.linspace(-4, 4, 1001)
    low, high = loss.slopes
    np.testing.assert_allclose(loss.value(t), np.maximum(low * (t - loss.kink), high * (t - loss.kink)))


@pytest.mark.parametrize("loss", [get_loss("logistic"), SmoothHingeLoss(0.5), SmoothPinballLoss(0.3, 0.5),
                                  SquaredLoss(1.0)], ids=repr)
def test_score_derivatives_are_the_chain_rule(loss):
    rng = np.random.default_rng(4)
    y = rng.choice([-1.0, 1.0], size=500) if loss.kind == "margin" else rng.normal(size=500)
    s = rng.normal(size=500) * 2
    step = 1e-5
    value = lambda scores: loss.value(loss.argument(y, scores))  # noqa: E731
    numeric = (value(s + step) - value(s - step)) / (2 * step)
    np.testing.assert_allclose(loss.score_derivative(y, s), numeric, atol=1e-5)
    grad = lambda scores: loss.score_derivative(y, scores)  # noqa: E731
    numeric2 = (grad(s + step) - grad(s - step)) / (2 * step)
    mask = np.ones_like(s, dtype=bool)
    if isinstance(loss, SmoothPinballLoss):  # away from the joins
        mask = np.abs(np.abs(y - s) - loss.h) > 1e-3
    np.testing.assert_allclose(loss.score_second_derivative(y, s)[mask], numeric2[mask], atol=1e-4)


def test_squared_loss_is_lipschitz_only_on_the_minimisers_predictions():
    loss = SquaredLoss(y_bound=2.0)
    assert loss.lipschitz == float("inf") and loss.curvature == 2.0
    # 000 Sec. 5.1 in dperm's convention: C_L = 2 (M + kappa M sqrt(2 / alpha))
    assert loss.solution_lipschitz(1.5, 0.5) == pytest.approx(2 * (2.0 + 1.5 * 2.0 * 2.0))
    assert loss.solution_lipschitz(1.5, 0.5) == least_squares_lipschitz(2.0, 1.5, 0.5)
    assert PinballLoss(0.3).solution_lipschitz(5.0, 1e-3) == 0.7  # globally Lipschitz: L


@pytest.mark.parametrize("quantile", [0, 1, -0.5, 2, np.nan, np.inf, "a", True])
def test_bad_quantile_is_rejected(quantile):
    with pytest.raises(ValueError, match=r"quantile must be a number in the open interval \(0, 1\)"):
        PinballLoss(quantile)
    with pytest.raises(ValueError, match="quantile must be"):
        SmoothPinballLoss(quantile, 0.1)


@pytest.mark.parametrize("y_bound", [0, -1, np.nan, np.inf])
def test_bad_y_bound_is_rejected(y_bound):
    with pytest.raises(ValueError, match="y_bound must be a finite number > 0"):
        SquaredLoss(y_bound)


