"""The processes of a Flower deployment: ``dperm party serve`` and ``dperm coordinate``'s work.

:mod:`dperm.multiparty.flower.cli` parses and prints; this module does the rest:

- **party** -- :func:`plan_party` checks the options (floor, ledger and
  budget, shard, TLS files, key) before anything starts and builds the
  commands of a Flower SuperNode run with ``--isolation process``
  (:mod:`~dperm.multiparty.flower.supernode`) and of dperm's task runner
  beside it (:mod:`~dperm.multiparty.flower.party_runtime`, which runs only
  dperm's ClientApp); :func:`supervise_party` runs both and restarts them
  across coordinator restarts. :func:`write_party_key` makes the
  SuperNode's key pair.
- **coordinator** -- :func:`coordinator_settings` assembles the public
  settings (:class:`~dperm.multiparty.flower.app.CoordinatorSettings`) from
  the options, :func:`check_coordinate_files` checks the TLS files and the
  parties' keys, and :func:`run_coordinator` starts the locked-down SuperLink
  (:mod:`~dperm.multiparty.flower.superlink`: Control API on 127.0.0.1 only,
  Fleet API alone on ``--host:--port``, only the listed keys may connect),
  writes the app bundle (:func:`write_flower_app`), submits it with
  ``flwr run``, waits for its status file and stops every process it started.

The option objects are ``dperm``'s parsed arguments (any object with the
same attributes); errors name the command-line option to fix.
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
from dataclasses import dataclass
from pathlib import Path

from dperm.multiparty.flower.party_runtime import (
    APP_MODULE,
    APP_NAME,
    APP_PUBLISHER,
    PARTY_CONFIG_KEY,
    SHIM_TEXT,
    write_party_config,
)

__all__ = [
    "CoordinatorStopped", "DEFAULT_CONNECT_TIMEOUT", "DEFAULT_CONTROL_PORT", "DEFAULT_NODE_PORT",
    "DEFAULT_SUPERLINK_PORT", "NEVER_CONNECTED", "check_coordinate_files", "check_port_free",
    "coordinator_settings", "coordinator_workdir", "flower_command", "flower_environment", "free_loopback_ports",
    "check_party_roster", "party_floor", "party_ledger", "plan_party", "run_coordinator", "stop_process_group",
    "superlink_command", "superlink_environment", "supervise_party", "wait_for_port",
    "write_cli_connection", "write_flower_app", "write_loopback_certificates", "write_party_key",
    "write_party_roster",
]

#: Default port of the SuperLink's Fleet API (the only port the parties reach).
DEFAULT_SUPERLINK_PORT = 9092
#: Default port of its Control and Runtime APIs, always on 127.0.0.1.
DEFAULT_CONTROL_PORT = 9093
#: Default port of a SuperNode's Runtime API (loopback; one per party on a machine).
DEFAULT_NODE_PORT = 9094
#: Default bound on a party's wait for the SuperLink (``--connect-timeout``).
DEFAULT_CONNECT_TIMEOUT = 600.0
CONNECTION = "dperm"


# -- helpers ---------------------------------------------------------------------------


def flower_command(name: str) -> str:
    """Absolute path of a Flower executable, preferring this interpreter's environment."""
    from dperm.multiparty.flower.engine import INSTALL_HINT  # NumPy: only when a command runs

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
    from dperm.multiparty.flower.engine import configure_flower_environment

    environ = configure_flower_environment(dict(os.environ))
    environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + environ.get("PATH", "")
    environ.update(overrides)
    return environ


#: Seconds between the SuperLink's SuperExec polls for a run to launch (Flower's default 1 s).
SUPEREXEC_POLL_SECONDS = 0.1


def superlink_environment() -> dict:
    """:func:`flower_environment` plus a shorter SuperExec poll (``FLWR_SUPEREXEC_TASK_POLL_INTERVAL``).

    The SuperLink's SuperExec checks for a submitted run every second by
    default before it starts the ServerApp process; a value already in the
    environment is kept.
    """
    environ = flower_environment()
    environ.setdefault("FLWR_SUPEREXEC_TASK_POLL_INTERVAL", str(SUPEREXEC_POLL_SECONDS))
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


