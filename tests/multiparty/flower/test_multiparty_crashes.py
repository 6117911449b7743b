"""Issue 31, finding 7: crashes must not leave a party's key in use or cost a whole budget.

- a ``dperm party serve`` killed with SIGKILL takes its SuperNode and task runner with it
  (:func:`dperm.multiparty.flower.supernode.die_with_parent`);
- a party's ledger charges Newton rounds as they are answered (:meth:`PartyLedger.charge_rounds`);
- a coordinator that crashed after round r resumes the same run id from its checkpoint.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

flwr = pytest.importorskip("flwr")

from dperm.multiparty.flower import supernode  # noqa: E402
from dperm.multiparty.flower.deploy import stop_process_group  # noqa: E402

# -- the parent watch -------------------------------------------------------------------------------

#: A parent that starts a child which watches it, prints the child's pid, then sleeps until killed.
_PARENT = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    print(child.pid, flush=True)
    time.sleep(600)
""")
_CHILD = textwrap.dedent("""
    import os, sys, time
    from dperm.multiparty.flower import supernode
    if sys.argv[1] == "portable":  # the fallback alone: no kernel parent-death signal
        supernode._set_parent_death_signal = lambda signum: False
    supernode.die_with_parent(os.getppid(), poll_seconds=0.05)
    time.sleep(600)
""")


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, exited but unreaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(pids, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("watch", ["kernel", "portable"])
def test_a_child_dies_with_its_parent_even_after_sigkill(watch):
    """SIGKILL of the parent (left unreaped, a zombie): the child ends within a second, by either watch."""
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, _CHILD, watch], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, start_new_session=True)
    child = int(parent.stdout.readline())
    try:
        time.sleep(1.5)  # the child has imported dperm and set its watch
        assert _alive(child)
        os.kill(parent.pid, signal.SIGKILL)  # not waited for: the parent stays a zombie meanwhile
        assert _wait_gone([child], 5.0) == []
    finally:
        for pid in (child, parent.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        parent.wait(timeout=5)
        parent.stdout.close()


def test_a_parent_gone_before_the_watch_is_set_ends_the_child_at_once(monkeypatch):
    monkeypatch.setattr(supernode, "_set_parent_death_signal", lambda signum: True)  # not on the test runner
    ended = []
    supernode.die_with_parent(os.getpid() + 10**7, exit_now=lambda: ended.append(True))  # not our parent
    assert ended == [True]


def _children(pid: int) -> list:
    """Pids whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_party_serve_takes_its_supernode_and_task_runner_down(tmp_path):
    """A real `dperm party serve` (TLS, key, shard) waiting for a SuperLink; SIGKILL it: nothing it started runs on."""
    from _multiparty_data import make_data

    from dperm.multiparty.flower.deploy import free_loopback_ports, write_loopback_certificates, write_party_key

    X, y = make_data(n=40)
    shard = tmp_path / "shard.csv"
    shard.write_text("x0,x1,x2,x3,label\n" + "".join(
        ",".join(repr(float(v)) for v in row) + f",{int(label > 0)}\n" for row, label in zip(X, y)))
    tls = write_loopback_certificates(tmp_path)
    write_party_key(tmp_path / "party.key")
    superlink_port, node_port = free_loopback_ports(2)  # nothing listens on the SuperLink's port
    env = {**os.environ, "FLWR_HOME": str(tmp_path / "flwr-home"), "FLWR_TELEMETRY_ENABLED": "0",
           "FLWR_DISABLE_UPDATE_CHECK": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    party = subprocess.Popen(
        [sys.executable, "-m", "dperm.cli", "party", "serve", "--data", str(shard),
         "--superlink", f"127.0.0.1:{superlink_port}", "--port", str(node_port),
         "--auth-key", str(tmp_path / "party.key"), "--root-certificates", str(tls["ca.pem"]),
         "--max-epsilon", "1", "--max-delta", "1e-5", "--max-rounds", "2", "--connect-timeout", "120"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    started = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(started) < 2:
            started = [pid for pid in _children(party.pid) if "dperm.multiparty.flower." in _cmdline(pid)]
            time.sleep(0.2)
        assert len(started) == 2, [(pid, _cmdline(pid)) for pid in _children(party.pid)]
        assert any("flower.supernode" in _cmdline(pid) for pid in started)
        time.sleep(3.0)  # both have imported Flower and set their watches
        assert all(_alive(pid) for pid in started)
        os.kill(party.pid, signal.SIGKILL)  # the supervisor is gone without any clean-up of its own
        assert _wait_gone(started, 5.0) == [], [_cmdline(pid) for pid in started]
    finally:
        for pid in started:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        stop_process_group(party, grace_seconds=5)
