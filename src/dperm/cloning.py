"""A :class:`~dperm.exceptions.BudgetWarning` when scikit-learn clones a private estimator.

``cross_val_score``, ``cross_validate``, ``GridSearchCV`` and the other tools of
:mod:`sklearn.model_selection` clone the estimator they are given and fit every
clone on (part of) the same data. Each fit of a private estimator spends its
``epsilon`` again, so the guarantees of those fits add up (basic composition),
and the scores such a tool returns are computed from the private rows without
any noise. :class:`BudgetOnCloneMixin` says so once.

When it fires: :func:`sklearn.base.clone` calls ``__sklearn_clone__``
(scikit-learn >= 1.3); the mixin looks at who asked for the clone, past the
frames of scikit-learn and joblib. If that is code outside dperm, it warns;
if it is dperm itself (:class:`~dperm.PrivateParameterSearch`, the audit, the
multiparty and experiment code, a dperm estimator cloning its parameters), it
stays silent: those spend their budget on purpose and account for it.

How often: **once per estimator instance**, and never for a clone of an
instance that was already warned about. ``cross_val_score(model, ...)`` warns
once, however many folds; so does a ``GridSearchCV`` (which clones its clone
for every candidate); calling either again with the same ``model`` is silent;
a new estimator object warns again. Per instance rather than per class so
that a second, unrelated search in the same process is not silent.
"""

from __future__ import annotations

import sys
import weakref

from dperm.exceptions import BudgetWarning, library_prefixes, warn_at_caller

__all__ = ["BudgetOnCloneMixin", "clone_message"]

#: Instances already warned about, and their clones (weak: they are not kept alive).
_WARNED: weakref.WeakSet = weakref.WeakSet()


def _cloned_from_outside_dperm(frame) -> bool:
    """Whether the first frame from ``frame`` outward that is not scikit-learn's or joblib's is not dperm's."""
    dperm, *others = library_prefixes()
    others = tuple(others)
    while frame is not None and others and frame.f_code.co_filename.startswith(others):
        frame = frame.f_back
    return frame is not None and not frame.f_code.co_filename.startswith(dperm)


def clone_message(estimator) -> str:
    """The warning's one paragraph."""
    name = type(estimator).__name__
    epsilon = getattr(estimator, "epsilon", getattr(estimator, "epsilon_total", None))
    spent = f"epsilon={epsilon:g}" if isinstance(epsilon, (int, float)) else "its epsilon"
    tuning = ("" if name == "PrivateParameterSearch" else
              "To choose hyper-parameters under one stated budget, use dperm.PrivateParameterSearch. ")
    return (
        f"{name} was cloned, as cross-validation and parameter searches (cross_val_score, "
        f"GridSearchCV, ...) do for every fit: each fit of a clone spends {spent} again, "
        "and on the same data the guarantees add up (k fits cost k times the budget; a "
        "shared accountant=BudgetAccountant(...) refuses fits past a total). The scores "
        "such a tool returns are computed from the private rows without noise and are not "
        f"covered by any guarantee. {tuning}To publish a score, use dperm.metrics (private scores, "
        "each with its epsilon) or dperm.metrics.cross_val_score (one stated budget for all "
        "folds). This warning is shown once per estimator."
    )


class BudgetOnCloneMixin:
    """Warn once when code outside dperm clones this private estimator (see the module).

    Put it before :class:`sklearn.base.BaseEstimator` in the bases.
    """

    def __sklearn_clone__(self):
        cloned = super().__sklearn_clone__()
        if self in _WARNED:
            _WARNED.add(cloned)
        elif _cloned_from_outside_dperm(sys._getframe(1)):
            warn_at_caller(clone_message(self), BudgetWarning)
            _WARNED.add(self)
            _WARNED.add(cloned)
        return cloned
