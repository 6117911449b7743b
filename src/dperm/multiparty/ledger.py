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

Two kinds of run. A **whole-run** charge (:meth:`PartyLedger.charge`; what
an older dperm booked for a PSGD run at set-up) is booked in full at once.
A **per-round** run (:meth:`PartyLedger.open_run`, then
:meth:`PartyLedger.charge_round` before each answer; the Newton and PSGD
protocols) books nothing at set-up beyond checking that the whole run would
fit, and after ``r`` answered rounds holds the cost of those ``r`` rounds
(computed by the caller, :func:`dperm.privacy.round_charges.newton_prefix_guarantee`
and :func:`~dperm.privacy.round_charges.psgd_prefix_guarantee`: valid
however the coordinator chooses when to stop, and the whole run's cost at
``r = T``). The entry of a per-round run keeps its round count, so a
resumed run continues it and a round is never charged, or answered, twice.

The file is a small JSON document (version 2; version-1 files, whose runs
are all whole-run charges, still load and are rewritten as version 2 at the
next charge). Every charge holds an exclusive
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
LEDGER_VERSION = 2
#: Versions this code reads (version 1: whole-run charges only, before per-round charges).
READABLE_VERSIONS = (1, 2)
#: A run identifier: 128 random bits as 32 lowercase hex digits (also a safe file name).
RUN_ID_PATTERN = re.compile(r"[0-9a-f]{32}")


class LedgerError(ValueError):
    """The ledger file cannot be read or does not hold a dperm party ledger."""


@dataclass(frozen=True)
class Charge:
    """One run's cost in the ledger.

    ``epsilon`` and ``delta`` are what the run has cost so far. A per-round
    run also has ``rounds`` (answered so far), ``n_rounds`` (agreed) and
    ``booked_epsilon``/``booked_delta`` (the whole run's cost, checked at
    set-up); for a whole-run charge these are None.
    """

    run_id: str
    mechanism: str
    epsilon: float
    delta: float
    charged_at: str = ""
    rounds: int | None = None
    n_rounds: int | None = None
    booked_epsilon: float | None = None
    booked_delta: float | None = None

    @property
    def per_round(self) -> bool:
        return self.rounds is not None

    def to_json(self) -> dict:
        entry = {"mechanism": self.mechanism, "epsilon": self.epsilon, "delta": self.delta,
                 "charged_at": self.charged_at}
        if self.per_round:
            entry.update({"rounds": self.rounds, "n-rounds": self.n_rounds, "booked-epsilon": self.booked_epsilon,
                          "booked-delta": self.booked_delta})
        return entry


