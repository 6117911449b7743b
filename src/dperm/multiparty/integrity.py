"""Integrity of the secure sum: what a party refuses to send and what the coordinator checks.

Secure aggregation hides each reply, so nobody can look at a reply and see
that it is wrong. What can be checked is split in two:

**A party refuses to send** (:func:`refuse_reply`), before its reply enters
the secure sum, on every reply path (PSGD's
:meth:`~dperm.multiparty.protocol.Party.noisy_gradient`, which the deployed
ClientApp calls; Newton's :func:`~dperm.multiparty.newton.party_reply`,
which the in-process party and the deployed handler call):

- a noise-free part that is not finite or is longer than its public bound:
  PSGD's gradient sum ``||grad G_k(w)|| <= N_k L R`` (every row has norm
  ``<= R`` and ``|phi'| <= L``, 004 Prop. 3.1's argument); Newton's packed
  sums ``||a_k||^2 <= N_k^2 ((s_g L R)^2 + (s_H c R^2)^2)`` (``||H_k||_F <=
  sum_i phi'' ||x_i||^2``). An honest party never exceeds these, whatever its data, so a
  refusal says only that the party's code or machine is broken;
- a reply that is not finite (NaN or inf would be quantised to an arbitrary
  integer by the fixed-point encoding);
- Newton: a reply outside the encoding's ``[-C, C]`` (the protocol clips to
  it; a value outside means the clip did not happen). PSGD's encoding clips
  to ``[-C, C]`` itself and counts what it clipped (the count is part of the
  protocol, :func:`~dperm.privacy.psgd.clipping_count_is_covered`), so a
  finite PSGD reply beyond ``C`` is not refused.

A refusal raises :class:`~dperm.exceptions.MalformedReplyError` naming the
party and what failed, never the values; nothing is sent.

**The coordinator checks the sum** (:func:`check_sum`). It sees only
``S = sum_k enc(x_k)``, so it can check only what every honest sum satisfies:

1. *range* (never trips on honest parties): every coordinate of ``S`` is
   finite and ``|S_i| <= K C + e``, with ``e`` the encoding's rounding bound
   (:func:`~dperm.multiparty.secure_sum.quantization_error_bound`). A party
   that skips the encoding (sends masked junk) lands outside with
   probability about ``1 - K Q / M`` per coordinate.
2. *norm* (probabilistic; trips on honest parties with probability at most
   :data:`INTEGRITY_FALSE_ALARM` per training): ``||S||_2 <= B_signal +
   B_noise + sqrt(D) e``. The signal part is bounded before noise (PSGD:
   ``L R`` for ``(1/N) sum_k grad G_k``; Newton: ``N sqrt((s_g L R)^2 +
   (s_H c R^2)^2)`` plus each party's rounding to the grid, ``K g sqrt(D) / 2``). The noise
   is unbounded, so ``B_noise`` is a tail bound: each party's noise vector
   is bounded in L2 with probability ``1 - p_k``, and a union bound over the
   parties and rounds makes the total false-alarm probability at most
   :data:`INTEGRITY_FALSE_ALARM`. Sub-Gaussian noise (Gaussian, truncated
   Gaussian, discrete Gaussian: Canonne, Kamath & Steinke 2020, Cor. 9) uses
   Hsu, Kakade & Zhang (2012, Thm 1 with ``A = I``):
   ``P(||Z||^2 > s^2 (D + 2 sqrt(D t) + 2 t)) <= e^{-t}``
   (:func:`subgaussian_norm_bound`). PSGD's discrete Laplace ``rho_t^k`` is
   not sub-Gaussian: each coordinate is bounded by its tail
   (:func:`~dperm.multiparty.privacy.discrete_laplace_tail_bound`) and the
   vector by ``sqrt(d)`` times that. The bound is a sum over parties of
   ``||x_k||`` (the triangle inequality), so it also holds after the
   encoding clips a coordinate (clipping only shrinks ``|x_ki|``): the
   check is valid whatever the clipping range.

A sum that fails either check aborts the training with
:class:`~dperm.exceptions.SecureSumIntegrityError` naming the round, before
the sum is used. What it cannot catch (stated in ``docs/multiparty.md``):
a lying party whose reply keeps the sum inside the bounds, which can still
move each round's sum by up to about the bound's width, so it can bias or
steer the model within the noise; and it cannot tell which party lied.
"""

from __future__ import annotations

import math

import numpy as np

from dperm.exceptions import MalformedReplyError, SecureSumIntegrityError
from dperm.multiparty.privacy import discrete_laplace_tail_bound, round_noise_calibration

__all__ = [
    "INTEGRITY_FALSE_ALARM", "check_sum", "newton_party_bound", "newton_sum_bound", "psgd_party_bound",
    "psgd_sum_bound", "refuse_reply", "subgaussian_norm_bound",
]

