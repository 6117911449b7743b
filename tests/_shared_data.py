"""Where the real data sets are: ``DPERM_DATA`` (the package never assumes it exists)."""

import os
from pathlib import Path

DATA_HOME_ENV = "DPERM_DATA"
#: The files each data set needs under ``$DPERM_DATA/<data set>/``.
SHARED_FILES = {
    "adult": ("adult.data", "adult.test"),
    "kddcup99": ("kddcup.data_10_percent.gz", "corrected.gz"),
}


def shared_data_home(dataset: str) -> Path | None:
    """``$DPERM_DATA`` if it holds ``dataset``'s files, else ``None``."""
    home = os.environ.get(DATA_HOME_ENV)
    if not home or not all((Path(home) / dataset / name).is_file() for name in SHARED_FILES[dataset]):
        return None
    return Path(home)
