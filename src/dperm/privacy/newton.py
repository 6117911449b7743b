"""Privacy arithmetic of the few-round multiparty Newton protocol (beyond the papers), as pure functions.

The one owner of the Newton calibration: :func:`newton_calibration` trusts its
inputs; :func:`dperm.multiparty.newton_privacy.calibrate_newton` checks them
at the boundary and a party checks an announced calibration with
:func:`dperm.multiparty.newton_privacy.check_newton_calibration`.

Round ``t`` of the protocol (:mod:`dperm.multiparty.newton`): the coordinator
broadcasts ``w_t``; party ``k`` answers with its gradient sum
``G_k = sum_i phi'(y_i w.x_i) y_i x_i`` and Hessian sum
``H_k = sum_i phi''(y_i w.x_i) x_i x_i^T`` over its rows, packed into one
vector, rounded to a power-of-two grid and with its share of discrete
Gaussian noise added; the secure sum gives the coordinator
``sum_k (round(a_k / g) + Z_k)`` only.

Soundness (every step is a cited standard result):

1. **Sensitivity.** Rows have norm ``<= R`` (scaled onto it otherwise);
   ``|phi'| <= L`` and ``0 <= phi'' <= c``. Replacing one record changes one
   term of one party's sums: the gradient by at most ``2 L R`` in L2 (two
   terms of norm ``<= L R``, 004 Prop. 3.1); the Hessian by ``A - B`` with
   ``A, B`` PSD of Frobenius norm ``<= c R^2``, so ``||A - B||_F^2 =
   ||A||_F^2 + ||B||_F^2 - 2 tr(AB) <= 2 c^2 R^4`` (``tr(AB) >= 0`` for PSD
   ``A, B``): at most ``sqrt(2) c R^2``. The packed vector ``a_k = (s_g G_k,
   s_H vech(H_k))`` (``vech`` with off-diagonal entries times ``sqrt 2``,
   so its L2 norm is the Frobenius norm) with ``s_g = sqrt(phi_g) / (2 L R)``
   and ``s_H = sqrt(1 - phi_g) / (sqrt 2 c R^2)`` moves by at most 1 in L2.
2. **Grid.** Rounding to the nearest multiple of ``g`` moves each coordinate
   by at most ``g / 2``, so neighbours' grid centres differ by at most
   ``Delta = 1 / g + sqrt(D)`` grid steps in L2 (``D`` the packed length;
   Kairouz, Liu & Steinke 2021, the rounding bound of their Sec. 4).
3. **Distributed discrete Gaussian.** Each of the ``K`` parties adds
   independent exact discrete Gaussians ``N_Z(0, sigma^2)`` per coordinate
   (Canonne, Kamath & Steinke 2020, Alg. 3). Their sum is not a discrete
   Gaussian, but by Kairouz, Liu & Steinke (2021, Thm 1 / Prop. 14), for all
   ``alpha >= 1`` the Renyi divergence of order ``alpha`` between the sums
   for neighbours is at most ``min(alpha Delta^2 / (2 K sigma^2) + tau D,
   alpha/2 (Delta / (sqrt(K) sigma) + sqrt(D) tau)^2)`` with ``tau = 10
   sum_{k=1}^{K-1} exp(-2 pi^2 sigma^2 k / (k+1))``.
4. **Composition.** ``w_t`` is a function of earlier sums: RDP composes
   adaptively by addition (Mironov 2017, Prop. 1), so ``T`` rounds have
   ``T`` times the bound; it is converted to ``(epsilon, delta_rdp)`` by
   dp-accounting's ``compute_epsilon`` (Canonne, Kamath & Steinke 2020,
   Prop. 12). A PLD account would need the sum's exact privacy loss
   distribution, which is not the Gaussian's: only the RDP bound above is
   proven, so dperm accounts with it.
5. **Secure-sum range.** Each party's reply must fit the secure sum's
   fixed-point range ``[-C, C]``; its centre does by the public bound ``B``
   on ``|a_k|``, its noise exceeds ``C - B`` with probability at most
   ``p`` (union bound over all ``D K T`` draws of the sub-Gaussian tail
   ``P(|Z| >= t) <= 2 exp(-t^2 / (2 sigma^2))``, CKS 2020, Cor. 9). The
   protocol with clipping differs from the one without only on that event,
   so it is ``(epsilon, delta_rdp + (1 + e^epsilon) p)``-DP; ``p`` is set
   so that the total is ``delta``.
6. **Released model.** ``w_T`` is computed from the sums and public
   constants only: post-processing.

What colluders learn, and the collusion threshold ``t``
(:mod:`dperm.privacy.collusion`): the coordinator together with ``c < K``
parties knows those parties' noise shares, so it sees the honest parties'
sum with only ``K - c`` shares. The per-party ``sigma^2`` is therefore the
smallest whose bound of point 3 *with ``K - t`` parties* meets the target
over the ``T`` rounds (point 4): the booked guarantee holds against any ``t``
colluders, and :func:`collusion_epsilon` gives the guarantee left with ``c``
colluders (KLS 2021, Thm 1 with ``K - c`` parties; for ``c = K - 1``, one
party's reply with its own share only). ``t = 0`` is the unprotected split
of KLS 2021; the secure-sum range (point 5) does not depend on ``t``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from dperm.privacy._noise_search import NOISE_MULTIPLIER_RTOL, bracket_noise_multiplier
from dperm.privacy.collusion import CollusionGuarantee, honest_parties

__all__ = [
    "MAX_QUANTIZATION_RANGE", "NOISE_MULTIPLIER_RTOL", "NewtonCalibration", "collusion_epsilon",
    "collusion_guarantee", "epsilon_by_colluders", "newton_calibration", "packed_length",
    "party_sigma_squared_fraction", "rounds_epsilon", "view_guarantee",
]

#: Flower's largest ``quantization_range`` and ``modulus_range`` (``flower.engine``).
MAX_QUANTIZATION_RANGE = 2**30
_MODULUS_RANGE = 2**32
#: Share of ``delta`` spent on the secure-sum range event (point 5 above).
_RANGE_DELTA_SHARE = 1e-3
#: Renyi orders the accountant minimises over.
RDP_ORDERS = tuple(np.concatenate([1.0 + np.geomspace(0.01, 7.0, 120), np.arange(8.5, 64.0, 0.5),
                                   np.geomspace(64.0, 4096.0, 40)]).tolist())


def packed_length(n_features: int) -> int:
    """``D = d + d (d + 1) / 2``: the gradient and the Hessian's upper triangle."""
    return n_features + n_features * (n_features + 1) // 2


