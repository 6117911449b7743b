"""The coordinator's checkpoint: what a crashed ``dperm coordinate`` needs to resume its run, public values only.

After each completed round of a run (Newton or PSGD) the coordinator's
ServerApp replaces ``checkpoint.json`` in its work folder (``dperm coordinate
--workdir``) with: the run id, the protocol, the public calibration, the
parties' public names and sizes, and for every completed round its noisy
secure sum, the iterate ``w_{t+1}`` computed from it, the round's secure-sum
report and its time. Each of these is a public input, a noised output (the
sums) or a function of those two (the iterates:
:func:`dperm.multiparty.newton.newton_update`; PSGD's step of 004 Alg. 1
in :func:`dperm.multiparty.protocol.psgd`), so the file holds nothing a
party has not already released to the coordinator. ``dperm coordinate
--resume --workdir W`` continues the same run id from the last completed
round (the ``completed`` argument of
:func:`dperm.multiparty.newton.private_newton` and
:func:`dperm.multiparty.protocol.psgd`), and each party answers only the
next round of its own ledger's count (:mod:`dperm.multiparty.flower.newton`,
:func:`dperm.multiparty.flower.app.party_reply`).

The stored iterates are used as they are (JSON floats round-trip exactly),
so the ``w_t`` a resumed coordinator broadcasts is bit for bit the one the
crashed coordinator broadcast: a party asked again for the round in flight
at the crash recognises it and sends the same saved answer.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dperm.multiparty.ledger import check_run_id, write_private_atomically
from dperm.multiparty.secure_sum import SecureSumReport

__all__ = ["CHECKPOINT_NAME", "CheckpointError", "CoordinatorCheckpoint"]

CHECKPOINT_FORMAT = "dperm-coordinator-checkpoint"
CHECKPOINT_VERSION = 1
#: The checkpoint's file name in the coordinator's work folder (beside ``status.json``).
CHECKPOINT_NAME = "checkpoint.json"


class CheckpointError(ValueError):
    """The checkpoint cannot be read, or does not continue the run being resumed."""


def _party_list(parties) -> list:
    """Public names and sizes, in name order (node ids change when SuperNodes reconnect)."""
    return sorted([{"name": party.name, "n_samples": int(party.n_samples)} for party in parties],
                  key=lambda item: item["name"])


@dataclass
class CoordinatorCheckpoint:
    """A run's checkpoint in ``path``: its identity and the rounds completed so far."""

    path: Path
    run_id: str
    protocol: str
    calibration: dict
    parties: list
    rounds: list = field(default_factory=list)

    @classmethod
    def start(cls, path, *, run_id: str, protocol: str, calibration: dict, parties) -> CoordinatorCheckpoint:
        """A new run's checkpoint with no round completed, written now (replacing any earlier file)."""
        checkpoint = cls(Path(path), check_run_id(run_id), str(protocol), dict(calibration), _party_list(parties))
        checkpoint._write()
        return checkpoint

    @classmethod
    def load(cls, path) -> CoordinatorCheckpoint:
        """Read a checkpoint; raise :class:`CheckpointError` naming the file and what to do."""
        path = Path(path)
        fix = f"the coordinator checkpoint {path} {{}}; a run can be resumed only from its own work folder"
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CheckpointError(fix.format("does not exist (nothing to resume: was --workdir the crashed "
                                             "run's?)")) from None
        except (OSError, json.JSONDecodeError) as error:
            raise CheckpointError(fix.format(f"is unreadable ({error})")) from None
        try:
            if document.get("format") != CHECKPOINT_FORMAT or document.get("version") != CHECKPOINT_VERSION:
                raise ValueError(f"not a {CHECKPOINT_FORMAT!r} version {CHECKPOINT_VERSION} document")
            rounds = list(document["rounds"])
            for index, entry in enumerate(rounds):
                if entry["round"] != index:
                    raise ValueError(f"round {entry['round']} stored where round {index} belongs")
            return cls(path, check_run_id(document["run-id"]), str(document["protocol"]),
                       dict(document["calibration"]), list(document["parties"]), rounds)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise CheckpointError(fix.format(f"is not a valid checkpoint ({error})")) from None

    def check_continues(self, *, run_id: str, protocol: str, calibration: dict, parties) -> None:
        """Raise :class:`CheckpointError` unless the run being resumed is this checkpoint's run."""
        mismatches = [what for what, mine, theirs in (
            ("run id", self.run_id, run_id), ("protocol", self.protocol, protocol),
            ("calibration", self.calibration, dict(calibration)), ("parties", self.parties, _party_list(parties)))
            if mine != theirs]
        if mismatches:
            raise CheckpointError(
                f"the coordinator checkpoint {self.path} is of another run than the one resumed (its "
                f"{', '.join(mismatches)} differ); resume with the crashed run's options and parties, or start a "
                "new run without --resume.")

    def record_round(self, round_index: int, total, coef, report: SecureSumReport, seconds: float) -> None:
        """Add a completed round (its noisy sum, the iterate from it, its report) and replace the file."""
        if round_index != len(self.rounds):
            raise ValueError(f"round {round_index} completed after {len(self.rounds)} stored rounds.")
        self.rounds.append({"round": int(round_index),
                            "sum": [float(value) for value in np.asarray(total, dtype=float).ravel()],
                            "coef": [float(value) for value in np.asarray(coef, dtype=float)],
                            "report": dataclasses.asdict(report), "seconds": float(seconds)})
        self._write()

    def completed(self) -> list:
        """``[(coef, report, seconds)]`` of the stored rounds, for ``private_newton`` and ``psgd``'s ``completed``."""
        return [(np.asarray(entry["coef"], dtype=float), SecureSumReport(**entry["report"]), entry["seconds"])
                for entry in self.rounds]

    def _write(self) -> None:
        document = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "run-id": self.run_id,
                    "protocol": self.protocol, "calibration": self.calibration, "parties": self.parties,
                    "rounds": self.rounds}
        write_private_atomically(self.path, json.dumps(document) + "\n")
