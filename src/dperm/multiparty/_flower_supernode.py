"""The party's Flower SuperNode with a shorter wait between its pulls (``dperm party serve`` starts it).

Flower 1.41's SuperNode main loop (``flwr/supernode/start_client_internal.py``)
asks the SuperLink for a message and, when there is none, sleeps a fixed
3 s; once it has handed a message to the ClientApp runner it waits for the
reply in steps of 0.5 s. Neither wait is a setting. A SecAgg+ round is four
exchanges, so these waits alone cost up to 4 x 3.5 s per round.

This launcher runs Flower's own ``flower-supernode`` unchanged except that
the ``time`` module *that one Flower module* sees sleeps at most
``poll_seconds`` at a time (:class:`_CappedTime`). Nothing else changes:
the same arguments (TLS, ``--auth-supernode-private-key``, ``--isolation
process``, ``--max-wait-time``) reach the same code, and every pull is the
same authenticated Fleet API request, only sooner.

Usage (internal)::

    python -m dperm.multiparty._flower_supernode [--poll-seconds S] -- <flower-supernode arguments>
"""

from __future__ import annotations

import argparse
import sys
import time

#: Default seconds between the SuperNode's pulls (Flower's fixed wait is 3 s).
#: Each pull is one TLS request signed with the party's key, so K parties
#: polling every 0.1 s cost the SuperLink about 10 K requests a second.
SUPERNODE_POLL_SECONDS = 0.1


class _CappedTime:
    """The ``time`` module, except that :meth:`sleep` sleeps at most ``cap`` seconds."""

    def __init__(self, cap: float):
        self.cap = float(cap)

    def sleep(self, seconds: float) -> None:
        time.sleep(min(float(seconds), self.cap))

    def __getattr__(self, name):
        return getattr(time, name)


def cap_supernode_waits(poll_seconds: float) -> None:
    """Make Flower's SuperNode loop wait at most ``poll_seconds`` between its pulls."""
    import flwr.supernode.start_client_internal as loop

    if not poll_seconds > 0:
        raise ValueError(f"--poll-seconds must be > 0; got {poll_seconds!r}.")
    loop.time = _CappedTime(poll_seconds)
    from dperm.multiparty.flower_engine import shorten_object_pull_backoff

    shorten_object_pull_backoff()


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        raise SystemExit("dperm-supernode: give the flower-supernode arguments after --")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="dperm-supernode", description=__doc__.splitlines()[0])
    parser.add_argument("--poll-seconds", type=float, default=None,
                        help=f"most seconds between pulls (default: DPERM_FLOWER_POLL_SECONDS or "
                             f"{SUPERNODE_POLL_SECONDS:g})")
    ours = parser.parse_args(argv[:split])
    from dperm.multiparty.flower_engine import flower_poll_seconds

    cap_supernode_waits(ours.poll_seconds if ours.poll_seconds is not None
                        else flower_poll_seconds(SUPERNODE_POLL_SECONDS))
    from flwr.supernode.cli import flower_supernode

    sys.argv = ["flower-supernode", *argv[split + 1:]]
    flower_supernode()


if __name__ == "__main__":
    main()
