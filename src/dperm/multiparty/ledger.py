"""A party's own spending ledger: what each private training has cost it, on its own machine.

A multiparty party answers a coordinator it does not fully trust. Its floor
(:class:`~dperm.privacy.psgd.PartyFloor`) bounds what one run may cost;
this ledger bounds what *all* runs together may cost. Before a party draws
any noise for a run it charges the run's guarantee here, keyed by the run
identifier the coordinator announced, and refuses once its own total budget
would be exceeded. A run id already charged is never charged again, and the
caller must then reuse the noise it saved for that run instead of drawing
new noise (:mod:`dperm.multiparty.flower.app`).

Composition is basic (sequential): the epsilons add up and the deltas add up
(Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014, Thm 3.16), whatever
the mechanism of each run, so the ledger needs only each run's
``(epsilon, delta)`` and a name of its mechanism (kept for the party's own
audit). The comparison with the budget allows the same rounding as
:class:`dperm.privacy.accounting.BudgetAccountant` (:data:`dperm.privacy.accounting.TOLERANCE`).

The file is a small JSON document. Every charge holds an exclusive
``fcntl`` lock on ``PATH.lock`` from reading the ledger to replacing it
(written to a temporary file in the same folder, flushed, then
``os.replace``), so two processes of the same party cannot both spend the
last of its budget, and a crash leaves either the old or the new ledger.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dperm.exceptions import BudgetExceededError
from dperm.privacy.accounting import TOLERANCE
from dperm.validation import check_delta, check_epsilon

__all__ = ["Charge", "LedgerError", "PartyLedger", "check_run_id", "write_private_atomically"]

LEDGER_FORMAT = "dperm-party-ledger"
LEDGER_VERSION = 1
#: A run identifier: 128 random bits as 32 lowercase hex digits (also a safe file name).
RUN_ID_PATTERN = re.compile(r"[0-9a-f]{32}")


class LedgerError(ValueError):
    """The ledger file cannot be read or does not hold a dperm party ledger."""


@dataclass(frozen=True)
class Charge:
    """One run's cost in the ledger."""

    run_id: str
    mechanism: str
    epsilon: float
    delta: float
    charged_at: str = ""


def check_run_id(run_id) -> str:
    """Return ``run_id`` if it is 32 lowercase hex digits (128 bits), else raise ``ValueError``."""
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
        raise ValueError(f"run id {run_id!r} is not 32 lowercase hex digits (dperm coordinate draws one "
                         "per training: secrets.token_hex(16)).")
    return run_id


