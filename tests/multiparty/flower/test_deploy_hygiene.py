"""Hygiene of a deployment (issue 31, finding 9): file modes, temp folders, argv, refusals, the connect timeout."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from dperm.cli import main as dperm_main  # noqa: E402
from dperm.multiparty.flower import deploy  # noqa: E402
from dperm.multiparty.flower.checkpoint import CHECKPOINT_NAME  # noqa: E402
from dperm.multiparty.flower.deploy import (  # noqa: E402
    coordinator_workdir,
    free_loopback_ports,
    write_loopback_certificates,
    write_party_key,
    write_party_roster,
)
from dperm.multiparty.flower.party_runtime import expanded_node_config, write_party_config  # noqa: E402


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask():
    """A permissive umask (0000), so a file's mode is what dperm asked for, not what the umask left."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def test_every_private_key_dperm_writes_is_created_0600(tmp_path, open_umask):
    paths = write_loopback_certificates(tmp_path)
    assert _mode(paths["server.key"]) == 0o600
    write_party_key(tmp_path / "party.key")
    assert _mode(tmp_path / "party.key") == 0o600
    for public in (paths["ca.pem"], paths["server.pem"], tmp_path / "party.key.pub"):
        assert _mode(public) == 0o666  # public files: the umask decides


def test_the_throwaway_server_key_is_never_written_over_an_existing_file(tmp_path):
    (tmp_path / "server.key").write_text("someone else's\n")
    with pytest.raises(FileExistsError):
        write_loopback_certificates(tmp_path)
    assert (tmp_path / "server.key").read_text() == "someone else's\n"


def test_the_coordinators_work_folder_is_created_0700(tmp_path, open_umask):
    named = coordinator_workdir(tmp_path / "a" / "work")
    assert named == (tmp_path / "a" / "work").resolve() and _mode(named) == 0o700
    fresh = coordinator_workdir(None)
    try:
        assert _mode(fresh) == 0o700 and fresh.name.startswith("dperm-coordinate-")
    finally:
        fresh.rmdir()


def _party_files(tmp_path):
    tls = write_loopback_certificates(tmp_path)
    write_party_key(tmp_path / "k0")
    roster = write_party_roster(tmp_path / "roster", [tmp_path / "k0.pub", write_party_key(tmp_path / "k1")])
    shard = tmp_path / "shard.csv"
    shard.write_text("x0,x1,label\n0.1,0.2,1\n0.3,-0.1,0\n0.2,0.4,1\n", encoding="utf-8")
    return tls, roster, shard


def _serve_args(tmp_path, tls, roster, shard, superlink_port, node_port, *extra):
    return ["party", "serve", "--data", str(shard), "--superlink", f"127.0.0.1:{superlink_port}",
            "--port", str(node_port), "--auth-key", str(tmp_path / "k0"), "--roster", str(roster),
            "--root-certificates", str(tls["ca.pem"]), "--max-epsilon", "1", "--max-delta", "1e-5",
            "--max-rounds", "2", *extra]


def test_the_connect_timeout_is_honoured_within_a_couple_of_seconds(tmp_path, capsys):
    tls, roster, shard = _party_files(tmp_path)
    superlink_port, node_port = free_loopback_ports(2)  # nothing listens on superlink_port
    timeout = 4.0
    started = time.monotonic()
    code = dperm_main(_serve_args(tmp_path, tls, roster, shard, superlink_port, node_port,
                                  "--connect-timeout", str(timeout)))
    elapsed = time.monotonic() - started
    assert code == 1
    assert f"was not reached within {timeout:g} s (--connect-timeout)" in capsys.readouterr().err
    # Flower's own --max-wait-time starts after the SuperNode's imports and overshoots by seconds
    assert elapsed < timeout + 2.0, f"--connect-timeout {timeout:g} ended after {elapsed:.1f} s"


def test_the_spawned_command_lines_name_neither_the_data_nor_the_budget(tmp_path, monkeypatch, capsys):
    """/proc/PID/cmdline is readable by every user: the settings travel in a 0600 file the party removes."""
    tls, roster, shard = _party_files(tmp_path)
    seen = {}

    def record(supernode_command, runtime_command, environ, connect_timeout=None, started=None):
        (config_arg,) = [supernode_command[i + 1] for i, item in enumerate(supernode_command)
                         if item == "--node-config"]
        key, _, value = config_arg.partition("=")
        path = Path(value.strip("'"))
        seen.update(commands=supernode_command + runtime_command, key=key, path=path, mode=_mode(path),
                    folder_mode=_mode(path.parent), config=expanded_node_config({key: str(path)}))
        return 0

    monkeypatch.setattr(deploy, "supervise_party", record)
    superlink_port, node_port = free_loopback_ports(2)
    assert dperm_main(_serve_args(tmp_path, tls, roster, shard, superlink_port, node_port,
                                  "--budget-epsilon", "3.217", "--budget-delta", "0.000271",
                                  "--ledger", str(tmp_path / "secret-ledger.json"))) == 0
    line = " ".join(seen["commands"])
    for private in (str(shard), "shard.csv", "3.217", "0.000271", "2.71e-04", "secret-ledger", "1e-05", "max-epsilon", "budget"):
        assert private not in line, private
    assert seen["key"] == "party-config" and seen["mode"] == 0o600 and seen["folder_mode"] == 0o700
    assert seen["config"]["data-path"] == str(shard.resolve())
    assert (seen["config"]["budget-epsilon"], seen["config"]["budget-delta"]) == (3.217, 0.000271)
    assert seen["config"]["max-rounds"] == 2 and seen["config"]["party-name"] == "shard"
    assert not seen["path"].parent.exists()  # the party's private folder is gone when it stops


