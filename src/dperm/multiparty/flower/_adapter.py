"""Every touch of Flower's internals, in one module: the version guard and the scoped patches.

The rest of :mod:`dperm.multiparty.flower` uses Flower's public API (apps,
grids, records, the SecAgg+ workflow and mod). What dperm needs beyond it is
here, so that a Flower upgrade is this one file (and its tests,
``tests/multiparty/flower/test_adapter.py``):

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
  :func:`supernode_message_stored`, :func:`captured_superlink_app`: patches of Flower's module state, each a
  context manager that restores what it changed. They are applied by the
  process that needs them, around the code that needs them: the ServerApp
  (``coordinator_main``), the party's runtime and its SuperNode, the
  locked-down SuperLink; never at import time.

- :func:`mask_generator`, :func:`cryptographic_masks`: SecAgg+'s masks
  expanded from the *whole* shared secret by SHAKE-256, in place of
  Flower's ``pseudo_rand_gen`` (which XOR-folds the secret to 32 bits and
  seeds numpy's Mersenne Twister: upstream issue flwrlabs/flower#7522, fix
  PR #7570 open). Both sides use it: the party's
  :func:`~dperm.multiparty.flower.grid.secaggplus_guard` around Flower's
  mod, and :class:`AbortOnDropoutSecAggPlusWorkflow`'s unmask stage.

Flower 1.43 (announced: the Fleet and Control APIs over HTTP only) will need, here and nowhere else: a new
:data:`FLOWER_VERSION_RANGE`; :func:`supernode_waits` pointed at the
HTTP loop's module and sleep (today ``flwr/supernode/start_client_internal.py``
with its ``time`` and ``_push_messages``) and :func:`supernode_message_stored` at the
function that stores a pulled message (today ``_pull_and_store_message``); :func:`captured_superlink_app`
at whatever builds the HTTP application (today
``flwr.superlink.main.create_app``); :data:`OBJECT_PULL_FUNCTIONS` if the
pulls move; and :data:`MASK_GENERATOR_MODULES` checked again (if upstream
has replaced ``pseudo_rand_gen`` by then, :func:`cryptographic_masks`
refuses to run rather than mix two generators, and the two sides' masks
must be re-checked to cancel: ``tests/multiparty/flower/test_adapter_mask_generator.py``).
The SecAgg+ mod, workflow and message keys are Flower's public API; the
rest of dperm's Flower code uses only them.
"""

from __future__ import annotations

import hashlib
import importlib
import threading
from contextlib import contextmanager
from math import prod

import flwr
import numpy as np

#: The Flower releases (``>= low, < high`` as ``(major, minor)``) whose internals this module is written against.
FLOWER_VERSION_RANGE = ((1, 41), (1, 43))
INSTALL_HINT = "pip install 'dperm[multiparty]'"


def supported_flower_versions() -> str:
    """The supported releases as a pip specifier, ``">=1.41,<1.43"``."""
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

import flwr.supernode.start_client_internal as _supernode_loop  # noqa: E402
from flwr.common.constant import SUPERLINK_NODE_ID  # noqa: E402
from flwr.common.secure_aggregation import secaggplus_utils as _secaggplus_utils  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS  # noqa: E402
from flwr.server.workflow import SecAggPlusWorkflow  # noqa: E402
from flwr.supercore.inflatable import inflatable_utils as _inflatable_utils  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from dperm.multiparty.flower._roster import SIGNATURE_KEY  # noqa: E402

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


# -- SecAgg+'s mask generator ---------------------------------------------------------------

#: Domain separation of dperm's mask stream (FIPS 202 SHAKE-256 input prefix); a new
#: version string is a new, incompatible generator: a party and a coordinator must agree on it.
MASK_GENERATOR_DOMAIN = b"dperm/secagg+/mask-generator/v1"
_WORD_BYTES = 8

