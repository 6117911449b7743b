"""The data a mechanism sees: one ERM problem, already per-record clipped."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dperm.losses import ConvexLoss
from dperm.privacy.mechanism_calibration import MechanismCalibration
from dperm.solvers import SolveResult


@dataclass(frozen=True)
class ERMProblem:
    """``min_w (1/n) sum v_i loss(t_i) + alpha/2 ||w||^2`` with ``||x_i|| <= data_norm``.

    ``v_i`` is the row's weight in [0, 1] (``sample_weight``; 1 for every row when it is
    ``None``). The sum is divided by the public ``n``, never by ``sum v_i`` (private).

    ``t_i`` is the margin ``y_i w.x_i`` (classification) or the residual
    ``y_i - w.x_i`` (regression), as the loss says (:mod:`dperm.losses`).

    Attributes
    ----------
    X : ndarray of shape (n, d) or dperm.scale.ChunkedERMData
        Rows already clipped to ``data_norm`` (and augmented with the intercept
        feature, whose value counts toward ``data_norm``). A
        :class:`~dperm.scale.ChunkedERMData` holds rows and labels in chunks on
        a Dask cluster, does those per-record steps inside each chunk, and
        solves through its own certified solver (:func:`dperm.solvers.minimize_erm`).
    y : ndarray of shape (n,) or None
        Values in {-1, +1} for a margin loss; labels (already clipped to any
        public bound the loss needs) for a residual loss. ``None`` when ``X``
        is a ``ChunkedERMData``.
    loss : ConvexLoss
    alpha : float
        The papers' ``Lambda``.
    data_norm : float
        Public bound ``R`` on every row's L2 norm.
    sample_weight : ndarray of shape (n,) or None
        Row weights in [0, 1], checked by the estimator
        (:func:`dperm.validation.check_sample_weight`); part of each row, so replace-one
        neighbours replace ``(x_i, y_i, v_i)`` together. Every mechanism's sensitivity
        argument holds unchanged because ``v_i <= 1`` (paper note 15).
    """

    X: np.ndarray
    y: np.ndarray
    loss: ConvexLoss
    alpha: float
    data_norm: float
    sample_weight: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def is_distributed(self) -> bool:
        """Whether the rows live in chunks that solve themselves (``minimize_certified``)."""
        return hasattr(self.X, "minimize_certified")


@dataclass(frozen=True)
class PublicProblem:
    """The public part of an :class:`ERMProblem`: sizes, loss, ``alpha`` and the norm bound.

    Everything a mechanism's calibration reads; :mod:`dperm.mechanisms.choice`
    compares mechanisms on it before any row is seen.
    """

    n_samples: int
    n_features: int
    loss: ConvexLoss
    alpha: float
    data_norm: float


@dataclass(frozen=True)
class MechanismOutput:
    """What a mechanism releases (``coef``) and the calibration it was released under.

    ``coef`` is the noised output and ``calibration`` public or derived
    (:mod:`dperm.privacy.release`); ``solve`` holds the solver's diagnostics,
    which depend on the data and are never released (estimators must not copy
    them). The calibration's fields read as the output's own
    (``output.noise_scale`` is ``output.calibration.noise_scale``).

    Attributes
    ----------
    coef : ndarray of shape (d,)
        The private weight vector, exactly on the calibration's release grid.
    solve : SolveResult
        Diagnostics; not released.
    calibration : MechanismCalibration
    """

    coef: np.ndarray
    solve: SolveResult = field(repr=False)
    calibration: MechanismCalibration

    @classmethod
    def released(cls, coef, solve, calibration: MechanismCalibration) -> "MechanismOutput":
        """The output releasing ``coef`` (found by ``solve``) under ``calibration``."""
        return cls(coef=coef, solve=solve, calibration=calibration)

    def __getattr__(self, name):
        if name.startswith("__") or name == "calibration":  # copy and pickle probe before __init__
            raise AttributeError(name)
        return getattr(self.calibration, name)


__all__ = ["ERMProblem", "MechanismCalibration", "MechanismOutput", "PublicProblem"]
