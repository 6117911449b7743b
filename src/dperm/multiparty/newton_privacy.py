"""The Newton protocol's calibration at the boundary: checked public inputs, and a party's check of a set-up.

The privacy arithmetic and its proof (sensitivity, grid, distributed
discrete Gaussian, composition, secure-sum range) are in
:mod:`dperm.privacy.newton`, which trusts its inputs. Here:
:func:`calibrate_newton` checks the public inputs (and that the loss is one
of :data:`NEWTON_LOSSES`) before calibrating, and
:func:`check_newton_calibration` is a party's recomputation and refusal of
an announced set-up against its own floor.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from functools import partial

from dperm.catalog import loss_names
from dperm.multiparty.privacy import CALIBRATION_RTOL, refuse_setup  # one tolerance, one refusal
from dperm.privacy.collusion import DEFAULT_COLLUSION_THRESHOLD, check_collusion_threshold
from dperm.privacy.newton import NewtonCalibration, newton_calibration, view_guarantee
from dperm.privacy.psgd import PartyFloor, check_collusion_floor, check_open_delta
from dperm.validation import check_epsilon, check_positive, check_positive_int

__all__ = [
    "CALIBRATION_RTOL", "DEFAULT_GRADIENT_SHARE", "NEWTON_LOSSES", "calibrate_newton",
    "check_newton_calibration",
]

#: Default share of each round's privacy loss spent on the gradient (the rest on the Hessian):
#: the noisy Newton iteration's fixed point depends on the gradient only, the Hessian sets its speed.
DEFAULT_GRADIENT_SHARE = 0.75
#: Losses the protocol accepts: twice differentiable, with ``0 <= phi'' <= c``.
NEWTON_LOSSES = loss_names(multiparty=True)


def calibrate_newton(*, epsilon, delta, alpha, n_rounds, n_samples_by_party, n_features, loss, data_norm,
                     gradient_share=DEFAULT_GRADIENT_SHARE,
                     collusion_threshold=DEFAULT_COLLUSION_THRESHOLD) -> NewtonCalibration:
    """Calibrate the Newton protocol from public inputs (the proof is the note of :mod:`dperm.privacy.newton`).

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    alpha : float > 0
    n_rounds : int >= 1
    n_samples_by_party : sequence of int
        The public ``N_k`` (at least two parties).
    n_features : int
    loss : dperm.losses.MarginLoss
        Twice differentiable with ``0 <= phi'' <= curvature`` (logistic or Huber).
    data_norm : float > 0
    gradient_share : float in (0, 1)
    collusion_threshold : int in [0, K - 1], default=1
        ``t``: every party's noise share is sized so that the guarantee holds
        when the coordinator also knows the noise of up to ``t`` parties
        (:mod:`dperm.privacy.collusion`).

    Returns
    -------
    NewtonCalibration
    """
    epsilon = check_epsilon(epsilon)
    delta = check_open_delta(delta)
    alpha = check_positive(alpha, "alpha", "alpha is the L2 regularisation strength (lambda).")
    data_norm = check_positive(data_norm, "data_norm", "data_norm is a public bound on each row's L2 norm.")
    n_rounds = check_positive_int(n_rounds, "n_rounds")
    n_features = check_positive_int(n_features, "n_features")
    sizes = tuple(check_positive_int(size, "n_samples_by_party") for size in n_samples_by_party)
    if len(sizes) < 2:
        raise ValueError(f"the Newton protocol needs at least 2 parties; got {len(sizes)}.")
    collusion_threshold = check_collusion_threshold(collusion_threshold, len(sizes))
    return _calibrate_public(epsilon, delta, alpha, n_rounds, (sum(sizes), len(sizes), max(sizes)), n_features,
                             loss, data_norm, gradient_share, collusion_threshold)


def _calibrate_public(epsilon, delta, alpha, n_rounds, sizes, n_features, loss, data_norm, gradient_share,
                      collusion_threshold):
    """:func:`calibrate_newton` from ``sizes = (N, K, max N_k)``, which is all it depends on."""
    if not (isinstance(gradient_share, (int, float)) and 0.0 < float(gradient_share) < 1.0):
        raise ValueError(f"gradient_share must be a number in the open interval (0, 1); got {gradient_share!r}.")
    if getattr(loss, "curvature", None) is None or getattr(loss, "name", None) not in NEWTON_LOSSES:
        raise ValueError(f"the Newton protocol needs a loss among {NEWTON_LOSSES} (bounded second "
                         f"derivative); got {getattr(loss, 'name', loss)!r}.")
    return newton_calibration(epsilon, delta, float(alpha), n_rounds, sizes, n_features, loss.name,
                              float(loss.lipschitz), float(loss.curvature), float(data_norm), float(gradient_share),
                              collusion_threshold)


# -- a party's check ---------------------------------------------------------------------------------

#: A party's refusal of the coordinator's Newton set-up.
_refuse = partial(refuse_setup, setup="Newton set-up")


def check_newton_calibration(announced: NewtonCalibration, floor: PartyFloor, *, loss, data_norm, n_samples,
                             n_features, party_id=0) -> NewtonCalibration:
    """A party's check of the coordinator's Newton set-up, before it draws or sends anything.

    The party recomputes the calibration from the announced public inputs
    with its own loss and ``data_norm``; it refuses fewer rounds of budget
    than it allows, a size that cannot hold its rows, a collusion threshold
    ``t`` below its floor's ``min_collusion_threshold`` (the announced ``t``
    is an input of the recomputation, so the noise must be sized for it),
    less noise than its recomputation, any derived number that differs, or a
    guarantee at ``t`` colluders above its floor.

    Returns
    -------
    NewtonCalibration
        The party's own recomputation.
    """
    if announced.n_rounds > floor.max_rounds:
        _refuse(party_id, f"it asks for n_rounds={announced.n_rounds} answers and this party answers at most "
                          f"max_rounds={floor.max_rounds}.")
    if announced.n_features != n_features:
        _refuse(party_id, f"it is for d={announced.n_features} features and this party has {n_features}.")
    if n_samples > announced.max_party_samples:
        _refuse(party_id, f"it bounds every party's rows by {announced.max_party_samples} and this party has "
                          f"{n_samples}.")
    check_collusion_floor(announced.collusion_threshold, announced.n_parties, floor, party_id, _refuse)
    sizes = (announced.n_samples, announced.n_parties, announced.max_party_samples)
    if not (announced.n_parties >= 2 and announced.n_parties - 1 + announced.max_party_samples
            <= announced.n_samples <= announced.n_parties * announced.max_party_samples):
        _refuse(party_id, f"its N={announced.n_samples} cannot be K={announced.n_parties} parties of at most "
                          f"{announced.max_party_samples} rows.")
    try:
        recomputed = _calibrate_public(
            check_epsilon(announced.epsilon), check_open_delta(announced.delta), float(announced.alpha),
            check_positive_int(announced.n_rounds, "n_rounds"), sizes, check_positive_int(announced.n_features,
                                                                                          "n_features"),
            loss, float(data_norm), float(announced.gradient_share),
            check_collusion_threshold(announced.collusion_threshold, announced.n_parties))
    except (ValueError, TypeError) as error:
        _refuse(party_id, f"its public inputs are invalid ({error})")
    if announced.party_sigma_squared < recomputed.party_sigma_squared * (1.0 - CALIBRATION_RTOL):
        _refuse(party_id, f"its per-party noise {announced.party_sigma_squared!r} is smaller than "
                          f"{recomputed.party_sigma_squared!r}, which this party recomputes (too little noise).")
    for name, theirs in asdict(announced).items():
        ours = getattr(recomputed, name)
        same = theirs == ours if isinstance(ours, str) else math.isclose(theirs, ours, rel_tol=CALIBRATION_RTOL)
        if not same:
            _refuse(party_id, f"its {name}={theirs!r} differs from {ours!r}, which this party recomputes from "
                              "the announced public inputs.")
    epsilon, delta = view_guarantee(recomputed)
    if epsilon > floor.max_epsilon or delta > floor.max_delta or announced.epsilon > floor.max_epsilon:
        _refuse(party_id, f"the coordinator's view with {recomputed.collusion_threshold} colluding parties is "
                          f"({epsilon:.4g}, {delta:.3g})-DP, above this party's "
                          f"max_epsilon={floor.max_epsilon:g}, max_delta={floor.max_delta:g}.")
    return recomputed
