"""PSGD's calibration at the boundary: checked public inputs, the per-round noise's grid, a party's check.

The arithmetic and the coordinator's view are in :mod:`dperm.privacy.psgd`
(pure functions that trust their inputs). Here:

- the per-round noise ``rho`` on its grid (004 Prop. 3.1, eq. 2, Proc. 3;
  paper notes 2 and 13): :func:`round_noise_calibration`, the one step that
  needs :mod:`dperm.mechanisms.noise`;
- :func:`calibrate_psgd`: the public inputs checked, then
  :func:`~dperm.privacy.psgd.psgd_calibration` (004's scheme) or
  :func:`~dperm.privacy.psgd.coordinator_dp_calibration` (beyond 004);
- a party's check of a coordinator's set-up, recomputed from the public
  inputs against its own floor (:func:`check_psgd_calibration`).
"""

from __future__ import annotations

import math

from dperm.exceptions import CalibrationRefusedError
from dperm.mechanisms.noise import GridCalibration, discrete_laplace_calibration
from dperm.privacy.collusion import DEFAULT_COLLUSION_THRESHOLD, check_collusion_threshold
from dperm.privacy.psgd import (
    CoordinatorView,
    PartyFloor,
    PSGDCalibration,
    check_collusion_floor,
    check_coordinator_accountant,
    check_open_delta,
    coordinator_dp_calibration,
    coordinator_view_gaussian,
    coordinator_view_guarantee,
    psgd_calibration,
)
from dperm.privacy.sensitivity import gradient_sum_sensitivity
from dperm.validation import check_epsilon, check_positive, check_positive_int

__all__ = [
    "CALIBRATION_RTOL", "calibrate_psgd", "check_psgd_calibration", "discrete_laplace_tail_bound",
    "party_view", "refuse_setup", "round_noise_calibration", "round_noise_scale",
]


def round_noise_calibration(round_epsilon: float, lipschitz: float, data_norm: float,
                            n_features: int) -> GridCalibration:
    """The float-safe per-round noise ``rho`` of 004 Proc. 3: grid, L1 sensitivity, scale.

    004 Proc. 3 (eq. 2) adds ``rho ~ exp(-beta ||rho||)`` with ``beta = eps / C``
    and ``C = 2 L R`` the sensitivity of :func:`gradient_sum_sensitivity`
    (004 prints ``eps / (2L)`` for ``R = 1``, paper note 2), drawn in floating point.
    dperm releases each party's gradient sum instead as
    :func:`~dperm.mechanisms.noise.release_on_grid` does: rounded to a
    power-of-two grid with exact discrete Laplace noise per coordinate,
    calibrated to the L1 bound ``sqrt(d) C`` plus one step per coordinate
    (Canonne, Kamath & Steinke 2020). Each party's reply, hence each round's
    sum, is then exactly ``eps_round``-DP with respect to one of its records
    (paper note 13), and nothing in it depends on floating-point noise.
    """
    return discrete_laplace_calibration(gradient_sum_sensitivity(lipschitz, data_norm),
                                        check_positive_int(n_features, "n_features"),
                                        check_epsilon(round_epsilon, "round_epsilon"))


def discrete_laplace_tail_bound(calibration: GridCalibration, tail_probability: float) -> float:
    """``b`` with ``P(|released_i - value_i| > b) <= tail_probability`` for one coordinate.

    The discrete Laplace ``Z`` with scale ``t`` (in steps) has
    ``P(|Z| >= m) <= 2 exp(-m / t) / (1 + exp(-1/t)) <= 2 exp(-m / t)``, so
    ``m = t ln(2 / p)`` steps suffice; the rounding to the grid adds half a step.
    """
    steps = float(calibration.scale_in_steps) * math.log(2.0 / tail_probability)
    return calibration.step * (math.ceil(steps) + 0.5)


def round_noise_scale(round_epsilon: float, lipschitz: float, data_norm: float, n_features: int) -> float:
    """Per-coordinate scale (``g k / eps_round``) of the per-round noise: :func:`round_noise_calibration`."""
    return round_noise_calibration(round_epsilon, lipschitz, data_norm, n_features).noise_scale


