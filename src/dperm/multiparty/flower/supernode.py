"""The party's Flower SuperNode with a shorter wait between its pulls (``dperm party serve`` starts it).

Flower 1.41's SuperNode main loop (``flwr/supernode/start_client_internal.py``)
asks the SuperLink for a message and, when there is none, sleeps a fixed
3 s; once it has handed a message to the ClientApp runner it waits for the
reply in steps of 0.5 s. Neither wait is a setting. A SecAgg+ round is four
exchanges, so these waits alone cost up to 4 x 3.5 s per round.

This launcher runs Flower's own ``flower-supernode`` unchanged except that,
while it runs, the ``time`` module *that one Flower module* sees sleeps at
most ``poll_seconds`` at a time, 0.03 s just after the party has answered
and growing by half at each empty pull (:class:`_CappedTime`, applied with
:func:`~dperm.multiparty.flower._adapter.supernode_waits`), and Flower's
object-pull backoff is shortened
(:func:`~dperm.multiparty.flower._adapter.object_pull_backoff`). Nothing else changes:
the same arguments (TLS, ``--auth-supernode-private-key``, ``--isolation
process``, ``--max-wait-time``) reach the same code, and every pull is the
same authenticated Fleet API request, only sooner.

It also dies with the ``dperm party serve`` that started it
(``--parent-pid``, :func:`die_with_parent`): the SuperNode holds the party's
key and keeps pulling for up to ``--max-wait-time`` seconds, so a ``kill -9``
of the supervisor must not leave it running.

It also tells dperm's party runner when it has a task (``--wake-fd``,
:func:`runner_wake`), so that the runner waits on a pipe instead of polling
the SuperNode's Runtime API.

Usage (internal)::

    python -m dperm.multiparty.flower.supernode [--poll-seconds S] [--parent-pid PID] [--wake-fd FD] \
        -- <flower-supernode arguments>
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

__all__ = ["capped_supernode_waits", "die_with_parent", "freeze_imports", "main", "runner_wake"]

#: ``prctl`` option that asks Linux to signal this process when its parent dies (``<linux/prctl.h>``).
_PR_SET_PDEATHSIG = 1
#: Seconds between the portable watch's looks at the parent.
PARENT_POLL_SECONDS = 0.25

#: Most seconds between the SuperNode's pulls (Flower's fixed wait is 3 s).
SUPERNODE_POLL_SECONDS = 0.15
#: Seconds of the first wait after the party has answered a message; each
#: empty pull then waits 1.5 times longer, up to the most above. Each pull is
#: one TLS request signed with the party's key, so a fixed short wait would
#: keep K SuperNodes and the SuperLink busy while nothing happens.
SUPERNODE_FIRST_POLL_SECONDS = 0.03
_GROWTH = 1.5


class _CappedTime:
    """The ``time`` module, except that :meth:`sleep` waits at most ``cap`` seconds.

    Flower's loop sleeps 3 s when the SuperLink had no message (waits of 1 s
    or more here): those waits start at ``first`` after :meth:`reset` and
    grow by half each time, up to ``cap``. Shorter waits (0.5 s while the
    runner answers) are cut to ``first``.
    """

    def __init__(self, cap: float, first: float | None = None):
        self.cap = float(cap)
        self.first = min(self.cap, SUPERNODE_FIRST_POLL_SECONDS if first is None else float(first))
        if self.cap >= 1.0:  # DPERM_FLOWER_POLL_SECONDS=3: Flower's own fixed waits
            self.first = self.cap
        self.delay = self.first

    def reset(self) -> None:
        self.delay = self.first

    def sleep(self, seconds: float) -> None:
        seconds = float(seconds)
        if seconds >= 1.0:  # the SuperLink had no message for this node
            wait, self.delay = min(seconds, self.delay), min(self.cap, self.delay * _GROWTH)
        else:
            wait = min(seconds, self.first)
        time.sleep(wait)

    def __getattr__(self, name):
        return getattr(time, name)


@contextmanager
def capped_supernode_waits(poll_seconds: float):
    """Within the block, Flower's SuperNode loop waits at most ``poll_seconds`` between its pulls.

    Shorter just after a message (:class:`_CappedTime`), and Flower's
    object-pull backoff is dperm's
    (:func:`~dperm.multiparty.flower.engine.object_pull_waits`). Both are
    Flower's own again after the block.
    """
    if not poll_seconds > 0:
        raise ValueError(f"--poll-seconds must be > 0; got {poll_seconds!r}.")
    from dperm.multiparty.flower._adapter import object_pull_backoff, supernode_waits
    from dperm.multiparty.flower.engine import object_pull_waits

    with supernode_waits(_CappedTime(poll_seconds)), object_pull_backoff(*object_pull_waits()):
        yield


@contextmanager
def runner_wake(wake_fd):
    """Within the block, the SuperNode writes one byte to ``wake_fd`` whenever it has a task for its runner.

    ``wake_fd`` is the write end of a pipe whose read end dperm's party
    runner waits on (:func:`~dperm.multiparty.flower.party_runtime.serve`);
    ``dperm party serve`` makes the pipe and hands each child its end. The
    byte says only "ask the Runtime API now": the runner still gets the task
    through Flower's Runtime API. A full pipe (the runner has wake-ups
    pending) or a closed one is ignored. ``None``: nothing changes.
    """
    if wake_fd is None:
        yield
        return
    from dperm.multiparty.flower._adapter import supernode_message_stored

    os.set_blocking(wake_fd, False)

    def wake():
        try:
            os.write(wake_fd, b"\0")
        except (BlockingIOError, BrokenPipeError):
            pass

    with supernode_message_stored(wake):
        yield


def freeze_imports() -> None:
    """Move every object alive now (the imported modules) out of the garbage collector's sight, now and at exit.

    ``gc.freeze()``: a long-lived process's full collections stop walking
    the objects its imports made, and the collections of interpreter
    shutdown do not walk them either (an exit of a process that imported
    Flower and dperm's apps cost about 0.8 s of CPU, seconds of wall time
    on a busy machine). Objects are still freed as usual when their
    references go; only cyclic garbage among the frozen ones would stay,
    and module-level objects live until exit anyway.
    """
    import atexit
    import gc

    gc.freeze()
    atexit.register(gc.freeze)  # at exit, also what the run made since


def _set_parent_death_signal(signum: int) -> bool:
    """Linux: ask the kernel to send ``signum`` to this process when its parent dies; False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parent_gone(parent_pid: int) -> bool:
    """True once ``parent_pid`` is no longer this process's parent (it died and we were re-parented)."""
    return os.getppid() != parent_pid


