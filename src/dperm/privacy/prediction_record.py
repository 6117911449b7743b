"""``privacy_`` of :class:`~dperm.PrivatePredictor`: what each answer guarantees, and its calibration."""

from __future__ import annotations

import math
from typing import ClassVar

from dperm.privacy.accounting import TOLERANCE
from dperm.privacy.prediction_calibration import PredictionCalibration
from dperm.privacy.references import REFERENCES
from dperm.privacy.release import DERIVED, PUBLIC, RecordBase, privacy_record, released

__all__ = ["PROTECTS", "PredictionPrivacyRecord", "prediction_record"]

PROTECTS = (
    "each answered value f_z(x) + b (fresh Laplace b per answer) is epsilon_per_query-DP; "
    "k answers cost k * epsilon_per_query (sequential composition), repeated queries included. "
    "No model is released: the fitted object holds the exact model and must never be published "
    "(paper note 6, docs/paper_notes.md)."
)


@privacy_record
class PredictionPrivacyRecord(RecordBase):
    """What each answer of a :class:`~dperm.PrivatePredictor` guarantees, and its calibration.

    Every field is a public input or derived from public inputs
    (:mod:`dperm.privacy.release`). The predictor's
    :class:`~dperm.privacy.prediction_calibration.PredictionCalibration` is one field
    (``calibration``): ``lam`` to ``lipschitz``, ``sensitivity`` to ``epsilon_per_query``,
    ``noise_scale`` and ``noise_grid`` are its numbers (its ``radius_allowance`` under the key
    ``solution_radius_allowance``), read and serialised as the record's own keys in
    :attr:`SERIALISED_ORDER`.

    Attributes
    ----------
    mechanism : str
        ``"private_prediction"``.
    kernel, kernel_gamma, loss, alpha : as given
    calibration : PredictionCalibration
    lam : float
        ``lambda = alpha / 2`` of 000 (paper note 7).
    strong_convexity : float
        ``gamma = 2`` of ``Omega(f) = ||f||_K^2``.
    kappa : float
        ``sup_x sqrt(K(x, x))``.
    lipschitz : float
        ``C_L`` (000 Sec. 5).
    y_bound : float or None
        ``M`` (least squares).
    n_samples : int
        ``m``, public under replace-one neighbours.
    sensitivity : float
        ``B_Delta = 2 kappa^2 C_L / (lambda gamma m)`` of the exact minimiser.
    solution_radius_allowance : float
        The RKHS radius the solver must certify (fixed in advance).
    calibrated_sensitivity : float
        ``B_Delta + 2 kappa r_allowed``, what the noise is calibrated to.
    epsilon_per_query, epsilon_total : float
    noise_distribution : str
        ``"discrete-laplace"``: exact integer noise on a grid (float-safe).
    noise_scale, noise_grid : float
        ``g k / epsilon_per_query`` and ``g`` (:func:`prediction_noise_calibration`).
    protects, reference : str
    label_set_public : bool
        Hinge loss: whether the two classes were given as the public ``classes``.
    solver : {"exact", "features"}
        The path taken, chosen from public inputs only (m, the number of
        features, ``n_components``, ``max_memory_gb``;
        :func:`dperm.solvers.kernel.plan_prediction_solver`).
    n_components, feature_seed : int or None
        Features path: ``D`` random frequencies and the public seed they are
        drawn from (``None`` on the exact path).
    max_memory_gb : float
        The memory cap the path was checked against.
    """

    mechanism: str = released(PUBLIC)
    kernel: str = released(PUBLIC)
    kernel_gamma: float = released(PUBLIC)
    loss: str = released(PUBLIC)
    alpha: float = released(PUBLIC)
    calibration: PredictionCalibration = released(
        DERIVED, embed=PredictionCalibration, names={"radius_allowance": "solution_radius_allowance"})
    y_bound: float | None = released(PUBLIC)
    n_samples: int = released(PUBLIC)
    epsilon_total: float = released(PUBLIC)
    noise_distribution: str = released(PUBLIC, "discrete-laplace")
    solver: str = released(DERIVED, "exact")
    n_components: int | None = released(PUBLIC, None)
    feature_seed: int | None = released(PUBLIC, None)
    max_memory_gb: float | None = released(PUBLIC, None)
    protects: str = released(PUBLIC, PROTECTS)
    reference: str = released(PUBLIC, REFERENCES["private_prediction"])
    label_set_public: bool = released(PUBLIC, True)

    #: The serialised keys in the order records always had.
    SERIALISED_ORDER: ClassVar[tuple] = (
        "mechanism", "kernel", "kernel_gamma", "loss", "alpha", "lam", "strong_convexity", "kappa",
        "lipschitz", "y_bound", "n_samples", "sensitivity", "solution_radius_allowance",
        "calibrated_sensitivity", "epsilon_per_query", "epsilon_total", "noise_distribution",
        "noise_scale", "noise_grid", "solver", "n_components", "feature_seed", "max_memory_gb",
        "protects", "reference", "label_set_public",
    )

    def summary(self) -> str:
        """A readable account of the calibration."""
        bound = f", |y| <= M = {self.y_bound:g}" if self.y_bound is not None else ""
        if self.solver == "features":
            kernel = (f"random Fourier features of the {self.kernel} kernel, D={self.n_components} "
                      f"frequencies from public seed {self.feature_seed}")
        else:
            kernel = f"exact {self.kernel} kernel"
        return "\n".join([
            f"Private prediction ({self.loss} loss{bound}; {kernel}, "
            f"gamma={self.kernel_gamma:g}; m={self.n_samples})",
            f"  each answer: epsilon={self.epsilon_per_query:g}; total budget "
            f"epsilon={self.epsilon_total:g} (at most "
            f"{_answers_within(self.epsilon_total, self.epsilon_per_query)} answers)",
            f"  B_Delta = 2 kappa^2 C_L / (lambda gamma m) = {self.sensitivity:.6g} "
            f"(kappa={self.kappa:g}, C_L={self.lipschitz:.6g}, lambda=alpha/2={self.lam:.6g}, "
            f"gamma={self.strong_convexity:g})",
            f"  the solver must certify an RKHS radius <= {self.solution_radius_allowance:.3g};"
            f" noise calibrated to {self.calibrated_sensitivity:.6g}",
            f"  noise: {self.noise_distribution}, scale {self.noise_scale:.6g} per answer on a grid "
            f"of {self.noise_grid:.3g} (float-safe: exact integer noise)",
            f"  protects: {self.protects}"
            + ("" if self.label_set_public else "; the label set was read from the data and is NOT covered"),
            f"  reference: {self.reference}",
        ])


