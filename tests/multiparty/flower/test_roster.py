"""Substituted SecAgg+ keys and sybil nodes (issue 31): a party checks every peer's keys against its roster.

The coordinator edits only its own workflow; the parties run dperm's
ClientApp with their party key and the roster in their node config, on an
in-process Flower grid.
"""

from __future__ import annotations

import numpy as np
import pytest

flwr = pytest.importorskip("flwr")

from flwr.common.secure_aggregation.crypto.symmetric_encryption import decrypt, generate_shared_key  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_utils import share_keys_plaintext_separate  # noqa: E402
from flwr.supercore.primitives.asymmetric import (  # noqa: E402
    bytes_to_public_key,
    generate_key_pairs,
    private_key_to_bytes,
    public_key_to_bytes,
)

from dperm.exceptions import DropoutError  # noqa: E402
from dperm.multiparty.flower import _roster  # noqa: E402
from dperm.multiparty.flower import grid as flower_grid  # noqa: E402
from dperm.multiparty.flower.deploy import write_party_key  # noqa: E402
from dperm.multiparty.flower.grid import InProcessGrid, make_party_client_app, secagg_sum_round  # noqa: E402
from tests.multiparty.flower.test_grid_secagg_guard import CLIPPING, MODULUS, QUANTIZATION, masked_vectors  # noqa: E402

VECTORS = {nid: np.random.default_rng(nid).uniform(-3, 3, size=5) for nid in (11, 22, 33)}
VICTIM, IMPERSONATED = 11, 22


def _reply(context, coef, config):
    return [VECTORS.get(context.node_id, np.zeros(5))]


@pytest.fixture
def parties(tmp_path):
    """Each party's key (node config) and the roster of the three public keys."""
    publics = {nid: write_party_key(tmp_path / f"party-{nid}") for nid in VECTORS}
    roster = tmp_path / "roster.txt"
    roster.write_text("".join(path.read_text() for path in publics.values()))
    configs = {nid: {"party-key": str(tmp_path / f"party-{nid}"), "party-roster": str(roster)} for nid in VECTORS}
    return configs, tmp_path


def run_round(grid):
    with flower_grid.quiet_flower():
        (total,) = secagg_sum_round(grid, {nid: f"p{nid}" for nid in grid.get_node_ids()}, parameters=[np.zeros(1)],
                                    config={}, clipping_range=CLIPPING, quantization_range=QUANTIZATION,
                                    modulus_range=MODULUS)
    return total


def test_the_honest_round_with_a_roster_sums(parties):
    configs, _ = parties
    grid = InProcessGrid({nid: make_party_client_app(_reply) for nid in VECTORS}, configs)
    np.testing.assert_allclose(run_round(grid), sum(VECTORS.values()), atol=3 * 2 * CLIPPING / QUANTIZATION)


class Substituting(flower_grid.AbortOnDropoutSecAggPlusWorkflow):
    """Relays its own SecAgg+ keys as party 22's (keeping 22's signature, or signing them with its own key)."""

    sign_with = None
    instances: list = []

    def share_keys_stage(self, grid, context, state):
        type(self).instances.append(self)
        sk1, pk1 = generate_key_pairs()
        sk2, pk2 = generate_key_pairs()
        self.secret_key_2 = private_key_to_bytes(sk2)
        keys = [public_key_to_bytes(pk1), public_key_to_bytes(pk2)]
        state.nid_to_publickeys[IMPERSONATED] = keys
        if self.sign_with is not None:
            self.key_signatures[IMPERSONATED] = _roster.sign_public_keys(
                _roster.load_party_key(self.sign_with), context.run_id, *keys)
        self.share_replies = []
        recording = grid

        class Recording:
            def __getattr__(self, name):
                return getattr(recording, name)

            def send_and_receive(inner, messages, *, timeout=None):
                replies = recording.send_and_receive(messages, timeout=timeout)
                self.share_replies.extend(replies)
                return replies

        return super().share_keys_stage(Recording(), context, state)


