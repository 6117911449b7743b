"""Tests of the Flower SecAgg+ engine and the networked PSGD deployment (004 Thm 4.2, note 14)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

flwr = pytest.importorskip("flwr")

from flwr.app import Context, Message, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.common import Code, FitIns, FitRes, Status, bytes_to_ndarray, ndarrays_to_parameters  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage  # noqa: E402
from flwr.compat.common import recorddict_compat as compat  # noqa: E402

from dperm.cli import main as dperm_main  # noqa: E402
from dperm.exceptions import DataClippingWarning  # noqa: E402
from dperm.losses import get_loss  # noqa: E402
from dperm.multiparty import (  # noqa: E402
    DropoutError,
    InProcessNetwork,
    MalformedReplyError,
    MaskedSecureSum,
    Party,
    PartyUnavailableError,
    PSGDClassifier,
    SecureSum,
    SecureSumClippingWarning,
    calibrate_psgd,
    psgd,
)
from dperm.multiparty.flower import app as flower_app  # noqa: E402
from dperm.multiparty.flower._adapter import server_identity  # noqa: E402
from dperm.multiparty.flower._grid_network import new_run_id  # noqa: E402
from dperm.multiparty.flower.deploy import (  # noqa: E402
    free_loopback_ports,
    stop_process_group,
    write_loopback_certificates,
    write_party_key,
    write_party_roster,
)
from dperm.multiparty.flower.engine import (  # noqa: E402
    FlowerSecureSum,
    configure_flower_environment,
    decode_counts,
    encode_counts,
)
from dperm.multiparty.flower.grid import InProcessGrid  # noqa: E402
from dperm.multiparty.ledger import PartyLedger  # noqa: E402
from dperm.multiparty.model_file import model_from_document  # noqa: E402
from dperm.multiparty.privacy import round_noise_calibration  # noqa: E402
from tests._multiparty_data import make_data, plain_vectors, split, write_shard  # noqa: E402

LOGISTIC = get_loss("logistic")


class RecordingGrids:
    """A grid factory that keeps every in-process grid it builds, recording both directions."""

    def __init__(self, silent_after=None):
        self.grids = []
        self.silent_after = silent_after

    def __call__(self, client_apps):
        grid = InProcessGrid(client_apps, record=True, silent_after=self.silent_after)
        self.grids.append(grid)
        return grid


# -- what the server side receives -----------------------------------------------------


def contents_seen(messages):
    """Every array, float and raw byte string in ``messages`` (decoding npy bytes)."""
    arrays, floats, raw = [], [], []
    for message in messages:
        if message.has_error():
            raw.append(message.error.reason.encode())
            continue
        content = message.content
        for record in content.array_records.values():
            arrays.extend(array.numpy() for array in record.values())
        for record in list(content.config_records.values()) + list(content.metric_records.values()):
            for value in record.values():
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, bytes):
                        try:
                            arrays.append(bytes_to_ndarray(item))
                        except Exception:  # noqa: BLE001 -- keys, ciphertexts: not arrays
                            raw.append(item)
                    elif isinstance(item, float):
                        floats.append(item)
    return arrays, floats, raw


def leaked(vector, messages, clipping_range, quantization_range):
    """Does any message hold ``vector`` in plain text, or its fixed-point encoding before masking?"""
    arrays, floats, raw = contents_seen(messages)
    step = 2 * clipping_range / quantization_range
    on_grid = (np.clip(vector, -clipping_range, clipping_range) + clipping_range) / step
    for array in arrays:
        array = np.asarray(array, dtype=float).ravel()
        if array.shape != vector.shape:
            continue
        if np.allclose(array, vector, rtol=0, atol=step) or np.abs(array - on_grid).max() <= 1.0:
            return True
    if any(vector.tobytes() in item for item in raw):
        return True
    return bool(floats) and np.isin(np.round(vector, 12), np.round(floats, 12)).any()


def stages_sent(grid):
    return [message.content.config_records[RECORD_KEY_CONFIGS][Key.STAGE] for message in grid.sent
            if RECORD_KEY_CONFIGS in message.content.config_records]


# -- the secure sum --------------------------------------------------------------------


def test_flower_sum_equals_plain_sum_within_quantisation_bound():
    vectors = plain_vectors()
    engine = FlowerSecureSum(clipping_range=8.0, quantization_range=2**10)
    total, report = engine.sum(vectors, dimension=50)
    error = np.abs(total - sum(vectors.values()))
    bound = 4 * 2 * 8.0 / 2**10  # K * 2C / Q
    assert report.error_bound == pytest.approx(bound)
    assert (report.engine, report.n_parties, report.dimension) == ("flower_secaggplus", 4, 50)
    assert report.coordinates_clipped == 0
    assert error.max() < bound
    assert error.max() > 0  # coarse grid: Flower's rounding is visible, so the sum really went through it


def test_flower_sum_at_default_precision_and_against_the_masked_engine():
    vectors = plain_vectors(n_parties=3, dimension=30, seed=3)
    total, report = FlowerSecureSum().sum(vectors, 30)
    masked_total, masked_report = MaskedSecureSum(random_state=0).sum(vectors, 30)
    assert np.abs(total - sum(vectors.values())).max() < report.error_bound == masked_report.error_bound
    assert np.abs(total - masked_total).max() < 2 * report.error_bound


def test_clipping_is_counted_inside_the_secure_sum():
    vectors = {"a": np.array([10.0, -0.5, -20.0, 1.0]), "b": np.array([1.0, 9.0, 0.0, -8.5]),
               "c": np.array([0.0, 0.0, 0.0, 0.0])}
    recorder = RecordingGrids()
    total, report = FlowerSecureSum(clipping_range=8.0, grid_factory=recorder).sum(vectors, 4)
    assert report.coordinates_clipped == 4
    expected = sum(np.clip(v, -8, 8) for v in vectors.values())
    assert np.abs(total - expected).max() < report.error_bound
    # no metric travels in the clear: every reply's metrics are empty and num_examples is 1
    (grid,) = recorder.grids
    fit_replies = [m for m in grid.received if "fitres.metrics" in m.content.config_records]
    assert len(fit_replies) == 3
    for reply in fit_replies:
        assert dict(reply.content.config_records["fitres.metrics"]) == {}
        assert dict(reply.content.metric_records["fitres.num_examples"]) == {"num_examples": 1}


def test_counts_survive_the_grid_exactly_with_several_digits():
    quantization_range, clipping_range = 16, 0.5
    counts = [[0, 1000], [15, 16], [3, 999]]
    bounds = [20, 1000]  # 1000 >= 16**2: three base-16 digits
    encoded = [encode_counts(c, bounds, clipping_range, quantization_range) for c in counts]
    assert all(np.all(np.abs(e) <= clipping_range) for e in encoded)
    assert decode_counts(np.sum(encoded, axis=0), bounds, 3, clipping_range, quantization_range) == [18, 2015]
    with pytest.raises(ValueError, match="outside its public bound"):
        encode_counts([21, 0], bounds, clipping_range, quantization_range)
    with pytest.raises(ValueError, match=r"counts have shape \(5,\); 1 count\(s\) with bounds \[20\] take \(2,\)"):
        decode_counts(np.sum(encoded, axis=0), [20], 3, clipping_range, quantization_range)  # more than agreed


def test_server_side_never_receives_an_individual_vector():
    vectors = plain_vectors(n_parties=3, dimension=40, seed=5)
    recorder = RecordingGrids()
    engine = FlowerSecureSum(grid_factory=recorder)
    total, _ = engine.sum(vectors, 40)
    (grid,) = recorder.grids
    assert stages_sent(grid).count(Stage.UNMASK) == 3
    arrays, _, _ = contents_seen(grid.received)
    masked = [a for a in arrays if a.shape == (40,)]
    assert len(masked) == 3  # the masked vectors are in the transcript ...
    for party_id, vector in vectors.items():  # ... but no party's vector, plain or encoded
        assert not leaked(vector, grid.received, 8.0, 2**22), party_id
    assert np.abs(total - sum(vectors.values())).max() < 1e-4


def test_the_leak_detector_catches_a_client_without_secaggplus():
    """Power of the transcript check: the same grid with a plain ClientApp exposes the vector."""
    vector = np.random.default_rng(6).uniform(-7, 7, size=40)
    app = ClientApp()

    @app.train()
    def train(message, context):
        fit_res = FitRes(Status(Code.OK, ""), ndarrays_to_parameters([vector]), 1, {})
        return Message(compat.fitres_to_recorddict(fit_res, keep_input=True), reply_to=message)

    grid = InProcessGrid({1: app}, record=True)
    content = compat.fitins_to_recorddict(FitIns(ndarrays_to_parameters([]), {}), keep_input=True)
    with server_identity(grid.run.run_id):
        grid.send_and_receive([Message(content, 1, "train", group_id="1")])
    assert leaked(vector, grid.received, 8.0, 2**22)


@pytest.mark.parametrize("silent_after, stage", [(0, Stage.SETUP), (1, Stage.SHARE_KEYS),
                                                 (2, Stage.COLLECT_MASKED_VECTORS), (3, Stage.UNMASK)])
def test_a_party_that_goes_silent_aborts_the_round_and_nothing_is_revealed(silent_after, stage):
    vectors = plain_vectors(n_parties=3, dimension=20, seed=7)
    recorder = RecordingGrids(silent_after={2: silent_after})  # node 2 is party "p1"
    engine = FlowerSecureSum(grid_factory=recorder)
    with pytest.raises(DropoutError, match=r"2 of 3 parties.*missing: \['p1'\].*nothing is revealed"):
        engine.sum(vectors, 20)
    (grid,) = recorder.grids
    sent = stages_sent(grid)
    if stage != Stage.UNMASK:  # stopped before the unmask stage: no share was ever asked for
        assert Stage.UNMASK not in sent
        assert not any(Key.SHARE_LIST in m.content.config_records.get(RECORD_KEY_CONFIGS, {})
                       for m in grid.received if not m.has_error())
    for vector in vectors.values():
        assert not leaked(vector, grid.received, 8.0, 2**22)


def test_a_party_that_refuses_is_reported_as_refusing_with_its_reason_not_as_missing():
    vectors = plain_vectors(n_parties=3, dimension=20)
    vectors["p2"] = None  # p2 answers with an error reply: a refusal the coordinator sees
    with pytest.raises(DropoutError, match=r"2 of 3 parties.*refused: \['p2'\].*did not send its vector.*"
                                           r"survivors' sum would be under-noised") as caught:
        FlowerSecureSum().sum(vectors, 20)
    assert "missing" not in str(caught.value)


@pytest.mark.parametrize("bad, message", [
    (np.zeros(3), r"party 'p1'.*shape \(3,\), expected \(40,\)"),
    (np.full(40, np.nan), r"party 'p1'.*non-finite"),
    ("garbage", r"party 'p1'.*not a numeric vector"),
])
def test_malformed_replies_are_rejected(bad, message):
    vectors = plain_vectors(n_parties=3, dimension=40)
    vectors["p1"] = bad
    with pytest.raises(MalformedReplyError, match=message):
        FlowerSecureSum().sum(vectors, 40)


def test_parameter_checks():
    with pytest.raises(ValueError, match="power of two"):
        FlowerSecureSum(modulus_range=3 * 2**20)
    with pytest.raises(ValueError, match="quantization_range"):
        FlowerSecureSum(quantization_range=2**31)
    with pytest.raises(ValueError, match="wrap around"):
        FlowerSecureSum(quantization_range=2**22, modulus_range=2**23).sum(plain_vectors(3, 5), 5)
    with pytest.raises(ValueError, match="at least 2 parties"):
        FlowerSecureSum().sum({"a": np.zeros(2)}, 2)
    assert isinstance(FlowerSecureSum(), SecureSum)


# -- PSGD on the Flower engine ---------------------------------------------------------


@pytest.mark.slow  # Flower's in-process engine over many rounds: ~40 s on a loaded 2-core machine
def test_psgd_on_flower_matches_the_masked_engine_up_to_quantisation():
    X, y = make_data(n=240)
    shards = split(X, y, (60, 80, 100))
    params = dict(epsilon=1.0, alpha=0.05, n_rounds=25, random_state=11)
    masked = PSGDClassifier(**params).fit(shards)  # default engine, C from public constants
    clipping_range = masked.privacy_.secure_sum.clipping_range
    flower = PSGDClassifier(**params, secure_sum=FlowerSecureSum(clipping_range=clipping_range)).fit(shards)
    by_name = PSGDClassifier(**params, secure_sum="flower").fit(shards)
    assert flower.privacy_.secure_sum.engine == by_name.privacy_.secure_sum.engine == "flower_secaggplus"
    assert by_name.privacy_.secure_sum.clipping_range == clipping_range
    # same seeds: same parties and noise; only the stochastic rounding differs (< 2KC/Q per round)
    scale = np.abs(masked.coef_).max()
    assert np.abs(flower.coef_ - masked.coef_).max() < 1e-4 * scale
    assert np.abs(by_name.coef_ - masked.coef_).max() < 1e-4 * scale
    assert flower.privacy_.secure_sum.coordinates_clipped == 0 and flower.privacy_.gop_equivalent
    with pytest.raises(ValueError, match="'flower'"):
        PSGDClassifier(**params, secure_sum="paillier").fit(shards)


def test_psgd_clipping_is_counted_on_flower_like_on_the_masked_engine():
    X, y = make_data(n=120)
    shards = split(X, y, (30, 40, 50))
    params = dict(epsilon=1.0, alpha=0.05, n_rounds=5, random_state=2)
    with pytest.warns(SecureSumClippingWarning, match="clipped"):
        flower = PSGDClassifier(**params, secure_sum=FlowerSecureSum(clipping_range=1e-3)).fit(shards)
    with pytest.warns(SecureSumClippingWarning):
        masked = PSGDClassifier(**params, secure_sum=MaskedSecureSum(clipping_range=1e-3, random_state=0)).fit(shards)
    summary = flower.privacy_.secure_sum
    assert summary.coordinates_clipped > 0 and summary.sums_with_clipping == 5
    # clipping depends only on the parties' noisy replies, identical under both engines
    assert summary.coordinates_clipped == masked.privacy_.secure_sum.coordinates_clipped
    assert not flower.privacy_.gop_equivalent


class DroppingParty(Party):
    def noisy_gradient(self, coef):
        if self.rounds_answered == 2:
            raise PartyUnavailableError("offline")
        return super().noisy_gradient(coef)


class NaNParty(Party):
    def noisy_gradient(self, coef):
        reply = super().noisy_gradient(coef)
        reply[0] = np.nan
        return reply


@pytest.mark.parametrize("bad_class, error, message", [
    (DroppingParty, DropoutError, r"round 2: 2 of 3 parties .*refused: \[1\].*did not send its vector"),
    (NaNParty, MalformedReplyError, r"round 0: party 1 replied with 1 non-finite"),
])
def test_psgd_on_flower_aborts_on_dropout_and_malformed_replies(bad_class, error, message):
    X, y = make_data(n=120)
    shards = split(X, y, (30, 40, 50))
    parties = [(bad_class if k == 1 else Party)(Xk, yk, loss=LOGISTIC, party_id=k, random_state=k,
                                                max_epsilon=10.0, max_delta=1e-5, max_rounds=6)
               for k, (Xk, yk) in enumerate(shards)]
    calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=120, n_parties=3,
                                 n_features=4, n_rounds=6, loss=LOGISTIC, data_norm=1.0)
    with pytest.raises(error, match=message):
        psgd(InProcessNetwork(parties, FlowerSecureSum()), calibration)


# -- the networked deployment, in process ----------------------------------------------


@pytest.fixture
def shard_files(tmp_path):
    X, y = make_data(n=120)
    X[0] *= 3.0 / np.linalg.norm(X[0])  # two rows beyond the data norm: each party scales its own,
    X[70] *= 2.0 / np.linalg.norm(X[70])  # and only the total is revealed
    return [write_shard(tmp_path / f"shard{k}.csv", Xk, yk)
            for k, (Xk, yk) in enumerate(split(X, y, (30, 40, 50)))]


#: Every party's own floor in the deployment tests (dperm party serve --max-epsilon --max-delta --max-rounds).
FLOOR = {"max-epsilon": 10.0, "max-delta": 1e-5, "max-rounds": 10}


def deployment_grid(paths, floor=FLOOR, ledger_dir=None, **kwargs):
    """In-process parties as `dperm party serve` configures them, each with its own ledger in ``ledger_dir``."""
    node_ids = [101, 205, 307]
    ledger_dir = Path(tempfile.mkdtemp(dir=Path(paths[0]).parent)) if ledger_dir is None else Path(ledger_dir)
    return InProcessGrid({node_id: flower_app.client_app for node_id in node_ids[:len(paths)]},
                         {node_id: {"data-path": str(path), "party-name": f"hospital-{k}", **floor,
                                    "ledger-path": str(ledger_dir / f"ledger-{node_id}.json")}
                          for k, (node_id, path) in enumerate(zip(node_ids, paths))}, **kwargs)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")  # each party's own log
def test_deployment_apps_run_psgd_in_process(shard_files, tmp_path):
    grid = deployment_grid(shard_files, record=True)
    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=6,
                                              wait_seconds=1.0)
    result, parties, network, _ = flower_app.coordinate(grid, settings)
    record = result.record
    assert [p.name for p in parties] == ["hospital-0", "hospital-1", "hospital-2"]
    assert record.n_samples_by_party == (30, 40, 50) and record.n_rounds == 6
    assert "rows_clipped" not in record.to_dict()  # each party scaled its long row; no count is sent
    assert record.secure_sum.engine == "flower_secaggplus_networked" and record.secure_sum.n_sums == 6
    assert len(network.round_seconds) == 6
    assert np.all(np.isfinite(result.coef))
    # the parties' data never reach the server: no value of a training row is in what it received
    arrays, floats, _ = contents_seen(grid.received)
    seen = np.concatenate([a.ravel().astype(float) for a in arrays] + [np.array(floats)])
    X, _, _ = flower_app.load_shard(shard_files[0])
    assert seen.size > 0 and not np.isin(X[:10].ravel(), seen).any()
    document = flower_app.model_document(result, parties, settings)
    flower_app.write_json(tmp_path / "model.json", document)
    loaded = json.loads((tmp_path / "model.json").read_text())
    assert loaded["format"] == "dperm-multiparty-model" and loaded["features"] == ["x0", "x1", "x2", "x3"]
    assert "rows_clipped" not in loaded["privacy"] and len(loaded["coef"][0]) == 4
    assert loaded["version"] == 4 and loaded["privacy"]["epsilon"] == record.coordinator_epsilon == 6.0


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_deployment_runs_the_coordinator_dp_option(shard_files, tmp_path, accountant):
    # `dperm coordinate --coordinator-dp`: the parties receive the Gaussian calibration in the set-up
    # message, draw no one-time noise, and the coordinator's whole view is (eps, delta)-DP
    grid = deployment_grid(shard_files)
    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=4,
                                              wait_seconds=1.0, coordinator_dp=True,
                                              coordinator_accountant=accountant)
    result, parties, _, _ = flower_app.coordinate(grid, settings)
    expected = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=120, n_parties=3, n_features=4,
                              n_rounds=4, loss=get_loss("logistic"), data_norm=1.0, coordinator_dp=True,
                              coordinator_accountant=accountant)
    assert result.calibration == expected
    record = result.record
    assert record.coordinator_dp and record.round_noise == "gaussian"
    assert record.party_noise_sigma == 0.0                       # no one-time eta^k
    assert record.round_noise_sigma == pytest.approx(expected.round_noise_sigma)
    assert record.coordinator_epsilon <= 1.0 + 1e-9 and record.coordinator_delta == pytest.approx(1e-5)
    document = flower_app.model_document(result, parties, settings)
    assert document["params"]["coordinator_dp"] is True
    assert document["params"]["coordinator_accountant"] == accountant
    flower_app.write_json(tmp_path / "model.json", document)
    model, _ = model_from_document(json.loads((tmp_path / "model.json").read_text()))
    assert model.coordinator_dp and model.coordinator_accountant == accountant
    assert model.privacy_.coordinator_dp


def party_context(path, floor=FLOOR):
    """A SuperNode's context for one party, as ``dperm party serve`` configures it."""
    ledger = Path(path).with_name(Path(path).stem + "-ledger.json")
    return Context(run_id=1, node_id=7, node_config={"data-path": str(path), "party-name": "p", **floor,
                                                     "ledger-path": str(ledger)},
                   state=RecordDict(), run_config={})


