"""Benchmark data sets, embedded in the package and checked by SHA-256.

``load_adult`` returns UCI Adult (Becker & Kohavi 1996, CC BY 4.0,
https://doi.org/10.24432/C5XW20; Dua & Graff 2019, UCI ML Repository) encoded
with a public schema as in Chaudhuri et al. (2011), Sec. 7.1.
"""

from dperm.datasets._adult import ADULT_ENCODINGS, adult_spec, load_adult
from dperm.datasets._base import DATA_HOME_ENV

__all__ = ["ADULT_ENCODINGS", "DATA_HOME_ENV", "adult_spec", "load_adult"]