class PartyLedger:
    """The party's ledger of spent ``(epsilon, delta)`` in the JSON file ``path``.

    Parameters
    ----------
    path : path-like
        The ledger file (created on the first charge; its folder must exist).
        ``PATH.lock`` is the lock file beside it.

    Examples
    --------
    >>> ledger = PartyLedger(path)                                      # doctest: +SKIP
    >>> ledger.charge(run_id, "psgd-004", 1.0, 1e-6, budget_epsilon=3, budget_delta=1e-5)  # doctest: +SKIP
    True
    """

    def __init__(self, path):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    # -- reading ---------------------------------------------------------------------
    def charges(self) -> dict:
        """``{run_id: Charge}`` of every run charged so far (empty if there is no file yet)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise LedgerError(f"cannot read the party ledger {self.path}: {error}.") from None
        return self._parse(text)

    def spent(self) -> tuple[float, float]:
        """Total ``(epsilon, delta)`` charged, by basic composition (sums; Dwork & Roth Thm 3.16)."""
        return _total(self.charges().values())

    def _parse(self, text: str) -> dict:
        fix = (f"the party ledger {self.path} is not a valid dperm ledger ({{}}); it records what this party "
               "has spent, so restore it from a backup rather than delete it.")
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise LedgerError(fix.format(f"not JSON: {error}")) from None
        if not isinstance(document, dict) or document.get("format") != LEDGER_FORMAT:
            raise LedgerError(fix.format(f"no format {LEDGER_FORMAT!r}"))
        if document.get("version") != LEDGER_VERSION:
            raise LedgerError(fix.format(f"version {document.get('version')!r}, expected {LEDGER_VERSION}"))
        runs = document.get("runs")
        if not isinstance(runs, dict):
            raise LedgerError(fix.format("no 'runs' object"))
        charges = {}
        for run_id, entry in runs.items():
            try:
                charges[run_id] = Charge(check_run_id(run_id), str(entry["mechanism"]),
                                         check_epsilon(entry["epsilon"]), check_delta(entry["delta"]),
                                         str(entry.get("charged_at", "")))
            except (KeyError, TypeError, ValueError) as error:
                raise LedgerError(fix.format(f"run {run_id!r}: {error}")) from None
        return charges

    # -- charging --------------------------------------------------------------------
    def charge(self, run_id: str, mechanism: str, epsilon: float, delta: float, *, budget_epsilon: float,
               budget_delta: float) -> bool:
        """Record that run ``run_id`` costs ``(epsilon, delta)``, or raise and record nothing.

        Call it after every check of the run's set-up and before any noise is
        drawn. Atomic across processes (an exclusive lock from read to
        replace).

        Returns
        -------
        bool
            ``True`` if the run was charged now; ``False`` if it had been
            charged before with the same mechanism and cost (nothing is
            charged twice; the caller must reuse that run's saved noise and
            never draw new noise for it).

        Raises
        ------
        BudgetExceededError
            The total over all runs (basic composition: the sums of the
            epsilons and of the deltas, Dwork & Roth Thm 3.16) would exceed
            ``(budget_epsilon, budget_delta)``.
        ValueError
            A malformed argument, or ``run_id`` already charged with another
            mechanism or cost.
        LedgerError
            The ledger file is unreadable or not a dperm ledger (names it).
        """
        run_id, mechanism = check_run_id(run_id), str(mechanism)
        epsilon, delta = check_epsilon(epsilon), check_delta(delta)
        budget_epsilon = check_epsilon(budget_epsilon, "budget_epsilon")
        budget_delta = check_delta(budget_delta, "budget_delta")
        with self._locked():
            charges = self.charges()
            if run_id in charges:
                earlier = charges[run_id]
                if (earlier.mechanism, earlier.epsilon, earlier.delta) != (mechanism, epsilon, delta):
                    raise ValueError(
                        f"run {run_id} was charged in {self.path} as {earlier.mechanism} at "
                        f"({earlier.epsilon:g}, {earlier.delta:g}); a set-up of the same run as {mechanism} at "
                        f"({epsilon:g}, {delta:g}) is refused (a new training needs a new run id).")
                return False
            spent_epsilon, spent_delta = _total(charges.values())
            after_epsilon, after_delta = math.fsum([spent_epsilon, epsilon]), math.fsum([spent_delta, delta])
            if after_epsilon > budget_epsilon + TOLERANCE or after_delta > budget_delta + TOLERANCE:
                raise BudgetExceededError(
                    f"run {run_id} ({mechanism}, ({epsilon:.6g}, {delta:.3g})-DP) would bring this party's total "
                    f"to ({after_epsilon:.6g}, {after_delta:.3g}), over its budget ({budget_epsilon:g}, "
                    f"{budget_delta:g}); already spent ({spent_epsilon:.6g}, {spent_delta:.3g}) over "
                    f"{len(charges)} run(s) in {self.path}. Nothing was drawn or sent.")
            stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            charges[run_id] = Charge(run_id, mechanism, epsilon, delta, stamp)
            self._write(charges)
        return True

    @contextlib.contextmanager
    def _locked(self):
        descriptor = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _write(self, charges: dict) -> None:
        document = {"format": LEDGER_FORMAT, "version": LEDGER_VERSION,
                    "runs": {run_id: {"mechanism": charge.mechanism, "epsilon": charge.epsilon,
                                      "delta": charge.delta, "charged_at": charge.charged_at}
                             for run_id, charge in charges.items()}}
        write_private_atomically(self.path, json.dumps(document, indent=2) + "\n")


def _total(charges) -> tuple[float, float]:
    charges = list(charges)
    return math.fsum(c.epsilon for c in charges), math.fsum(c.delta for c in charges)


def write_private_atomically(path, text: str) -> None:
    """Write ``text`` to ``path`` (mode 0600) via a temporary file in its folder and ``os.replace``."""
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
