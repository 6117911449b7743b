"""The party checks SecAgg+ itself (issue 31, findings 1-2): each attack is run by a rogue coordinator and refused.

The coordinator here edits only its own side (its workflow and its calibration);
the parties run dperm's ClientApp unchanged, on an in-process Flower grid.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

flwr = pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Message, MessageType, RecordDict  # noqa: E402
from flwr.client.mod import secaggplus_mod  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.common import Code, FitRes, Status, bytes_to_ndarray, ndarrays_to_parameters  # noqa: E402
from flwr.common.secure_aggregation.crypto.shamir import combine_shares  # noqa: E402
from flwr.common.secure_aggregation.crypto.symmetric_encryption import generate_shared_key  # noqa: E402
from flwr.common.secure_aggregation.ndarrays_arithmetic import factor_extract  # noqa: E402
from flwr.common.secure_aggregation.quantization import dequantize  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen  # noqa: E402
from flwr.compat.common import recorddict_compat as compat  # noqa: E402
from flwr.supercore.primitives.asymmetric import bytes_to_private_key, bytes_to_public_key  # noqa: E402

from dperm.exceptions import DropoutError  # noqa: E402
from dperm.losses import get_loss  # noqa: E402
from dperm.multiparty import calibrate_psgd  # noqa: E402
from dperm.multiparty.flower import app as flower_app  # noqa: E402
from dperm.multiparty.flower import grid as flower_grid  # noqa: E402
from dperm.multiparty.flower.grid import InProcessGrid, make_party_client_app, secagg_sum_round  # noqa: E402
from tests._multiparty_data import make_data, split, write_shard  # noqa: E402

LOGISTIC = get_loss("logistic")
CLIPPING, QUANTIZATION, MODULUS = 8.0, 2**16, 2**32
FLOOR = {"max-epsilon": 10.0, "max-delta": 1e-5, "max-rounds": 10}


# -- the rogue coordinator ---------------------------------------------------------------


class ActiveEqualsDroppedWorkflow(flower_grid.AbortOnDropoutSecAggPlusWorkflow):
    """Flower's workflow with one edit: the unmask request lists every node as active *and* dropped.

    It keeps what a server needs to unmask each reply: the public keys, the
    masked vectors (from the recording grid) and the parties' share replies.
    """

    instances: list = []

    def unmask_stage(self, grid, context, state):
        type(self).instances.append(self)
        nids = sorted(state.active_node_ids)
        self.public_keys = {nid: list(keys) for nid, keys in state.nid_to_publickeys.items()}
        self.ranges = (state.clipping_range, state.quantization_range, state.mod_range)
        messages = [Message(RecordDict({RECORD_KEY_CONFIGS: ConfigRecord({
            Key.STAGE: Stage.UNMASK, Key.ACTIVE_NODE_ID_LIST: nids, Key.DEAD_NODE_ID_LIST: nids})}),
            dst_node_id=nid, message_type=MessageType.TRAIN, group_id="1") for nid in nids]
        self.replies = grid.send_and_receive(messages, timeout=self.timeout)
        return False  # the attacker reports nothing; it unmasks on its own below


def masked_vectors(grid):
    """Each node's masked vector, as the server received it at the collect stage."""
    found = {}
    for message in grid.received:
        if message.has_error() or RECORD_KEY_CONFIGS not in message.content.config_records:
            continue
        record = message.content.config_records[RECORD_KEY_CONFIGS]
        if Key.MASKED_PARAMETERS in record:
            found[message.metadata.src_node_id] = [bytes_to_ndarray(b) for b in record[Key.MASKED_PARAMETERS]]
    return found


def unmask_each(workflow, masked):
    """The attacker's decoding of every party's own reply from both kinds of key share (Flower's arithmetic)."""
    clipping_range, quantization_range, mod_range = workflow.ranges
    seed_shares, key_shares = {}, {}
    for reply in workflow.replies:
        if reply.has_error():  # a refusal carries no share
            continue
        record = reply.content.config_records[RECORD_KEY_CONFIGS]
        nids, shares = list(record[Key.NODE_ID_LIST]), list(record[Key.SHARE_LIST])
        half = len(nids) // 2  # active (self-mask seeds) then dropped (private keys): the same nodes
        for nid, share in zip(nids[:half], shares[:half]):
            seed_shares.setdefault(nid, []).append(share)
        for nid, share in zip(nids[half:], shares[half:]):
            key_shares.setdefault(nid, []).append(share)
    recovered = {}
    for nid, vector in masked.items():
        shapes = [a.shape for a in vector]
        vector = [a - m for a, m in zip(vector, pseudo_rand_gen(combine_shares(seed_shares[nid]), mod_range, shapes))]
        secret_key = bytes_to_private_key(combine_shares(key_shares[nid]))
        for other, (pk1, _) in workflow.public_keys.items():
            if other == nid:
                continue
            mask = pseudo_rand_gen(generate_shared_key(secret_key, bytes_to_public_key(pk1)), mod_range, shapes)
            vector = [a - m if nid > other else a + m for a, m in zip(vector, mask)]
        ratio, vector = factor_extract([np.mod(a, mod_range) for a in vector])
        recovered[nid] = [v * quantization_range / ratio for v in dequantize(vector, clipping_range,
                                                                             quantization_range)]
    return recovered


