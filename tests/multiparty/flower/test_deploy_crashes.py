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
from tests.multiparty.flower.test_flower import deployment_grid, shard_files  # noqa: E402,F401

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
    from dperm.multiparty.flower.deploy import (
        free_loopback_ports,
        write_loopback_certificates,
        write_party_key,
        write_party_roster,
    )
    from tests._multiparty_data import make_data

    X, y = make_data(n=40)
    shard = tmp_path / "shard.csv"
    shard.write_text("x0,x1,x2,x3,label\n" + "".join(
        ",".join(repr(float(v)) for v in row) + f",{int(label > 0)}\n" for row, label in zip(X, y)))
    tls = write_loopback_certificates(tmp_path)
    # a roster lists at least two parties: this one and a peer that never starts
    roster = write_party_roster(tmp_path / "roster.pub", [write_party_key(tmp_path / "party.key"),
                                                         write_party_key(tmp_path / "peer.key")])
    superlink_port, node_port = free_loopback_ports(2)  # nothing listens on the SuperLink's port
    env = {**os.environ, "FLWR_HOME": str(tmp_path / "flwr-home"), "FLWR_TELEMETRY_ENABLED": "0",
           "FLWR_DISABLE_UPDATE_CHECK": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    party = subprocess.Popen(
        [sys.executable, "-m", "dperm.cli", "party", "serve", "--data", str(shard),
         "--superlink", f"127.0.0.1:{superlink_port}", "--port", str(node_port),
         "--auth-key", str(tmp_path / "party.key"), "--roster", str(roster),
         "--root-certificates", str(tls["ca.pem"]), "--max-epsilon", "1", "--max-delta", "1e-5", "--max-rounds", "2", "--connect-timeout", "120"],
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


# -- the coordinator's checkpoint and resume (in process: the deployed apps on an in-process grid) ---


class CoordinatorCrash(Exception):
    """Stands for a coordinator killed at a chosen point."""


@pytest.fixture
def seeded_party_noise(monkeypatch):
    """Each party's noise seeded by its size and the broadcast w_t, so two runs that broadcast the same
    iterates draw the same noise (the deployed party draws from the OS; tests only)."""
    import zlib

    import numpy as np

    from dperm.multiparty.flower import newton as flower_newton

    real = flower_newton.party_reply

    def seeded(X, y, loss, calibration, coef, rng, **keywords):
        seed = [int(X.shape[0]), zlib.crc32(np.asarray(coef, dtype="<f8").tobytes())]
        return real(X, y, loss, calibration, coef, np.random.default_rng(seed), **keywords)

    monkeypatch.setattr(flower_newton, "party_reply", seeded)


def _crash_at(monkeypatch, crash_round: int, inside: bool):
    """Kill the coordinator at round ``crash_round``: before asking it, or after the parties answered it."""
    from dperm.multiparty.flower.newton import FlowerNewtonNetwork

    real = FlowerNewtonNetwork.round_sum

    def round_sum(self, coef, round_index):
        if round_index == crash_round and not inside:
            raise CoordinatorCrash(f"killed before round {round_index + 1}")
        result = real(self, coef, round_index)
        if round_index == crash_round:
            raise CoordinatorCrash(f"killed inside round {round_index + 1}, after the parties answered")
        return result

    monkeypatch.setattr(FlowerNewtonNetwork, "round_sum", round_sum)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
@pytest.mark.parametrize("crash_round, inside", [(2, False), (1, True)])
def test_a_crashed_coordinator_resumes_its_run_and_ends_where_an_uninterrupted_run_ends(
        shard_files, tmp_path, monkeypatch, seeded_party_noise, crash_round, inside):  # noqa: F811
    """Kill the coordinator after round r (between rounds, or inside round r + 1 after the parties answered);
    resume the same run id from its checkpoint: the model equals an uninterrupted run's, and every party's
    ledger has booked exactly T rounds, the whole run's guarantee, once."""
    import dataclasses
    import json

    import numpy as np

    from dperm.losses import get_loss
    from dperm.multiparty.flower import app as flower_app
    from dperm.multiparty.ledger import PartyLedger
    from dperm.multiparty.newton_privacy import calibrate_newton
    from dperm.privacy.newton import view_guarantee

    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=4,
                                              wait_seconds=1.0, protocol="newton")
    calibration = calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=4, n_samples_by_party=(30, 40, 50),
                                   n_features=4, loss=get_loss("logistic"), data_norm=1.0)
    (tmp_path / "reference").mkdir()
    uninterrupted, *_ = flower_app.coordinate(deployment_grid(shard_files, ledger_dir=tmp_path / "reference"),
                                              settings)

    ledgers = tmp_path / "ledgers"
    ledgers.mkdir()
    checkpoint = tmp_path / "coordinator" / "checkpoint.json"
    checkpoint.parent.mkdir()
    with monkeypatch.context() as crash:
        _crash_at(crash, crash_round, inside)
        with pytest.raises(CoordinatorCrash):
            flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers), settings,
                                  checkpoint_path=checkpoint)
    stored = json.loads(checkpoint.read_text())
    assert len(stored["rounds"]) == crash_round  # the rounds completed before the crash, no more
    run_id = stored["run-id"]
    answered = crash_round + int(inside)
    for path in ledgers.glob("ledger-*.json"):
        assert PartyLedger(path).charges()[run_id].rounds == answered  # an abort costs the rounds answered
    # public values only: the iterates are the ones broadcast, the sums are the noisy secure sums
    assert set(stored) == {"format", "version", "run-id", "protocol", "calibration", "parties", "rounds"}
    assert [party["n_samples"] for party in stored["parties"]] == [30, 40, 50]

    resumed_settings = dataclasses.replace(settings, run_id=run_id, resume=True)
    result, _, network, record = flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers),
                                                       resumed_settings, checkpoint_path=checkpoint)
    np.testing.assert_array_equal(result.coef, uninterrupted.coef)
    assert record.secure_sum.n_sums == 4 and len(json.loads(checkpoint.read_text())["rounds"]) == 4
    assert len(network.round_seconds) == 4 - crash_round  # only the rounds left were asked
    for path in ledgers.glob("ledger-*.json"):
        charges = PartyLedger(path).charges()
        assert list(charges) == [run_id]
        assert (charges[run_id].rounds, (charges[run_id].epsilon, charges[run_id].delta)) == (
            4, view_guarantee(calibration))


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_a_resume_that_does_not_continue_the_checkpointed_run_is_refused_before_anything_is_asked(
        shard_files, tmp_path, monkeypatch):  # noqa: F811
    import dataclasses

    from dperm.multiparty.flower import app as flower_app
    from dperm.multiparty.flower.checkpoint import CheckpointError

    settings = flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=3,
                                              wait_seconds=1.0, protocol="newton")
    checkpoint = tmp_path / "checkpoint.json"
    ledgers = tmp_path / "ledgers"
    ledgers.mkdir()
    with monkeypatch.context() as crash:
        _crash_at(crash, 1, False)
        with pytest.raises(CoordinatorCrash):
            flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers), settings,
                                  checkpoint_path=checkpoint)
    run_id = __import__("json").loads(checkpoint.read_text())["run-id"]
    before = {path.name: path.read_bytes() for path in ledgers.glob("ledger-*.json")}
    with pytest.raises(CheckpointError, match=r"of another run .*calibration differ"):
        flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers),
                              dataclasses.replace(settings, run_id=run_id, resume=True, alpha=0.1),
                              checkpoint_path=checkpoint)
    with pytest.raises(CheckpointError, match=r"of another run .*run id differ"):
        flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers),
                              dataclasses.replace(settings, run_id="f" * 32, resume=True), checkpoint_path=checkpoint)
    with pytest.raises(CheckpointError, match=rf"{tmp_path / 'missing.json'} does not exist"):
        flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers),
                              dataclasses.replace(settings, run_id=run_id, resume=True),
                              checkpoint_path=tmp_path / "missing.json")
    with pytest.raises(CheckpointError, match=r"of another run .*protocol, calibration differ"):
        flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers),
                              dataclasses.replace(settings, protocol="psgd", run_id=run_id, resume=True),
                              checkpoint_path=checkpoint)
    assert {path.name: path.read_bytes() for path in ledgers.glob("ledger-*.json")} == before


@pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")
def test_the_round_in_flight_asked_again_at_the_same_w_gets_the_same_answers_and_costs_nothing(
        shard_files, tmp_path):  # noqa: F811
    """OS noise (not seeded): the repeated round's secure sum is bit for bit the first one, nothing is charged;
    the same round at another w_t, an earlier round, or a skipped round is refused."""
    import numpy as np

    from dperm.losses import get_loss
    from dperm.multiparty.flower import app as flower_app
    from dperm.multiparty.flower.newton import FlowerNewtonNetwork
    from dperm.multiparty.ledger import PartyLedger
    from dperm.multiparty.newton_privacy import calibrate_newton

    grid = deployment_grid(shard_files[:2], ledger_dir=tmp_path)
    parties = flower_app.describe_parties(grid, grid.get_node_ids())
    calibration = calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=3, n_samples_by_party=(30, 40),
                                   n_features=4, loss=get_loss("logistic"), data_norm=1.0)
    network = FlowerNewtonNetwork(grid, parties)
    network.setup(calibration)
    w0, w1 = np.zeros(4), np.array([0.1, -0.2, 0.3, 0.0])
    first, _ = network.round_sum(w0, 0)
    second, _ = network.round_sum(w1, 1)
    charged = {path.name: path.read_bytes() for path in tmp_path.glob("ledger-*.json")}
    resumed = FlowerNewtonNetwork(grid, parties, run_id=network.run_id)
    resumed.setup(calibration)
    again, _ = resumed.round_sum(w1, 1)
    np.testing.assert_array_equal(again, second)  # the same answers: no new release
    assert {path.name: path.read_bytes() for path in tmp_path.glob("ledger-*.json")} == charged
    for coef, round_index, problem in ((w0, 1, "has answered 2 round"), (w0, 0, "continue at round 3"),
                                       (w0, 3, "continue at round 3")):
        with pytest.raises(Exception, match=problem):
            resumed.round_sum(coef, round_index)
    assert {path.name: path.read_bytes() for path in tmp_path.glob("ledger-*.json")} == charged
    assert all(PartyLedger(path).charges()[network.run_id].rounds == 2 for path in tmp_path.glob("ledger-*.json"))
    assert not np.array_equal(first, second)


