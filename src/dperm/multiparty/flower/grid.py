"""Flower plumbing shared by the SecAgg+ engine and the networked deployment.

Imported only through :func:`dperm.multiparty.flower.engine.load_flower`,
which sets Flower's environment first; it imports ``flwr`` at the top and so
is never imported by ``dperm.multiparty`` itself. It uses Flower's public
API (``SecAggPlusWorkflow``'s stages, ``LegacyContext``, the compat
converters); what it needs of Flower's internals comes from
:mod:`~dperm.multiparty.flower._adapter`, which checks Flower's version.

- :class:`InProcessGrid`: a :class:`flwr.serverapp.grid.Grid` that routes
  each message to a :class:`flwr.clientapp.ClientApp` in the same process
  (deep copies both ways, as a wire would; an exception in a ClientApp
  becomes an error reply, as on a SuperNode). It records every message the
  server side sends and receives, so tests can audit the coordinator's view;
- :func:`secagg_sum_round`: one SecAgg+ round (Flower's four stages) over any
  Grid, in-process or networked, that reveals the parties' sum or raises;
- :func:`make_party_client_app`: a ClientApp with ``secaggplus_mod`` whose
  train function returns a party's vector, behind :func:`secaggplus_guard`;
- :func:`secaggplus_guard`: the party's check of each SecAgg+ stage message
  before Flower's mod answers it (the rule is in its docstring).
"""

from __future__ import annotations

import copy
import logging
import re
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from flwr.app import ConfigRecord, Context, Error, Message, MessageType, RecordDict
from flwr.client.mod import secaggplus_mod
from flwr.client.mod.secure_aggregation.secaggplus_mod import SecAggPlusState
from flwr.clientapp import ClientApp
from flwr.common import Code, FitIns, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.common.constant import ErrorCode
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, RECORD_KEY_STATE, Key, Stage
from flwr.compat.common import recorddict_compat as compat
from flwr.server.client_manager import SimpleClientManager
from flwr.server.compat.grid_client_proxy import GridClientProxy
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.strategy import Strategy
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey
from flwr.serverapp.grid import Grid
from flwr.supercore.logger import LOGGER_NAME
from flwr.supercore.run import Run

from dperm.exceptions import DropoutError, MalformedReplyError
from dperm.multiparty.flower import _roster
from dperm.multiparty.flower._adapter import (
    MASK_GENERATOR_DOMAIN,
    AbortOnDropoutSecAggPlusWorkflow,
    cryptographic_masks,
    server_identity,
    stamp_message_id,
)

__all__ = [
    "GRID_POLL_SECONDS", "MASK_GENERATOR_KEY", "InProcessGrid", "PollingGrid", "SecAggRefusal", "SecAggTerms",
    "make_party_client_app", "query_parties", "quiet_flower", "secagg_sum_round",
    "secaggplus_guard",
]

#: The weight every party reports: with ``max_weight = 1`` SecAgg+'s weighted
#: mean is the plain mean and ``sum = K_active * mean`` (shared note flower-secagg.md).
NUM_EXAMPLES = 1
MAX_WEIGHT = 1.0

#: The round config's entry naming the SecAgg+ mask generator the coordinator
#: unmasks with; a party masks with dperm's (:func:`secaggplus_guard`) and
#: refuses a round announcing another, whose sum would not be the parties'.
MASK_GENERATOR_KEY = "secagg-mask-generator"
_MASK_GENERATOR = MASK_GENERATOR_DOMAIN.decode("ascii")

_REASON = re.compile(r"^<class '(?P<type>[\w.]+)'>:<'(?P<message>.*)'>$", re.DOTALL)


def error_reason(error: BaseException) -> str:
    """The reason string a SuperNode puts in an error reply (``run_clientapp.py``)."""
    return str(type(error)) + ":<'" + str(error) + "'>"


@contextmanager
def quiet_flower(level=logging.WARNING):
    """Raise the ``flwr`` logger to ``level`` for the block (Flower logs every stage at INFO)."""
    logger = logging.getLogger(LOGGER_NAME)
    previous = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(previous)


# -- the in-process grid ---------------------------------------------------------------