def party_floor(args):
    """The party's floor from ``--max-epsilon``, ``--max-delta``, ``--max-rounds`` (checked here)."""
    from dperm.privacy.psgd import PartyFloor

    try:
        return PartyFloor(args.max_epsilon, args.max_delta, args.max_rounds,
                          getattr(args, "min_collusion_threshold", 1))
    except ValueError as error:  # name the option
        raise ValueError(str(error).replace("min_collusion_threshold", "--min-collusion-threshold")
                         .replace("max_", "--max-", 1)) from None


def party_ledger(args, floor):
    """The party's ledger (``--ledger``, default ``AUTH_KEY.ledger.json``) and budget, checked before serving."""
    from dperm.multiparty.ledger import PartyLedger
    from dperm.validation import check_delta, check_epsilon

    path = Path(args.ledger or f"{args.auth_key}.ledger.json").resolve()
    if not path.parent.is_dir():
        raise ValueError(f"--ledger {str(path)!r}: its folder does not exist.")
    budget_epsilon = floor.max_epsilon if args.budget_epsilon is None else args.budget_epsilon
    budget_delta = floor.max_delta if args.budget_delta is None else args.budget_delta
    budget = (check_epsilon(budget_epsilon, "--budget-epsilon"), check_delta(budget_delta, "--budget-delta"))
    ledger = PartyLedger(path)
    ledger.spent()  # a corrupt ledger is refused now, naming the file
    return ledger, budget


def write_party_key(path) -> Path:
    """Write a SuperNode key pair: ``path`` (private, mode 0600) and ``path.pub``; return the public file.

    ECDSA on NIST P-384 in OpenSSH format: what Flower 1.41's
    ``flower-supernode --auth-supernode-private-key`` and ``RegisterNode``
    read (``ssh-keygen -t ecdsa -b 384 -N '' -f PATH`` makes the same).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    private_path = Path(path)
    public_path = private_path.with_name(private_path.name + ".pub")
    for existing in (private_path, public_path):
        if existing.exists():
            raise ValueError(f"--out {str(existing)!r} exists; choose a new path (keys are never overwritten).")
    key = ec.generate_private_key(ec.SECP384R1())
    private_bytes = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                      serialization.NoEncryption())
    _write_private_key(private_path, private_bytes)
    public_path.write_bytes(key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                          serialization.PublicFormat.OpenSSH) + b"\n")
    return public_path


def write_party_roster(path, public_key_files) -> Path:
    """Write a party roster: the parties' public key files (``PARTY.pub``), one line each; return ``path``."""
    path = Path(path)
    if path.exists():
        raise ValueError(f"{str(path)!r} exists; choose a new path (a roster is never overwritten).")
    path.write_text("".join(Path(f).read_text(encoding="utf-8").strip() + "\n" for f in public_key_files),
                    encoding="utf-8")
    from dperm.multiparty.flower import _roster

    _roster.load_roster(path)  # checked as a party will read it
    return path


def check_party_roster(auth_key, roster) -> int:
    """Raise ValueError unless ``roster`` is a valid party roster holding ``auth_key``'s public key; return its size."""
    from dperm.multiparty.flower import _roster

    keys = _roster.load_roster(roster)
    try:
        own = _roster.party_public_key(_roster.load_party_key(auth_key))
    except ValueError as error:
        raise ValueError(f"--auth-key {str(auth_key)!r}: {error}") from None
    if own not in keys:
        raise ValueError(f"--roster {str(roster)!r} does not list this party's key ({auth_key}.pub); every "
                         "party's roster lists every party, itself included.")
    return len(keys)


@dataclass(frozen=True)
class PartyPlan:
    """What ``dperm party serve`` runs, checked before anything starts."""

    name: str
    n_samples: int
    features: tuple
    floor: object
    ledger: object
    budget: tuple
    supernode_command: list
    runtime_command: list