def _tau(sigma_squared: float, n_parties: int) -> float:
    """KLS 2021, Thm 1: ``10 sum_{k=1}^{K-1} exp(-2 pi^2 sigma^2 k / (k + 1))``."""
    return 10.0 * sum(math.exp(-2.0 * math.pi**2 * sigma_squared * k / (k + 1)) for k in range(1, n_parties))


def round_rdp(orders, sensitivity_steps: float, sigma_squared: float, n_parties: int, dimension: int):
    """Renyi DP of one round's sum of ``K`` parties' discrete Gaussian shares (KLS 2021, Thm 1)."""
    orders = np.asarray(orders, dtype=float)
    tau = _tau(sigma_squared, n_parties)
    ratio = sensitivity_steps / math.sqrt(n_parties * sigma_squared)
    first = orders * ratio**2 / 2.0 + tau * dimension
    second = orders / 2.0 * (ratio + math.sqrt(dimension) * tau) ** 2
    return np.minimum(first, second)


def rounds_epsilon(sensitivity_steps, sigma_squared, n_parties, dimension, n_rounds, delta) -> float:
    """``epsilon`` at ``delta`` of ``T`` adaptive rounds (RDP composition, dp-accounting's conversion)."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    rdp = n_rounds * round_rdp(RDP_ORDERS, sensitivity_steps, sigma_squared, n_parties, dimension)
    epsilon, _ = compute_epsilon(RDP_ORDERS, rdp.tolist(), delta)
    return float(epsilon)


@dataclass(frozen=True)
class NewtonCalibration:
    """Public calibration of the Newton protocol: inputs and every number derived from them.

    Attributes
    ----------
    epsilon, delta : float
        Target of the coordinator's whole view (and of the released model).
    alpha : float
        L2 strength ``lambda`` of ``J(w) = (1/N) sum phi + lambda/2 ||w||^2``.
    n_rounds, n_parties, n_samples, n_features : int
        ``T``, ``K``, ``N`` and ``d`` (public).
    max_party_samples : int
        Largest public ``N_k``: bounds every reply's coordinates.
    collusion_threshold : int
        ``t``: the noise of any ``K - t`` parties alone meets the target
        (module note; :mod:`dperm.privacy.collusion`).
    loss : str
    data_norm, lipschitz, curvature : float
        ``R``, ``L`` and ``c``.
    gradient_share : float
        ``phi_g``: share of each round's Renyi budget spent on the gradient.
    gradient_sensitivity, hessian_sensitivity : float
        ``2 L R`` and ``sqrt(2) c R^2`` (module note, point 1).
    gradient_scale, hessian_scale : float
        ``s_g`` and ``s_H``.
    dimension : int
        ``D``, the packed length.
    grid_step : float
        ``g``, in the scaled units (a power of two).
    sensitivity_steps : float
        ``Delta = 1 / g + sqrt(D)``.
    party_sigma_squared : float
        Each party's discrete Gaussian variance parameter ``sigma^2``, in grid
        steps squared: sized for ``K - t`` parties.
    noise_multiplier : float
        ``sqrt(K) sigma / Delta``: the summed noise (all ``K`` shares) over the rounded sensitivity.
    tau : float
        KLS 2021's ``tau`` for the ``K - t`` honest shares (0 to double precision at dperm's grids).
    rdp_epsilon, rdp_delta : float
        The accounted ``(epsilon, delta_rdp)`` of the view without clipping,
        with ``t`` colluders (the honest ``K - t`` shares).
    range_delta : float
        ``(1 + e^epsilon) p``, the part of ``delta`` spent on the range event.
    range_probability : float
        ``p``: the probability bound that some noise draw leaves the secure-sum range.
    clipping_range : float
        ``C`` in scaled units, ``quantization_range * g / 2``.
    quantization_range, modulus_range : int
        The secure sum's fixed-point encoding (``K Q < M``).
    """

    epsilon: float
    delta: float
    alpha: float
    n_rounds: int
    n_parties: int
    n_samples: int
    n_features: int
    max_party_samples: int
    collusion_threshold: int
    loss: str
    data_norm: float
    lipschitz: float
    curvature: float
    gradient_share: float
    gradient_sensitivity: float
    hessian_sensitivity: float
    gradient_scale: float
    hessian_scale: float
    dimension: int
    grid_step: float
    sensitivity_steps: float
    party_sigma_squared: float
    noise_multiplier: float
    tau: float
    rdp_epsilon: float
    rdp_delta: float
    range_delta: float
    range_probability: float
    clipping_range: float
    quantization_range: int
    modulus_range: int

    @property
    def party_noise_std(self) -> float:
        """One party's noise std per coordinate, in the scaled units (``g sigma``)."""
        return self.grid_step * math.sqrt(self.party_sigma_squared)

    @property
    def gradient_noise_std(self) -> float:
        """Std per coordinate of the summed noise on the gradient sum ``sum_k G_k``."""
        return math.sqrt(self.n_parties) * self.party_noise_std / self.gradient_scale

    @property
    def hessian_noise_std(self) -> float:
        """Std per (diagonal) entry of the summed noise on the Hessian sum ``sum_k H_k``."""
        return math.sqrt(self.n_parties) * self.party_noise_std / self.hessian_scale

    def to_config(self) -> dict:
        """Plain Python scalars, for a Flower config record."""
        return {key: (value if isinstance(value, str) else float(value) if isinstance(value, float) else int(value))
                for key, value in asdict(self).items()}

    @classmethod
    def from_config(cls, config) -> "NewtonCalibration":
        names = [field for field in cls.__dataclass_fields__]
        missing = [name for name in names if name not in config]
        if missing:
            raise ValueError(f"the Newton set-up lacks calibration fields {missing}.")
        return cls(**{name: config[name] for name in names})