#: Probability, over one whole training, that the coordinator's norm check
#: (:func:`check_sum`) aborts a run in which every party is honest.
INTEGRITY_FALSE_ALARM = 1e-9
#: Relative slack for floating-point sums in the deterministic bounds.
FLOAT_SLACK = 1e-9


# -- the party -------------------------------------------------------------------------


def refuse_reply(party_id, values, *, what: str, norm_bound=None, range_bound=None) -> np.ndarray:
    """Return ``values`` unchanged if they may be sent; else raise MalformedReplyError (nothing is sent).

    Parameters
    ----------
    party_id : hashable
        Named in the message.
    values : ndarray
        What the party is about to send (or its noise-free part).
    what : str
        Name of ``values`` in the message ("gradient sum", "reply", ...).
    norm_bound : float, optional
        Public bound on ``||values||_2`` (checked with a relative slack of 1e-9).
    range_bound : float, optional
        Public bound on every ``|values_i|`` (the encoding's ``C``; exact).
    """
    array = np.asarray(values)
    n_bad = int(np.count_nonzero(~np.isfinite(array)))
    if n_bad:
        raise MalformedReplyError(
            f"party {party_id!r} refuses to send its {what}: {n_bad} value(s) are NaN or infinite (the party's "
            "code or machine is broken); nothing is sent and the round is aborted.")
    if norm_bound is not None:
        length = float(np.linalg.norm(array))
        if length > norm_bound * (1.0 + FLOAT_SLACK):
            raise MalformedReplyError(
                f"party {party_id!r} refuses to send its {what}: its L2 norm exceeds the public bound "
                f"{norm_bound:.6g} that every honest {what} satisfies; nothing is sent and the round is aborted.")
    if range_bound is not None and array.size and float(np.max(np.abs(array))) > range_bound:
        raise MalformedReplyError(
            f"party {party_id!r} refuses to send its {what}: a value lies outside the secure sum's range "
            f"[-{range_bound:g}, {range_bound:g}]; nothing is sent and the round is aborted.")
    return values


def psgd_party_bound(calibration, n_samples: int) -> float:
    """``N_k L R``: the public bound on ``||grad G_k(w)||_2`` of a party with ``N_k`` rows (004 eq. 8)."""
    return float(n_samples) * calibration.lipschitz * calibration.data_norm


def newton_party_bound(calibration, n_samples: int) -> float:
    """``N_k sqrt((s_g L R)^2 + (s_H c R^2)^2)``: the public bound on ``||a_k||_2`` of a party's packed sums.

    ``a_k = (s_g G_k, s_H vech(H_k))`` has two blocks: ``||G_k|| <= N_k L R``;
    ``pack`` weights the off-diagonal entries by ``sqrt 2``, so
    ``||vech(H_k)||`` is ``||H_k||_F <= sum_i phi'' ||x_i||^2 <= N_k c R^2``.
    """
    R = calibration.data_norm
    return float(n_samples) * math.hypot(calibration.gradient_scale * calibration.lipschitz * R,
                                         calibration.hessian_scale * calibration.curvature * R**2)


# -- the coordinator -------------------------------------------------------------------


def subgaussian_norm_bound(variance_proxy: float, dimension: int, failure: float) -> float:
    """``b`` with ``P(||Z||_2 > b) <= failure`` for ``Z`` with independent sub-Gaussian coordinates.

    Hsu, Kakade & Zhang (2012), Thm 1 with ``A = I``: for ``Z`` whose
    coordinates are independent, mean zero and ``E exp(u Z_i) <= exp(u^2
    s^2 / 2)``, ``P(||Z||^2 > s^2 (D + 2 sqrt(D t) + 2 t)) <= e^{-t}``.
    """
    if variance_proxy <= 0.0:
        return 0.0
    t = math.log(1.0 / failure)
    return math.sqrt(variance_proxy * (dimension + 2.0 * math.sqrt(dimension * t) + 2.0 * t))


