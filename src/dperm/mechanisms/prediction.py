"""Private prediction: each answer ``f_z(x) + b``, fresh noise ``b``, is epsilon-DP (000 Lemma 1).

The calibration of :class:`dperm.PrivatePredictor`, as functions of public
inputs only: ``B_Delta = 2 kappa^2 C_L / (lambda gamma m)`` (000 Prop. 1, with
the noise scale of paper note 5 and ``lambda = alpha / 2``, paper note 7), the RKHS radius
``r`` the solve must certify, the noise calibrated to ``B_Delta + 2 kappa r``
(paper note 8), and exact discrete Laplace noise on a grid for every answer
(float-safe, Mironov 2012). :func:`fit_private_prediction` runs the certified
kernel solve (:mod:`dperm.solvers.kernel`) and returns the secret model with
its calibration; :func:`answer_queries` perturbs each value afresh.
Only answers may leave, never the model (paper note 6). The derivation and why the
scalar shift protects answers but not a released function:
``docs/design/prediction.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dperm.catalog import loss_names
from dperm.kernels import PAIR_MAP_KAPPA, get_kernel
from dperm.mechanisms.noise import GridCalibration, discrete_laplace_calibration, release_on_grid
from dperm.mechanisms.output import NONSMOOTH_RADIUS_FRACTION
from dperm.privacy.prediction_calibration import PredictionCalibration
from dperm.privacy.sensitivity import SQUARED_NORM_GAMMA, lambda_from_alpha, lipschitz_loss_sensitivity
from dperm.solvers.kernel import fit_kernel_model
from dperm.validation import check_epsilon, check_positive

__all__ = [
    "CLOSED_FORM_RADIUS_FRACTION",
    "PREDICTION_LOSSES",
    "PredictionCalibration",
    "PredictionFit",
    "answer_queries",
    "calibrate_prediction",
    "path_kappa",
    "fit_private_prediction",
    "prediction_noise_calibration",
    "prediction_sensitivity",
    "solution_radius_allowance",
]

#: Losses the prediction mechanism supports (000 Sec. 5.1 and 5.2).
PREDICTION_LOSSES = loss_names(prediction=True)
#: The closed-form least-squares solve is exact up to rounding; the public
#: allowance for that rounding is this fraction of ``B_Delta / kappa``.
CLOSED_FORM_RADIUS_FRACTION = 1e-6

# ---------------------------------------------------------------------------
# Calibration: pure functions, each citing its formula
# ---------------------------------------------------------------------------
def prediction_sensitivity(
    kappa: float, C_L: float, lam: float, m: int, gamma: float = SQUARED_NORM_GAMMA
) -> float:
    """``B_Delta = 2 kappa^2 C_L / (lambda gamma m)``: sensitivity of one answer ``f_z(x)`` (000 Prop. 1).

    ``|f_z(x) - f_zbar(x)| <= kappa ||f_z - f_zbar||_K`` (reproducing property)
    and ``||f_z - f_zbar||_K <= 2 kappa C_L / (lambda gamma m)`` (000 Thm 2,
    :func:`dperm.privacy.sensitivity.lipschitz_loss_sensitivity`).

    Parameters
    ----------
    kappa : float
        ``sup_x sqrt(K(x, x))`` (1 for the Gaussian kernel).
    C_L : float
        Lipschitz constant of the loss in the prediction (000 Sec. 5).
    lam : float
        Nie & Wang's ``lambda`` (dperm: ``alpha / 2``, paper note 7).
    m : int
        Number of training records.
    gamma : float, default=2
        Strong-convexity modulus of ``Omega(f) = ||f||_K^2``.

    Returns
    -------
    float
        ``B_Delta``.
    """
    kappa = check_positive(kappa, "kappa")
    return kappa * lipschitz_loss_sensitivity(kappa, C_L, lam, m, gamma)


def solution_radius_allowance(loss, sensitivity: float, kappa: float) -> float:
    """The RKHS radius ``r`` around the exact minimiser that the solve must certify.

    A fraction of the RKHS sensitivity ``B_Delta / kappa`` fixed before the data
    is solved: :data:`CLOSED_FORM_RADIUS_FRACTION` for least squares, the residual
    loss (closed form), :data:`dperm.mechanisms.output.NONSMOOTH_RADIUS_FRACTION`
    for the hinge, the margin loss (duality gap), the allowance dperm's output
    perturbation uses (:mod:`dperm.solvers.kernel`).
    """
    fraction = CLOSED_FORM_RADIUS_FRACTION if loss.kind == "residual" else NONSMOOTH_RADIUS_FRACTION
    return fraction * sensitivity / kappa


def _calibrated_prediction_sensitivity(sensitivity: float, kappa: float, radius: float) -> float:
    """``B_Delta + 2 kappa r``: sensitivity of answers computed from certified approximate minimisers.

    Each fitted function is within ``r`` (RKHS norm) of the exact one, so its
    values are within ``kappa r`` of the exact values (reproducing property);
    the triangle inequality adds that on both neighbouring sides (paper note 8).
    """
    return sensitivity + 2.0 * kappa * radius


def prediction_noise_calibration(sensitivity: float, epsilon: float) -> GridCalibration:
    """Grid and discrete Laplace scale of one answer (000 Lemma 1, made float-safe).

    000 Lemma 1 needs noise with density ``~ exp(-epsilon |b| / B)`` (paper note 5).
    dperm rounds the answer to a power-of-two grid ``g`` and adds exact
    discrete Laplace noise of scale ``k / epsilon`` steps, where ``k = ceil(B / g)``
    bounds how far two neighbouring answers can be apart on the grid
    (:func:`dperm.mechanisms.noise.discrete_laplace_calibration` with one
    dimension); each answer is then exactly ``epsilon``-DP, and the noise scale
    ``g k / epsilon`` exceeds ``B / epsilon`` by less than ``g / B <= 1/1024``.
    """
    return discrete_laplace_calibration(
        check_positive(sensitivity, "sensitivity"), 1, check_epsilon(epsilon, "epsilon_per_query")
    )


def answer_queries(values: np.ndarray, calibration: GridCalibration, rng: np.random.Generator) -> np.ndarray:
    """``f_z(x_j) + b_j`` on the grid, fresh exact noise per answer: each answer is ``epsilon``-DP on its own."""
    return release_on_grid(np.asarray(values, dtype=np.float64), calibration, rng)


# ---------------------------------------------------------------------------
# The mechanism: calibrate from public inputs, solve, keep the model secret
# ---------------------------------------------------------------------------
def path_kappa(kernel: str, solver: str) -> float:
    """``kappa = sup_x sqrt(K(x, x))`` of the kernel the solver path minimises over.

    The exact path: the kernel's own bound (:data:`dperm.kernels.KERNELS`). The
    features path: the finite-rank kernel ``z(x) . z(x')``, ``kappa = 1`` exactly
    (:data:`dperm.kernels.PAIR_MAP_KAPPA`).
    """
    return get_kernel(kernel).kappa if solver == "exact" else PAIR_MAP_KAPPA


def calibrate_prediction(loss, alpha: float, m: int, epsilon_per_query: float,
                         kappa: float) -> PredictionCalibration:
    """The whole calibration of 000 Prop. 1 and Lemma 1 for ``m`` training rows (paper notes 5, 7, 8).

    ``loss`` is a prediction loss object (:data:`PREDICTION_LOSSES`): its
    ``solution_lipschitz`` is ``C_L`` (000 Sec. 5.1 for least squares with its ``y_bound``).
    """
    lam = lambda_from_alpha(alpha)
    lipschitz = loss.solution_lipschitz(kappa, alpha)
    sensitivity = prediction_sensitivity(kappa, lipschitz, lam, m, SQUARED_NORM_GAMMA)
    radius = solution_radius_allowance(loss, sensitivity, kappa)
    calibrated = _calibrated_prediction_sensitivity(sensitivity, kappa, radius)
    noise = prediction_noise_calibration(calibrated, epsilon_per_query)
    return PredictionCalibration(
        kappa=kappa, lam=lam, strong_convexity=SQUARED_NORM_GAMMA, lipschitz=lipschitz,
        sensitivity=sensitivity, radius_allowance=radius, calibrated_sensitivity=calibrated,
        epsilon_per_query=epsilon_per_query, noise_scale=noise.noise_scale, noise_grid=noise.step, noise=noise,
    )


@dataclass(frozen=True)
class PredictionFit:
    """What :func:`fit_private_prediction` returns.

    Attributes
    ----------
    model : ExactKernelModel or RandomFeatureKernelModel
        **Secret**: holds training rows or coefficients; only :func:`answer_queries`
        applied to its ``values`` may leave the data holder.
    calibration : PredictionCalibration
        Public.
    """

    model: object
    calibration: PredictionCalibration


def fit_private_prediction(X, y, *, loss, kernel, gamma, alpha, max_iter, epsilon_per_query,
                           solver, n_components=None, feature_seed=None) -> PredictionFit:
    """Calibrate from public inputs, then solve the kernel ERM to the certified radius.

    Releases nothing and spends nothing: each later answer costs
    ``epsilon_per_query`` (the caller's budget). ``solver`` is the planned path
    (:func:`dperm.solvers.kernel.plan_prediction_solver`); ``loss`` the loss
    object (:func:`dperm.losses.get_loss`); ``y`` holds targets in
    ``[-loss.y_bound, loss.y_bound]`` (squared) or labels in {-1, +1} (hinge).

    The solve always certifies the radius the noise is calibrated for (a proven
    method finishes what ``max_iter`` fast iterations leave, :mod:`dperm.solvers.proven`).
    """
    calibration = calibrate_prediction(loss, alpha, X.shape[0], epsilon_per_query,
                                       kappa=path_kappa(kernel, solver))
    model = fit_kernel_model(X, y, solver, loss, kernel, gamma, alpha, calibration.radius_allowance,
                             max_iter, n_components=n_components, feature_seed=feature_seed)
    return PredictionFit(model=model, calibration=calibration)
