"""Statistical checks of what one party sends: its reply minus the exact statistic, against the calibration.

Shared by the reply-noise tests of every deployed reply path (in process and over Flower). Each check
recomputes nothing from dperm's own noise code: the test computes the noise-free statistic from the
party's shard and the public broadcast, subtracts it from the reply, and compares the residual with the
law the calibration names, on three counts:

- **centre**: each coordinate's mean is 0 (a z-test per coordinate with the law's exact variance,
  Bonferroni over the coordinates): catches a negated or wrong statistic;
- **scale**: the mean square equals the law's variance (for Gaussian laws ``sum z^2 / sigma^2`` is
  chi-square with ``n`` degrees of freedom, exactly; for the discrete Laplace a normal approximation
  with the law's exact fourth moment): catches a party with no noise, half the noise, or the whole
  ``K``-party noise where one party's share is calibrated;
- **shape**: a chi-square goodness-of-fit test over ``BINS`` bins of equal mass under the law (a KS test
  for the continuous Gaussian): catches the wrong law at the right variance.

Every p-value is two-sided where that makes sense, and a check passes when each is above
``FALSE_ALARM``: an honest party fails a check with probability about ``3 * FALSE_ALARM`` per law
(union bound; asymptotic for the chi-square and normal approximations). The tests draw from fixed
seeds, so they are deterministic; the bound says how rare a failing seed is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from tests._multiparty_data import make_data

#: The p-value under which a check fails (per check; about 3 checks per law).
FALSE_ALARM = 1e-6
#: Bins of equal mass in the chi-square goodness-of-fit test.
BINS = 20


@dataclass(frozen=True)
class NoiseReport:
    """p-values of the three checks and the measured over the calibrated standard deviation."""

    law: str
    n_draws: int
    centre_p: float
    scale_p: float
    shape_p: float
    scale_ratio: float

    def passes(self, false_alarm: float = FALSE_ALARM) -> bool:
        return min(self.centre_p, self.scale_p, self.shape_p) > false_alarm

    def __str__(self) -> str:
        return (f"{self.law}: {self.n_draws} draws, centre p={self.centre_p:.3g}, scale p={self.scale_p:.3g}, "
                f"shape p={self.shape_p:.3g}, measured/calibrated std={self.scale_ratio:.4f}")


def _two_sided(cdf: float, sf: float) -> float:
    return min(1.0, 2.0 * min(cdf, sf))


def _centre_p(noise: np.ndarray, variance: float) -> float:
    """Bonferroni over the coordinates of two-sided z-tests of each coordinate's mean."""
    noise = np.atleast_2d(np.asarray(noise, dtype=float))
    n, columns = noise.shape
    z = noise.mean(axis=0) / math.sqrt(variance / n)
    return min(1.0, columns * float(np.min(2.0 * stats.norm.sf(np.abs(z)))))


def _quantile(cdf, q: float, low: int, high: int) -> int:
    """The smallest integer ``x`` in ``(low, high]`` with ``cdf(x) >= q`` (bisection; ``cdf(high) >= q``)."""
    while high - low > 1:
        middle = (low + high) // 2
        if float(cdf(np.array([middle]))[0]) >= q:
            high = middle
        else:
            low = middle
    return high


