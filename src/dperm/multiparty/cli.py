"""``dperm party serve`` and ``dperm coordinate``: multiparty PSGD across machines on Flower.

Thin: parse, start Flower's processes, print. The protocol is in
:mod:`dperm.multiparty.flower_app`; Flower is needed only when a command
runs (``pip install 'dperm[multiparty]'``).

- ``dperm party serve --data shard.csv --superlink HOST:PORT --max-epsilon EPS
  --max-delta DELTA --max-rounds T`` runs a Flower SuperNode for one party
  (004 Proc. 3) with the shard's path and the party's own floor in its node
  config; the data never leave the machine, only SecAgg+-masked replies, and
  the party refuses a set-up weaker than its floor.
- ``dperm coordinate --shards K --epsilon EPS --out model.json`` starts a
  Flower SuperLink, submits the PSGD ServerApp (004 Alg. 1) as a Flower run,
  waits for it, writes the model file and stops the SuperLink.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dperm.multiparty.flower_engine import INSTALL_HINT, configure_flower_environment
from dperm.multiparty.secure_sum import DEFAULT_MODULUS_RANGE, DEFAULT_QUANTIZATION_RANGE

#: Default port of the SuperLink (Flower 1.41 serves its Fleet, Control and
#: ServerAppIo APIs over one HTTP port).
DEFAULT_SUPERLINK_PORT = 9092
#: Default port of a SuperNode's ClientAppIo API (one per party on a machine).
DEFAULT_NODE_PORT = 9094
#: The Flower app bundle's module: a shim that imports dperm's apps.
APP_MODULE = "dperm_psgd_app"
CONNECTION = "dperm"


# -- helpers ---------------------------------------------------------------------------


def flower_command(name: str) -> str:
    """Absolute path of a Flower executable, preferring this interpreter's environment."""
    bin_dir = str(Path(sys.executable).parent)
    found = shutil.which(name, path=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    if found is None:
        raise FileNotFoundError(f"the Flower command {name!r} was not found; {INSTALL_HINT}")
    return found


def flower_environment(**overrides) -> dict:
    """The environment for Flower's processes: ours, with Flower's settings and this venv's bin first.

    Flower's SuperLink and SuperNode start ``flower-superexec`` by name, so
    the interpreter's ``bin`` directory goes first on ``PATH``.
    """
    environ = configure_flower_environment(dict(os.environ))
    environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + environ.get("PATH", "")
    environ.update(overrides)
    return environ


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"run-config values must be finite; got {value!r}.")
        return repr(value)
    return json.dumps(str(value))


def _toml_literal(text: str, what: str) -> str:
    """A TOML literal string (no escapes), as Flower's ``--node-config`` parser needs."""
    if "'" in text or "\n" in text:
        raise ValueError(f"{what} {text!r} must not contain a single quote or a newline.")
    return f"'{text}'"


def wait_for_port(host: str, port: int, process, seconds: float) -> None:
    """Wait until ``host:port`` accepts connections; raise if ``process`` exits or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the SuperLink exited with code {process.returncode} before listening.")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.settimeout(0.5)
            if probe.connect_ex((host, port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the SuperLink did not listen on {host}:{port} within {seconds:g} s.")


def free_loopback_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 now (bound to port 0, then released)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def stop_process_group(process, grace_seconds: float = 10.0) -> None:
    """SIGTERM the process group ``process`` leads, then SIGKILL what is left."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=grace_seconds)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# -- dperm party serve -----------------------------------------------------------------


def _party_floor(args):
    """The party's floor from ``--max-epsilon``, ``--max-delta``, ``--max-rounds`` (checked here)."""
    from dperm.multiparty.privacy import PartyFloor

    try:
        return PartyFloor(args.max_epsilon, args.max_delta, args.max_rounds)
    except ValueError as error:
        raise ValueError(str(error).replace("max_", "--max-", 1)) from None  # name the option