@pytest.mark.slow
def test_real_processes_kill_9_of_the_coordinator_after_a_round_then_resume(shard_files, tmp_path):  # noqa: F811
    """`dperm coordinate` (Newton, T = 3) killed with SIGKILL once round 1 is checkpointed; the same command with
    --resume --workdir finishes the run under its id with the same parties (~3 min): each ledger books exactly
    the 3 rounds, the whole run's guarantee, once."""
    import json

    import numpy as np

    from dperm.losses import get_loss
    from dperm.multiparty.flower.deploy import (
        flower_environment,
        free_loopback_ports,
        write_loopback_certificates,
        write_party_key,
        write_party_roster,
    )
    from dperm.multiparty.ledger import PartyLedger
    from dperm.multiparty.newton_privacy import calibrate_newton
    from dperm.privacy.newton import view_guarantee
    from tests.multiparty.flower.test_deploy_lockdown import _stop_superlinks_on

    tls = write_loopback_certificates(tmp_path)
    fleet_port, control_port, *node_ports = free_loopback_ports(4)
    keys = [write_party_key(tmp_path / f"k{k}") for k in range(2)]
    roster = write_party_roster(tmp_path / "roster.pub", keys)
    ledgers = [tmp_path / f"ledger-{k}.json" for k in range(2)]
    env = flower_environment(FLWR_HOME=str(tmp_path / "flwr-home"))
    workdir, out = tmp_path / "coordinator", tmp_path / "model.json"
    command = [sys.executable, "-m", "dperm.cli", "coordinate", "--protocol", "newton", "--shards", "2",
               "--party-keys", *map(str, keys), "--epsilon", "1", "--alpha", "0.05", "--rounds", "3",
               "--port", str(fleet_port), "--control-port", str(control_port), "--ssl-certfile",
               str(tls["server.pem"]), "--ssl-keyfile", str(tls["server.key"]), "--ssl-ca-certfile",
               str(tls["ca.pem"]), "--wait", "150", "--stage-timeout", "60", "--workdir", str(workdir),
               "--out", str(out)]
    checkpoint = workdir / "checkpoint.json"
    parties, coordinators = [], []
    try:
        coordinators.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True))
        for k, port in enumerate(node_ports):
            log = (tmp_path / f"party-{k}.log").open("w")
            parties.append(subprocess.Popen(
                [sys.executable, "-m", "dperm.cli", "party", "serve", "--data", str(shard_files[k]), "--name",
                 f"party-{k}", "--superlink", f"127.0.0.1:{fleet_port}", "--port", str(port), "--auth-key",
                 str(tmp_path / f"k{k}"), "--roster", str(roster), "--root-certificates", str(tls["ca.pem"]),
                 "--connect-timeout", "90",
                 "--ledger", str(ledgers[k]), "--max-epsilon", "1", "--max-delta", "1e-5", "--max-rounds", "3"],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline, done = time.monotonic() + 150, 0
        while time.monotonic() < deadline and done < 1 and coordinators[0].poll() is None:
            try:
                done = len(json.loads(checkpoint.read_text())["rounds"])
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        assert done >= 1, "round 1 was not checkpointed"
        os.kill(coordinators[0].pid, signal.SIGKILL)  # the coordinator only: its SuperLink dies with it
        coordinators[0].wait(timeout=10)
        _stop_superlinks_on(fleet_port)  # the watch's job; here only to leave no orphan if it failed
        killed_after = len(json.loads(checkpoint.read_text())["rounds"])
        run_id = json.loads(checkpoint.read_text())["run-id"]
        coordinators.append(subprocess.Popen(command + ["--resume"], env=env, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True, start_new_session=True))
        output, _ = coordinators[1].communicate(timeout=300)
    finally:
        for process in coordinators + parties:
            stop_process_group(process, grace_seconds=15)
        _stop_superlinks_on(fleet_port)
    logs = "\n".join((tmp_path / f"party-{k}.log").read_text(errors="replace")[-3000:] for k in range(2))
    assert coordinators[1].returncode == 0, output + logs
    assert f"resuming run {run_id} after its {killed_after} completed round(s)" in output
    document = json.loads(out.read_text())
    assert document["privacy"]["n_rounds"] == 3 and document["privacy"]["secure_sum"]["n_sums"] == 3
    assert np.all(np.isfinite(document["coef"]))
    calibration = calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=3, n_samples_by_party=(30, 40),
                                   n_features=4, loss=get_loss("logistic"), data_norm=1.0)
    for path in ledgers:
        charges = PartyLedger(path).charges()
        assert list(charges) == [run_id], logs
        assert (charges[run_id].rounds, (charges[run_id].epsilon, charges[run_id].delta)) == (
            3, view_guarantee(calibration))