def _chi_square_p(draws: np.ndarray, cdf) -> float:
    """Chi-square test of integer draws against an integer law with CDF ``cdf`` over about equal-mass bins.

    Bin ``k`` is ``(x_{k-1}, x_k]`` with ``x_k`` the law's ``k / BINS`` quantile (repeated quantiles of a
    narrow law merge); the outer bins are open.
    """
    draws = np.sort(np.asarray(draws, dtype=np.int64).ravel())
    spread = int(max(abs(draws[0]), abs(draws[-1]))) + 1
    while cdf(np.array([-spread]))[0] > 0.25 / BINS or cdf(np.array([spread]))[0] < 1.0 - 0.25 / BINS:
        spread *= 2  # quantiles 1/BINS .. 1 - 1/BINS lie inside [-spread, spread]
    edges = sorted({_quantile(cdf, q, -spread - 1, spread) for q in np.arange(1, BINS) / BINS})
    uppers = [*edges, None]
    lowers = [None, *edges]
    masses, observed = [], []
    for lower, upper in zip(lowers, uppers):
        upper_mass = 1.0 if upper is None else float(cdf(np.array([upper]))[0])
        lower_mass = 0.0 if lower is None else float(cdf(np.array([lower]))[0])
        masses.append(upper_mass - lower_mass)
        count_upper = draws.size if upper is None else np.searchsorted(draws, upper, side="right")
        count_lower = 0 if lower is None else np.searchsorted(draws, lower, side="right")
        observed.append(int(count_upper - count_lower))
    expected = np.array(masses) * draws.size
    return float(stats.chisquare(observed, expected).pvalue)


def gaussian_scale_p(noise: np.ndarray, sigma: float) -> float:
    """``sum z^2 / sigma^2 ~ chi^2_n`` for ``n`` draws of a centred Gaussian: two-sided p-value."""
    noise = np.asarray(noise, dtype=float).ravel()
    statistic = float(np.sum(noise**2)) / sigma**2
    return _two_sided(stats.chi2.cdf(statistic, noise.size), stats.chi2.sf(statistic, noise.size))


def discrete_gaussian_report(noise, sigma_squared: float) -> NoiseReport:
    """Integer draws (rows: replies, columns: coordinates) against ``N_Z(0, sigma^2)`` (CKS 2020).

    For ``sigma >= 2`` the discrete Gaussian's variance and its CDF at ``x + 1/2`` equal the continuous
    Gaussian's to within ``10 exp(-2 pi^2 sigma^2) < 1e-30`` (Poisson summation, CKS 2020 Sec. 2), so
    the bins' masses are ``Phi`` differences and the scale test is the Gaussian's.
    """
    noise = np.atleast_2d(np.asarray(noise))
    if not np.array_equal(noise, np.round(noise)):
        raise AssertionError("the residual is not a whole number of grid steps")
    sigma = math.sqrt(sigma_squared)
    if sigma < 2.0:
        raise ValueError("discrete_gaussian_report needs sigma >= 2 steps (the Phi approximation)")
    return NoiseReport(
        law=f"discrete Gaussian sigma^2={sigma_squared:.6g} steps^2", n_draws=noise.size,
        centre_p=_centre_p(noise, sigma_squared), scale_p=gaussian_scale_p(noise, sigma),
        shape_p=_chi_square_p(noise, lambda x: stats.norm.cdf((np.asarray(x) + 0.5) / sigma)),
        scale_ratio=math.sqrt(float(np.mean(np.asarray(noise, dtype=float) ** 2)) / sigma_squared))


def discrete_laplace_moments(scale: float) -> tuple[float, float]:
    """``(E Z^2, E Z^4)`` of the discrete Laplace ``P(z) ~ exp(-|z| / t)``, summed exactly to 1e-300."""
    q = math.exp(-1.0 / scale)
    m = np.arange(1, int(800 * scale) + 2, dtype=float)
    weights = 2.0 * (1.0 - q) / (1.0 + q) * np.exp(-m / scale)
    return float(np.sum(weights * m**2)), float(np.sum(weights * m**4))


def discrete_laplace_cdf(scale: float):
    """``P(Z <= x)`` of the discrete Laplace with scale ``t``: ``q^{-x} / (1 + q)`` below 0 (``q = e^{-1/t}``)."""
    q = math.exp(-1.0 / scale)

    def cdf(x):
        x = np.asarray(x, dtype=float)
        return np.where(x < 0, q ** (-x) / (1.0 + q), 1.0 - q ** (x + 1.0) / (1.0 + q))

    return cdf


