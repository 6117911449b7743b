"""``dperm party`` and ``dperm coordinate``: their parsers and handlers live in
:mod:`dperm.multiparty.flower.cli`."""

from __future__ import annotations

__all__ = ["options"]


def options(sub) -> None:
    """Add ``party`` and ``coordinate`` to ``dperm``'s subcommands."""
    from dperm.multiparty.flower.cli import add_commands

    add_commands(sub)
