"""From counted errors of a distinguishing test to a lower bound on epsilon.

A mechanism ``M`` is ``(epsilon, delta)``-DP when for every pair of neighbouring
datasets ``D, D'`` and every set of outputs ``S``,
``P[M(D') in S] <= e^epsilon P[M(D) in S] + delta`` (and with ``D, D'`` swapped).
Take a test that guesses "the output came from ``D'``" on the set ``S``; its
false-positive rate is ``FPR = P[M(D) in S]`` and its false-negative rate
``FNR = P[M(D') not in S]``. The definition applied to ``S`` and to its
complement gives (Kairouz, Oh & Viswanath 2015, Thm 2.1; Jagielski, Ullman &
Oprea, NeurIPS 2020, Sec. 3; Nasr, Song, Thakurta, Papernot & Carlini,
IEEE S&P 2021, Sec. 4)

    epsilon >= log((1 - delta - FNR) / FPR)   and   epsilon >= log((1 - delta - FPR) / FNR).

The two rates are unknown; counted errors on ``m`` independent runs give
one-sided Clopper-Pearson upper bounds ``FPR_upper`` and ``FNR_upper``. Each is
taken at level ``1 - (1 - confidence) / 2``, so both hold together with
probability at least ``confidence`` (union bound), and then both inequalities
above hold with the upper bounds in place of the rates (each right-hand side
decreases in both rates). The larger of the two is the lower bound.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from dperm.validation import check_delta

#: The number of error rates bounded at once (FPR and FNR): the union bound divides
#: the allowed failure probability ``1 - confidence`` between them.
_N_RATES_BOUNDED = 2


def check_confidence(confidence) -> float:
    """Return ``confidence`` as a float after checking ``0 < confidence < 1``."""
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, numbers.Real)
        or not np.isfinite(confidence)
        or not 0 < confidence < 1
    ):
        raise ValueError(
            "confidence must be a number strictly between 0 and 1 (the probability that the "
            f"lower bound holds, e.g. 0.95); got {confidence!r}."
        )
    return float(confidence)


def _check_counts(successes, trials, name: str):
    successes = np.asarray(successes)
    trials = np.asarray(trials)
    if not (np.issubdtype(successes.dtype, np.integer) and np.issubdtype(trials.dtype, np.integer)):
        raise ValueError(f"{name} and the number of trials must be integer counts.")
    if np.any(trials < 1) or np.any(successes < 0) or np.any(successes > trials):
        raise ValueError(
            f"{name} must satisfy 0 <= {name} <= trials with trials >= 1; got "
            f"{name}={successes.tolist()!r}, trials={trials.tolist()!r}."
        )
    return successes, trials


def clopper_pearson_upper(successes, trials, level):
    """One-sided Clopper-Pearson upper bound on a binomial proportion.

    The smallest ``p`` with ``P[Bin(trials, p) <= successes] <= 1 - level``:
    ``beta.ppf(level, successes + 1, trials - successes)``, and 1 when
    ``successes == trials`` (Clopper & Pearson 1934). It covers the true
    proportion with probability at least ``level`` for every ``p``.

    Parameters
    ----------
    successes, trials : int or array of int
    level : float in (0, 1)
        One-sided coverage, e.g. 0.975.
    """
    level = check_confidence(level)
    successes, trials = _check_counts(successes, trials, "successes")
    full = successes == trials
    bound = beta.ppf(level, successes + 1, np.where(full, 1, trials - successes))
    bound = np.where(full, 1.0, bound)
    return float(bound) if bound.ndim == 0 else bound


def clopper_pearson_interval(successes: int, trials: int, confidence: float = 0.95):
    """Two-sided exact interval: each side at ``(1 + confidence) / 2``.

    The lower side is the upper bound of the failures, ``1 - upper(trials - successes)``
    (the beta quantiles are symmetric). The same numbers as
    ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")``.
    """
    level = 0.5 * (1.0 + check_confidence(confidence))
    successes, trials = _check_counts(successes, trials, "successes")
    lower = 1.0 - clopper_pearson_upper(trials - successes, trials, level)
    return lower, clopper_pearson_upper(successes, trials, level)


@dataclass(frozen=True)
class EpsilonBound:
    """The lower bound on epsilon and the rate bounds behind it.

    Attributes
    ----------
    eps_lower : float
        ``max(0, log((1 - delta - FNR_upper) / FPR_upper), log((1 - delta - FPR_upper) / FNR_upper))``.
    fpr_upper, fnr_upper : float
        One-sided Clopper-Pearson upper bounds, each at ``1 - (1 - confidence) / 2``.
    """

    eps_lower: float
    fpr_upper: float
    fnr_upper: float


def _log_ratio(numerator, denominator):
    """``log(numerator / denominator)`` where the numerator is > 0, else -inf."""
    numerator = np.asarray(numerator, dtype=float)
    safe = np.where(numerator > 0, numerator, 1.0)
    return np.where(numerator > 0, np.log(safe) - np.log(denominator), -np.inf)


def epsilon_lower_bounds(false_positives, n_negative, false_negatives, n_positive, delta,
                         confidence):
    """Vectorised core of :func:`epsilon_lower_bound`: returns ``(eps, fpr_upper, fnr_upper)``.

    Arrays of counts (e.g. one entry per candidate threshold) give arrays.
    """
    level = 1.0 - (1.0 - check_confidence(confidence)) / _N_RATES_BOUNDED
    fpr_upper = np.asarray(clopper_pearson_upper(false_positives, n_negative, level))
    fnr_upper = np.asarray(clopper_pearson_upper(false_negatives, n_positive, level))
    guess_d_prime = _log_ratio(1.0 - delta - fnr_upper, fpr_upper)
    guess_d = _log_ratio(1.0 - delta - fpr_upper, fnr_upper)
    eps = np.maximum(0.0, np.maximum(guess_d_prime, guess_d))
    return eps, fpr_upper, fnr_upper


def epsilon_lower_bound(false_positives: int, n_negative: int, false_negatives: int,
                        n_positive: int, delta: float = 0.0, confidence: float = 0.95):
    """A lower bound on epsilon that holds with probability ``confidence``.

    Parameters
    ----------
    false_positives : int
        Runs on ``D`` (the dataset without the canary) that the test called ``D'``.
    n_negative : int
        Runs on ``D`` that were tested.
    false_negatives : int
        Runs on ``D'`` that the test called ``D``.
    n_positive : int
        Runs on ``D'`` that were tested.
    delta : float
        The ``delta`` of the claim being tested.
    confidence : float in (0, 1)

    Returns
    -------
    EpsilonBound
        ``eps_lower = max(0, log((1 - delta - FNR_up) / FPR_up), log((1 - delta - FPR_up) / FNR_up))``
        (module docstring). 0 means nothing was shown.
    """
    delta = check_delta(delta)
    eps, fpr_upper, fnr_upper = epsilon_lower_bounds(
        false_positives, n_negative, false_negatives, n_positive, delta, confidence
    )
    return EpsilonBound(float(eps), float(fpr_upper), float(fnr_upper))


def largest_provable_epsilon(n_eval_runs: int, delta: float = 0.0, confidence: float = 0.95) -> float:
    """The ``eps_lower`` of a perfect test (no errors) on ``n_eval_runs`` runs per dataset.

    No audit with this many held-out runs can show more: about
    ``log(n / log(2 / (1 - confidence)))``. Choose ``n_runs`` so that this is
    well above the claimed epsilon, or the audit has no power.
    """
    if isinstance(n_eval_runs, bool) or not isinstance(n_eval_runs, numbers.Integral) or n_eval_runs < 1:
        raise ValueError(f"n_eval_runs must be an integer >= 1; got {n_eval_runs!r}.")
    return epsilon_lower_bound(0, int(n_eval_runs), 0, int(n_eval_runs), delta, confidence).eps_lower


__all__ = [
    "EpsilonBound",
    "check_confidence",
    "clopper_pearson_interval",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "epsilon_lower_bounds",
    "largest_provable_epsilon",
]

