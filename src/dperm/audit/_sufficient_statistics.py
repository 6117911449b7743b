"""Audit of AdaSSP (:mod:`dperm.mechanisms.sufficient_statistics`) on a canary pair.

The pair moves all three releases at once. ``D`` holds ``n - 1`` rows ``R e_1`` with
target 1 and the canary ``(R e_1, 1)``; ``D'`` replaces the canary by ``(R e_2, 1)``:

- the Gram matrix moves by ``R^2 (e_1 e_1^T - e_2 e_2^T)``, Frobenius norm ``sqrt(2) R^2``:
  its sensitivity, attained;
- ``lambda_min`` moves from 0 to ``R^2`` (``n >= 3``): its sensitivity, attained;
- the moment vector moves by ``R (e_1 - e_2)``, ``sqrt(2) R`` of its ``2 R``.

The statistic is the privacy-loss random variable of the three releases (the log
density ratio of the noise laws centred at ``D``'s and ``D'``'s statistics, summed over
the releases), so the threshold test is the likelihood-ratio test. Its largest value is
about ``0.49 + 0.49 / sqrt(2) + 0.02 = 0.86`` of the epsilon the mechanism is calibrated for
(pure form: the shares of :data:`~dperm.privacy.sufficient_statistics.PURE_SHARES`, the
moment moving ``1 / sqrt(2)`` of its sensitivity); a copy calibrated for ``4 epsilon``
(``noise_factor=0.25``) exceeds the claim.
"""

from __future__ import annotations

import numpy as np

from dperm.audit._core import audit
from dperm.audit._noise import under_noised_label, with_scaled_noise
from dperm.validation import check_delta, check_epsilon, check_positive, check_random_state


def _canary_pair(n_samples: int, data_norm: float):
    rows = np.zeros((n_samples, 2))
    rows[:, 0] = data_norm
    X_prime = rows.copy()
    X_prime[-1] = [0.0, data_norm]
    y = np.ones(n_samples)
    return rows, X_prime, y


def _statistics(X, y):
    from dperm.privacy.sufficient_statistics import symmetric_to_vector

    gram = X.T @ X
    return symmetric_to_vector(gram), X.T @ y, np.array([np.linalg.eigvalsh(gram)[0]])


def _log_density(release, centre, value) -> float:
    """``log`` of the release's noise density at ``value - centre`` (up to a constant)."""
    difference = np.asarray(value, dtype=float) - centre
    if release.noise_distribution == "discrete-gaussian":
        return -float(difference @ difference) / (2.0 * release.noise_scale**2)
    if release.noise_distribution == "discrete-l2-laplace":
        return -float(np.linalg.norm(difference)) / release.noise_scale
    return -float(np.abs(difference).sum()) / release.noise_scale


def audit_sufficient_statistics(epsilon, delta=0.0, *, n_samples=20, data_norm=1.0, n_runs=2000,
                                confidence=0.95, threshold_fraction=0.25, noise_factor=1.0,
                                random_state=None):
    """Audit AdaSSP (pure for ``delta == 0``, else its Gaussian form) on the canary pair above.

    Parameters
    ----------
    epsilon, delta : float
        The claim under test: ``mechanism="adassp"`` for ``delta == 0``,
        ``"gaussian_adassp"`` otherwise.
    n_samples : int, default=20
        Rows of each dataset (at least 3).
    data_norm : float, default=1
    n_runs, confidence, threshold_fraction
        As in :func:`dperm.audit.audit`.
    noise_factor : float, default=1
        Runs the mechanism calibrated for ``epsilon / noise_factor``
        (:func:`~dperm.audit.with_scaled_noise`); ``0.25`` must FAIL.
    random_state : None, int or numpy Generator

    Returns
    -------
    AuditResult
    """
    from dperm.losses import SquaredLoss
    from dperm.mechanisms import ERMProblem
    from dperm.mechanisms.sufficient_statistics import (
        gaussian_sufficient_statistics_perturbation,
        sufficient_statistics_perturbation,
    )

    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    noise_factor = check_positive(noise_factor, "noise_factor")
    if n_samples < 3:
        raise ValueError(f"n_samples must be at least 3 (lambda_min of D is then 0); got {n_samples!r}.")
    gaussian = delta > 0
    mechanism = (gaussian_sufficient_statistics_perturbation if gaussian
                 else sufficient_statistics_perturbation)
    run = mechanism if noise_factor == 1.0 else with_scaled_noise(mechanism, noise_factor)
    X, X_prime, y = _canary_pair(int(n_samples), float(data_norm))
    loss = SquaredLoss(1.0)
    problems = [ERMProblem(A, y, loss, 0.0, float(data_norm)) for A in (X, X_prime)]
    centres, centres_prime = _statistics(X, y), _statistics(X_prime, y)

    def runner(problem):
        return lambda rng: run(problem, epsilon, delta, rng, 0.0, 0)

    def privacy_loss(output):
        values = (output.gram, output.moment, np.array([output.min_eigenvalue]))
        return sum(_log_density(release, a, v) - _log_density(release, b, v)
                   for release, a, b, v in zip(output.calibration.releases, centres,
                                               centres_prime, values))

    name = "gaussian_adassp" if gaussian else "adassp"
    label = under_noised_label(f"{name}, canary pair n={n_samples}, d=2, data_norm={data_norm:g}, "
                               "statistic=privacy loss of the three releases", noise_factor)
    seed = check_random_state(random_state)
    return audit(runner(problems[0]), runner(problems[1]), privacy_loss, epsilon, delta,
                 n_runs=n_runs, confidence=confidence, threshold_fraction=threshold_fraction,
                 random_state=seed, label=label)


__all__ = ["audit_sufficient_statistics"]
