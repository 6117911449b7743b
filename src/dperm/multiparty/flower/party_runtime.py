"""The party's ClientApp runner: a SuperNode that runs dperm's app and nothing else.

A Flower SuperNode in its default ``--isolation subprocess`` mode installs
the FAB of whatever run the SuperLink hands it and imports the ClientApp the
FAB names, so whoever can start a run executes code on every party.
Flower 1.41's own guard, ``--trusted-entities``, only accepts FABs signed
through the Flower platform (``valid_license`` in the FAB's verifications;
``flwr/supernode/start_client_internal.py``), which a locally built app
never is. ``dperm party serve`` therefore starts its SuperNode with
``--isolation process`` (Flower's documented mode for an external
executor) and runs this loop beside it, on the SuperNode's loopback Runtime
API:

- it acquires only ``flwr-clientapp`` tasks;
- it **never installs or imports the FAB**: the code that answers is the
  installed :data:`dperm.multiparty.flower.app.client_app`, whatever the run
  says, so a foreign app cannot run its code here;
- before calling that ClientApp (which is what reads ``data-path``) it checks
  that the run's FAB is dperm's bundle (:func:`check_dperm_fab`: the same
  two files, the shim byte for byte, dperm's components, dperm's run-config
  keys) and otherwise replies with a Flower error and reads nothing.

The party's settings (shard path, floor, budget, ledger, key and roster
paths) travel to the SuperNode as one ``--node-config`` value,
``party-config``, the path of a 0600 JSON file ``dperm party serve`` writes
(:func:`write_party_config`), so that the command line every user of the
machine can read (``/proc/PID/cmdline``) names neither the data nor the
budget; this runner reads the file (:func:`expanded_node_config`) for the
ClientApp and gives the SuperNode its context back as it was.

The FAB check is a second line: whatever FAB passes it names dperm's own
ServerApp and ClientApp, so a run that passes is a dperm PSGD run, and each
party still checks the calibration against its own floor
(:func:`~dperm.multiparty.privacy.check_psgd_calibration`).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import select
import sys
import time
import tomllib
import zipfile

__all__ = [
    "APP_ID", "APP_MODULE", "APP_NAME", "APP_PUBLISHER", "ForeignAppError", "PARTY_CONFIG_KEY", "SHIM_TEXT",
    "WAKE_FALLBACK_SECONDS", "check_dperm_fab", "expanded_node_config", "main", "serve", "wait_for_wake",
    "write_party_config",
]

#: The ``--node-config`` key whose value is the path of the party's settings file.
PARTY_CONFIG_KEY = "party-config"
#: Name of that file in the private folder ``dperm party serve`` makes for it.
PARTY_CONFIG_NAME = "party-config.json"

#: The Flower app bundle's module: a shim that imports dperm's apps.
APP_MODULE = "dperm_psgd_app"
APP_NAME = "dperm-psgd"
APP_PUBLISHER = "dperm"
APP_ID = f"{APP_PUBLISHER}/{APP_NAME}"
SHIM_TEXT = (
    '"""Flower app bundle of dperm coordinate: the apps live in the installed dperm."""\n'
    "from dperm.multiparty.flower import app\n\n"
    "server_app = app.server_app\n"
    "client_app = app.client_app\n"
)
COMPONENTS = {"serverapp": f"{APP_MODULE}:server_app", "clientapp": f"{APP_MODULE}:client_app"}
#: Files of the bundle (Flower adds its ``.info/CONTENT`` manifest).
FAB_FILES = frozenset({"pyproject.toml", f"{APP_MODULE}.py", ".info/CONTENT"})


class ForeignAppError(RuntimeError):
    """The run's app bundle is not dperm's: the party refuses it."""


def dperm_run_config_keys() -> frozenset:
    """The run-config keys of a dperm run: the coordinator's settings, ``out`` and ``status``."""
    from dataclasses import fields

    from dperm.multiparty.flower.app import CoordinatorSettings

    return frozenset({field.name.replace("_", "-") for field in fields(CoordinatorSettings)} | {"out", "status"})


