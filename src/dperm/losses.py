"""Margin losses for linear classification, with the constants privacy needs.

Every loss is written in margin form ``loss(z)`` with ``z = y * w.x`` and
``y in {-1, +1}`` (Chaudhuri, Monteleoni & Sarwate 2011, Sec. 3.4; paper 003).
Each exposes, vectorised over numpy arrays:

- ``value(z)``, ``derivative(z)`` and, where it exists, ``second_derivative(z)``;
- ``lipschitz``: a bound ``L`` on ``|loss'(z)|`` (the papers assume ``L = 1``);
- ``curvature``: a bound ``c`` on ``|loss''(z)|`` (``None`` when the loss is not
  twice differentiable, which rules out objective perturbation).

The privacy arithmetic (``dperm.privacy.sensitivity``) reads ``L`` and ``c``
from here; no other module hard-codes them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from scipy.special import expit

from dperm.validation import check_positive


class MarginLoss(ABC):
    """Base class: a convex loss of the margin ``z = y * w.x``.

    Attributes
    ----------
    name : str
        Identifier used by estimators and model files.
    lipschitz : float
        ``L``, a bound on ``|loss'(z)|`` for all ``z``.
    curvature : float or None
        ``c``, a bound on ``|loss''(z)|``; ``None`` if not twice differentiable.
    """

    name = "margin"
    lipschitz = 1.0
    curvature: float | None = None

    @property
    def differentiable(self) -> bool:
        """Whether ``derivative`` is a true derivative (not a subgradient)."""
        return True

    @property
    def twice_differentiable(self) -> bool:
        """Whether objective perturbation's Jacobian argument applies (003 Thm 2)."""
        return self.curvature is not None

    @abstractmethod
    def value(self, z):
        """The loss at margins ``z``."""

    @abstractmethod
    def derivative(self, z):
        """The derivative (or a subgradient) at margins ``z``."""

    def second_derivative(self, z):
        raise ValueError(f"the {self.name} loss has no second derivative.")

    def params(self) -> dict:
        """Parameters that reconstruct this loss with :func:`get_loss`."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


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

    def params(self) -> dict:
        return {"h": self.h}


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

    def params(self) -> dict:
        return {"h": self.h}


class HingeLoss(MarginLoss):
    """``max(0, 1 - z)`` (003 eq. 37); ``L = 1``, not differentiable at ``z = 1``.

    Output perturbation still applies: its sensitivity needs only convexity
    and the Lipschitz constant (Nie & Wang 2017, paper 000, Thm 2). Objective
    perturbation does not (003 Thm 2 needs ``loss''``).
    """

    name = "hinge"
    lipschitz = 1.0
    curvature = None

    @property
    def differentiable(self) -> bool:
        return False

    def value(self, z):
        return np.maximum(0.0, 1.0 - np.asarray(z, dtype=float))

    def derivative(self, z):
        """A subgradient: ``-1`` for ``z < 1``, ``0`` otherwise."""
        return np.where(np.asarray(z, dtype=float) < 1.0, -1.0, 0.0)


_LOSSES = {
    "logistic": LogisticLoss,
    "huber": HuberLoss,
    "smooth_hinge": SmoothHingeLoss,
    "hinge": HingeLoss,
}

LOSS_NAMES = tuple(_LOSSES)


def get_loss(name: str, **params) -> MarginLoss:
    """Build a loss by name: ``"logistic"``, ``"huber"``, ``"smooth_hinge"`` or ``"hinge"``.

    ``h`` is passed to the losses that have a width and ignored by the others.
    """
    try:
        cls = _LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError(f"loss must be one of {LOSS_NAMES}; got {name!r}.") from None
    if cls in (HuberLoss, SmoothHingeLoss):
        return cls(**{k: v for k, v in params.items() if k == "h"})
    return cls()
