"""The documentation pages dperm's records and docstrings cite, readable from an installed package.

A privacy record says, e.g., "paper note 6 (docs/paper_notes.md)". In a checkout
that path is the repository's ``docs/``; a built wheel carries the same pages in
``dperm/_docs`` (copied by the build, see ``setup.py``). :func:`cited_page` finds a
cited page in either place; from a shell::

    python -m dperm.documentation docs/paper_notes.md      # print the page
    python -m dperm.documentation                           # list the pages
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["cited_page"]

_PACKAGE = Path(__file__).resolve().parent


def _roots() -> list[Path]:
    """Where the pages are: the installed copy first, then a checkout's ``docs/``."""
    return [_PACKAGE / "_docs", _PACKAGE.parent.parent / "docs"]


def cited_page(citation: str) -> Path:
    """The file of a cited page such as ``"docs/paper_notes.md"`` (the ``docs/`` prefix is optional).

    Raises
    ------
    FileNotFoundError
        If the page is in neither place (one line naming the page).
    """
    relative = citation.removeprefix("docs/")
    for root in _roots():
        if (root / relative).is_file():
            return root / relative
    raise FileNotFoundError(f"{citation}: no such page in this dperm installation; "
                            "run 'python -m dperm.documentation' to list the pages.")


def _cited_pages() -> list[str]:
    """Every page available, as ``docs/...`` citations."""
    for root in _roots():
        if root.is_dir():
            return sorted(f"docs/{p.relative_to(root).as_posix()}" for p in root.rglob("*.md"))
    return []


def main(argv=None) -> int:
    """List the pages, or print one; exit 2 naming a page that is not there, 141 on a closed pipe."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:
        sys.stderr.close()
        return 141


def _main(args) -> int:
    if not args:
        print("\n".join(_cited_pages()))
        return 0
    try:
        print(cited_page(args[0]).read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        print(f"dperm: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