def check_dperm_fab(fab_id: str, fab_content: bytes, fab_hash: str, config_keys=None) -> None:
    """Raise :class:`ForeignAppError` unless the FAB is dperm's PSGD bundle.

    Checks the run's app id, that ``fab_hash`` is the SHA-256 of the content,
    the file list, the shim module byte for byte, the project name,
    publisher and components, and the run-config keys (``config_keys``,
    default :func:`dperm_run_config_keys`).
    """
    if fab_id != APP_ID:
        raise ForeignAppError(f"the run's app is {fab_id!r}, not dperm's {APP_ID!r}")
    if hashlib.sha256(fab_content).hexdigest() != fab_hash:
        raise ForeignAppError("the run's app bundle does not match its hash")
    try:
        with zipfile.ZipFile(io.BytesIO(fab_content)) as bundle:
            names = set(bundle.namelist())
            if not names <= FAB_FILES or "pyproject.toml" not in names:
                raise ForeignAppError(f"the run's app bundle holds {sorted(names)}, not dperm's files")
            if bundle.read(f"{APP_MODULE}.py").decode("utf-8") != SHIM_TEXT:
                raise ForeignAppError(f"the run's {APP_MODULE}.py is not dperm's shim")
            project = tomllib.loads(bundle.read("pyproject.toml").decode("utf-8"))
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ForeignAppError(f"the run's app bundle is not dperm's ({error})") from None
    app = project.get("tool", {}).get("flwr", {}).get("app", {})
    if (project.get("project", {}).get("name") != APP_NAME or app.get("publisher") != APP_PUBLISHER
            or app.get("components") != COMPONENTS):
        raise ForeignAppError("the run's pyproject.toml does not name dperm's apps")
    expected = dperm_run_config_keys() if config_keys is None else frozenset(config_keys)
    if set(app.get("config", {})) != expected:
        raise ForeignAppError("the run's configuration keys are not dperm's")


def write_party_config(directory, config: dict):
    """Write the party's node config to ``directory/party-config.json``, created mode 0600; return its path.

    ``O_EXCL``: never an existing file. The values are strings and numbers
    (what ``--node-config`` would have carried).
    """
    from pathlib import Path

    path = Path(directory) / PARTY_CONFIG_NAME
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    return path


def expanded_node_config(node_config) -> dict:
    """``node_config`` with its ``party-config`` file's values in place of that key (unchanged without one)."""
    node_config = dict(node_config)
    path = node_config.pop(PARTY_CONFIG_KEY, None)
    if path is None:
        return node_config
    try:
        with open(path, encoding="utf-8") as handle:
            values = json.load(handle)
    except (OSError, ValueError) as error:
        raise ValueError(f"the party's settings file {path!r} cannot be read ({error}); restart dperm party "
                         "serve.") from None
    if not isinstance(values, dict):
        raise ValueError(f"the party's settings file {path!r} does not hold a JSON object.")
    return {**node_config, **values}


def _runtime_client(address: str, component: str, token: str | None = None):
    from flwr.supercore.interceptors import RuntimeTokenHttpInterceptor, RuntimeVersionHttpInterceptor
    from flwr.supercore.retry import make_simple_http_retry_invoker
    from flwr.supercore.runtime import RuntimeHttpClient

    interceptors = [RuntimeVersionHttpInterceptor(component_name=component)]
    if token is not None:
        interceptors.append(RuntimeTokenHttpInterceptor(token))
    return RuntimeHttpClient.from_server_address(address, insecure=True, root_certificates=None,
                                                 interceptors=interceptors,
                                                 retry_invoker=make_simple_http_retry_invoker())


def _answer(client_app, message, context):
    """``client_app``'s reply, with the party's settings file read into the context for the call only."""
    original = context.node_config
    context.node_config = expanded_node_config(original)  # the settings, for dperm's ClientApp only
    try:
        return client_app(message=message, context=context)
    finally:
        context.node_config = original  # the SuperNode gets back the config it gave


def run_task(address: str, token: str, client_app, log=print) -> bool:
    """Run one ClientApp task with dperm's ClientApp; return False if the run was refused.

    Mirrors Flower's ``run_clientapp`` (pull the task, answer, push the
    reply and the context) except that it never installs or loads the FAB.
    """
    from flwr.app import Message
    from flwr.app.error import Error
    from flwr.common.constant import ErrorCode, SubStatus
    from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
    from flwr.supernode.runtime.run_clientapp import pull_task_input, push_message, push_task_output

    client = _runtime_client(address, "flwr-clientapp", token)
    heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
    heartbeat.start()
    message = context = reply = None
    sub_status, details, accepted = SubStatus.FAILED, "the task failed", True
    try:
        message, context, run, fab = pull_task_input(client)
        try:
            check_dperm_fab(run.fab_id, fab.content, fab.hash_str)
        except ForeignAppError as error:
            accepted, details = False, f"dperm party refuses run {run.run_id}: {error}"
            log(f"dperm: {details}; nothing was read or sent")
            reply = Message(Error(code=ErrorCode.INVALID_FAB, reason=details), reply_to=message)
        else:
            reply = _answer(client_app, message, context)
            sub_status, details = SubStatus.COMPLETED, ""
    except Exception as error:  # noqa: BLE001  (Flower's run_clientapp answers every failure with an Error)
        details = f"{type(error).__name__}: {error}"
        log(f"dperm: the ClientApp raised {details}")
        if message is not None:
            reply = Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=details), reply_to=message)
    finally:
        try:
            if reply is not None and context is not None:
                push_message(client, reply, context)
            push_task_output(client, context, sub_status, details)
        finally:
            heartbeat.stop()
            client.close()
    return accepted


