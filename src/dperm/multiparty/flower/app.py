"""Multiparty PSGD across machines: the party's ClientApp and the coordinator's ServerApp.

The networked deployment of 004 Alg. 1 on Flower 1.41 (``dperm party serve``
and ``dperm coordinate``, :mod:`dperm.multiparty.flower.cli`):

- **party** (004 Proc. 3) -- :data:`client_app`, run by a Flower SuperNode
  whose ``node_config`` holds the path of the party's shard (``data-path``),
  its label column (``target``) and its own floor (``max-epsilon``,
  ``max-delta``, ``max-rounds``). It answers two public set-up queries
  (``describe``: its size ``N_k``, ``d`` and feature names; ``setup``: the
  public calibration and the run's identifier, which it recomputes and
  checks against its floor
  (:func:`~dperm.multiparty.privacy.check_psgd_calibration`), charges to its
  own spending ledger (:class:`~dperm.multiparty.ledger.PartyLedger`), and
  only then draws ``eta^k`` once for that run id and saves it in its run
  state file) and, each round up to the agreed number, the gradient request
  ``grad G_k(w_t) + rho_t^k + eta^k`` scaled by ``1/N``, inside Flower's
  ``secaggplus_mod``;
- **coordinator** (004 Alg. 1) -- :data:`server_app`, run by the SuperLink's
  ServerApp process: it waits for the ``K`` parties, calibrates from their
  public sizes (:func:`~dperm.multiparty.privacy.calibrate_psgd`) and runs
  :func:`~dperm.multiparty.protocol.psgd` on a :class:`FlowerGridNetwork`,
  whose every sum is one SecAgg+ round
  (:func:`~dperm.multiparty.flower.grid.secagg_sum_round`). It writes the
  model file and a status file named in its run config.

What crosses the network in the clear: the public sizes, ``d`` and feature
names, the calibration, ``w_t``, SecAgg+'s keys and encrypted shares, and
masked vectors. No metric is sent. With 004's scheme each party's count of
clipped coordinates of its noisy reply travels inside the secure sum
(:func:`~dperm.multiparty.flower.engine.encode_counts`), so only the total
is revealed (:func:`~dperm.privacy.psgd.clipping_count_is_covered`);
with ``coordinator_dp`` no count is sent. No party sends a count of its
rows scaled onto ``data_norm``: it warns in its own log. The coordinator is
trusted to follow the protocol (semi-honest); the parties do not trust its
calibration.

This module imports Flower at import time; :mod:`dperm.multiparty` never
imports it (the CLI and the Flower app bundle do, when Flower is needed).
"""

from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import NamedTuple

import numpy as np

from dperm.exceptions import DataClippingWarning
from dperm.losses import get_loss
from dperm.multiparty.flower._grid_network import ENGINE_NAME, GridNetwork, PartyInfo
from dperm.multiparty.flower._party import (  # noqa: F401  (load_shard: read from here by simulation and tests)
    coef_digest,
    load_run_document,
    load_shard,
    next_round,
    party_floor,
    party_ledger,
    party_name,
    party_rows,
    run_state_path,
    save_run_document,
    shard_description,
)
from dperm.multiparty.flower.checkpoint import CHECKPOINT_NAME
from dperm.multiparty.flower.engine import (
    FlowerSecureSum,
    check_capacity,
    check_flower_encoding,
    decode_counts,
    flower_poll_seconds,
    load_flower,
    object_pull_waits,
    party_payload,
)
from dperm.multiparty.flower.newton import FlowerNewtonNetwork, newton_reply, newton_secagg_terms, newton_setup
from dperm.multiparty.ledger import check_run_id
from dperm.multiparty.model_file import MODEL_FORMAT, MODEL_FORMAT_VERSION, party_spec
from dperm.multiparty.privacy import calibrate_psgd, check_psgd_calibration
from dperm.multiparty.protocol import GradientSumNetwork, Party, psgd, psgd_clipping_range
from dperm.multiparty.secure_sum import (
    DEFAULT_MODULUS_RANGE,
    DEFAULT_QUANTIZATION_RANGE,
    check_contribution,
)
from dperm.privacy.collusion import DEFAULT_COLLUSION_THRESHOLD
from dperm.privacy.psgd import PSGDCalibration, clipping_count_is_covered
from dperm.privacy.round_charges import psgd_round_charges