@pytest.fixture
def rogue_unmask(monkeypatch):
    """The coordinator's ServerApp runs :class:`ActiveEqualsDroppedWorkflow` instead of dperm's workflow."""
    ActiveEqualsDroppedWorkflow.instances = []
    monkeypatch.setattr(flower_grid, "AbortOnDropoutSecAggPlusWorkflow", ActiveEqualsDroppedWorkflow)
    return ActiveEqualsDroppedWorkflow.instances


def run_round(grid, n_parties):
    names = {nid: f"p{nid}" for nid in sorted(grid.get_node_ids())}
    with flower_grid.quiet_flower(), pytest.raises(DropoutError):  # the rogue workflow never reports a sum
        secagg_sum_round(grid, names, parameters=[np.zeros(1)], config={}, clipping_range=CLIPPING,
                         quantization_range=QUANTIZATION, modulus_range=MODULUS)


# -- finding 1: an unmask request naming every node as dropped ---------------------------


VECTORS = {nid: np.random.default_rng(nid).uniform(-3, 3, size=6) for nid in (11, 22, 33)}


def _known_reply(context, coef, config):
    return [VECTORS[context.node_id]]


def test_the_rogue_unmask_recovers_every_reply_from_flowers_bare_mod(rogue_unmask):
    # the attack is real: without dperm's check, Flower's mod answers with both shares of every party
    bare = ClientApp(mods=[secaggplus_mod])  # the same reply behind Flower's mod alone

    @bare.train()
    def train(message, context):
        fit_res = FitRes(status=Status(code=Code.OK, message=""), num_examples=1,
                         parameters=ndarrays_to_parameters(_known_reply(context, None, None)), metrics={})
        return Message(compat.fitres_to_recorddict(fit_res, keep_input=True), reply_to=message)

    grid = InProcessGrid({nid: bare for nid in VECTORS}, record=True)
    run_round(grid, len(VECTORS))
    (workflow,) = rogue_unmask
    recovered = unmask_each(workflow, masked_vectors(grid))
    step = 2 * CLIPPING / QUANTIZATION
    for nid, vector in VECTORS.items():
        np.testing.assert_allclose(recovered[nid][0], vector, atol=step)


def test_a_party_refuses_an_unmask_request_that_names_a_dropped_node(rogue_unmask, caplog):
    grid = InProcessGrid({nid: make_party_client_app(_known_reply) for nid in VECTORS}, record=True)
    run_round(grid, len(VECTORS))
    (workflow,) = rogue_unmask
    assert len(workflow.replies) == len(VECTORS)
    for reply in workflow.replies:  # every party refused, with its one-line reason, and sent no share
        assert reply.has_error()
        assert "SecAggRefusal" in reply.error.reason and "names 3 dropped node(s)" in reply.error.reason
        assert "\n" not in reply.error.reason
    assert not any(RECORD_KEY_CONFIGS in m.content.config_records and Key.SHARE_LIST in
                   m.content.config_records[RECORD_KEY_CONFIGS] for m in grid.received if not m.has_error())
    assert sum("refuses the SecAgg+ unmask message" in r.getMessage() for r in caplog.records) == len(VECTORS)
    with pytest.raises(KeyError):  # and so nothing can be unmasked
        unmask_each(workflow, masked_vectors(grid))


def test_the_honest_round_still_sums(monkeypatch):
    grid = InProcessGrid({nid: make_party_client_app(_known_reply) for nid in VECTORS})
    names = {nid: f"p{nid}" for nid in VECTORS}
    with flower_grid.quiet_flower():
        (total,) = secagg_sum_round(grid, names, parameters=[np.zeros(1)], config={}, clipping_range=CLIPPING,
                                    quantization_range=QUANTIZATION, modulus_range=MODULUS)
    np.testing.assert_allclose(total, sum(VECTORS.values()), atol=3 * 2 * CLIPPING / QUANTIZATION)


# -- finding 2: a calibration for more parties than take part ----------------------------


