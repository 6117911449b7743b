"""The coordinator's locked-down Flower SuperLink (``dperm coordinate`` starts it).

Flower 1.41's ``flower-superlink`` serves its Control API (``flwr run``,
``flwr supernode register``), its Runtime API (the ServerApp's) and its Fleet
API (the SuperNodes') on **one** HTTP port: ``--control-api-address`` is
deprecated and only moves the legacy gRPC Control API, which the HTTP one
shadows (``flwr/superlink/cli/flower_superlink.py``, ``flwr/superlink/main.py``).
With ``--host 0.0.0.0`` anyone who can reach that port could submit a run.
Flower's open-source distribution has no Control API authentication (its
OIDC plugin is in the enterprise edition), so this launcher splits the port:

1. Flower's own ``flower_superlink()`` runs unchanged with ``--host 127.0.0.1
   --port CONTROL_PORT``: Control, Runtime and Fleet APIs on loopback only.
2. It registers the parties' public keys over that loopback Control API
   with Flower's ``RegisterNode`` (what ``flwr supernode register`` sends);
   the SuperLink runs with ``--enable-supernode-auth``, so only those keys
   may connect.
3. Only then a second HTTP server on ``FLEET_HOST:FLEET_PORT`` serves the
   same FastAPI application (same state, same TLS files, Flower's node
   authentication middleware) behind :class:`FleetOnly`, which answers 404
   to every path outside ``/v1/fleet/``. Parties never see a refused
   activation because they connected before their key was registered.
4. That public server refuses every request body longer than the largest
   message an honest SuperNode sends (:func:`largest_fleet_request`, 413
   before Flower reads it), so an unauthenticated client cannot make the
   SuperLink hold more than about twice that per request.

Usage (internal)::

    python -m dperm.multiparty.flower.superlink --fleet-host H --fleet-port P \
        --control-port C --party-key a.pub --party-key b.pub [--parent-pid PID] \
        [--max-features D] -- <flower-superlink arguments>
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

__all__ = ["FleetOnly", "largest_fleet_request", "main", "public_key_bytes"]

#: The only path prefix the public port serves (Flower 1.41's Fleet router).
FLEET_PREFIX = "/v1/fleet/"
_APP = {}

#: Bytes a party's SecAgg+ share-stage message may spend per other party: its
#: encrypted Shamir shares (Fernet tokens of two 32-byte secrets' shares, about
#: 250 bytes) and the node ids, with room to spare.
SHARE_BYTES_PER_PARTY = 1024
#: Allowance for the request's protobuf framing, Flower's object header and
#: metadata (message ids, object tree, run and node ids).
REQUEST_OVERHEAD_BYTES = 64 * 1024
#: Bytes per array element: SecAgg+'s masked integers and dperm's float64 arrays.
ELEMENT_BYTES = 8
#: Bound on one request's headers on the public port (h11's incomplete-event limit).
HEADER_LIMIT_BYTES = 64 * 1024


def largest_fleet_request(n_parties: int, n_features=None, *, chunk_bytes: int) -> int:
    """The largest request body an honest SuperNode sends the Fleet API in a dperm training, in bytes.

    A SuperNode's requests are small control messages (register, activate,
    heartbeat, pull, confirm), its replies' metadata (``push-messages``:
    message ids and the object tree) and their objects, one per
    ``push-object`` request. The largest object is either

    - one array of the reply: at most ``8 D`` bytes with ``D = d + d(d+1)/2``
      (Newton's packed sums; PSGD's reply has ``d`` entries), and Flower
      never sends more than ``chunk_bytes`` of an array in one object (it
      splits arrays into chunks), or
    - the SecAgg+ share stage's record: ``K - 1`` encrypted shares
      (:data:`SHARE_BYTES_PER_PARTY` each).

    So the bound is ``REQUEST_OVERHEAD_BYTES + max(min(chunk_bytes, 8 D),
    K * SHARE_BYTES_PER_PARTY)``. The number of rounds does not enter: every
    round sends the same messages. When ``d`` is not known (``dperm
    coordinate`` starts its SuperLink before the parties describe their
    shards) the array term is ``chunk_bytes``.
    """
    arrays = chunk_bytes
    if n_features is not None:
        d = int(n_features)
        arrays = min(chunk_bytes, ELEMENT_BYTES * (d + d * (d + 1) // 2))
    return REQUEST_OVERHEAD_BYTES + max(arrays, int(n_parties) * SHARE_BYTES_PER_PARTY)


class FleetOnly:
    """ASGI wrapper: pass HTTP requests under :data:`FLEET_PREFIX` with bounded bodies, refuse everything else.

    ``scope["path"]`` is the percent-decoded path Starlette routes on, and
    Starlette does not collapse ``..`` segments, so a path passed here can
    only match a Fleet route. WebSockets and lifespan events are refused
    (the application's lifespan runs once, on the loopback server).

    A body longer than ``max_body_bytes`` (:func:`largest_fleet_request`) is
    answered 413 before Flower sees it: a declared ``Content-Length`` above
    the limit is refused without reading the body (uvicorn stops reading a
    body nobody consumes), and a chunked body is read only up to the limit.
    A request that passes is read whole here (at most ``max_body_bytes``)
    and handed on, so no request makes the process hold more than about
    twice the limit.
    """

    def __init__(self, app, max_body_bytes: int):
        self.app = app
        self.max_body_bytes = int(max_body_bytes)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith(FLEET_PREFIX):
            await self._bounded(scope, receive, send)
        elif scope["type"] == "http":
            await _answer(send, 404, b"only the Fleet API is served on this port\n")
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})

    async def _bounded(self, scope, receive, send):
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.strip().isdigit() or int(declared) > self.max_body_bytes):
            await _answer(send, 413 if declared.strip().isdigit() else 400, self._refusal())
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body_bytes:
                await _answer(send, 413, self._refusal())
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        pending = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
        del chunks

        async def replay():
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, send)

    def _refusal(self) -> bytes:
        return f"request body larger than this training's largest message ({self.max_body_bytes} bytes)\n".encode()


async def _answer(send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def public_key_bytes(path) -> bytes:
    """A party's public key file (OpenSSH, NIST EC curve) as the bytes Flower registers.

    Raises ValueError naming the file when it is not such a key (checked by
    ``dperm coordinate`` before anything starts).
    """
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from flwr.supercore.primitives.asymmetric import public_key_to_bytes, uses_nist_ec_curve

    try:
        key = serialization.load_ssh_public_key(Path(path).read_bytes())
    except (OSError, ValueError, TypeError, UnsupportedAlgorithm) as error:
        raise ValueError(f"--party-key {str(path)!r} is not an OpenSSH public key file ({error}); make one "
                         "with `dperm party keygen`.") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or not uses_nist_ec_curve(key):
        raise ValueError(f"--party-key {str(path)!r} is not an ECDSA key on a NIST curve (Flower's SuperNode "
                         "authentication needs one); make one with `dperm party keygen`.")
    return public_key_to_bytes(key)


def _wait_listening(port: int, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            probe.settimeout(0.5)
            if probe.connect_ex(("127.0.0.1", port)) == 0 and "app" in _APP:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the loopback SuperLink did not listen on 127.0.0.1:{port} within {seconds:g} s")


def register_parties(control_address: str, root_certificates: str, key_paths) -> list:
    """Register each party's public key over the Control API (Flower's ``RegisterNode``); return node ids."""
    from flwr.proto.control_pb2 import RegisterNodeRequest  # pylint: disable=no-name-in-module
    from flwr.supercore.control import ControlHttpClient
    from flwr.supercore.interceptors import RuntimeVersionHttpInterceptor
    from flwr.supercore.retry import make_simple_http_retry_invoker

    client = ControlHttpClient.from_server_address(
        control_address, insecure=False, root_certificates=root_certificates,
        interceptors=[RuntimeVersionHttpInterceptor(component_name="flwr CLI")],
        retry_invoker=make_simple_http_retry_invoker(),
    )
    try:
        node_ids = []
        for path in key_paths:
            response = client.RegisterNode(RegisterNodeRequest(public_key=public_key_bytes(path),
                                                               name=Path(path).stem))
            node_ids.append(int(response.node_id))
        return node_ids
    finally:
        client.close()


def _serve_fleet(args, flower_args) -> None:
    """Register the parties, then serve the Fleet routes on the public address (background thread)."""
    import uvicorn

    from dperm.multiparty.flower._adapter import array_chunk_bytes

    try:
        _wait_listening(args.control_port)
        node_ids = register_parties(f"127.0.0.1:{args.control_port}", flower_args.ssl_ca_certfile, args.party_key)
        print(f"dperm: registered {len(node_ids)} party key(s) as SuperNodes {node_ids}", flush=True)
        limit = largest_fleet_request(len(args.party_key), args.max_features, chunk_bytes=array_chunk_bytes())
        print(f"dperm: the public port refuses request bodies above {limit} bytes", flush=True)
        server = uvicorn.Server(uvicorn.Config(
            FleetOnly(_APP["app"], limit), host=args.fleet_host, port=args.fleet_port, lifespan="off",
            ssl_certfile=flower_args.ssl_certfile, ssl_keyfile=flower_args.ssl_keyfile, access_log=False,
            log_level="warning", http="h11", h11_max_incomplete_event_size=HEADER_LIMIT_BYTES,
        ))
        server.run()
    except BaseException as error:  # the SuperLink must not run half locked-down
        print(f"dperm: error: the Fleet API could not start: {error}", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)


def _parse(argv):
    parser = argparse.ArgumentParser(prog="dperm-superlink", description=__doc__.splitlines()[0])
    parser.add_argument("--fleet-host", required=True)
    parser.add_argument("--fleet-port", type=int, required=True)
    parser.add_argument("--control-port", type=int, required=True)
    parser.add_argument("--party-key", action="append", required=True)
    parser.add_argument("--parent-pid", type=int, default=None, help="stop when this process ends")
    parser.add_argument("--max-features", type=int, default=None,
                        help="the shards' d, when known: a tighter request-size limit (largest_fleet_request)")
    if "--" not in argv:
        parser.error("give the flower-superlink arguments after --")
    split = argv.index("--")
    ours, theirs = parser.parse_args(argv[:split]), argv[split + 1:]
    flower = argparse.ArgumentParser(add_help=False)
    for name in ("--ssl-certfile", "--ssl-keyfile", "--ssl-ca-certfile", "--host", "--port"):
        flower.add_argument(name)
    flower_args, _ = flower.parse_known_args(theirs)
    if flower_args.host != "127.0.0.1" or flower_args.port != str(ours.control_port):
        parser.error("flower-superlink must get --host 127.0.0.1 --port CONTROL_PORT")
    if not (flower_args.ssl_certfile and flower_args.ssl_keyfile and flower_args.ssl_ca_certfile):
        parser.error("node authentication needs TLS: give flower-superlink its three --ssl-* files")
    if "--enable-supernode-auth" not in theirs:
        parser.error("flower-superlink must get --enable-supernode-auth")
    return ours, flower_args, theirs


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, flower_args, theirs = _parse(argv)
    for path in ours.party_key:
        public_key_bytes(path)  # fail before starting anything
    from flwr.supercore.app_utils import start_parent_process_monitor
    from flwr.superlink.cli.flower_superlink import flower_superlink

    if ours.parent_pid is not None:  # a killed `dperm coordinate` takes its SuperLink down
        start_parent_process_monitor(ours.parent_pid)
    from dperm.multiparty.flower._adapter import captured_superlink_app
    from dperm.multiparty.flower.supernode import freeze_imports

    sys.argv = ["flower-superlink", *theirs]
    freeze_imports()
    with captured_superlink_app(_APP):  # to serve its Fleet routes on the public port
        threading.Thread(target=_serve_fleet, args=(ours, flower_args), name="dperm-fleet-api", daemon=True).start()
        flower_superlink()


if __name__ == "__main__":
    main()