def plan_party(args, config_dir) -> PartyPlan:
    """Check a party's options and build its two commands (``dperm party serve``).

    ``config_dir`` is a private folder (mode 0700) that outlives the
    commands: the party's settings are written there, mode 0600
    (:func:`~dperm.multiparty.flower.party_runtime.write_party_config`), and
    the SuperNode's command line carries only that file's path.

    Everything is checked here, before a process starts: the floor, the
    ledger and budget, ``--connect-timeout``, the shard (read once, so a bad
    file fails now rather than in the first round), the TLS root certificate
    and the party's key. Raises ImportError (naming ``dperm[multiparty]``)
    when Flower is missing, ValueError naming the option otherwise.
    """
    from dperm.multiparty.flower._party import load_shard

    floor = party_floor(args)
    ledger, budget = party_ledger(args, floor)
    if not (args.connect_timeout > 0 and math.isfinite(args.connect_timeout)):
        raise ValueError(f"--connect-timeout must be a finite number of seconds > 0; got {args.connect_timeout}.")
    data = Path(args.data).resolve()
    X, _, features = load_shard(data, args.target)  # fail here, not in the first round
    name = args.name or data.stem
    if args.insecure or not args.root_certificates:
        raise ValueError("give --root-certificates CA.pem: the SuperLink is reached over TLS only (Flower's "
                         "node authentication needs it).")
    for option, path in (("--root-certificates", args.root_certificates), ("--auth-key", args.auth_key),
                         ("--roster", args.roster)):
        if not Path(path).is_file():
            raise ValueError(f"{option} {path!r} is not a file.")
    check_party_roster(args.auth_key, args.roster)
    # the settings travel in a 0600 file, not on the command line (/proc/PID/cmdline is world-readable)
    config_path = write_party_config(config_dir, {
        "data-path": str(data), "target": args.target, "party-name": name,
        "max-epsilon": floor.max_epsilon, "max-delta": floor.max_delta, "max-rounds": floor.max_rounds,
        "min-collusion-threshold": floor.min_collusion_threshold, "ledger-path": str(ledger.path),
        "budget-epsilon": budget[0], "budget-delta": budget[1],
        "party-key": str(Path(args.auth_key).resolve()), "party-roster": str(Path(args.roster).resolve()),
    })
    node_config = f"{PARTY_CONFIG_KEY}={_toml_literal(str(config_path), 'the party settings file')}"
    supernode_command = [
        # Flower's flower-supernode with its 3 s wait between pulls shortened (flower.supernode)
        sys.executable, "-m", "dperm.multiparty.flower.supernode", "--parent-pid", str(os.getpid()), "--",
        "--superlink", args.superlink, "--node-config", node_config,
        "--host", "127.0.0.1", "--port", str(args.port), "--isolation", "process",
        "--root-certificates", str(Path(args.root_certificates).resolve()),
        "--auth-supernode-private-key", str(Path(args.auth_key).resolve()),
        "--max-wait-time", repr(float(args.connect_timeout)),
    ]
    runtime_command = [sys.executable, "-m", "dperm.multiparty.flower.party_runtime",
                       "--runtime-api-address", f"127.0.0.1:{args.port}", "--parent-pid", str(os.getpid())]
    return PartyPlan(name=name, n_samples=int(X.shape[0]), features=tuple(features), floor=floor, ledger=ledger,
                     budget=budget, supernode_command=supernode_command, runtime_command=runtime_command)


#: ``supervise_party``'s result when the SuperNode ended before its first connection.
NEVER_CONNECTED = -1
#: What Flower's SuperNode logs once it holds a connection to the SuperLink (start_client_internal.py).
_CONNECTED_LINE = "SuperNode ID:"
#: Seconds between a child's exit and its restart.
RESTART_PAUSE = 2.0


