"""The data a mechanism sees: one ERM problem, already per-record clipped."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

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
class MechanismCalibration:
    """How one run of a mechanism is calibrated, from public quantities only.

    Every mechanism's ``calibrate`` computes one
    (:meth:`dperm.mechanisms.catalog.Mechanism.calibrate`), once per fit; the
    mechanism releases with it (:class:`MechanismOutput` embeds it), and
    :mod:`dperm.model_io` recomputes it from a model file's public inputs to
    check the numbers the file records.

    Attributes
    ----------
    epsilon, delta : float
        The guarantee this one run gives.
    epsilon_noise : float
        The part of epsilon spent on the objective's noise term (``eps'`` or
        ``eps~``), or on the output noise for output perturbation.
    extra_regularization : float
        ``Delta`` of 003 Alg. 2 / 004 Proc. 2 (0 for output perturbation).
    noise_distribution : str
        Of the noise that decides ``coef``: ``"discrete-laplace"`` (independent
        coordinates) or ``"discrete-l2-laplace"`` (one joint lattice L2 Laplace
        vector, :mod:`dperm.mechanisms.noise.l2_laplace`) for output perturbation and
        objective perturbation's ``b``; ``"discrete-gaussian"`` for Gaussian
        objective perturbation's ``b``; on a grid.
    noise_scale : float
        Per-coordinate scale of that noise in the coefficients' (output) or the
        gradient's (objective) units: discrete Laplace ``g k / eps``, discrete
        Gaussian ``h sigma``.
    noise_grid : float
        Its grid step (a power of two).
    sensitivity : float or None
        L2 sensitivity the output noise is calibrated to (output perturbation).
    solution_radius_allowance : float
        The public radius around the (ideal) minimiser the calibration allows.
    output_epsilon, output_noise_scale, output_grid, output_sensitivity : float
        Objective mechanisms only (approximate minima perturbation): epsilon,
        Laplace-type scale, grid and L2 sensitivity of the output stage; 0 for
        output perturbation.
    output_noise_distribution : str
        The output stage's noise law (``"discrete-laplace"`` or
        ``"discrete-l2-laplace"``); empty for output perturbation.
    lipschitz : float or None
        The Lipschitz constant the calibration used: ``C_L`` of 000 Thm 2 for
        output perturbation (``loss.solution_lipschitz``), ``L`` otherwise.
    noise_law, output_noise_law : object
        The exact laws the release draws from, functions of the numbers above:
        a :class:`~dperm.mechanisms.noise.GridCalibration` (output perturbation's
        noise, AMP's output stage) or an
        :class:`~dperm.mechanisms.objective.ObjectiveCalibration` (the objective
        mechanisms' noise term); ``output_noise_law`` is ``None`` for output
        perturbation. Not part of any record, nor of :meth:`to_dict`.
    """

    epsilon: float
    delta: float
    epsilon_noise: float
    extra_regularization: float
    noise_distribution: str
    noise_scale: float
    noise_grid: float
    sensitivity: float | None
    solution_radius_allowance: float
    lipschitz: float | None = None
    output_epsilon: float = 0.0
    output_noise_scale: float = 0.0
    output_grid: float = 0.0
    output_sensitivity: float = 0.0
    output_noise_distribution: str = ""
    noise_law: object = field(default=None, repr=False, metadata={"law": True})
    output_noise_law: object = field(default=None, repr=False, metadata={"law": True})

    def to_dict(self) -> dict:
        """The calibration's numbers by name (the laws left out: they are what the numbers say)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.metadata.get("law")}

    @property
    def release_grid(self) -> float:
        """The grid every released coordinate lies on: AMP's output grid, else the noise grid."""
        return self.output_grid or self.noise_grid


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