#: Flower's modules that expand SecAgg+ seeds into masks, each through its
#: module-level name ``pseudo_rand_gen``: the party's mod (self-mask and
#: pairwise masks) and the server's workflow (self-masks at unmasking). By
#: ``sys.modules`` name: each package re-exports a function of the module's name.
MASK_GENERATOR_MODULES = tuple(importlib.import_module(name) for name in (
    "flwr.client.mod.secure_aggregation.secaggplus_mod",
    "flwr.server.workflow.secure_aggregation.secaggplus_workflow",
))
_FLOWERS_MASK_GENERATOR = _secaggplus_utils.pseudo_rand_gen


def _mask_stream(seed: bytes, num_range: int):
    """SHAKE-256 keyed by the domain, the whole seed (length-prefixed) and the range."""
    xof = hashlib.shake_256(MASK_GENERATOR_DOMAIN)
    xof.update(len(seed).to_bytes(8, "little"))
    xof.update(seed)
    xof.update(num_range.to_bytes(8, "little"))
    return xof


def uniform_below(seed: bytes, num_range: int, count: int) -> np.ndarray:
    """The first ``count`` integers, uniform on ``{0, ..., num_range - 1}``, of the stream of ``seed``.

    The XOF's output is read as little-endian 64-bit words; each word keeps
    its low ``b = bit_length(num_range - 1)`` bits, and values
    ``>= num_range`` are skipped (rejection sampling: every kept value is
    exactly uniform, and at least half are kept). The result depends only on
    ``(seed, num_range, count)`` and is a prefix of the result for a larger
    ``count``: SHAKE-256's output of ``m`` bytes is a prefix of its output
    of ``n > m`` bytes (FIPS 202, Sec. 6.2), so asking for more words when
    too many were skipped reads the same stream further.
    """
    xof = _mask_stream(seed, num_range)
    bits = (num_range - 1).bit_length()
    low_bits = np.uint64((1 << bits) - 1)
    n_words = count * (1 << bits) // num_range + count // 16 + 16  # the expected need, and a margin
    while True:
        words = np.frombuffer(xof.digest(_WORD_BYTES * n_words), dtype="<u8") & low_bits
        kept = words[words < np.uint64(num_range)]
        if kept.size >= count:
            return kept[:count].astype(np.int64)
        n_words *= 2


def mask_generator(seed: bytes, num_range: int, dimensions_list) -> list[np.ndarray]:
    """SecAgg+'s masks for ``seed``: arrays of the given shapes, uniform on ``{0, ..., num_range - 1}``.

    A drop-in for Flower's ``pseudo_rand_gen(seed, num_range,
    dimensions_list)`` (same arguments, ``int64`` arrays of the same shapes,
    drawn in order from one stream) whose output depends on every bit of
    ``seed``. SecAgg's proof (Bonawitz et al., CCS 2017, Sec. 4 and App. A;
    Bell et al., CCS 2020) needs the expansion of a seed (a party's
    self-mask seed ``b_u``, or a pairwise key ``s_uv`` from ECDH + HKDF) to
    be a secure PRG: without the seed, the mask is indistinguishable from
    uniform on ``Z_R^m``, so the masked reply is a one-time pad. Flower's
    expansion XOR-folds the seed to 32 bits and seeds numpy's Mersenne
    Twister, so 2^32 guesses find any mask: with ``K = 2`` the coordinator,
    which learns party 1's self-mask seed at unmasking, tries every folded
    pairwise key until ``y_1 - PRG(b_1) -+ PRG(s_12)`` falls inside the
    quantisation range, and holds party 1's reply. Here
    the seed, the range and a domain string key SHAKE-256, an extendable-
    output function with 256-bit security (FIPS 202), read as uniform
    integers by :func:`uniform_below`. Unlike Flower's draws (on
    ``{0, ..., R - 2}``, numpy's ``randint(0, R - 1)``), every residue
    modulo ``R`` is covered: the pad is exactly uniform given a uniform stream.

    Parameters
    ----------
    seed : bytes
        The secret: a self-mask seed or a pairwise shared key (any length).
    num_range : int
        ``R``, SecAgg+'s modulus range, ``2 <= R <= 2**63``.
    dimensions_list : list of tuple of int
        The shapes of the masked arrays; ``()`` gives a 0-d array.

    Returns
    -------
    list of ndarray of int64
    """
    seed = bytes(seed)
    num_range = int(num_range)
    if not 2 <= num_range <= 2**63:
        raise ValueError(f"num_range must be in [2, 2**63] (SecAgg+'s modulus range); got {num_range}.")
    shapes = [tuple(int(n) for n in shape) for shape in dimensions_list]
    sizes = [prod(shape) for shape in shapes]
    values = uniform_below(seed, num_range, sum(sizes))
    masks, start = [], 0
    for shape, size in zip(shapes, sizes):
        masks.append(values[start:start + size].reshape(shape))
        start += size
    return masks


