"""What the papers' learning theory advises: parameter choices, sample sizes, error bounds.

Advisory only: nothing here touches data or spends privacy budget. The
theorems hold up to constants the papers leave unnamed ("for some constant C");
each function says which constants it sets to 1, so the numbers are
*shapes* (how things scale with ``m``, ``d``, ``epsilon``) rather than
guarantees. Regularisation conventions follow the paper note 7:
003/004 regularise with ``Lambda/2 ||w||^2`` (dperm's ``alpha``), Nie & Wang
(000, 002) with ``lambda ||f||^2``, so ``alpha = 2 lambda``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import chi2

from dperm.privacy.sensitivity import gaussian_sigma_star
from dperm.validation import check_delta, check_epsilon, check_positive, check_positive_int

__all__ = [
    "BOUNDED_MECHANISMS", "ParameterChoice", "SAMPLE_SIZE_THEOREMS", "gop_excess_risk_bound",
    "gop_noise_norm_quantile", "huber_svm_sample_size", "least_squares_parameter_choice",
    "logistic_sample_size", "nie_wang_parameter_choice", "objective_perturbation_sample_size",
    "output_perturbation_sample_size",
]


@dataclass(frozen=True)
class ParameterChoice:
    """A privacy level and a regularisation strength a theorem recommends.

    Attributes
    ----------
    epsilon : float
        The recommended privacy parameter.
    lam : float
        Nie & Wang's ``lambda`` (regulariser ``lambda ||f||^2``).
    alpha : float
        The same strength in dperm's convention, ``2 lambda`` (paper note 7).
    rate : float
        The theorem's error bound with its constant set to 1: ``m^(-exponent)``.
    rate_exponent : float
        The exponent of ``1/m`` in that bound.
    """

    epsilon: float
    lam: float
    alpha: float
    rate: float
    rate_exponent: float


def _check_unit_interval(value, name: str, upper_inclusive: bool) -> float:
    value = check_positive(value, name)
    if value > 1.0 or (value == 1.0 and not upper_inclusive):
        interval = "(0, 1]" if upper_inclusive else "(0, 1)"
        raise ValueError(f"{name} must be in {interval}; got {value!r}.")
    return value


def nie_wang_parameter_choice(m: int, beta: float) -> ParameterChoice:
    """``eps = 1/sqrt(lambda m)`` and ``lambda = m^(-1/(2 beta + 1))`` (Nie & Wang 2017, 000 Thm 4).

    Assumes the approximation error decays as ``D(lambda) <= c_beta lambda^beta``
    (000 eq. 4; ``beta = min(r, 1)`` for the SVM of 000 Sec. 5.2). Then the
    expected excess risk of output perturbation is at most
    ``(2 B_0 + 2 Omega(0) + 3 kappa^2 C_L / gamma + c_beta) m^(-beta/(2 beta + 1))``;
    ``rate`` sets that constant to 1. With this choice ``epsilon`` equals the
    rate: ``1/sqrt(lambda m) = m^(-beta/(2 beta + 1))``.

    Parameters
    ----------
    m : int
        Number of training records.
    beta : float in (0, 1]
        Exponent of the approximation error.
    """
    m = check_positive_int(m, "m")
    beta = _check_unit_interval(beta, "beta", upper_inclusive=True)
    lam = m ** (-1.0 / (2.0 * beta + 1.0))
    exponent = beta / (2.0 * beta + 1.0)
    return ParameterChoice(
        epsilon=1.0 / math.sqrt(lam * m), lam=lam, alpha=2.0 * lam,
        rate=m ** (-exponent), rate_exponent=exponent,
    )


def least_squares_parameter_choice(m: int, r: float) -> ParameterChoice:
    """``eps = m^(-min(1/3, 4r/(3+6r)))``, ``lambda = (m eps)^(-2/min(4, 3+2r))`` (Nie & Wang 2017b, 002 Thm 3).

    Private least squares with projection (002 eq. 2) when the regression
    function satisfies ``f_rho in L_K^r(L^2)`` (smoothness ``r > 0``). The
    expected excess risk is at most ``C~ m^(-min(1/3, 4r/(3+6r)))``; ``rate``
    sets ``C~`` (002 Thm 3's constant, depending on ``M``, ``kappa``, ``r``) to 1.

    Parameters
    ----------
    m : int
        Number of training records.
    r : float > 0
        Regularity of the regression function.
    """
    m = check_positive_int(m, "m")
    r = check_positive(r, "r", "r is the regularity of f_rho in L_K^r (002 Thm 3).")
    exponent = min(1.0 / 3.0, 4.0 * r / (3.0 + 6.0 * r))
    epsilon = m ** (-exponent)
    lam = (1.0 / (m * epsilon)) ** (2.0 / min(4.0, 3.0 + 2.0 * r))
    return ParameterChoice(
        epsilon=epsilon, lam=lam, alpha=2.0 * lam, rate=m ** (-exponent), rate_exponent=exponent,
    )


def _check_sample_size_inputs(f0_norm, dimension, epsilon_g, epsilon_p, delta):
    check_positive(f0_norm, "f0_norm", "f0_norm is ||f_0||, the norm of the reference classifier.")
    check_positive_int(dimension, "dimension")
    check_epsilon(epsilon_g, "epsilon_g")
    check_epsilon(epsilon_p, "epsilon_p")
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("delta must be in (0, 1): it is the failure probability of the bound.")


def output_perturbation_sample_size(
    f0_norm: float, dimension: int, epsilon_g: float, epsilon_p: float, delta: float, c: float
) -> float:
    """Training size for output perturbation to reach excess loss ``epsilon_g`` (003 Thm 3, C = 1).

    ``n > C max(||f0||^2 log(1/delta) / eps_g^2,
    d log(d/delta) ||f0|| / (eps_g eps_p),
    d log(d/delta) c^(1/2) ||f0||^2 / (eps_g^(3/2) eps_p))`` gives
    ``L(f_priv) <= L* + eps_g`` with probability ``1 - 2 delta``. Assumes
    ``||x|| <= 1``, a differentiable loss whose derivative is ``c``-Lipschitz,
    ``N = ||f||^2 / 2``. The unnamed constant ``C`` is set to 1.
    """
    _check_sample_size_inputs(f0_norm, dimension, epsilon_g, epsilon_p, delta)
    c = check_positive(c, "c", "c is the Lipschitz constant of loss' (003 Thm 3).")
    log_d = dimension * math.log(dimension / delta)
    return max(
        f0_norm**2 * math.log(1.0 / delta) / epsilon_g**2,
        log_d * f0_norm / (epsilon_g * epsilon_p),
        log_d * math.sqrt(c) * f0_norm**2 / (epsilon_g**1.5 * epsilon_p),
    )


def objective_perturbation_sample_size(
    f0_norm: float, dimension: int, epsilon_g: float, epsilon_p: float, delta: float, c: float
) -> float:
    """Training size for objective perturbation to reach excess loss ``epsilon_g`` (003 Thm 4, C = 1).

    ``n > C max(||f0||^2 log(1/delta) / eps_g^2, c ||f0||^2 / (eps_g eps_p),
    d log(d/delta) ||f0|| / (eps_g eps_p))``. Assumes ``||x|| <= 1``, a convex,
    doubly differentiable loss with ``|l'| <= 1``, ``|l''| <= c``. The unnamed
    constant ``C`` is set to 1.
    """
    _check_sample_size_inputs(f0_norm, dimension, epsilon_g, epsilon_p, delta)
    c = check_positive(c, "c", "c bounds |loss''| (003 Thm 4).")
    return max(
        f0_norm**2 * math.log(1.0 / delta) / epsilon_g**2,
        c * f0_norm**2 / (epsilon_g * epsilon_p),
        dimension * math.log(dimension / delta) * f0_norm / (epsilon_g * epsilon_p),
    )


#: 003's sample-size theorem of each mechanism it bounds: Thm 3 (output) and Thm 4 (objective).
SAMPLE_SIZE_THEOREMS = {"output": output_perturbation_sample_size,
                        "objective": objective_perturbation_sample_size}
#: The mechanisms of :data:`dperm.mechanisms.MECHANISMS` that 003 Thms 3-4 and 6-7 bound.
BOUNDED_MECHANISMS = tuple(SAMPLE_SIZE_THEOREMS)


def _sample_size_theorem(mechanism: str):
    if mechanism not in SAMPLE_SIZE_THEOREMS:
        raise ValueError(f"mechanism must be one of {BOUNDED_MECHANISMS}; got {mechanism!r}.")
    return SAMPLE_SIZE_THEOREMS[mechanism]


def logistic_sample_size(
    f0_norm: float, dimension: int, epsilon_g: float, epsilon_p: float, delta: float,
    mechanism: str = "objective",
) -> float:
    """Training size for private logistic regression (003 Corollary 5, C_1 = C_2 = 1).

    As printed: Thms 3-4 with ``c = 1/4`` absorbed into the constant, so the
    curvature disappears from the expressions. ``mechanism="output"`` (eq. 80):
    ``max(||f0||^2 log(1/delta)/eps_g^2, d log(d/delta) ||f0||/(eps_g eps_p),
    d log(d/delta) ||f0||^2/(eps_g^(3/2) eps_p))``; ``"objective"`` (eq. 82):
    ``max(||f0||^2 log(1/delta)/eps_g^2, ||f0||^2/(eps_g eps_p),
    d log(d/delta) ||f0||/(eps_g eps_p))``.
    """
    theorem = _sample_size_theorem(mechanism)
    return theorem(f0_norm, dimension, epsilon_g, epsilon_p, delta, 1.0)


def huber_svm_sample_size(
    f0_norm: float, dimension: int, epsilon_g: float, epsilon_p: float, delta: float, h: float,
    mechanism: str = "objective",
) -> float:
    """Training size for the private Huber SVM of width ``h`` (003 Corollary 6, C_1 = C_2 = 1).

    Thms 3-4 with ``c = 1/(2h)`` and the factor ``2^(-1/2)`` or ``1/2`` absorbed:
    ``"output"`` (eq. 85) has third term ``d log(d/delta) ||f0||^2 /
    (h^(1/2) eps_g^(3/2) eps_p)``, ``"objective"`` (eq. 87) second term
    ``||f0||^2 / (h eps_g eps_p)``. (Eq. 87's "with c = 1/4" is a slip: the
    proof uses the Huber bound ``c = 1/(2h)``.)
    """
    theorem = _sample_size_theorem(mechanism)
    h = check_positive(h, "h", "h is the width of the Huber loss.")
    return theorem(f0_norm, dimension, epsilon_g, epsilon_p, delta, 1.0 / h)


def gop_noise_norm_quantile(dimension: int, epsilon_tilde: float, delta: float, delta_prime: float) -> float:
    """``T-hat``: the ``1 - delta'`` quantile of ``||eta||^2`` in 004 Alg. 4 (004 Thm 5.1).

    ``P(U <= T-hat / sigma*^2) = 1 - delta'`` with ``U ~ chi^2_d``, i.e.
    ``T-hat = sigma*^2 chi2.ppf(1 - delta', d)`` with ``sigma* = sigma*(d, eps~,
    delta)`` of 004 Proc. 3 (:func:`~dperm.privacy.sensitivity.gaussian_sigma_star`).
    No constant is dropped; 004 Prop. 5.2 shows
    ``T-hat = O(d^2 log(1/delta) log(1/delta') / eps~^2)``.
    """
    delta_prime = check_delta(delta_prime, "delta_prime")
    if delta_prime == 0:
        raise ValueError("delta_prime must be in (0, 1): it is the confidence of the bound.")
    sigma_star = gaussian_sigma_star(dimension, epsilon_tilde, delta)
    return sigma_star**2 * float(chi2.ppf(1.0 - delta_prime, dimension))


def gop_excess_risk_bound(
    n_samples: int, alpha: float, curvature: float, dimension: int, epsilon_tilde: float,
    delta: float, delta_prime: float, data_norm: float = 1.0, lipschitz: float = 1.0,
) -> float:
    """``J(w_gop) - J(w*) <= (c + lambda) T-hat / (2 N^2 lambda^2)`` w.p. ``1 - delta'`` (004 Thm 5.1).

    Assumes ``Delta = 0`` (no extra regularisation), ``|phi'| <= 1``,
    ``phi'' <= c``, ``||x|| <= 1``; 004's ``lambda`` is dperm's ``alpha``
    (004 eq. 1 regularises with ``lambda/2 ||w||^2``). No constant is dropped.
    With data norm ``R`` and Lipschitz constant ``L`` (paper note 2) the noise has
    ``sigma = L R sigma*`` and the Hessian norm is at most ``c R^2 + lambda``,
    so the bound becomes ``(c R^2 + lambda) (L R)^2 T-hat / (2 N^2 lambda^2)``;
    the defaults ``R = L = 1`` give the theorem as printed.

    Parameters
    ----------
    n_samples : int
        ``N``.
    alpha : float
        ``lambda`` of 004 (dperm's ``alpha``).
    curvature : float
        ``c``.
    dimension, epsilon_tilde, delta, delta_prime
        As in :func:`gop_noise_norm_quantile`.
    data_norm, lipschitz : float, default=1
        ``R`` and ``L`` of paper note 2.
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    alpha = check_positive(alpha, "alpha")
    curvature = check_positive(curvature, "curvature")
    data_norm = check_positive(data_norm, "data_norm")
    lipschitz = check_positive(lipschitz, "lipschitz")
    t_hat = gop_noise_norm_quantile(dimension, epsilon_tilde, delta, delta_prime)
    hessian_bound = curvature * data_norm**2 + alpha
    noise_scale = (lipschitz * data_norm) ** 2
    return hessian_bound * noise_scale * t_hat / (2.0 * n_samples**2 * alpha**2)