def victims_shares_for_the_impersonated(workflow):
    """The victim's key shares meant for party 22, decrypted with the coordinator's own key."""
    from flwr.supercore.primitives.asymmetric import bytes_to_private_key

    for reply in workflow.share_replies:
        if reply.has_error() or reply.metadata.src_node_id != VICTIM:
            continue
        record = reply.content.config_records[RECORD_KEY_CONFIGS]
        for dst, ciphertext in zip(record[Key.DESTINATION_LIST], record[Key.CIPHERTEXT_LIST]):
            if dst == IMPERSONATED:
                victim_pk2 = bytes_to_public_key(workflow.victim_pk2)
                key = generate_shared_key(bytes_to_private_key(workflow.secret_key_2), victim_pk2)
                return share_keys_plaintext_separate(decrypt(key, ciphertext))
    return None


@pytest.mark.parametrize("signer, reason", [
    (None, r"keys of node 22 do not match its party's signature for this run \(substituted keys\)"),
    ("outsider", r"keys of node 22 are signed by a key that is not on the roster"),
])
def test_a_party_refuses_keys_the_coordinator_substituted(parties, monkeypatch, signer, reason):
    configs, tmp_path = parties
    Substituting.instances = []
    if signer == "outsider":
        write_party_key(tmp_path / "coordinator")
        monkeypatch.setattr(Substituting, "sign_with", str(tmp_path / "coordinator"))
    monkeypatch.setattr(flower_grid, "AbortOnDropoutSecAggPlusWorkflow", Substituting)
    grid = InProcessGrid({nid: make_party_client_app(_reply) for nid in VECTORS}, configs, record=True)
    with pytest.raises(DropoutError, match=reason):
        run_round(grid)
    (workflow,) = Substituting.instances
    workflow.victim_pk2 = workflow_victim_pk2(grid)
    assert victims_shares_for_the_impersonated(workflow) is None  # the victim encrypted nothing for it
    assert masked_vectors(grid) == {}


def workflow_victim_pk2(grid):
    for message in grid.received:
        record = None if message.has_error() else message.content.config_records.get(RECORD_KEY_CONFIGS)
        if record is not None and Key.PUBLIC_KEY_2 in record and message.metadata.src_node_id == VICTIM:
            return record[Key.PUBLIC_KEY_2]
    raise AssertionError("no set-up reply from the victim")


def test_without_a_roster_the_substitution_hands_the_coordinator_the_victims_shares(monkeypatch):
    # the attack is real: a party with no roster encrypts its key shares for the coordinator's key
    Substituting.instances = []
    monkeypatch.setattr(flower_grid, "AbortOnDropoutSecAggPlusWorkflow", Substituting)
    grid = InProcessGrid({nid: make_party_client_app(_reply) for nid in VECTORS}, record=True)
    with pytest.raises(DropoutError):  # party 22 itself sees its keys replaced and stops
        run_round(grid)
    (workflow,) = Substituting.instances
    workflow.victim_pk2 = workflow_victim_pk2(grid)
    src, dst, seed_share, key_share = victims_shares_for_the_impersonated(workflow)
    assert (src, dst) == (VICTIM, IMPERSONATED) and seed_share and key_share


def test_a_sybil_node_is_refused_at_set_up(parties, tmp_path):
    configs, _ = parties
    write_party_key(tmp_path / "sybil")  # the coordinator's own party, with its own roster naming it
    sybil_roster = tmp_path / "sybil-roster.txt"
    sybil_roster.write_text((tmp_path / "roster.txt").read_text() + (tmp_path / "sybil.pub").read_text())
    apps = {nid: make_party_client_app(_reply) for nid in [*VECTORS, 44]}
    grid = InProcessGrid(apps, {**configs, 44: {"party-key": str(tmp_path / "sybil"),
                                                "party-roster": str(sybil_roster)}}, record=True)
    with pytest.raises(DropoutError, match=r"the round has 4 participants; the party roster lists 3"):
        run_round(grid)
    assert masked_vectors(grid) == {}


