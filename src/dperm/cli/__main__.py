"""``python -m dperm.cli``: the ``dperm`` command."""

import sys

from dperm.cli import main

if __name__ == "__main__":  # importing this module (pkgutil.walk_packages does) runs nothing
    sys.exit(main())
