"""How one run of an ERM mechanism is calibrated: the numbers its release uses and its record shows.

Computed once per fit by the mechanism's ``calibrate``
(:meth:`dperm.mechanisms.catalog.Mechanism.calibrate`), from public quantities only; the
mechanism releases with it and :class:`dperm.privacy.record.PrivacyRecord` embeds it as
one field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields


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
    solve_tol : float
        Objective mechanisms only: the gradient tolerance the certified solve
        reaches, a public function of the user's ``tol``, ``n``, ``d`` and the
        noise calibration (:func:`~dperm.privacy.sensitivity.amp_solve_tolerance`);
        AMP's radius is calibrated to it. 0 for other mechanisms (their ``tol``).
    lipschitz : float or None
        The Lipschitz constant the calibration used: ``C_L`` of 000 Thm 2 for
        output perturbation (``loss.solution_lipschitz``), ``L`` otherwise.
    noise_law, output_noise_law : object
        The exact laws the release draws from, functions of the numbers above:
        a :class:`~dperm.mechanisms.noise.GridCalibration` (output perturbation's
        noise, AMP's output stage) or an
        :class:`~dperm.mechanisms.objective.ObjectiveCalibration` (the objective
        mechanisms' noise term); ``output_noise_law`` is ``None`` for output
        perturbation. Not serialised (:meth:`to_dict`), not compared: a record read
        back from a model file has the numbers only.
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
    solve_tol: float = 0.0
    noise_law: object = field(default=None, repr=False, compare=False, metadata={"serialised": False})
    output_noise_law: object = field(default=None, repr=False, compare=False,
                                     metadata={"serialised": False})

    def to_dict(self) -> dict:
        """The calibration's numbers by name (the laws left out: they are what the numbers say)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("serialised", True)}

    @property
    def release_grid(self) -> float:
        """The grid every released coordinate lies on: AMP's output grid, else the noise grid."""
        return self.output_grid or self.noise_grid


__all__ = ["MechanismCalibration"]