def test_a_sybil_in_place_of_a_party_is_refused(parties, tmp_path):
    configs, _ = parties
    write_party_key(tmp_path / "sybil")
    sybil_roster = tmp_path / "sybil-roster.txt"  # the sybil's own view: the two real parties and itself
    sybil_roster.write_text("".join((tmp_path / f"party-{nid}.pub").read_text() for nid in (11, 33))
                            + (tmp_path / "sybil.pub").read_text())
    configs = {**configs, 22: {"party-key": str(tmp_path / "sybil"), "party-roster": str(sybil_roster)}}
    grid = InProcessGrid({nid: make_party_client_app(_reply) for nid in VECTORS}, configs, record=True)
    with pytest.raises(DropoutError, match=r"keys of node 22 are signed by a key that is not on the roster"):
        run_round(grid)
    assert masked_vectors(grid) == {}


def test_a_party_shown_twice_is_refused(parties, monkeypatch):
    configs, _ = parties

    class ShowsTwice(flower_grid.AbortOnDropoutSecAggPlusWorkflow):  # node 22's signed keys relayed as 33's too
        def share_keys_stage(self, grid, context, state):
            state.nid_to_publickeys[33] = state.nid_to_publickeys[22]
            self.key_signatures[33] = self.key_signatures[22]
            return super().share_keys_stage(grid, context, state)

    monkeypatch.setattr(flower_grid, "AbortOnDropoutSecAggPlusWorkflow", ShowsTwice)
    grid = InProcessGrid({nid: make_party_client_app(_reply) for nid in VECTORS}, configs, record=True)
    with pytest.raises(DropoutError, match=r"nodes \[22, 33\] carry keys signed by the same party"):
        run_round(grid)


def test_a_party_with_half_a_roster_setting_takes_no_part(parties):
    configs, _ = parties
    configs = {**configs, 11: {"party-key": configs[11]["party-key"]}}
    grid = InProcessGrid({nid: make_party_client_app(_reply) for nid in VECTORS}, configs)
    with pytest.raises(DropoutError, match=r"gives only one of 'party-key' and 'party-roster'; give both"):
        run_round(grid)


def test_the_roster_file_is_checked_line_by_line(tmp_path):
    write_party_key(tmp_path / "a")
    line = (tmp_path / "a.pub").read_text()
    for text, message in [("ssh-ed25519 AAAA\n", "line 1: not an OpenSSH public key"),
                          (line + line, "line 2: this key is listed twice"),
                          ("# only a comment\n" + line, "lists 1 key")]:
        (tmp_path / "roster").write_text(text)
        with pytest.raises(ValueError, match=message):
            _roster.load_roster(tmp_path / "roster")


def test_keys_signed_for_another_run_are_refused(tmp_path):
    keys = {}
    for nid in (1, 2):
        write_party_key(tmp_path / f"k{nid}")
        keys[nid] = _roster.load_party_key(tmp_path / f"k{nid}")
    roster = frozenset(_roster.party_public_key(key) for key in keys.values())
    pairs = {nid: (bytes([nid]) * 8, bytes([nid + 10]) * 8) for nid in keys}
    signed = {nid: _roster.sign_public_keys(keys[nid], 7, *pairs[nid]) for nid in keys}
    own = _roster.party_public_key(keys[1])
    _roster.check_relayed_keys(roster, own, 1, 7, pairs, signed)  # this run: accepted
    with pytest.raises(ValueError, match="node 1 do not match its party's signature for this run"):
        _roster.check_relayed_keys(roster, own, 1, 8, pairs, signed)  # replayed into run 8
    with pytest.raises(ValueError, match="its own SecAgg\\+ keys are not relayed under its own party key"):
        _roster.check_relayed_keys(roster, own, 2, 7, pairs, signed)


def test_party_serve_checks_its_roster_before_starting(tmp_path):
    from dperm.multiparty.flower.deploy import check_party_roster, write_party_roster

    publics = [write_party_key(tmp_path / f"k{k}") for k in range(3)]
    roster = write_party_roster(tmp_path / "roster.pub", publics[:2])
    assert check_party_roster(tmp_path / "k0", roster) == 2
    with pytest.raises(ValueError, match=r"--roster .* does not list this party's key"):
        check_party_roster(tmp_path / "k2", roster)
    with pytest.raises(ValueError, match="exists; choose a new path"):
        write_party_roster(roster, publics)
