"""Hygiene of a deployment (issue 31, finding 9): file modes, temp folders, argv, refusals, the connect timeout."""

from __future__ import annotations

import os
import stat
import time

import pytest

pytest.importorskip("flwr")

from dperm.cli import main as dperm_main  # noqa: E402
from dperm.multiparty.flower.deploy import (  # noqa: E402
    coordinator_workdir,
    free_loopback_ports,
    write_loopback_certificates,
    write_party_key,
    write_party_roster,
)


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
