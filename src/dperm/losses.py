"""Convex losses for linear ERM, with the constants privacy needs.

Margin losses of ``z = y w.x`` for classification (logistic, Huber, smoothed
hinge, hinge: Chaudhuri, Monteleoni & Sarwate 2011, Sec. 3.4, eqs. 37-41) and
residual losses of ``r = y - w.x`` for regression (squared, pinball: Nie & Wang
2017, Sec. 5; pseudo-Huber) share :class:`ConvexLoss`: value and derivatives, the Lipschitz
bound ``L``, the curvature bound ``c`` and ``C_L`` of 000 Thm 2
(``solution_lipschitz``). The privacy arithmetic (``dperm.privacy.sensitivity``)
reads ``L`` and ``c`` from here; no other module hard-codes them. The interface
in full: ``docs/design/losses.md``.

Which losses exist and who accepts each is one table, :data:`LOSSES`
(:mod:`dperm.catalog`, import-free so the command line can read it): every
list of losses in dperm is a filter of it, and :func:`get_loss` builds each
entry from its class here.
"""

from __future__ import annotations

import importlib
import numbers
from abc import ABC, abstractmethod

import numpy as np
from scipy.special import expit

from dperm.catalog import LOSSES
from dperm.privacy.sensitivity import least_squares_lipschitz
from dperm.validation import check_positive

#: The Huber-smoothed hinge and pinball lie above the loss by at most h/4
#: (003 eqs. 37, 41; the pinball case is derived in :class:`SmoothPinballLoss`).
_HUBER_SMOOTHING_GAP = 0.25


class ConvexLoss(ABC):
    """Base class: a convex loss of one scalar argument (a margin or a residual).

    Attributes
    ----------
    name : str
        Identifier used by estimators and model files.
    kind : {"margin", "residual"}
        Whether the argument is ``y * w.x`` or ``y - w.x``.
    lipschitz : float
        ``L``, a bound on ``|loss'(t)|`` for all ``t`` (``inf`` if there is none).
    curvature : float or None
        ``c``, a bound on ``|loss''(t)|``; ``None`` if not twice differentiable.
    slopes : tuple of float or None
        For a piecewise-linear loss ``max(g_low (t - kink), g_high (t - kink))``:
        ``(g_low, g_high)``. ``None`` otherwise.
    kink : float
        Where a piecewise-linear loss bends.
    smoothing_gap : float or None
        ``g`` with ``0 <= smoothed(h)(t) - loss(t) <= g h`` for every ``t``.
    """

    name = "loss"
    kind = ""
    lipschitz = 1.0
    curvature: float | None = None
    slopes: tuple[float, float] | None = None
    kink = 0.0
    smoothing_gap: float | None = None

    @property
    def differentiable(self) -> bool:
        """Whether ``derivative`` is a true derivative (not a subgradient)."""
        return True

    @property
    def twice_differentiable(self) -> bool:
        """Whether objective perturbation's Jacobian argument applies (003 Thm 2)."""
        return self.curvature is not None

    @abstractmethod
    def value(self, t):
        """The loss at arguments ``t``."""

    @abstractmethod
    def derivative(self, t):
        """The derivative (or a subgradient) at arguments ``t``."""

    def second_derivative(self, t):
        raise ValueError(f"the {self.name} loss has no second derivative.")

    # -- the argument as a function of the prediction s = w.x ---------------
    @abstractmethod
    def argument(self, y, scores):
        """The loss argument for labels ``y`` and predictions ``scores = X @ w``."""

    @abstractmethod
    def argument_slope(self, y):
        """``d argument / d score`` for each label (an array shaped like ``y``)."""

    def score_derivative(self, y, scores):
        """``d loss / d s`` at predictions ``s`` (chain rule through :meth:`argument`)."""
        return self.argument_slope(y) * self.derivative(self.argument(y, scores))

    def score_second_derivative(self, y, scores):
        """``d^2 loss / d s^2`` at predictions ``s``."""
        slope = self.argument_slope(y)
        return slope * slope * self.second_derivative(self.argument(y, scores))

    def solution_lipschitz(self, data_norm: float, alpha: float) -> float:
        """``C_L`` of 000 Thm 2: a Lipschitz bound in the prediction ``w.x``.

        It must hold over every prediction a regularised minimiser can make on
        rows of norm ``<= data_norm``. For a globally Lipschitz loss (with
        ``|y| <= 1`` for margin losses) it is ``lipschitz``.
        """
        return self.lipschitz

    def smoothed(self, h: float) -> "ConvexLoss":
        """A smooth loss within ``smoothing_gap * h`` above this one."""
        raise ValueError(f"the {self.name} loss has no smoothed version.")

    def params(self) -> dict:
        """Parameters that reconstruct this loss (with :func:`get_loss` for a margin loss).

        The names are its row's ``params`` in :data:`~dperm.catalog.LOSSES` (none for a loss
        outside the table), so each parameter is declared once.
        """
        info = LOSSES.get(self.name)
        return {name: getattr(self, name) for name in (info.params if info else ())}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