class InProcessGrid(Grid):
    """A Flower Grid whose nodes are ClientApps in this process.

    Parameters
    ----------
    client_apps : mapping of node id (int) -> flwr.clientapp.ClientApp
    node_configs : mapping of node id -> dict, optional
        Each node's ``node_config`` (a SuperNode's ``--node-config``).
    record : bool, default=False
        Keep deep copies of every message the server side sends
        (``sent``) and receives (``received``).
    silent_after : mapping of node id -> int, optional
        Test hook: the node stops answering after that many messages (it
        "drops out" at a chosen stage); its messages get no reply.

    Notes
    -----
    Each node keeps one :class:`flwr.app.Context` for the grid's life, like
    a SuperNode keeps one per run; when a ClientApp raises, its context is
    left as it was before the message and the server gets an error reply
    with the reason format of Flower's SuperNode.
    """

    def __init__(self, client_apps, node_configs=None, *, record=False, silent_after=None, run_id=1):
        self._client_apps = dict(client_apps)
        node_configs = node_configs or {}
        self._contexts = {
            node_id: Context(run_id=run_id, node_id=node_id, node_config=dict(node_configs.get(node_id, {})),
                             state=RecordDict(), run_config={})
            for node_id in self._client_apps
        }
        self._run = Run.create_empty(run_id)
        self._replies: dict[str, Message] = {}
        self._answered = {node_id: 0 for node_id in self._client_apps}
        self.silent_after = dict(silent_after or {})
        self.record = record
        self.sent: list[Message] = []
        self.received: list[Message] = []

    def set_run(self, run) -> None:
        self._run = run

    @property
    def run(self):
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self):
        return list(self._client_apps)

    def _deliver(self, message: Message):
        node_id = message.metadata.dst_node_id
        if node_id not in self._client_apps:
            return Message(Error(code=ErrorCode.NODE_UNAVAILABLE, reason=f"node {node_id} is unknown"),
                           reply_to=message)
        if node_id in self.silent_after and self._answered[node_id] >= self.silent_after[node_id]:
            return None  # dropped out: no reply at all
        self._answered[node_id] += 1
        context = self._contexts[node_id]
        saved_state = copy.deepcopy(context.state)
        try:
            return self._client_apps[node_id](message, context)
        except Exception as error:  # noqa: BLE001 -- a SuperNode turns any ClientApp error into a reply
            context.state = saved_state
            return Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=error_reason(error)),
                           reply_to=message)

    def push_messages(self, messages):
        ids = []
        for message in messages:
            stamp_message_id(message, str(uuid.uuid4()))
            on_the_wire = copy.deepcopy(message)
            if self.record:
                self.sent.append(copy.deepcopy(message))
            reply = self._deliver(on_the_wire)
            if reply is not None:
                stamp_message_id(reply, str(uuid.uuid4()))
                self._replies[message.metadata.message_id] = copy.deepcopy(reply)
            ids.append(message.metadata.message_id)
        return ids

    def pull_messages(self, message_ids):
        replies = [self._replies.pop(mid) for mid in list(message_ids) if mid in self._replies]
        if self.record:
            self.received.extend(copy.deepcopy(reply) for reply in replies)
        return replies

    def send_and_receive(self, messages, *, timeout=None):
        # Every ClientApp has answered (or stayed silent) once push_messages returns.
        return self.pull_messages(self.push_messages(messages))


# -- the coordinator's polling grid -----------------------------------------------------

#: Seconds between the ServerApp's pulls for replies. Flower 1.41's networked
#: grid sleeps a fixed 3 s between pulls (``flwr/superlink/grid/http_grid.py``,
#: not configurable), which costs up to 3 s per SecAgg+ stage, 4 stages a round.
GRID_POLL_SECONDS = 0.05


def _stage_label(message: Message) -> str:
    """What a server-side message asks: ``secagg+:<stage>`` or ``query:<action>`` (for timings)."""
    content = message.content
    if "secaggplus_configs" in content.config_records:
        return f"secagg+:{content.config_records['secaggplus_configs'].get('stage', '?')}"
    if "config" in content.config_records:
        return f"{message.metadata.message_type}:{content.config_records['config'].get('action', '?')}"
    return str(message.metadata.message_type)


