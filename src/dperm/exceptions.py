"""Warnings and errors that dperm raises, and :func:`warn_at_caller` that issues the warnings.

Modelled on diffprivlib's ``utils.py``: a privacy-specific warning category lets
users promote it to an error with :func:`warnings.simplefilter`.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = [
    "BudgetExceededError", "BudgetWarning", "CalibrationRefusedError", "CertificateError",
    "DataClippingWarning", "DistributedFitError", "DropoutError", "MalformedReplyError",
    "NoiseSwampsSignalError", "PartyUnavailableError", "PrivacyLeakWarning",
    "SecureSumClippingWarning", "SecureSumIntegrityError", "WeakGuaranteeWarning", "library_prefixes",
    "user_stacklevel", "warn_at_caller",
]


def _package_prefix(module_name: str) -> str | None:
    """The directory of an imported package, with a trailing separator (None if not imported)."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else None


#: Libraries whose frames a warning skips to reach the user's line: dperm itself,
#: and scikit-learn and joblib, through which pipelines, cross-validation and
#: searches call dperm.
_LIBRARY_PACKAGES = ("sklearn", "joblib")
_DPERM_PREFIX = os.path.dirname(os.path.abspath(__file__)) + os.sep


def library_prefixes() -> tuple[str, ...]:
    """Directory prefixes of dperm, scikit-learn and joblib (those imported)."""
    others = (_package_prefix(name) for name in _LIBRARY_PACKAGES)
    return (_DPERM_PREFIX, *(prefix for prefix in others if prefix))


def user_stacklevel(frame=None) -> int:
    """The ``stacklevel`` that points a warning at the first frame outside the libraries.

    Counted as :func:`warnings.warn` counts it: ``frame`` (default: the
    function calling this one, which then calls :func:`warnings.warn`) is
    level 1. If every frame is a library's (for example under the ``dperm``
    CLI), the outermost frame is used.
    """
    frame = sys._getframe(1) if frame is None else frame
    prefixes = library_prefixes()
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(prefixes):
        frame = frame.f_back
        level += 1
    return level


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """Issue ``message`` attributed to the user's line, not dperm's or scikit-learn's.

    A warning raised inside ``Pipeline.fit``, ``cross_val_score`` or
    ``GridSearchCV.fit`` would otherwise point into scikit-learn. This walks
    the stack past every frame of dperm, scikit-learn and joblib (what
    ``warnings.warn(..., skip_file_prefixes=...)`` does on Python >= 3.12; the
    walk serves 3.11 as well). Python's default filter then shows each message
    once per line of user code.
    """
    warnings.warn(message, category, stacklevel=1 + user_stacklevel(sys._getframe(1)))


class PrivacyLeakWarning(UserWarning):
    """A step used private data in a way the privacy guarantee does not cover.

    Raised, for example, when feature bounds are computed from the data instead
    of being given as public input (paper note 9).
    """


class DataClippingWarning(UserWarning):
    """Rows, values or labels of the training data were clipped to a public bound.

    Issued once per fit (never by ``transform``, ``predict`` or ``score``) and
    attributed to the user's call (:func:`warn_at_caller`). Clipping is a
    per-record step, so it changes nothing about the privacy guarantee, only the
    rows the model learns from. What the text may say: how many rows were
    clipped to ``data_norm`` is not said (a function of the private rows,
    :mod:`dperm.privacy.release`); :class:`~dperm.preprocessing.PublicBoundsScaler`
    and :class:`~dperm.tabular.TabularSpec` list how many values of each feature
    were outside its bounds, a message to the analyst's own console about the
    analyst's own data. No count is ever stored in a fitted attribute, a
    record or a model file.
    """


class BudgetWarning(UserWarning):
    """Privacy budget is spent in a way the user may not have planned.

    Issued once per estimator (and its clones) when scikit-learn clones a
    private estimator, as ``cross_val_score`` and ``GridSearchCV`` do: every
    fit of a clone spends the estimator's epsilon again, and fits on the same
    data compose. :class:`dperm.PrivateParameterSearch` tunes under one budget.
    """


