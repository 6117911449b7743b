"""SecAgg+'s masks from the whole shared secret (issue 31, finding 3; Flower issue #7522).

Flower's ``pseudo_rand_gen`` XOR-folds a seed to 32 bits; dperm's adapter
replaces it, on both sides and only inside a block, with SHAKE-256 over the
whole seed (:func:`dperm.multiparty.flower._adapter.mask_generator`).
"""

from __future__ import annotations

import hashlib
import threading

import numpy as np
import pytest
from scipy import stats

flwr = pytest.importorskip("flwr")

from flwr.common.secure_aggregation.crypto.symmetric_encryption import generate_shared_key  # noqa: E402
from flwr.common.secure_aggregation.ndarrays_arithmetic import factor_extract  # noqa: E402
from flwr.common.secure_aggregation.quantization import dequantize  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_STATE  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen  # noqa: E402
from flwr.supercore.primitives.asymmetric import bytes_to_private_key, bytes_to_public_key  # noqa: E402

from dperm.exceptions import DropoutError  # noqa: E402
from dperm.multiparty.flower import _adapter  # noqa: E402
from dperm.multiparty.flower import grid as flower_grid  # noqa: E402
from dperm.multiparty.flower.grid import InProcessGrid, make_party_client_app, secagg_sum_round  # noqa: E402
from tests.multiparty.flower.test_grid_secagg_guard import CLIPPING, MODULUS, QUANTIZATION, masked_vectors  # noqa: E402

STEP = 2 * CLIPPING / QUANTIZATION


def flower_fold(seed: bytes) -> int:
    """Flower 1.41's 32-bit seed: the XOR of the seed's little-endian 32-bit words."""
    folded = 0
    for i in range(0, len(seed), 4):
        folded ^= int.from_bytes(seed[i:i + 4], "little")
    return folded