def _party_serve(args) -> int:
    try:
        from dperm.multiparty.flower_app import load_shard
    except ImportError as error:
        print(f"dperm: error: {error}", file=sys.stderr)
        return 2
    floor = _party_floor(args)
    data = Path(args.data).resolve()
    X, _, features = load_shard(data, args.target)  # fail here, not in the first round
    name = args.name or data.stem
    node_config = " ".join([
        f"data-path={_toml_literal(str(data), '--data')}",
        f"target={_toml_literal(args.target, '--target')}",
        f"party-name={_toml_literal(name, '--name')}",
        f"max-epsilon={_toml_value(floor.max_epsilon)}",
        f"max-delta={_toml_value(floor.max_delta)}",
        f"max-rounds={_toml_value(floor.max_rounds)}",
    ])
    command = [flower_command("flower-supernode"), "--superlink", args.superlink, "--node-config", node_config,
               "--host", args.host, "--port", str(args.port)]
    if args.insecure:
        command.append("--insecure")
    elif args.root_certificates:
        command += ["--root-certificates", str(Path(args.root_certificates).resolve())]
    else:
        raise ValueError("give --root-certificates CA.pem for a TLS SuperLink, or --insecure for plain text "
                         "(only on a trusted network: the masked vectors are protected, the metadata is not).")
    print(f"party {name!r}: {X.shape[0]} rows, {X.shape[1]} features ({', '.join(features)}); "
          f"accepts at most ({floor.max_epsilon:g}, {floor.max_delta:g})-DP over at most {floor.max_rounds} "
          f"rounds; serving as a Flower SuperNode for SuperLink {args.superlink}", flush=True)
    process = subprocess.Popen(command, env=flower_environment())
    forward = lambda signum, frame: process.send_signal(signum)  # noqa: E731
    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


# -- dperm coordinate ------------------------------------------------------------------


def write_flower_app(directory: Path, run_config: dict) -> Path:
    """Write the Flower app bundle (``pyproject.toml`` + a shim module) that runs PSGD."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{APP_MODULE}.py").write_text(
        '"""Flower app bundle of dperm coordinate: the apps live in the installed dperm."""\n'
        "from dperm.multiparty import flower_app\n\n"
        "server_app = flower_app.server_app\n"
        "client_app = flower_app.client_app\n",
        encoding="utf-8",
    )
    config_lines = "\n".join(f"{key} = {_toml_value(value)}" for key, value in run_config.items())
    (directory / "pyproject.toml").write_text(
        "[project]\n"
        'name = "dperm-psgd"\n'
        'version = "1.0.0"\n'
        'description = "Multiparty private SGD (Rajkumar & Agarwal 2012) with SecAgg+"\n'
        'license = "BSD-3-Clause"\n\n'
        "[tool.flwr.app]\n"
        'publisher = "dperm"\n\n'
        "[tool.flwr.app.components]\n"
        f'serverapp = "{APP_MODULE}:server_app"\n'
        f'clientapp = "{APP_MODULE}:client_app"\n\n'
        "[tool.flwr.app.config]\n"
        f"{config_lines}\n",
        encoding="utf-8",
    )
    return directory


def write_cli_connection(flwr_home: Path, address: str, root_certificates=None) -> None:
    """``flwr run``'s SuperLink connection, in a Flower home of its own."""
    flwr_home.mkdir(parents=True, exist_ok=True)
    security = (f"root-certificates = {json.dumps(str(root_certificates))}" if root_certificates
                else "insecure = true")
    (flwr_home / "config.toml").write_text(
        f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
        f'address = "{address}"\n{security}\n',
        encoding="utf-8",
    )


def _settings_from_args(args):
    from dperm.multiparty.flower_app import CoordinatorSettings

    if args.shards < 2:
        raise ValueError(f"--shards must be at least 2 (the number of parties); got {args.shards}.")
    if not (args.epsilon > 0 and math.isfinite(args.epsilon)):
        raise ValueError(f"--epsilon must be a finite number > 0; got {args.epsilon}.")
    if not 0 < args.delta < 1:
        raise ValueError(f"--delta must be in the open interval (0, 1); got {args.delta}.")
    if args.rounds < 1:
        raise ValueError(f"--rounds must be a positive integer; got {args.rounds}.")
    if args.coordinator_dp and (args.round_epsilon is not None or args.composition_slack is not None):
        raise ValueError("--coordinator-dp calibrates the per-round noise from --epsilon, --delta and --rounds; "
                         "it cannot be combined with --round-epsilon or --composition-slack.")
    return CoordinatorSettings(
        n_parties=args.shards, epsilon=args.epsilon, delta=args.delta, alpha=args.alpha, n_rounds=args.rounds,
        data_norm=args.data_norm, loss=args.loss, h=args.h, round_epsilon=args.round_epsilon,
        composition_slack=args.composition_slack, quantization_range=args.quantization_range,
        modulus_range=args.modulus_range, stage_timeout=args.stage_timeout, wait_seconds=args.wait,
        coordinator_dp=args.coordinator_dp, coordinator_accountant=args.coordinator_accountant,
    )