class MarginLoss(ConvexLoss):
    """A convex loss of the margin ``z = y * w.x``, ``y in {-1, +1}`` (003 Sec. 3.4)."""

    name = "margin"
    kind = "margin"

    def argument(self, y, scores):
        return y * scores

    def argument_slope(self, y):
        return np.asarray(y, dtype=float)


class ResidualLoss(ConvexLoss):
    """A convex loss of the residual ``r = y - w.x`` (000 Sec. 5)."""

    name = "residual"
    kind = "residual"

    def argument(self, y, scores):
        return y - scores

    def argument_slope(self, y):
        return np.full(np.shape(y), -1.0)


class LogisticLoss(MarginLoss):
    """``log(1 + exp(-z))``; ``L = 1``, ``c = 1/4`` (003 Sec. 3.4.1)."""

    name = "logistic"
    lipschitz = 1.0
    curvature = 0.25

    def value(self, z):
        return np.logaddexp(0.0, -np.asarray(z, dtype=float))

    def derivative(self, z):
        # -1 / (1 + e^z), written with expit to avoid overflow.
        return -expit(-np.asarray(z, dtype=float))

    def second_derivative(self, z):
        s = expit(np.asarray(z, dtype=float))
        return s * (1.0 - s)


class HuberLoss(MarginLoss):
    """Huber-smoothed hinge of width ``h`` (003 eq. 41); ``L = 1``, ``c = 1/(2h)``.

    ``0`` if ``z > 1 + h``; ``(1 + h - z)^2 / (4h)`` if ``|1 - z| <= h``;
    ``1 - z`` if ``z < 1 - h``. Twice differentiable except at ``z = 1 +- h``,
    a null set, which 003 Corollary 4 shows is enough for objective perturbation.
    """

    name = "huber"
    lipschitz = 1.0

    def __init__(self, h: float = 0.5):
        self.h = check_positive(h, "h", "h is the width of the smoothed region of the hinge.")
        self.curvature = 1.0 / (2.0 * self.h)

    def value(self, z):
        z = np.asarray(z, dtype=float)
        h = self.h
        quad = (1.0 + h - z) ** 2 / (4.0 * h)
        return np.where(z > 1.0 + h, 0.0, np.where(z < 1.0 - h, 1.0 - z, quad))

    def derivative(self, z):
        z = np.asarray(z, dtype=float)
        h = self.h
        return np.where(z > 1.0 + h, 0.0, np.where(z < 1.0 - h, -1.0, -(1.0 + h - z) / (2.0 * h)))

    def second_derivative(self, z):
        z = np.asarray(z, dtype=float)
        inside = np.abs(1.0 - z) <= self.h
        return np.where(inside, self.curvature, 0.0)


