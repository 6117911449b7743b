"""The locked-down deployment (issue 15): Control API on loopback, node keys, parties run only dperm's app."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import time
import types

import pytest

flwr = pytest.importorskip("flwr")

from flwr.cli.build import build_fab_from_disk  # noqa: E402

from dperm.cli import main as dperm_main  # noqa: E402
from dperm.multiparty.flower.app import CoordinatorSettings  # noqa: E402
from dperm.multiparty.flower.deploy import (  # noqa: E402
    check_port_free,
    flower_command,
    flower_environment,
    free_loopback_ports,
    stop_process_group,
    superlink_command,
    wait_for_port,
    write_cli_connection,
    write_flower_app,
    write_loopback_certificates,
    write_party_key,
    write_party_roster,
)
from dperm.multiparty.flower.party_runtime import APP_ID, ForeignAppError, check_dperm_fab  # noqa: E402
from dperm.multiparty.flower.superlink import public_key_bytes  # noqa: E402
from tests.multiparty.flower.test_flower import FLOOR_ARGS, shard_files  # noqa: E402,F401

RUN_CONFIG = {**CoordinatorSettings(n_parties=2, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=2).to_run_config(),
              "out": "/tmp/m.json", "status": "/tmp/s.json"}

#: A foreign app: its ClientApp reads the party's data-path and returns the raw rows (the attack).
FOREIGN_APP = {
    "pyproject.toml": """\
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "thief"
        version = "1.0.0"
        dependencies = []

        [tool.flwr.app]
        publisher = "outsider"

        [tool.flwr.app.components]
        serverapp = "thief:server_app"
        clientapp = "thief:client_app"

        [tool.flwr.app.config]
        marker = "MARKER"
        """,
    "thief.py": """\
        import time
        from flwr.app import ConfigRecord, Message, RecordDict
        from flwr.clientapp import ClientApp
        from flwr.serverapp import ServerApp

        server_app = ServerApp()
        client_app = ClientApp()

        @server_app.main()
        def main(grid, context):
            for _ in range(60):
                nodes = list(grid.get_node_ids())
                if nodes:
                    break
                time.sleep(0.5)
            messages = [Message(RecordDict({"q": ConfigRecord({})}), dst_node_id=node, message_type="query")
                        for node in nodes]
            replies = list(grid.send_and_receive(messages, timeout=60))
            stolen = [reply.content["rows"]["rows"] for reply in replies if reply.has_content()]
            with open(context.run_config["marker"] + ".server", "w") as handle:
                handle.write(f"{len(replies)} replies, {len(stolen)} with rows\\n" + "".join(stolen))

        @client_app.query()
        def steal(message, context):
            with open(context.run_config["marker"], "w") as handle:
                handle.write("foreign code ran on a party\\n")
            rows = open(context.node_config["data-path"]).read()
            return Message(RecordDict({"rows": ConfigRecord({"rows": rows})}), reply_to=message)
        """,
}


def write_foreign_app(directory, marker):
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in FOREIGN_APP.items():
        (directory / name).write_text(textwrap.dedent(text).replace("MARKER", str(marker)), encoding="utf-8")
    return directory


# -- fast: the party's app check and the keys -------------------------------------------


def test_the_party_accepts_dperms_bundle_and_refuses_any_other(tmp_path):
    fab = build_fab_from_disk(write_flower_app(tmp_path / "dperm", RUN_CONFIG))
    fab_hash = hashlib.sha256(fab).hexdigest()
    check_dperm_fab(APP_ID, fab, fab_hash)  # dperm's own bundle passes

    foreign = build_fab_from_disk(write_foreign_app(tmp_path / "thief", tmp_path / "marker"))
    foreign_hash = hashlib.sha256(foreign).hexdigest()
    with pytest.raises(ForeignAppError, match="outsider/thief"):
        check_dperm_fab("outsider/thief", foreign, foreign_hash)
    with pytest.raises(ForeignAppError, match="files"):  # a foreign bundle claiming dperm's id
        check_dperm_fab(APP_ID, foreign, foreign_hash)
    with pytest.raises(ForeignAppError, match="hash"):
        check_dperm_fab(APP_ID, fab, foreign_hash)

    # dperm's bundle with its shim edited to read the data, or with other run-config keys, is refused
    edited = write_flower_app(tmp_path / "edited", RUN_CONFIG)
    shim = edited / "dperm_psgd_app.py"
    shim.write_text(shim.read_text() + "import os  # and then read the data\n")
    edited_fab = build_fab_from_disk(edited)
    with pytest.raises(ForeignAppError, match="shim"):
        check_dperm_fab(APP_ID, edited_fab, hashlib.sha256(edited_fab).hexdigest())
    extra = build_fab_from_disk(write_flower_app(tmp_path / "extra", {**RUN_CONFIG, "exfiltrate": "yes"}))
    with pytest.raises(ForeignAppError, match="configuration keys"):
        check_dperm_fab(APP_ID, extra, hashlib.sha256(extra).hexdigest())


def test_party_keygen_writes_a_key_pair_flower_reads(tmp_path, capsys):
    assert dperm_main(["party", "keygen", "--out", str(tmp_path / "a.key")]) == 0
    assert "a.key.pub" in capsys.readouterr().out
    assert (tmp_path / "a.key").stat().st_mode & 0o777 == 0o600
    assert len(public_key_bytes(tmp_path / "a.key.pub")) > 0
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key

    assert load_ssh_private_key((tmp_path / "a.key").read_bytes(), None).curve.name == "secp384r1"
    assert dperm_main(["party", "keygen", "--out", str(tmp_path / "a.key")]) == 2  # never overwritten
    assert "exists" in capsys.readouterr().err


def test_coordinate_checks_the_party_keys_before_starting(tmp_path, capsys):
    tls = write_loopback_certificates(tmp_path)
    keys = [write_party_key(tmp_path / f"k{k}") for k in range(2)]
    base = ["coordinate", "--shards", "2", "--epsilon", "1", "--ssl-certfile", str(tls["server.pem"]),
            "--ssl-keyfile", str(tls["server.key"]), "--ssl-ca-certfile", str(tls["ca.pem"]),
            "--out", str(tmp_path / "m.json")]
    assert dperm_main(base) == 2
    assert "--party-keys lists 0 public key(s) but --shards is 2" in capsys.readouterr().err
    assert dperm_main(base + ["--party-keys", str(keys[0]), str(keys[0])]) == 2
    assert "same key twice" in capsys.readouterr().err
    assert dperm_main(base + ["--party-keys", str(keys[0]), str(tls["ca.pem"])]) == 2
    assert "ca.pem" in capsys.readouterr().err


def test_a_new_coordinator_refuses_a_port_something_answers_on():
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(ValueError, match=f"already listens on 127.0.0.1:{port}"):
            check_port_free("127.0.0.1", port, "--port")
    check_port_free("127.0.0.1", port, "--port")  # closed again: free


# -- slow: the attack, repeated on real processes ---------------------------------------


def _flwr(args, home, timeout=60):
    return subprocess.run([flower_command("flwr"), *args], env=flower_environment(FLWR_HOME=str(home)),
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_an_outsider_with_the_ca_can_neither_run_an_app_nor_join(shard_files, tmp_path):  # noqa: F811
    """Issue 15's attack on a locked-down SuperLink: foreign `flwr run` and a rogue node are refused (~40 s)."""
    tls = write_loopback_certificates(tmp_path)
    fleet_port, control_port, node_port, rogue_port = free_loopback_ports(4)
    party_key = write_party_key(tmp_path / "party.key")
    roster = write_party_roster(tmp_path / "roster.pub", [party_key, write_party_key(tmp_path / "peer.key")])
    marker = tmp_path / "stolen"
    thief = write_foreign_app(tmp_path / "thief", marker)
    args = types.SimpleNamespace(host="127.0.0.1", port=fleet_port, control_port=control_port)
    env = flower_environment(FLWR_HOME=str(tmp_path / "flwr-home"))
    processes = []
    try:
        superlink = subprocess.Popen(
            superlink_command(args, [str(tls[name]) for name in ("server.pem", "server.key", "ca.pem")],
                              [party_key]),
            env=env, stdout=open(tmp_path / "superlink.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(superlink)
        wait_for_port("127.0.0.1", fleet_port, superlink, seconds=60)
        party = subprocess.Popen(
            [sys.executable, "-m", "dperm.cli", "party", "serve", "--data", str(shard_files[0]), "--name", "p0",
             "--superlink", f"127.0.0.1:{fleet_port}", "--port", str(node_port), "--auth-key",
             str(tmp_path / "party.key"), "--roster", str(roster), "--root-certificates", str(tls["ca.pem"]),
             *FLOOR_ARGS],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        processes.append(party)

        # 1. an outsider holding only the CA reaches the public (Fleet) port: no run, no registration
        outsider = tmp_path / "outsider-home"
        write_cli_connection(outsider, f"127.0.0.1:{fleet_port}", tls["ca.pem"])
        foreign_run = _flwr(["run", str(thief), "dperm"], outsider)
        assert foreign_run.returncode != 0, foreign_run.stdout + foreign_run.stderr
        rogue_key = write_party_key(tmp_path / "rogue.key")
        register = _flwr(["supernode", "register", str(rogue_key), "dperm"], outsider)
        assert register.returncode != 0, register.stdout + register.stderr

        # 2. a rogue SuperNode with only the CA (its own unlisted key, or none) is refused and gives up
        for key_args in (["--auth-supernode-private-key", str(tmp_path / "rogue.key")], []):
            rogue = subprocess.run(
                [flower_command("flower-supernode"), "--superlink", f"127.0.0.1:{fleet_port}", "--root-certificates",
                 str(tls["ca.pem"]), "--port", str(rogue_port), "--isolation", "process", "--max-wait-time", "10",
                 *key_args], env=env, capture_output=True, text=True, timeout=60)
            assert rogue.returncode != 0, rogue.stdout + rogue.stderr

        # 3. the listed party is connected; the Control API on loopback answers the operator
        operator = tmp_path / "operator-home"
        write_cli_connection(operator, f"127.0.0.1:{control_port}", tls["ca.pem"])
        deadline = time.monotonic() + 60
        while True:
            listing = _flwr(["supernode", "list", "dperm", "--format", "json"], operator)
            if listing.returncode == 0 and '"online"' in listing.stdout or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        assert listing.returncode == 0 and listing.stdout.count('"node-id"') == 1, listing.stdout + listing.stderr
        assert '"online"' in listing.stdout, listing.stdout

        # 4. even a foreign run submitted from the coordinator's own machine runs no foreign code on a party
        submitted = _flwr(["run", str(thief), "dperm"], operator)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        deadline = time.monotonic() + 90
        while not (tmp_path / "stolen.server").exists() and time.monotonic() < deadline:
            time.sleep(1.0)
        server_view = (tmp_path / "stolen.server").read_text()
        assert server_view.startswith("1 replies, 0 with rows"), server_view
        assert not marker.exists()
    finally:
        for process in reversed(processes):
            stop_process_group(process, grace_seconds=15)
    party_log = party.stdout.read()
    assert "refuses run" in party_log and "outsider/thief" in party_log, party_log


def _stop_superlinks_on(fleet_port: int) -> None:
    """Stop the process group of a dperm SuperLink launcher serving ``fleet_port`` (found in /proc)."""
    import pathlib
    import signal

    for cmdline in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"dperm.multiparty.flower.superlink" in args and str(fleet_port).encode() in args:
            try:
                os.killpg(int(cmdline.parent.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _answers(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_faults_a_killed_coordinator_leaves_no_superlink_and_a_party_gives_up(shard_files, tmp_path):  # noqa: F811
    """SIGKILL of `dperm coordinate` takes its SuperLink down; a party with nothing to reach stops in time (~30 s)."""
    import signal

    tls = write_loopback_certificates(tmp_path)
    fleet_port, control_port, node_port = free_loopback_ports(3)
    keys = [write_party_key(tmp_path / f"k{k}") for k in range(2)]
    roster = write_party_roster(tmp_path / "roster.pub", keys)
    env = flower_environment(FLWR_HOME=str(tmp_path / "flwr-home"))
    dperm = [sys.executable, "-m", "dperm.cli"]
    coordinator = subprocess.Popen(
        dperm + ["coordinate", "--shards", "2", "--party-keys", *map(str, keys), "--epsilon", "1",
                 "--port", str(fleet_port), "--control-port", str(control_port), "--ssl-certfile",
                 str(tls["server.pem"]), "--ssl-keyfile", str(tls["server.key"]), "--ssl-ca-certfile",
                 str(tls["ca.pem"]), "--wait", "120", "--workdir", str(tmp_path / "c"), "--out",
                 str(tmp_path / "m.json")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _answers(fleet_port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _answers(fleet_port) and _answers(control_port)
        os.kill(coordinator.pid, signal.SIGKILL)  # the coordinator only, not its SuperLink's group
        coordinator.wait(timeout=10)
        deadline = time.monotonic() + 20
        while (_answers(fleet_port) or _answers(control_port)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _answers(fleet_port) and not _answers(control_port), "an orphaned SuperLink still answers"
    finally:
        stop_process_group(coordinator)
        _stop_superlinks_on(fleet_port)  # only if the test failed: never leave an orphan behind

    # the port is free again: a party pointed at it gives up after --connect-timeout, with the reason
    started = time.monotonic()
    party = subprocess.run(
        dperm + ["party", "serve", "--data", str(shard_files[0]), "--superlink", f"127.0.0.1:{fleet_port}",
                 "--port", str(node_port), "--auth-key", str(tmp_path / "k0"), "--roster", str(roster),
                 "--root-certificates",
                 str(tls["ca.pem"]), "--connect-timeout", "3", *FLOOR_ARGS],
        env=env, capture_output=True, text=True, timeout=90)
    assert party.returncode == 1 and time.monotonic() - started < 60
    assert "was not reached within 3 s (--connect-timeout)" in party.stderr, party.stderr


def _coordinate_command(tmp_path, tls, keys, fleet_port, control_port, name, *extra):
    return [sys.executable, "-m", "dperm.cli", "coordinate", "--protocol", "psgd", "--shards", "2",
            "--party-keys", *map(str, keys),
            "--epsilon", "1", "--alpha", "0.05", "--rounds", "2", "--port", str(fleet_port), "--control-port",
            str(control_port), "--ssl-certfile", str(tls["server.pem"]), "--ssl-keyfile", str(tls["server.key"]),
            "--ssl-ca-certfile", str(tls["ca.pem"]), "--wait", "150", "--stage-timeout", "60",
            "--workdir", str(tmp_path / name), "--out", str(tmp_path / f"{name}.json"), *extra]


@pytest.mark.slow
def test_faults_parties_serve_across_a_coordinator_restart_and_charge_each_run_once(shard_files, tmp_path):  # noqa: F811
    """A coordinator stopped after the set-up, then a new one: the same parties train again (~2 min).

    Each party opened the stopped run in its own ledger before drawing its noise and charged the rounds it
    answered; the new coordinator's run (a new run id) is charged once more, within the party's
    --budget-epsilon of two runs.
    """
    import signal

    from dperm.multiparty.ledger import PartyLedger

    tls = write_loopback_certificates(tmp_path)
    fleet_port, control_port, *node_ports = free_loopback_ports(4)
    keys = [write_party_key(tmp_path / f"k{k}") for k in range(2)]
    roster = write_party_roster(tmp_path / "roster.pub", keys)
    ledgers = [tmp_path / f"ledger-{k}.json" for k in range(2)]
    env = flower_environment(FLWR_HOME=str(tmp_path / "flwr-home"))
    first_run = "5eed" * 8
    parties, coordinators = [], []
    try:
        coordinators.append(subprocess.Popen(
            _coordinate_command(tmp_path, tls, keys, fleet_port, control_port, "first", "--run-id", first_run),
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        for k, port in enumerate(node_ports):
            log = (tmp_path / f"party-{k}.log").open("w")
            parties.append(subprocess.Popen(
                [sys.executable, "-m", "dperm.cli", "party", "serve", "--data", str(shard_files[k]), "--name",
                 f"party-{k}", "--superlink", f"127.0.0.1:{fleet_port}", "--port", str(port), "--auth-key",
                 str(tmp_path / f"k{k}"), "--roster", str(roster), "--root-certificates", str(tls["ca.pem"]),
                 "--connect-timeout", "60",
                 "--ledger", str(ledgers[k]), "--budget-epsilon", "4", "--budget-delta", "1e-4", *FLOOR_ARGS],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(
                path.exists() and first_run in PartyLedger(path).charges() for path in ledgers):
            time.sleep(0.2)
        assert all(first_run in PartyLedger(path).charges() for path in ledgers), "the first run was not set up"
        coordinators[0].send_signal(signal.SIGTERM)  # the coordinator stops its SuperLink too
        assert coordinators[0].wait(timeout=30) == 130
        assert all(party.poll() is None for party in parties)
        coordinators.append(subprocess.Popen(
            _coordinate_command(tmp_path, tls, keys, fleet_port, control_port, "second"),
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True))
        output, _ = coordinators[1].communicate(timeout=300)
        alive = [party.poll() is None for party in parties]
    finally:
        for process in coordinators + parties:
            stop_process_group(process, grace_seconds=15)
        _stop_superlinks_on(fleet_port)
    logs = [(tmp_path / f"party-{k}.log").read_text(errors="replace") for k in range(2)]
    assert coordinators[1].returncode == 0, output + "\n".join(log[-3000:] for log in logs)
    assert alive == [True, True], "\n".join(log[-3000:] for log in logs)  # they outlived both coordinators
    (second_run,) = re.findall(r"rounds of run ([0-9a-f]{32})", output)
    assert all(log.count("SuperNode ID:") >= 2 and "starting a new SuperNode" in log for log in logs)
    for path in ledgers:  # each run charged once, the stopped one for the rounds it answered (1 each)
        charges = PartyLedger(path).charges()
        assert set(charges) == {first_run, second_run} and second_run != first_run
        assert charges[first_run].rounds <= 2 and charges[first_run].booked_epsilon == pytest.approx(2.0)
        assert charges[first_run].epsilon == pytest.approx(1.0 * charges[first_run].rounds)
        assert (charges[second_run].rounds, charges[second_run].epsilon) == (2, pytest.approx(2.0))
    document = json.loads((tmp_path / "second.json").read_text())
    assert document["privacy"]["n_rounds"] == 2 and sorted(document["parties"]) == ["party-0", "party-1"]
