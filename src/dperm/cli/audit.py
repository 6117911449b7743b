"""``dperm audit``: its parser and handler live in :mod:`dperm.audit.cli`."""

from __future__ import annotations

__all__ = ["options"]


def options(sub) -> None:
    """Add ``audit`` to ``dperm``'s subcommands."""
    from dperm.audit.cli import add_audit_subparser

    add_audit_subparser(sub)
