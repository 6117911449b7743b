"""DP-GD baseline for the benchmarks: full-batch noisy gradient descent on L2-regularised logistic loss.

The "usual alternative" to objective perturbation under ``(epsilon, delta)``-DP (issue 17,
section 2). It is a *benchmark baseline*, not a dperm estimator: its noise comes from
numpy's float Gaussian sampler, which is fine for measuring accuracy and not for a
release (dperm's own mechanisms use :mod:`dperm.mechanisms.noise`).

Algorithm (labels ``s_i in {-1, +1}``, rows projected onto the public norm ball ``R`` per
record, a constant feature ``intercept_scaling`` appended when ``fit_intercept``, so
every row has norm ``<= C = sqrt(R^2 + intercept_scaling^2)``)::

    w_0 = 0
    for t = 0 .. T-1:
        g_i = clip_C( -s_i x_i sigmoid(-s_i w_t.x_i) )        # per-example gradient, ||g_i|| <= C
        w_{t+1} = w_t - eta * ( mean_i g_i + alpha w_t + N(0, (z_T * 2C/n)^2 I) )
    release w_T

Privacy (replace-one neighbours, the notion of dperm's records, ``n`` public):

1. **Sensitivity.** Replacing one record changes one ``g_i``, each of norm ``<= C`` after
   clipping, so ``mean_i g_i`` moves by at most ``2C/n`` in L2, whatever ``w_t`` is; the
   ``alpha w_t`` term does not depend on the data.
2. **Composition.** ``w_t`` is a function of the earlier noisy gradients, so the run is an
   adaptive composition of ``T`` Gaussian mechanisms of noise multiplier
   ``z_T = sigma / (2C/n)``. The T-fold composition of the Gaussian mechanism with
   multiplier ``z_T`` is exactly the Gaussian mechanism with multiplier ``z_T / sqrt(T)``,
   i.e. ``mu``-GDP with ``mu = sqrt(T) / z_T`` (Dong, Roth & Su 2022, "Gaussian
   Differential Privacy", JRSS-B, Cor. 3.3), and ``mu``-GDP is ``(epsilon, delta)``-DP iff
   ``delta >= Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)`` (ibid. Cor. 2.13;
   Balle & Wang 2018, Thm 8, the analytic Gaussian mechanism). :func:`noise_multiplier`
   solves that equality for the largest ``mu`` (smallest ``z_T``). This is the exact
   privacy profile, the one dp-accounting's PLD accountant computes up to its
   discretisation (on Adult at epsilon 1, T = 242: 0.9999999989 for target 1);
   ``tests/tooling/test_dpgd_baseline.py`` checks the calibration against dp-accounting's PLD and RDP
   epsilons and that a quarter of the noise misses the target.
3. **Release.** ``w_T`` is post-processing of the noisy gradients.

Hyperparameters: a fixed rule of public quantities only (``n``, ``d``, ``epsilon``,
``delta``, ``C``), derived from the standard noisy-GD bound, **not tuned on the Adult or
KDDCup99 test error** (nor on any of their rows). With step ``eta = 1/beta`` (``beta = C^2/4
+ alpha``, the smoothness of the objective), the optimisation error decays like
``F0 exp(-T alpha / beta)`` (``F0 = log 2``, the loss at ``w = 0``) and the noise adds
about ``T d s^2 z_1^2 / (4 alpha)`` (``s = 2C/n``, ``z_1`` the one-step multiplier at
``(epsilon, delta)``; ``z_T = sqrt(T) z_1`` exactly, by the GDP composition above). Minimising over
``T`` gives ``T* = (beta/alpha) log(4 alpha^2 F0 / (beta d s^2 z_1^2))``; balancing the
remaining noise ``~ beta d s^2 z_1^2 / (2 alpha^2)`` against the bias ``alpha B^2 / 2``
gives ``alpha = (beta d s^2 z_1^2 / B^2)^(1/3)``, with ``B = ASSUMED_SOLUTION_NORM`` a
declared public prior on ``||w*||``. ``T`` is clipped to ``[T_MIN, T_MAX]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, log_ndtr

#: Public prior on the norm of the unregularised solution (unit-norm rows, logistic loss).
ASSUMED_SOLUTION_NORM = 10.0
#: Bounds on the number of full-batch steps.
T_MIN, T_MAX = 10, 1000
#: Loss at w = 0 (log 2 for the logistic loss): the initial optimisation error bound.
INITIAL_LOSS = math.log(2.0)
#: Curvature bound of the logistic loss (sup of sigmoid').
LOGISTIC_CURVATURE = 0.25


@dataclass(frozen=True)
class DPGDPlan:
    """Public hyperparameters and calibration of one DP-GD run.

    Attributes
    ----------
    alpha, step, n_steps : float, float, int
        Regularisation, step size ``eta`` and ``T``.
    clip : float
        ``C``, the per-example gradient bound (rows' norm bound with the intercept feature).
    sensitivity : float
        ``2C/n``, the replace-one L2 sensitivity of the mean clipped gradient.
    noise_multiplier : float
        ``z_T``; the per-step noise std is ``z_T * sensitivity``.
    epsilon, delta : float
        The guarantee (exact for ``z_T``, up to the rounding toward more noise).
    """

    alpha: float
    step: float
    n_steps: int
    clip: float
    sensitivity: float
    noise_multiplier: float
    epsilon: float
    delta: float


def gdp_delta(epsilon: float, mu: float) -> float:
    """The smallest delta for which ``mu``-GDP is ``(epsilon, delta)``-DP (Dong, Roth & Su, Cor. 2.13)."""
    a = log_ndtr(-epsilon / mu + mu / 2.0)
    b = epsilon + log_ndtr(-epsilon / mu - mu / 2.0)
    return float(np.exp(a) * -np.expm1(b - a)) if a > b else 0.0


def noise_multiplier(epsilon: float, delta: float, n_steps: int) -> float:
    """The smallest ``z`` making ``n_steps`` adaptive Gaussian steps of multiplier ``z`` ``(epsilon, delta)``-DP."""
    if not (epsilon > 0 and 0 < delta < 1 and n_steps >= 1):
        raise ValueError(f"need epsilon > 0, 0 < delta < 1, n_steps >= 1; got {epsilon}, {delta}, {n_steps}.")
    upper = 1.0
    while gdp_delta(epsilon, upper) < delta:  # gdp_delta increases with mu
        upper *= 2.0
    mu = brentq(lambda m: gdp_delta(epsilon, m) - delta, 0.0 + 1e-12, upper, xtol=1e-14, rtol=1e-14)
    return math.sqrt(n_steps) / mu * (1.0 + 1e-9)  # round toward more noise


def accounted_epsilon(n_steps: int, noise_multiplier: float, delta: float, accountant: str = "pld"):
    """dp-accounting's epsilon for ``n_steps`` Gaussian steps of ``noise_multiplier`` (None if not installed).

    The cross-check recorded beside each DP-GD cell: PLD (the exact profile up to its
    discretisation) or RDP (looser).
    """
    try:
        import dp_accounting
        from dp_accounting import pld, rdp
    except ImportError:
        return None
    fresh = pld.PLDAccountant() if accountant == "pld" else rdp.RdpAccountant()
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(noise_multiplier), n_steps)
    return float(fresh.compose(event).get_epsilon(delta))


def plan(n_samples: int, n_features: int, epsilon: float, delta: float, *, data_norm: float = 1.0,
         fit_intercept: bool = True, intercept_scaling: float = 1.0) -> DPGDPlan:
    """The public rule for ``(alpha, eta, T)`` and the calibrated noise (module docstring)."""
    if not delta > 0:
        raise ValueError("DP-GD (Gaussian noise) needs delta > 0; it has no pure-epsilon form.")
    d = n_features + (1 if fit_intercept else 0)
    clip = math.sqrt(data_norm**2 + (intercept_scaling**2 if fit_intercept else 0.0))
    sensitivity = 2.0 * clip / n_samples
    z_one = noise_multiplier(epsilon, delta, 1)
    noise_one = d * (sensitivity * z_one) ** 2
    smooth = LOGISTIC_CURVATURE * clip**2
    alpha = (smooth * noise_one / ASSUMED_SOLUTION_NORM**2) ** (1.0 / 3.0)
    beta = smooth + alpha
    ratio = 4.0 * alpha**2 * INITIAL_LOSS / (beta * noise_one)
    n_steps = int(min(T_MAX, max(T_MIN, math.ceil(beta / alpha * math.log(max(ratio, 1.0))))))
    return DPGDPlan(alpha=alpha, step=1.0 / beta, n_steps=n_steps, clip=clip, sensitivity=sensitivity,
                    noise_multiplier=noise_multiplier(epsilon, delta, n_steps), epsilon=epsilon, delta=delta)


def _design(X, data_norm, fit_intercept, intercept_scaling):
    X = np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=1)
    X = X * np.minimum(1.0, data_norm / np.maximum(norms, np.finfo(float).tiny))[:, None]
    if fit_intercept:
        X = np.hstack([X, np.full((X.shape[0], 1), float(intercept_scaling))])
    return X


def clipped_mean_gradient(Z, signs, w, clip, row_norms=None):
    """Mean over rows of the per-example logistic gradients, each clipped to L2 norm ``clip``.

    ``row_norms`` (the rows' L2 norms) may be passed to save recomputing them every step.
    """
    weights = -signs * expit(-signs * (Z @ w))  # g_i = weights_i * z_i
    row_norms = np.linalg.norm(Z, axis=1) if row_norms is None else row_norms
    norms = np.abs(weights) * row_norms
    weights = weights * np.minimum(1.0, clip / np.maximum(norms, np.finfo(float).tiny))
    return Z.T @ weights / Z.shape[0]


class DPGDLogisticRegression:
    """Full-batch DP gradient descent for binary logistic regression (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        The ``(epsilon, delta)``-DP target, replace-one neighbours; ``delta > 0``.
    classes : sequence of two labels
        The public label set; the second is the positive class.
    data_norm, fit_intercept, intercept_scaling : as in :class:`dperm.PrivateLogisticRegression`.
    random_state : int or None
        Seed of the (float) Gaussian noise; for the benchmark's reproducibility.
    """

    def __init__(self, epsilon, delta, classes, *, data_norm=1.0, fit_intercept=True,
                 intercept_scaling=1.0, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.random_state = random_state

    def fit(self, X, y):
        """Run ``T`` noisy full-batch steps from ``w = 0`` and keep the last iterate."""
        self.classes_ = np.asarray(self.classes)
        signs = np.where(np.asarray(y) == self.classes_[1], 1.0, -1.0)
        Z = _design(X, self.data_norm, self.fit_intercept, self.intercept_scaling)
        self.plan_ = plan(Z.shape[0], np.shape(X)[1], self.epsilon, self.delta, data_norm=self.data_norm,
                          fit_intercept=self.fit_intercept, intercept_scaling=self.intercept_scaling)
        p, rng = self.plan_, np.random.default_rng(self.random_state)
        sigma = p.noise_multiplier * p.sensitivity
        w, row_norms = np.zeros(Z.shape[1]), np.linalg.norm(Z, axis=1)
        for _ in range(p.n_steps):
            noisy = clipped_mean_gradient(Z, signs, w, p.clip, row_norms) + rng.normal(0.0, sigma, size=w.shape)
            w = w - p.step * (noisy + p.alpha * w)
        self.coef_ = w[: np.shape(X)[1]][None, :]
        self.intercept_ = np.array([w[-1] * self.intercept_scaling if self.fit_intercept else 0.0])
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=float) @ self.coef_[0] + self.intercept_[0]

    def predict(self, X):
        return np.where(self.decision_function(X) > 0, self.classes_[1], self.classes_[0])