def psgd_sum_bound(calibration, false_alarm: float = INTEGRITY_FALSE_ALARM) -> float:
    """Public bound on ``||(1/N) sum_k x_k||_2`` that honest PSGD replies exceed with probability ``<= false_alarm``.

    ``x_k = grad G_k(w_t) + rho_t^k + eta^k`` (004 Proc. 3). With ``K``
    parties, ``T`` rounds and ``d`` features (module note for the argument)::

        (1/N) (sum_k ||grad G_k|| + sum_k ||rho_t^k|| + sum_k ||eta^k||)
          <= L R + (K sqrt(d) b_rho + K b_eta) / N

    ``b_rho``: the discrete Laplace tail at ``p / (2 d K T)`` (004 scheme) or a
    Gaussian norm bound at ``p / (2 K T)`` (``coordinator_dp``); ``b_eta``:
    the Gaussian norm bound of ``eta^k ~ N(0, sigma^2/K I)`` at ``p / (2 K)``
    (drawn once). Both noises as sampled by dperm (the OS path's Gaussian is
    truncated symmetrically, which keeps it sub-Gaussian with the same proxy).
    """
    d, K, T = calibration.n_features, calibration.n_parties, calibration.n_rounds
    half = false_alarm / 2.0
    if calibration.round_noise == "gaussian":
        rho = subgaussian_norm_bound(calibration.round_noise_scale**2, d, half / (K * T))
    else:
        grid = round_noise_calibration(calibration.round_epsilon, calibration.lipschitz, calibration.data_norm, d)
        rho = math.sqrt(d) * discrete_laplace_tail_bound(grid, half / (d * K * T))
    eta = subgaussian_norm_bound(calibration.party_noise_sigma**2, d, half / K)
    return calibration.lipschitz * calibration.data_norm + K * (rho + eta) / calibration.n_samples


def newton_sum_bound(calibration, false_alarm: float = INTEGRITY_FALSE_ALARM) -> float:
    """Public bound on ``||sum_k reply_k||_2`` that honest Newton replies exceed with probability ``<= false_alarm``.

    ``reply_k = clip(g (round(a_k / g) + Z_k))`` (:func:`~dperm.multiparty.newton.party_reply`)::

        sum_k ||reply_k|| <= N sqrt((s_g L R)^2 + (s_H c R^2)^2) + K g sqrt(D) / 2 + K g b_Z

    with ``b_Z`` the sub-Gaussian norm bound of ``Z_k`` (``D`` discrete
    Gaussians of parameter ``sigma^2``, CKS 2020 Cor. 9) at ``p / (K T)``.
    """
    D, K, T, g = calibration.dimension, calibration.n_parties, calibration.n_rounds, calibration.grid_step
    signal = newton_party_bound(calibration, calibration.n_samples)
    noise = subgaussian_norm_bound(calibration.party_sigma_squared, D, false_alarm / (K * T))
    return signal + K * g * (0.5 * math.sqrt(D) + noise)


def check_sum(total, report, *, norm_bound: float, round_index: int, protocol: str):
    """Abort unless a round's revealed sum is one honest parties can produce; return ``total`` unchanged.

    Parameters
    ----------
    total : ndarray of shape (D,)
        The round's revealed sum, as decoded by the secure sum.
    report : dperm.multiparty.secure_sum.SecureSumReport
        Its encoding (``clipping_range`` 0 for an engine without one: the
        range check is then only finiteness) and ``error_bound``.
    norm_bound : float
        :func:`psgd_sum_bound` or :func:`newton_sum_bound` of the calibration.
    round_index : int
    protocol : str
        Named in the message.

    Raises
    ------
    SecureSumIntegrityError
        The sum is not finite, leaves ``[-K C - e, K C + e]``, or is longer
        than ``norm_bound + sqrt(D) e`` (module note: the last has a false
        alarm rate of at most :data:`INTEGRITY_FALSE_ALARM` per training).
    """
    values = np.asarray(total, dtype=float)
    where = f"{protocol} round {round_index}"
    n_bad = int(np.count_nonzero(~np.isfinite(values)))
    if n_bad:
        raise SecureSumIntegrityError(
            f"{where}: the secure sum has {n_bad} non-finite coordinate(s); some party sent a value no honest "
            "reply takes. The training is aborted and this sum is not used.")
    error = float(report.error_bound)
    if report.clipping_range:
        limit = (report.n_parties * report.clipping_range + error) * (1.0 + FLOAT_SLACK)
        outside = int(np.count_nonzero(np.abs(values) > limit))
        if outside:
            raise SecureSumIntegrityError(
                f"{where}: {outside} coordinate(s) of the secure sum lie outside [-{limit:.6g}, {limit:.6g}], "
                f"the range of {report.n_parties} replies in the encoding's [-{report.clipping_range:g}, "
                f"{report.clipping_range:g}]; some party bypassed the encoding. The training is aborted and "
                "this sum is not used.")
    limit = (norm_bound + math.sqrt(values.size) * error) * (1.0 + FLOAT_SLACK)
    length = float(np.linalg.norm(values))
    if length > limit:
        raise SecureSumIntegrityError(
            f"{where}: the secure sum has L2 norm {length:.6g}, above the public bound {limit:.6g} that honest "
            f"replies exceed with probability at most {INTEGRITY_FALSE_ALARM:g} per training (signal bound before "
            "noise plus the noise's tail bound); some party sent a reply no honest party would. The training is "
            "aborted and this sum is not used.")
    return total
