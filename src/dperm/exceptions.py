"""Warnings and errors that dperm raises.

Modelled on diffprivlib's ``utils.py``: a privacy-specific warning category lets
users promote it to an error with :func:`warnings.simplefilter`.
"""


class PrivacyLeakWarning(UserWarning):
    """A step used private data in a way the privacy guarantee does not cover.

    Raised, for example, when feature bounds are computed from the data instead
    of being given as public input (shared papers README, note 9).
    """


class DataClippingWarning(UserWarning):
    """Rows or labels were clipped to a public bound before training.

    Clipping is a per-record step, so it keeps the privacy guarantee; the
    warning says how many records it changed.
    """


class CertificateError(RuntimeError):
    """A solve needed for a privacy guarantee could not be certified.

    Raised instead of releasing a model whose sensitivity bound would not hold.
    """


class BudgetExceededError(RuntimeError):
    """Spending would take a :class:`~dperm.accounting.BudgetAccountant` past its budget.

    Raised before any data is touched, so nothing is fitted or released.
    """


class DistributedFitError(RuntimeError):
    """A fit on a Dask cluster could not complete a data pass; nothing was released.

    Raised, for example, when a worker dies repeatedly on the same chunk
    (Dask's ``KilledWorker``). The budget spent before the fit stays spent.
    """
