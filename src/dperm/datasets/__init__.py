"""Benchmark data sets, checked by SHA-256.

``load_adult`` returns UCI Adult (Becker & Kohavi 1996, CC BY 4.0,
https://doi.org/10.24432/C5XW20; Dua & Graff 2019, UCI ML Repository) encoded
with a public schema as in Chaudhuri et al. (2011), Sec. 7.1; its files are
embedded in dperm.

``load_kddcup99`` returns KDD Cup 1999 (Stolfo et al. 1999, CC BY 4.0,
https://doi.org/10.24432/C51C7N) for denial-of-service detection, encoded the
same way; its files are too large to embed and are read from ``data_home`` or
``DPERM_DATA``. ``download`` fetches either data set's original files from the
UCI archive.
"""

from dperm.datasets._adult import ADULT_ENCODINGS, adult_spec, load_adult
from dperm.datasets._base import DATA_HOME_ENV
from dperm.datasets._download import download
from dperm.datasets._kddcup import (
    KDDCUP99_DOS_LABELS,
    KDDCUP99_ENCODINGS,
    KDDCUP99_FULL_CLASS_COUNTS,
    kddcup99_spec,
    load_kddcup99,
)

__all__ = [
    "ADULT_ENCODINGS",
    "DATA_HOME_ENV",
    "KDDCUP99_DOS_LABELS",
    "KDDCUP99_ENCODINGS",
    "KDDCUP99_FULL_CLASS_COUNTS",
    "adult_spec",
    "download",
    "kddcup99_spec",
    "load_adult",
    "load_kddcup99",
]