__all__ = [
    "CoordinatorSettings", "FlowerGridNetwork", "PartyRunState", "SIMULATION_ENGINE_NAME", "calibration_to_config",
    "client_app", "coordinate", "coordinator_main", "describe_parties", "load_run_state",
    "model_document", "party_reply", "party_secagg_terms", "party_setup", "server_app",
    "wait_for_parties", "write_json",
]

_flower = load_flower()

from flwr.serverapp import ServerApp  # noqa: E402  (after load_flower's environment)

from dperm.multiparty.flower._adapter import object_pull_backoff, server_identity  # noqa: E402

#: Format of a party's saved state for one run (its own file; never sent anywhere).
RUN_STATE_FORMAT = "dperm-party-psgd-run"
#: The same apps under Flower's simulation engine (:mod:`dperm.multiparty.flower.simulation`).
SIMULATION_ENGINE_NAME = "flower_secaggplus_simulation"


# -- the party (004 Proc. 3) -----------------------------------------------------------


class DeployedParty(Party):
    """A :class:`~dperm.multiparty.protocol.Party` whose state lives in a run state file.

    A SuperNode starts a fresh ClientApp process for every message, and a
    SuperNode (with its Flower context) may be restarted during a run, so
    the party is rebuilt from its shard each time and its one-time noise
    ``eta^k``, calibration and answer count are restored from its run state
    file, keyed by the run id (:func:`load_run_state`; the file never
    leaves the party's machine).
    """

    def restore(self, calibration: PSGDCalibration, one_time_noise, rounds_answered: int) -> None:
        """Re-install what :meth:`Party.setup` drew, without drawing it again."""
        if self._calibration is not None:
            raise RuntimeError(f"party {self.party_id!r} is already set up.")
        self._calibration = calibration
        self._one_time_noise = np.asarray(one_time_noise, dtype=float)
        self.rounds_answered = int(rounds_answered)


def _build_party(context, loss_name="logistic", h=0.5, data_norm=1.0, *, warn=True) -> DeployedParty:
    """The party from its shard; ``warn=False`` after the set-up, which already warned of clipped rows."""
    floor = party_floor(context)
    X, y = party_rows(context)
    with warnings.catch_warnings():
        if not warn:
            warnings.simplefilter("ignore", DataClippingWarning)
        return DeployedParty(X, y, loss=get_loss(loss_name, h=h), data_norm=data_norm,
                             party_id=party_name(context), random_state=None, max_epsilon=floor.max_epsilon,
                             max_delta=floor.max_delta, max_rounds=floor.max_rounds,
                             min_collusion_threshold=floor.min_collusion_threshold)


def calibration_to_config(calibration: PSGDCalibration, h: float) -> dict:
    """The public calibration as Flower config values (plain Python scalars; None left out)."""
    values = {key: (value if isinstance(value, str) else _plain(value))
              for key, value in asdict(calibration).items() if value is not None}
    values["h"] = float(h)
    return values


def calibration_from_config(config) -> tuple[PSGDCalibration, float]:
    """Rebuild the calibration on the party's side (:func:`calibration_to_config`'s inverse)."""
    declared = fields(PSGDCalibration)
    missing = sorted(field.name for field in declared if field.name not in config
                     and field.default is MISSING and field.default_factory is MISSING)
    if missing or "h" not in config:
        raise ValueError(f"the set-up message lacks calibration fields {missing or ['h']}.")
    return PSGDCalibration(**{f.name: config[f.name] for f in declared if f.name in config}), float(config["h"])