def saved_run_state(context, run_id):
    """The party's saved state document for ``run_id`` (its own file)."""
    return json.loads(flower_app.run_state_path(context, run_id).read_text(encoding="utf-8"))


@pytest.mark.parametrize("coordinator_dp", [False, True])
def test_what_a_flower_party_sends_holds_no_count_of_its_rows(tmp_path, coordinator_dp):
    """The party's arrays for the secure sum have the same shape whether or not its rows were clipped."""
    if coordinator_dp:
        pytest.importorskip("dp_accounting")
    X, y = make_data(n=40)
    X_long = X.copy()
    X_long[:5] *= 3.0 / np.linalg.norm(X_long[:5], axis=1, keepdims=True)  # 5 rows beyond R = 1
    calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=100, n_parties=2, n_features=4,
                                 n_rounds=3, loss=LOGISTIC, data_norm=1.0, coordinator_dp=coordinator_dp)
    run_id = new_run_id()
    config = {"action": "setup", "run-id": run_id, **flower_app.calibration_to_config(calibration, 0.5)}
    round_config = {"scale": 1 / 100, "clipping-range": 8.0, "quantization-range": 2**22, "run-id": run_id}
    sent = {}
    for name, rows in (("inside", X), ("clipped", X_long)):
        context = party_context(write_shard(tmp_path / f"{name}.csv", rows, y))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataClippingWarning)  # the party's own log
            assert flower_app.party_setup(context, config) == {"ready": True}
        state = saved_run_state(context, run_id)  # no row count even in the party's own state
        # round-charges: the ledger's per-round charges, a function of the public calibration only
        assert set(state) == {"format", "run-id", "calibration", "eta", "rounds-answered", "round-charges"}
        assert set(state["calibration"]) == set(config) - {"action", "run-id"}
        assert not context.state.config_records and not context.state.array_records
        sent[name] = flower_app.party_reply(context, [np.zeros(4)], round_config)
    for arrays in sent.values():
        if coordinator_dp:  # no count at all: it would not be covered by the accounting
            assert [a.shape for a in arrays] == [(4,)]
        else:  # the reply and one base-Q digit: its clipped coordinates, nothing else
            assert [a.shape for a in arrays] == [(4,), (1,)]
            assert decode_counts(arrays[1], [4], 1, 8.0, 2**22) == [0]


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")  # the parties' own logs
def test_a_flower_party_refuses_a_rogue_setup_and_draws_nothing(shard_files):
    grid = deployment_grid(shard_files[:2], floor={"max-epsilon": 2.0, "max-delta": 1e-5, "max-rounds": 2},
                           record=True)
    parties = flower_app.describe_parties(grid, grid.get_node_ids())
    network = flower_app.FlowerGridNetwork(grid, parties, clipping_range=4.0)
    honest = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=70, n_parties=2, n_features=4,
                            n_rounds=2, loss=LOGISTIC, data_norm=1.0)
    for weaker, message in [
        (dataclasses.replace(honest, round_noise_scale=honest.round_noise_scale / 4), "too little noise"),
        (dataclasses.replace(honest, n_rounds=3), "at most max_rounds=2"),
        (calibrate_psgd(epsilon=3.0, delta=1e-5, alpha=0.05, n_samples=70, n_parties=2, n_features=4, n_rounds=2,
                        loss=LOGISTIC, data_norm=1.0), r"targets \(3, 1e-05\)-DP"),
    ]:
        with pytest.raises(RuntimeError, match=f"set-up query failed .*refuses the coordinator's set-up: .*{message}"):
            network.setup(weaker)
        for context in grid._contexts.values():  # nothing drawn, nothing kept, nothing charged
            assert not context.state.config_records and not context.state.array_records
            assert not Path(context.node_config["ledger-path"]).exists()
            assert not flower_app.run_state_path(context, network.run_id).exists()
    arrays, _, _ = contents_seen(grid.received)
    assert arrays == []  # and nothing but public answers and refusals reached the coordinator
    network.setup(honest)
    for t in range(2):
        network.gradient_sum(np.zeros(4), 1 / 70, t)
    with pytest.raises(DropoutError, match="answered the 2 gradient requests it agreed to"):
        network.gradient_sum(np.zeros(4), 1 / 70, 2)  # a third round is refused by every party


