"""Every touch of Flower's internals, in one module: the version guard and the scoped patches.

The rest of :mod:`dperm.multiparty.flower` uses Flower's public API (apps,
grids, records, the SecAgg+ workflow and mod). What dperm needs beyond it is
here, so that a Flower upgrade is this one file (and its tests,
``tests/multiparty/flower/test_flower_adapter.py``):

- :func:`check_flower_version`: the releases whose internals this module is
  written against, checked when it is imported (importing it patches
  nothing);
- :func:`server_identity`, :func:`kept_task_identity`: Flower's process-wide
  task identity (``TaskIdentity``'s private class attributes), set or
  restored for a block;
- :func:`stamp_message_id`: a message id set on an in-process message, as
  the SuperLink does (``Metadata``'s private ``_message_id``);
- :class:`AbortOnDropoutSecAggPlusWorkflow`: the SecAgg+ workflow halted
  before unmasking when a party is missing (it overrides the workflow's
  private ``_check_threshold`` hook);
- :func:`object_pull_backoff`, :func:`supernode_waits`,
  :func:`captured_superlink_app`: patches of Flower's module state, each a
  context manager that restores what it changed. They are applied by the
  process that needs them, around the code that needs them: the ServerApp
  (``coordinator_main``), the party's runtime and its SuperNode, the
  locked-down SuperLink; never at import time.

Flower 1.41's mask generator expands seeds through a 32-bit Mersenne
Twister (upstream issue flwrlabs/flower#7522); see
:mod:`dperm.multiparty.flower.engine` for the trust model.
"""

from __future__ import annotations

from contextlib import contextmanager

import flwr

#: The Flower releases (``>= low, < high`` as ``(major, minor)``) whose internals this module is written against.
FLOWER_VERSION_RANGE = ((1, 41), (1, 42))
INSTALL_HINT = "pip install 'dperm[multiparty]'"


def supported_flower_versions() -> str:
    """The supported releases as a pip specifier, ``">=1.41,<1.42"``."""
    (a, b), (c, d) = FLOWER_VERSION_RANGE
    return f">={a}.{b},<{c}.{d}"


def check_flower_version(version: str) -> None:
    """Raise ImportError naming the supported releases unless ``version`` is one of them.

    Parameters
    ----------
    version : str
        A Flower version string, e.g. ``flwr.__version__``.
    """
    parsed = tuple(int(part) for part in str(version).split(".")[:2] if part.isdigit())
    low, high = FLOWER_VERSION_RANGE
    if not low <= parsed < high:
        raise ImportError(
            f"dperm's Flower adapter is written against Flower {supported_flower_versions()} (it uses SecAgg+ "
            f"and SuperNode internals); flwr {version} is installed: {INSTALL_HINT}"
        )


check_flower_version(flwr.__version__)  # before touching anything inside Flower

import flwr.superlink.main as _superlink_main  # noqa: E402
import flwr.supernode.start_client_internal as _supernode_loop  # noqa: E402
from flwr.common.constant import SUPERLINK_NODE_ID  # noqa: E402
from flwr.server.workflow import SecAggPlusWorkflow  # noqa: E402
from flwr.supercore.inflatable import inflatable_utils as _inflatable_utils  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

#: Flower's functions that pull a message's objects, retrying with a backoff
#: (``flwr/supercore/inflatable/inflatable_utils.py``): the ServerApp's grid,
#: the SuperNode's loop and the ClientApp runner call them.
OBJECT_PULL_FUNCTIONS = (_inflatable_utils.pull_objects, _inflatable_utils.pull_and_inflate_object_from_tree)


# -- task identity and message ids ------------------------------------------------------


def _task_identity() -> tuple:
    return TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id


def _set_task_identity(saved) -> None:
    TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = saved


@contextmanager
def kept_task_identity():
    """Restore Flower's process-wide task identity after the block, whatever the block set.

    ``flwr.simulation.run_simulation`` sets it and leaves it set; later
    in-process runs in the same process need their own.
    """
    saved = _task_identity()
    try:
        yield
    finally:
        _set_task_identity(saved)


@contextmanager
def server_identity(run_id: int):
    """Flower's process-wide task identity for server-side messages, when none is set.

    A ServerApp process gets it from the SuperLink; in process it is set for
    the block (task 1, the SuperLink's node id, as Flower's compat server
    does) and restored afterwards.
    """
    if TaskIdentity._run_id is not None:  # inside a real ServerApp: keep its identity
        yield
        return
    with kept_task_identity():
        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, run_id, SUPERLINK_NODE_ID
        yield


def stamp_message_id(message, message_id: str) -> None:
    """Give ``message`` the id a SuperLink would (Flower's ``Metadata`` has no setter for it)."""
    message.metadata.__dict__["_message_id"] = message_id


# -- the SecAgg+ workflow -----------------------------------------------------------------