def _psgd_loss_constants(loss) -> tuple[float, float]:
    lipschitz, curvature = loss.lipschitz, loss.curvature
    if curvature is None or not math.isfinite(lipschitz):
        raise ValueError(
            f"PSGD needs a loss with a global Lipschitz bound L and a bound c on loss'' "
            f"(004 Thm 4.1); the {loss.name} loss has L={lipschitz}, c={curvature}. "
            "Use loss='logistic' or loss='huber'."
        )
    return float(lipschitz), float(curvature)


def calibrate_psgd(
    *,
    epsilon,
    delta,
    alpha,
    n_samples,
    n_parties,
    n_features,
    n_rounds,
    loss,
    data_norm,
    round_epsilon=None,
    coordinator_dp=False,
    coordinator_accountant="pld",
    collusion_threshold=DEFAULT_COLLUSION_THRESHOLD,
) -> PSGDCalibration:
    """Calibrate PSGD from public inputs: 004 Alg. 1 line 1 and Proc. 3's constants.

    1. ``[Delta, eps~] = computeSlack(eps, lambda, N, c)`` (004 Proc. 2 with
       paper note 4's fix ``exp(eps/4)``; data norm per paper note 2):
       :func:`~dperm.privacy.sensitivity.objective_perturbation_slack`;
    2. ``sigma = L R sigma*(d, eps~, delta)`` (004 Proc. 3; paper notes 2-3):
       :func:`~dperm.privacy.sensitivity.gaussian_objective_sigma`; each
       party's ``eta^k`` has per-coordinate variance ``sigma^2 / (K - t)`` so
       that any ``K - t`` parties' shares sum to ``N(0, sigma^2 I)``, GOP's
       noise (004 Thm 4.2, proof), with ``t`` parties colluding
       (:mod:`dperm.privacy.collusion`);
    3. ``rho_t^k``: each party releases its gradient sum on a grid with
       discrete Laplace noise for sensitivity ``2 L R`` at ``eps_round``
       (:func:`round_noise_calibration`, the float-safe form of 004 eq. 2);
       ``eps_round`` defaults to ``epsilon``, as in 004 Proc. 3.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    alpha : float > 0
        ``lambda``.
    n_samples, n_parties, n_features, n_rounds : int
        ``N``, ``K >= 2``, ``d`` and ``T``.
    loss : dperm.losses.MarginLoss
        Twice differentiable with a global Lipschitz bound (logistic, Huber).
    data_norm : float > 0
        ``R``.
    round_epsilon : float > 0, optional
    coordinator_dp : bool, default=False
        Replace steps 1-3 by :func:`calibrate_coordinator_gaussian`: no
        one-time noise, Gaussian ``rho_t^k`` such that the coordinator's whole
        view over ``n_rounds`` rounds is ``(epsilon, delta)``-DP (beyond 004;
        paper note 13). ``round_epsilon`` must then be None.
    coordinator_accountant : {"pld", "rdp"}, default="pld"
        dp-accounting's accountant for ``coordinator_dp``.
    collusion_threshold : int in [0, K - 1], default=1
        ``t``: every Gaussian share (``eta^k``; ``coordinator_dp``'s ``rho_t^k``)
        has variance ``1 / (K - t)`` of the calibrated total, so the guarantee
        holds when the coordinator knows the noise of up to ``t`` parties.

    Returns
    -------
    PSGDCalibration
    """
    epsilon = check_epsilon(epsilon)
    delta = check_open_delta(delta)
    alpha = check_positive(alpha, "alpha", "alpha is the L2 regularisation strength (lambda).")
    n_samples = check_positive_int(n_samples, "n_samples")
    n_parties = check_positive_int(n_parties, "n_parties")
    if n_parties < 2:
        raise ValueError(f"PSGD needs at least 2 parties; got n_parties={n_parties}.")
    n_features = check_positive_int(n_features, "n_features")
    n_rounds = check_positive_int(n_rounds, "n_rounds")
    collusion_threshold = check_collusion_threshold(collusion_threshold, n_parties)
    data_norm = check_positive(data_norm, "data_norm", "data_norm is a public bound on each row's L2 norm.")
    lipschitz, curvature = _psgd_loss_constants(loss)
    public = (epsilon, delta, alpha, n_samples, n_parties, n_features, n_rounds, lipschitz, curvature, data_norm,
              loss.name)
    if coordinator_dp:
        if round_epsilon is not None:
            raise ValueError(
                f"round_epsilon={round_epsilon!r} cannot be combined with coordinator_dp=True: the "
                "per-round Gaussian noise is calibrated from epsilon, delta and n_rounds so that the "
                "coordinator's whole view is (epsilon, delta)-DP. Leave round_epsilon=None."
            )
        return coordinator_dp_calibration(*public, check_coordinator_accountant(coordinator_accountant),
                                          collusion_threshold)
    round_epsilon = epsilon if round_epsilon is None else check_epsilon(round_epsilon, "round_epsilon")
    return psgd_calibration(*public, round_epsilon,
                            round_noise_scale(round_epsilon, lipschitz, data_norm, n_features), collusion_threshold)


