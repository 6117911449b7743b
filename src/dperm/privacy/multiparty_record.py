"""``privacy_`` of the multiparty classifiers: the guarantee proven for the release, and every public
number behind it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dperm.privacy.collusion import CollusionGuarantee
from dperm.privacy.local_aggregation import LocalAggregationCalibration
from dperm.privacy.newton import NewtonCalibration
from dperm.privacy.psgd import CoordinatorView, PSGDCalibration
from dperm.privacy.release import DERIVED, PUBLIC, RecordBase, describe_guarantee, privacy_record, released

__all__ = ["LocalAggregationPrivacyRecord", "NewtonPrivacyRecord", "PSGDPrivacyRecord", "SecureSumSummary"]



@dataclass(frozen=True)
class SecureSumSummary:
    """:class:`~dperm.multiparty.secure_sum.SecureSumReport` s of many rounds, totalled (goes into ``privacy_``).

    Attributes
    ----------
    engine : str
    n_sums : int
        Secure sums run.
    clipping_range, quantization_range, modulus_range : float, int, int
    coordinates_clipped : int or None
        Clipped coordinates of the parties' vectors over all rounds and
        parties; ``None`` when not counted (see :class:`~dperm.multiparty.secure_sum.SecureSumReport`).
    sums_with_clipping : int or None
        Rounds in which at least one coordinate was clipped; ``None`` when not counted.
    error_bound : float
        Per-round, per-coordinate bound on the encoding error (no clipping).
    """

    engine: str
    n_sums: int
    clipping_range: float
    quantization_range: int
    modulus_range: int
    coordinates_clipped: int | None
    sums_with_clipping: int | None
    error_bound: float


#: The record's keys of :class:`PSGDCalibration`'s numbers (``None``: not shown by the record;
#: the collusion threshold is the ``collusion`` field's).
_PSGD_NAMES = {"epsilon": "target_epsilon", "delta": "target_delta", "n_features": None,
               "coordinator_accountant": None, "collusion_threshold": None}
#: :class:`NewtonCalibration`'s numbers the Newton record does not show.
_NEWTON_NAMES = {"epsilon": "target_epsilon", "delta": "target_delta", **dict.fromkeys((
    "n_features", "max_party_samples", "collusion_threshold", "gradient_scale", "hessian_scale",
    "sensitivity_steps", "party_sigma_squared", "tau", "range_probability", "clipping_range",
    "quantization_range", "modulus_range"))}
#: The record's keys of :class:`CoordinatorView`'s numbers.
_VIEW_NAMES = {"epsilon_basic": "coordinator_epsilon_basic", "delta_basic": "coordinator_delta_basic",
               "epsilon": "coordinator_epsilon", "delta": "coordinator_delta",
               "composition": "coordinator_composition", "slack": "composition_slack"}


@privacy_record
class PSGDPrivacyRecord(RecordBase):
    """What a PSGD run guarantees for what it releases, and how it was calibrated.

    Every field is a public input, a number computed from public inputs, or
    (``secure_sum``'s clipping totals, ``gop_equivalent``) a function of the
    parties' noisy replies that :func:`~dperm.privacy.psgd.clipping_count_is_covered`
    admits; nothing is computed from the private rows.

    The headline (``epsilon``, ``delta``, :attr:`guarantee`) is the guarantee
    proven for the released ``w_T`` after the ``n_rounds`` that were run:
    ``w_T`` is computed from the coordinator's view (the secure sums) and
    public constants only, so it is a post-processing of that view and has
    its guarantee (paper note 13;
    :func:`~dperm.privacy.psgd.psgd_coordinator_view`):

    - ``coordinator_dp=False`` (004's scheme): each round's sum is
      ``round_epsilon``-DP (``rho`` noise), composed over ``n_rounds`` by the
      tighter of basic and advanced composition. 004 Thm 4.2's
      ``(target_epsilon, target_delta)`` is proven for the point PSGD
      converges to (GOP's minimiser, Alg. 4), not for a finite-``T`` iterate:
      it is stated in ``notes`` only;
    - ``coordinator_dp=True`` (beyond 004): the per-round noise is Gaussian,
      calibrated so that the view is ``(target_epsilon, target_delta)``-DP by
      a PLD / RDP accountant; the headline is the accountant's epsilon
      (``<= target_epsilon``) at ``target_delta``.

    The run's :class:`~dperm.privacy.psgd.PSGDCalibration` is one field (``calibration``) and
    the coordinator's view's :class:`~dperm.privacy.psgd.CoordinatorView` another (``view``);
    their numbers read and serialise as the record's own keys below (``record.noise_sigma``;
    the calibration's ``epsilon``, ``delta`` as ``target_epsilon``, ``target_delta``, the
    view's as ``coordinator_*`` and ``composition_slack``), in :attr:`SERIALISED_ORDER`. The
    calibration's ``n_features``, ``coordinator_accountant`` and ``collusion_threshold`` are
    not keys of the record (the threshold is ``collusion``'s) and are None in a record read back.

    Attributes
    ----------
    mechanism : str
        ``"psgd"``.
    epsilon, delta : float
        Guarantee of the released classifier ``w_T``: equal to
        ``coordinator_epsilon``, ``coordinator_delta``.
    calibration : PSGDCalibration
        The keys up to ``n_rounds`` not from ``view``, ``n_parties``, ``n_samples``, ``data_norm``,
        ``lipschitz``, ``curvature``, ``alpha``, ``loss`` and ``coordinator_dp`` onwards are its.
    view : CoordinatorView
        ``coordinator_epsilon_basic`` to ``composition_slack`` are its.
    target_epsilon, target_delta : float
        The public (epsilon, delta) the noise was calibrated for (the
        estimator's ``epsilon`` and ``delta``): 004 Thm 4.2's guarantee of the
        limit point, or the coordinator-DP target.
    epsilon_tilde : float
        ``eps~`` of computeSlack (004 Proc. 2, paper note 4).
    extra_regularization : float
        ``Delta`` of computeSlack; PSGD minimises with ``alpha + Delta``.
    noise_sigma, party_noise_sigma : float
        ``sigma = L R sigma*`` of the total one-time noise, and ``sigma/sqrt(K)``
        of each party's ``eta^k`` (004 Proc. 3; paper notes 2-3).
    round_epsilon : float
        Guarantee of one round's sum with respect to one record.
    round_sensitivity : float
        ``2 L R`` (004 Prop. 3.1, paper note 2).
    round_noise_scale : float
        Per-coordinate discrete Laplace scale of each ``rho_t^k`` (the float-safe form of 004 eq. 2's
        ``1/beta = 2 L R / round_epsilon``: L1 bound ``sqrt(d) 2 L R`` on a power-of-two grid).
    n_rounds : int
    coordinator_epsilon_basic, coordinator_delta_basic : float
        ``n_rounds * round_epsilon`` and 0 (basic composition).
    coordinator_epsilon, coordinator_delta : float
        The coordinator's view over the ``n_rounds``: the tighter of basic and
        advanced composition, or the PLD / RDP account (``coordinator_dp``).
    coordinator_composition : {"basic", "advanced", "pld", "rdp"}
    composition_slack : float
        ``delta'`` of advanced composition.
    n_parties, n_samples : int
    n_samples_by_party : tuple of int
        Public party sizes ``N_k`` (004 Alg. 1 takes ``N`` as input).
    data_norm, lipschitz, curvature, alpha : float
    step_size : str
        The step-size rule ``z_t``.
    secure_sum : SecureSumSummary
        The engine and its encoding. Its clipping totals count the
        coordinates of the parties' noisy replies that the fixed-point
        encoding clipped: each party counts on its own reply after its DP
        noise and before quantisation, so with 004's scheme the total is
        post-processing of the rounds' DP replies and covered by the headline
        (paper note 14). With ``coordinator_dp`` they are ``None``: not revealed.
    gop_equivalent : bool
        False when the secure sum clipped a coordinate in some round (then
        the iterates do not follow Alg. 1 and Thm 4.2's equivalence with GOP
        fails), and always False with ``coordinator_dp``. A function of the
        clipping totals above.
    loss : str
    reference : str
    notes : tuple of str
        Plain-language caveats (Thm 4.2's scope, clipping, trust assumptions).
    collusion : CollusionGuarantee
        One field, serialised as the keys ``collusion_threshold`` (``t``),
        ``threshold_epsilon``, ``threshold_delta`` (the headline: the guarantee
        with ``t`` colluders) and ``epsilon_by_colluders`` (``c = 0, ..., K - 1``;
        the same for every ``c`` in 004's scheme, whose per-round noise is not
        split). :mod:`dperm.privacy.collusion`.
    coordinator_dp : bool
        Which scheme ran (see above).
    round_noise : {"discrete-laplace", "gaussian"}
        Distribution of ``rho_t^k``; ``round_noise_scale`` is its discrete Laplace
        scale per coordinate or, for the Gaussian, one party's std per coordinate.
    round_noise_sigma : float
        Gaussian scheme: std per coordinate of the summed per-round noise; 0 otherwise.
    noise_multiplier : float
        Gaussian scheme: ``z = round_noise_sigma / round_sensitivity``; 0 otherwise.
    round_delta : float
        Gaussian scheme: one round is ``(round_epsilon, round_delta)``-DP; 0 otherwise.
    """

    mechanism: str = released(PUBLIC)
    epsilon: float = released(DERIVED)
    delta: float = released(DERIVED)
    calibration: PSGDCalibration = released(DERIVED, embed=PSGDCalibration, names=_PSGD_NAMES)
    view: CoordinatorView = released(DERIVED, embed=CoordinatorView, names=_VIEW_NAMES)
    n_samples_by_party: tuple = released(PUBLIC)
    step_size: str = released(PUBLIC)
    secure_sum: SecureSumSummary = released(DERIVED)
    gop_equivalent: bool = released(DERIVED)
    reference: str = released(PUBLIC)
    notes: tuple = released(PUBLIC)
    collusion: CollusionGuarantee = released(DERIVED, embed=CollusionGuarantee)

    #: The serialised keys (``to_dict``, JSON, model files) in the order records always had.
    SERIALISED_ORDER: ClassVar[tuple] = (
        "mechanism", "epsilon", "delta", "target_epsilon", "target_delta", "epsilon_tilde",
        "extra_regularization", "noise_sigma", "party_noise_sigma", "round_epsilon", "round_sensitivity",
        "round_noise_scale", "n_rounds", "coordinator_epsilon_basic", "coordinator_delta_basic",
        "coordinator_epsilon", "coordinator_delta", "coordinator_composition", "composition_slack",
        "n_parties", "n_samples", "n_samples_by_party", "data_norm", "lipschitz", "curvature", "alpha",
        "step_size", "secure_sum", "gop_equivalent", "loss", "reference", "notes", "collusion_threshold",
        "threshold_epsilon", "threshold_delta", "epsilon_by_colluders", "coordinator_dp", "round_noise",
        "round_noise_sigma", "noise_multiplier", "round_delta",
    )

    @property
    def coordinator_guarantee(self) -> str:
        """The coordinator's-view guarantee in words."""
        return describe_guarantee(self.coordinator_epsilon, self.coordinator_delta)

    def summary(self) -> str:
        """A readable account: the released model's guarantee first, then how it was reached."""
        if self.coordinator_dp:
            return self._coordinator_dp_summary()
        return _with_notes(self.notes, [
            f"Released model (w_T after {self.n_rounds} rounds): {self.guarantee} w.r.t. replacing one "
            "record, as a post-processing of the coordinator's view.",
            f"Coordinator's view over {self.n_rounds} rounds: {self.coordinator_guarantee} by "
            f"{self.coordinator_composition} composition (basic: {self.coordinator_epsilon_basic:g}-DP; "
            f"each round {self.round_epsilon:g}-DP; delta' = {self.composition_slack:g}).",
            f"Noise: one-time eta ~ N(0, {self.noise_sigma:.4g}^2 I) in total "
            f"({self.party_noise_sigma:.4g} per party and coordinate); per-round rho discrete Laplace "
            "per coordinate (float-safe), scale "
            f"{self.round_noise_scale:.4g} (sensitivity {self.round_sensitivity:g}).",
            f"computeSlack: eps~ = {self.epsilon_tilde:.4g}, Delta = {self.extra_regularization:.4g} "
            f"(calibrated for 004 Thm 4.2's target ({self.target_epsilon:g}, {self.target_delta:g}); see the notes).",
            self.collusion.summary_line(),
            *self._data_and_secure_sum_lines(),
        ])

    def _data_and_secure_sum_lines(self) -> list[str]:
        """The data, secure-sum and step-size lines both summaries end with."""
        return [
            f"Data: {self.n_parties} parties, N = {self.n_samples} {list(self.n_samples_by_party)}, "
            f"R = {self.data_norm:g}; alpha = {self.alpha:g}, L = {self.lipschitz:g}, c = {self.curvature:g}, "
            f"{self.loss} loss.",
            f"Secure sum: {self.secure_sum.engine}, C = {self.secure_sum.clipping_range:g}, "
            f"Q = {self.secure_sum.quantization_range}, M = {self.secure_sum.modulus_range}; "
            + _clipping_text(self.secure_sum),
            f"Steps: {self.step_size}.",
        ]

    def _coordinator_dp_summary(self) -> str:
        return _with_notes(self.notes, [
            f"Released model (w_T after {self.n_rounds} rounds): {self.guarantee} w.r.t. replacing one "
            "record, as a post-processing of the coordinator's view (coordinator_dp; not 004 Thm 4.2).",
            f"Coordinator's view over {self.n_rounds} rounds: {self.coordinator_guarantee} by "
            f"{self.coordinator_composition.upper()} accounting (target "
            f"{describe_guarantee(self.target_epsilon, self.target_delta)}; basic composition of the rounds would give "
            f"({self.coordinator_epsilon_basic:.4g}, {self.coordinator_delta_basic:g})-DP; each round "
            f"({self.round_epsilon:.4g}, {self.round_delta:.3g})-DP).",
            "Noise: per-round Gaussian (floating point, not float-safe), any "
            f"{self.n_parties - self.collusion.collusion_threshold} parties' sum "
            f"N(0, {self.round_noise_sigma:.4g}^2 I) "
            f"({self.round_noise_scale:.4g} per party and coordinate), noise multiplier "
            f"{self.noise_multiplier:.4g} on sensitivity {self.round_sensitivity:g}; no one-time noise.",
            self.collusion.summary_line(),
            *self._data_and_secure_sum_lines(),
        ])


def _with_notes(notes, lines: list[str]) -> str:
    """The summary's lines, then one ``Note:`` line per note."""
    return "\n".join([*lines, *(f"Note: {note}" for note in notes)])


def _clipping_text(summary: SecureSumSummary) -> str:
    """The secure sum's clipping totals, or why there are none."""
    if summary.coordinates_clipped is None:
        return "clipping is not counted (not covered by the guarantee; each party warns in its own log)."
    return (f"{summary.coordinates_clipped} noisy coordinates clipped in {summary.sums_with_clipping} of "
            f"{summary.n_sums} rounds.")


@privacy_record
class LocalAggregationPrivacyRecord(RecordBase):
    """What the local-aggregation baseline (004 eq. 5) guarantees and how.

    Every field is a public input or computed from public inputs: the local
    solves are described by their public tolerance and the radius the noise
    was calibrated to, not by what they achieved, and no clipping count is
    revealed (the noise-free contributions enter the secure sum).

    The release's :class:`~dperm.privacy.local_aggregation.LocalAggregationCalibration` is one
    field (``calibration``): ``epsilon``, ``sensitivity``, ``noise_scale``, ``noise_grid``,
    ``n_min``, ``n_samples_by_party``, ``data_norm``, ``lipschitz``, ``alpha``, ``tol``,
    ``solution_radius_allowance`` and ``loss`` are its numbers, read and serialised as the
    record's own keys in :attr:`SERIALISED_ORDER` (its ``n_features`` is not a key).

    Attributes
    ----------
    mechanism : str
        ``"local_aggregation"``.
    calibration : LocalAggregationCalibration
    epsilon, delta : float
        Pure ``epsilon``-DP (``delta = 0``) for the released average.
    sensitivity : float
        ``(2 L R / (n_min alpha) + 2 r) / K`` (paper note 12).
    noise_distribution : str
        ``"discrete-laplace"``: float-safe, on the grid ``noise_grid``.
    noise_scale : float
        Per-coordinate scale ``g k / epsilon`` (L1 bound ``sqrt(d) S`` on the grid).
    noise_grid : float
        The power-of-two grid ``g`` of every contribution and of the noise.
    coordinator_epsilon, coordinator_delta : float
        The coordinator sees one secure sum, the released average itself.
    n_parties, n_samples, n_min : int
    n_samples_by_party : tuple of int
    data_norm, lipschitz, alpha : float
    tol : float
        Public gradient-norm tolerance every local solve must certify
        (a solve that does not is refused before anything is sent).
    solution_radius_allowance : float
        ``r = tol / alpha``: the public radius the sensitivity is calibrated to.
    secure_sum : SecureSumSummary
        Engine and encoding; its clipping totals are None (not counted).
    loss, reference : str
    notes : tuple of str
    """

    mechanism: str = released(PUBLIC)
    calibration: LocalAggregationCalibration = released(DERIVED, embed=LocalAggregationCalibration,
                                                        names={"n_features": None})
    coordinator_epsilon: float = released(DERIVED)
    n_parties: int = released(PUBLIC)
    n_samples: int = released(PUBLIC)
    secure_sum: SecureSumSummary = released(DERIVED)
    reference: str = released(PUBLIC)
    notes: tuple = released(PUBLIC)
    delta: float = released(DERIVED, 0.0)
    noise_distribution: str = released(PUBLIC, "discrete-laplace")
    coordinator_delta: float = released(DERIVED, 0.0)

    #: The serialised keys in the order records always had.
    SERIALISED_ORDER: ClassVar[tuple] = (
        "mechanism", "epsilon", "delta", "sensitivity", "noise_distribution", "noise_scale", "noise_grid",
        "coordinator_epsilon", "coordinator_delta", "n_parties", "n_samples", "n_min", "n_samples_by_party",
        "data_norm", "lipschitz", "alpha", "tol", "solution_radius_allowance", "secure_sum", "loss",
        "reference", "notes",
    )

    def summary(self) -> str:
        return _with_notes(self.notes, [
            f"Released model: {self.guarantee} (output perturbation of the average, 004 eq. 5).",
            f"Coordinator's view: {describe_guarantee(self.coordinator_epsilon, self.coordinator_delta)} "
            "(one secure sum: the noisy average).",
            f"Sensitivity {self.sensitivity:.4g} = (2 L R / (n_min alpha) + 2 r) / K with n_min = "
            f"{self.n_min}, K = {self.n_parties}; discrete Laplace noise per coordinate, scale "
            f"{self.noise_scale:.4g} on a grid of {self.noise_grid:.3g}.",
            f"Data: N = {self.n_samples} {list(self.n_samples_by_party)}, R = {self.data_norm:g}; "
            f"alpha = {self.alpha:g}, {self.loss} loss.",
            f"Local solves: each certified to ||grad J_k|| <= tol = {self.tol:.3g}, i.e. within "
            f"r = {self.solution_radius_allowance:.3g} of its minimiser.",
            f"Secure sum: {self.secure_sum.engine}, C = {self.secure_sum.clipping_range:g}; "
            + _clipping_text(self.secure_sum),
        ])




@privacy_record
class NewtonPrivacyRecord(RecordBase):
    """What a run of the few-round Newton protocol guarantees, and how it was calibrated.

    Every field is a public input or a number computed from public inputs
    (:class:`~dperm.privacy.newton.NewtonCalibration`); nothing is
    computed from the private rows or from the secure sums' values.

    The headline (``epsilon``, ``delta``) is proven for the coordinator's
    whole view over ``n_rounds`` secure sums, hence for the released ``w_T``
    (post-processing): the Renyi-DP account of the distributed discrete
    Gaussian (``rdp_epsilon`` at ``rdp_delta``) plus ``range_delta`` for the
    event that some noise leaves the secure sum's range
    (:mod:`dperm.privacy.newton`), with the coordinator knowing the noise of
    up to ``collusion_threshold`` parties.

    The run's :class:`~dperm.privacy.newton.NewtonCalibration` is one field (``calibration``);
    the numbers below that it holds read and serialise as the record's own keys (its
    ``epsilon``, ``delta`` as ``target_epsilon``, ``target_delta``), in :attr:`SERIALISED_ORDER`.
    Its numbers the record never showed (the scales, the grid's variance and ``tau``, the
    secure sum's encoding, ``n_features``, ``max_party_samples``, ``range_probability``; ``t``
    is ``collusion``'s) are not keys and are None in a record read back.

    Attributes
    ----------
    mechanism : str
        ``"multiparty_newton"``.
    epsilon, delta : float
        Guarantee of the coordinator's view and of the released model.
    calibration : NewtonCalibration
    target_epsilon, target_delta : float
        The estimator's ``epsilon`` and ``delta``.
    rdp_epsilon, rdp_delta, range_delta : float
    collusion_epsilon : float
        ``epsilon`` (same ``delta`` accounting) left for a party's records if the
        coordinator learns the other ``K - 1`` parties' noise shares.
    collusion : CollusionGuarantee
        One field, serialised as ``collusion_threshold`` (``t``: each share is
        sized so that the ``K - t`` honest shares meet the target),
        ``threshold_epsilon``, ``threshold_delta`` (the headline) and
        ``epsilon_by_colluders`` (KLS 2021 Thm 1 with ``K - c`` parties, at
        ``rdp_delta``, for ``c = 0, ..., K - 1``).
    noise : str
        ``"distributed-discrete-gaussian"``.
    noise_multiplier : float
        Summed noise std over the rounded per-round sensitivity.
    party_noise_std : float
        One party's noise std per coordinate, in the packed (scaled) units.
    gradient_noise_std, hessian_noise_std : float
        Std per coordinate of the summed noise on ``sum_k G_k`` and on a diagonal entry of ``sum_k H_k``.
    gradient_share : float
    gradient_sensitivity, hessian_sensitivity : float
        ``2 L R`` and ``sqrt(2) c R^2``.
    grid_step : float
    dimension : int
        Numbers per party per round, ``d + d (d + 1) / 2``.
    n_rounds, n_parties, n_samples : int
    n_samples_by_party : tuple of int
    data_norm, lipschitz, curvature, alpha : float
    loss : str
    secure_sum : SecureSumSummary
        Engine and encoding; no clipping count (not revealed).
    accountant : str
    reference : str
    notes : tuple of str
    """

    mechanism: str = released(PUBLIC)
    epsilon: float = released(DERIVED)
    delta: float = released(DERIVED)
    calibration: NewtonCalibration = released(DERIVED, embed=NewtonCalibration, names=_NEWTON_NAMES)
    collusion_epsilon: float = released(DERIVED)
    noise: str = released(PUBLIC)
    party_noise_std: float = released(DERIVED)
    gradient_noise_std: float = released(DERIVED)
    hessian_noise_std: float = released(DERIVED)
    n_samples_by_party: tuple = released(PUBLIC)
    secure_sum: SecureSumSummary = released(DERIVED)
    accountant: str = released(PUBLIC)
    reference: str = released(PUBLIC)
    notes: tuple = released(PUBLIC)
    collusion: CollusionGuarantee = released(DERIVED, embed=CollusionGuarantee)

    #: The serialised keys (``to_dict``, JSON, model files) in the order records always had.
    SERIALISED_ORDER: ClassVar[tuple] = (
        "mechanism", "epsilon", "delta", "target_epsilon", "target_delta", "rdp_epsilon", "rdp_delta",
        "range_delta", "collusion_epsilon", "noise", "noise_multiplier", "party_noise_std",
        "gradient_noise_std", "hessian_noise_std", "gradient_share", "gradient_sensitivity",
        "hessian_sensitivity", "grid_step", "dimension", "n_rounds", "n_parties", "n_samples",
        "n_samples_by_party", "data_norm", "lipschitz", "curvature", "alpha", "loss", "secure_sum",
        "accountant", "reference", "notes", "collusion_threshold", "threshold_epsilon", "threshold_delta",
        "epsilon_by_colluders",
    )

    def summary(self) -> str:
        return _with_notes(self.notes, [
            f"Released model (w_T after {self.n_rounds} Newton rounds): {self.guarantee} w.r.t. replacing one "
            "record, as a post-processing of the coordinator's view (the secure sums).",
            f"Coordinator's view: Renyi DP of the distributed discrete Gaussian, ({self.rdp_epsilon:.4g}, "
            f"{self.rdp_delta:.3g})-DP by {self.accountant}, plus {self.range_delta:.2g} for the secure-sum range "
            f"event (target {describe_guarantee(self.target_epsilon, self.target_delta)}).",
            f"Noise: each party adds exact discrete Gaussian noise (float-safe) to its {self.dimension} packed "
            f"numbers per round; summed noise std {self.gradient_noise_std:.4g} per gradient coordinate and "
            f"{self.hessian_noise_std:.4g} per Hessian diagonal entry (noise multiplier "
            f"{self.noise_multiplier:.4g}; gradient share {self.gradient_share:g}).",
            f"Collusion: if the coordinator learns {self.n_parties - 1} parties' noise shares, the remaining party's "
            f"records are protected at epsilon = {self.collusion_epsilon:.4g} (same delta accounting).",
            self.collusion.summary_line(),
            f"Data: {self.n_parties} parties, N = {self.n_samples} {list(self.n_samples_by_party)}, "
            f"R = {self.data_norm:g}; alpha = {self.alpha:g}, L = {self.lipschitz:g}, c = {self.curvature:g}, "
            f"{self.loss} loss.",
            f"Secure sum: {self.secure_sum.engine}, C = {self.secure_sum.clipping_range:g}, "
            f"Q = {self.secure_sum.quantization_range}, M = {self.secure_sum.modulus_range}; a reply leaves "
            "[-C, C] only on the range event counted in delta, and nothing about clipping is revealed.",
        ])