def _value_bound(max_party_samples, lipschitz, curvature, data_norm, gradient_scale, hessian_scale) -> float:
    """Public bound ``B`` on every coordinate of a party's packed vector ``a_k``.

    ``|G_kj| <= N_k L R``; ``|H_kjj| <= N_k c R^2``; an off-diagonal entry,
    times ``sqrt 2``, ``<= sqrt(2) N_k c R^2 / 2`` (``|x_i x_j| <= R^2 / 2``).
    """
    return max_party_samples * max(gradient_scale * lipschitz * data_norm,
                                   hessian_scale * curvature * data_norm**2)


def _find_sigma_squared(epsilon, delta, n_rounds, n_parties, dimension, sensitivity_steps) -> float:
    """Smallest per-party ``sigma^2`` (in steps^2) whose accounted epsilon is ``<= epsilon``.

    ``n_parties`` is the number of shares the guarantee rests on: ``K - t``
    (:func:`newton_calibration`).
    """
    def gap(z):  # z: noise multiplier sqrt(n) sigma / Delta of the n shares
        sigma_squared = (z * sensitivity_steps) ** 2 / n_parties
        return rounds_epsilon(sensitivity_steps, sigma_squared, n_parties, dimension, n_rounds, delta) - epsilon

    lower, upper = bracket_noise_multiplier(gap, epsilon, delta, n_rounds)
    while upper - lower > NOISE_MULTIPLIER_RTOL * upper:  # bisection; gap(upper) <= 0 throughout
        middle = 0.5 * (lower + upper)
        if gap(middle) <= 0:
            upper = middle
        else:
            lower = middle
    return (upper * sensitivity_steps) ** 2 / n_parties


