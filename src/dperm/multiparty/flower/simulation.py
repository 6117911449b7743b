"""The networked deployment's ServerApp and ClientApp under Flower's simulation engine (Ray).

The second of the three ways the multiparty PSGD runs (issue 6): (1) in
process on dperm's message grid (:class:`~dperm.multiparty.flower.grid.InProcessGrid`),
(2) here, with ``flwr.simulation.run_simulation`` and its Ray backend, (3)
over a network (``dperm party serve`` / ``dperm coordinate``). All three run
the same party code (:func:`~dperm.multiparty.flower.app.party_setup`,
:func:`~dperm.multiparty.flower.app.party_reply` inside ``secaggplus_mod``)
and the same coordinator (:func:`~dperm.multiparty.flower.app.coordinator_main`),
which writes the same ``dperm-multiparty-model`` file.

Flower's simulation runs the ServerApp in a thread of this process and each
ClientApp call in a Ray actor (a separate process); the virtual SuperNodes
get only ``partition-id`` / ``num-partitions`` in their ``node_config``, and
``run_simulation`` takes no run config. So the ServerApp here is a thin
wrapper that hands ``coordinator_main`` the run config a ``dperm coordinate``
bundle would carry, and the ClientApp has one extra outer mod that fills each
node's ``node_config`` (shard path, label column, party name) from its
partition id, as ``dperm party serve --data`` does for a real SuperNode.

Needs Ray: ``pip install 'flwr[simulation]>=1.41,<1.43'`` (Ray starts in
several seconds, so the in-process grid is the faster choice for experiments).
Flower 1.41 marks ``run_simulation`` as deprecated in favour of ``flwr run``
with a local simulation federation; it still works and is used here because
it runs in the caller's process without a SuperLink.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
import time
from pathlib import Path

from dperm.privacy.psgd import PartyFloor

__all__ = ["simulate_deployment"]

SIMULATION_INSTALL_HINT = "pip install 'flwr[simulation]>=1.41,<1.43'"


def check_ray() -> None:
    """Raise ImportError naming the extra when Ray (Flower's simulation backend) is missing."""
    if importlib.util.find_spec("ray") is None:
        raise ImportError(
            f"Flower's simulation engine needs Ray, which is not installed: {SIMULATION_INSTALL_HINT}"
        )


def node_config_mod(node_configs):
    """A Flower mod that sets a simulated node's ``node_config`` from its ``partition-id``.

    Parameters
    ----------
    node_configs : mapping of int -> dict
        Partition id -> the values a ``dperm party serve`` SuperNode carries
        (``data-path``, ``target``, ``party-name``, ``max-epsilon``,
        ``max-delta``, ``max-rounds``).
    """
    node_configs = {int(key): dict(value) for key, value in node_configs.items()}

    def mod(message, context, call_next):
        context.node_config.update(node_configs[int(context.node_config["partition-id"])])
        return call_next(message, context)

    return mod


def simulate_deployment(shards, settings, out, *, max_epsilon, max_delta, max_rounds, target="label", names=None,
                        backend_config=None, verbose=False) -> dict:
    """Run the deployment's ServerApp and ClientApp under Flower's simulation engine (Ray backend).

    Parameters
    ----------
    shards : sequence of path-like
        One CSV shard per party (the format of ``dperm party serve --data``);
        ``len(shards)`` must equal ``settings.n_parties``.
    settings : dperm.multiparty.flower.app.CoordinatorSettings
        The coordinator's public inputs (as ``dperm coordinate`` takes them).
    out : path-like
        Model file to write (format ``dperm-multiparty-model``).
    max_epsilon, max_delta, max_rounds
        Every simulated party's floor (``dperm party serve --max-epsilon
        --max-delta --max-rounds``): it refuses a set-up weaker than that.
    target : str, default="label"
        Label column of every shard.
    names : sequence of str, optional
        Party names (default: the shards' file stems); must be distinct.
    backend_config : dict, optional
        Flower's ``backend_config`` for Ray (``client_resources``,
        ``init_args``); None keeps Flower's defaults.
    verbose : bool, default=False
        Flower's DEBUG logging.

    Returns
    -------
    status : dict
        What the ServerApp reports: ``ok``, ``seconds``, ``round_seconds``
        (per SecAgg+ round), ``summary`` (the privacy record) and ``out``.

    Raises
    ------
    ImportError
        Flower 1.41 or Ray is missing (the message names the ``pip install``).
    ValueError
        A shard is malformed, the names are not distinct, or the number of
        shards is not ``settings.n_parties``.
    """
    from dperm.multiparty.flower import app as flower_app  # imports Flower (ImportError naming dperm[multiparty])

    check_ray()
    floor = PartyFloor(max_epsilon, max_delta, max_rounds)
    paths = [Path(path).resolve() for path in shards]
    if len(paths) != settings.n_parties:
        raise ValueError(f"{len(paths)} shards for settings.n_parties = {settings.n_parties}; they must match.")
    names = [path.stem for path in paths] if names is None else [str(name) for name in names]
    if len(names) != len(paths) or len(set(names)) != len(names):
        raise ValueError(f"party names must be distinct, one per shard; got {names}.")
    for path in paths:
        flower_app.load_shard(path, target)  # fail here, not inside a Ray actor
    out = Path(out).resolve()
    workdir = Path(tempfile.mkdtemp(prefix="dperm-simulation-"))
    try:  # the status file and the simulated parties' ledgers: removed with the folder
        status_path = workdir / "status.json"
        run_config = {**settings.to_run_config(), "out": str(out), "status": str(status_path),
                      "engine": flower_app.SIMULATION_ENGINE_NAME}
        limits = {"max-epsilon": floor.max_epsilon, "max-delta": floor.max_delta, "max-rounds": floor.max_rounds}
        # each simulated party's own ledger, fresh for this training (its budget: the floor, one run)
        node_configs = {k: {"data-path": str(path), "target": target, "party-name": name, **limits,
                            "ledger-path": str(workdir / f"party-{k}-ledger.json")}
                        for k, (path, name) in enumerate(zip(paths, names))}

        from flwr.app import Context
        from flwr.serverapp import ServerApp
        from flwr.simulation import run_simulation

        from dperm.multiparty.flower._adapter import kept_task_identity

        server_app = ServerApp()

        @server_app.main()
        def main(grid, context) -> None:
            context = Context(run_id=context.run_id, node_id=context.node_id, node_config=context.node_config,
                              state=context.state, run_config=dict(run_config))
            flower_app.coordinator_main(grid, context)

        client_app = flower_app._flower.make_party_client_app(
            flower_app.party_reply, flower_app.party_setup, mods=[node_config_mod(node_configs)],
            expected_terms=flower_app.party_secagg_terms)
        # run_simulation sets Flower's process-wide task identity and leaves it set; restore it so
        # that later in-process runs in this process keep their own.
        started = time.monotonic()
        with kept_task_identity():
            run_simulation(server_app=server_app, client_app=client_app, num_supernodes=len(paths),
                           backend_name="ray", backend_config=backend_config, verbose_logging=verbose)
        if not status_path.exists():
            raise RuntimeError(f"Flower's simulation ended without a result after {time.monotonic() - started:.0f} s.")
        status = json.loads(status_path.read_text(encoding="utf-8"))
        if not status["ok"]:
            raise RuntimeError(f"the simulated coordinator failed: {status['error']}")
        status["wall_seconds"] = time.monotonic() - started
        return status
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