class PollingGrid(Grid):
    """A Grid that forwards to ``grid`` but polls for replies every ``poll_seconds``, and times each exchange.

    ``send_and_receive`` does what Flower's does (push, then pull until
    every reply is in or ``timeout`` has passed) with a shorter wait between
    pulls. ``timings`` lists ``(label, started, ended)`` per exchange
    (``time.time()`` stamps; :func:`_stage_label`), for benchmarks; labels
    and times are public (no message content is kept).
    """

    def __init__(self, grid, poll_seconds: float = GRID_POLL_SECONDS):
        if not poll_seconds > 0:
            raise ValueError(f"poll_seconds must be > 0; got {poll_seconds!r}.")
        self._grid = grid
        self.poll_seconds = float(poll_seconds)
        self.timings: list[tuple[str, float, float]] = []

    def set_run(self, run) -> None:
        self._grid.set_run(run)

    @property
    def run(self):
        return self._grid.run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        return self._grid.create_message(content, message_type, dst_node_id, group_id, ttl=ttl)

    def get_node_ids(self):
        return self._grid.get_node_ids()

    def get_nodes(self):
        return self._grid.get_nodes()

    def push_messages(self, messages):
        return self._grid.push_messages(messages)

    def pull_messages(self, message_ids):
        return self._grid.pull_messages(message_ids)

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        label = _stage_label(messages[0]) if messages else "empty"
        started = time.time()
        pending = set(self.push_messages(messages))
        deadline = None if timeout is None else time.monotonic() + timeout
        replies = []
        while pending:
            pulled = list(self.pull_messages(pending))
            replies.extend(pulled)
            pending.difference_update(reply.metadata.reply_to_message_id for reply in pulled)
            if not pending or (deadline is not None and time.monotonic() >= deadline):
                break
            time.sleep(self.poll_seconds if deadline is None else
                       max(0.0, min(self.poll_seconds, deadline - time.monotonic())))
        self.timings.append((label, started, time.time()))
        return replies


# -- the party side --------------------------------------------------------------------

_LOG = logging.getLogger("dperm.multiparty")


class SecAggRefusal(RuntimeError):
    """A party refused a SecAgg+ stage message (:func:`secaggplus_guard`); it sends nothing for it."""


@dataclass(frozen=True)
class SecAggTerms:
    """The SecAgg+ terms a party agreed to for one round, checked against its own calibration.

    Built by the protocol from the party's saved, checked calibration (not
    from the coordinator's word) and compared by :func:`secaggplus_guard`
    with the round Flower's mod has set up, before the party computes its reply.

    Attributes
    ----------
    n_parties : int
        ``K`` of the calibration: the SecAgg+ sample size, share number,
        threshold and number of public keys must all be ``K``.
    clipping_range : float
    quantization_range : int
        The fixed-point encoding the party's reply (and its count) is made for.
    modulus_range : int, optional
        Pinned when the calibration fixes it (Newton); otherwise only
        ``K x quantization_range < modulus_range`` is required (no wrap-around).
    """

    n_parties: int
    clipping_range: float
    quantization_range: int
    modulus_range: int | None = None


def _secagg_state(context) -> SecAggPlusState:
    """This party's SecAgg+ state as Flower's mod saved it (empty before the first set-up)."""
    saved = context.state.config_records.get(RECORD_KEY_STATE)
    return SecAggPlusState(**dict(saved)) if saved is not None else SecAggPlusState()


def _refuse(context, stage: str, reason: str):
    message = f"party {context.node_config.get('party-name', f'node {context.node_id}')!r} refuses the " \
              f"SecAgg+ {stage} message: {reason}"
    _LOG.warning(message)
    raise SecAggRefusal(message)


