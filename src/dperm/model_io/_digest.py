"""A model document's content digest: SHA-256 of its canonical JSON, and the refusal of a file that does not match."""

from __future__ import annotations

import hashlib
import json

#: The key of a document's content digest, and the hash it names.
_DIGEST_KEY = "digest"
_DIGEST_ALGORITHM = "sha256"


class InconsistentModelFile(ValueError):
    """A model file whose numbers contradict each other or its digest: it was edited or corrupted."""


def document_digest(document: dict) -> str:
    """``"sha256:<hex>"`` of the document's content, its ``digest`` entry excluded.

    The content is serialised canonically: JSON with sorted keys, no
    whitespace, UTF-8, floats as Python writes them (the shortest repr that
    reads back exactly), so the digest depends only on the values, not on the
    file's layout. Raises ValueError for a value JSON cannot hold (NaN, a
    non-string key).
    """
    content = {key: value for key, value in document.items() if key != _DIGEST_KEY}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           allow_nan=False)
    return f"{_DIGEST_ALGORITHM}:{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}"


def with_digest(document: dict) -> dict:
    """``document`` as JSON reads it back, with its :func:`document_digest` as the last entry."""
    content = json.loads(json.dumps({k: v for k, v in document.items() if k != _DIGEST_KEY},
                                    allow_nan=False))
    return {**content, _DIGEST_KEY: document_digest(content)}


def check_digest(document, expected: str | None = None) -> None:
    """Refuse a document whose ``digest`` is not its content's, or not ``expected``.

    Without a ``digest`` entry only ``expected`` is checked (it then fails):
    which formats must carry one is their reader's business.
    """
    recorded = document.get(_DIGEST_KEY)
    if recorded is not None:
        actual = document_digest(document)
        if recorded != actual:
            raise InconsistentModelFile(
                f"'digest' is {recorded!r} but the file's content hashes to {actual!r}: the file "
                "was edited or corrupted after it was written; ask the publisher for the file as "
                "written, or refit.")
    if expected is not None and recorded != expected.strip():
        found = "has no digest" if recorded is None else f"has digest {recorded!r}"
        raise InconsistentModelFile(
            f"the file {found}, not the expected {expected.strip()!r}: it is not the file that was "
            "published; ask the publisher for it.")

