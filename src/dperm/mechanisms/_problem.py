"""The data a mechanism sees: one ERM problem, already per-record clipped."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dperm.losses import ConvexLoss
from dperm.solvers import SolveResult


@dataclass(frozen=True)
class ERMProblem:
    """``min_w (1/n) sum loss(t_i) + alpha/2 ||w||^2`` with ``||x_i|| <= data_norm``.

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
    """

    X: np.ndarray
    y: np.ndarray
    loss: ConvexLoss
    alpha: float
    data_norm: float

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
class MechanismOutput:
    """What a mechanism releases (``coef``) and how it was calibrated.

    Attributes
    ----------
    coef : ndarray of shape (d,)
        The private weight vector.
    epsilon, delta : float
        The guarantee this one run gives.
    epsilon_noise : float
        The part of epsilon spent on the noise (``eps'`` or ``eps~``).
    extra_regularization : float
        ``Delta`` of 003 Alg. 2 / 004 Proc. 2 (0 for output perturbation).
    noise_distribution : str
        ``"l2-laplace"`` (density ~ exp(-||b|| / scale)) or ``"gaussian"``.
    noise_scale : float
        ``1/beta`` for l2-laplace, ``sigma`` for gaussian.
    sensitivity : float or None
        L2 sensitivity the output noise is calibrated to (output perturbation).
    solve : SolveResult
        The optimality certificate of the solve.
    lipschitz : float or None
        The Lipschitz constant the calibration used: ``C_L`` of 000 Thm 2 for
        output perturbation (``loss.solution_lipschitz``), ``L`` otherwise.
    """

    coef: np.ndarray
    epsilon: float
    delta: float
    epsilon_noise: float
    extra_regularization: float
    noise_distribution: str
    noise_scale: float
    sensitivity: float | None
    solve: SolveResult = field(repr=False)
    lipschitz: float | None = None