def _coordinate(args) -> int:
    try:
        settings = _settings_from_args(args)
    except ImportError as error:
        print(f"dperm: error: {error}", file=sys.stderr)
        return 2
    if not args.insecure and not (args.ssl_certfile and args.ssl_keyfile and args.ssl_ca_certfile):
        # Flower's SuperLink needs all three for TLS, and `flwr run` verifies it with the CA
        raise ValueError("give --ssl-certfile, --ssl-keyfile and --ssl-ca-certfile (TLS), or --insecure for "
                         "plain text on a trusted network.")
    if not args.insecure:
        for option, path in (("--ssl-certfile", args.ssl_certfile), ("--ssl-keyfile", args.ssl_keyfile),
                             ("--ssl-ca-certfile", args.ssl_ca_certfile)):
            if not Path(path).is_file():
                raise ValueError(f"{option} {path!r} is not a file.")
    out = Path(args.out).resolve()
    workdir = Path(args.workdir).resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="dperm-coordinate-"))
    workdir.mkdir(parents=True, exist_ok=True)
    status_path = workdir / "status.json"
    status_path.unlink(missing_ok=True)
    run_config = {**settings.to_run_config(), "out": str(out), "status": str(status_path)}
    app_dir = write_flower_app(workdir / "app", run_config)
    connect_host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
    address = f"{connect_host}:{args.port}"
    tls = None if args.insecure else [str(Path(path).resolve())
                                      for path in (args.ssl_certfile, args.ssl_keyfile, args.ssl_ca_certfile)]
    write_cli_connection(workdir / "flwr-cli-home", address, tls[2] if tls else None)

    superlink_command = [flower_command("flower-superlink"), "--host", args.host, "--port", str(args.port),
                         "--disable-runtime-dependency-installation"]
    if tls:
        superlink_command += ["--ssl-certfile", tls[0], "--ssl-keyfile", tls[1], "--ssl-ca-certfile", tls[2]]
    else:
        superlink_command.append("--insecure")
    superlink_log = workdir / "superlink.log"
    run_log = workdir / "run.log"
    superlink = run = None
    started = time.monotonic()
    try:
        with superlink_log.open("w", encoding="utf-8") as log:
            superlink = subprocess.Popen(superlink_command, env=flower_environment(), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_port(connect_host, args.port, superlink, seconds=60)
        print(f"SuperLink listening on {args.host}:{args.port}; waiting for {settings.n_parties} parties "
              f"(dperm party serve --superlink {address} ...), then {settings.n_rounds} SecAgg+ rounds",
              flush=True)
        with run_log.open("w", encoding="utf-8") as log:
            run = subprocess.Popen([flower_command("flwr"), "run", str(app_dir), CONNECTION, "--stream"],
                                   env=flower_environment(FLWR_HOME=str(workdir / "flwr-cli-home")),
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = started + args.wait + settings.n_rounds * 4 * (args.stage_timeout or 600) + 120
        while run.poll() is None and not status_path.exists():
            if time.monotonic() > deadline:
                raise TimeoutError("the Flower run did not finish in time.")
            time.sleep(1.0)
        for _ in range(30):  # the ServerApp writes the status file as its last act
            if status_path.exists():
                break
            time.sleep(1.0)
    finally:
        stop_process_group(run)
        stop_process_group(superlink)
    if not status_path.exists():
        print(f"dperm: error: the Flower run ended without a result; logs in {workdir}.\n{_tail(run_log)}",
              file=sys.stderr)
        return 1
    status = json.loads(status_path.read_text(encoding="utf-8"))
    if not status["ok"]:
        print(f"dperm: error: {status['error']} (logs in {workdir})", file=sys.stderr)
        return 1
    print(status["summary"])
    if status.get("round_seconds"):
        rounds = sorted(status["round_seconds"])
        print(f"SecAgg+ rounds: median {rounds[len(rounds) // 2]:.1f} s over {len(rounds)} rounds")
    print(f"finished in {time.monotonic() - started:.1f} s; model written to {out}")
    return 0


# -- the parser ------------------------------------------------------------------------


def add_commands(subparsers) -> None:
    """Add ``party`` (``party serve``) and ``coordinate`` to ``dperm``'s subcommands."""
    party = subparsers.add_parser("party", help="take part in multiparty training (Flower SuperNode)")
    party_sub = party.add_subparsers(dest="party_command", required=True)
    serve = party_sub.add_parser("serve", help="serve one party's shard to a coordinator (SecAgg+)")
    serve.add_argument("--data", required=True, help="CSV shard: header, numeric features, label column")
    serve.add_argument("--superlink", required=True, help="the coordinator's SuperLink as HOST:PORT")
    serve.add_argument("--target", default="label", help="label column, -1/+1 or 0/1 (default label)")
    serve.add_argument("--name", default=None, help="party name used in messages (default: file stem)")
    serve.add_argument("--max-epsilon", type=float, required=True,
                       help="largest epsilon this party accepts: for the coordinator's target and for the "
                            "guarantee of the coordinator's whole view over the rounds, which the party "
                            "recomputes itself (004's scheme: about rounds x round epsilon)")
    serve.add_argument("--max-delta", type=float, required=True,
                       help="largest delta this party accepts, likewise (in [0, 1))")
    serve.add_argument("--max-rounds", type=int, required=True,
                       help="most gradient rounds this party answers in one run")
    serve.add_argument("--host", default="127.0.0.1", help="address of the node's local ClientApp API")
    serve.add_argument("--port", type=int, default=DEFAULT_NODE_PORT,
                       help=f"port of the node's local ClientApp API (default {DEFAULT_NODE_PORT}; one per party)")
    serve.add_argument("--insecure", action="store_true", help="plain-text connection (trusted networks only)")
    serve.add_argument("--root-certificates", default=None, help="CA certificate of a TLS SuperLink")
    serve.set_defaults(func=_party_serve)

    coordinate = subparsers.add_parser("coordinate", help="run multiparty private SGD (004) over SecAgg+")
    coordinate.add_argument("--shards", type=int, required=True, help="K, the number of parties")
    coordinate.add_argument("--epsilon", type=float, required=True)
    coordinate.add_argument("--delta", type=float, default=1e-5)
    coordinate.add_argument("--alpha", type=float, default=0.01, help="L2 strength lambda (default 0.01)")
    coordinate.add_argument("--rounds", type=int, default=10,
                            help="T, gradient rounds (default 10; each is one SecAgg+ round, ~25 s over a network)")
    coordinate.add_argument("--data-norm", type=float, default=1.0, help="public row norm bound R (default 1)")
    coordinate.add_argument("--loss", choices=("logistic", "huber"), default="logistic")
    coordinate.add_argument("--h", type=float, default=0.5, help="Huber width (default 0.5)")
    coordinate.add_argument("--round-epsilon", type=float, default=None,
                            help="per-round epsilon of the coordinator's view (default: --epsilon)")
    coordinate.add_argument("--composition-slack", type=float, default=None,
                            help="delta' of the advanced composition (default: --delta)")
    coordinate.add_argument("--coordinator-dp", action="store_true",
                            help="per-round Gaussian noise calibrated with dp-accounting so that the "
                                 "coordinator's whole view is (epsilon, delta)-DP (beyond 004; see README)")
    coordinate.add_argument("--coordinator-accountant", choices=("pld", "rdp"), default="pld",
                            help="dp-accounting's accountant for --coordinator-dp (default pld)")
    coordinate.add_argument("--quantization-range", type=int, default=DEFAULT_QUANTIZATION_RANGE)
    coordinate.add_argument("--modulus-range", type=int, default=DEFAULT_MODULUS_RANGE)
    coordinate.add_argument("--host", default="127.0.0.1", help="SuperLink address (0.0.0.0: all interfaces)")
    coordinate.add_argument("--port", type=int, default=DEFAULT_SUPERLINK_PORT,
                            help=f"SuperLink port (default {DEFAULT_SUPERLINK_PORT})")
    coordinate.add_argument("--insecure", action="store_true", help="plain-text connections (trusted networks only)")
    coordinate.add_argument("--ssl-certfile", default=None, help="TLS: the SuperLink's certificate (PEM)")
    coordinate.add_argument("--ssl-keyfile", default=None, help="TLS: its private key (PEM)")
    coordinate.add_argument("--ssl-ca-certfile", default=None,
                            help="TLS: the CA certificate that signed it (PEM; the parties' --root-certificates)")
    coordinate.add_argument("--wait", type=float, default=300.0, help="seconds to wait for the parties (300)")
    coordinate.add_argument("--stage-timeout", type=float, default=300.0,
                            help="seconds to wait for replies at each SecAgg+ stage (300)")
    coordinate.add_argument("--workdir", default=None, help="folder for the app bundle and logs (default: temp)")
    coordinate.add_argument("--out", required=True, help="model file to write (JSON)")
    coordinate.set_defaults(func=_coordinate)
