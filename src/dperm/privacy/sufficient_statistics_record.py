"""``privacy_`` of a least-squares fit by AdaSSP: the guarantee and every public number behind it.

Every field is a public input or derived from public inputs only
(:mod:`dperm.privacy.release`): the noised statistics, the adaptive ridge ``lambda``
(a function of the noised smallest eigenvalue) and the coefficients are not here.
"""

from __future__ import annotations

from dperm.privacy.record import WEIGHTED_ROWS
from dperm.privacy.release import (
    DERIVED,
    PUBLIC,
    RecordBase,
    privacy_record,
    released,
)
from dperm.privacy.sufficient_statistics import RELEASES

#: The mechanisms whose fits carry this record (:mod:`dperm.mechanisms.sufficient_statistics`).
_SUFFICIENT_STATISTICS_MECHANISMS = ("adassp", "gaussian_adassp")

#: What makes the noise safe against floating-point attacks (as for the other mechanisms).
FLOAT_SAFETY = ("statistics rounded to power-of-two grids, exact integer noise (Canonne, Kamath & "
                "Steinke 2020), so no output is ruled out by its low-order bits (Mironov 2012); "
                "the coefficients are computed from the noised statistics only")


@privacy_record
class SufficientStatisticsRecord(RecordBase):
    """The guarantee of a least-squares model fitted by AdaSSP (Wang 2018, Alg. 2).

    Attributes
    ----------
    mechanism : {"adassp", "gaussian_adassp"}
    epsilon, delta : float
        ``(epsilon, delta)``-DP for replacing one training record (``delta == 0``: pure).
    rho : float
        The Gaussian form's zCDP budget (``rho / 3`` per release); 0 for the pure form.
    n_samples : int
        ``n``, public under replace-one neighbours.
    dimension : int
        ``d`` of the statistics: the features plus the intercept's constant column; 1 when
        ``PrivateLeastSquares``' pure default fitted the intercept's column alone (the noise
        would have swamped every slope: ``mechanism_choice`` says so).
    data_norm, effective_data_norm : float
        The user's row-norm bound and the one with the intercept's column,
        ``sqrt(data_norm^2 + intercept_scaling^2)`` (``R`` of the sensitivities).
    target_lower, target_upper : float
        The public target bounds; targets are clipped to them and mapped affinely onto
        ``[-1, 1]`` (``target_bound``), predictions mapped back and clipped to them.
    target_bound : float
        ``B = 1``, the bound on the mapped targets.
    fit_intercept : bool
        Whether a constant column of value ``intercept_scaling`` is in the statistics
        (its coefficient is not penalised by the ridge).
    intercept_scaling : float
    {gram, moment, min_eigenvalue}_{sensitivity, noise_distribution, noise_scale, grid, epsilon, rho}
        Each release's L2 sensitivity, noise law, scale (Laplace ``g k / epsilon``,
        Gaussian ``g sigma``), grid step and budget share.
    ridge_target : float
        ``t`` in ``lambda = max(0, t - lambda~_min)``.
    eigenvalue_shift : float
        How far the released ``lambda_min`` is lowered (the noise's upper ``1 - rho`` quantile).
    failure_probability : float
        Wang 2018's ``rho`` of the ridge rule (accuracy only; not part of the guarantee).
    loss, reference, label_set_public, engine, mechanism_choice
        As in :class:`~dperm.privacy.record.PrivacyRecord`.
    """

    mechanism: str = released(PUBLIC)
    epsilon: float = released(PUBLIC)
    delta: float = released(PUBLIC)
    rho: float = released(DERIVED)
    n_samples: int = released(PUBLIC)
    dimension: int = released(PUBLIC)
    data_norm: float = released(PUBLIC)
    effective_data_norm: float = released(DERIVED)
    target_lower: float = released(PUBLIC)
    target_upper: float = released(PUBLIC)
    target_bound: float = released(PUBLIC)
    fit_intercept: bool = released(PUBLIC)
    intercept_scaling: float = released(PUBLIC)
    gram_sensitivity: float = released(DERIVED)
    gram_noise_distribution: str = released(PUBLIC)
    gram_noise_scale: float = released(DERIVED)
    gram_grid: float = released(DERIVED)
    gram_epsilon: float = released(DERIVED)
    gram_rho: float = released(DERIVED)
    moment_sensitivity: float = released(DERIVED)
    moment_noise_distribution: str = released(PUBLIC)
    moment_noise_scale: float = released(DERIVED)
    moment_grid: float = released(DERIVED)
    moment_epsilon: float = released(DERIVED)
    moment_rho: float = released(DERIVED)
    min_eigenvalue_sensitivity: float = released(DERIVED)
    min_eigenvalue_noise_distribution: str = released(PUBLIC)
    min_eigenvalue_noise_scale: float = released(DERIVED)
    min_eigenvalue_grid: float = released(DERIVED)
    min_eigenvalue_epsilon: float = released(DERIVED)
    min_eigenvalue_rho: float = released(DERIVED)
    ridge_target: float = released(DERIVED)
    eigenvalue_shift: float = released(DERIVED)
    failure_probability: float = released(PUBLIC)
    loss: str = released(PUBLIC, "squared")
    reference: str = released(PUBLIC, "")
    label_set_public: bool | None = released(PUBLIC, None)
    engine: str = released(PUBLIC, "memory")
    mechanism_choice: str | None = released(DERIVED, None)
    sample_weighted: bool = released(PUBLIC, False, omit_default=True)

    #: The coefficients are computed from the noised statistics, not released on a grid:
    #: :func:`dperm.model_io.check_on_grid` has nothing to check.
    coefficients_on_grid = False

    def summary(self) -> str:
        """A readable account of the guarantee and its calibration."""
        lines = [
            f"Guarantee: {self.guarantee} for the released coefficients,",
            "           with respect to replacing one training record.",
            f"Mechanism: {self.mechanism} (sufficient statistics with adaptive ridge), least squares "
            f"({self.reference}).",
        ]
        if self.mechanism_choice:
            lines.append(f"Chosen by mechanism='auto' from public quantities: {self.mechanism_choice}.")
        budget = (f"rho = {self.rho:.4g} zCDP in three equal parts" if self.rho
                  else "epsilon in three parts (basic composition)")
        lines.append(f"Releases ({budget}):")
        for name in RELEASES:
            share = getattr(self, f"{name}_rho") or getattr(self, f"{name}_epsilon")
            lines.append(
                f"  {name}: L2 sensitivity {getattr(self, f'{name}_sensitivity'):.4g}, "
                f"{getattr(self, f'{name}_noise_distribution')} noise of scale "
                f"{getattr(self, f'{name}_noise_scale'):.4g} on a grid of "
                f"{getattr(self, f'{name}_grid'):.3g}, share {share:.4g}")
        lines.append(
            f"Ridge: lambda = max(0, {self.ridge_target:.4g} - (released lambda_min - "
            f"{self.eigenvalue_shift:.4g})), computed from the released values only"
            + ("; the intercept is not penalised." if self.fit_intercept else "."))
        if self.sample_weighted:
            lines.append(WEIGHTED_ROWS + " The statistics are of the rows (sqrt(weight) x, "
                         "sqrt(weight) y); the intercept's Gram corner is the released one.")
        lines.append(f"Float-safe: {FLOAT_SAFETY}.")
        lines.append(
            f"Public inputs: n = {self.n_samples}, row norm bound {self.data_norm:g} (effective "
            f"{self.effective_data_norm:.4g}), target bounds [{self.target_lower:g}, "
            f"{self.target_upper:g}] mapped to [-1, 1].")
        return "\n".join(lines)