def colliding_pair(seed: int = 0) -> tuple[bytes, bytes]:
    """Two different 32-byte secrets with the same fold: one 32-bit value XORed into words 0 and 1."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, 256, size=32, dtype=np.uint8).tobytes()
    flip = rng.integers(1, 2**32, dtype=np.uint64).item().to_bytes(4, "little")
    second = bytes(a ^ b for a, b in zip(first, flip + flip + bytes(24)))
    return first, second


# -- the generator -------------------------------------------------------------------------


def spec_draws(seed: bytes, num_range: int, count: int) -> list[int]:
    """The generator as its docstring states it, word by word (no numpy)."""
    xof = hashlib.shake_256(_adapter.MASK_GENERATOR_DOMAIN + len(seed).to_bytes(8, "little") + seed
                            + num_range.to_bytes(8, "little"))
    stream = xof.digest(8 * 4 * (count + 16))
    low = (1 << (num_range - 1).bit_length()) - 1
    kept = [w & low for w in (int.from_bytes(stream[i:i + 8], "little") for i in range(0, len(stream), 8))]
    kept = [value for value in kept if value < num_range]
    assert len(kept) >= count
    return kept[:count]


@pytest.mark.parametrize("num_range", [2**32, 2**16, 6, 1000, 2**63])
def test_the_generator_is_its_specification_across_shapes(num_range):
    seed = bytes(range(44))  # a shared key is 44 bytes (base64 of HKDF's 32)
    shapes = [(3,), (), (2, 4), (0,), (5,)]
    masks = _adapter.mask_generator(seed, num_range, shapes)
    assert [m.shape for m in masks] == shapes and all(m.dtype == np.int64 for m in masks)
    flat = np.concatenate([m.ravel() for m in masks])
    assert flat.tolist() == spec_draws(seed, num_range, 17)
    # one stream: the same draws whatever the split into arrays, and a longer request extends it
    assert flat.tolist() == _adapter.mask_generator(seed, num_range, [(17,)])[0].tolist()
    longer = _adapter.mask_generator(seed, num_range, [(5000,)])[0]
    assert longer[:17].tolist() == flat.tolist() and longer.min() >= 0 and longer.max() < num_range


def test_the_generator_refuses_a_range_it_cannot_draw():
    for bad in (1, 0, 2**63 + 1):
        with pytest.raises(ValueError, match="num_range must be in"):
            _adapter.mask_generator(b"seed", bad, [(2,)])


@pytest.mark.parametrize("num_range, bins", [(6, 6), (2**32, 64)])
def test_the_masks_are_uniform_on_the_whole_range(num_range, bins):
    draws = _adapter.mask_generator(b"uniformity", num_range, [(60_000,)])[0]
    counts = np.bincount(draws // (num_range // bins), minlength=bins)
    assert stats.chisquare(counts).pvalue > 1e-3
    if num_range == 6:  # numpy's randint(0, R - 1), Flower's draw, never gives R - 1
        assert counts[-1] > 0
        assert pseudo_rand_gen(b"uniformity" + bytes(2), num_range, [(60_000,)])[0].max() == num_range - 2


def test_two_secrets_that_collide_under_flowers_fold_give_unrelated_masks():
    first, second = colliding_pair()
    assert first != second and flower_fold(first) == flower_fold(second)
    shape = [(20_000,)]
    np.testing.assert_array_equal(pseudo_rand_gen(first, MODULUS, shape)[0],  # the weakness is real
                                  pseudo_rand_gen(second, MODULUS, shape)[0])
    a = _adapter.mask_generator(first, MODULUS, shape)[0]
    b = _adapter.mask_generator(second, MODULUS, shape)[0]
    assert np.count_nonzero(a == b) == 0  # 20,000 x 2^-32 expected
    difference = np.mod(a - b, MODULUS)  # a one-time pad's difference: uniform again
    assert stats.chisquare(np.bincount(difference >> 26, minlength=64)).pvalue > 1e-3
    assert abs(stats.pearsonr(a, b).statistic) < 0.03


def test_two_real_pairwise_keys_that_collide_give_unrelated_masks():
    # a shared key is what ECDH + HKDF gives the two parties of a pair (44 base64 bytes)
    from flwr.supercore.primitives.asymmetric import generate_key_pairs

    (sk_a, _), (_, pk_b) = generate_key_pairs(), generate_key_pairs()
    key = generate_shared_key(sk_a, pk_b)
    forged = bytes(x ^ y for x, y in zip(key, b"\x01\x00\x00\x00" * 2 + bytes(len(key) - 8)))
    assert flower_fold(forged) == flower_fold(key) and forged != key
    a, b = (_adapter.mask_generator(k, MODULUS, [(5000,)])[0] for k in (key, forged))
    assert np.count_nonzero(a == b) == 0


# -- scoped, on both sides ---------------------------------------------------------------


def test_the_generator_is_in_force_inside_the_block_only():
    modules = _adapter.MASK_GENERATOR_MODULES
    assert [m.__name__.rsplit(".", 1)[-1] for m in modules] == ["secaggplus_mod", "secaggplus_workflow"]
    assert all(m.pseudo_rand_gen is pseudo_rand_gen for m in modules)
    with _adapter.cryptographic_masks():
        assert all(m.pseudo_rand_gen is _adapter.mask_generator for m in modules)
        with _adapter.cryptographic_masks():  # nested: a party answering inside the coordinator's stage
            pass
        assert all(m.pseudo_rand_gen is _adapter.mask_generator for m in modules)
    assert all(m.pseudo_rand_gen is pseudo_rand_gen for m in modules)


def test_overlapping_blocks_in_threads_keep_it_until_the_last_one_leaves():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def first():
        with _adapter.cryptographic_masks():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with _adapter.cryptographic_masks():
            second_in.set()
            first_out.wait(10)  # the first block has left; this one still masks with dperm's generator
            seen.append(_adapter.MASK_GENERATOR_MODULES[0].pseudo_rand_gen)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert seen == [_adapter.mask_generator]
    assert _adapter.MASK_GENERATOR_MODULES[0].pseudo_rand_gen is pseudo_rand_gen


def test_it_refuses_to_mix_with_a_generator_it_does_not_know(monkeypatch):
    workflow_module = _adapter.MASK_GENERATOR_MODULES[1]
    monkeypatch.setattr(workflow_module, "pseudo_rand_gen", lambda *args: None)
    with pytest.raises(RuntimeError, match="secaggplus_workflow, which is not there; nothing was changed"):
        with _adapter.cryptographic_masks():
            pass
    assert _adapter.MASK_GENERATOR_MODULES[0].pseudo_rand_gen is pseudo_rand_gen


VECTORS = {nid: np.random.default_rng(nid).uniform(-3, 3, size=40) for nid in (3, 17, 29, 41)}


def _reply(context, coef, config):
    return [VECTORS[context.node_id]]


def _party_secrets(grid):
    """What each party's mod kept after the round: its self-mask seed, mask private key and the keys it got."""
    found = {}
    for nid, context in grid._contexts.items():
        state = flower_grid.SecAggPlusState(**dict(context.state.config_records[RECORD_KEY_STATE]))
        found[nid] = state.rd_seed, state.sk1, {other: pks[0] for other, pks in state.public_keys_dict.items()}
    return found


