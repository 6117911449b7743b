"""Where dataset files come from, and checking that they are the published ones.

A loader reads either the copy embedded in the package (``datasets/data/*.gz``)
or a directory the user names with ``data_home`` or the ``DPERM_DATA``
environment variable. Either way the uncompressed bytes are checked against a
pinned SHA-256 before they are parsed. Nothing here assumes any directory
outside the package exists.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from importlib import resources
from pathlib import Path

#: Environment variable naming a directory that holds ``<dataset>/<file>``.
DATA_HOME_ENV = "DPERM_DATA"

EMBEDDED = "embedded"


def embedded_path(filename: str):
    """Traversable for ``dperm/datasets/data/<filename>`` inside the installed package."""
    return resources.files("dperm.datasets").joinpath("data", filename)


def read_embedded_gz(filename: str) -> bytes:
    """Uncompressed bytes of the gzipped ``<filename>.gz`` shipped with dperm."""
    return gzip.decompress(embedded_path(f"{filename}.gz").read_bytes())


def resolve_data_home(data_home, dataset: str, filenames) -> Path | None:
    """Directory ``<home>/<dataset>`` to read from, or None for the embedded copy.

    An explicit ``data_home`` must contain every file (else FileNotFoundError).
    When only ``DPERM_DATA`` is set and lacks the files, the embedded copy is
    used, since that directory may serve other datasets.
    """
    explicit = data_home is not None
    home = data_home if explicit else os.environ.get(DATA_HOME_ENV) or None
    if home is None:
        return None
    directory = Path(home).expanduser().absolute() / dataset
    absent = [name for name in filenames if not (directory / name).is_file()]
    if not absent:
        return directory
    if explicit:
        raise FileNotFoundError(
            f"data_home={str(data_home)!r} does not contain {dataset}/{absent[0]}; "
            f"expected the files {[f'{dataset}/{name}' for name in filenames]}, or pass "
            "data_home=None to use the copy embedded in dperm."
        )
    return None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verify_sha256(data: bytes, expected: str, where: str) -> None:
    """Raise ValueError when ``data`` is not the file pinned by ``expected``."""
    actual = sha256_hex(data)
    if actual != expected:
        raise ValueError(
            f"{where} failed its checksum: sha256 {actual} but expected {expected}. "
            "The file is corrupted or is not the published version; replace it with "
            "the original (or use the copy embedded in dperm with data_home=None)."
        )


def file_stamp(path: Path) -> tuple[int, int]:
    """(size, mtime_ns): changes when a file is replaced, so caches keyed on it stay valid."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns
