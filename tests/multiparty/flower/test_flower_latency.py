"""dperm's shorter waits in its Flower processes (issue 15, "Latency"); timings in benchmarks/flower_latency.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

flwr = pytest.importorskip("flwr")

from flwr.app import Context, RecordDict  # noqa: E402
from flwr.supercore.inflatable import inflatable_utils  # noqa: E402

from dperm.multiparty.flower import _party  # noqa: E402
from dperm.multiparty.flower import app as flower_app  # noqa: E402
from dperm.multiparty.flower import supernode as _flower_supernode  # noqa: E402
from dperm.multiparty.flower._adapter import object_pull_backoff, server_identity  # noqa: E402
from dperm.multiparty.flower.deploy import superlink_environment  # noqa: E402
from dperm.multiparty.flower.engine import (  # noqa: E402
    OBJECT_PULL_INITIAL_BACKOFF,
    POLL_SECONDS_ENV,
    flower_poll_seconds,
    object_pull_waits,
)
from dperm.multiparty.flower.grid import InProcessGrid, PollingGrid  # noqa: E402
from tests._multiparty_data import make_data, split, write_shard  # noqa: E402

FLOOR = {"max-epsilon": 10.0, "max-delta": 1e-5, "max-rounds": 10}
PULL_FUNCTIONS = (inflatable_utils.pull_objects, inflatable_utils.pull_and_inflate_object_from_tree)


@pytest.fixture
def shard_files(tmp_path):
    X, y = make_data(n=90)
    return [write_shard(tmp_path / f"shard{k}.csv", Xk, yk) for k, (Xk, yk) in enumerate(split(X, y, (30, 30, 30)))]


def party_grid(paths, **kwargs):
    return InProcessGrid({101 + k: flower_app.client_app for k in range(len(paths))},
                         {101 + k: {"data-path": str(path), "party-name": f"party-{k}", **FLOOR,
                                    "ledger-path": str(Path(path).parent / f"ledger-{k}.json")}
                          for k, path in enumerate(paths)}, **kwargs)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_the_serverapp_times_every_exchange_and_computes_the_same_model(shard_files, tmp_path):
    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=3,
                                              wait_seconds=1.0)
    run_config = {**settings.to_run_config(), "out": str(tmp_path / "model.json"),
                  "status": str(tmp_path / "status.json")}
    context = Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config=run_config)
    before = time.time()
    flower_app.coordinator_main(party_grid(shard_files), context)
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["ok"] and before <= status["serverapp_started_at"] <= time.time()
    stages = [item["stage"] for item in status["exchanges"]]
    secagg = ["secagg+:setup", "secagg+:share_keys", "secagg+:collect_masked_vectors", "secagg+:unmask"]
    assert stages == ["query:describe", "query:setup"] + secagg * 3
    assert all(item["seconds"] >= 0 for item in status["exchanges"])
    model = json.loads((tmp_path / "model.json").read_text())
    assert len(model["coef"][0]) == 4 and np.all(np.isfinite(model["coef"][0]))


class _SilentGrid(InProcessGrid):
    """Accepts messages and never answers (pulls counted)."""

    pulls = 0

    def push_messages(self, messages):
        return [f"m{index}" for index, _ in enumerate(messages)]

    def pull_messages(self, message_ids):
        self.pulls += 1
        return []


def test_polling_grid_stops_at_the_timeout_and_polls_at_its_interval(shard_files):
    silent = _SilentGrid({101: flower_app.client_app})
    grid = PollingGrid(silent, poll_seconds=0.02)
    with server_identity(1):
        message = grid.create_message(RecordDict(), "query", 101, "setup")
        started = time.monotonic()
        assert grid.send_and_receive([message], timeout=0.3) == []
    elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 1.0 and silent.pulls >= 5  # Flower's grid would pull once in 3 s
    assert [label for label, _, _ in grid.timings] == ["query"]
    with pytest.raises(ValueError, match="poll_seconds"):
        PollingGrid(silent, poll_seconds=0)


def test_polling_grid_returns_what_the_grid_returns(shard_files):
    inner = party_grid(shard_files[:1])
    grid = PollingGrid(inner)
    assert grid.run is inner.run and list(grid.get_node_ids()) == [101]
    from flwr.app import ConfigRecord, Message

    with server_identity(1):
        message = Message(RecordDict({"config": ConfigRecord({"action": "describe"})}), dst_node_id=101,
                          message_type="query", group_id="setup")
        (reply,) = grid.send_and_receive([message])
    assert dict(reply.content.config_records["config"])["n-samples"] == 30
    assert grid.timings[0][0] == "query:describe"


def test_poll_seconds_come_from_the_environment_or_the_default():
    assert flower_poll_seconds(0.1, environ={}) == 0.1
    assert flower_poll_seconds(0.1, environ={POLL_SECONDS_ENV: "3"}) == 3.0
    for bad in ("0", "-1", "nan", "fast", "61"):
        with pytest.raises(ValueError, match=POLL_SECONDS_ENV):
            flower_poll_seconds(0.1, environ={POLL_SECONDS_ENV: bad})


def test_object_pull_waits_are_dperms_unless_the_environment_asks_for_flowers(monkeypatch):
    monkeypatch.delenv(POLL_SECONDS_ENV, raising=False)
    assert object_pull_waits() == (OBJECT_PULL_INITIAL_BACKOFF, 1.0)
    monkeypatch.setenv(POLL_SECONDS_ENV, "3")
    assert object_pull_waits() == (1.0, 10.0)  # Flower 1.41's PULL_INITIAL_BACKOFF, PULL_BACKOFF_CAP


def test_object_pull_retries_a_missing_object_after_the_short_backoff(monkeypatch):
    monkeypatch.delenv(POLL_SECONDS_ENV, raising=False)
    calls = []

    def pull(object_id):
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise inflatable_utils.ObjectUnavailableError(object_id)
        return b"content"

    started = time.monotonic()
    with object_pull_backoff(*object_pull_waits()):
        assert inflatable_utils.pull_objects(["a"], pull) == {"a": b"content"}
    assert len(calls) == 3 and time.monotonic() - started < 0.5  # Flower's default: 1 s + 2 s


def test_the_supernode_loop_sleeps_at_most_the_cap_while_the_supernode_runs():
    import flwr.supernode.start_client_internal as loop

    flowers_time = loop.time
    with _flower_supernode.capped_supernode_waits(0.01):
        started = time.monotonic()
        loop.time.sleep(3)  # Flower's wait when the SuperLink has no message
        assert time.monotonic() - started < 0.5
        assert loop.time.monotonic() >= started and loop.time.time() > 0  # the rest of `time` is unchanged
        assert PULL_FUNCTIONS[0].__kwdefaults__["initial_backoff"] == OBJECT_PULL_INITIAL_BACKOFF
    assert loop.time is flowers_time and PULL_FUNCTIONS[0].__kwdefaults__["initial_backoff"] == 1.0
    with pytest.raises(ValueError, match="poll-seconds"):
        with _flower_supernode.capped_supernode_waits(0):
            pass


def test_the_superlink_gets_a_short_superexec_poll_unless_set(monkeypatch):
    monkeypatch.delenv("FLWR_SUPEREXEC_TASK_POLL_INTERVAL", raising=False)
    assert superlink_environment()["FLWR_SUPEREXEC_TASK_POLL_INTERVAL"] == "0.1"
    monkeypatch.setenv("FLWR_SUPEREXEC_TASK_POLL_INTERVAL", "2")
    assert superlink_environment()["FLWR_SUPEREXEC_TASK_POLL_INTERVAL"] == "2"


def test_the_party_reads_its_shard_once_and_again_when_it_changes(shard_files, monkeypatch):
    reads = []
    original = _party.load_shard
    monkeypatch.setattr(_party, "load_shard", lambda *args: reads.append(args) or original(*args))
    monkeypatch.setattr(_party, "_SHARD_CACHE", {})
    X1, y1 = _party.cached_shard(str(shard_files[0]), "label")
    X1[:] = 99.0  # a caller's change does not reach the cache
    X2, _ = _party.cached_shard(str(shard_files[0]), "label")
    assert len(reads) == 1 and not np.any(X2 == 99.0)
    X, y = make_data(n=10)
    write_shard(shard_files[0], X, y)  # new content (size differs)
    X3, _ = _party.cached_shard(str(shard_files[0]), "label")
    assert len(reads) == 2 and X3.shape[0] == 10


def test_the_supernode_waits_grow_while_idle_and_restart_short_after_an_answer(monkeypatch):
    slept = []
    monkeypatch.setattr(_flower_supernode.time, "sleep", slept.append)
    capped = _flower_supernode._CappedTime(0.25)
    for _ in range(8):
        capped.sleep(3)  # no message
    assert slept[0] == 0.03 and slept == sorted(slept) and slept[-1] == 0.25
    capped.sleep(0.5)  # waiting for the runner's reply
    assert slept[-1] == 0.03
    capped.reset()
    capped.sleep(3)
    assert slept[-1] == 0.03
    flower = _flower_supernode._CappedTime(3.0)  # DPERM_FLOWER_POLL_SECONDS=3: Flower's own waits
    flower.sleep(3)
    flower.sleep(0.5)
    assert slept[-2:] == [3.0, 0.5]
