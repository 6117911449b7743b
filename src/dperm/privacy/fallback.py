"""The majority fallback's calibration: its share of epsilon and its noise, from public inputs only.

A classifier fitted with ``fallback="majority"`` spends ``(1 - s) epsilon`` on its ERM
mechanism and ``s epsilon`` on a private choice between the fitted model and the constant
model (the privately estimated majority class): the training rows' score vector

    v = (correct(theta), h_1)               two labels (n public: h_0 = n - h_1)
    v = (correct(theta), h_0, ..., h_K-1)    K >= 3 labels

is released with independent discrete Laplace noise of scale ``Delta / (s epsilon)`` per
coordinate, where ``correct(theta)`` is how many rows the released model labels correctly and
``h`` the class histogram. Under replace-one neighbours (n fixed and public) one row changes
``correct`` by at most 1 (theta is an already-released output, so it is fixed when the counts
are taken), ``h_1`` by at most 1 and ``h`` by at most 2 in L1, so ``||v - v'||_1 <= Delta``
with ``Delta = 2`` (two labels) or ``3``; the discrete Laplace mechanism is then
``s epsilon``-DP (Ghosh, Roughgarden & Sundararajan 2012; Canonne, Kamath & Steinke 2020,
Sec. 2), adaptive sequential composition gives ``(epsilon, delta)`` for the pair
(Dwork & Roth 2014, Thm 3.16 with the adaptive form of Sec. 3.5), and the choice and the
constant model are post-processing. docs/defaults_classifiers.md ("The majority fallback")
derives the share rule and says on which tables its constants were fitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "AUTO", "FALLBACK_CHOICES", "FALLBACK_MAX_SHARE", "FALLBACK_SCALE", "MAJORITY", "RECIPE_INTERCEPT_SCALING",
    "FallbackCalibration",
    "fallback_calibration", "fallback_sensitivity", "fallback_share", "resolve_fallback", "split_epsilon",
]

#: What the choice released: the fitted model or the constant (majority) model.
FALLBACK_CHOICES = ("model", "constant")
#: ``kappa`` of the share rule ``s = min(s_max, kappa Delta / (n epsilon))``: the choice's noise
#: is then ``2 / kappa`` of the accuracy scale per score (``b / n``). Fitted on the FITTING
#: binary tables only (benchmarks/fallback_fit.py).
FALLBACK_SCALE = 100.0
#: ``s_max``: the share never exceeds it (fitted with ``FALLBACK_SCALE``).
FALLBACK_MAX_SHARE = 0.3
#: The constant feature of the intercept that ``make_private_pipeline(fit_intercept="auto")`` and
#: ``dperm train`` give a two-label classifier with the fallback, on the centred recipe (the
#: constant model the fallback may release is an intercept). A public constant: the norm bound
#: becomes ``sqrt(R^2 + 0.25)``. Chosen among 1, 0.5 and 0.25 on the FITTING binary tables only
#: (benchmarks/fallback_recipe_fit.py; docs/defaults_classifiers.md, "dperm train").
RECIPE_INTERCEPT_SCALING = 0.5


@dataclass(frozen=True)
class FallbackCalibration:
    """How the majority fallback's choice is calibrated (public inputs only).

    Attributes
    ----------
    share : float
        ``s``: the part of the fit's epsilon spent on the choice.
    epsilon : float
        ``s epsilon``: the choice's pure epsilon (the ERM mechanism runs at the rest).
    sensitivity : int
        ``Delta``: L1 sensitivity of the released score vector (2 for two labels, else 3).
    noise_scale : float
        ``Delta / (s epsilon)``: scale of the discrete Laplace noise on each integer score
        (the sampler uses the exact rational of the same value).
    """

    share: float
    epsilon: float
    sensitivity: int
    noise_scale: float

    @property
    def exact_scale(self) -> Fraction:
        """The noise scale as the exact rational the sampler draws with: ``Delta / eps_c``."""
        return Fraction(self.sensitivity) / Fraction(self.epsilon)


def fallback_sensitivity(n_classes: int) -> int:
    """``Delta``: the score vector's L1 sensitivity under replace-one (see the module docstring)."""
    if n_classes < 2:
        raise ValueError(f"n_classes must be >= 2; got {n_classes}.")
    return 2 if n_classes == 2 else 3


def fallback_share(n_samples: int, n_classes: int, epsilon: float) -> float:
    """``s = min(s_max, kappa Delta / (n epsilon))``: the choice's share of epsilon.

    The choice compares two noisy counts; their difference has standard deviation
    ``2 b`` with ``b = Delta / (s epsilon)`` (a discrete Laplace count has variance about
    ``2 b^2``), i.e. ``2 Delta / (s epsilon n)`` in accuracy. Holding that at ``2 / kappa``
    gives the rule; ``s_max`` keeps most of a small budget for the model.
    Public ``n``, ``K`` and ``epsilon`` only.
    """
    if not (n_samples >= 1 and epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"need n_samples >= 1 and a finite epsilon > 0; got {n_samples}, {epsilon}.")
    delta_l1 = fallback_sensitivity(n_classes)
    return min(FALLBACK_MAX_SHARE, FALLBACK_SCALE * delta_l1 / (n_samples * epsilon))


def fallback_calibration(n_samples: int, n_classes: int, epsilon: float,
                         share: float | None = None) -> FallbackCalibration:
    """The choice's :class:`FallbackCalibration` for a fit of total ``epsilon`` (``share`` if given).

    ``epsilon - calibration.epsilon`` is what the ERM mechanism gets; their float sum never
    exceeds ``epsilon`` (:func:`split_epsilon`).
    """
    share = fallback_share(n_samples, n_classes, epsilon) if share is None else float(share)
    if not 0 < share < 1:
        raise ValueError(f"the fallback's share of epsilon must lie in (0, 1); got {share!r}.")
    delta_l1 = fallback_sensitivity(n_classes)
    choice_epsilon = share * epsilon
    return FallbackCalibration(share, choice_epsilon, delta_l1,
                               float(Fraction(delta_l1) / Fraction(choice_epsilon)))


def split_epsilon(epsilon: float, calibration: FallbackCalibration) -> float:
    """The ERM mechanism's epsilon: ``epsilon - eps_c``, stepped down so that the float sum of
    the two parts never exceeds ``epsilon`` (the budget the user asked for)."""
    rest = epsilon - calibration.epsilon
    while rest + calibration.epsilon > epsilon:
        rest = math.nextafter(rest, 0.0)
    return rest


#: ``fallback`` values (:func:`resolve_fallback`).
MAJORITY = "majority"
AUTO = "auto"


def resolve_fallback(fallback, *, n_classes: int, fit_intercept: bool, engine: str = "memory"):
    """``"majority"`` or ``None``: what ``fallback`` means for a fit, from public inputs only.

    ``"auto"`` turns the fallback on where it was measured to help (docs/defaults_classifiers.md,
    "The default"): two labels, an intercept (the constant model is one) and in-memory rows (the
    choice counts them in memory). With three or more labels it stays off: on the multiclass
    evaluation tables the choice's share cost more accuracy than the constant saved.
    """
    if fallback == AUTO:
        return MAJORITY if (n_classes == 2 and fit_intercept and engine == "memory") else None
    return fallback