def discrete_laplace_report(noise, scale: float) -> NoiseReport:
    """Integer draws against the discrete Laplace with scale ``t`` steps (CKS 2020, Alg. 2)."""
    noise = np.atleast_2d(np.asarray(noise))
    if not np.array_equal(noise, np.round(noise)):
        raise AssertionError("the residual is not a whole number of grid steps")
    variance, fourth = discrete_laplace_moments(float(scale))
    squares = np.asarray(noise, dtype=float).ravel() ** 2
    z = (squares.sum() - squares.size * variance) / math.sqrt(squares.size * (fourth - variance**2))
    return NoiseReport(
        law=f"discrete Laplace t={float(scale):.6g} steps", n_draws=noise.size,
        centre_p=_centre_p(noise, variance), scale_p=_two_sided(stats.norm.cdf(z), stats.norm.sf(z)),
        shape_p=_chi_square_p(noise, discrete_laplace_cdf(float(scale))),
        scale_ratio=math.sqrt(float(squares.mean()) / variance))


def gaussian_report(noise, sigma: float) -> NoiseReport:
    """Continuous draws against ``N(0, sigma^2)``: centre, exact chi-square scale test, KS shape test."""
    noise = np.atleast_2d(np.asarray(noise, dtype=float))
    return NoiseReport(
        law=f"Gaussian sigma={sigma:.6g}", n_draws=noise.size, centre_p=_centre_p(noise, sigma**2),
        scale_p=gaussian_scale_p(noise, sigma),
        shape_p=float(stats.kstest(noise.ravel(), "norm", args=(0.0, sigma)).pvalue),
        scale_ratio=math.sqrt(float(np.mean(noise**2))) / sigma)


# -- the noise-free statistics, recomputed from a shard and the public broadcast ----------------------


def rows_on_norm(X, data_norm: float) -> np.ndarray:
    """Rows longer than ``R`` scaled onto it (what every party does to its shard before anything)."""
    X = np.asarray(X, dtype=float)
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1) / data_norm)[:, None]


def logistic_sums(X, y, w):
    """``G = sum phi'(y w.x) y x`` and ``H = sum phi''(y w.x) x x^T`` for ``phi(z) = log(1 + e^-z)``."""
    margins = y * (X @ w)
    first = -1.0 / (1.0 + np.exp(margins))                 # phi'(z)
    second = 1.0 / ((1.0 + np.exp(margins)) * (1.0 + np.exp(-margins)))  # phi''(z)
    return X.T @ (first * y), (X.T * second) @ X


def newton_statistic(X, y, w, calibration) -> np.ndarray:
    """The packed vector ``a = (s_g G, s_H vech(H))`` (off-diagonal entries times sqrt 2), noise-free."""
    gradient, hessian = logistic_sums(X, y, w)
    rows, cols = np.triu_indices(X.shape[1])
    weights = np.where(rows == cols, 1.0, math.sqrt(2.0))
    return np.concatenate([calibration.gradient_scale * gradient,
                           calibration.hessian_scale * weights * hessian[rows, cols]])


def newton_residual_steps(replies, statistic, grid_step: float) -> np.ndarray:
    """``reply / g - round(a / g)``: the party's integer noise if it followed the protocol."""
    replies = np.atleast_2d(np.asarray(replies, dtype=float))
    steps = replies / grid_step
    if not np.array_equal(steps, np.round(steps)):
        raise AssertionError("a reply is not on the calibration's grid")
    return steps - np.round(np.asarray(statistic) / grid_step)


def shard(n=200, seed=5):
    """The reply-noise tests' party shard: ``make_data`` rows with the first one beyond ``R = 1``."""
    X, y = make_data(n=n, seed=seed)
    X[0] *= 2.5 / np.linalg.norm(X[0])  # one row beyond R = 1: the party scales it, the test does too
    return X, y


def broadcasts(n_rounds, d=4, seed=17):
    """Public iterates ``w_t`` as a coordinator might send them (norm <= 1)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(n_rounds, d))
    return w * (rng.uniform(0.0, 1.0, size=(n_rounds, 1)) / np.linalg.norm(w, axis=1, keepdims=True))