def _cost(value, name: str, upper: float = math.inf) -> float:
    """A cost already spent: a finite float in ``[0, upper)`` (0 for a run with no round answered yet)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < upper:
        raise ValueError(f"{name} {value!r} is not a number in [0, {upper:g})")
    return float(value)


def _budget(budget_epsilon, budget_delta) -> tuple[float, float]:
    """The party's total budget, checked."""
    return check_epsilon(budget_epsilon, "budget_epsilon"), check_delta(budget_delta, "budget_delta")


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
        if document.get("version") not in READABLE_VERSIONS:
            raise LedgerError(fix.format(f"version {document.get('version')!r}, which this dperm does not read "
                                         f"(it reads {list(READABLE_VERSIONS)}; a newer dperm wrote it? use that)"))
        runs = document.get("runs")
        if not isinstance(runs, dict):
            raise LedgerError(fix.format("no 'runs' object"))
        charges = {}
        for run_id, entry in runs.items():
            try:
                charges[run_id] = _parse_entry(run_id, entry)
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
        budget_epsilon, budget_delta = _budget(budget_epsilon, budget_delta)
        with self._locked():
            charges = self.charges()
            if run_id in charges:
                earlier = charges[run_id]
                if earlier.per_round or (earlier.mechanism, earlier.epsilon, earlier.delta) != (mechanism, epsilon,
                                                                                                delta):
                    raise ValueError(
                        f"run {run_id} was charged in {self.path} as {earlier.mechanism} at "
                        f"({earlier.epsilon:g}, {earlier.delta:g}); a set-up of the same run as {mechanism} at "
                        f"({epsilon:g}, {delta:g}) is refused (a new training needs a new run id).")
                return False
            self._refuse_over_budget(charges, run_id, mechanism, epsilon, delta, budget_epsilon, budget_delta)
            charges[run_id] = Charge(run_id, mechanism, epsilon, delta, _now())
            self._write(charges)
        return True

    def open_run(self, run_id: str, mechanism: str, *, n_rounds: int, epsilon: float, delta: float,
                 budget_epsilon: float, budget_delta: float) -> Charge:
        """Register a per-round run whose ``n_rounds`` rounds cost ``(epsilon, delta)`` in all; charge nothing.

        Call it at set-up, after the calibration's checks. A new run is
        refused unless its whole cost fits the budget left now (so a run
        that is not interrupted can finish); it is entered with no round
        answered. A run id already open with the same mechanism, rounds and
        cost is returned as it stands (a resumed run: its ``rounds`` say
        where it continues). A run id charged whole by an older dperm
        (version-1 ledger) with the same mechanism and cost is returned as
        it is (``per_round`` False: it owes nothing more).

        Raises
        ------
        BudgetExceededError
            A new run whose whole cost would bring the total over the budget.
        ValueError
            A malformed argument, or ``run_id`` already in the ledger with
            another mechanism, number of rounds or cost.
        LedgerError
            The ledger file is unreadable or not a dperm ledger (names it).
        """
        run_id, mechanism = check_run_id(run_id), str(mechanism)
        n_rounds = _rounds(n_rounds, "n_rounds", minimum=1)
        epsilon, delta = check_epsilon(epsilon), check_delta(delta)
        budget_epsilon, budget_delta = _budget(budget_epsilon, budget_delta)
        with self._locked():
            charges = self.charges()
            earlier = charges.get(run_id)
            if earlier is not None:
                same = ((earlier.mechanism, earlier.n_rounds, earlier.booked_epsilon, earlier.booked_delta)
                        == (mechanism, n_rounds, epsilon, delta)) if earlier.per_round else (
                    (earlier.mechanism, earlier.epsilon, earlier.delta) == (mechanism, epsilon, delta))
                if not same:
                    raise ValueError(
                        f"run {run_id} is in {self.path} as {earlier.mechanism} costing ({_booked(earlier)}); a "
                        f"set-up of the same run as {mechanism} over {n_rounds} rounds at ({epsilon:g}, {delta:g}) "
                        "is refused (a new training needs a new run id).")
                return earlier
            self._refuse_over_budget(charges, run_id, f"{mechanism} over {n_rounds} rounds", epsilon, delta,
                                     budget_epsilon, budget_delta)
            charges[run_id] = Charge(run_id, mechanism, 0.0, 0.0, _now(), rounds=0, n_rounds=n_rounds,
                                     booked_epsilon=epsilon, booked_delta=delta)
            self._write(charges)
            return charges[run_id]

    def charge_round(self, run_id: str, rounds: int, epsilon: float, delta: float, *, budget_epsilon: float,
                     budget_delta: float) -> Charge:
        """Charge round ``rounds`` (1-based) of an open per-round run: its cost becomes ``(epsilon, delta)``.

        Call it before the round's answer is computed or sent. ``(epsilon,
        delta)`` is the cost of the first ``rounds`` rounds together (not
        of this round alone); it replaces the run's earlier cost. Only the
        next round can be charged (``rounds`` = the run's count + 1), so no
        round is answered twice.

        Raises
        ------
        BudgetExceededError
            The total over all runs would exceed the budget; nothing is written.
        ValueError
            The run is not open, ``rounds`` is not its next round or exceeds
            its agreed rounds, or the cost is below what it has already cost
            or above its whole-run cost.
        LedgerError
            The ledger file is unreadable or not a dperm ledger (names it).
        """
        run_id = check_run_id(run_id)
        rounds = _rounds(rounds, "rounds", minimum=1)
        epsilon, delta = _cost(epsilon, "epsilon"), _cost(delta, "delta", 1.0)
        budget_epsilon, budget_delta = _budget(budget_epsilon, budget_delta)
        with self._locked():
            charges = self.charges()
            earlier = charges.get(run_id)
            if earlier is None or not earlier.per_round:
                raise ValueError(f"run {run_id} is not an open per-round run in {self.path}; open it at set-up.")
            if rounds != earlier.rounds + 1 or rounds > earlier.n_rounds:
                raise ValueError(
                    f"run {run_id} has {earlier.rounds} of its {earlier.n_rounds} rounds charged in {self.path}; "
                    f"round {rounds} cannot be charged (only round {earlier.rounds + 1}, if any is left).")
            if not (earlier.epsilon - TOLERANCE <= epsilon <= earlier.booked_epsilon + TOLERANCE
                    and earlier.delta - TOLERANCE <= delta <= earlier.booked_delta + TOLERANCE):
                raise ValueError(
                    f"run {run_id}: ({epsilon:g}, {delta:g}) for {rounds} rounds is not between what it has cost, "
                    f"({earlier.epsilon:g}, {earlier.delta:g}), and its whole cost ({_booked(earlier)}).")
            others = {key: value for key, value in charges.items() if key != run_id}
            self._refuse_over_budget(others, run_id, f"{earlier.mechanism}, round {rounds} of {earlier.n_rounds}",
                                     epsilon, delta, budget_epsilon, budget_delta)
            charges[run_id] = Charge(run_id, earlier.mechanism, epsilon, delta, _now(), rounds=rounds,
                                     n_rounds=earlier.n_rounds, booked_epsilon=earlier.booked_epsilon,
                                     booked_delta=earlier.booked_delta)
            self._write(charges)
            return charges[run_id]

    def _refuse_over_budget(self, charges: dict, run_id, what, epsilon, delta, budget_epsilon, budget_delta):
        spent_epsilon, spent_delta = _total(charges.values())
        after_epsilon, after_delta = math.fsum([spent_epsilon, epsilon]), math.fsum([spent_delta, delta])
        if after_epsilon > budget_epsilon + TOLERANCE or after_delta > budget_delta + TOLERANCE:
            raise BudgetExceededError(
                f"run {run_id} ({what}, ({epsilon:.6g}, {delta:.3g})-DP) would bring this party's total "
                f"to ({after_epsilon:.6g}, {after_delta:.3g}), over its budget ({budget_epsilon:g}, "
                f"{budget_delta:g}); already spent ({spent_epsilon:.6g}, {spent_delta:.3g}) over "
                f"{len(charges)} other run(s) in {self.path}. Nothing was drawn or sent.")

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
                    "runs": {run_id: charge.to_json() for run_id, charge in charges.items()}}
        write_private_atomically(self.path, json.dumps(document, indent=2) + "\n")