def test_a_party_without_its_own_floor_takes_no_part(shard_files):
    settings = flower_app.CoordinatorSettings(n_parties=2, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=2,
                                              wait_seconds=1.0)
    with pytest.raises(RuntimeError, match=r"no \['max-epsilon', 'max-delta', 'max-rounds'\] in its node config"):
        flower_app.coordinate(deployment_grid(shard_files[:2], floor={}), settings)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")  # party 1's own log, on D'
@pytest.mark.parametrize("protocol", ["psgd", "newton"])
def test_neighbour_swap_changes_no_model_file_field_but_the_coefficients(tmp_path, protocol):
    X, y = make_data(n=70, seed=4)
    X_prime = X.copy()
    X_prime[40] = np.full(4, 2.0)  # party 1's row: inside the unit ball in D, norm 4 (> R = 1) in D'
    settings = flower_app.CoordinatorSettings(n_parties=2, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=3,
                                              wait_seconds=1.0, protocol=protocol)
    documents = []
    for name, rows in (("D", X), ("D_prime", X_prime)):
        paths = [write_shard(tmp_path / f"{name}-{k}.csv", Xk, yk) for k, (Xk, yk) in enumerate(split(rows, y, (30, 40)))]
        result, parties, _, record = flower_app.coordinate(deployment_grid(paths), settings)
        documents.append(json.loads(json.dumps(flower_app.model_document(result, parties, settings, record))))
    coefs = [np.array(document.pop("coef")) for document in documents]
    assert documents[0] == documents[1]  # params, features, parties, the whole privacy record, ...
    assert np.abs(coefs[0] - coefs[1]).max() > 1e-3  # ... while the data did change the released model