def _check_setup(context, configs) -> None:
    """Full threshold: every participant holds a share and all ``K`` are needed to rebuild a seed."""
    sample, shares, threshold = (configs.get(key) for key in (Key.SAMPLE_NUMBER, Key.SHARE_NUMBER, Key.THRESHOLD))
    if not (isinstance(sample, int) and sample >= 2 and shares == sample and threshold == sample):
        _refuse(context, Stage.SETUP, f"sample size {sample}, share number {shares} and reconstruction threshold "
                f"{threshold} must be one and the same K >= 2 (dperm tolerates no dropout).")
    if configs.get(Key.MAX_WEIGHT) != MAX_WEIGHT:
        _refuse(context, Stage.SETUP, f"max_weight {configs.get(Key.MAX_WEIGHT)!r} must be {MAX_WEIGHT} (every "
                f"party reports weight {NUM_EXAMPLES}).")


def _check_share_keys(context, configs, state) -> None:
    """Exactly the ``K`` participants of the set-up, this party among them, each with its keys."""
    nodes = {int(key) for key in configs if key.isdigit()}
    if len(nodes) != state.sample_num or state.nid not in nodes:
        _refuse(context, Stage.SHARE_KEYS, f"it was given the public keys of {len(nodes)} participants"
                + ("" if state.nid in nodes else ", not its own,") + f" for a round of {state.sample_num}.")


def _party_roster(context, stage):
    """``(party private key, roster)`` from the party's node config, or None when it gives neither."""
    key_path, roster_path = (context.node_config.get(name) for name in (_roster.PARTY_KEY, _roster.PARTY_ROSTER))
    if key_path is None and roster_path is None:
        return None
    if not (key_path and roster_path):
        _refuse(context, stage, f"its node config gives only one of {_roster.PARTY_KEY!r} and "
                f"{_roster.PARTY_ROSTER!r}; give both.")
    try:
        key, roster = _roster.load_party_key(key_path), _roster.load_roster(roster_path)
    except (OSError, ValueError) as error:
        _refuse(context, stage, str(error))
    own = _roster.party_public_key(key)
    if own not in roster:
        _refuse(context, stage, f"its own party key is not on the roster {str(roster_path)!r}.")
    return key, roster


def _check_roster_setup(context, configs, roster) -> None:
    if configs.get(Key.SAMPLE_NUMBER) != len(roster[1]):
        _refuse(context, Stage.SETUP, f"the round has {configs.get(Key.SAMPLE_NUMBER)} participants; the "
                f"party roster lists {len(roster[1])} (a participant not on it would be a sybil).")


def _sign_setup_reply(context, reply, roster):
    """Add this party's signature of its fresh SecAgg+ keys to its set-up reply."""
    if reply.has_error():
        return reply
    record = reply.content.config_records[RECORD_KEY_CONFIGS]
    record[_roster.SIGNATURE_KEY] = _roster.sign_public_keys(roster[0], context.run_id, record[Key.PUBLIC_KEY_1],
                                                             record[Key.PUBLIC_KEY_2])
    return reply


def _take_signatures(configs) -> dict:
    """Remove the relayed signatures from a share-keys message (Flower's mod reads only keys); return them."""
    prefix = _roster.SIGNATURE_KEY + ":"
    found = {}
    for key in [key for key in configs if key.startswith(prefix)]:
        suffix = key[len(prefix):]
        value = configs.pop(key)
        if suffix.isdigit():
            found[int(suffix)] = list(value) if isinstance(value, list) else value
    return found


def _check_roster_keys(context, configs, state, roster, signatures) -> None:
    keys = {int(key): tuple(value) for key, value in configs.items() if key.isdigit()}
    own = _roster.party_public_key(roster[0])
    try:
        _roster.check_relayed_keys(roster[1], own, state.nid, context.run_id, keys, signatures)
    except ValueError as error:
        _refuse(context, Stage.SHARE_KEYS, str(error))


