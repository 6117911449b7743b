"""What the papers' learning theory advises: the parameter choices of Nie & Wang's learning rates.

Advisory only: nothing here touches data or spends privacy budget. The
theorems hold up to constants the papers leave unnamed ("for some constant C");
each function says which constants it sets to 1, so the numbers are
*shapes* (how things scale with ``m``, ``d``, ``epsilon``) rather than
guarantees. Regularisation conventions follow the paper note 7:
003/004 regularise with ``Lambda/2 ||w||^2`` (dperm's ``alpha``), Nie & Wang
(000, 002) with ``lambda ||f||^2``, so ``alpha = 2 lambda``. The learning-rate
experiment (:mod:`dperm.experiments.learning_rates`) sets its parameters with them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dperm.validation import check_positive, check_positive_int

__all__ = ["ParameterChoice", "least_squares_parameter_choice", "nie_wang_parameter_choice"]


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
