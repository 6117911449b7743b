"""The majority fallback's release: noisy scores, the private choice, the constant model.

A stage after any ERM mechanism, not a row of :data:`dperm.mechanisms.catalog.MECHANISMS`
(those release a coefficient vector from a public problem; this one releases a choice
between an already-released model and a constant, whatever row fitted it). Its calibration
is :func:`dperm.privacy.fallback.fallback_calibration`; the proof is in that module's
docstring. Everything here after :func:`noisy_scores` is post-processing of its output.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dperm.mechanisms.noise import sample_discrete_laplace
from dperm.privacy.fallback import FallbackCalibration

__all__ = [
    "FallbackRelease", "choose", "class_shares", "constant_intercepts", "noisy_scores", "release_fallback",
    "score_vector",
]


class FallbackRelease(NamedTuple):
    """What the choice released: ``"model"`` or ``"constant"``, and the noisy class counts."""

    choice: str
    class_counts: np.ndarray  # noisy, one per class (two labels: n - h_1 and h_1)


def score_vector(correct: int, class_counts, n_classes: int) -> list[int]:
    """The integer vector released: ``(correct, h_1)`` for two labels, ``(correct, h)`` else.

    With two labels ``h_0 = n - h_1`` follows from the public ``n``, so only ``h_1`` is
    released (L1 sensitivity 1 + 1 = 2; with ``K >= 3``, 1 + 2 = 3).
    """
    counts = [int(c) for c in class_counts]
    if len(counts) != n_classes:
        raise ValueError(f"expected {n_classes} class counts; got {len(counts)}.")
    return [int(correct)] + (counts[1:] if n_classes == 2 else counts)


def noisy_scores(scores, calibration: FallbackCalibration, rng) -> list[int]:
    """Each integer score plus exact discrete Laplace noise of scale ``Delta / eps_c``.

    :func:`dperm.mechanisms.noise.sample_discrete_laplace` with the exact rational scale
    (:attr:`~dperm.privacy.fallback.FallbackCalibration.exact_scale`): integers in, integers
    out, no floating point, so nothing about the scores leaks through rounding.
    """
    scale = calibration.exact_scale
    return [int(s) + sample_discrete_laplace(scale, rng) for s in scores]


def choose(noisy, n_samples: int, n_classes: int) -> FallbackRelease:
    """Post-processing: the constant model when its noisy correct count beats the model's.

    The constant model labels every row with the class of the largest noisy count, so its
    noisy correct count is ``max_k h~_k`` (two labels: ``h~_0 = n - h~_1``). Ties keep the
    model.
    """
    correct = noisy[0]
    counts = ([n_samples - noisy[1], noisy[1]] if n_classes == 2 else list(noisy[1:]))
    counts = np.asarray(counts, dtype=np.int64)
    choice = "constant" if int(counts.max()) > correct else "model"
    return FallbackRelease(choice, counts)


def release_fallback(correct: int, class_counts, calibration: FallbackCalibration, n_samples: int,
                     rng) -> FallbackRelease:
    """Noisy scores (the one private step), then the choice (post-processing)."""
    n_classes = len(class_counts)
    noisy = noisy_scores(score_vector(correct, class_counts, n_classes), calibration, rng)
    return choose(noisy, n_samples, n_classes)


def class_shares(counts) -> np.ndarray:
    """The noisy class frequencies, each count floored at 1/2 (a noisy count can be <= 0)."""
    floored = np.maximum(np.asarray(counts, dtype=np.float64), 0.5)
    return floored / floored.sum()


def constant_intercepts(counts, multinomial: bool, grid: float, scaling: float) -> np.ndarray:
    """The constant model's intercepts from the noisy counts, on the release's grid.

    Multinomial (softmax) model: ``log p_k``; one-vs-rest: ``logit p_k`` per class; two
    labels: one intercept ``logit p_1``. ``p`` are :func:`class_shares`. Each is rounded to a
    multiple of ``grid * scaling`` (the grid every released coefficient lies on, so model files
    check it as any other; ``scaling`` the intercept's feature value), never rounded to 0 when
    it is not 0, so the argmax is the noisy majority class. A function of the noisy counts only.
    """
    shares = class_shares(counts)
    if multinomial:
        values = np.log(shares)
    elif shares.size == 2:
        values = np.array([math.log(shares[1] / shares[0])])
    else:
        values = np.log(shares) - np.log1p(-np.minimum(shares, 1 - 1e-12))
    step = grid * scaling
    steps = np.round(values / step)
    steps = np.where((steps == 0) & (values != 0), np.sign(values), steps)
    return (steps * grid) * scaling