def sufficient_statistics_record(calibration, *, mechanism: str, data_norm: float,
                                 target_lower: float, target_upper: float, fit_intercept: bool,
                                 intercept_scaling: float, reference: str, engine: str = "memory",
                                 mechanism_choice: str | None = None) -> SufficientStatisticsRecord:
    """The record of an AdaSSP fit from its public calibration
    (:class:`dperm.mechanisms.sufficient_statistics.SufficientStatisticsCalibration`);
    ``reference`` is its row's in :data:`dperm.mechanisms.catalog.MECHANISMS`."""
    fields = {}
    for release in calibration.releases:
        fields.update({
            f"{release.name}_sensitivity": release.sensitivity,
            f"{release.name}_noise_distribution": release.noise_distribution,
            f"{release.name}_noise_scale": release.noise_scale,
            f"{release.name}_grid": release.grid,
            f"{release.name}_epsilon": release.epsilon,
            f"{release.name}_rho": release.rho,
        })
    return SufficientStatisticsRecord(
        mechanism=mechanism, epsilon=calibration.epsilon, delta=calibration.delta,
        rho=calibration.rho, n_samples=calibration.n_samples, dimension=calibration.dimension,
        data_norm=float(data_norm), effective_data_norm=calibration.data_norm,
        target_lower=float(target_lower), target_upper=float(target_upper),
        target_bound=calibration.target_bound, fit_intercept=bool(fit_intercept),
        intercept_scaling=float(intercept_scaling),
        ridge_target=calibration.ridge_target,
        eigenvalue_shift=calibration.min_eigenvalue.upper_quantile,
        failure_probability=calibration.failure_probability,
        reference=reference, engine=engine, mechanism_choice=mechanism_choice,
        **fields,
    )


__all__ = [ "SufficientStatisticsRecord", "sufficient_statistics_record"]
