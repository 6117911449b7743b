"""Privacy arithmetic of the multiparty protocols, as pure functions.

Everything single-party is reused from :mod:`dperm.privacy.sensitivity`
(computeSlack, ``sigma*``, the ERM sensitivity) and :mod:`dperm.accounting`
(composition); this module adds only what the multiparty setting needs:

- the per-round sensitivity of a party's summed gradient and the scale of the
  per-round noise ``rho`` (004 Prop. 3.1, eq. 2, Proc. 3; notes 2 and 13);
- the calibration of PSGD (004 Alg. 1, Procs. 2-3) as one record;
- the guarantee of the coordinator's whole view over ``T`` rounds (note 13);
- the sensitivity of the local-aggregation baseline (004 eq. 5; note 12).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import gamma

from dperm.accounting import Spend, advanced_composition, basic_composition
from dperm.privacy.sensitivity import (
    gaussian_objective_sigma,
    objective_perturbation_slack,
    output_perturbation_sensitivity,
)
from dperm.validation import check_delta, check_epsilon, check_positive, check_positive_int


def check_open_delta(delta, name: str = "delta") -> float:
    """``delta`` in the open interval (0, 1): PSGD / GOP are (eps, delta)-DP with delta > 0."""
    delta = check_delta(delta, name)
    if delta == 0:
        raise ValueError(
            f"{name} must be in the open interval (0, 1); got 0. PSGD is (epsilon, delta)-DP "
            "(004 Thms 4.1-4.2) and gives no guarantee at delta = 0: pass e.g. delta=1e-5."
        )
    return delta


def gradient_sum_sensitivity(lipschitz: float, data_norm: float) -> float:
    """L2 sensitivity ``2 L R`` of a party's summed gradient ``grad G_k(w)`` (004 eq. 8).

    004 Prop. 3.1 proves ``2 L`` for rows in the unit ball: replacing one
    record changes one term ``phi'(y w.x) y x``, of norm at most ``L R``, on
    each side. With data norm ``R`` it is ``2 L R`` (note 2; note 13).
    """
    lipschitz = check_positive(lipschitz, "lipschitz")
    data_norm = check_positive(data_norm, "data_norm")
    return 2.0 * lipschitz * data_norm


def round_noise_scale(round_epsilon: float, lipschitz: float, data_norm: float) -> float:
    """Scale ``1/beta = 2 L R / eps_round`` of the per-round noise ``rho`` (004 Proc. 3).

    004 eq. 2 with ``beta = eps / C`` and ``C`` the sensitivity of
    :func:`gradient_sum_sensitivity`; 004 Proc. 3 prints ``beta = eps/(2L)``
    for ``R = 1`` (note 2). Each party's reply, hence each round's sum, is
    then ``eps_round``-DP with respect to one of its records (note 13).
    """
    return gradient_sum_sensitivity(lipschitz, data_norm) / check_epsilon(round_epsilon, "round_epsilon")


@dataclass(frozen=True)
class PSGDCalibration:
    """Every public number of one PSGD run (004 Alg. 1, Procs. 2-3).

    The coordinator computes it from public inputs and sends it to the
    parties in the setup; each party draws its one-time noise from it.

    Attributes
    ----------
    epsilon, delta : float
        Guarantee of the released classifier (004 Thm 4.2, equal to GOP's).
    epsilon_tilde : float
        ``eps~`` of computeSlack (004 Proc. 2, note 4's fix).
    extra_regularization : float
        ``Delta`` of computeSlack.
    noise_sigma : float
        ``sigma = L R sigma*(d, eps~, delta)``: std of each coordinate of the
        total one-time noise ``eta = sum_k eta^k`` (004 Proc. 3; notes 2-3).
    party_noise_sigma : float
        ``sigma / sqrt(K)``: std of each coordinate of one party's ``eta^k``.
    round_epsilon : float
        Privacy of one round's sum with respect to one record.
    round_sensitivity : float
        ``2 L R`` (:func:`gradient_sum_sensitivity`).
    round_noise_scale : float
        ``1/beta`` of ``rho_t^k`` (:func:`round_noise_scale`).
    n_rounds : int
        ``T``: gradient requests each party agrees to answer.
    n_parties, n_samples, n_features : int
        ``K``, ``N = sum_k N_k`` and ``d`` (public, as in 004 Alg. 1's inputs).
    lipschitz, curvature, data_norm, alpha : float
        ``L``, ``c``, ``R`` and ``lambda``.
    loss : str
        Name of the loss ``phi``.
    """

    epsilon: float
    delta: float
    epsilon_tilde: float
    extra_regularization: float
    noise_sigma: float
    party_noise_sigma: float
    round_epsilon: float
    round_sensitivity: float
    round_noise_scale: float
    n_rounds: int
    n_parties: int
    n_samples: int
    n_features: int
    lipschitz: float
    curvature: float
    data_norm: float
    alpha: float
    loss: str

    @property
    def strong_convexity(self) -> float:
        """``lambda + Delta``: the regularisation of the objective PSGD minimises."""
        return self.alpha + self.extra_regularization


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
) -> PSGDCalibration:
    """Calibrate PSGD from public inputs: 004 Alg. 1 line 1 and Proc. 3's constants.

    1. ``[Delta, eps~] = computeSlack(eps, lambda, N, c)`` (004 Proc. 2 with
       note 4's fix ``exp(eps/4)``; data norm per note 2):
       :func:`~dperm.privacy.sensitivity.objective_perturbation_slack`;
    2. ``sigma = L R sigma*(d, eps~, delta)`` (004 Proc. 3; notes 2-3):
       :func:`~dperm.privacy.sensitivity.gaussian_objective_sigma`; each
       party's ``eta^k`` has per-coordinate variance ``sigma^2 / K`` so that
       ``sum_k eta^k ~ N(0, sigma^2 I)``, GOP's noise (004 Thm 4.2, proof);
    3. ``rho_t^k`` has density ``~ exp(-||rho|| / scale)``, ``scale =
       2 L R / eps_round`` (:func:`round_noise_scale`); ``eps_round``
       defaults to ``epsilon``, as in 004 Proc. 3.

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
    data_norm = check_positive(data_norm, "data_norm", "data_norm is a public bound on each row's L2 norm.")
    round_epsilon = epsilon if round_epsilon is None else check_epsilon(round_epsilon, "round_epsilon")
    lipschitz, curvature = _psgd_loss_constants(loss)
    slack = objective_perturbation_slack(epsilon, n_samples, alpha, curvature, data_norm)
    sigma = gaussian_objective_sigma(n_features, slack.epsilon_noise, delta, lipschitz, data_norm)
    return PSGDCalibration(
        epsilon=epsilon,
        delta=delta,
        epsilon_tilde=slack.epsilon_noise,
        extra_regularization=slack.extra_regularization,
        noise_sigma=sigma,
        party_noise_sigma=sigma / math.sqrt(n_parties),
        round_epsilon=round_epsilon,
        round_sensitivity=gradient_sum_sensitivity(lipschitz, data_norm),
        round_noise_scale=round_noise_scale(round_epsilon, lipschitz, data_norm),
        n_rounds=n_rounds,
        n_parties=n_parties,
        n_samples=n_samples,
        n_features=n_features,
        lipschitz=lipschitz,
        curvature=curvature,
        data_norm=data_norm,
        alpha=alpha,
        loss=loss.name,
    )


@dataclass(frozen=True)
class CoordinatorView:
    """Guarantee of everything the coordinator sees over ``T`` rounds (note 13).

    Attributes
    ----------
    epsilon_basic, delta_basic : float
        ``T * eps_round`` and 0: basic composition of the ``T`` rounds.
    epsilon, delta : float
        The tighter of basic and advanced composition (slack ``delta'``).
    composition : {"basic", "advanced"}
        Which of the two gave ``epsilon``.
    slack : float
        The ``delta'`` used for advanced composition.
    """

    epsilon_basic: float
    delta_basic: float
    epsilon: float
    delta: float
    composition: str
    slack: float


def coordinator_view_guarantee(round_epsilon: float, n_rounds: int, slack: float) -> CoordinatorView:
    """Compose the ``T`` per-round guarantees of the coordinator's view (note 13).

    Each round reveals one sum that is ``eps_round``-DP with respect to one
    record (the record's party adds ``rho_t^k``; the other parties' vectors,
    the one-time noise and the secure sum's rounding do not depend on it).
    The rounds are adaptive (``w_t`` depends on earlier sums), which both
    composition theorems allow. Basic composition gives ``(T eps, 0)``;
    :func:`dperm.accounting.advanced_composition` gives the tighter of that
    and Dwork-Rothblum-Vadhan with slack ``delta'``.
    """
    round_epsilon = check_epsilon(round_epsilon, "round_epsilon")
    n_rounds = check_positive_int(n_rounds, "n_rounds")
    slack = check_open_delta(slack, "composition_slack")
    spends = [Spend(round_epsilon, 0.0, "PSGD round")] * n_rounds
    epsilon_basic, delta_basic = basic_composition(spends)
    epsilon, delta = advanced_composition(spends, slack)
    composition = "advanced" if epsilon < epsilon_basic else "basic"
    return CoordinatorView(epsilon_basic, delta_basic, epsilon, delta, composition, slack)


def local_aggregation_sensitivity(
    n_samples_by_party, alpha: float, lipschitz: float, data_norm: float, solution_radius: float
) -> float:
    """L2 sensitivity ``(2 L R / (n_min lambda) + 2 r) / K`` of the averaged classifier (004 eq. 5).

    Replacing one record changes one party's local minimiser ``w_k`` by at
    most ``2 L R / (N_k lambda)`` (003 Cor. 1, note 2), at most
    ``2 L R / (n_min lambda)`` whichever party holds it, and the average
    ``(1/K) sum_k w_k`` by ``1/K`` of that (note 12: Pathak et al. 2010). A
    certified solve within radius ``r`` of each exact minimiser adds ``2 r``
    before averaging (:func:`~dperm.privacy.sensitivity.output_perturbation_sensitivity`).
    """
    sizes = [check_positive_int(n, "party size") for n in n_samples_by_party]
    if len(sizes) < 2:
        raise ValueError(f"local aggregation needs at least 2 parties; got {len(sizes)}.")
    per_party = output_perturbation_sensitivity(min(sizes), alpha, lipschitz, data_norm, solution_radius)
    return per_party / len(sizes)


def l2_laplace_norm_quantile(dimension: int, scale: float, tail_probability: float) -> float:
    """``t`` with ``P(||b|| > t) = tail_probability`` for ``b ~ exp(-||b|| / scale)`` in R^d.

    ``||b|| ~ Gamma(shape=d, scale=scale)`` (note 1), so ``t`` is its upper
    quantile. Used to pick clipping ranges from public constants.
    """
    dimension = check_positive_int(dimension, "dimension")
    return float(gamma.isf(tail_probability, dimension, scale=check_positive(scale, "scale")))