def _check_collect(context, message, configs, state, expected_terms) -> None:
    """Every other participant's shares arrived, and the round is the one the party's calibration is for."""
    participants = set(state.public_keys_dict)
    sources = configs.get(Key.SOURCE_LIST) or []
    if sorted(sources) != sorted(participants - {state.nid}):
        _refuse(context, Stage.COLLECT_MASKED_VECTORS, f"it got key shares from {len(sources)} participants; "
                f"every other one of the {len(participants)} must send one (its pairwise masks cover them all).")
    config = dict(compat.recorddict_to_fitins(message.content, keep_input=True).config)
    if config.get(MASK_GENERATOR_KEY) != _MASK_GENERATOR:
        _refuse(context, Stage.COLLECT_MASKED_VECTORS, f"the coordinator announces the mask generator "
                f"{config.get(MASK_GENERATOR_KEY)!r}, not {_MASK_GENERATOR!r} that this party masks with; its "
                "unmasking would not remove the masks. Run the same dperm release on both sides.")
    if expected_terms is None:
        return
    terms = expected_terms(context, config)
    if len(participants) != terms.n_parties or state.sample_num != terms.n_parties:
        _refuse(context, Stage.COLLECT_MASKED_VECTORS, f"the calibration it checked is for K={terms.n_parties} "
                f"parties but {len(participants)} take part in the secure sum; the noise shares would not "
                "add up to the calibrated noise.")
    seen = (state.clipping_range, state.target_range, state.mod_range)
    wanted = (float(terms.clipping_range), int(terms.quantization_range),
              state.mod_range if terms.modulus_range is None else int(terms.modulus_range))
    if seen != wanted or terms.n_parties * state.target_range >= state.mod_range:
        _refuse(context, Stage.COLLECT_MASKED_VECTORS, f"the SecAgg+ encoding (clipping, quantization, modulus) "
                f"= {seen} is not the agreed {wanted} with K x quantization < modulus.")


def _check_unmask(context, configs, state) -> None:
    """No dropped node, and every participant active: see :func:`secaggplus_guard`."""
    dropped = list(configs.get(Key.DEAD_NODE_ID_LIST) or [])
    active = list(configs.get(Key.ACTIVE_NODE_ID_LIST) or [])
    if dropped:
        _refuse(context, Stage.UNMASK, f"it names {len(dropped)} dropped node(s) {sorted(dropped)[:5]}; dperm "
                "tolerates no dropout, so a request for a private-key share can only serve to unmask a reply.")
    if sorted(active) != sorted(state.public_keys_dict):
        _refuse(context, Stage.UNMASK, f"its {len(active)} active nodes are not the round's "
                f"{len(state.public_keys_dict)} participants.")


