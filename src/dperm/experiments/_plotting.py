"""Matplotlib for the experiments' PNG files, when the ``plot`` extra is installed."""

from __future__ import annotations


def pyplot_or_none():
    """``matplotlib.pyplot`` on the file-only Agg backend, or ``None`` without matplotlib.

    The experiments then write their numbers (CSV/JSON, report) and skip the plots.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
