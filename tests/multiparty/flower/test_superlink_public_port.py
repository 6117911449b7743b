"""The public port bounded (issue 31, finding 6): request bodies above the largest legitimate message are refused.

Before, one 512 MiB POST without CA or key took the SuperLink from 141 MB
to 1,166 MB. The fast tests drive :class:`FleetOnly` as an ASGI app; the
slow one starts a real SuperLink on loopback and attacks it.
"""

from __future__ import annotations

import asyncio
import select
import socket
import ssl
import subprocess
import types

import pytest

pytest.importorskip("flwr")

from dperm.multiparty.flower._adapter import array_chunk_bytes  # noqa: E402
from dperm.multiparty.flower.deploy import (  # noqa: E402
    flower_environment,
    free_loopback_ports,
    stop_process_group,
    superlink_command,
    wait_for_port,
    write_loopback_certificates,
    write_party_key,
)
from dperm.multiparty.flower.superlink import (  # noqa: E402
    REQUEST_OVERHEAD_BYTES,
    SHARE_BYTES_PER_PARTY,
    FleetOnly,
    largest_fleet_request,
)

MiB = 1 << 20


# -- the limit's formula ----------------------------------------------------------------------


def test_the_limit_is_the_largest_legitimate_message():
    chunk = array_chunk_bytes()
    assert chunk == 5 * MiB  # Flower 1.41's array chunk: no honest object carries more of an array
    assert largest_fleet_request(3, chunk_bytes=chunk) == REQUEST_OVERHEAD_BYTES + chunk  # d unknown
    d = 123  # Adult: Newton's packed sums are the longest array, 8 bytes an element
    assert largest_fleet_request(5, d, chunk_bytes=chunk) == REQUEST_OVERHEAD_BYTES + 8 * (d + d * (d + 1) // 2)
    assert largest_fleet_request(5, 2000, chunk_bytes=chunk) == REQUEST_OVERHEAD_BYTES + chunk  # chunked
    assert largest_fleet_request(10_000, 2, chunk_bytes=chunk) == (REQUEST_OVERHEAD_BYTES
                                                                   + 10_000 * SHARE_BYTES_PER_PARTY)


def test_the_launcher_takes_d_for_a_tighter_limit():
    from dperm.multiparty.flower.superlink import _parse

    flower = ["--", "--host", "127.0.0.1", "--port", "9", "--enable-supernode-auth", "--ssl-certfile", "c",
              "--ssl-keyfile", "k", "--ssl-ca-certfile", "a"]
    ours, _, _ = _parse(["--fleet-host", "h", "--fleet-port", "1", "--control-port", "9", "--party-key", "p",
                         "--max-features", "123", *flower])
    assert ours.max_features == 123
    ours, _, _ = _parse(["--fleet-host", "h", "--fleet-port", "1", "--control-port", "9", "--party-key", "p", *flower])
    assert ours.max_features is None  # dperm coordinate does not know d when it starts the SuperLink


# -- FleetOnly as an ASGI app -----------------------------------------------------------------


def _call(app, path="/v1/fleet/push-object", headers=(), bodies=(b"",)):
    """Run one HTTP request through ``app``; return (status, bytes the inner app read, messages received)."""
    sent, pulled = [], []
    queue = [{"type": "http.request", "body": body, "more_body": i + 1 < len(bodies)} for i, body in enumerate(bodies)]

    async def receive():
        message = queue.pop(0) if queue else {"type": "http.disconnect"}
        pulled.append(message)
        return message

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "path": path, "headers": [(k.encode(), v.encode()) for k, v in headers]}
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, len(pulled)


class _Echo:
    """The inner application: reads the whole body and answers 200 with its length."""

    def __init__(self):
        self.bodies = []

    async def __call__(self, scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(len(body)).encode()})


def test_fleet_only_passes_a_body_up_to_the_limit_whole():
    inner = _Echo()
    status, _ = _call(FleetOnly(inner, 10), headers=[("content-length", "10")], bodies=(b"01234", b"56789"))
    assert status == 200 and inner.bodies == [b"0123456789"]


def test_fleet_only_refuses_a_declared_length_above_the_limit_without_reading_it():
    inner = _Echo()
    status, pulled = _call(FleetOnly(inner, 10), headers=[("content-length", str(512 * MiB))], bodies=(b"x" * 11,))
    assert status == 413 and pulled == 0 and inner.bodies == []


@pytest.mark.parametrize("length", ["-1", "1e9", "ten", ""])
def test_fleet_only_refuses_a_malformed_length(length):
    inner = _Echo()
    status, pulled = _call(FleetOnly(inner, 10), headers=[("content-length", length)], bodies=(b"x",))
    assert status == 400 and pulled == 0 and inner.bodies == []