class SmoothHingeLoss(MarginLoss):
    """Chapelle's quartic smoothing of the hinge, width ``h`` (003 eqs. 38-40).

    ``L = 1`` and ``c = 3/(4h)``; twice continuously differentiable.
    """

    name = "smooth_hinge"
    lipschitz = 1.0

    def __init__(self, h: float = 0.5):
        self.h = check_positive(h, "h", "h is the width of the smoothed region of the hinge.")
        self.curvature = 3.0 / (4.0 * self.h)

    def value(self, z):
        u = 1.0 - np.asarray(z, dtype=float)
        h = self.h
        # 003 eq. 38, written in u = 1 - z.
        middle = -(u**4) / (16.0 * h**3) + 3.0 * u**2 / (8.0 * h) + u / 2.0 + 3.0 * h / 16.0
        return np.where(u < -h, 0.0, np.where(u > h, u, middle))

    def derivative(self, z):
        u = 1.0 - np.asarray(z, dtype=float)
        h = self.h
        middle = u**3 / (4.0 * h**3) - 3.0 * u / (4.0 * h) - 0.5  # 003 eq. 39
        return np.where(u < -h, 0.0, np.where(u > h, -1.0, middle))

    def second_derivative(self, z):
        u = 1.0 - np.asarray(z, dtype=float)
        h = self.h
        middle = -3.0 * u**2 / (4.0 * h**3) + 3.0 / (4.0 * h)  # 003 eq. 40
        return np.where(np.abs(u) <= h, middle, 0.0)


class HingeLoss(MarginLoss):
    """``max(0, 1 - z)`` (003 eq. 37); ``L = 1``, not differentiable at ``z = 1``.

    Output perturbation still applies: its sensitivity needs only convexity
    and the Lipschitz constant (Nie & Wang 2017, paper 000, Thm 2). Objective
    perturbation does not (003 Thm 2 needs ``loss''``). As a piecewise-linear
    loss it is ``max(-(z - 1), 0 (z - 1))``: slopes ``(-1, 0)``, kink 1.
    """

    name = "hinge"
    lipschitz = 1.0
    curvature = None
    slopes = (-1.0, 0.0)
    kink = 1.0
    smoothing_gap = _HUBER_SMOOTHING_GAP

    @property
    def differentiable(self) -> bool:
        return False

    def value(self, z):
        return np.maximum(0.0, 1.0 - np.asarray(z, dtype=float))

    def derivative(self, z):
        """A subgradient: ``-1`` for ``z < 1``, ``0`` otherwise."""
        return np.where(np.asarray(z, dtype=float) < 1.0, -1.0, 0.0)

    def smoothed(self, h: float) -> HuberLoss:
        """The Huber loss of width ``h``: ``0 <= huber_h - hinge <= h/4`` (003 eqs. 37, 41)."""
        return HuberLoss(h)


def check_quantile(quantile) -> float:
    """Return ``quantile`` as a float after checking ``0 < quantile < 1``."""
    valid = isinstance(quantile, numbers.Real) and not isinstance(quantile, bool)
    if not valid or not np.isfinite(quantile) or not 0.0 < quantile < 1.0:
        raise ValueError(
            f"quantile must be a number in the open interval (0, 1) (0.5 is the median); "
            f"got {quantile!r}."
        )
    return float(quantile)


class PinballLoss(ResidualLoss):
    """The pinball loss of quantile regression: ``max(tau r, (tau - 1) r)``, ``r = y - w.x``.

    Its minimiser in a constant predicts the ``tau``-quantile. It is convex,
    Lipschitz with ``L = max(tau, 1 - tau)`` and not differentiable at
    ``r = 0``, so only output perturbation applies (000 Sec. 1 and Thm 2).
    As a piecewise-linear loss: slopes ``(tau - 1, tau)``, kink 0.

    Parameters
    ----------
    quantile : float in (0, 1)
        ``tau``.
    """

    name = "pinball"
    curvature = None
    kink = 0.0
    smoothing_gap = _HUBER_SMOOTHING_GAP

    def __init__(self, quantile: float = 0.5):
        self.quantile = check_quantile(quantile)
        self.lipschitz = max(self.quantile, 1.0 - self.quantile)
        self.slopes = (self.quantile - 1.0, self.quantile)

    @property
    def differentiable(self) -> bool:
        return False

    def value(self, r):
        r = np.asarray(r, dtype=float)
        return np.maximum(self.quantile * r, (self.quantile - 1.0) * r)

    def derivative(self, r):
        """A subgradient: ``tau`` for ``r > 0``, ``tau - 1`` otherwise."""
        return np.where(np.asarray(r, dtype=float) > 0.0, self.quantile, self.quantile - 1.0)

    def smoothed(self, h: float) -> "SmoothPinballLoss":
        """The Huberised pinball of width ``h``: ``0 <= smooth - pinball <= h/4``."""
        return SmoothPinballLoss(self.quantile, h)