def test_coordinator_settings_round_trip_the_run_config():
    settings = flower_app.CoordinatorSettings(n_parties=2, epsilon=0.5, delta=1e-6, alpha=0.1, n_rounds=3,
                                              coordinator_dp=True, coordinator_accountant="rdp")
    assert flower_app.CoordinatorSettings.from_run_config(settings.to_run_config()) == settings


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_deployment_refuses_a_second_setup_and_mismatched_parties(shard_files, tmp_path):
    grid = deployment_grid(shard_files[:2])
    settings = flower_app.CoordinatorSettings(n_parties=2, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=2,
                                              wait_seconds=1.0)
    flower_app.coordinate(grid, settings)
    with pytest.raises(ValueError, match="3 SuperNodes are connected .* --shards is 2"):
        flower_app.coordinate(deployment_grid(shard_files), flower_app.CoordinatorSettings(
            n_parties=2, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=2, wait_seconds=1.0))
    with pytest.raises(TimeoutError, match="2 of 3 parties connected"):
        flower_app.wait_for_parties(grid, 3, wait_seconds=0.1, poll_seconds=0.05)
    X, y = make_data(n=20, d=3)
    other = write_shard(tmp_path / "other.csv", X, y)
    with pytest.raises(ValueError, match="different feature columns"):
        flower_app.coordinate(deployment_grid([shard_files[0], other]), settings)


