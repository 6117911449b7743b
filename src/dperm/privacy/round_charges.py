"""What the answered rounds of a multi-round run cost a party: the ledger's per-round charges, as pure functions.

A party's ledger (:mod:`dperm.multiparty.ledger`) charges a Newton run
(:mod:`dperm.privacy.newton`) or a PSGD run (:mod:`dperm.privacy.psgd`)
round by round, before each answer, so that a run the coordinator abandons
after ``r`` of its ``T`` rounds costs the party what ``r`` rounds cost, and
``T`` rounds cost exactly the calibration's guarantee (Newton's
``view_guarantee``; PSGD's coordinator view as the party computes it,
:func:`dperm.multiparty.privacy.party_view`, except with
``coordinator_accountant="pld"``: section "PSGD" below).

Newton
------

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

PSGD
----
Each round of 004's PSGD releases one secure sum of the parties' replies
``grad G_k(w_t) + rho_t^k + eta^k``; the ledger charges what the rounds
answered so far cost with respect to one record of the party, at a charge
valid for a stopping time, as above. ``eta^k`` is drawn once from public
numbers only (it does not depend on the data), so it costs nothing; the
rounds' noise ``rho_t^k`` is what the charge rests on.

*004's scheme* (``rho_t^k`` float-safe discrete Laplace, each reply by
itself ``eps_round``-DP: :func:`dperm.multiparty.privacy.round_noise_calibration`).
The calibration's guarantee for ``T`` rounds, as the party computes it, is
``(eps_T, delta_T)``: the tighter of basic composition ``(T eps_round, 0)``
and advanced composition at the party's ``max_delta`` as slack
(:func:`dperm.privacy.psgd.coordinator_view_guarantee`). After ``r``
answered rounds the party charges ``(min(r eps_round, eps_T), delta_T)``:

1. ``r eps_round`` holds *surely*: with ``L_t`` the privacy loss of the
   first ``t`` rounds, each round's conditional loss is at most
   ``eps_round`` in absolute value (pure DP), so ``|L_tau| <= tau eps_round``
   for every stopping time ``tau`` (basic composition is a valid privacy
   filter and odometer for pure DP: Rogers, Roth, Ullman & Vadhan 2016,
   Sec. 3);
2. ``eps_T`` holds at every stopping time ``tau <= T`` with probability
   ``1 - delta_T``: a coordinator that stops after ``tau`` rounds is a
   ``T``-round adaptive adversary whose last ``T - tau`` queries have
   sensitivity 0 (0-DP, hence ``eps_round``-DP, mechanisms), and the stopped
   view is a post-processing of that ``T``-round view; advanced composition
   holds for ``T`` adaptively chosen ``eps_round``-DP mechanisms (Dwork,
   Rothblum & Vadhan 2010, Thm III.3, whose proof bounds
   ``P(L_T > eps_T) <= delta_T`` by Azuma's inequality on the loss
   martingale, which the stopped martingale satisfies too);
3. so ``P(L_tau > min(tau eps_round, eps_T)) <= 0 + delta_T``: the stopped
   view is ex-post ``(min(tau eps_round, eps_T), delta_T)``-DP (in the sense
   of point 2 above: ``(1 - e^(eps - x))_+ <= 1{x > eps}``) and
   ``(eps_T, delta_T)``-DP in the ordinary sense whatever the stopping.
   ``delta_T`` (0 when basic composition is the tighter) is charged whole
   from the first answered round, as for Newton. At ``r = T`` the charge is
   ``(eps_T, delta_T)``, bit for bit the set-up's check (``eps_T <= T
   eps_round`` by construction).

*``coordinator_dp``* (Gaussian ``rho_t^k``, noise multiplier ``z`` of any
``K - t`` honest shares, :func:`dperm.privacy.psgd.calibrate_coordinator_gaussian`).
Each round's sum is the Gaussian mechanism with multiplier ``z`` given the
past, so ``rho(alpha) = alpha / (2 z^2)`` (Mironov 2017, Prop. 7; the
formula of dp-accounting's ``GaussianDpEvent``), and the Newton argument
above applies word for word at the fixed order ``alpha`` at which
dp-accounting's ``RdpAccountant`` attains its conversion of the ``T``
rounds: the charge after ``r`` rounds is dp-accounting's ``compute_epsilon``
at that one order for ``r rho(alpha)``, at the run's ``delta``, charged
whole from the first round. With ``coordinator_accountant="rdp"`` the ``T``
rounds cost exactly the calibration's guarantee. With ``"pld"`` (the
default) the calibration states the tighter PLD epsilon of the whole
``T``-round view, which holds at any stopping too (the post-processing of
point 2) but gives no bound for a prefix; taking the smaller of the PLD and
the RDP charges would need both deltas (a union of two failure events), so
the ledger charges the RDP prefix throughout and ``T`` rounds book
dp-accounting's RDP conversion, a little more than the record's PLD
epsilon (the last of :func:`psgd_round_charges`; at ``epsilon = 1``,
``delta = 1e-5`` a whole run books 1.093 for the record's 1.000, whatever
``T``, since ``z`` grows as ``sqrt(T)``). The model's guarantee is the record's; the ledger holds the
more conservative of the two.
"""