#: With a wake-up pipe: the longest wait between ``AcquireTask`` calls when no wake-up comes.
WAKE_FALLBACK_SECONDS = 0.5


def wait_for_wake(wake_fd: int, timeout: float) -> None:
    """Wait until the SuperNode writes to ``wake_fd`` or ``timeout`` seconds pass; drain what it wrote.

    At end of file (the SuperNode's end closed everywhere) this waits the
    whole ``timeout``, as a plain poll would.
    """
    readable, _, _ = select.select([wake_fd], [], [], timeout)
    if readable and not os.read(wake_fd, 4096):
        time.sleep(timeout)


def serve(address: str, poll_seconds: float | None = None, wake_fd: int | None = None) -> None:
    """Acquire ClientApp tasks from the SuperNode at ``address`` and run each with dperm's ClientApp.

    ``poll_seconds`` (default ``DPERM_FLOWER_POLL_SECONDS`` or 0.05, at
    most 0.1) is the longest wait between ``AcquireTask`` calls on the
    SuperNode's loopback Runtime API; after a task the wait starts at 0.01 s.
    With ``wake_fd`` (the read end of the pipe the SuperNode writes to when
    it has stored a message, :func:`~dperm.multiparty.flower.supernode.runner_wake`)
    the runner instead asks right after each wake-up and otherwise every
    :data:`WAKE_FALLBACK_SECONDS`: each ``AcquireTask`` is an HTTP request
    that costs the runner and the SuperNode CPU, and a 5-party run on 2
    cores made about 1,250 of them per party for its 42 tasks.
    """
    from flwr.proto.runtime_pb2 import AcquireTaskRequest  # pylint: disable=no-name-in-module
    from flwr.supercore.constant import TaskType

    from dperm.multiparty.flower._adapter import object_pull_backoff
    from dperm.multiparty.flower.app import client_app
    from dperm.multiparty.flower.engine import flower_poll_seconds, object_pull_waits
    from dperm.multiparty.flower.supernode import freeze_imports

    freeze_imports()  # a long-lived process: its imports need no garbage collection
    if poll_seconds is None:
        poll_seconds = min(flower_poll_seconds(0.05), 0.1)
    first = min(poll_seconds, 0.01)
    delay = first

    client = _runtime_client(address, "SuperExec")
    request = AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP.value])
    try:
        with object_pull_backoff(*object_pull_waits()):  # a task's message is pulled without Flower's 1 s waits
            while True:
                response = client.AcquireTask(request)
                if response.HasField("task") and response.token:
                    run_task(address, response.token, client_app,
                             log=lambda text: print(text, file=sys.stderr, flush=True))
                    delay = first
                elif wake_fd is not None:  # the SuperNode says when it has a task
                    wait_for_wake(wake_fd, WAKE_FALLBACK_SECONDS)
                else:  # 0.01 s after a task, growing by half up to poll_seconds while idle
                    time.sleep(delay)
                    delay = min(poll_seconds, delay * 1.5)
    finally:
        client.close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="dperm-party-runtime", description=__doc__.splitlines()[0])
    parser.add_argument("--runtime-api-address", required=True, help="the SuperNode's Runtime API (loopback)")
    parser.add_argument("--parent-pid", type=int, default=None, help="exit when this process ends")
    parser.add_argument("--wake-fd", type=int, default=None,
                        help="read end of the pipe the SuperNode writes to when it has a task (dperm party serve)")
    args = parser.parse_args(argv)
    if args.parent_pid is not None:  # also after a SIGKILL of dperm party serve (Flower's own monitor
        from dperm.multiparty.flower.supernode import die_with_parent  # misses an unreaped parent)

        die_with_parent(args.parent_pid)
    serve(args.runtime_api_address, wake_fd=args.wake_fd)


if __name__ == "__main__":
    main()
