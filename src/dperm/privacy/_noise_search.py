"""The bracket of the monotone search for the smallest noise multiplier that meets a budget.

PSGD's per-round Gaussian (:func:`dperm.privacy.psgd.calibrate_coordinator_gaussian`)
and the Newton protocol's discrete Gaussian shares (:mod:`dperm.privacy.newton`)
both look for the smallest noise multiplier ``z`` whose ``T`` rounds are
accounted at most ``epsilon``; both start from the same bracket.
"""

from __future__ import annotations

import math

#: Relative tolerance of the search for the noise multiplier.
NOISE_MULTIPLIER_RTOL = 1e-6


def bracket_noise_multiplier(gap, epsilon: float, delta: float, n_rounds: int) -> tuple[float, float]:
    """``(lower, upper)`` with ``gap(lower) > 0 >= gap(upper)`` and ``upper = 2 lower``.

    ``gap(z)`` is the accounted epsilon of the ``T = n_rounds`` rounds at noise
    multiplier ``z``, minus ``epsilon``: it falls as ``z`` grows. The search
    starts at the classical Gaussian bound for ``T``-fold composition,
    ``z = sqrt(T) sqrt(2 ln(1.25 / delta)) / epsilon`` (Dwork & Roth 2014,
    Thm A.1, per round, times ``sqrt(T)``), doubles it until it meets the
    budget, then halves it while its half still does.

    Parameters
    ----------
    gap : callable
        ``gap(z) -> float``, non-increasing in ``z > 0`` and negative for large ``z``.
    epsilon : float > 0
    delta : float in (0, 1)
    n_rounds : int >= 1

    Returns
    -------
    lower, upper : float
        The root of ``gap`` lies in ``(lower, upper]``.
    """
    upper = math.sqrt(n_rounds) * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    while gap(upper) > 0:
        upper *= 2.0
    lower = upper / 2.0
    while gap(lower) <= 0:
        upper, lower = lower, lower / 2.0
    return lower, upper