@pytest.fixture
def party_grid(tmp_path):
    X, y = make_data(n=120)
    paths = [write_shard(tmp_path / f"shard{k}.csv", Xk, yk) for k, (Xk, yk) in enumerate(split(X, y, (30, 40, 50)))]
    ledgers = Path(tempfile.mkdtemp(dir=tmp_path))
    node_ids = [101, 205, 307]
    return InProcessGrid({nid: flower_app.client_app for nid in node_ids},
                         {nid: {"data-path": str(path), "party-name": f"hospital-{k}", **FLOOR,
                                "ledger-path": str(ledgers / f"ledger-{nid}.json")}
                          for k, (nid, path) in enumerate(zip(node_ids, paths))}, record=True)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")  # the parties' own logs
def test_a_party_refuses_a_calibration_for_more_parties_than_take_part(party_grid):
    parties = flower_app.describe_parties(party_grid, party_grid.get_node_ids())
    network = flower_app.FlowerGridNetwork(party_grid, parties, clipping_range=4.0)
    # K' = 30 parties with padded sizes: 120 real rows and 27 made-up parties of 40
    inflated = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=120 + 27 * 40, n_parties=30,
                              n_features=4, n_rounds=2, loss=LOGISTIC, data_norm=1.0)
    network.setup(inflated)  # the calibration alone passes every party's check ...
    with pytest.raises(DropoutError, match=r"calibration it checked is for K=30 parties but 3 take part"):
        network.gradient_sum(np.zeros(4), 1 / inflated.n_samples, 0)  # ... the round it is used in does not
    for context in party_grid._contexts.values():  # refused before the reply was computed: nothing answered
        assert flower_app.load_run_state(context, network.run_id)[3] == 0
    assert masked_vectors(party_grid) == {}


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_the_honest_calibration_still_runs(party_grid):
    parties = flower_app.describe_parties(party_grid, party_grid.get_node_ids())
    network = flower_app.FlowerGridNetwork(party_grid, parties, clipping_range=4.0)
    honest = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=120, n_parties=3, n_features=4,
                            n_rounds=2, loss=LOGISTIC, data_norm=1.0)
    network.setup(honest)
    total, _ = network.gradient_sum(np.zeros(4), 1 / 120, 0)
    assert np.all(np.isfinite(total))


# -- the pinned SecAgg+ terms ------------------------------------------------------------


@pytest.mark.parametrize("workflow_args, stage, reason", [
    ({"reconstruction_threshold": 2}, "setup", "reconstruction threshold 2 must be one and the same K"),
    ({"num_shares": 5, "reconstruction_threshold": 3}, "setup", "share number 5"),
    ({"max_weight": 1000.0}, "setup", "max_weight 1000.0 must be 1.0"),
])
def test_a_party_refuses_a_weaker_secaggplus_setup(monkeypatch, workflow_args, stage, reason):
    class Weaker(flower_grid.AbortOnDropoutSecAggPlusWorkflow):
        def __init__(self, **kwargs):
            super().__init__(**{**kwargs, **workflow_args})

    monkeypatch.setattr(flower_grid, "AbortOnDropoutSecAggPlusWorkflow", Weaker)
    grid = InProcessGrid({nid: make_party_client_app(_known_reply) for nid in VECTORS}, record=True)
    with flower_grid.quiet_flower(), pytest.raises(DropoutError, match=f"refuses the SecAgg\\+ {stage} message: .*{reason}"):
        secagg_sum_round(grid, {nid: f"p{nid}" for nid in VECTORS}, parameters=[np.zeros(1)], config={},
                         clipping_range=CLIPPING, quantization_range=QUANTIZATION, modulus_range=MODULUS)
    assert masked_vectors(grid) == {}


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_a_party_refuses_a_secaggplus_encoding_other_than_its_own(party_grid, monkeypatch):
    parties = flower_app.describe_parties(party_grid, party_grid.get_node_ids())
    network = flower_app.FlowerGridNetwork(party_grid, parties, clipping_range=4.0)
    network.setup(calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=120, n_parties=3, n_features=4,
                                 n_rounds=2, loss=LOGISTIC, data_norm=1.0))
    real_round = flower_grid.secagg_sum_round

    def other_clipping(*args, **kwargs):  # the round's config says 4.0; SecAgg+ clips at 0.5
        return real_round(*args, **{**kwargs, "clipping_range": 0.5})

    monkeypatch.setattr(flower_grid, "secagg_sum_round", other_clipping)
    with pytest.raises(DropoutError, match=r"encoding \(clipping, quantization, modulus\) = \(0.5, "):
        network.gradient_sum(np.zeros(4), 1 / 120, 0)