def _parse_entry(run_id: str, entry: dict) -> Charge:
    run_id = check_run_id(run_id)
    if "rounds" not in entry:  # a whole-run charge (every run of a version-1 ledger)
        return Charge(run_id, str(entry["mechanism"]), check_epsilon(entry["epsilon"]), check_delta(entry["delta"]),
                      str(entry.get("charged_at", "")))
    n_rounds = _rounds(entry["n-rounds"], "n-rounds", minimum=1)
    rounds = _rounds(entry["rounds"], "rounds", minimum=0)
    if rounds > n_rounds:
        raise ValueError(f"{rounds} rounds charged of {n_rounds}")
    return Charge(run_id, str(entry["mechanism"]), _cost(entry["epsilon"], "epsilon"),
                  _cost(entry["delta"], "delta", 1.0), str(entry.get("charged_at", "")), rounds=rounds,
                  n_rounds=n_rounds, booked_epsilon=check_epsilon(entry["booked-epsilon"]),
                  booked_delta=check_delta(entry["booked-delta"]))


def _rounds(value, name: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return value


def _booked(charge: Charge) -> str:
    if charge.per_round:
        return f"{charge.booked_epsilon:g}, {charge.booked_delta:g} over {charge.n_rounds} rounds"
    return f"{charge.epsilon:g}, {charge.delta:g}"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


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