def supervise_party(supernode_command, runtime_command, environ, connect_timeout=None, started=None) -> int:
    """Run the SuperNode and dperm's task runner until SIGTERM/SIGINT, restarting them when they end.

    Flower 1.41's SuperNode exits when it loses its SuperLink for longer
    than ``--max-wait-time`` (``--connect-timeout``) or when a new SuperLink
    does not know its node id (a restarted coordinator); a fresh SuperNode
    registers again. So once the SuperNode has connected (it logs
    ``SuperNode ID``), every exit is followed by a restart, and the party
    serves across coordinator restarts until it is stopped; before the first
    connection an exit ends the party (``--connect-timeout`` bounds only the
    first wait). The party's charges and one-time noise survive restarts in
    its ledger and run state files (:mod:`dperm.multiparty.ledger`).

    ``connect_timeout`` seconds after ``started`` (a ``time.monotonic()``
    value; default: this call), a SuperNode that has not connected yet is
    stopped here: Flower's own ``--max-wait-time`` starts counting only once
    the SuperNode has started (seconds of imports on a busy machine) and is
    checked only between connection attempts, so on its own a 30 s timeout
    ended after 34-50 s.

    Returns 0 when stopped by a signal, :data:`NEVER_CONNECTED` if the
    first connection failed.
    """
    import threading

    environ = dict(environ)
    if environ.get("FLWR_LOG_LEVEL", "INFO").upper() not in ("INFO", "DEBUG"):
        environ["FLWR_LOG_LEVEL"] = "INFO"  # the connection line is logged at INFO
    connected, stopping, children, relays = threading.Event(), [], {}, {}
    # the SuperNode wakes the runner through this pipe when it has a task (supernode.runner_wake); both ends
    # stay open here so that a restarted child gets the same pipe
    wake_read, wake_write = os.pipe()
    supernode_command = _with_option(supernode_command, "--wake-fd", wake_write)
    runtime_command = _with_option(runtime_command, "--wake-fd", wake_read)

    def start_supernode():
        process = subprocess.Popen(supernode_command, env=environ, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace", pass_fds=(wake_write,))

        def relay(stream=process.stdout):
            with stream:  # closed at the SuperNode's end of output
                for line in stream:
                    sys.stdout.write(line)
                    sys.stdout.flush()
                    if _CONNECTED_LINE in line:
                        connected.set()

        relays[process.pid] = threading.Thread(target=relay, daemon=True)
        relays[process.pid].start()
        return process

    def forward(signum, frame):
        stopping.append(signum)
        for process in children.values():
            if process.poll() is None:
                process.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    started = time.monotonic() if started is None else started
    deadline = None if connect_timeout is None else started + float(connect_timeout)
    try:
        children["supernode"] = start_supernode()
        children["runtime"] = subprocess.Popen(runtime_command, env=environ, pass_fds=(wake_read,))
        while not stopping:
            time.sleep(0.2)
            if deadline is not None and not connected.is_set() and time.monotonic() >= deadline:
                _stop_child(children["supernode"], grace_seconds=1.0)  # it never connected: nothing to finish
                return NEVER_CONNECTED
            if children["supernode"].poll() is not None and not stopping:
                relays[children["supernode"].pid].join(timeout=5)  # its last lines are read
                if not connected.is_set():
                    return NEVER_CONNECTED
                print(f"dperm: the SuperNode ended (code {children['supernode'].returncode}): the coordinator's "
                      "SuperLink stopped or restarted; starting a new SuperNode, which waits for it",
                      file=sys.stderr, flush=True)
                time.sleep(RESTART_PAUSE)
                children["supernode"] = start_supernode()
            if children["runtime"].poll() is not None and not stopping:
                print(f"dperm: the party's task runner ended (code {children['runtime'].returncode}); "
                      "restarting it", file=sys.stderr, flush=True)
                time.sleep(RESTART_PAUSE)
                children["runtime"] = subprocess.Popen(runtime_command, env=environ, pass_fds=(wake_read,))
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for process in children.values():
            _stop_child(process)
        os.close(wake_read)
        os.close(wake_write)


def _with_option(command, option: str, value) -> list:
    """``command`` with ``option value`` among dperm's own options: before Flower's ``--``, if it has one."""
    split = command.index("--") if "--" in command else len(command)
    return [*command[:split], option, str(value), *command[split:]]


def _stop_child(process, grace_seconds: float = 10.0) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace_seconds)


