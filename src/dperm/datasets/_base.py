"""Where dataset files come from, and checking that they are the published ones.

A loader reads either the copy embedded in the package (``datasets/data/*.gz``)
or a directory the user names with ``data_home`` or the ``DPERM_DATA``
environment variable. Either way the bytes are checked against a pinned
SHA-256 before they are parsed. Data sets too large to embed (KDD Cup 99) must
come from such a directory (:func:`require_data_home`); gzipped files may be
checked by their own digest or by that of their content
(:func:`verify_gzip_sha256`). Nothing here assumes any directory outside the
package exists.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from importlib import resources
from pathlib import Path

#: Environment variable naming a directory that holds ``<dataset>/<file>``.
DATA_HOME_ENV = "DPERM_DATA"

EMBEDDED = "embedded"


def _embedded_path(filename: str):
    """Traversable for ``dperm/datasets/data/<filename>`` inside the installed package."""
    return resources.files("dperm.datasets").joinpath("data", filename)


def read_embedded_gz(filename: str) -> bytes:
    """Uncompressed bytes of the gzipped ``<filename>.gz`` shipped with dperm."""
    return gzip.decompress(_embedded_path(f"{filename}.gz").read_bytes())


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
    directory, absent = _directory(home, dataset, filenames)
    if not absent:
        return directory
    if explicit:
        raise FileNotFoundError(
            f"data_home={str(data_home)!r} does not contain {dataset}/{absent[0]}; "
            f"expected the files {[f'{dataset}/{name}' for name in filenames]}, or pass "
            "data_home=None to use the copy embedded in dperm."
        )
    return None


def _directory(home, dataset: str, filenames) -> tuple[Path, list]:
    """``<home>/<dataset>`` and the names of ``filenames`` it lacks."""
    directory = Path(home).expanduser().absolute() / dataset
    return directory, [name for name in filenames if not (directory / name).is_file()]


def public_spec(attributes, categories: dict, numeric: dict, row_norm_mode: str):
    """The :class:`~dperm.tabular.TabularSpec` of a data set's public schema, rows scaled to norm at most 1.

    ``categories``: attribute -> its public value list (one-hot); ``numeric``: attribute ->
    ``(lower, upper, transform)``, its public range (scaled to [0, 1]).
    """
    from dperm.tabular import CategoricalColumn, NumericColumn, TabularSpec

    columns = [CategoricalColumn(name, categories[name]) if name in categories else NumericColumn(name, *numeric[name])
               for name in attributes]
    return TabularSpec(columns, row_norm_mode=row_norm_mode, data_norm=1.0)


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verify_sha256(data: bytes, expected: str, where: str) -> None:
    """Raise ValueError when ``data`` is not the file pinned by ``expected``."""
    actual = _sha256_hex(data)
    if actual != expected:
        raise ValueError(
            f"{where} failed its checksum: sha256 {actual} but expected {expected}. "
            "The file is corrupted or is not the published version; replace it with "
            "the original (or use the copy embedded in dperm with data_home=None)."
        )


def verify_gzip_sha256(data: bytes, expected: str, expected_content: str, where: str) -> bytes:
    """Decompressed bytes of a gzip file, checked against pinned SHA-256 digests.

    The file is accepted when its own bytes have SHA-256 ``expected`` or, failing
    that, when its decompressed content has SHA-256 ``expected_content``: a
    different gzip of the same content (another compression level, name or
    mtime in the header) is the same data set. Anything else raises ValueError.
    """
    if _sha256_hex(data) == expected:
        return gzip.decompress(data)
    try:
        content = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(
            f"{where} failed its checksum: sha256 {_sha256_hex(data)} but expected "
            f"{expected}, and it is not a readable gzip file ({error}). The file is "
            "corrupted or truncated; download it again."
        ) from None
    actual = _sha256_hex(content)
    if actual != expected_content:
        raise ValueError(
            f"{where} failed its checksum: sha256 {_sha256_hex(data)} (uncompressed "
            f"{actual}) but expected {expected} (uncompressed {expected_content}). "
            "The file is corrupted or is not the published version; download it again."
        )
    return content


def file_stamp(path: Path) -> tuple[int, int]:
    """(size, mtime_ns): changes when a file is replaced, so caches keyed on it stay valid."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def require_data_home(data_home, dataset: str, filenames, *, how_to_get: str = "") -> Path:
    """Directory ``<home>/<dataset>`` holding every file, for a data set dperm does not embed.

    ``home`` is ``data_home`` when given, else the ``DPERM_DATA`` environment
    variable. Unlike :func:`resolve_data_home` there is no embedded fallback, so
    a missing directory or file raises FileNotFoundError naming where dperm
    looked and how to get the files (``how_to_get`` is appended to the message).
    """
    wanted = [f"{dataset}/{name}" for name in filenames]
    if data_home is not None:
        home, origin = data_home, f"data_home={str(data_home)!r}"
    else:
        home = os.environ.get(DATA_HOME_ENV) or None
        origin = f"{DATA_HOME_ENV}={home!r}"
    if home is None:
        raise FileNotFoundError(
            f"The {dataset} files {wanted} are not embedded in dperm and no data "
            f"directory was given: pass data_home=<directory containing {dataset}/>, "
            f"or set the {DATA_HOME_ENV} environment variable to it. {how_to_get}".rstrip()
        )
    directory, absent = _directory(home, dataset, filenames)
    if absent:
        raise FileNotFoundError(
            f"{origin} does not contain {dataset}/{absent[0]} (looked in {directory}); "
            f"expected the files {wanted}. Pass data_home=<directory containing "
            f"{dataset}/> or set {DATA_HOME_ENV}. {how_to_get}".rstrip()
        )
    return directory