def test_the_task_runner_gives_dperms_client_app_the_settings_and_the_supernode_its_config_back(tmp_path):
    from flwr.app import Context, RecordDict

    path = write_party_config(tmp_path, {"data-path": "/d/shard.csv", "budget-epsilon": 2.5, "max-rounds": 3})
    assert _mode(path) == 0o600
    with pytest.raises(FileExistsError):
        write_party_config(tmp_path, {})  # never over an existing file
    context = Context(run_id=1, node_id=2, node_config={"party-config": str(path)}, state=RecordDict(),
                      run_config={})
    seen = {}

    def client_app(message, context):
        seen.update(context.node_config)
        return message

    from dperm.multiparty.flower import party_runtime

    reply = party_runtime._answer(client_app, "message", context)
    assert reply == "message"
    assert seen == {"data-path": "/d/shard.csv", "budget-epsilon": 2.5, "max-rounds": 3}
    assert context.node_config == {"party-config": str(path)}
    path.write_text("not json", encoding="utf-8")
    with pytest.raises(ValueError, match="party-config.json.*cannot be read"):
        party_runtime._answer(client_app, "message", context)


def test_the_flower_home_dperm_makes_is_removed_at_exit_and_one_the_user_set_is_left(tmp_path):
    script = ("from dperm.multiparty.flower.engine import configure_flower_environment\n"
              "import os\nhome = configure_flower_environment({})['FLWR_HOME']\n"
              "assert os.path.isdir(home)\nprint(home)\n")
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    environ.pop("FLWR_HOME", None)
    made = subprocess.run([sys.executable, "-c", script], env=environ, capture_output=True, text=True, check=True)
    home = Path(made.stdout.strip())
    assert home.name.startswith("dperm-flwr-home-") and not home.exists()
    user_home = tmp_path / "flwr-home"
    user_home.mkdir()
    script = ("from dperm.multiparty.flower.engine import configure_flower_environment\n"
              "import os\nprint(configure_flower_environment(dict(os.environ))['FLWR_HOME'])\n")
    kept = subprocess.run([sys.executable, "-c", script], env={**environ, "FLWR_HOME": str(user_home)},
                          capture_output=True, text=True, check=True)
    assert kept.stdout.strip() == str(user_home) and user_home.is_dir()


def _coordinate_args(tmp_path, *extra):
    tls = write_loopback_certificates(tmp_path)
    keys = [write_party_key(tmp_path / f"k{k}") for k in range(2)]
    return ["coordinate", "--shards", "2", "--party-keys", *map(str, keys), "--epsilon", "1", "--rounds", "2",
            "--ssl-certfile", str(tls["server.pem"]), "--ssl-keyfile", str(tls["server.key"]),
            "--ssl-ca-certfile", str(tls["ca.pem"]), "--out", str(tmp_path / "model.json"), *extra]


def _fake_coordinator(seen, *, ok, checkpoint):
    def run_coordinator(args, settings, keys, on_listening=None):
        workdir = deploy.coordinator_workdir(args.workdir)  # as the real one does
        seen["workdir"] = workdir
        (workdir / "run.log").write_text("a log\n", encoding="utf-8")
        if checkpoint:
            (workdir / CHECKPOINT_NAME).write_text("{}\n", encoding="utf-8")
        status = {"ok": True, "summary": "a model"} if ok else {"ok": False, "error": "a party refused"}
        return deploy.CoordinatorOutcome(status=status, workdir=workdir, out=Path(args.out), seconds=1.0,
                                         run_log_tail="a log")
    return run_coordinator


@pytest.mark.parametrize("ok, checkpoint, kept", [(True, True, False), (False, False, False), (False, True, True)])
def test_coordinate_removes_its_own_work_folder_unless_it_holds_a_checkpoint_to_resume(
        tmp_path, monkeypatch, capsys, ok, checkpoint, kept):
    seen = {}
    monkeypatch.setattr(deploy, "run_coordinator", _fake_coordinator(seen, ok=ok, checkpoint=checkpoint))
    assert dperm_main(_coordinate_args(tmp_path)) == (0 if ok else 1)
    err = capsys.readouterr().err
    assert seen["workdir"].name.startswith("dperm-coordinate-")
    assert seen["workdir"].exists() == kept
    if kept:
        assert f"--resume --workdir {seen['workdir']}" in err
        shutil.rmtree(seen["workdir"])
    elif not ok:
        assert "a party refused" in err and "a log" in err  # the log's tail, as the folder is gone


@pytest.mark.parametrize("ok", [True, False])
def test_coordinate_never_removes_a_work_folder_the_user_named(tmp_path, monkeypatch, capsys, ok):
    seen = {}
    monkeypatch.setattr(deploy, "run_coordinator", _fake_coordinator(seen, ok=ok, checkpoint=False))
    named = tmp_path / "mine"
    assert dperm_main(_coordinate_args(tmp_path, "--workdir", str(named))) == (0 if ok else 1)
    assert (named / "run.log").is_file()
    if not ok:
        assert f"logs in {named}" in capsys.readouterr().err
