"""``privacy_``: what guarantee a fitted model has, and how it was calibrated.

Every field is declared public input or derived from public input and noised
output (:mod:`dperm.privacy.release`); nothing computed from the private rows
alone (iteration counts, achieved gradient norms, clipping counts) is here.
"""

from __future__ import annotations

from typing import ClassVar

from dperm.privacy.fallback import FallbackCalibration
from dperm.privacy.mechanism_calibration import MechanismCalibration
from dperm.privacy.release import (
    DERIVED,
    PUBLIC,
    RecordBase,
    privacy_record,
    released,
)

__all__ = ["WEIGHTED_ROWS", "PrivacyRecord", "linear_record"]

#: The summary's line for a fit given ``sample_weight`` (paper note 15).
WEIGHTED_ROWS = ("Weighted rows: sample_weight in [0, 1] was given; a record is (x, y, weight), "
                 "the loss is (1/n) sum weight * loss with the public n, and the unweighted "
                 "calibration covers it (weights <= 1).")
#: What makes the noise safe against floating-point attacks, in one line.
FLOAT_SAFETY = ("values rounded to a power-of-two grid, exact integer noise (Canonne, Kamath & "
                "Steinke 2020), so no output is ruled out by its low-order bits (Mironov 2012)")


@privacy_record
class PrivacyRecord(RecordBase):
    """The privacy guarantee of a fitted model and every number behind it.

    The mechanism's calibration is one field (``calibration``); its numbers read and
    serialise as the record's own keys (``record.noise_scale``; ``epsilon_per_problem``
    and ``delta_per_problem`` are its ``epsilon`` and ``delta``), in the order of
    :attr:`SERIALISED_ORDER`, so records and model files read as before it was embedded.

    Attributes
    ----------
    mechanism : str
        ``"output"``, ``"objective"`` or ``"gaussian_objective"``.
    epsilon, delta : float
        The guarantee of the released model: ``(epsilon, delta)``-DP with
        respect to replacing one training record (``delta == 0``: pure DP).
    n_problems : int
        Binary problems solved: 1, or one per class of the label set for
        one-vs-rest. Every record enters all of them, so each gets
        ``epsilon / n_problems`` and ``delta / n_problems`` and the total
        follows by basic composition.
    calibration : MechanismCalibration
        How each problem's release was calibrated (every problem has the same); the
        attributes below up to ``solve_tol``, and ``lipschitz``, are its.
    epsilon_per_problem, delta_per_problem : float
    epsilon_noise : float
        ``eps'`` (003 Alg. 2) or ``eps~`` (004 Proc. 2): the part of each
        problem's epsilon spent by the objective's noise term; for output
        perturbation the whole ``epsilon_per_problem``.
    extra_regularization : float
        ``Delta`` of 003 Alg. 2 / 004 Proc. 2.
    noise_distribution : str
        ``"discrete-laplace"`` (independent coordinates), ``"discrete-l2-laplace"``
        (one joint lattice vector whose mass is ``exp(-||z - z'||_2 / scale)``-Lipschitz,
        003's radial noise on a grid; :mod:`dperm.mechanisms.noise.l2_laplace`) or
        ``"discrete-gaussian"``: exact integer noise on the grid ``noise_grid``
        (float-safe; see :mod:`dperm.mechanisms.noise`).
    noise_scale : float
        Scale of that noise (Laplace ``g k / eps`` with ``k`` the L1 or L2
        bound in steps, Gaussian ``h sigma``), in the coefficients' units for output perturbation and in
        the gradient's for the objective mechanisms.
    noise_grid : float
        The grid step of that noise.
    sensitivity : float or None
        L2 sensitivity the output noise is calibrated to (output perturbation).
    solution_radius_allowance : float
        The public radius around the (ideal) minimiser that the calibration
        allows for the solver: fixed before the data is solved; a solve that
        cannot certify it releases nothing.
    output_epsilon, output_noise_scale, output_grid, output_sensitivity : float
        Objective mechanisms: approximate minima perturbation's output stage
        (part of ``epsilon_per_problem``), its Laplace-type scale, grid and L2
        sensitivity ``2 r``. 0 for output perturbation.
    output_noise_distribution : str
        The output stage's noise law, as ``noise_distribution``; empty for
        output perturbation.
    solve_tol : float
        Objective mechanisms: the gradient tolerance the certified solve reached and
        AMP's radius is calibrated to, ``min(tol, ...)`` derived from public inputs so
        the output stage's noise stays a small fixed fraction of the objective noise's
        effect (:func:`~dperm.privacy.sensitivity.amp_solve_tolerance`); 0 otherwise.
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
        ``n``, public under replace-one neighbours.
    tol : float
        Gradient-norm tolerance the solve must certify.
    loss : str
    reference : str
        The papers and theorems the guarantee follows from.
    label_set_public : bool or None
        Classifiers: True if the label set (``classes_`` and the one-vs-rest
        split) was the public ``classes`` parameter, False if it was read from
        the training data and so is not covered by the guarantee
        (:mod:`dperm.privacy.labels`). None for regressors (no label set).
    engine : str
        ``"memory"`` or ``"dask"`` (:mod:`dperm.scale`).
    mechanism_choice : str or None
        With ``mechanism="auto"``: why ``mechanism`` was chosen, with each candidate's
        expected perturbation (:func:`dperm.mechanisms.choice.choose_mechanism`, a
        function of public inputs only). None when the user named the mechanism.
    target_bounds : (float, float) or None
        The quantile regressor's public ``y_bounds``: the targets were clipped to them
        and mapped onto ``[-1, 1]`` (``(y - centre) / half_width``) before the solve;
        the release is on that scale and ``coef_`` / ``intercept_`` are it times the
        half width (plus the centre): post-processing. None when no bounds were given.
    sample_weighted : bool
        Whether ``fit`` was given ``sample_weight`` (a public flag; the weights are part of
        the private rows and never released). Weights lie in [0, 1] and a neighbour replaces
        a row's ``(x, y, weight)`` together; the calibration is the unweighted one
        (paper note 15). Serialised only when True.
    fallback : FallbackCalibration or None
        ``fallback="majority"`` (:mod:`dperm.privacy.fallback`): the choice's share of epsilon
        (``fallback_share``), its epsilon (``fallback_epsilon``; the ERM mechanism ran at
        ``epsilon`` less it), the L1 sensitivity of its score vector and the discrete Laplace
        scale. Serialised only when set.
    fallback_choice : str or None
        What the fallback released, ``"model"`` or ``"constant"`` (the majority class): a
        function of the noised scores, so public once released. Serialised only when set.
    """

    mechanism: str = released(PUBLIC)
    epsilon: float = released(PUBLIC)
    delta: float = released(PUBLIC)
    n_problems: int = released(PUBLIC)
    calibration: MechanismCalibration = released(
        DERIVED, embed=MechanismCalibration,
        names={"epsilon": "epsilon_per_problem", "delta": "delta_per_problem"})
    data_norm: float = released(PUBLIC)
    effective_data_norm: float = released(DERIVED)
    curvature: float | None = released(PUBLIC)
    alpha: float = released(PUBLIC)
    n_samples: int = released(PUBLIC)
    tol: float = released(PUBLIC)
    loss: str = released(PUBLIC)
    reference: str = released(PUBLIC)
    label_set_public: bool | None = released(PUBLIC, None)
    engine: str = released(PUBLIC, "memory")
    mechanism_choice: str | None = released(DERIVED, None)
    target_bounds: tuple | None = released(PUBLIC, None)
    sample_weighted: bool = released(PUBLIC, False, omit_default=True)
    fallback: FallbackCalibration | None = released(
        DERIVED, None, embed=FallbackCalibration, omit_default=True,
        names={"share": "fallback_share", "epsilon": "fallback_epsilon",
               "sensitivity": "fallback_sensitivity", "noise_scale": "fallback_noise_scale"})
    fallback_choice: str | None = released(DERIVED, None, omit_default=True)

    #: The serialised keys (``to_dict``, JSON, model files) in the order records always had.
    SERIALISED_ORDER: ClassVar[tuple] = (
        "mechanism", "epsilon", "delta", "n_problems", "epsilon_per_problem", "delta_per_problem",
        "epsilon_noise", "extra_regularization", "noise_distribution", "noise_scale", "noise_grid",
        "sensitivity", "solution_radius_allowance", "data_norm", "effective_data_norm", "lipschitz",
        "curvature", "alpha", "n_samples", "tol", "loss", "reference", "output_epsilon",
        "output_noise_scale", "output_grid", "output_sensitivity", "output_noise_distribution",
        "solve_tol", "label_set_public", "engine", "mechanism_choice", "target_bounds",
        "sample_weighted", "fallback_share", "fallback_epsilon", "fallback_sensitivity",
        "fallback_noise_scale", "fallback_choice",
    )

    def summary(self) -> str:
        """A readable multi-line account of the guarantee and its calibration."""
        lines = [
            f"Guarantee: {self.guarantee} for the released coefficients,",
            "           with respect to replacing one training record"
            + ("." if self.label_set_public is not False else
               "; the label set was read from the training data and is NOT covered."),
            f"Mechanism: {self.mechanism} perturbation, {self.loss} loss ({self.reference}).",
        ]
        if self.mechanism_choice:
            lines.append(f"Chosen by mechanism='auto' from public quantities: {self.mechanism_choice}.")
        if self.sample_weighted:
            lines.append(WEIGHTED_ROWS)
        if self.fallback is not None:
            lines.append(self._fallback_text())
        if self.target_bounds is not None:
            lower, upper = self.target_bounds
            lines.append(f"Targets: clipped to the public bounds [{lower:g}, {upper:g}] and mapped "
                         "onto [-1, 1]; released on that scale, mapped back (post-processing).")
        if self.label_set_public is not None:
            lines.append("Label set: public (given)." if self.label_set_public else
                         "Label set: read from the training data; NOT covered by the guarantee.")
        if self.n_problems > 1:
            lines.append(
                f"One-vs-rest over {self.n_problems} classes: each binary problem is "
                f"({self.epsilon_per_problem:g}, {self.delta_per_problem:g})-DP; basic "
                "composition gives the total."
            )
        shape = ("one joint lattice vector, mass Lipschitz in the L2 norm"
                 if self.noise_distribution == "discrete-l2-laplace" else "per coordinate")
        noise = (f"{self.noise_distribution} noise ({shape}), scale {self.noise_scale:.4g} "
                 f"on a grid of {self.noise_grid:.3g}")
        if self.sensitivity is not None:
            noise += f", calibrated to L2 sensitivity {self.sensitivity:.4g}"
        lines.append(f"Noise: {noise}; epsilon spent on it {self.epsilon_noise:.4g}.")
        if self.extra_regularization:
            lines.append(f"Extra regularisation Delta = {self.extra_regularization:.4g}.")
        if self.output_epsilon:
            lines.append(
                f"Inexact solve covered (approximate minima perturbation): the solution is "
                f"released with {self.output_noise_distribution or 'discrete-laplace'} noise, "
                f"scale {self.output_noise_scale:.3g}, for "
                f"L2 sensitivity {self.output_sensitivity:.3g} (twice the allowed radius "
                f"{self.solution_radius_allowance:.3g}); epsilon {self.output_epsilon:.4g}."
            )
        else:
            lines.append(
                f"Inexact solve covered: the noise is calibrated for a solution within "
                f"{self.solution_radius_allowance:.3g} of the exact minimiser, which the solver certifies."
            )
        lines.append(f"Float-safe: {FLOAT_SAFETY}.")
        lines.append(
            f"Public inputs: n = {self.n_samples}, row norm bound {self.data_norm:g} "
            f"(effective {self.effective_data_norm:.4g}), alpha = {self.alpha:g}, "
            f"L = {self.lipschitz:g}, {self._curvature_text()}, tol = {self.tol:g}"
            + (", fitted on Dask" if self.engine == "dask" else "") + "."
        )
        return "\n".join(lines)

    def _fallback_text(self) -> str:
        """The majority fallback's line: its share, its noise and what it released."""
        chosen = {"model": "the fitted model", "constant": "the constant model (noisy majority class)",
                  None: "the fitted model or the constant model"}[self.fallback_choice]
        return (f"Majority fallback: {self.fallback_share:.4g} of epsilon ({self.fallback_epsilon:.4g}) "
                "on the training rows' correct count and class counts, discrete-laplace noise of "
                f"scale {self.fallback_noise_scale:.4g} (L1 sensitivity {self.fallback_sensitivity}); "
                f"released {chosen}; the mechanism below ran at the rest of epsilon.")

    def _curvature_text(self) -> str:
        """``c = ...``, or why the calibration has no ``c`` (output perturbation never uses it)."""
        if self.curvature is None:
            return "c not used (output perturbation: no bound on the loss's second derivative needed)"
        return f"c = {self.curvature:g}"


