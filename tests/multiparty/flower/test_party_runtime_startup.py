"""Start-up, shut-down and per-round waits of the deployment (issue 31 target: K = 5 on loopback <= 60 s).

The party's runner waits on a pipe the SuperNode writes to when it has a
task (instead of polling the Runtime API), dperm's long-lived processes
freeze their imports out of the garbage collector, and a party parses its
shard once per process. What is sent and checked is unchanged; these tests
check the plumbing.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

flwr = pytest.importorskip("flwr")

from flwr.app import Context, RecordDict  # noqa: E402

from dperm.multiparty.flower import _adapter, _party, deploy, party_runtime, supernode  # noqa: E402


def test_supernode_message_stored_calls_back_after_a_stored_message_only_inside_the_block(monkeypatch):
    import flwr.supernode.start_client_internal as loop

    answers = iter([None, 7])
    monkeypatch.setattr(loop, "_pull_and_store_message", lambda **kwargs: next(answers))
    stand_in = loop._pull_and_store_message
    calls = []
    with _adapter.supernode_message_stored(lambda: calls.append("wake")):
        assert loop._pull_and_store_message(state=None) is None  # nothing pulled: no wake-up
        assert calls == []
        assert loop._pull_and_store_message(state=None) == 7  # a message stored for run 7: one wake-up
        assert calls == ["wake"]
    assert loop._pull_and_store_message is stand_in  # restored


def test_runner_wake_writes_a_byte_per_stored_message_and_ignores_a_full_pipe(monkeypatch):
    import flwr.supernode.start_client_internal as loop

    monkeypatch.setattr(loop, "_pull_and_store_message", lambda **kwargs: 3)
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)  # nothing written: the read below fails instead of waiting
    try:
        with supernode.runner_wake(write_end):
            loop._pull_and_store_message()
            loop._pull_and_store_message()
            assert os.read(read_end, 100) == b"\0\0"
            while True:  # fill the pipe: a wake-up that does not fit is dropped, not an error
                try:
                    os.write(write_end, b"\0" * 65536)
                except BlockingIOError:
                    break
            loop._pull_and_store_message()
    finally:
        os.close(read_end)
        os.close(write_end)
    with supernode.runner_wake(None):  # no pipe: nothing patched
        assert loop._pull_and_store_message() == 3


def test_wait_for_wake_returns_on_a_byte_drains_the_pipe_and_otherwise_waits_the_timeout():
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"\0\0\0")
        started = time.monotonic()
        party_runtime.wait_for_wake(read_end, 5.0)
        assert time.monotonic() - started < 1.0  # woken at once
        started = time.monotonic()
        party_runtime.wait_for_wake(read_end, 0.3)  # drained: the next wait runs to its timeout
        assert time.monotonic() - started >= 0.29
        os.close(write_end)
        write_end = None
        started = time.monotonic()
        party_runtime.wait_for_wake(read_end, 0.3)  # the writer is gone: a plain wait, not a busy loop
        assert time.monotonic() - started >= 0.29
    finally:
        os.close(read_end)
        if write_end is not None:
            os.close(write_end)


def test_the_pipe_ends_go_among_dperms_options_before_flowers():
    supernode_command = ["python", "-m", "dperm.multiparty.flower.supernode", "--parent-pid", "1", "--",
                         "--superlink", "h:1"]
    assert deploy._with_option(supernode_command, "--wake-fd", 9) == [
        "python", "-m", "dperm.multiparty.flower.supernode", "--parent-pid", "1", "--wake-fd", "9", "--",
        "--superlink", "h:1"]
    runtime_command = ["python", "-m", "dperm.multiparty.flower.party_runtime", "--runtime-api-address", "a:1"]
    assert deploy._with_option(runtime_command, "--wake-fd", 8)[-2:] == ["--wake-fd", "8"]


def test_freeze_imports_freezes_now_and_again_at_exit(monkeypatch):
    import atexit
    import gc

    frozen, registered = [], []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setattr(atexit, "register", registered.append)
    supernode.freeze_imports()
    assert frozen == [True] and registered == [gc.freeze]


def test_a_party_parses_its_shard_once_for_describe_and_rounds(tmp_path, monkeypatch):
    path = tmp_path / "shard.csv"
    path.write_text("a,b,label\n0.1,0.2,1\n-0.3,0.1,0\n0.0,0.5,1\n", encoding="utf-8")
    context = Context(run_id=1, node_id=7, node_config={"data-path": str(path)}, state=RecordDict(), run_config={})
    parsed = []
    load_shard = _party.load_shard
    monkeypatch.setattr(_party, "load_shard", lambda *args: parsed.append(args) or load_shard(*args))
    monkeypatch.setattr(_party, "_SHARD_CACHE", {})
    assert _party.shard_description(context) == (3, 2, ["a", "b"])
    X, y = _party.party_rows(context)
    assert len(parsed) == 1
    assert np.array_equal(X, [[0.1, 0.2], [-0.3, 0.1], [0.0, 0.5]]) and np.array_equal(y, [1.0, -1.0, 1.0])
    X[0, 0] = 99.0  # a copy: the cached rows are untouched
    assert _party.party_rows(context)[0][0, 0] == 0.1
    path.write_text("a,b,label\n0.1,0.2,1\n", encoding="utf-8")  # the file changed: read again
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert _party.shard_description(context) == (1, 2, ["a", "b"])
    assert len(parsed) == 2
