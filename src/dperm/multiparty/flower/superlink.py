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

Usage (internal)::

    python -m dperm.multiparty.flower.superlink --fleet-host H --fleet-port P \
        --control-port C --party-key a.pub --party-key b.pub [--parent-pid PID] \
        -- <flower-superlink arguments>
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

__all__ = ["main", "public_key_bytes"]

#: The only path prefix the public port serves (Flower 1.41's Fleet router).
FLEET_PREFIX = "/v1/fleet/"
_APP = {}


class FleetOnly:
    """ASGI wrapper: pass HTTP requests under :data:`FLEET_PREFIX`, answer 404 to everything else.

    ``scope["path"]`` is the percent-decoded path Starlette routes on, and
    Starlette does not collapse ``..`` segments, so a path passed here can
    only match a Fleet route. WebSockets and lifespan events are refused
    (the application's lifespan runs once, on the loopback server).
    """

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith(FLEET_PREFIX):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body",
                        "body": b"only the Fleet API is served on this port\n"})
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})


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

    try:
        _wait_listening(args.control_port)
        node_ids = register_parties(f"127.0.0.1:{args.control_port}", flower_args.ssl_ca_certfile, args.party_key)
        print(f"dperm: registered {len(node_ids)} party key(s) as SuperNodes {node_ids}", flush=True)
        server = uvicorn.Server(uvicorn.Config(
            FleetOnly(_APP["app"]), host=args.fleet_host, port=args.fleet_port, lifespan="off",
            ssl_certfile=flower_args.ssl_certfile, ssl_keyfile=flower_args.ssl_keyfile, access_log=False,
            log_level="warning",
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

    sys.argv = ["flower-superlink", *theirs]
    with captured_superlink_app(_APP):  # to serve its Fleet routes on the public port
        threading.Thread(target=_serve_fleet, args=(ours, flower_args), name="dperm-fleet-api", daemon=True).start()
        flower_superlink()


if __name__ == "__main__":
    main()
