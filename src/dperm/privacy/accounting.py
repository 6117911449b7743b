"""Privacy budget accounting across many releases.

A :class:`BudgetAccountant` holds a total budget ``(epsilon, delta)`` and a
ledger of what was spent where. Every dperm estimator takes ``accountant=``
and spends from it *after* every parameter, compatibility and data check and
*before* any noise is drawn or anything derived from the data is released
("check first, spend last-possible"): a configuration error costs nothing,
and a spend that would exceed the budget raises
:class:`~dperm.exceptions.BudgetExceededError` before anything is fitted (the
design of diffprivlib's accountant, and Opacus's separation of accounting
from mechanisms).

Check-and-spend is atomic: :meth:`BudgetAccountant.spend` holds a lock from
the check to the ledger entry, so threads sharing one accountant can never
spend more than the budget between them. An accountant stands for one real
budget: copies (:func:`copy.copy`, :func:`copy.deepcopy`, and so
scikit-learn's ``clone``) return the same object, and pickling is refused,
since an unpickled copy would be a second, independent budget.

Composition rules (all standard results):

- sequential ("basic") composition: epsilons and deltas add up
  (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014, Thm 3.16);
- parallel composition: mechanisms applied to disjoint parts of the data cost
  the largest of their budgets (McSherry 2009, Thm 4), see :meth:`spend_parallel`;
- advanced composition as a *privacy filter* (``composition="advanced"``):
  the accountant chooses each spend after seeing earlier results, and stops
  at the budget, so the spends' epsilons are chosen adaptively and the
  number of spends is a stopping time. Dwork, Rothblum & Vadhan's advanced
  composition (2010, Thm III.3; Dwork & Roth 2014, Thm 3.20) assumes the
  privacy parameters are fixed before the interaction and does not cover
  this. The fully adaptive result that does is the advanced composition
  filter of Whitehouse, Ramdas, Rogers & Wu, "Fully-Adaptive Composition in
  Differential Privacy" (ICML 2023, PMLR 202:36990-37007; arXiv 2203.05481,
  Sec. 3): for a target ``(epsilon, delta)`` with ``delta = delta' + delta''``,
  ``delta' > 0``, the interaction that runs the next mechanism only while

      sqrt(2 ln(1/delta') sum eps_i^2) + (1/2) sum eps_i^2 <= epsilon
      and  sum delta_i <= delta''

  (the sums include that next mechanism) is ``(epsilon, delta)``-DP, however
  the ``(eps_i, delta_i)`` were chosen. ``delta'`` is the accountant's
  ``slack``; see :func:`advanced_filter_epsilon`. The guarantee is the
  budget's: the running total the filter compares with it is not a privacy
  guarantee of the spends so far (that would be a privacy odometer, which
  costs more; Rogers, Roth, Ullman & Vadhan 2016).

The mode is chosen once, when the accountant is made, never per spend: a
rule that accepts a spend when *either* basic *or* advanced composition
stays under the budget is not a filter any cited theorem covers. For a few
large spends choose ``"basic"``; for many small ones ``"advanced"``.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from dperm.exceptions import BudgetExceededError
from dperm.validation import check_delta

__all__ = [
    "BudgetAccountant", "Spend", "TOLERANCE", "advanced_composition", "advanced_filter_epsilon",
    "basic_composition", "check_accountant", "check_budget_left", "spend_before_fitting",
]

_COMPOSITIONS = ("basic", "advanced")
#: Rounding allowance when comparing a spend with the budget.
TOLERANCE = 1e-12


@dataclass(frozen=True)
class Spend:
    """One entry of the ledger: a release costing ``(epsilon, delta)``."""

    epsilon: float
    delta: float
    label: str


def _check_budget_epsilon(epsilon, name="epsilon") -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or math.isnan(epsilon) or epsilon < 0:
        raise ValueError(f"{name} must be a number >= 0 (math.inf for no limit); got {epsilon!r}.")
    return float(epsilon)


def basic_composition(spends) -> tuple[float, float]:
    """Sequential composition: ``(sum eps_i, sum delta_i)``."""
    return sum(s.epsilon for s in spends), min(1.0, sum(s.delta for s in spends))


def advanced_composition(spends, slack: float) -> tuple[float, float]:
    """Dwork-Rothblum-Vadhan advanced composition with slack ``delta'``, for *fixed* parameters.

    Returns ``(min(sum eps_i, sqrt(2 ln(1/slack) sum eps_i^2) + sum eps_i (e^eps_i - 1)),
    sum delta_i + slack)``; with ``slack == 0`` it is basic composition.

    Valid when the ``(eps_i, delta_i)`` and their number are fixed before the
    interaction (Dwork, Rothblum & Vadhan 2010, Thm III.3; Dwork & Roth 2014,
    Thm 3.20; the algorithms may still be chosen adaptively), as in a protocol
    with a public number of rounds. Taking the smaller of two valid bounds for
    the same fixed sequence is valid. Not for an accountant that stops at a
    budget: that is :func:`advanced_filter_epsilon`'s job.
    """
    epsilon_basic, delta_basic = basic_composition(spends)
    if slack <= 0 or not spends:
        return epsilon_basic, delta_basic
    squares = sum(s.epsilon**2 for s in spends)
    drift = sum(s.epsilon * math.expm1(s.epsilon) for s in spends)
    epsilon_advanced = math.sqrt(2.0 * math.log(1.0 / slack) * squares) + drift
    if epsilon_advanced < epsilon_basic:
        return epsilon_advanced, min(1.0, delta_basic + slack)
    return epsilon_basic, delta_basic


def advanced_filter_epsilon(spends, slack: float) -> float:
    """The running total of the advanced composition filter: ``sqrt(2 ln(1/slack) S) + S / 2``.

    ``S = sum eps_i^2`` over ``spends``. Whitehouse, Ramdas, Rogers & Wu
    (ICML 2023, Sec. 3, advanced composition filter): running the next
    mechanism only while this total, the next one included, is at most the
    budget ``epsilon`` (and ``sum delta_i <= delta - slack``) makes the whole
    fully adaptive interaction ``(epsilon, delta)``-DP.

    Why (the ``delta_i = 0`` case): the privacy loss of an ``eps_i``-DP step
    has conditional mean at most ``eps_i^2 / 2`` (its KL divergence; Bun &
    Steinke 2016, Prop. 3.3) and lies in ``[-eps_i, eps_i]``, so its centred
    sum ``M_n`` makes ``exp(lam M_n - lam^2 S_n / 2)`` a supermartingale
    (Hoeffding's lemma). The filter keeps ``S_N <= S*``, the root of
    ``sqrt(2 ln(1/slack) S*) + S* / 2 = epsilon``; Ville's inequality with
    ``lam = sqrt(2 ln(1/slack) / S*)`` gives ``P(M_N >= sqrt(2 ln(1/slack) S*))
    <= slack``, so the loss exceeds ``epsilon`` with probability at most
    ``slack``. The same rule follows, for pure spends, from two cited results:
    an ``eps_i``-DP step is ``eps_i^2 / 2``-zCDP (Bun & Steinke 2016, Prop. 3.3),
    a filter that keeps the running sum of Renyi parameters under a budget is
    valid under fully adaptive composition at every order (Feldman & Zrnic 2021,
    Thm 3.1), so stopping at ``S_N / 2 <= rho`` gives ``rho``-zCDP, which is
    ``(rho + 2 sqrt(rho ln(1/slack)), slack)``-DP (Bun & Steinke 2016, Prop. 1.3):
    with ``rho = S / 2`` that is this total. The ``delta_i`` of approximate-DP
    spends are handled in Whitehouse et al.

    Parameters
    ----------
    spends : sequence of Spend
    slack : float in (0, 1)
        The filter's ``delta'``.

    Returns
    -------
    float
        The total compared with the budget's epsilon (0 for no spends).
    """
    if not 0.0 < slack < 1.0:
        raise ValueError(f"the advanced composition filter needs a slack delta' in (0, 1); got {slack!r}.")
    squares = sum(s.epsilon**2 for s in spends)
    return math.sqrt(2.0 * math.log(1.0 / slack) * squares) + 0.5 * squares


class BudgetAccountant:
    """A total privacy budget and the ledger of what was spent from it.

    Parameters
    ----------
    epsilon : float, default=math.inf
        Total epsilon available (``math.inf``: no limit, only bookkeeping).
    delta : float, default=0.0
        Total delta available, in [0, 1).
    composition : {"basic", "advanced"}, default="basic"
        How spends combine (see the module docstring): ``"basic"`` sums them;
        ``"advanced"`` is the advanced composition filter of Whitehouse,
        Ramdas, Rogers & Wu (ICML 2023), see :func:`advanced_filter_epsilon`.
        Chosen once, here: the accountant never switches rule per spend.
    slack : float, default=0.0
        The ``delta'`` of the advanced composition filter, in (0, 1) and at
        most ``delta``; the spends' deltas may add up to ``delta - slack``.

    Examples
    --------
    >>> from dperm.privacy.accounting import BudgetAccountant
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> acc.spend(0.4, label="first model")
    >>> acc.spend(0.4, label="second model")
    >>> acc.spent
    (0.8, 0.0)
    >>> acc.remaining
    (0.19999999999999996, 0.0)
    """

    def __init__(self, epsilon=math.inf, delta=0.0, *, composition="basic", slack=0.0):
        self.epsilon = _check_budget_epsilon(epsilon)
        self.delta = check_delta(delta)
        if composition not in _COMPOSITIONS:
            raise ValueError(f"composition must be one of {_COMPOSITIONS}; got {composition!r}.")
        self.composition = composition
        self.slack = check_delta(slack, "slack")
        if composition == "basic" and self.slack:
            raise ValueError("slack is the delta' of advanced composition; use composition='advanced'.")
        if composition == "advanced" and not self.slack:
            raise ValueError("the advanced composition filter needs a slack delta' > 0 "
                             "(Whitehouse, Ramdas, Rogers & Wu 2023); or use composition='basic'.")
        if self.slack > self.delta:
            raise ValueError(f"slack={self.slack:g} exceeds the total delta={self.delta:g}.")
        self._ledger: list[Spend] = []
        # Held from the check to the ledger entry, so that check-and-spend is atomic.
        # Re-entrant: spend_parallel and spend call check while holding it.
        self._lock = threading.RLock()

    # An accountant stands for a real budget: copies (scikit-learn's clone deep-copies
    # parameters) must share it, or a cloned estimator would spend from a duplicate.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce_ex__(self, protocol):
        raise TypeError(
            "a BudgetAccountant cannot be pickled: it stands for one real privacy budget, and "
            "an unpickled copy would be a second, independent budget that could be spent again. "
            "Keep the accountant in the process that spends it; to record what was spent, "
            "save accountant.summary() or accountant.ledger. (Estimators: set accountant=None "
            "before pickling.)"
        )

    # -- totals -----------------------------------------------------------
    def _total(self, spends) -> tuple[float, float]:
        """What is compared with the budget: the basic sums, or the filter's totals.

        Under ``"advanced"``: ``(advanced_filter_epsilon, sum delta_i + slack)``
        once anything is spent, so ``delta`` bounds ``sum delta_i`` by
        ``delta - slack`` (the theorem's ``delta''``).
        """
        if self.composition == "advanced":
            if not spends:
                return 0.0, 0.0
            delta = min(1.0, sum(s.delta for s in spends) + self.slack)
            return advanced_filter_epsilon(spends, self.slack), delta
        return basic_composition(spends)

    @property
    def ledger(self) -> tuple[Spend, ...]:
        """Every spend so far, in order."""
        with self._lock:
            return tuple(self._ledger)

    @property
    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent so far under the composition rule.

        Under ``"advanced"`` this is the filter's running total, the quantity
        it compares with the budget, not a guarantee for the spends so far:
        the filter's guarantee is the budget ``(epsilon, delta)`` itself.
        """
        return self._total(self.ledger)

    @property
    def remaining(self) -> tuple[float, float]:
        """What is left of the budget: ``(epsilon, delta)``, never negative."""
        epsilon, delta = self.spent
        return max(self.epsilon - epsilon, 0.0), max(self.delta - delta, 0.0)

    # -- spending ---------------------------------------------------------
    def check(self, epsilon, delta=0.0, label="") -> None:
        """Raise :class:`BudgetExceededError` if spending ``(epsilon, delta)`` would overspend.

        Only advice when other threads share the accountant: the answer may be
        stale by the time a spend follows. :meth:`spend` checks again under
        the lock; call it, not ``check`` then ``spend``, to reserve budget.
        """
        spend = Spend(_check_budget_epsilon(epsilon), check_delta(delta), str(label))
        with self._lock:
            spends = list(self._ledger)
        after_epsilon, after_delta = self._total(spends + [spend])
        if after_epsilon > self.epsilon + TOLERANCE or after_delta > self.delta + TOLERANCE:
            spent_epsilon, spent_delta = self._total(spends)
            raise BudgetExceededError(
                f"spending (epsilon={epsilon:g}, delta={delta:g}){' for ' + label if label else ''} "
                f"would bring the total to (epsilon={after_epsilon:.6g}, delta={after_delta:.6g}), "
                f"over the budget (epsilon={self.epsilon:g}, delta={self.delta:g}); already spent "
                f"(epsilon={spent_epsilon:.6g}, delta={spent_delta:.6g}). Nothing was fitted "
                "or answered."
            )

    def spend(self, epsilon, delta=0.0, label="") -> None:
        """Record a release costing ``(epsilon, delta)``, or raise and record nothing.

        Atomic: the :meth:`check` and the ledger entry happen under one lock,
        so concurrent spends from many threads never exceed the budget.
        """
        with self._lock:
            self.check(epsilon, delta, label)
            self._ledger.append(Spend(float(epsilon), float(delta), str(label)))

    def spend_parallel(self, budgets, label="") -> None:
        """Record mechanisms run on *disjoint* parts of the data (parallel composition).

        Parameters
        ----------
        budgets : sequence of (epsilon, delta)
            One budget per part. Each record is in at most one part, so the
            whole costs ``(max eps_i, max delta_i)`` (McSherry 2009, Thm 4).

        The whole is one ledger entry, spent atomically by :meth:`spend`.
        """
        budgets = [(_check_budget_epsilon(e), check_delta(d)) for e, d in budgets]
        if not budgets:
            raise ValueError("spend_parallel needs at least one (epsilon, delta).")
        epsilon = max(e for e, _ in budgets)
        delta = max(d for _, d in budgets)
        self.spend(epsilon, delta, f"{label} (parallel over {len(budgets)} disjoint parts)")

    def summary(self) -> str:
        """A readable account of the budget, each spend and the total."""
        lines = [f"Budget: epsilon={self.epsilon:g}, delta={self.delta:g} ("
                 + (f"advanced composition filter, slack {self.slack:g}; Whitehouse, Ramdas, Rogers & Wu "
                    "2023: the whole is (epsilon, delta)-DP, the running total is not a guarantee)"
                    if self.composition == "advanced" else "basic composition)")]
        ledger = self.ledger
        for number, spend in enumerate(ledger, start=1):
            lines.append(f"  {number:3d}. epsilon={spend.epsilon:<10.6g} delta={spend.delta:<10.3g} {spend.label}")
        epsilon, delta = self._total(ledger)
        remaining_epsilon = max(self.epsilon - epsilon, 0.0)
        remaining_delta = max(self.delta - delta, 0.0)
        lines.append(f"Spent: epsilon={epsilon:.6g}, delta={delta:.3g}; "
                     f"remaining: epsilon={remaining_epsilon:.6g}, delta={remaining_delta:.3g}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        epsilon, delta = self.spent
        return (f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"composition={self.composition!r}, spent=({epsilon:.6g}, {delta:.3g}))")


def check_accountant(accountant):
    """Return ``accountant`` after checking it is a :class:`BudgetAccountant` or ``None``.

    Part of every estimator's parameter check, so a wrong ``accountant=`` is
    reported before any data is read.
    """
    if accountant is not None and not isinstance(accountant, BudgetAccountant):
        raise ValueError(
            f"accountant must be a dperm.privacy.accounting.BudgetAccountant or None; got {accountant!r}."
        )
    return accountant


def check_budget_left(accountant, epsilon, delta, label) -> None:
    """Refuse early, spending nothing, if ``(epsilon, delta)`` does not fit in what is left.

    Estimators call it first, so that an exhausted budget is reported before
    any (possibly long, possibly distributed) pass over the data. Advice only:
    the budget is reserved by :func:`spend_before_fitting`, which checks again
    atomically. ``None``: no accounting.
    """
    if check_accountant(accountant) is None:
        return
    accountant.check(epsilon, delta, label)


def spend_before_fitting(accountant, epsilon, delta, label) -> None:
    """Spend ``(epsilon, delta)`` or refuse to fit: the last step before a mechanism runs.

    Estimators call it after every parameter, compatibility and data check
    (a configuration error must cost nothing) and before any noise is drawn
    or anything computed from the data is released. ``None``: no accounting.
    """
    if check_accountant(accountant) is None:
        return
    accountant.spend(epsilon, delta, label)