class _Installed:
    """How many blocks in this process are inside :func:`cryptographic_masks` (under ``lock``)."""

    lock = threading.Lock()
    depth = 0


@contextmanager
def cryptographic_masks():
    """Within the block, Flower's SecAgg+ mod and workflow expand seeds with :func:`mask_generator`.

    The name ``pseudo_rand_gen`` in each of :data:`MASK_GENERATOR_MODULES`
    is pointed at :func:`mask_generator` when the first block in the
    process enters and back at Flower's function when the last one leaves
    (blocks may nest, as in process where the parties answer inside the
    coordinator's stage, and may overlap across threads). While any block
    runs, every SecAgg+ round of the process uses it. Both sides must:
    masks from different generators do not cancel. Raises RuntimeError,
    changing nothing, if either module's ``pseudo_rand_gen`` is not Flower's
    (another patch, or a Flower release that moved it).
    """
    with _Installed.lock:
        if _Installed.depth == 0:
            found = [module.__name__ for module in MASK_GENERATOR_MODULES
                     if getattr(module, "pseudo_rand_gen", None) is not _FLOWERS_MASK_GENERATOR]
            if found:
                raise RuntimeError(f"dperm's SecAgg+ mask generator is written against Flower's "
                                   f"pseudo_rand_gen in {', '.join(found)}, which is not there; "
                                   f"nothing was changed (flwr {flwr.__version__}).")
            for module in MASK_GENERATOR_MODULES:
                module.pseudo_rand_gen = mask_generator
        _Installed.depth += 1
    try:
        yield
    finally:
        with _Installed.lock:
            _Installed.depth -= 1
            if _Installed.depth == 0:
                for module in MASK_GENERATOR_MODULES:
                    module.pseudo_rand_gen = _FLOWERS_MASK_GENERATOR


# -- the SecAgg+ workflow -----------------------------------------------------------------


class _RelayingGrid:
    """A Grid seen by one workflow stage: ``outgoing`` edits each message sent, ``incoming`` sees the replies."""

    def __init__(self, grid, outgoing=None, incoming=None):
        self._grid, self._outgoing, self._incoming = grid, outgoing, incoming

    def __getattr__(self, name):
        return getattr(self._grid, name)

    def send_and_receive(self, messages, *, timeout=None):
        messages = [self._outgoing(m) for m in messages] if self._outgoing else list(messages)
        replies = self._grid.send_and_receive(messages, timeout=timeout)
        return self._incoming(list(replies)) if self._incoming else replies


