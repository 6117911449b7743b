"""What the answered rounds of a multi-round run cost a party: the ledger's per-round charges, as pure functions.

A party's ledger (:mod:`dperm.multiparty.ledger`) charges a Newton run
(:mod:`dperm.privacy.newton`) round by round, before each answer, so that a
run the coordinator abandons after ``r`` of its ``T`` rounds costs the party
what ``r`` rounds cost, and ``T`` rounds cost exactly the calibration's
``view_guarantee``.

Why a fixed Renyi order. The coordinator chooses when a run stops, possibly
from what it has seen, so the charge after ``r`` rounds must hold for a
*stopping time*, not for a horizon fixed in advance (Rogers, Roth, Ullman &
Vadhan 2016, "Privacy odometers and filters": the optimal fixed-horizon
conversion at each ``r`` is not valid then). At one order ``alpha`` it is:

1. Each round's sum is ``rho(alpha)``-RDP given the past
   (:func:`dperm.privacy.newton.round_rdp`; KLS 2021, Thm 1), so with
   ``L_r`` the privacy loss of the first ``r`` rounds,
   ``M_r = exp((alpha - 1)(L_r - r rho))`` is a supermartingale under the
   first dataset (Mironov 2017, Prop. 1's proof, one round at a time), and
   ``E[M_tau] <= 1`` for every stopping time ``tau <= T`` (optional stopping;
   the coordinator's decisions add no loss: they are functions of what it saw).
2. For every ``x``, ``(1 - e^(eps - x))_+ <= e^((alpha - 1)(x - eps)) (1/alpha)
   (1 - 1/alpha)^(alpha - 1)`` (maximise over ``x``; Canonne, Kamath & Steinke
   2020, Prop. 12's inequality). Choosing ``eps_r = r rho + log(1 - 1/alpha) -
   log(delta alpha) / (alpha - 1)`` makes the right side ``delta M_r`` at
   ``x = L_r``, hence ``E[(1 - e^(eps_tau - L_tau))_+] <= delta``: the stopped
   view is (ex-post) ``(eps_tau, delta)``-DP, and ``(eps_T, delta)``-DP in the
   ordinary sense whatever the stopping.
3. Across runs the ledger adds the charges (basic composition); with
   charges fixed before each round and a budget never exceeded, the total is
   the sum (Rogers et al. 2016, basic composition as a filter; the same
   induction applies to ex-post charges, Whitehouse, Ramdas, Rogers & Wu 2023).

``alpha`` is the order at which dp-accounting's conversion of the *whole* run
is attained (public, from the calibration), so ``eps_T`` is the calibration's
``rdp_epsilon`` exactly and ``eps_r`` grows with ``r`` up to it. ``delta`` is
charged whole from the first answered round: the argument above does not let
it shrink with ``r``. The secure-sum range event adds ``(1 + e^eps) p <=``
``range_delta`` at any stopping (:mod:`dperm.privacy.newton`, point 5).
"""

from __future__ import annotations

import math

import numpy as np

from dperm.privacy.collusion import honest_parties
from dperm.privacy.newton import RDP_ORDERS, NewtonCalibration, round_rdp

__all__ = ["newton_charge_order", "newton_prefix_guarantee"]


def newton_charge_order(calibration: NewtonCalibration) -> float:
    """The Renyi order at which dp-accounting's conversion of all ``T`` rounds is attained (public)."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    rdp = calibration.n_rounds * _round_rdp(calibration)
    return float(compute_epsilon(RDP_ORDERS, rdp.tolist(), calibration.rdp_delta)[1])


def _round_rdp(calibration: NewtonCalibration) -> np.ndarray:
    """One round's RDP as the calibration states it: the ``K - t`` honest shares of the collusion threshold."""
    return round_rdp(RDP_ORDERS, calibration.sensitivity_steps, calibration.party_sigma_squared,
                     honest_parties(calibration.n_parties, calibration.collusion_threshold), calibration.dimension)


def newton_prefix_guarantee(calibration: NewtonCalibration, rounds: int) -> tuple[float, float]:
    """``(epsilon, delta)`` a party charges once it has answered ``rounds`` rounds of a Newton run.

    ``rounds = 0`` costs nothing; ``rounds = T`` costs exactly
    :func:`~dperm.privacy.newton.view_guarantee`; in between, ``epsilon`` is
    the conversion of ``rounds x rho(alpha)`` at the fixed order of
    :func:`newton_charge_order` (module note, valid however the coordinator
    chooses when to stop) and ``delta`` the run's whole ``delta``.

    Raises ValueError unless ``0 <= rounds <= T``.
    """
    rounds = int(rounds)
    if not 0 <= rounds <= calibration.n_rounds:
        raise ValueError(f"rounds must be in [0, {calibration.n_rounds}]; got {rounds}.")
    if rounds == 0:
        return 0.0, 0.0
    order = newton_charge_order(calibration)
    index = RDP_ORDERS.index(order)
    rdp = float((rounds * _round_rdp(calibration))[index])
    # CKS 2020, Prop. 12 at one order: dp-accounting's formula (compute_epsilon), without its other branches
    epsilon = rdp + math.log1p(-1.0 / order) - math.log(calibration.rdp_delta * order) / (order - 1.0)
    return max(0.0, epsilon), calibration.rdp_delta + calibration.range_delta