def _answers_within(epsilon_total: float, epsilon_per_query: float) -> int:
    """How many answers of ``epsilon_per_query`` fit in ``epsilon_total`` (with the accountant's tolerance)."""
    return int(math.floor((epsilon_total + TOLERANCE) / epsilon_per_query))


def prediction_record(calibration, *, kernel, kernel_gamma, loss, alpha, y_bound, n_samples,
                      epsilon_total, label_set_public, solver, n_components=None, feature_seed=None,
                      max_memory_gb=None) -> PredictionPrivacyRecord:
    """The :class:`PredictionPrivacyRecord` of a fit from its public calibration and public inputs.

    ``calibration`` is the fit's :class:`~dperm.privacy.prediction_calibration.PredictionCalibration`
    (a function of public inputs), embedded as one field. ``n_components`` and
    ``feature_seed`` are recorded on the features path only.
    """
    features = solver == "features"
    return PredictionPrivacyRecord(
        mechanism="private_prediction", kernel=kernel, kernel_gamma=kernel_gamma, loss=loss, alpha=alpha,
        calibration=calibration, y_bound=y_bound, n_samples=n_samples, epsilon_total=epsilon_total,
        label_set_public=label_set_public, solver=solver, n_components=n_components if features else None,
        feature_seed=int(feature_seed) if features else None, max_memory_gb=max_memory_gb,
    )