# -- dperm coordinate ------------------------------------------------------------------


def write_flower_app(directory: Path, run_config: dict) -> Path:
    """Write the Flower app bundle (``pyproject.toml`` + a shim module) that runs PSGD."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{APP_MODULE}.py").write_text(SHIM_TEXT, encoding="utf-8")
    config_lines = "\n".join(f"{key} = {_toml_value(value)}" for key, value in run_config.items())
    (directory / "pyproject.toml").write_text(
        "[project]\n"
        f'name = "{APP_NAME}"\n'
        'version = "1.0.0"\n'
        'description = "Multiparty private SGD (Rajkumar & Agarwal 2012) with SecAgg+"\n'
        'license = "BSD-3-Clause"\n\n'
        "[tool.flwr.app]\n"
        f'publisher = "{APP_PUBLISHER}"\n\n'
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


def coordinator_workdir(workdir=None) -> Path:
    """The coordinator's work folder (``--workdir``, or a new temp folder): created mode 0700.

    It holds the app bundle, the logs, the status file and the checkpoint,
    which are the coordinator's alone; a folder that already exists is used
    as it is.
    """
    if not workdir:
        return Path(tempfile.mkdtemp(prefix="dperm-coordinate-"))  # mode 0700
    path = Path(workdir).resolve()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def coordinator_settings(args):
    from dperm.multiparty.flower.app import CoordinatorSettings

    if args.shards < 2:
        raise ValueError(f"--shards must be at least 2 (the number of parties); got {args.shards}.")
    if not (args.epsilon > 0 and math.isfinite(args.epsilon)):
        raise ValueError(f"--epsilon must be a finite number > 0; got {args.epsilon}.")
    if not 0 < args.delta < 1:
        raise ValueError(f"--delta must be in the open interval (0, 1); got {args.delta}.")
    if args.rounds < 1:
        raise ValueError(f"--rounds must be a positive integer; got {args.rounds}.")
    if args.protocol == "newton" and (args.coordinator_dp or args.round_epsilon is not None
                                      or args.composition_slack is not None):
        raise ValueError("--coordinator-dp, --round-epsilon and --composition-slack are options of --protocol psgd; "
                         "the Newton protocol calibrates its noise from --epsilon, --delta and --rounds.")
    threshold = getattr(args, "collusion_threshold", 1)
    if not 0 <= threshold <= args.shards - 1:
        raise ValueError(f"--collusion-threshold must be in [0, K - 1] = [0, {args.shards - 1}] for --shards "
                         f"{args.shards}; got {threshold}.")
    if not 0 < args.gradient_share < 1:
        raise ValueError(f"--gradient-share must be in the open interval (0, 1); got {args.gradient_share}.")
    if args.coordinator_dp and (args.round_epsilon is not None or args.composition_slack is not None):
        raise ValueError("--coordinator-dp calibrates the per-round noise from --epsilon, --delta and --rounds; "
                         "it cannot be combined with --round-epsilon or --composition-slack.")
    return CoordinatorSettings(
        n_parties=args.shards, epsilon=args.epsilon, delta=args.delta, alpha=args.alpha, n_rounds=args.rounds,
        data_norm=args.data_norm, loss=args.loss, h=args.h, round_epsilon=args.round_epsilon,
        composition_slack=args.composition_slack, quantization_range=args.quantization_range,
        modulus_range=args.modulus_range, stage_timeout=args.stage_timeout, wait_seconds=args.wait,
        coordinator_dp=args.coordinator_dp, coordinator_accountant=args.coordinator_accountant,
        protocol=args.protocol, gradient_share=args.gradient_share,
        collusion_threshold=int(getattr(args, "collusion_threshold", 1)),
        run_id=_run_id(args),
    )


def _run_id(args) -> str:
    """``--run-id`` (a retry of an earlier training) or a fresh random one (a new training)."""
    from dperm.multiparty.ledger import check_run_id

    if args.run_id is None:
        import secrets

        return secrets.token_hex(16)
    try:
        return check_run_id(args.run_id)
    except ValueError as error:
        raise ValueError(f"--run-id: {error}") from None


def check_coordinate_files(args) -> list:
    """TLS files and the parties' public keys: present and readable, before anything starts."""
    from dperm.multiparty.flower.superlink import public_key_bytes

    if args.insecure or not (args.ssl_certfile and args.ssl_keyfile and args.ssl_ca_certfile):
        # Flower's SuperLink needs all three for TLS, and its node authentication needs TLS
        raise ValueError("give --ssl-certfile, --ssl-keyfile and --ssl-ca-certfile: the SuperLink runs over TLS "
                         "only (Flower's node authentication needs it; --insecure is not supported).")
    for option, path in (("--ssl-certfile", args.ssl_certfile), ("--ssl-keyfile", args.ssl_keyfile),
                         ("--ssl-ca-certfile", args.ssl_ca_certfile)):
        if not Path(path).is_file():
            raise ValueError(f"{option} {path!r} is not a file.")
    keys = [Path(path).resolve() for path in args.party_keys or ()]
    if len(keys) != args.shards:
        raise ValueError(f"--party-keys lists {len(keys)} public key(s) but --shards is {args.shards}: give each "
                         "party's key (dperm party keygen makes them).")
    if len({public_key_bytes(path) for path in keys}) != len(keys):
        raise ValueError("--party-keys lists the same key twice; every party has its own key.")
    if args.control_port == args.port:
        raise ValueError(f"--control-port must differ from --port (both {args.port}).")
    return keys