class NoiseSwampsSignalError(ValueError):
    """The requested epsilon is too small for n and d: the noise would swamp every coefficient.

    Raised before anything is spent by
    :func:`dperm.mechanisms.choice.check_noise_below_signal`, whose message names
    the smallest epsilon that passes. A ``ValueError``, like every other refused
    parameter; its own class lets a script (or a benchmark's learning curve)
    record the refusal as such.
    """


class WeakGuaranteeWarning(UserWarning):
    """The requested guarantee is so weak that it protects little.

    Issued by :func:`dperm.validation.check_budget_for_data` when ``epsilon``
    exceeds :data:`dperm.validation.WEAK_EPSILON`: an epsilon-DP release lets
    an observer's odds about any one record move by a factor up to
    ``exp(epsilon)`` (``exp(10)`` is about 22,000). The fit goes ahead, and the
    record states the epsilon; see docs/choosing_parameters.md.
    """


class CertificateError(RuntimeError):
    """A solve needed for a privacy guarantee could not be certified.

    dperm's own fits no longer raise it: every certified solve ends with a proven
    completion (:mod:`dperm.solvers.proven`), because a failure after the budget
    is spent would itself be a release that depends on the private rows (issue 28).
    Kept for code that catches it and for extensions that bring their own solver,
    which must raise it only before any budget is spent.
    """


class BudgetExceededError(RuntimeError):
    """Spending would take a :class:`~dperm.privacy.accounting.BudgetAccountant` past its budget.

    Raised before any noise is drawn, so nothing is fitted, answered or released.
    """


class DistributedFitError(RuntimeError):
    """A fit on a Dask cluster could not complete a data pass; nothing was released.

    Raised, for example, when a worker dies repeatedly on the same chunk
    (Dask's ``KilledWorker``). A failure in the validating scan costs no budget;
    after it the budget is spent and stays spent.
    """


# -- multiparty protocol (dperm.multiparty) -------------------------------------------
class MalformedReplyError(ValueError):
    """A party's reply cannot enter the secure sum (wrong shape, non-finite values).

    The round is aborted and nothing is revealed; the message names the party
    and the problem, never the vector.
    """


class SecureSumIntegrityError(RuntimeError):
    """A round's secure sum lies outside what honest parties' replies can sum to.

    The coordinator checks every revealed sum against public bounds
    (:mod:`dperm.multiparty.integrity`): a sum outside them means some party
    sent a value no honest reply takes (or, for the norm check, an event of
    documented probability). The training is aborted before the sum is used;
    the message names the round and the bound, never a party's vector.
    """


class DropoutError(RuntimeError):
    """Fewer parties answered than took part in the setup of a secure-sum round.

    The pairwise masks of the missing parties do not cancel, so the aggregator
    cannot reveal a sum; the round is aborted and nothing is revealed.
    """


class PartyUnavailableError(RuntimeError):
    """Raised by (or on behalf of) a party that does not answer a request.

    The in-process network turns it into a dropout of that party for the round.
    """


class SecureSumClippingWarning(UserWarning):
    """Some coordinates of the parties' noisy vectors were clipped by the secure sum.

    Secure summation works on fixed-point numbers in ``[-clipping_range,
    clipping_range]`` (paper note 14). In PSGD's 004 scheme the DP
    noise of each reply is added before, so clipping is post-processing and
    keeps the guarantee of what the coordinator sees, but the revealed sum is
    then no longer the sum the algorithm assumes: PSGD's equivalence with GOP
    (004 Thm 4.2) does not hold for the rounds where it happened. Where the
    count is not revealed (``coordinator_dp``, local aggregation) each party
    issues it for its own vector only.
    """


class CalibrationRefusedError(ValueError):
    """A party refused a coordinator's set-up: its guarantee is weaker than the party allows.

    Each party is started with its own maximum epsilon, delta and number of
    rounds and recomputes the calibration from the public inputs itself
    (:func:`dperm.multiparty.privacy.check_psgd_calibration`). The error is
    raised before the party draws any noise or sends anything.
    """