def secaggplus_guard(expected_terms=None):
    """A Flower mod, placed just outside ``secaggplus_mod``, that checks each SecAgg+ stage message first.

    The rule. SecAgg (Bonawitz et al., CCS 2017, Sec. 4 and Fig. 4; SecAgg+,
    Bell et al., CCS 2020, keeps the argument) hides a party's masked reply
    ``y_u = x_u + PRG(b_u) + sum_v +-PRG(s_uv)`` as long as the server never
    holds *both* enough shares of ``b_u`` (the self-mask seed, released for
    parties that sent a reply) and of ``s_u^SK`` (the mask private key,
    released for parties that dropped): with ``b_u`` alone the pairwise masks
    still hide ``x_u`` and cancel only in the sum; with both, ``x_u`` is in
    the clear. In the paper an honest user sends ``s_v^SK`` shares only for
    the users it saw drop and ``b_v`` shares only for the others, disjoint
    by construction; Flower 1.41's mod takes both lists from the server
    unchecked, so an unmask request with active == dropped returns both
    shares of every party. dperm never
    recovers a dropout (a party that drops takes its noise share with it;
    :class:`AbortOnDropoutSecAggPlusWorkflow`), so the party's rule is
    stricter and simpler: **it never sends a share of its or anyone's
    private key** -- an unmask request must name no dropped node and must
    list exactly the round's participants as active. Then the server gets
    only self-mask seeds, and no sequence of requests (Flower's stage order
    allows one unmask per set-up) yields a private-key share.

    The round's terms are pinned too: sample size = share number =
    reconstruction threshold = ``K`` >= 2 and ``max_weight = 1`` at set-up;
    exactly ``K`` public keys, the party's own among them, at share-keys; at
    collect (before the party's reply is computed) shares from every other
    participant, so its pairwise masks cover all of them, the round config's
    :data:`MASK_GENERATOR_KEY` naming dperm's mask generator, and, when
    ``expected_terms(context, fit_config) -> SecAggTerms`` is given, ``K``
    and the encoding equal those of the party's checked calibration.

    Every refusal raises :class:`SecAggRefusal` with a one-line reason (also
    logged on ``dperm.multiparty``); the SuperNode turns it into an error
    reply and the party sends nothing else for that stage.

    The masks. A stage message that passes runs Flower's mod inside
    :func:`~dperm.multiparty.flower._adapter.cryptographic_masks`: the
    party's self-mask and pairwise masks are expanded from the whole seed
    and shared key by SHAKE-256, not from Flower's 32-bit fold of them
    (flwrlabs/flower#7522). The coordinator's workflow
    (:class:`~dperm.multiparty.flower._adapter.AbortOnDropoutSecAggPlusWorkflow`)
    removes the self-masks with the same generator; a coordinator on
    Flower's own generator gets a sum that is not the parties' (the masks
    do not cancel), never a reply.
    """

    def guard(message: Message, context: Context, call_next):
        content = message.content
        if message.metadata.message_type != MessageType.TRAIN or RECORD_KEY_CONFIGS not in content.config_records:
            return call_next(message, context)
        configs = content.config_records[RECORD_KEY_CONFIGS]
        stage = configs.get(Key.STAGE)
        state = _secagg_state(context)
        roster = _party_roster(context, stage)
        if stage == Stage.SETUP:
            _check_setup(context, configs)
            if roster is not None:
                _check_roster_setup(context, configs, roster)
                with cryptographic_masks():
                    return _sign_setup_reply(context, call_next(message, context), roster)
        elif stage == Stage.SHARE_KEYS:
            _check_share_keys(context, configs, state)
            signatures = _take_signatures(configs)
            if roster is not None:
                _check_roster_keys(context, configs, state, roster, signatures)
        elif stage == Stage.COLLECT_MASKED_VECTORS:
            _check_collect(context, message, configs, state, expected_terms)
        elif stage == Stage.UNMASK:
            _check_unmask(context, configs, state)
        with cryptographic_masks():  # the party's masks come from its whole secrets, not 32 bits of them
            return call_next(message, context)

    return guard


def make_party_client_app(reply_fn, setup_fn=None, mods=(), expected_terms=None) -> ClientApp:
    """A ClientApp running Flower's ``secaggplus_mod`` around a party's reply.

    Parameters
    ----------
    reply_fn : callable ``(context, coef, config) -> list of ndarray``
        The party's side of one round (004 Proc. 3 for PSGD): it receives
        the broadcast parameters (``coef``, a list of arrays) and the public
        round config and returns the arrays to be summed. It runs *inside*
        ``secaggplus_mod``: what it returns is clipped, quantised and masked
        before anything leaves the party.
    setup_fn : callable ``(context, config) -> dict``, optional
        Handles ``query`` messages (public set-up exchanges, no private
        values): returns a dict of public scalars for the reply.
    mods : sequence of Flower mods, optional
        Run outside ``secaggplus_mod`` (first = outermost), e.g. the
        simulation's mod that sets each node's ``node_config``.
    expected_terms : callable ``(context, config) -> SecAggTerms``, optional
        The SecAgg+ terms of the party's checked calibration for the round
        that ``config`` (the fit config) belongs to; given to
        :func:`secaggplus_guard`, which always runs just outside ``secaggplus_mod``.
    """
    app = ClientApp(mods=[*mods, secaggplus_guard(expected_terms), secaggplus_mod])

    @app.train()
    def train(message: Message, context: Context) -> Message:
        fit_ins = compat.recorddict_to_fitins(message.content, keep_input=True)
        arrays = reply_fn(context, parameters_to_ndarrays(fit_ins.parameters), dict(fit_ins.config))
        fit_res = FitRes(status=Status(code=Code.OK, message=""), parameters=ndarrays_to_parameters(arrays),
                         num_examples=NUM_EXAMPLES, metrics={})  # no metrics: they travel in the clear
        return Message(compat.fitres_to_recorddict(fit_res, keep_input=True), reply_to=message)

    if setup_fn is not None:

        @app.query()
        def query(message: Message, context: Context) -> Message:
            config = dict(message.content.config_records["config"])
            return Message(RecordDict({"config": ConfigRecord(setup_fn(context, config))}), reply_to=message)

    return app