from __future__ import annotations

import math

import numpy as np

from dperm.privacy.accounting import Spend, basic_composition
from dperm.privacy.collusion import honest_parties
from dperm.privacy.newton import RDP_ORDERS, NewtonCalibration, round_rdp
from dperm.privacy.psgd import PSGDCalibration, coordinator_view_guarantee

__all__ = ["newton_charge_order", "newton_prefix_guarantee", "psgd_charge_order", "psgd_prefix_guarantee",
           "psgd_round_charges"]


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


# -- PSGD ---------------------------------------------------------------------------------


def _check_rounds(calibration, rounds) -> int:
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or not (
            0 <= rounds <= calibration.n_rounds):
        raise ValueError(f"rounds must be an integer in [0, {calibration.n_rounds}]; got {rounds!r}.")
    return int(rounds)


def _gaussian_rdp(noise_multiplier: float, orders) -> np.ndarray:
    """One round's RDP at ``orders``: ``alpha / (2 z^2)``, dp-accounting's own expression for ``GaussianDpEvent``."""
    return np.array([order / (2 * noise_multiplier**2) for order in orders])


def psgd_charge_order(calibration: PSGDCalibration) -> float:
    """``coordinator_dp``: the order at which dp-accounting's ``RdpAccountant`` converts all ``T`` rounds (public)."""
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS, compute_epsilon

    if not calibration.coordinator_dp:
        raise ValueError("psgd_charge_order is for coordinator_dp calibrations (Gaussian rounds); 004's scheme "
                         "charges by composition of its pure-DP rounds.")
    rdp = calibration.n_rounds * _gaussian_rdp(calibration.noise_multiplier, DEFAULT_RDP_ORDERS)
    return float(compute_epsilon(DEFAULT_RDP_ORDERS, rdp, calibration.delta)[1])


def psgd_prefix_guarantee(calibration: PSGDCalibration, rounds: int, *, slack: float) -> tuple[float, float]:
    """``(epsilon, delta)`` a party charges once it has answered ``rounds`` rounds of a PSGD run.

    ``rounds = 0`` costs nothing; otherwise (module note, valid however the
    coordinator chooses when to stop): 004's scheme ``(min(r eps_round,
    eps_T), delta_T)`` with ``(eps_T, delta_T)`` the composition of all
    ``T`` rounds at ``slack``; ``coordinator_dp`` the conversion of
    ``r alpha / (2 z^2)`` at the fixed order of :func:`psgd_charge_order`,
    at the run's ``delta``.

    Raises ValueError unless ``0 <= rounds <= T``.
    """
    rounds = _check_rounds(calibration, rounds)
    if rounds == 0:
        return 0.0, 0.0
    if not calibration.coordinator_dp:
        whole = coordinator_view_guarantee(calibration.round_epsilon, calibration.n_rounds, slack)
        prefix, _ = basic_composition([Spend(calibration.round_epsilon, 0.0, "PSGD round")] * rounds)
        return min(prefix, whole.epsilon), whole.delta
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    order = psgd_charge_order(calibration)
    rdp = rounds * _gaussian_rdp(calibration.noise_multiplier, [order])
    epsilon, _ = compute_epsilon([order], rdp, calibration.delta)
    return max(0.0, float(epsilon)), calibration.delta


def psgd_round_charges(calibration: PSGDCalibration, *, slack: float) -> tuple:
    """``((epsilon_1, delta_1), ..., (epsilon_T, delta_T))``: every prefix charge of a run, computed once at set-up."""
    return tuple(psgd_prefix_guarantee(calibration, rounds, slack=slack)
                 for rounds in range(1, calibration.n_rounds + 1))