def _ledger_runs(grid):
    return {name: dict(PartyLedger(context.node_config["ledger-path"]).charges())
            for name, context in ((c.node_config["party-name"], c) for c in grid._contexts.values())}


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_a_second_setup_of_the_same_run_draws_no_new_noise_and_a_new_run_is_charged(shard_files, tmp_path):
    """Issue 15 faults: each party's noise and ledger charge are keyed by the coordinator's run id."""
    floor = {"max-epsilon": 2.0, "max-delta": 1e-5, "max-rounds": 2, "budget-epsilon": 5.0, "budget-delta": 1e-4}
    grid = deployment_grid(shard_files[:2], floor=floor)
    contexts = list(grid._contexts.values())
    parties = flower_app.describe_parties(grid, grid.get_node_ids())
    calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=70, n_parties=2, n_features=4,
                                 n_rounds=2, loss=LOGISTIC, data_norm=1.0)  # costs each party (2, 1e-5)
    first = flower_app.FlowerGridNetwork(grid, parties, clipping_range=4.0)
    first.setup(calibration)
    etas = [saved_run_state(context, first.run_id)["eta"] for context in contexts]
    first.gradient_sum(np.zeros(4), 1 / 70, 0)
    charged = _ledger_runs(grid)
    assert all(list(runs) == [first.run_id] for runs in charged.values())
    # one of two rounds answered: one round's cost booked, the whole run's checked at set-up
    assert all((run.rounds, run.epsilon, run.booked_epsilon) == (1, pytest.approx(1.0), pytest.approx(2.0))
               for runs in charged.values() for run in runs.values())
    # a restarted coordinator re-sends the same run's set-up (a fresh Flower context, as after a SuperNode
    # restart): no new charge, no new eta^k, and the run's rounds continue from the saved count
    restarted = deployment_grid(shard_files[:2], floor=floor,
                                ledger_dir=Path(contexts[0].node_config["ledger-path"]).parent)
    again = flower_app.FlowerGridNetwork(restarted, parties, clipping_range=4.0, run_id=first.run_id)
    again.setup(calibration)
    assert _ledger_runs(restarted) == charged
    assert [saved_run_state(context, first.run_id)["eta"] for context in contexts] == etas
    again.gradient_sum(np.zeros(4), 1 / 70, 1)
    with pytest.raises(DropoutError, match="answered the 2 gradient requests it agreed to"):
        again.gradient_sum(np.zeros(4), 1 / 70, 2)  # 2 rounds per run id, over both set-ups
    with pytest.raises(RuntimeError, match="with another calibration; a new training needs a new run id"):
        again.setup(calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.1, n_samples=70, n_parties=2, n_features=4,
                                   n_rounds=2, loss=LOGISTIC, data_norm=1.0))  # same cost, other calibration
    # a new run id is a new training: charged, with its own eta^k; then the budget (5, 1e-4) is spent
    second = flower_app.FlowerGridNetwork(grid, parties, clipping_range=4.0)
    second.setup(calibration)
    assert all(set(runs) == {first.run_id, second.run_id} for runs in _ledger_runs(grid).values())
    assert saved_run_state(contexts[0], second.run_id)["eta"] != etas[0]
    for t in range(2):
        second.gradient_sum(np.zeros(4), 1 / 70, t)
    third = flower_app.FlowerGridNetwork(grid, parties, clipping_range=4.0)
    with pytest.raises(RuntimeError, match=rf"run {third.run_id} .*would bring this party's total to \(6, "
                                           r".*over its budget \(5, 0.0001\).*Nothing was drawn"):
        third.setup(calibration)
    assert not any(flower_app.run_state_path(c, third.run_id).exists() for c in contexts)
    # a charged run whose saved noise is gone is refused, never redrawn
    flower_app.run_state_path(contexts[0], second.run_id).unlink()
    with pytest.raises(RuntimeError, match="saved noise state is gone; it refuses rather than draw new noise"):
        flower_app.FlowerGridNetwork(grid, parties, clipping_range=4.0, run_id=second.run_id).setup(calibration)
    assert not flower_app.run_state_path(contexts[0], second.run_id).exists()


def test_a_party_without_a_ledger_or_run_id_takes_no_part(shard_files):
    settings = flower_app.CoordinatorSettings(n_parties=2, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=2,
                                              wait_seconds=1.0)
    grid = deployment_grid(shard_files[:2])
    for context in grid._contexts.values():
        del context.node_config["ledger-path"]
    with pytest.raises(RuntimeError, match=r"no 'ledger-path' in its node config.*--ledger PATH"):
        flower_app.coordinate(grid, settings)
    with pytest.raises(ValueError, match="is not 32 lowercase hex digits"):
        flower_app.coordinate(deployment_grid(shard_files[:2]), dataclasses.replace(settings, run_id="run-1"))
    context = party_context(shard_files[0])
    calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=70, n_parties=2, n_features=4,
                                 n_rounds=2, loss=LOGISTIC, data_norm=1.0)
    with pytest.raises(ValueError, match="run id None is not 32 lowercase hex digits"):
        flower_app.party_setup(context, {"action": "setup", **flower_app.calibration_to_config(calibration, 0.5)})


def test_load_shard_checks_labels_and_columns(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b,label\n0.1,0.2,2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="-1/\\+1 or 0/1"):
        flower_app.load_shard(path)
    with pytest.raises(ValueError, match="label column 'y'"):
        flower_app.load_shard(path, target="y")
    path.write_text("a,b,label\n0.1,0.2,1\n0.3,inf,1\n0.1,0.2,?\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.csv: column 'b', data row 2 \(1-based, header not counted\): "
                                         r"'inf' is not a finite number; .*finite number; fix the cell"):
        flower_app.load_shard(path)
    path.write_text("a,b,label\n0.1,0.2,1\n0.3,0.4,?\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.csv: column 'label', data row 2 .*missing; a multiparty shard holds "
                                         "a label"):
        flower_app.load_shard(path)


# -- the same apps under Flower's simulation engine (Ray) ------------------------------


def test_simulation_without_ray_names_the_extra(shard_files, tmp_path, monkeypatch):
    from dperm.multiparty.flower.simulation import simulate_deployment

    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=2)
    with pytest.raises(ImportError, match=r"needs Ray.*pip install 'flwr\[simulation\]>=1.41,<1.43'"):
        simulate_deployment(shard_files, settings, tmp_path / "model.json", max_epsilon=2.0, max_delta=1e-5,
                            max_rounds=2)
    assert not (tmp_path / "model.json").exists()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Ray's and Flower's own
