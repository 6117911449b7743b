"""dperm's one adapter to Flower's internals (issue 29): version-guarded, no patch at import, each one scoped."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

flwr = pytest.importorskip("flwr")

from flwr.supercore.inflatable import inflatable_utils  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from dperm.multiparty.flower import _adapter  # noqa: E402
from dperm.multiparty.flower.engine import SUPPORTED_FLOWER  # noqa: E402

#: Every piece of Flower's state the adapter can change, read in a fresh process.
SNAPSHOT = textwrap.dedent("""\
    import flwr.superlink.main as superlink_main
    import flwr.supernode.start_client_internal as loop
    from flwr.supercore.inflatable import inflatable_utils as pulls
    from flwr.supercore.task_identity import TaskIdentity
    import importlib
    mod = importlib.import_module("flwr.client.mod.secure_aggregation.secaggplus_mod")
    workflow = importlib.import_module("flwr.server.workflow.secure_aggregation.secaggplus_workflow")

    def snapshot():
        return (repr(sorted(pulls.pull_objects.__kwdefaults__.items())),
                repr(sorted(pulls.pull_and_inflate_object_from_tree.__kwdefaults__.items())),
                id(loop.time), id(loop._push_messages), id(superlink_main.create_app),
                (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id),
                id(mod.pseudo_rand_gen), id(workflow.pseudo_rand_gen))
    """)


def test_importing_dperms_flower_modules_changes_nothing_in_flower():
    script = SNAPSHOT + textwrap.dedent("""\
        before = snapshot()
        import dperm.multiparty.flower.app, dperm.multiparty.flower.newton, dperm.multiparty.flower.simulation
        import dperm.multiparty.flower.supernode, dperm.multiparty.flower.superlink
        import dperm.multiparty.flower.party_runtime, dperm.multiparty.flower.deploy, dperm.multiparty.flower.cli
        from dperm.multiparty.flower.engine import FlowerSecureSum
        import numpy as np
        engine = FlowerSecureSum()
        total, _ = engine.sum({"a": np.ones(3), "b": np.full(3, 2.0)}, 3)  # a round: its patches end with it
        assert np.allclose(total, 3.0, atol=1e-3), total
        assert snapshot() == before, (before, snapshot())
        print("unchanged")
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("unchanged")


def test_the_version_guard_names_the_supported_releases():
    _adapter.check_flower_version(flwr.__version__)  # the installed one is supported
    _adapter.check_flower_version("1.41.7")
    _adapter.check_flower_version("1.42.0")
    for other in ("1.43.0", "1.40.2", "2.0.0", "unknown"):
        with pytest.raises(ImportError, match=r">=1\.41,<1\.43.*flwr " + other.replace(".", r"\.")):
            _adapter.check_flower_version(other)
    assert _adapter.supported_flower_versions() == SUPPORTED_FLOWER  # the engine's install message agrees


def test_importing_the_adapter_under_another_flower_release_fails_before_touching_flower():
    script = textwrap.dedent("""\
        import flwr
        flwr.__version__ = "1.43.0"
        try:
            import dperm.multiparty.flower._adapter
        except ImportError as error:
            print("refused:", error)
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused:" in done.stdout and ">=1.41,<1.43" in done.stdout and "1.43.0" in done.stdout


def test_object_pull_backoff_is_in_force_inside_the_block_only():
    flowers = [dict(function.__kwdefaults__) for function in _adapter.OBJECT_PULL_FUNCTIONS]
    with _adapter.object_pull_backoff(0.02, 1.0):
        for function in (inflatable_utils.pull_objects, inflatable_utils.pull_and_inflate_object_from_tree):
            assert function.__kwdefaults__["initial_backoff"] == 0.02
            assert function.__kwdefaults__["backoff_cap"] == 1.0
            assert function.__kwdefaults__["max_tries_per_object"] == 500  # Flower's limits are kept
        calls = []

        def pull(object_id):
            calls.append(object_id)
            if len(calls) < 3:
                raise inflatable_utils.ObjectUnavailableError(object_id)
            return b"content"

        started = time.monotonic()
        assert inflatable_utils.pull_objects(["a"], pull) == {"a": b"content"}
        assert time.monotonic() - started < 0.5  # Flower's own backoff: 1 s + 2 s
    assert [dict(function.__kwdefaults__) for function in _adapter.OBJECT_PULL_FUNCTIONS] == flowers


def test_supernode_waits_are_in_force_inside_the_block_only():
    import flwr.supernode.start_client_internal as loop

    class Clock:
        resets = 0

        def sleep(self, seconds):
            self.slept = seconds

        def reset(self):
            self.resets += 1

    flowers_time, flowers_push = loop.time, loop._push_messages
    clock = Clock()
    with _adapter.supernode_waits(clock):
        assert loop.time is clock
        loop.time.sleep(3)
        assert clock.slept == 3
        with pytest.raises(Exception):
            loop._push_messages(None)  # Flower's own function runs; the clock is reset even when it fails
        assert clock.resets == 1
    assert loop.time is flowers_time and loop._push_messages is flowers_push


def test_captured_superlink_app_is_in_force_inside_the_block_only(monkeypatch):
    import flwr.superlink.main as superlink_main

    flowers = superlink_main.create_app
    monkeypatch.setattr(superlink_main, "create_app", lambda *args, **kwargs: ("app", args))
    store = {}
    with _adapter.captured_superlink_app(store):
        assert superlink_main.create_app(1) == ("app", (1,))
    assert store == {"app": ("app", (1,))}
    assert superlink_main.create_app is not flowers  # the test's stand-in is back, not left wrapped
    assert superlink_main.create_app(2) == ("app", (2,)) and store["app"] == ("app", (1,))


def test_server_identity_is_set_for_the_block_and_restored():
    saved = (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id)
    assert TaskIdentity._run_id is None
    with _adapter.server_identity(7):
        assert TaskIdentity.run_id == 7 and TaskIdentity.task_id == 1
        with _adapter.server_identity(8):  # inside a ServerApp: its identity is kept
            assert TaskIdentity.run_id == 7
    assert (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id) == saved
    with _adapter.kept_task_identity():
        TaskIdentity.run_id = 3
    assert TaskIdentity._run_id is None


def test_stamped_message_ids_read_back_through_flowers_metadata():
    from flwr.app import ConfigRecord, Message, RecordDict

    with _adapter.server_identity(1):
        message = Message(RecordDict({"config": ConfigRecord({"a": 1})}), dst_node_id=5, message_type="query",
                          group_id="setup")
    _adapter.stamp_message_id(message, "m-1")
    assert message.metadata.message_id == "m-1"


def test_the_abort_on_dropout_workflow_refuses_the_threshold_when_a_party_is_missing():
    class State:
        sampled_node_ids = {1, 2, 3}
        active_node_ids = {1, 3}
        failures = ["x"]

    workflow = _adapter.AbortOnDropoutSecAggPlusWorkflow(num_shares=1.0, reconstruction_threshold=1.0)
    assert workflow._check_threshold(State()) is False
    assert workflow.missing == {2} and workflow.failures == ["x"]
