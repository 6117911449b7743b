"""``privacy_`` of the multiparty classifiers: both guarantees and every number behind them."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from dperm.multiparty.secure_sum import SecureSumSummary

REFERENCES = {
    "psgd": "Rajkumar & Agarwal (2012), Alg. 1, Procs. 2-3, Thm 4.2 (via GOP, Alg. 4 and Thm 4.1); "
    "shared papers notes 2-4, 13-14",
    "psgd_coordinator_dp": "Rajkumar & Agarwal (2012), Alg. 1 and Prop. 3.1 with per-round Gaussian "
    "noise instead of Proc. 3's (beyond the paper: shared papers note 13); accounting by Google's "
    "dp-accounting (privacy loss distributions, Koskela et al. 2020 / Doroshenko et al. 2022; or "
    "Renyi DP, Mironov 2017)",
    "local_aggregation": "Pathak, Rane & Raj (2010) as in Rajkumar & Agarwal (2012), eq. 5; "
    "Chaudhuri et al. (2011), Cor. 1; shared papers notes 1, 2, 12, 14",
}


def _describe(epsilon: float, delta: float) -> str:
    if delta == 0:
        return f"{epsilon:g}-DP (pure epsilon-differential privacy)"
    return f"({epsilon:g}, {delta:g})-DP"


class _RecordMixin:
    """Serialisation shared by the records (frozen dataclasses)."""

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (nested ``secure_sum`` included)."""
        data = asdict(self)
        data["notes"] = list(data["notes"])
        data["n_samples_by_party"] = list(data["n_samples_by_party"])
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        return self.summary()


