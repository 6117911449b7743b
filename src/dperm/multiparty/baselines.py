"""Local-aggregation baseline of Pathak, Rane & Raj (2010), as 004 eq. 5 states it.

Each party ``P_k`` minimises its own regularised objective ``J_k`` (004
eq. 4) and the released classifier is ``w_priv = (1/K) sum_k w_k + eta``
(004 eq. 5). The average has L2 sensitivity ``2 L R / (K n_min lambda)``
(paper note 12; :func:`~dperm.privacy.sensitivity.local_aggregation_sensitivity`),
so ``eta`` is drawn with density ``~ exp(-||eta|| / scale)``, ``scale =
sensitivity / epsilon`` (004 eq. 2; pure epsilon-DP). The dependence on
the smallest party, ``n_min``, is what PSGD avoids (004 Sec. 5-6).

Engine-free protocol: every party sends ``w_k / K`` through the same
:class:`~dperm.multiparty.secure_sum.SecureSum` as PSGD, and one party,
picked uniformly at random, adds ``eta`` to its vector *before* encoding
(paper note 14), so the coordinator sees only ``w_priv``. Pathak et al. hide the
noise from every party (blind selection under homomorphic encryption); here
the noise party knows ``eta`` and could recover the noiseless average from
the public ``w_priv``, so the guarantee holds against the coordinator and
the public, not against that party. Closing the gap is engine work.

Every party first checks the public calibration against its own floor
(:func:`check_local_aggregation_calibration`), recomputing the sensitivity
itself. The record holds public numbers only: the tolerance and radius the
noise is calibrated to, not what the local solves achieved, and no clipping
count (the noise-free contributions enter the secure sum).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dperm.exceptions import CalibrationRefusedError
from dperm.mechanisms.noise import discrete_laplace_calibration, round_to_grid
from dperm.multiparty.privacy import CALIBRATION_RTOL, discrete_laplace_tail_bound
from dperm.multiparty.secure_sum import clipping_range_for, summarise_reports
from dperm.privacy.local_aggregation import LocalAggregationCalibration
from dperm.privacy.multiparty_record import LocalAggregationPrivacyRecord
from dperm.privacy.psgd import PartyFloor
from dperm.privacy.references import REFERENCES
from dperm.privacy.sensitivity import local_aggregation_sensitivity
from dperm.validation import check_epsilon, check_positive, check_positive_int, check_random_state

__all__ = [
    "CLIPPING_TAIL_PROBABILITY", "LocalAggregationCalibration", "LocalAggregationResult",
    "calibrate_local_aggregation", "check_local_aggregation_calibration", "local_aggregation",
    "local_aggregation_clipping_range", "release_grid",
]

#: Probability that the noise pushes a coordinate past the public bound of
#: :func:`local_aggregation_clipping_range`.
CLIPPING_TAIL_PROBABILITY = 1e-9


def release_grid(calibration: LocalAggregationCalibration):
    """The :class:`~dperm.mechanisms.noise.GridCalibration` of the release (public inputs only)."""
    return discrete_laplace_calibration(calibration.sensitivity, calibration.n_features, calibration.epsilon)


def calibrate_local_aggregation(
    *, epsilon, alpha, n_samples_by_party, n_features, loss, data_norm, tol
) -> LocalAggregationCalibration:
    """Sensitivity and noise scale of 004 eq. 5 from public inputs (paper note 12)."""
    epsilon = check_epsilon(epsilon)
    alpha = check_positive(alpha, "alpha", "alpha is the L2 regularisation strength (lambda).")
    data_norm = check_positive(data_norm, "data_norm", "data_norm is a public bound on each row's L2 norm.")
    tol = check_positive(tol, "tol")
    n_features = check_positive_int(n_features, "n_features")
    if not loss.differentiable or not math.isfinite(loss.lipschitz):
        raise ValueError(f"local aggregation here needs a differentiable Lipschitz loss; got {loss.name}.")
    sizes = tuple(int(n) for n in n_samples_by_party)
    radius = tol / alpha
    sensitivity = local_aggregation_sensitivity(sizes, alpha, loss.lipschitz, data_norm, radius)
    grid = discrete_laplace_calibration(sensitivity, n_features, epsilon)
    return LocalAggregationCalibration(
        epsilon=epsilon,
        alpha=alpha,
        n_samples_by_party=sizes,
        n_min=min(sizes),
        n_features=n_features,
        lipschitz=float(loss.lipschitz),
        data_norm=data_norm,
        tol=tol,
        solution_radius_allowance=radius,
        sensitivity=sensitivity,
        noise_scale=grid.noise_scale,  # float-safe form of 004 eq. 2: beta = epsilon / C
        noise_grid=grid.step,
        loss=loss.name,
    )


def check_local_aggregation_calibration(calibration: LocalAggregationCalibration, floor: PartyFloor, *, loss,
                                        data_norm, n_samples, n_features, party_id=0) -> None:
    """A party's check of a local-aggregation set-up (004 eq. 5), before it solves or draws anything.

    The release is one pure ``epsilon``-DP output (one "round", ``delta = 0``),
    so the announced ``epsilon`` must be within ``floor.max_epsilon``. The
    party recomputes the sensitivity and noise scale with
    :func:`calibrate_local_aggregation` from the announced public inputs and
    its own loss and ``data_norm``, and refuses a smaller noise scale. The
    announced ``n_min`` cannot exceed its own ``N_k``.

    Raises
    ------
    CalibrationRefusedError
    """
    def refuse(reason):
        raise CalibrationRefusedError(f"party {party_id!r} refuses the local-aggregation set-up: {reason} "
                                      "Nothing was solved, drawn or sent.")

    if calibration.epsilon > floor.max_epsilon:
        refuse(f"its epsilon={calibration.epsilon:g} is above this party's max_epsilon={floor.max_epsilon:g}.")
    if calibration.n_features != n_features or calibration.n_min > n_samples:
        refuse(f"it is for d={calibration.n_features} and n_min={calibration.n_min}; this party has "
               f"d={n_features} and N_k={n_samples}.")
    ours = calibrate_local_aggregation(
        epsilon=calibration.epsilon, alpha=calibration.alpha, n_samples_by_party=calibration.n_samples_by_party,
        n_features=n_features, loss=loss, data_norm=data_norm, tol=calibration.tol)
    if calibration.noise_scale < ours.noise_scale * (1.0 - CALIBRATION_RTOL):
        refuse(f"its noise_scale={calibration.noise_scale!r} is smaller than {ours.noise_scale!r}, which this "
               "party recomputes from the announced public inputs (too little noise).")


def local_aggregation_clipping_range(calibration: LocalAggregationCalibration, loss) -> float:
    """A clipping range from public constants for the contributions ``w_k / K (+ eta)``.

    ``alpha/2 ||w_k||^2 <= J_k(w_k) <= J_k(0) = phi(0)`` for a non-negative
    margin loss, so ``||w_k|| <= sqrt(2 phi(0) / alpha)`` (plus the solve's
    radius); the noise adds at most its discrete Laplace tail per coordinate.
    """
    n_parties = len(calibration.n_samples_by_party)
    local_norm = math.sqrt(2.0 * float(loss.value(0.0)) / calibration.alpha)
    local_norm += calibration.solution_radius_allowance
    noise_bound = discrete_laplace_tail_bound(release_grid(calibration), CLIPPING_TAIL_PROBABILITY)
    return clipping_range_for(local_norm / n_parties + noise_bound)


@dataclass(frozen=True)
class LocalAggregationResult:
    """``w_priv`` of 004 eq. 5 and its privacy record."""

    coef: np.ndarray
    record: LocalAggregationPrivacyRecord
    calibration: LocalAggregationCalibration


def _party_contribution(party, calibration, max_iter, add_noise: bool):
    """Party side: floor check, certified local minimiser (004 eq. 4), divided by K, plus eta if chosen."""
    check_local_aggregation_calibration(calibration, party.floor, loss=party.loss, data_norm=party.data_norm,
                                        n_samples=party.n_samples, n_features=party.n_features,
                                        party_id=party.party_id)
    # always certified (minimize_certified ends with a proven completion): the reply never depends
    # on whether the party's rows were easy to solve
    solve = party.local_minimiser(calibration.alpha, calibration.tol, max_iter)
    contribution = solve.coef / len(calibration.n_samples_by_party)
    # every party rounds to the public grid g, so the sum of the centres moves by at most
    # k steps in L1 between neighbours; the noise party adds the discrete Laplace noise
    if add_noise:
        return party.release_on_grid(contribution, release_grid(calibration))
    return round_to_grid(contribution, calibration.noise_grid)


def local_aggregation(parties, secure_sum, calibration: LocalAggregationCalibration, *,
                      max_iter=1000, random_state=None) -> LocalAggregationResult:
    """Release ``w_priv = (1/K) sum_k w_k + eta`` (004 eq. 5) through a secure sum.

    Parameters
    ----------
    parties : sequence of Party
    secure_sum : dperm.multiparty.secure_sum.SecureSum
    calibration : LocalAggregationCalibration
    max_iter : int
        Fast-solver budget of each local solve (a proven method finishes it).
    random_state : None, int or numpy Generator
        Picks the party that adds the noise.

    Returns
    -------
    LocalAggregationResult
        ``coef`` is ``epsilon``-DP for the coordinator and the public.
    """
    parties = list(parties)
    sizes = tuple(party.n_samples for party in parties)
    if sizes != calibration.n_samples_by_party:
        raise ValueError(f"the parties' sizes {list(sizes)} differ from the calibration's "
                         f"{list(calibration.n_samples_by_party)}.")
    noise_party = int(check_random_state(random_state).integers(len(parties)))
    contributions = {party.party_id: _party_contribution(party, calibration, max_iter, index == noise_party)
                     for index, party in enumerate(parties)}
    # the noise-free contributions enter the sum: no clipping count may leave the parties
    total, report = secure_sum.sum(contributions, dimension=calibration.n_features, count_clipped=False)
    record = _record(calibration, summarise_reports([report]))
    return LocalAggregationResult(coef=total, record=record, calibration=calibration)


#: The record's notes: fixed text, the same for every fit.
NOTES = (
    "One randomly chosen party adds the noise before the secure sum; that party could "
    "subtract it from the released model (Pathak et al.'s blind noise selection is not "
    "implemented), so the guarantee is against the coordinator and the public.",
    "Float-safe: every party rounds its contribution to the public power-of-two grid g and the noise "
    "party adds exact discrete Laplace noise (g times an integer), calibrated to the L1 bound of eq. "
    "5's sensitivity on that grid. The secure sum clips every contribution to [-C, C] (coordinatewise "
    "clipping is 1-Lipschitz, so it keeps the sensitivity; it would truncate the noise party's noise "
    "with probability at most 1e-9 at the default C, chosen from public constants), and its "
    "quantization is exact for values on g when g is a multiple of its step.",
    "Revealed besides the average: the public party sizes. The local solves are described by their "
    "public tolerance, not by what they achieved; no count of clipped rows or coordinates is revealed "
    "(each party warns in its own log).",
)


def _record(calibration, summary) -> LocalAggregationPrivacyRecord:
    return LocalAggregationPrivacyRecord(
        mechanism="local_aggregation",
        calibration=calibration,
        coordinator_epsilon=calibration.epsilon,
        n_parties=len(calibration.n_samples_by_party),
        n_samples=sum(calibration.n_samples_by_party),
        secure_sum=summary,
        reference=REFERENCES["local_aggregation"],
        notes=NOTES,
    )