# -- the server side -------------------------------------------------------------------


class _SumStrategy(Strategy):
    """The legacy Strategy SecAggPlusWorkflow drives: every node, every round; keeps the sum.

    ``aggregate_fit`` receives each result with ``parameters`` already set to
    SecAgg+'s unmasked weighted mean; nothing else is aggregated.
    """

    def __init__(self, proxies, config):
        self.proxies = proxies
        self.config = config
        self.mean = None
        self.n_results = 0

    def initialize_parameters(self, client_manager):
        return None

    def configure_fit(self, server_round, parameters, client_manager):
        return [(proxy, FitIns(parameters, dict(self.config))) for proxy in self.proxies]

    def aggregate_fit(self, server_round, results, failures):
        if results and not failures:
            self.mean = parameters_to_ndarrays(results[0][1].parameters)
            self.n_results = len(results)
        return None, {}

    def configure_evaluate(self, server_round, parameters, client_manager):
        return []

    def aggregate_evaluate(self, server_round, results, failures):
        return None, {}

    def evaluate(self, server_round, parameters):
        return None


def _failure_reasons(failures) -> list[tuple[str, str]]:
    """``(exception type, message)`` of each error reply, deduplicated, in order."""
    reasons = []
    for failure in failures:
        error = failure.args[0] if failure.args else None
        reason = getattr(error, "reason", str(failure))
        match = _REASON.match(reason)
        entry = (match["type"], match["message"]) if match else ("", reason)
        if entry not in reasons:
            reasons.append(entry)
    return reasons


def _raise_for_abort(workflow, node_names, round_index) -> None:
    reasons = _failure_reasons(workflow.failures)
    prefix = f"round {round_index}: " if round_index is not None else ""
    for kind, message in reasons:
        if kind.endswith("MalformedReplyError"):
            raise MalformedReplyError(f"{prefix}{message}")
    detail = "; ".join(f"{kind.rsplit('.', 1)[-1] or 'error'}: {message}" for kind, message in reasons)
    if not workflow.missing:
        raise DropoutError(f"{prefix}the SecAgg+ round halted before unmasking "
                           f"({detail or 'see the Flower log'}); nothing is revealed.")
    refusals = getattr(workflow, "refused", {})
    refused = sorted((node_names.get(node_id, node_id) for node_id in workflow.missing if node_id in refusals),
                     key=str)
    silent = sorted((node_names.get(node_id, node_id) for node_id in workflow.missing if node_id not in refusals),
                    key=str)
    n_total = len(node_names)
    why = []
    if refused:
        why.append(f"refused: {refused}, replying with an error" + (f" ({detail})" if detail else ""))
    if silent:
        why.append(f"missing: {silent}, no answer")
    raise DropoutError(
        f"{prefix}{n_total - len(refused) - len(silent)} of {n_total} parties completed the SecAgg+ round "
        f"({'; '.join(why)}); the round is aborted before the unmask stage and nothing is "
        "revealed. Recovering the survivors' sum is refused: each party's DP noise is calibrated "
        "for all K parties, so the survivors' sum would be under-noised."
        + (f" Party errors: {detail}." if detail and not refused else "")
    )


