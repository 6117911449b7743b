"""Errors and warnings of the multiparty protocol.

They live here until they move to :mod:`dperm.exceptions` (owned elsewhere).
"""

from __future__ import annotations


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
    clipping_range]`` (shared papers note 14). The DP noise is added before,
    so clipping is post-processing and keeps the guarantee of what the
    coordinator sees, but the revealed sum is then no longer the sum the
    algorithm assumes: PSGD's equivalence with GOP (004 Thm 4.2) does not hold
    for the rounds where it happened.
    """
