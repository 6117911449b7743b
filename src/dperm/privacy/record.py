"""``privacy_``: what guarantee a fitted model has, and how it was calibrated."""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, fields

REFERENCES = {
    "output": "Chaudhuri, Monteleoni & Sarwate (2011), Alg. 1 and Thm 1; Nie & Wang (2017), "
    "Thm 2 for non-differentiable Lipschitz losses",
    "objective": "Chaudhuri, Monteleoni & Sarwate (2011), Alg. 2 and Thm 2 (Cor. 4 for Huber)",
    "gaussian_objective": "Rajkumar & Agarwal (2012), Alg. 4 and Thm 4.1",
}


@dataclass(frozen=True)
class PrivacyRecord:
    """The privacy guarantee of a fitted model and every number behind it.

    Attributes
    ----------
    mechanism : str
        ``"output"``, ``"objective"`` or ``"gaussian_objective"``.
    epsilon, delta : float
        The guarantee of the released model: ``(epsilon, delta)``-DP with
        respect to replacing one training record (``delta == 0``: pure DP).
    n_problems : int
        Binary problems solved: 1, or one per class for one-vs-rest. Every
        record enters all of them, so each gets ``epsilon / n_problems`` and
        ``delta / n_problems`` and the total follows by basic composition.
    epsilon_per_problem, delta_per_problem : float
    epsilon_noise : float
        ``eps'`` (003 Alg. 2) or ``eps~`` (004 Proc. 2): the part of each
        problem's epsilon spent by the noise term.
    extra_regularization : float
        ``Delta`` of 003 Alg. 2 / 004 Proc. 2.
    noise_distribution : str
        ``"l2-laplace"`` (density ``~ exp(-||b|| / noise_scale)``) or ``"gaussian"``.
    noise_scale : float
        ``1/beta`` or ``sigma``.
    sensitivity : float or None
        L2 sensitivity the output noise is calibrated to (output perturbation only).
    data_norm : float
        The public bound on a row's norm given by the user.
    effective_data_norm : float
        The bound used in the calibration: ``sqrt(data_norm^2 + intercept_scaling^2)``
        with an intercept, otherwise ``data_norm``.
    lipschitz, curvature : float
        ``L`` and ``c`` of the loss (``curvature`` is None for the hinge).
    alpha : float
        Regularisation strength (the papers' Lambda).
    n_samples : int
    rows_clipped : int
        Rows whose norm exceeded ``data_norm`` and were scaled onto it.
    tol : float
        Requested gradient-norm tolerance of the solve.
    gradient_norm : float
        Largest final ``||grad J||`` over the binary problems (optimality certificate).
    solution_radius : float
        Largest proven bound on the distance to the exact minimiser.
    certified : bool
        Whether every solve met the tolerance. Objective perturbation's proof
        assumes the exact minimiser (shared papers note 8).
    loss : str
    reference : str
    data_passes : int or None
        With Dask input (:mod:`dperm.scale`): passes over the data, the
        validating scan included. ``None`` for an in-memory fit.
        The paper and theorem the guarantee follows from.
    label_set_public : bool or None
        Classifiers: True if the label set (``classes_`` and the one-vs-rest
        split) was the public ``classes`` parameter, False if it was read from
        the training data and so is not covered by the guarantee
        (:mod:`dperm.privacy.labels`). None for regressors (no label set).
    """

    mechanism: str
    epsilon: float
    delta: float
    n_problems: int
    epsilon_per_problem: float
    delta_per_problem: float
    epsilon_noise: float
    extra_regularization: float
    noise_distribution: str
    noise_scale: float
    sensitivity: float | None
    data_norm: float
    effective_data_norm: float
    lipschitz: float
    curvature: float | None
    alpha: float
    n_samples: int
    rows_clipped: int
    tol: float
    gradient_norm: float
    solution_radius: float
    certified: bool
    loss: str
    reference: str
    data_passes: int | None = None
    label_set_public: bool | None = None

    @property
    def guarantee(self) -> str:
        """The guarantee in words, e.g. ``"(0.1, 0)-DP (pure epsilon-DP)"``."""
        if self.delta == 0:
            return f"{self.epsilon:g}-DP (pure epsilon-differential privacy)"
        return f"({self.epsilon:g}, {self.delta:g})-DP"

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (used in model files)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "PrivacyRecord":
        """Rebuild a record; raises ValueError on missing or unknown keys."""
        if not isinstance(data, dict):
            raise ValueError(f"a privacy record must be a JSON object; got {type(data).__name__}.")
        names = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.default is MISSING}
        missing = sorted(required - set(data))
        unknown = sorted(set(data) - names)
        if missing or unknown:
            raise ValueError(
                f"malformed privacy record: missing keys {missing}, unknown keys {unknown}."
            )
        return cls(**data)

    def summary(self) -> str:
        """A readable multi-line account of the guarantee and its calibration."""
        lines = [
            f"Guarantee: {self.guarantee} for the released coefficients,",
            "           with respect to replacing one training record.",
            f"Mechanism: {self.mechanism} perturbation, {self.loss} loss ({self.reference}).",
        ]
        if self.label_set_public is not None:
            lines.append("Label set: public (given)." if self.label_set_public else
                         "Label set: read from the training data; NOT covered by the guarantee.")
        if self.n_problems > 1:
            lines.append(
                f"One-vs-rest over {self.n_problems} classes: each binary problem is "
                f"({self.epsilon_per_problem:g}, {self.delta_per_problem:g})-DP; basic "
                "composition gives the total."
            )
        noise = f"{self.noise_distribution} noise, scale {self.noise_scale:.4g}"
        if self.sensitivity is not None:
            noise += f", calibrated to L2 sensitivity {self.sensitivity:.4g}"
        lines.append(f"Noise: {noise}; epsilon spent on noise {self.epsilon_noise:.4g}.")
        if self.extra_regularization:
            lines.append(f"Extra regularisation Delta = {self.extra_regularization:.4g}.")
        lines.append(
            f"Data: n = {self.n_samples}, row norm bound {self.data_norm:g} "
            f"(effective {self.effective_data_norm:.4g}), {self.rows_clipped} rows clipped; "
            f"alpha = {self.alpha:g}, L = {self.lipschitz:g}, c = {self.curvature}."
        )
        status = "met" if self.certified else "NOT met"
        lines.append(
            f"Solve: gradient norm {self.gradient_norm:.3g} (tolerance {self.tol:g}, {status}); "
            f"distance to the exact minimiser <= {self.solution_radius:.3g}."
        )
        if self.data_passes is not None:
            lines.append(
                f"Distributed fit (Dask): {self.data_passes} passes over the data, the "
                "validating scan included."
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)
