"""What every experiment shares: progress line, test error, summary statistics, file writers.

The reproductions (:mod:`~dperm.experiments.chaudhuri2011`,
:mod:`~dperm.experiments.rajkumar2012`, :mod:`~dperm.experiments.learning_rates`)
and the demo (:mod:`~dperm.experiments.demo`) write their numbers as JSON and
CSV, their prose as Markdown and their figures as PNG through these helpers,
so one change of format reaches all of them. See ``docs/design/experiments.md``.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import numpy as np


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------
def report_progress(stream, done: int, total: int, started: float, what: str) -> None:
    """Overwrite one progress line ``[done/total] seconds  what`` on ``stream``; end it at the last task.

    ``stream`` is ``None`` for silence; ``started`` is a :func:`time.perf_counter` reading.
    """
    if stream is None:
        return
    elapsed = time.perf_counter() - started
    print(f"\r[{done}/{total}] {elapsed:6.1f}s  {what}        ", end="", file=stream, flush=True)
    if done == total:
        print(file=stream)


def say(stream, message: str) -> None:
    """Print one line of progress (a step of a run) on ``stream`` unless it is ``None``."""
    if stream is not None:
        print(message, file=stream, flush=True)


# ---------------------------------------------------------------------------
# Errors and statistics
# ---------------------------------------------------------------------------
def signed_labels(y) -> np.ndarray:
    """Labels in {0, 1} (or already in {-1, +1}) as floats in {-1, +1}: ``+1`` where ``y == 1``."""
    return np.where(np.asarray(y) == 1, 1.0, -1.0)


def misclassification_error(coef, X, y_signed) -> float:
    """Test error of the linear classifier ``sign(x.w)`` (a score of 0 counts as ``-1``)."""
    return float(np.mean(np.where(X @ coef > 0, 1.0, -1.0) != y_signed))


def uniform_ball(n_points: int, dimension: int, rng) -> np.ndarray:
    """``n`` points uniform in the interior of the unit ball of R^d (004 Sec. 6.1).

    Direction: a normalised standard Gaussian vector (uniform on the sphere);
    radius: ``U^(1/d)`` with ``U`` uniform on [0, 1], whose law ``r^d`` is the
    ball's volume fraction.
    """
    directions = rng.standard_normal((n_points, dimension))
    directions /= np.linalg.norm(directions, axis=1)[:, None]
    return directions * rng.uniform(size=n_points)[:, None] ** (1.0 / dimension)


def summary_stats(values) -> dict:
    """``mean``, ``std`` (``ddof=1``; 0 for one value), standard error ``se = std / sqrt(n)`` and ``n``."""
    values = np.asarray(values, dtype=float)
    std = float(values.std(ddof=1)) if values.size > 1 else 0.0
    return {"mean": float(values.mean()), "std": std, "se": std / np.sqrt(values.size), "n": int(values.size)}


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------
def output_dir(out_dir) -> Path:
    """``out_dir`` as a :class:`~pathlib.Path`, created with its parents if missing."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def write_json(path, document, *, indent: int = 2, default=None, allow_nan: bool = True) -> Path:
    """Write ``document`` as indented UTF-8 JSON with a final newline; return the path."""
    path = Path(path)
    path.write_text(json.dumps(document, indent=indent, default=default, allow_nan=allow_nan) + "\n",
                    encoding="utf-8")
    return path


def write_csv(path, columns, rows) -> Path:
    """Write a header of ``columns`` and one line per dict in ``rows`` (keys not in ``columns`` ignored)."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_lines(path, lines) -> Path:
    """Write text lines (a Markdown report) joined by newlines, with a final newline."""
    path = Path(path)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------
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


def save_figure(plt, fig, path, dpi: int) -> Path:
    """Lay out ``fig``, save it as PNG at ``path``, close it; return the path."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return Path(path)