@pytest.mark.filterwarnings("ignore::FutureWarning")  # Ray's note on accelerator environment variables
@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_deployment_apps_run_under_flowers_ray_simulation(shard_files, tmp_path, capsys):
    """`flwr.simulation.run_simulation` with the Ray backend, 3 parties, 3 rounds (~10 s: Ray starts)."""
    ray = pytest.importorskip("ray")
    from dperm.multiparty.flower.simulation import simulate_deployment

    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=3,
                                              wait_seconds=60.0)
    out = tmp_path / "model.json"
    status = simulate_deployment(shard_files, settings, out, names=["a", "b", "c"], max_epsilon=3.0,
                                 max_delta=1e-5, max_rounds=3,
                                 backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    assert status["ok"] and len(status["round_seconds"]) == 3
    document = json.loads(out.read_text())
    privacy = document["privacy"]
    assert document["engine"] == privacy["secure_sum"]["engine"] == "flower_secaggplus_simulation"
    assert sorted(document["parties"]) == ["a", "b", "c"] and document["features"] == ["x0", "x1", "x2", "x3"]
    assert sorted(privacy["n_samples_by_party"]) == [30, 40, 50] and privacy["n_rounds"] == 3
    assert privacy["secure_sum"]["n_sums"] == 3 and privacy["secure_sum"]["coordinates_clipped"] == 0
    assert "rows_clipped" not in privacy  # each party scaled its own long row, inside the Ray actors
    assert np.all(np.isfinite(document["coef"]))
    assert not ray.is_initialized()  # Flower shut Ray down
    assert dperm_main(["show", "--model", str(out)]) == 0  # the same model file as `dperm coordinate`'s
    assert "Released model (w_T after 3 rounds): 3-DP" in capsys.readouterr().out
    # Flower's process-wide task identity was restored: the in-process engine still works afterwards
    vectors = plain_vectors(n_parties=3, dimension=10, seed=9)
    total, report = FlowerSecureSum().sum(vectors, 10)
    assert np.abs(total - sum(vectors.values())).max() < report.error_bound


# -- Flower as an optional extra -------------------------------------------------------


@pytest.mark.slow  # a fresh interpreter importing dperm: ~20 s on a loaded 2-core machine
def test_dperm_multiparty_imports_without_flower_and_the_engine_says_how_to_install(monkeypatch):
    code = ("import sys; import dperm.multiparty, dperm.cli; dperm.cli.build_parser(); "
            "print('flwr' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    monkeypatch.setitem(sys.modules, "flwr", None)
    with pytest.raises(ImportError, match=r"pip install 'dperm\[multiparty\]'"):
        FlowerSecureSum()


def test_flower_environment_keeps_the_users_settings():
    user = configure_flower_environment({"FLWR_HOME": "/somewhere", "FLWR_TELEMETRY_ENABLED": "1"})
    assert user["FLWR_HOME"] == "/somewhere" and user["FLWR_TELEMETRY_ENABLED"] == "1"
    assert user["FLWR_DISABLE_UPDATE_CHECK"] == "1"
    fresh = configure_flower_environment({})
    assert fresh["FLWR_TELEMETRY_ENABLED"] == "0" and os.path.isdir(fresh["FLWR_HOME"])


#: ``dperm party serve``'s floor options as the tests pass them.
FLOOR_ARGS = ["--max-epsilon", "2", "--max-delta", "1e-5", "--max-rounds", "2"]


def test_cli_refuses_bad_options_before_starting_anything(shard_files, tmp_path, capsys):
    assert dperm_main(["coordinate", "--shards", "1", "--epsilon", "1", "--insecure",
                       "--out", str(tmp_path / "m.json")]) == 2
    assert "--shards must be at least 2" in capsys.readouterr().err
    assert dperm_main(["coordinate", "--shards", "2", "--epsilon", "1", "--out", str(tmp_path / "m.json")]) == 2
    assert "--ssl-ca-certfile" in capsys.readouterr().err
    assert dperm_main(["coordinate", "--shards", "2", "--epsilon", "1", "--insecure",
                       "--out", str(tmp_path / "m.json")]) == 2
    assert "--insecure is not supported" in capsys.readouterr().err
    assert dperm_main(["coordinate", "--protocol", "psgd", "--shards", "2", "--epsilon", "1", "--insecure",
                       "--coordinator-dp", "--round-epsilon", "0.5", "--out", str(tmp_path / "m.json")]) == 2
    assert "cannot be combined with --round-epsilon" in capsys.readouterr().err
    assert dperm_main(["coordinate", "--shards", "2", "--epsilon", "1", "--insecure", "--coordinator-dp",
                       "--out", str(tmp_path / "m.json")]) == 2
    assert "options of --protocol psgd" in capsys.readouterr().err
    assert dperm_main(["coordinate", "--shards", "2", "--epsilon", "1", "--insecure", "--gradient-share", "1",
                       "--out", str(tmp_path / "m.json")]) == 2
    assert "--gradient-share must be in the open interval" in capsys.readouterr().err
    key = ["--auth-key", str(tmp_path / "none.key"), "--roster", str(tmp_path / "none.pub")]
    assert dperm_main(["party", "serve", "--data", str(shard_files[0]), "--superlink", "127.0.0.1:1",
                       *key, *FLOOR_ARGS]) == 2
    assert "--root-certificates" in capsys.readouterr().err
    assert dperm_main(["party", "serve", "--data", str(shard_files[0]), "--superlink", "127.0.0.1:1",
                       "--root-certificates", str(shard_files[0]), *key, *FLOOR_ARGS]) == 2
    error = capsys.readouterr().err
    assert "--auth-key" in error and "none.key" in error and "is not a file" in error
    assert dperm_main(["party", "serve", "--data", str(tmp_path / "missing.csv"), "--superlink",
                       "127.0.0.1:1", *key, *FLOOR_ARGS]) == 2
    assert "missing.csv" in capsys.readouterr().err
    # every party states its own floor: required, and checked before anything starts
    with pytest.raises(SystemExit):
        dperm_main(["party", "serve", "--data", str(shard_files[0]), "--superlink", "127.0.0.1:1", *key])
    assert "--max-epsilon" in capsys.readouterr().err
    assert dperm_main(["party", "serve", "--data", str(shard_files[0]), "--superlink", "127.0.0.1:1",
                       *key, "--max-epsilon", "-1", "--max-delta", "1e-5", "--max-rounds", "2"]) == 2
    assert "--max-epsilon must be a finite number > 0" in capsys.readouterr().err
    # the party's ledger and budget are checked before anything starts, too
    corrupt = tmp_path / "corrupt-ledger.json"
    corrupt.write_text("{", encoding="utf-8")
    assert dperm_main(["party", "serve", "--data", str(shard_files[0]), "--superlink", "127.0.0.1:1",
                       *key, *FLOOR_ARGS, "--ledger", str(corrupt)]) == 2
    assert f"the party ledger {corrupt} is not a valid dperm ledger" in capsys.readouterr().err
    assert dperm_main(["party", "serve", "--data", str(shard_files[0]), "--superlink", "127.0.0.1:1",
                       *key, *FLOOR_ARGS, "--budget-epsilon", "0"]) == 2
    assert "--budget-epsilon" in capsys.readouterr().err
    assert dperm_main(["coordinate", "--shards", "2", "--epsilon", "1", "--run-id", "1234",
                       "--out", str(tmp_path / "m.json")]) == 2
    assert "--run-id: run id '1234' is not 32 lowercase hex digits" in capsys.readouterr().err


# -- real processes on 127.0.0.1 -------------------------------------------------------


def test_cli_needs_all_three_tls_files(tmp_path, capsys):
    # Flower's SuperLink refuses TLS without the CA file; dperm says so before starting anything
    paths = write_loopback_certificates(tmp_path)
    assert dperm_main(["coordinate", "--shards", "2", "--epsilon", "1", "--ssl-certfile", str(paths["server.pem"]),
                       "--ssl-keyfile", str(paths["server.key"]), "--out", str(tmp_path / "m.json")]) == 2
    assert "--ssl-ca-certfile" in capsys.readouterr().err
    assert dperm_main(["coordinate", "--shards", "2", "--epsilon", "1", "--ssl-certfile", str(paths["server.pem"]),
                       "--ssl-keyfile", str(tmp_path / "nothing.key"), "--ssl-ca-certfile", str(paths["ca.pem"]),
                       "--out", str(tmp_path / "m.json")]) == 2
    error = capsys.readouterr().err
    assert "--ssl-keyfile" in error and "nothing.key" in error and "is not a file" in error


@pytest.mark.slow
@pytest.mark.parametrize("protocol, headline", [
    ("psgd", "Released model (w_T after 2 rounds): 2-DP"),
    ("newton", "Released model (w_T after 2 Newton rounds): (1, 1e-05)-DP"),
])
def test_real_processes_on_loopback(shard_files, tmp_path, protocol, headline):
    """SuperLink over TLS + 2 `dperm party serve` SuperNodes + `dperm coordinate`, 2 rounds (~60 s)."""
    tls = write_loopback_certificates(tmp_path)
    superlink_port, control_port, *node_ports = free_loopback_ports(4)
    keys = [write_party_key(tmp_path / f"party-{k}.key") for k in range(2)]
    roster = write_party_roster(tmp_path / "roster.pub", keys)
    env = {**os.environ, "FLWR_HOME": str(tmp_path / "flwr-home"), "FLWR_TELEMETRY_ENABLED": "0",
           "FLWR_DISABLE_UPDATE_CHECK": "1"}
    dperm = [sys.executable, "-m", "dperm.cli"]
    out = tmp_path / "model.json"
    processes = []
    try:
        coordinator = subprocess.Popen(
            dperm + ["coordinate", "--protocol", protocol, "--shards", "2", "--epsilon", "1", "--alpha", "0.05",
                     "--rounds", "2", "--port", str(superlink_port), "--control-port", str(control_port),
                     "--party-keys", *map(str, keys), "--ssl-certfile", str(tls["server.pem"]),
                     "--ssl-keyfile", str(tls["server.key"]), "--ssl-ca-certfile", str(tls["ca.pem"]),
                     "--wait", "60", "--stage-timeout", "60",
                     "--workdir", str(tmp_path / "coordinator"), "--out", str(out)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        processes.append(coordinator)
        for k, port in enumerate(node_ports):
            processes.append(subprocess.Popen(
                dperm + ["party", "serve", "--data", str(shard_files[k]), "--name", f"party-{k}",
                         "--superlink", f"127.0.0.1:{superlink_port}", "--port", str(port),
                         "--auth-key", str(tmp_path / f"party-{k}.key"), "--roster", str(roster),
                         "--root-certificates", str(tls["ca.pem"]), *FLOOR_ARGS],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        output, _ = coordinator.communicate(timeout=170)
    finally:
        for process in reversed(processes):
            stop_process_group(process, grace_seconds=15)
    assert coordinator.returncode == 0, output
    document = json.loads(out.read_text())
    privacy = document["privacy"]
    assert sorted(privacy["n_samples_by_party"]) == [30, 40] and "rows_clipped" not in privacy
    assert privacy["secure_sum"]["engine"] == "flower_secaggplus_networked"
    assert privacy["secure_sum"]["n_sums"] == 2 and privacy["n_rounds"] == 2
    assert sorted(document["parties"]) == ["party-0", "party-1"] and np.all(np.isfinite(document["coef"]))
    assert headline in output


# -- what a Flower party computes, not only its shape (issue 15: tests that can fail) ----------------


def _discrete_laplace_fit(steps, scale):
    """Chi-square p-value of integer draws against the discrete Laplace of ``scale`` (in steps).

    Bins: ``Z = 0``, then ``|Z|`` in ten ranges of equal continuous-Laplace mass, split by sign;
    ``P(|Z| >= m) = 2 exp(-m/t) / (1 + exp(-1/t))`` for ``m >= 1`` gives each bin's exact mass.
    """
    from scipy import stats

    t = float(scale)
    def tail(m):  # P(Z >= m) for m >= 1
        return math.exp(-m / t) / (1.0 + math.exp(-1.0 / t))
    edges = sorted({max(1, int(round(-t * math.log(q)))) for q in np.linspace(1.0, 0.0, 11)[:-1]})
    masses, observed = [1.0 - 2.0 * tail(1)], [np.count_nonzero(steps == 0)]
    for sign in (1, -1):
        for low, high in zip(edges, edges[1:] + [None]):
            mass = tail(low) - (tail(high) if high is not None else 0.0)
            inside = sign * steps >= low
            if high is not None:
                inside &= sign * steps < high
            masses.append(mass)
            observed.append(np.count_nonzero(inside))
    expected = np.array(masses) * steps.size
    return stats.chisquare(observed, expected * sum(observed) / expected.sum()).pvalue


def _flower_party_noise_steps(tmp_path, monkeypatch, n_rounds=400):
    """Run ``n_rounds`` gradient requests through ``party_reply`` and return the noise in grid steps.

    The expected reply is computed here from the shard itself (rows scaled onto R, 004 eq. 8), so a
    party that sends no noise, the wrong gradient or a flipped sign gives steps far from the pmf.
    A deployed party draws from OS entropy; here each party object gets the next of a fixed
    sequence of seeds, so the test is deterministic.
    """
    import itertools

    from dperm.multiparty import protocol

    seeds, real = itertools.count(1000), protocol.check_random_state
    monkeypatch.setattr(protocol, "check_random_state",
                        lambda state: real(next(seeds)) if state is None else real(state))
    X, y = make_data(n=40, seed=11)
    path = write_shard(tmp_path / "shard.csv", X, y)
    floor = {"max-epsilon": 1000.0, "max-delta": 1e-5, "max-rounds": n_rounds}
    calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=100, n_parties=2,
                                 n_features=4, n_rounds=n_rounds, loss=LOGISTIC, data_norm=1.0)
    context = party_context(path, floor)
    run_id = new_run_id()
    assert flower_app.party_setup(context, {"action": "setup", "run-id": run_id,
                                            **flower_app.calibration_to_config(calibration, 0.5)})
    eta = np.array(saved_run_state(context, run_id)["eta"])
    rows, labels, _ = flower_app.load_shard(path)
    norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
    rows = rows / norms
    signs = labels  # load_shard reads 0/1 as -1/+1
    w = np.array([0.3, -0.2, 0.1, 0.4])
    gradient = rows.T @ LOGISTIC.score_derivative(signs, rows @ w)
    grid = round_noise_calibration(1.0, LOGISTIC.lipschitz, 1.0, 4)
    scale = 1 / 100
    round_config = {"scale": scale, "clipping-range": 1e6, "quantization-range": 2**22, "run-id": run_id}
    replies = np.array([flower_app.party_reply(context, [w], round_config)[0] for _ in range(n_rounds)])
    steps = (replies / scale - eta) / grid.step
    centres = np.round(gradient / grid.step)
    return np.round(steps - centres).astype(np.int64), grid.scale_in_steps, steps


def test_a_flower_party_sends_its_gradient_with_the_calibrated_noise(tmp_path, monkeypatch):
    noise, scale, raw = _flower_party_noise_steps(tmp_path, monkeypatch)
    np.testing.assert_allclose(raw, np.round(raw), atol=1e-3)  # on the grid (up to the 1/N scaling)
    assert _discrete_laplace_fit(noise.ravel(), scale) > 1e-3


@pytest.mark.parametrize("mutation", ["no noise", "flipped gradient", "half noise"])
def test_the_party_check_catches_a_broken_party(tmp_path, monkeypatch, mutation):
    """Mutation test: a party edited to cheat fails the check above (so that check can fail)."""
    from dperm.multiparty.protocol import Party

    honest = Party._release_round

    def broken(self, gradient):
        if mutation == "no noise":
            return gradient
        if mutation == "flipped gradient":
            return honest(self, -gradient)
        released = honest(self, gradient)
        return gradient + 0.5 * (released - gradient)

    monkeypatch.setattr(Party, "_release_round", broken)
    noise, scale, _ = _flower_party_noise_steps(tmp_path, monkeypatch)
    assert _discrete_laplace_fit(noise.ravel(), scale) < 1e-6


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_deployment_apps_run_the_newton_protocol_in_process(shard_files, tmp_path):
    """`dperm coordinate --protocol newton`: the same apps, each round one SecAgg+ sum of packed noisy sums."""
    from dperm.multiparty.newton_privacy import calibrate_newton
    from dperm.privacy.newton import view_guarantee

    grid = deployment_grid(shard_files, record=True)
    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=4,
                                              wait_seconds=1.0, protocol="newton")
    result, parties, network, record = flower_app.coordinate(grid, settings)
    expected = calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=4, n_samples_by_party=(30, 40, 50),
                                n_features=4, loss=get_loss("logistic"), data_norm=1.0)
    assert result.calibration == expected
    assert (record.epsilon, record.delta) == view_guarantee(expected)
    assert record.secure_sum.n_sums == 4 and len(network.round_seconds) == 4
    arrays, floats, _ = contents_seen(grid.received)
    seen = np.concatenate([a.ravel().astype(float) for a in arrays] + [np.array(floats)])
    X, _, _ = flower_app.load_shard(shard_files[0])
    assert not np.isin(X[:10].ravel(), seen).any()
    document = flower_app.model_document(result, parties, settings, record)
    assert document["estimator"] == "NewtonClassifier" and document["privacy"]["mechanism"] == "multiparty_newton"
    # a fifth request is refused by every party: the agreed rounds are spent
    with pytest.raises(Exception, match="agreed rounds"):
        network.round_sum(result.coef, 4)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_a_flower_party_refuses_a_newton_set_up_above_its_floor(shard_files):
    grid = deployment_grid(shard_files, floor={**FLOOR, "max-epsilon": 0.5})
    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=4,
                                              wait_seconds=1.0, protocol="newton")
    with pytest.raises(RuntimeError, match="refuses the coordinator's Newton set-up"):
        flower_app.coordinate(grid, settings)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_a_newton_model_file_reads_back_for_predict(shard_files, tmp_path):
    from dperm.multiparty.model_file import describe_document, model_from_document

    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=3,
                                              wait_seconds=1.0, protocol="newton")
    result, parties, _, record = flower_app.coordinate(deployment_grid(shard_files), settings)
    document = json.loads(json.dumps(flower_app.model_document(result, parties, settings, record)))
    model, preprocessing = model_from_document(document)
    assert type(model).__name__ == "NewtonClassifier" and model.privacy_ == record
    np.testing.assert_array_equal(model.coef_[0], result.coef)
    assert describe_document(document, preprocessing).startswith("NewtonClassifier (multiparty, 3 parties")
    document["privacy"]["mechanism"] = "psgd"
    with pytest.raises(ValueError, match="needs 'multiparty_newton'"):
        model_from_document(document)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_newton_rounds_are_charged_as_answered_per_run_id_and_refused_over_the_party_budget(shard_files):
    """The Newton set-up opens each party's run (nothing charged); each answered round books its prefix cost."""
    from dperm.multiparty.flower.newton import FlowerNewtonNetwork
    from dperm.multiparty.newton_privacy import calibrate_newton
    from dperm.privacy.newton import view_guarantee
    from dperm.privacy.round_charges import newton_prefix_guarantee

    floor = {"max-epsilon": 2.0, "max-delta": 1e-5, "max-rounds": 2, "budget-epsilon": 2.5, "budget-delta": 1e-4}
    grid = deployment_grid(shard_files[:2], floor=floor)
    parties = flower_app.describe_parties(grid, grid.get_node_ids())
    calibration = calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=2, n_samples_by_party=(30, 40),
                                   n_features=4, loss=LOGISTIC, data_norm=1.0)
    first = FlowerNewtonNetwork(grid, parties)
    first.setup(calibration)
    assert all(run.rounds == 0 and run.epsilon == 0.0 for runs in _ledger_runs(grid).values()
               for run in runs.values())
    first.round_sum(np.zeros(4), 0)
    charged = _ledger_runs(grid)
    assert all(list(runs) == [first.run_id] for runs in charged.values())
    assert all((run.rounds, (run.epsilon, run.delta)) == (1, newton_prefix_guarantee(calibration, 1))
               for runs in charged.values() for run in runs.values())
    again = FlowerNewtonNetwork(grid, parties, run_id=first.run_id)  # a restarted coordinator, same run
    again.setup(calibration)
    assert _ledger_runs(grid) == charged
    with pytest.raises(Exception, match="has answered 1 round.* continue at round 2"):
        again.round_sum(np.ones(4), 0)  # round 1 again at another w: a new release, refused
    again.round_sum(np.zeros(4), 1)
    assert all((run.rounds, (run.epsilon, run.delta)) == (2, view_guarantee(calibration))
               for runs in _ledger_runs(grid).values() for run in runs.values())  # T rounds: the whole run
    with pytest.raises(Exception, match="agreed rounds"):
        again.round_sum(np.zeros(4), 2)  # two answers per run id, over both set-ups
    second = FlowerNewtonNetwork(grid, parties)  # a new training: 1 + 1 <= 2.5 fits at set-up
    second.setup(calibration)
    for round_index in range(2):
        second.round_sum(np.zeros(4), round_index)
    third = FlowerNewtonNetwork(grid, parties)  # 1 + 1 + 1 > 2.5: refused before anything is sent
    with pytest.raises(RuntimeError, match="over its budget"):
        third.setup(calibration)