def check_port_free(host: str, port: int, option: str) -> None:
    """Refuse to start when something already answers on ``host:port`` (e.g. an orphaned SuperLink)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        if probe.connect_ex((host, port)) == 0:
            raise ValueError(
                f"something already listens on {host}:{port} ({option}): an earlier coordinator's SuperLink? "
                "Stop it (or choose another port) first; a new run must not be submitted to it."
            )


class CoordinatorStopped(Exception):
    """SIGTERM/SIGINT reached ``dperm coordinate``: stop the SuperLink and the run, then exit."""


def _raise_stopped(signum, frame):
    raise CoordinatorStopped(signal.Signals(signum).name)


def superlink_command(args, tls, keys) -> list:
    """The locked-down SuperLink: Flower's own, Control API on 127.0.0.1 (:mod:`dperm.multiparty.flower.superlink`)."""
    return [sys.executable, "-m", "dperm.multiparty.flower.superlink", "--fleet-host", args.host,
            "--fleet-port", str(args.port), "--control-port", str(args.control_port),
            "--parent-pid", str(os.getpid()),
            *[item for key in keys for item in ("--party-key", str(key))], "--",
            "--host", "127.0.0.1", "--port", str(args.control_port), "--enable-supernode-auth",
            "--disable-runtime-dependency-installation",
            "--ssl-certfile", tls[0], "--ssl-keyfile", tls[1], "--ssl-ca-certfile", tls[2]]





@dataclass(frozen=True)
class CoordinatorOutcome:
    """How a ``dperm coordinate`` run ended: the ServerApp's status file (None if it wrote none)."""

    status: dict | None
    workdir: Path
    out: Path
    seconds: float
    run_log_tail: str