@functools.lru_cache(maxsize=64)
def newton_calibration(epsilon, delta, alpha, n_rounds, sizes, n_features, loss_name, lipschitz, curvature,
                       data_norm, gradient_share, collusion_threshold) -> NewtonCalibration:
    """The Newton protocol's calibration from checked public inputs (the module note is its proof).

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    alpha : float > 0
    n_rounds : int >= 1
    sizes : tuple of int
        ``(N, K, max N_k)``: all the calibration depends on of the public party sizes.
    n_features : int >= 1
    loss_name : str
    lipschitz, curvature : float
        ``L`` and ``c`` of a loss with ``|phi'| <= L`` and ``0 <= phi'' <= c``.
    data_norm : float > 0
    gradient_share : float in (0, 1)
    collusion_threshold : int in [0, K - 1]
        ``t``: each party's ``sigma^2`` is sized so that the ``K - t`` honest
        shares alone meet the target (module note).

    Returns
    -------
    NewtonCalibration
    """
    n_samples, n_parties, max_party_samples = sizes
    honest = honest_parties(n_parties, collusion_threshold)
    dimension = packed_length(n_features)
    gradient_sensitivity = 2.0 * lipschitz * data_norm
    hessian_sensitivity = math.sqrt(2.0) * curvature * data_norm**2
    gradient_scale = math.sqrt(gradient_share) / gradient_sensitivity
    hessian_scale = math.sqrt(1.0 - gradient_share) / hessian_sensitivity
    bound = _value_bound(max_party_samples, lipschitz, curvature, data_norm, gradient_scale, hessian_scale)
    quantization_range = min(MAX_QUANTIZATION_RANGE, 2 ** math.floor(math.log2((_MODULUS_RANGE - 1) / n_parties)))
    if quantization_range < 2**16:
        raise ValueError(f"{n_parties} parties leave the secure sum a quantization range of only "
                         f"{quantization_range} levels; the Newton protocol supports up to 2**16 parties.")
    range_delta = _RANGE_DELTA_SHARE * delta
    rdp_delta = delta - range_delta
    draws = dimension * n_parties * n_rounds
    # Start from a grid as if the noise were nil, then coarsen until centre + noise tail fit [-C, C].
    step = 2.0 ** math.ceil(math.log2(2.0 * bound / quantization_range))
    while True:
        sensitivity_steps = 1.0 / step + math.sqrt(dimension)
        sigma_squared = _find_sigma_squared(epsilon, rdp_delta, n_rounds, honest, dimension, sensitivity_steps)
        # log(2 D K T / p) with p = range_delta / (1 + e^epsilon), without overflow at large epsilon
        log_ratio = math.log(2.0 * draws) - math.log(range_delta) + np.logaddexp(0.0, epsilon)
        tail = step * math.sqrt(sigma_squared) * math.sqrt(2.0 * log_ratio)
        clipping_range = quantization_range * step / 2.0
        if bound + tail + step <= clipping_range:
            break
        step *= 2.0
    tau = _tau(sigma_squared, honest)
    rdp_epsilon = rounds_epsilon(sensitivity_steps, sigma_squared, honest, dimension, n_rounds, rdp_delta)
    return NewtonCalibration(
        epsilon=epsilon, delta=delta, alpha=alpha, n_rounds=n_rounds, n_parties=n_parties,
        n_samples=n_samples, n_features=n_features, max_party_samples=max_party_samples,
        collusion_threshold=int(collusion_threshold), loss=loss_name,
        data_norm=data_norm, lipschitz=lipschitz, curvature=curvature, gradient_share=gradient_share,
        gradient_sensitivity=gradient_sensitivity, hessian_sensitivity=hessian_sensitivity,
        gradient_scale=gradient_scale, hessian_scale=hessian_scale, dimension=dimension, grid_step=step,
        sensitivity_steps=sensitivity_steps, party_sigma_squared=sigma_squared,
        noise_multiplier=math.sqrt(n_parties * sigma_squared) / sensitivity_steps, tau=tau,
        rdp_epsilon=rdp_epsilon, rdp_delta=rdp_delta, range_delta=range_delta,
        range_probability=float(range_delta * np.exp(-np.logaddexp(0.0, epsilon))),
        clipping_range=clipping_range, quantization_range=int(quantization_range),
        modulus_range=int(_MODULUS_RANGE),
    )