class AbortOnDropoutSecAggPlusWorkflow(SecAggPlusWorkflow):
    """Flower's SecAgg+ workflow, halted before unmasking if any party is missing.

    SecAgg+ can unmask the survivors' sum when parties drop. In PSGD a party
    that drops takes its share of the DP noise with it (each party adds
    ``eta^k`` with variance ``sigma^2 / K``, 004 Proc. 3), so the survivors'
    sum would be under-noised. The workflow therefore stops after the first
    stage at which a party is missing, before the unmask stage: the server
    never receives the shares that would remove the masks, and nothing is
    revealed. After a call, ``unmasked`` says whether the sum was revealed
    and ``missing`` / ``failures`` say why not; ``refused`` maps each node
    that answered with an error reply (a refusal, or a failure it reported)
    to Flower's reason, so that a refusal is not reported as a silence.
    """

    def __call__(self, grid, context):
        self.missing = set()
        self.failures = []
        self.refused = {}
        self.unmasked = False

        def note_refusals(replies):
            for reply in replies:
                if reply.has_error():
                    self.refused.setdefault(reply.metadata.src_node_id, str(reply.error.reason))
            return replies

        super().__call__(_RelayingGrid(grid, incoming=note_refusals), context)

    def _check_threshold(self, state) -> bool:  # Flower's hook after each of the first three stages
        missing = set(state.sampled_node_ids) - set(state.active_node_ids)
        if missing:
            self.missing = missing
            self.failures = list(state.failures)
            return False
        return super()._check_threshold(state)

    def setup_stage(self, grid, context, state) -> bool:
        """Flower's set-up stage; keeps each party's signature of its public keys (:mod:`._roster`)."""
        self.key_signatures = {}

        def keep(replies):
            for reply in replies:
                record = None if reply.has_error() else reply.content.config_records.get(RECORD_KEY_CONFIGS)
                if record is not None and SIGNATURE_KEY in record:
                    self.key_signatures[reply.metadata.src_node_id] = list(record[SIGNATURE_KEY])
            return replies

        return super().setup_stage(_RelayingGrid(grid, incoming=keep), context, state)

    def share_keys_stage(self, grid, context, state) -> bool:
        """Flower's share-keys stage; relays each node's signature next to its public keys."""

        def attach(message):
            record = message.content.config_records[RECORD_KEY_CONFIGS]
            for key in [key for key in record if key.isdigit()]:
                if int(key) in self.key_signatures:
                    record[f"{SIGNATURE_KEY}:{key}"] = self.key_signatures[int(key)]
            return message

        return super().share_keys_stage(_RelayingGrid(grid, outgoing=attach), context, state)

    def unmask_stage(self, grid, context, state) -> bool:
        with cryptographic_masks():  # the parties masked with it (secaggplus_guard): remove the same masks
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
def supernode_message_stored(callback):
    """Within the block, ``callback()`` runs each time Flower's SuperNode loop has stored a message for its runner.

    Flower 1.41-1.42's loop (``flwr/supernode/start_client_internal.py``)
    pulls a message from the SuperLink in ``_pull_and_store_message``, which
    creates the ClientApp task, pulls the message's objects, confirms the
    receipt and returns the run id (None when there was no message or it
    failed). ``callback`` runs after a non-None return, when the task and
    all its objects are in the SuperNode's state: dperm's party runner
    (:mod:`dperm.multiparty.flower.party_runtime`) asks for the task then
    instead of polling the Runtime API every few milliseconds. The message
    and what the loop does with it are unchanged; restored on exit.
    """
    pull_and_store = _supernode_loop._pull_and_store_message

    def pull_store_and_notify(*args, **kwargs):
        run_id = pull_and_store(*args, **kwargs)
        if run_id is not None:
            callback()
        return run_id

    _supernode_loop._pull_and_store_message = pull_store_and_notify
    try:
        yield
    finally:
        _supernode_loop._pull_and_store_message = pull_and_store


@contextmanager
def captured_superlink_app(store: dict):
    """Within the block, the FastAPI application Flower's SuperLink builds is also put in ``store["app"]``.

    Flower 1.41 builds it in ``flwr.superlink.main.create_app`` and keeps no
    reference a caller can reach; the locked-down SuperLink serves its Fleet
    routes on a second, public port
    (:mod:`dperm.multiparty.flower.superlink`). Restored on exit.
    """
    import flwr.superlink.main as superlink_main  # the SuperLink's process only (its import costs ~0.3 s CPU)

    original = superlink_main.create_app

    def create_app(*args, **kwargs):
        store["app"] = original(*args, **kwargs)
        return store["app"]

    superlink_main.create_app = create_app
    try:
        yield
    finally:
        superlink_main.create_app = original


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