class AbortOnDropoutSecAggPlusWorkflow(SecAggPlusWorkflow):
    """Flower's SecAgg+ workflow, halted before unmasking if any party is missing.

    SecAgg+ can unmask the survivors' sum when parties drop. In PSGD a party
    that drops takes its share of the DP noise with it (each party adds
    ``eta^k`` with variance ``sigma^2 / K``, 004 Proc. 3), so the survivors'
    sum would be under-noised. The workflow therefore stops after the first
    stage at which a party is missing, before the unmask stage: the server
    never receives the shares that would remove the masks, and nothing is
    revealed. After a call, ``unmasked`` says whether the sum was revealed
    and ``missing`` / ``failures`` say why not.
    """

    def __call__(self, grid, context):
        self.missing = set()
        self.failures = []
        self.unmasked = False
        super().__call__(grid, context)

    def _check_threshold(self, state) -> bool:  # Flower's hook after each of the first three stages
        missing = set(state.sampled_node_ids) - set(state.active_node_ids)
        if missing:
            self.missing = missing
            self.failures = list(state.failures)
            return False
        return super()._check_threshold(state)

    def unmask_stage(self, grid, context, state) -> bool:
        finished = super().unmask_stage(grid, context, state)
        self.unmasked = finished
        if not finished:
            self.missing = set(state.sampled_node_ids) - set(state.active_node_ids)
            self.failures = list(state.failures)
        return finished


# -- scoped patches of Flower's module state ------------------------------------------------


@contextmanager
def object_pull_backoff(initial: float, cap: float):
    """Within the block, Flower's object pulls retry a missing object after ``initial`` s, doubling up to ``cap``.

    A SuperNode hands a task to its ClientApp runner before it has pulled
    the message's objects, and the ServerApp pulls a reply whose objects the
    SuperNode is still pushing; either way Flower's ``pull_objects`` finds an
    object missing and waits 1 s, then 2 s, ... (its ``PULL_INITIAL_BACKOFF``,
    ``PULL_BACKOFF_CAP``) before asking again. The keyword defaults of
    :data:`OBJECT_PULL_FUNCTIONS` are changed (every caller uses them) and
    restored on exit; the number of tries and the overall limit stay Flower's.
    """
    saved = [dict(function.__kwdefaults__) for function in OBJECT_PULL_FUNCTIONS]
    for function in OBJECT_PULL_FUNCTIONS:
        function.__kwdefaults__.update(initial_backoff=float(initial), backoff_cap=float(cap))
    try:
        yield
    finally:
        for function, defaults in zip(OBJECT_PULL_FUNCTIONS, saved):
            function.__kwdefaults__.clear()
            function.__kwdefaults__.update(defaults)


@contextmanager
def supernode_waits(clock):
    """Within the block, Flower's SuperNode loop sleeps through ``clock`` and calls ``clock.reset()`` after each answer.

    Flower 1.41's loop (``flwr/supernode/start_client_internal.py``) sleeps
    a fixed 3 s when the SuperLink had no message and 0.5 s steps while its
    ClientApp runner answers; neither is a setting. ``clock`` stands in for
    the ``time`` module *that one Flower module* sees (it must offer
    ``sleep`` and forward everything else to :mod:`time`), and its
    ``reset()`` runs after the loop pushes a reply. Both are restored on exit.
    """
    saved_time, push_messages = _supernode_loop.time, _supernode_loop._push_messages

    def push_and_reset(*args, **kwargs):  # the party answered: the next stage's message comes soon
        try:
            return push_messages(*args, **kwargs)
        finally:
            clock.reset()

    _supernode_loop.time, _supernode_loop._push_messages = clock, push_and_reset
    try:
        yield
    finally:
        _supernode_loop.time, _supernode_loop._push_messages = saved_time, push_messages


@contextmanager
def captured_superlink_app(store: dict):
    """Within the block, the FastAPI application Flower's SuperLink builds is also put in ``store["app"]``.

    Flower 1.41 builds it in ``flwr.superlink.main.create_app`` and keeps no
    reference a caller can reach; the locked-down SuperLink serves its Fleet
    routes on a second, public port
    (:mod:`dperm.multiparty.flower.superlink`). Restored on exit.
    """
    original = _superlink_main.create_app

    def create_app(*args, **kwargs):
        store["app"] = original(*args, **kwargs)
        return store["app"]

    _superlink_main.create_app = create_app
    try:
        yield
    finally:
        _superlink_main.create_app = original


# -- the public port's request-size limit (dperm.multiparty.flower.superlink) -------------------


def array_chunk_bytes() -> int:
    """The most bytes of one array Flower puts in one object (``FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE``).

    Flower 1.41 splits every array into chunks of at most this many bytes
    (``flwr/app/message/array.py``; 5 MiB unless the environment variable of
    that name says otherwise), so no honest ``push-object`` request carries
    more of an array. Read, never changed.
    """
    from flwr.common.constant import FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE

    return int(FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE)