def view_guarantee(calibration: NewtonCalibration) -> tuple[float, float]:
    """``(epsilon, delta)`` proven for the view with up to ``t`` colluders: RDP account plus the range event."""
    return calibration.rdp_epsilon, calibration.rdp_delta + calibration.range_delta


def collusion_epsilon(calibration: NewtonCalibration, n_colluding: int) -> float:
    """``epsilon`` (at the same ``delta``) left when the coordinator knows ``n_colluding`` parties' noise.

    The honest parties' ``K - j`` shares remain (KLS 2021, Thm 1 with ``K - j``
    parties), over the same rounds; the record in a party's own data is
    protected by those shares only.
    """
    honest = calibration.n_parties - int(n_colluding)
    if not 1 <= honest <= calibration.n_parties:
        raise ValueError(f"n_colluding must be in [0, {calibration.n_parties - 1}]; got {n_colluding}.")
    return rounds_epsilon(calibration.sensitivity_steps, calibration.party_sigma_squared, honest,
                          calibration.dimension, calibration.n_rounds, calibration.rdp_delta)


def epsilon_by_colluders(calibration: NewtonCalibration) -> tuple:
    """:func:`collusion_epsilon` for ``c = 0, ..., K - 1`` colluders (at ``rdp_delta``; add ``range_delta``)."""
    return tuple(collusion_epsilon(calibration, c) for c in range(calibration.n_parties))


def collusion_guarantee(calibration: NewtonCalibration) -> CollusionGuarantee:
    """The record's collusion field: ``t``, the guarantee at ``t`` and the epsilon by colluders."""
    epsilon, delta = view_guarantee(calibration)
    return CollusionGuarantee(int(calibration.collusion_threshold), epsilon, delta,
                              epsilon_by_colluders(calibration))


def party_sigma_squared_fraction(calibration: NewtonCalibration) -> Fraction:
    """The exact variance parameter a party's sampler uses (the float, exactly)."""
    return Fraction(calibration.party_sigma_squared)