def strip_masks(nid, vector, secrets, generator):
    """Party ``nid``'s reply from its masked vector and its own secrets, as if the masks came from ``generator``."""
    rd_seed, sk1, public_keys = secrets[nid]
    shapes = [a.shape for a in vector]
    vector = [a - m for a, m in zip(vector, generator(rd_seed, MODULUS, shapes))]
    for other, pk1 in public_keys.items():
        if other != nid:
            mask = generator(generate_shared_key(bytes_to_private_key(sk1), bytes_to_public_key(pk1)), MODULUS, shapes)
            vector = [a - m if nid > other else a + m for a, m in zip(vector, mask)]
    ratio, vector = factor_extract([np.mod(a, MODULUS) for a in vector])
    return [v * QUANTIZATION / ratio for v in dequantize(vector, CLIPPING, QUANTIZATION)][0]


def run_round(grid):
    with flower_grid.quiet_flower():
        (total,) = secagg_sum_round(grid, {nid: f"p{nid}" for nid in VECTORS}, parameters=[np.zeros(1)], config={},
                                    clipping_range=CLIPPING, quantization_range=QUANTIZATION, modulus_range=MODULUS)
    return total


def test_the_masks_cancel_in_a_real_aggregation_and_are_dperms():
    grid = InProcessGrid({nid: make_party_client_app(_reply) for nid in VECTORS}, record=True)
    total = run_round(grid)
    np.testing.assert_allclose(total, sum(VECTORS.values()), atol=len(VECTORS) * STEP)
    masked, secrets = masked_vectors(grid), _party_secrets(grid)
    for nid, vector in VECTORS.items():
        np.testing.assert_allclose(strip_masks(nid, masked[nid], secrets, _adapter.mask_generator), vector,
                                   atol=STEP)  # every mask the party added is dperm's ...
        flowers = strip_masks(nid, masked[nid], secrets, pseudo_rand_gen)
        assert np.abs(flowers - vector).max() > 100 * STEP  # ... none of them is Flower's


class FlowersOwnUnmasking(_adapter.AbortOnDropoutSecAggPlusWorkflow):
    """A coordinator whose unmask stage uses Flower's generator (dperm's before this change)."""

    def unmask_stage(self, grid, context, state):
        finished = _adapter.SecAggPlusWorkflow.unmask_stage(self, grid, context, state)
        self.unmasked = finished
        return finished


def test_the_party_masks_with_it_on_its_own_so_a_coordinator_needs_it_too(monkeypatch):
    monkeypatch.setattr(flower_grid, "AbortOnDropoutSecAggPlusWorkflow", FlowersOwnUnmasking)
    grid = InProcessGrid({nid: make_party_client_app(_reply) for nid in VECTORS}, record=True)
    total = run_round(grid)  # the parties' self-masks are not removed: the "sum" is noise on the grid
    assert np.abs(total - sum(VECTORS.values())).max() > 1.0
    masked, secrets = masked_vectors(grid), _party_secrets(grid)
    for nid, vector in VECTORS.items():  # and each party masked with dperm's generator all the same
        np.testing.assert_allclose(strip_masks(nid, masked[nid], secrets, _adapter.mask_generator), vector,
                                   atol=STEP)


def test_a_party_refuses_a_round_that_does_not_announce_its_generator(monkeypatch, caplog):
    class OlderCoordinator(flower_grid._SumStrategy):  # a release before this change sends no such entry
        def __init__(self, proxies, config):
            super().__init__(proxies, {k: v for k, v in config.items() if k != flower_grid.MASK_GENERATOR_KEY})

    monkeypatch.setattr(flower_grid, "_SumStrategy", OlderCoordinator)
    grid = InProcessGrid({nid: make_party_client_app(_reply) for nid in VECTORS}, record=True)
    with pytest.raises(DropoutError, match=r"announces the mask generator None, not 'dperm/secagg\+/mask-generator"
                                           r"/v1'.*Run the same dperm release on both sides"):
        run_round(grid)
    assert masked_vectors(grid) == {}  # refused before any reply was masked