def secagg_sum_round(grid, node_names, parameters, config, *, clipping_range, quantization_range,
                     modulus_range, round_index=None, timeout=None, server_context=None):
    """Run one SecAgg+ round over ``grid`` and return the parties' sum.

    The server side of Flower's SecAgg+ (setup, share keys, collect masked
    vectors, unmask) with ``num_examples = 1`` and ``max_weight = 1``, so
    the unmasked weighted mean is the plain mean and the sum is ``K x mean``.
    ``num_shares`` and ``reconstruction_threshold`` are both all ``K``
    parties: no dropout is tolerated anyway (:class:`AbortOnDropoutSecAggPlusWorkflow`),
    and a full threshold means no coalition of fewer than ``K`` shares can
    rebuild a party's mask keys.

    Parameters
    ----------
    grid : flwr.serverapp.grid.Grid
    node_names : mapping of node id -> party name
        The parties of the round (names are used in messages only).
    parameters : list of ndarray
        Broadcast to every party (``w_t`` for PSGD).
    config : dict
        Public per-round values broadcast with the parameters (with
        :data:`MASK_GENERATOR_KEY` added: the parties check it).
    clipping_range, quantization_range, modulus_range
        SecAgg+'s fixed-point encoding.
    round_index : int, optional
        Used in error messages.
    timeout : float, optional
        Seconds to wait for replies at each stage (None: wait for all).
    server_context : flwr.app.Context, optional
        The ServerApp's context (networked runs); a fresh one in-process.

    Returns
    -------
    total : list of ndarray
        The sum over the ``K`` parties of their (clipped, quantised) arrays.

    Raises
    ------
    MalformedReplyError
        A party refused to send its reply because it was malformed (its
        error reply names the party and the problem).
    DropoutError
        A party did not complete the round; nothing was revealed.
    """
    node_ids = list(node_names)
    run_id = grid.run.run_id
    if server_context is None:
        server_context = Context(run_id=run_id, node_id=0, node_config={}, state=RecordDict(), run_config={})
    server_context = copy.copy(server_context)
    server_context.state = RecordDict()
    proxies = [GridClientProxy(node_id, grid, run_id) for node_id in node_ids]
    strategy = _SumStrategy(proxies, {**dict(config), MASK_GENERATOR_KEY: _MASK_GENERATOR})
    client_manager = SimpleClientManager()
    for proxy in proxies:
        client_manager.register(proxy)
    legacy = LegacyContext(server_context, strategy=strategy, client_manager=client_manager)
    legacy.state.config_records[MAIN_CONFIGS_RECORD] = ConfigRecord(
        {WorkflowKey.CURRENT_ROUND: int(round_index or 0) + 1}
    )
    legacy.state.array_records[MAIN_PARAMS_RECORD] = compat.parameters_to_arrayrecord(
        ndarrays_to_parameters([np.asarray(p) for p in parameters]), keep_input=True
    )
    workflow = AbortOnDropoutSecAggPlusWorkflow(
        num_shares=1.0,  # a float: the proportion of the K parties, i.e. all of them
        reconstruction_threshold=1.0,
        max_weight=MAX_WEIGHT,
        clipping_range=float(clipping_range),
        quantization_range=int(quantization_range),
        modulus_range=int(modulus_range),
        timeout=timeout,
    )
    with server_identity(run_id):
        workflow(grid, legacy)
    if not workflow.unmasked or strategy.mean is None:
        _raise_for_abort(workflow, node_names, round_index)
    n_active = strategy.n_results
    if n_active != len(node_ids):  # cannot happen with the abort above; never reveal a partial sum
        raise DropoutError(f"SecAgg+ summed {n_active} of {len(node_ids)} parties; nothing is revealed.")
    return [n_active * np.asarray(mean, dtype=float) for mean in strategy.mean]


def query_parties(grid, node_ids, config, *, timeout=None) -> dict:
    """Send a public ``query`` to every node; return node id -> reply dict (public values).

    Raises RuntimeError naming the nodes that did not answer or answered
    with an error.
    """
    messages = [
        Message(RecordDict({"config": ConfigRecord(dict(config))}), dst_node_id=node_id, message_type="query",
                group_id="setup")
        for node_id in node_ids
    ]
    replies, problems = {}, {}
    for reply in grid.send_and_receive(messages, timeout=timeout):
        node_id = reply.metadata.src_node_id
        if reply.has_error():
            match = _REASON.match(reply.error.reason)
            problems[node_id] = match["message"] if match else reply.error.reason
        else:
            replies[node_id] = dict(reply.content.config_records["config"])
    silent = sorted(set(node_ids) - set(replies) - set(problems))
    if problems or silent:
        described = [f"node {node_id}: {message}" for node_id, message in problems.items()]
        described += [f"node {node_id}: no answer" for node_id in silent]
        raise RuntimeError(f"the set-up query failed ({'; '.join(described)}).")
    return replies