# -- a party's own floor --------------------------------------------------------------

#: Relative tolerance when a party compares the announced calibration with its own.
CALIBRATION_RTOL = 1e-9
#: Noise fields a party checks are at least its own recomputation.
NOISE_FIELDS = ("noise_sigma", "party_noise_sigma", "round_noise_scale", "round_noise_sigma", "noise_multiplier")
#: Derived fields that must equal the party's recomputation.
DERIVED_FIELDS = ("epsilon_tilde", "extra_regularization", "round_epsilon", "round_sensitivity", "lipschitz",
                  "curvature", "data_norm", "round_delta")


def refuse_setup(party_id, reason: str, setup: str = "set-up") -> None:
    """Raise the refusal of a party's check of a coordinator's ``setup`` (PSGD's; Newton's, :mod:`.newton_privacy`)."""
    raise CalibrationRefusedError(
        f"party {party_id!r} refuses the coordinator's {setup}: {reason} Nothing was drawn or sent."
    )


def _check_floor(calibration, floor: PartyFloor, party_id) -> None:
    if calibration.n_rounds > floor.max_rounds:
        refuse_setup(party_id, f"it asks for n_rounds={calibration.n_rounds} gradient answers and this party "
                               f"answers at most max_rounds={floor.max_rounds}.")
    if calibration.epsilon > floor.max_epsilon or calibration.delta > floor.max_delta:
        refuse_setup(party_id, f"it targets ({calibration.epsilon:g}, {calibration.delta:g})-DP and this party "
                               f"allows at most max_epsilon={floor.max_epsilon:g}, max_delta={floor.max_delta:g}.")


def _check_public_sizes(calibration, n_samples: int, n_features: int, party_id) -> None:
    if calibration.n_features != n_features:
        refuse_setup(party_id, f"it is for d={calibration.n_features} features and this party has {n_features}.")
    if n_samples > calibration.n_samples - (calibration.n_parties - 1):
        refuse_setup(party_id, f"its N={calibration.n_samples} over K={calibration.n_parties} parties cannot "
                               f"include this party's {n_samples} rows.")


def _compare(announced, recomputed, party_id) -> None:
    """Refuse less noise than the recomputation, or derived numbers that differ from it."""
    for name in NOISE_FIELDS:
        ours = getattr(recomputed, name)
        if getattr(announced, name) < ours * (1.0 - CALIBRATION_RTOL):
            refuse_setup(party_id, f"its {name}={getattr(announced, name)!r} is smaller than {ours!r}, which this "
                                   "party recomputes from the announced public inputs (too little noise).")
    for name in DERIVED_FIELDS:
        theirs, ours = getattr(announced, name), getattr(recomputed, name)
        if not math.isclose(theirs, ours, rel_tol=CALIBRATION_RTOL, abs_tol=0.0):
            refuse_setup(party_id, f"its {name}={theirs!r} differs from {ours!r}, which this party recomputes "
                                   "from the announced public inputs.")
    if (announced.round_noise, announced.loss) != (recomputed.round_noise, recomputed.loss):
        refuse_setup(party_id, f"its noise {announced.round_noise!r} / loss {announced.loss!r} differ from the "
                               f"party's {recomputed.round_noise!r} / {recomputed.loss!r}.")