class SmoothPinballLoss(ResidualLoss):
    """The pinball loss with its kink replaced by a parabola on ``|r| <= h``.

    ``tau r`` for ``r >= h``, ``(tau - 1) r`` for ``r <= -h`` and
    ``r^2 / (4h) + (tau - 1/2) r + h/4`` in between: the parabola that matches
    the value and the slope of both lines at ``r = +-h``. Then
    ``smooth - pinball = (|r| - h)^2 / (4h)`` on ``|r| <= h`` (0 outside), so
    ``0 <= smooth - pinball <= h/4``: the same gap as the Huber hinge
    (003 eq. 41). ``L = max(tau, 1 - tau)``, ``c = 1/(2h)``. dperm uses it to
    certify pinball solves (:func:`dperm.solvers.solve_by_smoothing`).
    """

    name = "smooth_pinball"

    def __init__(self, quantile: float = 0.5, h: float = 0.5):
        self.quantile = check_quantile(quantile)
        self.h = check_positive(h, "h", "h is the width of the smoothed region of the pinball.")
        self.lipschitz = max(self.quantile, 1.0 - self.quantile)
        self.curvature = 1.0 / (2.0 * self.h)

    def value(self, r):
        r = np.asarray(r, dtype=float)
        tau, h = self.quantile, self.h
        middle = r * r / (4.0 * h) + (tau - 0.5) * r + h / 4.0
        return np.where(r >= h, tau * r, np.where(r <= -h, (tau - 1.0) * r, middle))

    def derivative(self, r):
        r = np.asarray(r, dtype=float)
        tau, h = self.quantile, self.h
        return np.where(r >= h, tau, np.where(r <= -h, tau - 1.0, r / (2.0 * h) + tau - 0.5))

    def second_derivative(self, r):
        inside = np.abs(np.asarray(r, dtype=float)) < self.h
        return np.where(inside, self.curvature, 0.0)


class PseudoHuberLoss(ResidualLoss):
    """The pseudo-Huber loss of robust regression, width ``h``: ``sqrt(h^2 + r^2) - h``, ``r = y - w.x``.

    About ``r^2 / (2h)`` for ``|r|`` well below ``h`` and ``|r| - h`` far above it: least
    squares near the fit, absolute error for outliers, and smooth everywhere (``h = 1`` gives
    ``sqrt(1 + r^2) - 1``; ``h -> 0`` gives ``|r|``). Its derivatives::

        loss'(r)  = r / sqrt(h^2 + r^2),             |loss'|  < 1       so  L = 1
        loss''(r) = h^2 / (h^2 + r^2)^(3/2),     0 < loss''  <= 1/h    so  c = 1/h (at r = 0)

    so it is convex, differentiable, ``|loss'| <= 1`` and ``|loss''| <= c``: the conditions of
    003 Thm 2 (objective perturbation) and of 004 Thm 4.1 (its Gaussian form), whose proofs use
    the loss only through a row's gradient ``loss'(t) (dt/ds) x`` and its rank-one Hessian
    ``loss''(t) (dt/ds)^2 x x^T``; for a residual ``dt/ds = -1`` plays the role of 003's label
    ``y`` (``|y| = 1``), so no bound on the target is needed (``docs/design/losses.md``,
    "Pseudo-Huber"). Convex and 1-Lipschitz in the prediction, it also meets
    output perturbation's (003 Thm 1; 000 Thm 2 with ``C_L = 1``).

    Parameters
    ----------
    h : float, default=1.0
        The width: where the loss turns from quadratic to linear, in the target's units.
    """

    name = "pseudo_huber"
    lipschitz = 1.0

    def __init__(self, h: float = 1.0):
        self.h = check_positive(h, "h", "h is the width where the pseudo-Huber loss turns linear.")
        self.curvature = 1.0 / self.h

    def value(self, r):
        r = np.asarray(r, dtype=float)
        # sqrt(h^2 + r^2) - h written without cancellation for |r| << h
        return r * r / (np.hypot(self.h, r) + self.h)

    def derivative(self, r):
        r = np.asarray(r, dtype=float)
        return r / np.hypot(self.h, r)

    def second_derivative(self, r):
        root = np.hypot(self.h, np.asarray(r, dtype=float))
        return (self.h / root) ** 2 / root