def test_fleet_only_stops_reading_a_chunked_body_at_the_limit():
    inner = _Echo()
    status, pulled = _call(FleetOnly(inner, 10), bodies=(b"x" * 6, b"x" * 6, b"x" * 6, b"x" * 6))
    assert status == 413 and pulled == 2 and inner.bodies == []


def test_fleet_only_still_answers_404_outside_the_fleet_routes():
    inner = _Echo()
    assert _call(FleetOnly(inner, 10), path="/v1/control/start-run")[0] == 404 and inner.bodies == []


# -- a real SuperLink on loopback -------------------------------------------------------------


def _peak_rss_mib(pid: int) -> tuple[float, float]:
    """``(VmRSS, VmHWM)`` of a process in MiB (Linux /proc)."""
    fields = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _post(port: int, ca, *, total: int, chunked: bool, path="/v1/fleet/push-object") -> tuple[bytes, int]:
    """POST ``total`` bytes over TLS (Content-Length or chunked); stop once the server answers.

    Returns the response's status line and how many body bytes were sent.
    """
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            length = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}"
            tls.sendall(f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/protobuf\r\n"
                        f"{length}\r\n\r\n".encode())
            block, sent, answer = b"\0" * MiB, 0, b""
            try:
                while sent < total and not answer:
                    answer = _answer_if_any(tls)
                    if not answer:
                        tls.sendall(f"{len(block):x}\r\n".encode() + block + b"\r\n" if chunked else block)
                        sent += len(block)
                if chunked and not answer:
                    tls.sendall(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass
            if not answer:
                tls.settimeout(30)
                try:
                    answer = tls.recv(4096)
                except (ConnectionResetError, ssl.SSLError):
                    answer = b""
    return answer.split(b"\r\n", 1)[0], sent


def _answer_if_any(tls) -> bytes:
    """The server's response bytes if some have arrived (TLS session tickets alone make a socket readable)."""
    if not select.select([tls], [], [], 0)[0]:
        return b""
    tls.settimeout(0.05)
    try:
        return tls.recv(4096)
    except (TimeoutError, ssl.SSLWantReadError):
        return b""
    finally:
        tls.settimeout(30)


@pytest.mark.slow
def test_a_real_superlink_refuses_an_oversized_body_and_its_memory_stays_flat(tmp_path):
    """Finding 6 repeated: 512 MiB declared, then 64 MiB chunked, on the public port (~15 s)."""
    tls = write_loopback_certificates(tmp_path)
    fleet_port, control_port = free_loopback_ports(2)
    party_key = write_party_key(tmp_path / "party.key")
    args = types.SimpleNamespace(host="127.0.0.1", port=fleet_port, control_port=control_port)
    superlink = subprocess.Popen(
        superlink_command(args, [str(tls[name]) for name in ("server.pem", "server.key", "ca.pem")], [party_key]),
        env=flower_environment(FLWR_HOME=str(tmp_path / "flwr-home")), stdout=open(tmp_path / "superlink.log", "w"),
        stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_port("127.0.0.1", fleet_port, superlink, seconds=60)
        before, _ = _peak_rss_mib(superlink.pid)
        status, declared_sent = _post(fleet_port, tls["ca.pem"], total=512 * MiB, chunked=False)
        assert status == b"HTTP/1.1 413 Request Entity Too Large", status
        assert declared_sent <= 8 * MiB  # refused on its declared length, long before 512 MiB went over the wire
        status, chunked_sent = _post(fleet_port, tls["ca.pem"], total=64 * MiB, chunked=True)
        assert status == b"HTTP/1.1 413 Request Entity Too Large", status
        assert chunked_sent <= 16 * MiB  # read up to the limit (5 MiB + 64 KiB) only
        after, peak = _peak_rss_mib(superlink.pid)
        print(f"RSS before {before:.0f} MiB, after {after:.0f} MiB, peak {peak:.0f} MiB; sent "
              f"{declared_sent / MiB:.0f} MiB (declared 512) and {chunked_sent / MiB:.0f} MiB (chunked)")
        assert peak - before < 48, (before, after, peak)  # was +1,025 MiB for one 512 MiB body
        # a body inside the limit still reaches Flower's Fleet router (which refuses it: no node key)
        status, _ = _post(fleet_port, tls["ca.pem"], total=MiB, chunked=False)
        assert status.startswith(b"HTTP/1.1 ") and b" 413 " not in status, status
        assert superlink.poll() is None
        log = (tmp_path / "superlink.log").read_text()
        limit = largest_fleet_request(1, chunk_bytes=array_chunk_bytes())
        assert f"the public port refuses request bodies above {limit} bytes" in log, log
    finally:
        stop_process_group(superlink, grace_seconds=15)