def die_with_parent(parent_pid: int, *, poll_seconds: float = PARENT_POLL_SECONDS, exit_now=None) -> None:
    """End this process when ``parent_pid`` (the ``dperm party serve`` that started it) dies, even by SIGKILL.

    Two watches, either of which suffices: on Linux the kernel's parent-death
    signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, set here, in the child),
    and everywhere a daemon thread that looks every ``poll_seconds`` whether
    this process still has ``parent_pid`` as its parent: when the parent
    dies the child is re-parented, so ``os.getppid()`` changes even while
    the dead parent is an unreaped zombie (a check of the pid alone would
    miss that). If the parent is already gone when this is called (it died
    before the watch was set), the process ends at once. ``exit_now``
    (default ``os._exit(1)`` after a line on stderr) is for tests.
    """
    if exit_now is None:
        def exit_now():
            print(f"dperm: the party process {parent_pid} that started this one has ended; stopping",
                  file=sys.stderr, flush=True)
            os._exit(1)  # no clean-up that could wait on the network: the key must stop being used now

    _set_parent_death_signal(signal.SIGKILL)
    if _parent_gone(parent_pid):  # died before the kernel watch was set
        exit_now()
        return

    def watch():
        while not _parent_gone(parent_pid):
            time.sleep(poll_seconds)
        exit_now()

    threading.Thread(target=watch, name="dperm-parent-watch", daemon=True).start()


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        raise SystemExit("dperm-supernode: give the flower-supernode arguments after --")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="dperm-supernode", description=__doc__.splitlines()[0])
    parser.add_argument("--poll-seconds", type=float, default=None,
                        help=f"most seconds between pulls (default: DPERM_FLOWER_POLL_SECONDS or "
                             f"{SUPERNODE_POLL_SECONDS:g})")
    parser.add_argument("--parent-pid", type=int, default=None,
                        help="end when this process (dperm party serve) ends, even if it is killed")
    parser.add_argument("--wake-fd", type=int, default=None,
                        help="write end of the pipe dperm's party runner waits on (dperm party serve makes it)")
    ours = parser.parse_args(argv[:split])
    if ours.parent_pid is not None:
        die_with_parent(ours.parent_pid)
    from dperm.multiparty.flower.engine import flower_poll_seconds

    poll_seconds = ours.poll_seconds if ours.poll_seconds is not None else flower_poll_seconds(SUPERNODE_POLL_SECONDS)
    from flwr.supernode.cli import flower_supernode

    sys.argv = ["flower-supernode", *argv[split + 1:]]
    freeze_imports()
    with capped_supernode_waits(poll_seconds), runner_wake(ours.wake_fd):
        flower_supernode()


if __name__ == "__main__":
    main()