def party_view(recomputed: PSGDCalibration, floor: PartyFloor) -> CoordinatorView:
    """The guarantee a party checks against its floor: what one whole run costs it.

    The coordinator's view over the run's ``T`` rounds, computed from the
    party's own recomputation (:func:`check_psgd_calibration`); with 004's
    scheme at the party's own ``max_delta`` as slack. The ledger charges a
    run round by round (:func:`dperm.privacy.round_charges.psgd_prefix_guarantee`),
    reaching exactly this at ``T`` rounds (with ``coordinator_accountant="pld"``
    dp-accounting's RDP conversion, a little more: that module's note).
    """
    if recomputed.coordinator_dp:
        return coordinator_view_gaussian(recomputed)
    return coordinator_view_guarantee(recomputed.round_epsilon, recomputed.n_rounds, floor.max_delta)


def check_psgd_calibration(announced: PSGDCalibration, floor: PartyFloor, *, loss, data_norm, n_samples,
                           n_features, party_id=0) -> PSGDCalibration:
    """A party's check of a coordinator's PSGD set-up, before it draws or sends anything.

    The party trusts no number of the coordinator's that it can compute
    itself. In order:

    1. the announced ``T``, ``epsilon`` and ``delta`` are within its
       :class:`PartyFloor`, and the announced collusion threshold ``t`` is
       at least its ``min_collusion_threshold``;
    2. ``d`` is its own and ``N`` can hold its ``N_k`` rows;
    3. it recomputes the whole calibration with :func:`calibrate_psgd` from
       the announced public inputs (``epsilon``, ``delta``, ``lambda``, ``N``,
       ``K``, ``d``, ``T``, ``round_epsilon``, the scheme, accountant and ``t``)
       and its own loss (``L``, ``c``) and ``data_norm``; every noise scale
       must be at least its own (004 Procs. 2-3; :func:`calibrate_coordinator_gaussian`)
       and every derived number (computeSlack's ``eps~`` and ``Delta``,
       ``2 L R``, ...) equal to it;
    4. the guarantee proven for what it sends, the coordinator's view over
       ``T`` rounds (paper note 13; 004's scheme at slack ``max_delta``, so that
       ``round_epsilon`` cannot be raised unseen), is within its floor.

    ``K`` and ``N`` are taken from the announcement: a party cannot verify
    the other parties' sizes (the coordinator is semi-honest). The view of
    004's scheme does not depend on them (each ``rho_t^k`` is calibrated to
    the whole per-round sensitivity).

    Returns
    -------
    PSGDCalibration
        The party's own recomputation.

    Raises
    ------
    CalibrationRefusedError
        Naming the party, the failed check and the numbers.
    """
    _check_floor(announced, floor, party_id)
    check_collusion_floor(announced.collusion_threshold, announced.n_parties, floor, party_id, refuse_setup)
    _check_public_sizes(announced, n_samples, n_features, party_id)
    try:
        recomputed = calibrate_psgd(
            epsilon=announced.epsilon, delta=announced.delta, alpha=announced.alpha,
            n_samples=announced.n_samples, n_parties=announced.n_parties, n_features=announced.n_features,
            n_rounds=announced.n_rounds, loss=loss, data_norm=data_norm,
            round_epsilon=None if announced.coordinator_dp else announced.round_epsilon,
            coordinator_dp=bool(announced.coordinator_dp),
            coordinator_accountant=announced.coordinator_accountant or "pld",
            collusion_threshold=announced.collusion_threshold,
        )
    except ValueError as error:
        refuse_setup(party_id, f"its public inputs are invalid ({error})")
    _compare(announced, recomputed, party_id)
    view = party_view(recomputed, floor)
    if view.epsilon > floor.max_epsilon or view.delta > floor.max_delta:
        refuse_setup(party_id, f"the coordinator's view over its {announced.n_rounds} rounds with "
                               f"{recomputed.collusion_threshold} colluding parties, hence the released "
                               f"model, is only ({view.epsilon:.4g}, {view.delta:.3g})-DP by {view.composition} "
                               f"composition, above this party's max_epsilon={floor.max_epsilon:g}, "
                               f"max_delta={floor.max_delta:g}. Ask for fewer rounds, a smaller round_epsilon "
                               "or coordinator_dp.")
    return recomputed