class SquaredLoss(ResidualLoss):
    """Least squares ``r^2`` with labels bounded by ``|y| <= y_bound`` (000 Sec. 5.1; 002 eq. 1).

    Not Lipschitz on the real line (``lipschitz = inf``), but on the predictions
    a regularised minimiser can make it is: see :meth:`solution_lipschitz`.
    ``c = 2``. The loss is the papers' ``(f(x) - y)^2`` without a factor 1/2, so
    dperm's ``(1/n) sum r_i^2 + alpha/2 ||w||^2`` is 000's objective with
    ``lambda = alpha / 2`` (paper note 7).

    Parameters
    ----------
    y_bound : float
        ``M``, a public bound on ``|y|``.
    """

    name = "squared"
    lipschitz = float("inf")
    curvature = 2.0

    def __init__(self, y_bound: float = 1.0):
        self.y_bound = check_positive(y_bound, "y_bound", "y_bound is a public bound M on |y|.")

    def value(self, r):
        r = np.asarray(r, dtype=float)
        return r * r

    def derivative(self, r):
        return 2.0 * np.asarray(r, dtype=float)

    def second_derivative(self, r):
        return np.full(np.shape(r), self.curvature)

    def solution_lipschitz(self, data_norm: float, alpha: float) -> float:
        """``C_L = 2 (M + kappa M / sqrt(lambda))`` (000 Sec. 5.1 in dperm's convention).

        See :func:`dperm.privacy.sensitivity.least_squares_lipschitz`.
        """
        return least_squares_lipschitz(self.y_bound, data_norm, alpha)


def loss_class(name: str) -> type[ConvexLoss]:
    """The class of the loss ``name`` in :data:`~dperm.catalog.LOSSES`.

    Raises
    ------
    ValueError
        If ``name`` is not in the table.
    """
    try:
        info = LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError(f"loss must be one of {tuple(LOSSES)}; got {name!r}.") from None
    return getattr(importlib.import_module(info.module), info.class_name)


def get_loss(name: str, **params) -> ConvexLoss:
    """Build the loss ``name`` of :data:`~dperm.catalog.LOSSES` (``"logistic"``, ``"huber"``, ...).

    Each loss takes the parameters its table entry declares (``h``, ``quantile``,
    ``y_bound``) and ignores the others, so ``get_loss(name, h=h)`` builds any
    margin loss.
    """
    cls = loss_class(name)
    return cls(**{key: value for key, value in params.items() if key in LOSSES[name].params})


__all__ = [
    "LOSSES",
    "ConvexLoss",
    "HingeLoss",
    "HuberLoss",
    "LogisticLoss",
    "MarginLoss",
    "PinballLoss",
    "PseudoHuberLoss",
    "ResidualLoss",
    "SmoothHingeLoss",
    "SmoothPinballLoss",
    "SquaredLoss",
    "check_quantile",
    "get_loss",
    "loss_class",
]