@dataclass(frozen=True)
class PSGDPrivacyRecord(_RecordMixin):
    """What a PSGD run guarantees, to whom, and how it was calibrated.

    Two guarantees (shared papers note 13). With ``coordinator_dp=False``
    (004's scheme):

    - **released model** ``(epsilon, delta)``: 004 Thm 4.2, PSGD's limit is
      GOP's output (Alg. 4) on the pooled data, hence GOP's guarantee. It
      speaks of the minimiser PSGD converges to; the finite-``T`` iterate is
      also a post-processing of the coordinator's view (next item), so it is
      at least ``(coordinator_epsilon, coordinator_delta)``-DP;
    - **coordinator's view** over the ``T`` rounds: each round's sum is
      ``round_epsilon``-DP (``rho`` noise), composed over ``n_rounds``.

    With ``coordinator_dp=True`` (beyond 004) the per-round noise is Gaussian
    and calibrated so that the **coordinator's view** is ``(epsilon, delta)``-DP
    by a PLD / RDP accountant (``coordinator_epsilon <= epsilon`` at
    ``coordinator_delta = delta``); the **released model** is a post-processing
    of that view and has the same guarantee, for the finite ``T`` that was run.

    Attributes
    ----------
    mechanism : str
        ``"psgd"``.
    epsilon, delta : float
        Guarantee of the released classifier (004 Thm 4.2).
    epsilon_tilde : float
        ``eps~`` of computeSlack (004 Proc. 2, note 4).
    extra_regularization : float
        ``Delta`` of computeSlack; PSGD minimises with ``alpha + Delta``.
    noise_sigma, party_noise_sigma : float
        ``sigma = L R sigma*`` of the total one-time noise, and ``sigma/sqrt(K)``
        of each party's ``eta^k`` (004 Proc. 3; notes 2-3).
    round_epsilon : float
        Guarantee of one round's sum with respect to one record.
    round_sensitivity : float
        ``2 L R`` (004 Prop. 3.1, note 2).
    round_noise_scale : float
        ``1/beta = 2 L R / round_epsilon`` of each ``rho_t^k`` (l2-Laplace, 004 eq. 2).
    n_rounds : int
    coordinator_epsilon_basic, coordinator_delta_basic : float
        ``n_rounds * round_epsilon`` and 0 (basic composition).
    coordinator_epsilon, coordinator_delta : float
        The tighter of basic and advanced composition.
    coordinator_composition : {"basic", "advanced"}
    composition_slack : float
        ``delta'`` of advanced composition.
    n_parties, n_samples : int
    n_samples_by_party : tuple of int
        Public party sizes ``N_k`` (004 Alg. 1 takes ``N`` as input).
    data_norm, lipschitz, curvature, alpha : float
    rows_clipped : int
        Rows scaled onto ``data_norm`` by their parties (per record; keeps DP).
    step_size : str
        The step-size rule ``z_t``.
    secure_sum : SecureSumSummary
        The engine, its encoding, and clipping over all rounds (note 14).
    gop_equivalent : bool
        False when the secure sum clipped a coordinate in some round: then
        the iterates do not follow Alg. 1 and Thm 4.2's equivalence with GOP
        fails (the coordinator-view guarantee is unaffected).
    loss : str
    reference : str
    notes : tuple of str
        Plain-language caveats (scope of Thm 4.2, clipping, trust assumptions).
    coordinator_dp : bool
        Which scheme ran (see above).
    round_noise : {"l2-laplace", "gaussian"}
        Distribution of ``rho_t^k``; ``round_noise_scale`` is its l2-Laplace
        ``1/beta`` or, for the Gaussian, one party's std per coordinate.
    round_noise_sigma : float
        Gaussian scheme: std per coordinate of the summed per-round noise; 0 otherwise.
    noise_multiplier : float
        Gaussian scheme: ``z = round_noise_sigma / round_sensitivity``; 0 otherwise.
    round_delta : float
        Gaussian scheme: one round is ``(round_epsilon, round_delta)``-DP; 0 otherwise.
    """

    mechanism: str
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
    coordinator_epsilon_basic: float
    coordinator_delta_basic: float
    coordinator_epsilon: float
    coordinator_delta: float
    coordinator_composition: str
    composition_slack: float
    n_parties: int
    n_samples: int
    n_samples_by_party: tuple
    data_norm: float
    lipschitz: float
    curvature: float
    alpha: float
    rows_clipped: int
    step_size: str
    secure_sum: SecureSumSummary
    gop_equivalent: bool
    loss: str
    reference: str
    notes: tuple
    coordinator_dp: bool = False
    round_noise: str = "l2-laplace"
    round_noise_sigma: float = 0.0
    noise_multiplier: float = 0.0
    round_delta: float = 0.0

    @property
    def guarantee(self) -> str:
        """The released model's guarantee in words."""
        return _describe(self.epsilon, self.delta)

    @property
    def coordinator_guarantee(self) -> str:
        """The coordinator's-view guarantee in words."""
        return _describe(self.coordinator_epsilon, self.coordinator_delta)

    def summary(self) -> str:
        """A readable account of both guarantees and the calibration."""
        if self.coordinator_dp:
            return self._coordinator_dp_summary()
        lines = [
            f"Released model: {self.guarantee} (004 Thm 4.2, equal to GOP's), w.r.t. replacing one record.",
            f"Coordinator's view over {self.n_rounds} rounds: {self.coordinator_guarantee} by "
            f"{self.coordinator_composition} composition (basic: {self.coordinator_epsilon_basic:g}-DP; "
            f"each round {self.round_epsilon:g}-DP; delta' = {self.composition_slack:g}).",
            f"Noise: one-time eta ~ N(0, {self.noise_sigma:.4g}^2 I) in total "
            f"({self.party_noise_sigma:.4g} per party and coordinate); per-round rho l2-Laplace, scale "
            f"{self.round_noise_scale:.4g} (sensitivity {self.round_sensitivity:g}).",
            f"computeSlack: eps~ = {self.epsilon_tilde:.4g}, Delta = {self.extra_regularization:.4g}.",
            *self._data_and_secure_sum_lines(),
        ]
        lines += [f"Note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _data_and_secure_sum_lines(self) -> list[str]:
        """The data, secure-sum and step-size lines both summaries end with."""
        return [
            f"Data: {self.n_parties} parties, N = {self.n_samples} {list(self.n_samples_by_party)}, "
            f"R = {self.data_norm:g}, {self.rows_clipped} rows clipped; alpha = {self.alpha:g}, "
            f"L = {self.lipschitz:g}, c = {self.curvature:g}, {self.loss} loss.",
            f"Secure sum: {self.secure_sum.engine}, C = {self.secure_sum.clipping_range:g}, "
            f"Q = {self.secure_sum.quantization_range}, M = {self.secure_sum.modulus_range}; "
            f"{self.secure_sum.coordinates_clipped} coordinates clipped in "
            f"{self.secure_sum.sums_with_clipping} of {self.secure_sum.n_sums} rounds.",
            f"Steps: {self.step_size}.",
        ]

    def _coordinator_dp_summary(self) -> str:
        lines = [
            f"Coordinator's view over {self.n_rounds} rounds: {self.coordinator_guarantee} by "
            f"{self.coordinator_composition.upper()} accounting (target {self.guarantee}; basic "
            f"composition of the rounds would give ({self.coordinator_epsilon_basic:.4g}, "
            f"{self.coordinator_delta_basic:g})-DP; each round ({self.round_epsilon:.4g}, "
            f"{self.round_delta:.3g})-DP).",
            f"Released model: {self.coordinator_guarantee}, post-processing of the coordinator's view "
            "(coordinator_dp; not 004 Thm 4.2), w.r.t. replacing one record.",
            f"Noise: per-round Gaussian, sum over parties N(0, {self.round_noise_sigma:.4g}^2 I) "
            f"({self.round_noise_scale:.4g} per party and coordinate), noise multiplier "
            f"{self.noise_multiplier:.4g} on sensitivity {self.round_sensitivity:g}; no one-time noise.",
            *self._data_and_secure_sum_lines(),
        ]
        lines += [f"Note: {note}" for note in self.notes]
        return "\n".join(lines)


@dataclass(frozen=True)
class LocalAggregationPrivacyRecord(_RecordMixin):
    """What the local-aggregation baseline (004 eq. 5) guarantees and how.

    Attributes
    ----------
    mechanism : str
        ``"local_aggregation"``.
    epsilon, delta : float
        Pure ``epsilon``-DP (``delta = 0``) for the released average.
    sensitivity : float
        ``(2 L R / (n_min alpha) + 2 r) / K`` (note 12).
    noise_distribution : str
        ``"l2-laplace"``.
    noise_scale : float
        ``sensitivity / epsilon``.
    coordinator_epsilon, coordinator_delta : float
        The coordinator sees one secure sum, the released average itself.
    n_parties, n_samples, n_min : int
    n_samples_by_party : tuple of int
    data_norm, lipschitz, alpha : float
    rows_clipped : int
    tol : float
        Gradient-norm tolerance of each local solve.
    solution_radius_allowance : float
        ``r = tol / alpha``, fixed before solving.
    solution_radius : float
        Largest certified distance of a local solve to its exact minimiser.
    certified : bool
    secure_sum : SecureSumSummary
    loss, reference : str
    notes : tuple of str
    """

    mechanism: str
    epsilon: float
    delta: float
    sensitivity: float
    noise_distribution: str
    noise_scale: float
    coordinator_epsilon: float
    coordinator_delta: float
    n_parties: int
    n_samples: int
    n_min: int
    n_samples_by_party: tuple
    data_norm: float
    lipschitz: float
    alpha: float
    rows_clipped: int
    tol: float
    solution_radius_allowance: float
    solution_radius: float
    certified: bool
    secure_sum: SecureSumSummary
    loss: str
    reference: str
    notes: tuple

    @property
    def guarantee(self) -> str:
        return _describe(self.epsilon, self.delta)

    def summary(self) -> str:
        lines = [
            f"Released model: {self.guarantee} (output perturbation of the average, 004 eq. 5).",
            f"Coordinator's view: {_describe(self.coordinator_epsilon, self.coordinator_delta)} "
            "(one secure sum: the noisy average).",
            f"Sensitivity {self.sensitivity:.4g} = (2 L R / (n_min alpha) + 2 r) / K with n_min = "
            f"{self.n_min}, K = {self.n_parties}; l2-Laplace noise, scale {self.noise_scale:.4g}.",
            f"Data: N = {self.n_samples} {list(self.n_samples_by_party)}, R = {self.data_norm:g}, "
            f"{self.rows_clipped} rows clipped; alpha = {self.alpha:g}, {self.loss} loss.",
            f"Local solves: radius <= {self.solution_radius:.3g} "
            f"(allowance {self.solution_radius_allowance:.3g}).",
            f"Secure sum: {self.secure_sum.engine}, C = {self.secure_sum.clipping_range:g}; "
            f"{self.secure_sum.coordinates_clipped} coordinates clipped.",
        ]
        lines += [f"Note: {note}" for note in self.notes]
        return "\n".join(lines)