def _plain(value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return float(value)


class PartyRunState(NamedTuple):
    """A party's saved state for one PSGD run (its own file; never sent).

    ``last_answer`` is ``(round, sha256 of w_t, reply)`` of the last round
    answered (None before the first, or in a state an older dperm wrote);
    ``round_charges`` the ledger's charge after each of rounds ``1 .. T``,
    computed once at set-up from the party's own recomputation
    (:func:`~dperm.privacy.round_charges.psgd_round_charges`; empty in a state
    of a run charged whole at set-up by an older dperm).
    """

    calibration: PSGDCalibration
    h: float
    eta: np.ndarray
    rounds_answered: int
    last_answer: tuple | None = None
    round_charges: tuple = ()


def save_run_state(context, run_id: str, calibration: PSGDCalibration, h: float, eta, rounds_answered: int, *,
                   last_answer=None, round_charges=()) -> None:
    """Save the party's state for a run (mode 0600, replaced atomically): calibration, ``eta^k``, answers, charges."""
    save_run_document(run_state_path(context, run_id), {
        "format": RUN_STATE_FORMAT, "run-id": run_id, "calibration": calibration_to_config(calibration, h),
        "eta": [float(value) for value in np.asarray(eta, dtype=float)], "rounds-answered": int(rounds_answered),
        "round-charges": [[float(epsilon), float(delta)] for epsilon, delta in round_charges]}, last_answer)


def _parse_run_state(document, last) -> PartyRunState:
    calibration, h = calibration_from_config(document["calibration"])
    charges = tuple((float(epsilon), float(delta)) for epsilon, delta in document.get("round-charges", ()))
    return PartyRunState(calibration, h, np.asarray(document["eta"], dtype=float), int(document["rounds-answered"]),
                         last, charges)


def load_run_state(context, run_id: str) -> PartyRunState | None:
    """The :class:`PartyRunState` saved for run ``run_id``, or ``None`` if there is none."""
    return load_run_document(run_state_path(context, run_id), RUN_STATE_FORMAT, run_id, _parse_run_state,
                             "the party's saved state for run {run_id}, {path}, is unreadable ({error}); the "
                             "party refuses the run rather than draw new noise for it.")


def psgd_mechanism(calibration: PSGDCalibration) -> str:
    """The mechanism's name in the party's ledger."""
    return "psgd-coordinator-dp" if calibration.coordinator_dp else "psgd-004"


def party_setup(context, config) -> dict:
    """Answer a public set-up query (``describe`` or ``setup``) on the party's side.

    ``setup`` carries the calibration and the run id. The party checks the
    calibration against its floor and opens the run in its ledger under that
    run id (:meth:`~dperm.multiparty.ledger.PartyLedger.open_run`: refused
    unless the whole run's cost, the last of its prefix charges
    (:func:`~dperm.privacy.round_charges.psgd_round_charges`), fits what is
    left of its budget; nothing is charged yet: each round is charged as it
    is answered, :func:`party_reply`), and only then draws
    ``eta^k`` and saves it for that run with the charge of every prefix of
    rounds. A set-up of a run id already open (a resumed coordinator) draws
    nothing: the party re-uses the saved state if the calibration is the
    same, and refuses if it differs or the state is gone after a round was
    answered (fresh ``eta^k`` draws would let the coordinator average the
    one-time noise away, 004 Sec. 3.3).
    """
    action = config.get("action")
    if action == "describe":
        n_samples, n_features, features = shard_description(context)  # the shard is parsed once per process
        return {"name": party_name(context), "n-samples": n_samples, "n-features": n_features, "features": features}
    if action == "setup" and config.get("protocol") == "newton":
        return newton_setup(context, config)
    if action == "setup":
        run_id = check_run_id(config.get("run-id"))
        calibration, h = calibration_from_config(config)
        ledger, budget = party_ledger(context)
        party = _build_party(context, calibration.loss, h, calibration.data_norm)
        recomputed = check_psgd_calibration(calibration, party.floor, loss=party.loss, data_norm=party.data_norm,
                                            n_samples=party.n_samples, n_features=party.n_features,
                                            party_id=party.party_id)
        charges = psgd_round_charges(recomputed, slack=party.floor.max_delta)  # charges[-1]: the whole run's cost
        entry = ledger.open_run(run_id, psgd_mechanism(calibration), n_rounds=recomputed.n_rounds,
                                epsilon=charges[-1][0], delta=charges[-1][1], **budget)
        saved = load_run_state(context, run_id)
        if saved is None and entry.per_round and entry.rounds == 0:  # a new run (or one that never answered)
            party.setup(calibration)  # checks again, then draws eta^k once for this run
            save_run_state(context, run_id, calibration, h, party._one_time_noise, 0, round_charges=charges)
            return {"ready": True}
        _check_saved_setup(context, run_id, calibration, h, saved)
        return {"ready": True}  # the same run again: nothing charged, nothing drawn
    raise ValueError(f"unknown set-up action {action!r}; expected 'describe' or 'setup'.")


def _check_saved_setup(context, run_id: str, calibration: PSGDCalibration, h: float, saved) -> None:
    """A repeated set-up of run ``run_id``: its saved state must exist and hold the same calibration."""
    if saved is None:
        raise RuntimeError(f"party {party_name(context)!r} has already been charged for run {run_id} but its "
                           "saved noise state is gone; it refuses rather than draw new noise (004 Proc. 3).")
    if (saved.calibration, saved.h) != (calibration, h):
        raise RuntimeError(f"party {party_name(context)!r} was set up for run {run_id} with another "
                           "calibration; a new training needs a new run id.")


def party_reply(context, parameters, config) -> list:
    """One gradient request on the party's side (004 Proc. 3), before ``secaggplus_mod`` encodes it.

    Returns ``[reply, counts]`` with ``reply = scale * (grad G_k(w_t) +
    rho_t^k + eta^k)`` and ``counts`` the number of coordinates of ``reply``
    (noisy, not yet quantised) outside the clipping range, on the fixed-point
    grid; with ``coordinator_dp`` just ``[reply]`` (the count is not covered:
    :func:`~dperm.privacy.psgd.clipping_count_is_covered`), and the
    party warns in its own log. Nothing computed from the rows alone (such
    as how many rows were scaled onto ``data_norm``) is sent.

    Round ``t`` (``config["round"]``; the next round if it names none) is answered only if it is the next
    round of the party's own count for the run id (its ledger's), and at
    most the agreed ``n_rounds`` and its own ``max-rounds``: the answer is
    saved, then the prefix charge of ``t + 1`` rounds is booked in the
    ledger, before it leaves. The last round answered, asked again at the
    same ``w_t`` (a coordinator resuming after a crash inside that round),
    gets the same saved answer and costs nothing (004's scheme: each reply is
    ``eps_round``-DP by itself, so SecAgg+'s fresh rounding of it is
    post-processing; with ``coordinator_dp``, where only the sum is
    accounted, it is refused); any other round is refused.
    """
    if config.get("protocol") == "newton":
        return newton_reply(context, parameters, config)
    run_id = check_run_id(config.get("run-id"))
    saved = load_run_state(context, run_id)
    if saved is None:
        raise RuntimeError(f"party {party_name(context)!r} got a gradient request for run {run_id} before its "
                           "set-up.")
    calibration, h = saved.calibration, saved.h
    party = _build_party(context, calibration.loss, h, calibration.data_norm, warn=False)
    scale = float(config["scale"])
    if not math.isclose(scale, 1.0 / calibration.n_samples, rel_tol=1e-12):
        raise ValueError(f"the coordinator asked for scale {scale!r}; the public 1/N is "
                         f"{1.0 / calibration.n_samples!r}.")
    if len(parameters) != 1:
        raise ValueError(f"a gradient request carries one array (w_t); got {len(parameters)}.")
    coef = check_contribution(party.party_id, parameters[0], party.n_features)
    reply = _answer(context, run_id, saved, party, coef, config.get("round"), scale)
    return party_payload(party.party_id, reply, float(config["clipping-range"]), int(config["quantization-range"]),
                         clipping_count_is_covered(calibration))


def _answer(context, run_id: str, saved: PartyRunState, party: DeployedParty, coef, round_index,
            scale: float) -> np.ndarray:
    """The scaled reply to round ``round_index``: the saved one again, or a new one charged before it leaves."""
    digest = coef_digest(coef)
    ledger, budget, entry, answered, repeat = next_round(context, run_id, party.party_id, saved.rounds_answered,
                                                         saved.last_answer, round_index, digest)
    if repeat:
        if saved.calibration.coordinator_dp:
            raise RuntimeError(
                f"party {party.party_id!r} has answered round {answered} of run {run_id} and does not send "
                "it again: with coordinator_dp only the sum is accounted, and SecAgg+ would round the same reply "
                "afresh (outside the Gaussian accounting). The run ends here; it has cost the rounds answered.")
        return saved.last_answer[2]  # the same answer again: each reply is eps_round-DP by itself
    if entry.per_round and len(saved.round_charges) != saved.calibration.n_rounds:
        raise RuntimeError(f"party {party.party_id!r}'s saved state for run {run_id} has no per-round charges; it "
                           "refuses rather than answer a round its ledger does not account for.")
    party.restore(saved.calibration, saved.eta, answered)  # noisy_gradient refuses past n_rounds / max_rounds
    reply = scale * check_contribution(party.party_id, party.noisy_gradient(coef), party.n_features)
    # saved first: a crash before the charge leaves an answer that never left, and is drawn afresh if asked again
    save_run_state(context, run_id, saved.calibration, saved.h, saved.eta, answered + 1,
                   last_answer=(answered, digest, reply), round_charges=saved.round_charges)
    if entry.per_round:  # charged before anything is sent; refused once over the party's budget
        ledger.charge_round(run_id, answered + 1, *saved.round_charges[answered], **budget)
    return reply


def party_secagg_terms(context, config):
    """The SecAgg+ terms of the party's checked calibration for the round ``config`` asks for.

    ``K`` comes from the calibration the party checked and saved at set-up
    (never from the round message); the encoding is the one the party's
    count is encoded with (PSGD; ``config``) or its calibration's (Newton).
    :func:`~dperm.multiparty.flower.grid.secaggplus_guard` compares them with
    the round Flower has set up before :func:`party_reply` runs.
    """
    if config.get("protocol") == "newton":
        return newton_secagg_terms(context, config)
    run_id = check_run_id(config.get("run-id"))
    saved = load_run_state(context, run_id)
    if saved is None:
        raise RuntimeError(f"party {party_name(context)!r} got a gradient request for run {run_id} before its "
                           "set-up.")
    return _flower.SecAggTerms(n_parties=saved.calibration.n_parties, clipping_range=float(config["clipping-range"]),
                               quantization_range=int(config["quantization-range"]))


#: The party's ClientApp: ``secaggplus_mod`` around :func:`party_reply`, behind the party's SecAgg+ checks.
client_app = _flower.make_party_client_app(party_reply, party_setup, expected_terms=party_secagg_terms)


# -- the coordinator (004 Alg. 1) ------------------------------------------------------


class FlowerGridNetwork(GridNetwork, GradientSumNetwork):
    """PSGD's network over a Flower grid (004 Alg. 1): one SecAgg+ round per gradient sum.

    Parameters
    ----------
    grid, parties, timeout, server_context, h, engine_name, run_id
        As for :class:`GridNetwork`.
    clipping_range, quantization_range, modulus_range
        SecAgg+'s encoding.
    """

    def __init__(self, grid, parties, *, clipping_range, quantization_range=DEFAULT_QUANTIZATION_RANGE,
                 modulus_range=DEFAULT_MODULUS_RANGE, timeout=None, server_context=None, h=0.5,
                 engine_name=ENGINE_NAME, run_id=None):
        super().__init__(grid, parties, timeout=timeout, server_context=server_context, h=h,
                         engine_name=engine_name, run_id=run_id)
        self.clipping_range, self.quantization_range, self.modulus_range = check_flower_encoding(
            clipping_range, quantization_range, modulus_range)
        check_capacity(len(self.parties), self.quantization_range, self.modulus_range, FlowerSecureSum.modulus_note)
        self._count_clipped = False

    def setup(self, calibration: PSGDCalibration) -> None:
        """Send the calibration; every party checks it against its own floor (or the set-up fails)."""
        self._send_setup({"action": "setup", "run-id": self.run_id, **calibration_to_config(calibration, self.h)})
        self._count_clipped = clipping_count_is_covered(calibration)  # the parties decide the same way

    def gradient_sum(self, coef, scale: float, round_index: int):
        config = {"scale": float(scale), "round": int(round_index), "run-id": self.run_id,
                  "clipping-range": self.clipping_range,
                  "quantization-range": self.quantization_range}
        encoding = (self.clipping_range, self.quantization_range, self.modulus_range)
        total, *counts = self._secure_round(coef, config, round_index, encoding)
        if len(counts) != int(self._count_clipped):
            raise ValueError(f"round {round_index}: the parties sent {len(counts)} count arrays; "
                             f"expected {int(self._count_clipped)}.")
        clipped = None
        if self._count_clipped:
            (clipped,) = decode_counts(counts[0], [self.n_features], len(self.parties), self.clipping_range,
                                       self.quantization_range)
        return total, self._report(self.n_features, encoding, clipped)


@dataclass(frozen=True)
class CoordinatorSettings:
    """The coordinator's public inputs (the ``dperm coordinate`` options)."""

    n_parties: int
    epsilon: float
    delta: float
    alpha: float
    n_rounds: int
    data_norm: float = 1.0
    loss: str = "logistic"
    h: float = 0.5
    round_epsilon: float | None = None
    composition_slack: float | None = None
    quantization_range: int = DEFAULT_QUANTIZATION_RANGE
    modulus_range: int = DEFAULT_MODULUS_RANGE
    stage_timeout: float | None = None
    wait_seconds: float = 300.0
    coordinator_dp: bool = False
    coordinator_accountant: str = "pld"
    protocol: str = "psgd"
    gradient_share: float = 0.75
    #: The public collusion threshold ``t`` (:mod:`dperm.privacy.collusion`).
    collusion_threshold: int = DEFAULT_COLLUSION_THRESHOLD
    #: The training's run id (``dperm coordinate --run-id``); "" draws a fresh one.
    run_id: str = ""
    #: Continue ``run_id`` from its checkpoint's last completed round (``dperm coordinate --resume``).
    resume: bool = False

    def to_run_config(self) -> dict:
        """Flower run-config values: hyphenated keys, 0 standing for None."""
        values = {}
        for field in fields(self):
            value = getattr(self, field.name)
            values[field.name.replace("_", "-")] = 0.0 if value is None else value
        return values

    @classmethod
    def from_run_config(cls, config) -> CoordinatorSettings:
        values = {}
        for field in fields(cls):
            key = field.name.replace("_", "-")
            if key in config:
                value = config[key]
                if field.name in ("round_epsilon", "composition_slack", "stage_timeout") and value == 0:
                    value = None
                values[field.name] = value
        return cls(**values)


def wait_for_parties(grid, n_parties: int, wait_seconds: float, poll_seconds: float = 0.2) -> list:
    """Node ids of the ``K`` connected SuperNodes; raise if fewer arrive in time or more are there."""
    deadline = time.monotonic() + wait_seconds
    while True:
        node_ids = sorted(grid.get_node_ids())
        if len(node_ids) >= n_parties or time.monotonic() > deadline:
            break
        time.sleep(poll_seconds)
    if len(node_ids) < n_parties:
        raise TimeoutError(
            f"{len(node_ids)} of {n_parties} parties connected within {wait_seconds:g} s; start the missing "
            "`dperm party serve` processes or raise --wait."
        )
    if len(node_ids) > n_parties:
        raise ValueError(
            f"{len(node_ids)} SuperNodes are connected to this SuperLink but --shards is {n_parties}; "
            "every connected node takes part, so they must match."
        )
    return node_ids


def describe_parties(grid, node_ids, timeout=None) -> list:
    """Ask each party for its public size, ``d`` and feature names; check they agree."""
    with server_identity(grid.run.run_id):
        replies = _flower.query_parties(grid, node_ids, {"action": "describe"}, timeout=timeout)
    parties = [
        PartyInfo(node_id=node_id, name=str(reply["name"]), n_samples=int(reply["n-samples"]),
                  n_features=int(reply["n-features"]), features=tuple(reply["features"]))
        for node_id, reply in sorted(replies.items())
    ]
    schemas = {party.features for party in parties}
    if len(schemas) != 1:
        described = "; ".join(f"{party.name}: {list(party.features)}" for party in parties)
        raise ValueError(f"the parties' shards have different feature columns ({described}).")
    names = [party.name for party in parties]
    if len(set(names)) != len(names):
        raise ValueError(f"party names must be distinct; got {names} (dperm party serve --name).")
    return parties


def coordinate(grid, settings: CoordinatorSettings, server_context=None, engine_name=ENGINE_NAME,
               checkpoint_path=None):
    """Run the chosen protocol over the connected parties; return ``(result, parties, network, record)``.

    ``settings.protocol`` is ``"psgd"`` (004 Alg. 1) or ``"newton"`` (the
    few-round protocol, :mod:`dperm.multiparty.flower.newton`).
    ``engine_name`` is recorded in the privacy record (:data:`ENGINE_NAME`
    over a network, :data:`SIMULATION_ENGINE_NAME` under Flower's simulation).
    The run id is ``settings.run_id``, or a fresh one (``network.run_id``).
    With ``checkpoint_path`` a run (either protocol) writes its checkpoint
    there after every round (:mod:`dperm.multiparty.flower.checkpoint`), and
    ``settings.resume`` continues the run from it.
    """
    if settings.protocol not in ("psgd", "newton"):
        raise ValueError(f"protocol must be 'psgd' or 'newton'; got {settings.protocol!r}.")
    if settings.resume and (not settings.run_id or checkpoint_path is None):
        raise ValueError("resuming needs the run's id and its checkpoint (dperm coordinate --resume --workdir W).")
    if settings.run_id:
        check_run_id(settings.run_id)  # before any party is asked anything
    node_ids = wait_for_parties(grid, settings.n_parties, settings.wait_seconds)
    parties = describe_parties(grid, node_ids, timeout=settings.stage_timeout)
    sizes = [party.n_samples for party in parties]
    loss = get_loss(settings.loss, h=settings.h)
    if settings.protocol == "newton":
        return _coordinate_newton(grid, settings, parties, sizes, loss, server_context, engine_name, checkpoint_path)
    calibration = calibrate_psgd(
        epsilon=settings.epsilon, delta=settings.delta, alpha=settings.alpha, n_samples=sum(sizes),
        n_parties=len(sizes), n_features=parties[0].n_features, n_rounds=settings.n_rounds, loss=loss,
        data_norm=settings.data_norm, round_epsilon=settings.round_epsilon,
        coordinator_dp=bool(settings.coordinator_dp), coordinator_accountant=settings.coordinator_accountant,
        collusion_threshold=int(settings.collusion_threshold),
    )
    network = FlowerGridNetwork(
        grid, parties, clipping_range=psgd_clipping_range(calibration, sizes),
        quantization_range=settings.quantization_range, modulus_range=settings.modulus_range,
        timeout=settings.stage_timeout, server_context=server_context, h=settings.h,
        engine_name=engine_name, run_id=settings.run_id or None,
    )
    checkpoint = _checkpoint(settings, checkpoint_path, network.run_id, calibration_to_config(calibration, settings.h),
                             parties)
    result = psgd(network, calibration, composition_slack=settings.composition_slack,
                  completed=checkpoint.completed() if settings.resume else (),
                  on_round=None if checkpoint is None else checkpoint.record_round)
    return result, parties, network, result.record


def _checkpoint(settings, checkpoint_path, run_id: str, calibration: dict, parties):
    """The run's checkpoint (public values only: identity, calibration, sizes, noisy sums, iterates), or None.

    A resumed run's checkpoint must be the same run's (checked before any party is asked anything); a new
    run's is started empty.
    """
    from dperm.multiparty.flower.checkpoint import CoordinatorCheckpoint

    if checkpoint_path is None:
        return None
    identity = {"run_id": run_id, "protocol": settings.protocol, "calibration": calibration, "parties": parties}
    if not settings.resume:
        return CoordinatorCheckpoint.start(checkpoint_path, **identity)
    checkpoint = CoordinatorCheckpoint.load(checkpoint_path)
    checkpoint.check_continues(**identity)
    return checkpoint


def _coordinate_newton(grid, settings, parties, sizes, loss, server_context, engine_name, checkpoint_path=None):
    from dperm.multiparty.estimator import newton_record
    from dperm.multiparty.newton import private_newton
    from dperm.multiparty.newton_privacy import calibrate_newton

    calibration = calibrate_newton(
        epsilon=settings.epsilon, delta=settings.delta, alpha=settings.alpha, n_rounds=settings.n_rounds,
        n_samples_by_party=sizes, n_features=parties[0].n_features, loss=loss, data_norm=settings.data_norm,
        gradient_share=settings.gradient_share, collusion_threshold=int(settings.collusion_threshold))
    network = FlowerNewtonNetwork(grid, parties, timeout=settings.stage_timeout, server_context=server_context,
                                  h=settings.h, engine_name=engine_name, run_id=settings.run_id or None)
    checkpoint = _checkpoint(settings, checkpoint_path, network.run_id, calibration.to_config(), parties)
    result = private_newton(network, calibration, completed=checkpoint.completed() if settings.resume else (),
                            on_round=None if checkpoint is None else checkpoint.record_round)
    return result, parties, network, newton_record(result)


def model_document(result, parties, settings: CoordinatorSettings, record=None) -> dict:
    """The released model as a JSON-serialisable dict (no training rows, no seed).

    Format ``dperm-multiparty-model`` (read back by
    :func:`dperm.multiparty.model_file.model_from_document`, hence by
    ``dperm show`` and ``dperm predict``).
    """
    record = result.record if record is None else record
    params = {"epsilon": settings.epsilon, "delta": settings.delta, "alpha": settings.alpha,
              "n_rounds": settings.n_rounds, "data_norm": settings.data_norm, "loss": settings.loss, "h": settings.h,
              "collusion_threshold": int(settings.collusion_threshold)}
    if settings.protocol == "newton":
        estimator = "NewtonClassifier"
        params["gradient_share"] = settings.gradient_share
    else:
        estimator = "PSGDClassifier"
        params.update({"round_epsilon": settings.round_epsilon, "composition_slack": settings.composition_slack,
                       "coordinator_dp": bool(settings.coordinator_dp),
                       "coordinator_accountant": settings.coordinator_accountant})
    return {
        "format": MODEL_FORMAT,
        "version": MODEL_FORMAT_VERSION,
        "estimator": estimator,
        "engine": record.secure_sum.engine,
        "params": params,
        "classes": [-1, 1],
        "coef": [np.asarray(result.coef, dtype=float).tolist()],
        "intercept": [0.0],
        "features": list(parties[0].features),
        "parties": [party.name for party in parties],
        "privacy": record.to_dict(),
        # what every party did to its rows (Party: clip_rows_to_norm); predict repeats it
        "preprocessing": party_spec(parties[0].features, settings.data_norm).to_dict(),
    }


def write_json(path, document) -> None:
    Path(path).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


#: The coordinator's ServerApp.
server_app = ServerApp()


@server_app.main()
def coordinator_main(grid, context) -> None:
    """ServerApp entry point: run PSGD, write the model and a status file (paths in the run config)."""
    started_at = time.time()  # wall clock, to line up with the benchmark's own stamps
    settings = CoordinatorSettings.from_run_config(context.run_config)
    out, status_path = context.run_config["out"], context.run_config["status"]
    started = time.monotonic()
    # Flower's grid waits 3 s between pulls for replies, and 1 s, 2 s, ... for a reply's missing objects
    grid = _flower.PollingGrid(grid, flower_poll_seconds(_flower.GRID_POLL_SECONDS))
    try:
        with object_pull_backoff(*object_pull_waits()):
            result, parties, network, record = coordinate(
                grid, settings, server_context=context, engine_name=context.run_config.get("engine", ENGINE_NAME),
                checkpoint_path=Path(status_path).with_name(CHECKPOINT_NAME))  # the coordinator's work folder
    except Exception as error:
        write_json(status_path, {"ok": False, "error": f"{type(error).__name__}: {error}",
                                 "seconds": time.monotonic() - started, **_timing(started_at, grid)})
        raise
    write_json(out, model_document(result, parties, settings, record))
    write_json(status_path, {"ok": True, "seconds": time.monotonic() - started, "out": out,
                             "run_id": network.run_id,
                             "round_seconds": network.round_seconds, "summary": record.summary(),
                             **_timing(started_at, grid)})


def _timing(started_at: float, grid) -> dict:
    """Public timings for the status file: when the ServerApp started and each exchange with the parties."""
    return {"serverapp_started_at": started_at,
            "exchanges": [{"stage": label, "started_at": begin, "seconds": end - begin}
                          for label, begin, end in grid.timings]}
