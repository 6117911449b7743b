"""``fallback="majority"``: a classifier that privately falls back to the majority class.

The fit spends ``(1 - s) epsilon`` on its ERM mechanism as before and ``s epsilon``
(:func:`dperm.privacy.fallback.fallback_calibration`, public n, K and epsilon) on a private
choice between the released model and the constant model: the training rows' correct count of
the model and the class counts, with exact discrete Laplace noise
(:mod:`dperm.mechanisms.fallback`). When the constant's noisy count is larger, ``coef_`` is 0
and ``intercept_`` the log-odds (multinomial: log) of the noisy class frequencies, so
``predict`` gives the noisy majority class and ``predict_proba`` its frequency. The whole
``epsilon`` is spent once, after every check and before any noise. The record states the
share, the noise and the choice (``privacy_.fallback_*``). docs/defaults_classifiers.md,
"The majority fallback", has the proof and the measurements.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from sklearn.utils._param_validation import StrOptions

from dperm.exceptions import NoiseSwampsSignalError
from dperm.mechanisms.fallback import constant_intercepts, release_fallback
from dperm.privacy.fallback import (
    AUTO,
    FALLBACK_MAX_SHARE,
    MAJORITY,
    fallback_calibration,
    resolve_fallback,
    split_epsilon,
)
from dperm.privacy.labels import LabelSet

__all__ = ["FALLBACK_OPTIONS", "FallbackMixin"]

#: Values of ``fallback`` (``None``: off). ``"auto"`` (the default) is ``"majority"`` for two
#: labels with an intercept on in-memory rows, else off (:func:`dperm.privacy.fallback.resolve_fallback`).
FALLBACK_OPTIONS = (MAJORITY, AUTO)


def _total_for_share(erm_epsilon: float, n_samples: int, n_classes: int) -> float:
    """The smallest total epsilon (3 digits, rounded up) whose ERM share is at least ``erm_epsilon``."""
    def share(total):
        return split_epsilon(total, fallback_calibration(n_samples, n_classes, total))

    total = erm_epsilon / (1.0 - FALLBACK_MAX_SHARE)  # the share is at most s_max: enough
    low = erm_epsilon
    for _ in range(200):  # bisection: share(total) grows with total
        middle = 0.5 * (low + total)
        if share(middle) >= erm_epsilon:
            total = middle
        else:
            low = middle
    digits = 10.0 ** (math.floor(math.log10(total)) - 2)
    rounded = math.ceil(total / digits) * digits
    return rounded if share(rounded) >= erm_epsilon else total


class FallbackMixin:
    """The majority fallback for a linear classifier (put first in the bases)."""

    _fallback_constraints: dict = {"fallback": [None, StrOptions(set(FALLBACK_OPTIONS))]}

    def _check_params(self):
        params = super()._check_params()
        if self.fallback == MAJORITY and not self.fit_intercept:
            raise ValueError("fallback='majority' needs fit_intercept=True: the constant model it may "
                             "release is an intercept. Set fit_intercept=True or fallback=None. "
                             "Nothing was spent.")
        return params

    def _fallback_split(self, params, n_samples, n_classes):
        """``(ERM params, calibration)``: the choice's share from public n, K, epsilon."""
        calibration = fallback_calibration(n_samples, n_classes, params.epsilon)
        return params._replace(epsilon=split_epsilon(params.epsilon, calibration)), calibration

    def _budget_request(self, params):
        """The whole epsilon the user asked for, also while the ERM runs at its share."""
        epsilon, delta, label = super()._budget_request(params)
        total = getattr(self, "_fallback_total_epsilon", None)
        return (epsilon if total is None else total), delta, label

    def _check_budget_for_data(self, params, *args):
        """The ERM's checks at its share; a refusal names the smallest *total* epsilon that passes."""
        total = getattr(self, "_fallback_total_epsilon", None)
        try:
            return super()._check_budget_for_data(params, *args)
        except NoiseSwampsSignalError as error:
            if total is None or getattr(error, "needed", None) is None:
                raise
            needed = _total_for_share(error.needed, self._fallback_n_samples, self._fallback_n_classes)
            raise NoiseSwampsSignalError(
                f"epsilon={total:g} (of which {params.epsilon:.3g} for the model, the rest for the majority "
                f"fallback's choice) {error.reason} Epsilon >= {needed:.3g} would bring it below (or use "
                "more rows or fewer features, or fallback=None). Nothing was spent.") from None

    def _alpha_variant(self) -> str:
        """``alpha="auto"`` is the epsilon-monotone rule while the fallback is on (the pairing
        fitted on the FITTING tables: the fallback repairs the monotone rule's small-table
        losses below the majority class); otherwise the estimator's own rule."""
        if self.alpha == "auto" and getattr(self, "_fallback_on", False):
            from dperm.privacy.alpha import MONOTONE

            return MONOTONE
        return super()._alpha_variant()

    def _fit_rows(self, rows, targets, params):
        classes = targets.label_set.classes
        mode = resolve_fallback(self.fallback, n_classes=classes.size, fit_intercept=self.fit_intercept,
                                engine=rows.engine)
        if mode is None:
            return super()._fit_rows(rows, targets, params)
        if rows.engine != "memory":
            raise ValueError("fallback='majority' is not available for Dask input (its choice counts "
                             "the rows in memory); use fallback=None. Nothing was spent.")
        erm, calibration = self._fallback_split(params, rows.n_samples, classes.size)
        self._fallback_total_epsilon = params.epsilon
        self._fallback_n_samples, self._fallback_n_classes = rows.n_samples, classes.size
        self._fallback_on = True
        try:
            super()._fit_rows(rows, targets, erm)  # public choices, the whole spend, the ERM release
            rng = self._fallback_rng
        finally:
            self._fallback_total_epsilon = None
            self._fallback_rng = None
            self._fallback_on = False
        correct = int(np.count_nonzero(self.predict(rows.X) == targets.y))
        counts = [int(np.count_nonzero(targets.y == label)) for label in classes]
        release = release_fallback(correct, counts, calibration, rows.n_samples, rng)
        if release.choice == "constant":
            self._store_constant(release.class_counts, erm)
        self.privacy_ = self._with_fallback(self.privacy_, params.epsilon, calibration, release.choice)
        return self

    def _solve(self, X, targets, params, rng, effective_norm):
        self._fallback_rng = rng  # the fit's generator: the choice's noise continues its stream
        return super()._solve(X, targets, params, rng, effective_norm)

    def _store_constant(self, counts, params):
        """``coef_ = 0`` and the constant model's intercepts on the release's grid."""
        record = self.privacy_
        grid = record.output_grid or record.noise_grid
        multinomial = getattr(self, "multi_class_", None) == "multinomial"
        self.coef_ = np.zeros_like(self.coef_)
        self.intercept_ = constant_intercepts(counts, multinomial, grid, params.scaling)

    @staticmethod
    def _with_fallback(record, epsilon, calibration, choice):
        return dataclasses.replace(record, epsilon=epsilon, fallback=calibration, fallback_choice=choice)

    def _public_record(self, n_samples, n_features, n_problems=1, *, label_set_public=None,
                       engine="memory"):
        """The record a fit would write (:meth:`PrivateLinearModelBase._public_record`), with the
        fallback's calibration; the choice itself is noised, so it is left out (None)."""
        n_classes = 2 if n_problems == 1 else n_problems
        mode = resolve_fallback(self.fallback, n_classes=n_classes, fit_intercept=self.fit_intercept,
                                engine=engine)
        if mode is None:
            return super()._public_record(n_samples, n_features, n_problems,
                                          label_set_public=label_set_public, engine=engine)
        from dperm.linear_model._base import Targets

        params = self._check_params()
        erm, calibration = self._fallback_split(params, n_samples, n_classes)
        self._fallback_on = True
        try:
            erm = self._with_public_choices(erm, n_samples, n_features, n_problems, check_budget=False)
        finally:
            self._fallback_on = False
        norm = self._effective_norm(erm)
        targets = Targets(None, LabelSet(None, label_set_public))
        record = self._record([erm.calibration] * n_problems, erm, norm, n_samples, targets, engine)
        return self._with_fallback(record, params.epsilon, calibration, None)