def linear_record(mechanism, calibration, epsilon, delta, *, n_problems, loss, data_norm, alpha,
                  tol, effective_norm, n_samples, engine="memory", label_set_public=None,
                  reference=None, mechanism_choice=None, target_bounds=None) -> PrivacyRecord:
    """The :class:`PrivacyRecord` of a linear model: its public inputs and the one calibration.

    ``mechanism`` is the row of :data:`dperm.mechanisms.catalog.MECHANISMS` that ran: its
    name, its ``reference`` (unless one is given) and whether its calibration uses the
    loss's curvature (``needs_curvature``; output perturbation uses none, and its
    calibration's ``lipschitz`` is ``C_L``). ``calibration`` is the
    :class:`~dperm.privacy.mechanism_calibration.MechanismCalibration` every one of the
    ``n_problems`` problems released with (never a solve's diagnostics); everything else
    is a public input.
    """
    return PrivacyRecord(
        mechanism=mechanism.name,
        epsilon=epsilon,
        delta=delta,
        n_problems=n_problems,
        calibration=calibration,
        data_norm=data_norm,
        effective_data_norm=effective_norm,
        curvature=loss.curvature if mechanism.needs_curvature else None,
        alpha=alpha,
        n_samples=n_samples,
        tol=tol,
        loss=loss.name,
        reference=reference or mechanism.reference,
        label_set_public=label_set_public,
        engine=engine,
        mechanism_choice=mechanism_choice,
        target_bounds=None if target_bounds is None else tuple(float(v) for v in target_bounds),
    )
