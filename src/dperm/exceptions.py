"""Warnings and errors that dperm raises.

Modelled on diffprivlib's ``utils.py``: a privacy-specific warning category lets
users promote it to an error with :func:`warnings.simplefilter`.
"""


class PrivacyLeakWarning(UserWarning):
    """A step used private data in a way the privacy guarantee does not cover.

    Raised, for example, when feature bounds are computed from the data instead
    of being given as public input (paper note 9).
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