def run_coordinator(args, settings, keys, on_listening=None) -> CoordinatorOutcome:
    """Start the locked-down SuperLink, submit dperm's app with ``flwr run``, wait, stop both.

    ``on_listening()`` is called once the SuperLink's Fleet API accepts the
    parties. Every process started here is stopped before returning, also
    on SIGTERM/SIGINT, which raise :class:`CoordinatorStopped`.
    """
    connect_host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
    check_port_free(connect_host, args.port, "--port")
    check_port_free("127.0.0.1", args.control_port, "--control-port")
    out = Path(args.out).resolve()
    workdir = coordinator_workdir(args.workdir)
    status_path = workdir / "status.json"
    status_path.unlink(missing_ok=True)
    run_config = {**settings.to_run_config(), "out": str(out), "status": str(status_path)}
    app_dir = write_flower_app(workdir / "app", run_config)
    tls = [str(Path(path).resolve()) for path in (args.ssl_certfile, args.ssl_keyfile, args.ssl_ca_certfile)]
    # `flwr run` reaches the Control API on this machine's loopback only
    write_cli_connection(workdir / "flwr-cli-home", f"127.0.0.1:{args.control_port}", tls[2])
    superlink_log = workdir / "superlink.log"
    run_log = workdir / "run.log"
    superlink = run = None
    started = time.monotonic()
    previous = {sig: signal.signal(sig, _raise_stopped) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        with superlink_log.open("w", encoding="utf-8") as log:
            superlink = subprocess.Popen(superlink_command(args, tls, keys), env=superlink_environment(), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for_port(connect_host, args.port, superlink, seconds=60)  # listens once the keys are registered
        except RuntimeError as error:
            raise RuntimeError(f"{error}\n{_tail(superlink_log)}") from None
        if on_listening is not None:
            on_listening()
        with run_log.open("w", encoding="utf-8") as log:
            run = subprocess.Popen([flower_command("flwr"), "run", str(app_dir), CONNECTION, "--stream"],
                                   env=flower_environment(FLWR_HOME=str(workdir / "flwr-cli-home")),
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = started + args.wait + settings.n_rounds * 4 * (args.stage_timeout or 600) + 120
        while run.poll() is None and not status_path.exists():
            if time.monotonic() > deadline:
                raise TimeoutError("the Flower run did not finish in time.")
            time.sleep(0.2)
        for _ in range(150):  # the ServerApp writes the status file as its last act
            if status_path.exists():
                break
            time.sleep(0.2)
    finally:
        stop_process_group(run)
        stop_process_group(superlink)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    status = json.loads(status_path.read_text(encoding="utf-8")) if status_path.exists() else None
    return CoordinatorOutcome(status=status, workdir=workdir, out=out, seconds=time.monotonic() - started,
                              run_log_tail=_tail(run_log))


def write_loopback_certificates(directory) -> dict:
    """A throwaway CA and a certificate for 127.0.0.1 signed by it: ``ca.pem``, ``server.pem``, ``server.key``.

    For trying the deployment on one machine (tests, ``benchmarks/secure_sum.py``): valid for one
    day, for 127.0.0.1 only. A real deployment uses certificates from the operator's own CA.
    """
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    valid = dict(not_valid_before=now - datetime.timedelta(minutes=5), not_valid_after=now + datetime.timedelta(days=1))
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dperm loopback CA")])

    def certificate(subject, public_key):
        builder = x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(public_key)
        builder = builder.serial_number(x509.random_serial_number())
        return builder.not_valid_before(valid["not_valid_before"]).not_valid_after(valid["not_valid_after"])

    ca = certificate(ca_name, ca_key.public_key()).add_extension(
        x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256())
    server = certificate(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]), key.public_key())
    server = server.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False).sign(ca_key, hashes.SHA256())
    pem = serialization.Encoding.PEM
    paths = {name: directory / name for name in ("ca.pem", "server.pem", "server.key")}
    paths["ca.pem"].write_bytes(ca.public_bytes(pem))
    paths["server.pem"].write_bytes(server.public_bytes(pem))
    _write_private_key(paths["server.key"], key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                              serialization.NoEncryption()))
    return paths


def _write_private_key(path, data: bytes) -> None:
    """Create ``path`` with mode 0600 from the start (``O_EXCL``: never an existing file) and write ``data``."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
