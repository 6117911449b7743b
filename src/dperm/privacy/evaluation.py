"""Private evaluation's arithmetic and record: the sensitivity of each released statistic.

A model fitted privately is public; its predictions on private held-out rows
are not, and neither is any score computed from them. :mod:`dperm.metrics`
releases a score through a mechanism; this module says how much one row can
change each statistic the score is built from (replace-one neighbours, ``n``
public, as everywhere in dperm) and records what was released.

The statistics and their sensitivities (``Delta``, in the statistic's own units):

- the number of correct predictions: ``Delta = 1`` (one row changes one
  indicator);
- a confusion matrix (or any histogram of rows over public cells): ``Delta_1 = 2``
  (one row leaves one cell and enters another);
- a reliability table (rows per probability bin, positives per bin): ``Delta_1 = 4``
  (the row's bin count moves, ``2``, and its positive count moves, ``2``);
- with a target mapped into ``[-r, r]`` by the public bounds (``r = (upper -
  lower) / 2``, centre ``m``) and predictions clipped into the same bounds:
  ``sum (y - yhat)^2`` has ``Delta = (2r)^2`` (each term lies in ``[0, (2r)^2]``),
  ``sum (y - m)`` has ``Delta = 2r`` and ``sum (y - m)^2`` has ``Delta = r^2``.

Each statistic is released with pure-DP noise of scale ``Delta / epsilon_i``
(the Laplace mechanism, Dwork, McSherry, Nissim & Smith 2006, Thm 1; on the
integers, the discrete Laplace of Canonne, Kamath & Steinke 2020, Sec. 2.2) and
several statistics of one score by basic composition, ``sum epsilon_i = epsilon``.
"""

from __future__ import annotations

from dperm.privacy.release import DERIVED, NOISED, PUBLIC, RecordBase, privacy_record, released

__all__ = [
    "COUNT_SENSITIVITY", "EvaluationPrivacyRecord", "HISTOGRAM_SENSITIVITY", "PROTECTS",
    "REFERENCE", "RELIABILITY_SENSITIVITY", "squared_error_sensitivity", "target_radius",
    "target_square_sensitivity", "target_sum_sensitivity",
]

#: What a private score's guarantee covers.
PROTECTS = (
    "each held-out row (replace-one neighbours, n public): the score is epsilon-DP in the rows "
    "of y_true and of the data the predictions were made on, given a model that is itself public."
)

REFERENCE = (
    "Laplace mechanism: Dwork, McSherry, Nissim & Smith 2006, Thm 1; exact integer noise: "
    "Canonne, Kamath & Steinke 2020, Sec. 2.2; composition: Dwork & Roth 2014, Thm 3.14."
)

#: One row's change of the number of correct predictions.
COUNT_SENSITIVITY = 1
#: One row's change, in L1, of a histogram of rows over public cells.
HISTOGRAM_SENSITIVITY = 2
#: One row's change, in L1, of a reliability table (bin counts and positives per bin).
RELIABILITY_SENSITIVITY = 4


def target_radius(y_bounds: tuple[float, float]) -> tuple[float, float]:
    """The centre ``m`` and half-width ``r`` of the public target range ``[lower, upper]``."""
    lower, upper = y_bounds
    return (lower + upper) / 2.0, (upper - lower) / 2.0


def squared_error_sensitivity(radius: float) -> float:
    """``Delta`` of ``sum (y - yhat)^2`` with ``y`` and ``yhat`` in ``[m - r, m + r]``: ``(2r)^2``."""
    return (2.0 * radius) ** 2


def target_sum_sensitivity(radius: float) -> float:
    """``Delta`` of ``sum (y - m)``: one term in ``[-r, r]`` replaced, ``2r``."""
    return 2.0 * radius


def target_square_sensitivity(radius: float) -> float:
    """``Delta`` of ``sum (y - m)^2``: one term in ``[0, r^2]`` replaced, ``r^2``."""
    return radius * radius


@privacy_record
class EvaluationPrivacyRecord(RecordBase):
    """What a private score (:mod:`dperm.metrics`) guarantees, and how it was noised.

    Attributes
    ----------
    metric : str
        The score's name (``"accuracy"``, ``"confusion_matrix"``, ``"r2"``, ...).
    epsilon, delta : float
        The guarantee (``delta`` is 0: every score here is pure DP).
    n_samples : int
        The number of held-out rows, public under replace-one neighbours.
    statistics : tuple of str
        The statistics released, in order.
    sensitivities : tuple of float
        One row's largest change of each statistic (L1 for a vector).
    epsilons : tuple of float
        The share of ``epsilon`` each statistic was released with.
    noise_scales : tuple of float
        The Laplace scale of each statistic's noise, ``sensitivity / epsilon_i``
        (on a grid for real-valued statistics; exact integers for counts).
    noise_distribution : str
        ``"discrete-laplace"``.
    value : float or tuple
        The released score, computed from the noised statistics only.
    y_bounds : tuple of float or None
        The public target range (regression scores).
    labels : tuple or None
        The public label set (classification scores).
    fits : str or None
        :func:`dperm.metrics.cross_val_score`: the fits' share of the budget.
    protects, reference : str
    """

    metric: str = released(PUBLIC)
    epsilon: float = released(PUBLIC)
    delta: float = released(PUBLIC)
    n_samples: int = released(PUBLIC)
    statistics: tuple = released(PUBLIC)
    sensitivities: tuple = released(PUBLIC)
    epsilons: tuple = released(PUBLIC)
    noise_scales: tuple = released(DERIVED)
    noise_distribution: str = released(PUBLIC)
    value: object = released(NOISED)
    y_bounds: tuple | None = released(PUBLIC, None)
    labels: tuple | None = released(PUBLIC, None)
    fits: str | None = released(PUBLIC, None)
    protects: str = released(PUBLIC, PROTECTS)
    reference: str = released(PUBLIC, REFERENCE)

    def summary(self) -> str:
        """One line: the metric, its value and its guarantee."""
        value = self.value if isinstance(self.value, (list, tuple)) else f"{self.value:.4g}"
        return f"private {self.metric} = {value} on {self.n_samples} rows, {self.guarantee}"
