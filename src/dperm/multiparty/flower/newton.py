"""The few-round Newton protocol over Flower SecAgg+: the party's handlers and the coordinator's network.

The same party code and coordinator run in process (an in-process Flower
grid) and across machines (``dperm party serve`` / ``dperm coordinate
--protocol newton``). A round is one SecAgg+ secure sum of the parties'
replies (:func:`dperm.multiparty.newton.party_reply`); the secure sum's
encoding is the calibration's, and every reply lies on its grid, so
SecAgg+'s fixed point is exact and the unmasked sum is the sum of the
replies.

Party state on the party's own machine, beside its ledger, keyed by the
run id: the checked calibration, the number of answers given and the last
answer. The set-up opens the run in the party's ledger (refused unless the
whole run would fit its budget; nothing is charged and no noise is drawn at
set-up: each round's noise is fresh), and each round is charged, before its
answer leaves, at the cost of the rounds answered so far
(:func:`dperm.privacy.round_charges.newton_prefix_guarantee`), so a run that
stops early costs only its answered rounds. A party answers round ``t`` of
a run only if ``t`` is the next round of its own count, or the last round it
answered, asked again at the same ``w_t`` (a coordinator resuming after a
crash in that round): then it sends the same saved answer, which releases
nothing new; any other round is refused.

Imports Flower (through :mod:`dperm.multiparty.flower.engine`'s loader);
:mod:`dperm.multiparty.flower.app` dispatches a party's messages here.
"""

from __future__ import annotations

from dperm.losses import get_loss
from dperm.multiparty.flower._grid_network import GridNetwork  # loads Flower (after its environment)
from dperm.multiparty.flower._party import (
    coef_digest,
    load_run_document,
    next_round,
    party_floor,
    party_ledger,
    party_name,
    party_rows,
    run_state_path,
    save_run_document,
)
from dperm.multiparty.flower.grid import SecAggTerms
from dperm.multiparty.ledger import check_run_id
from dperm.multiparty.newton import NewtonNetwork, party_reply
from dperm.multiparty.newton_privacy import check_newton_calibration
from dperm.multiparty.secure_sum import check_contribution
from dperm.privacy.newton import NewtonCalibration, view_guarantee
from dperm.privacy.round_charges import newton_prefix_guarantee
from dperm.validation import check_random_state, clip_rows_to_norm

__all__ = ["FlowerNewtonNetwork", "newton_reply", "newton_secagg_terms", "newton_setup"]

PROTOCOL = "newton"


#: Format of the party's saved Newton state (beside its ledger; never sent).
NEWTON_STATE_FORMAT = "dperm-party-newton-run"
#: The mechanism's name in the party's ledger.
LEDGER_MECHANISM = "multiparty-newton"


def _state_path(context, run_id):
    return run_state_path(context, run_id).with_suffix(".newton.json")


def _save_state(context, run_id, calibration: NewtonCalibration, h: float, rounds_answered: int,
                last_answer=None) -> None:
    """Save the run's state; ``last_answer`` is ``(round, digest of w_t, reply)`` of the last round answered."""
    save_run_document(_state_path(context, run_id), {
        "format": NEWTON_STATE_FORMAT, "run-id": run_id, "calibration": calibration.to_config(), "h": h,
        "rounds-answered": int(rounds_answered)}, last_answer)


def _load_state(context, run_id):
    """``(calibration, h, rounds_answered, last_answer)`` saved for ``run_id``, or None; an unreadable state is refused.

    ``last_answer`` is ``(round, digest of w_t, reply)`` or None (none yet, or a state written before dperm
    kept it).
    """
    return load_run_document(
        _state_path(context, run_id), NEWTON_STATE_FORMAT, run_id,
        lambda document, last: (NewtonCalibration.from_config(document["calibration"]), float(document["h"]),
                                int(document["rounds-answered"]), last),
        "the party's saved Newton state for run {run_id}, {path}, is unreadable ({error}); the party refuses the run.")


def newton_setup(context, config) -> dict:
    """A party's ``setup`` for the Newton protocol, before it draws or sends anything.

    Recompute and check the calibration against the party's floor, open the
    run in the party's own ledger under the run id (refused unless the whole
    run's guarantee fits what is left of its budget; nothing is charged yet)
    and save the run's state on the party's machine. A repeated set-up of a
    run (a resumed coordinator) is accepted only with the same calibration
    and its saved state; its answer count carries on.
    """
    name = party_name(context)
    run_id = check_run_id(config.get("run-id"))
    announced = NewtonCalibration.from_config({key: value for key, value in config.items()
                                               if key in NewtonCalibration.__dataclass_fields__})
    h = float(config.get("h", 0.5))
    loss = get_loss(announced.loss, h=h)
    X, _ = _party_rows(context, announced.data_norm)
    recomputed = check_newton_calibration(announced, party_floor(context), loss=loss,
                                          data_norm=announced.data_norm, n_samples=X.shape[0],
                                          n_features=X.shape[1], party_id=name)
    ledger, budget = party_ledger(context)
    epsilon, delta = view_guarantee(recomputed)
    entry = ledger.open_run(run_id, LEDGER_MECHANISM, n_rounds=recomputed.n_rounds, epsilon=epsilon, delta=delta,
                            **budget)
    saved = _load_state(context, run_id)
    if saved is None and entry.per_round and entry.rounds == 0:  # a new run (or one that never answered)
        _save_state(context, run_id, recomputed, h, 0)
        return {"ready": True}
    if saved is None or saved[0] != recomputed or saved[1] != h:
        raise RuntimeError(f"party {name!r} has already been charged for run {run_id} and "
                           + ("has no saved state for it" if saved is None else "it had another calibration")
                           + "; it refuses rather than answer rounds no budget accounts for.")
    return {"ready": True}


def _party_rows(context, data_norm):
    """The party's shard with rows scaled onto ``data_norm`` (the party's own log warns; never sent)."""
    X, y = party_rows(context)  # parsed once per process
    X, _ = clip_rows_to_norm(X, data_norm)
    return X, y


def newton_reply(context, parameters, config) -> list:
    """One Newton request on the party's side, before ``secaggplus_mod`` encodes the reply.

    Round ``t`` (``config["round"]``) is answered only if it is the next
    round of the party's own count for the run id: its cost (the prefix
    charge of ``t + 1`` rounds) is charged to the ledger and the answer saved
    before it leaves. The last round answered, asked again at the same
    ``w_t``, gets the same saved answer and costs nothing (a coordinator
    resuming after a crash inside that round). Anything else is refused.
    """
    name = party_name(context)
    run_id = check_run_id(config.get("run-id"))
    saved = _load_state(context, run_id)
    if saved is None:
        raise RuntimeError(f"party {name!r} got a Newton request for run {run_id} before its set-up.")
    calibration, h, rounds_answered, last = saved
    if len(parameters) != 1:
        raise ValueError(f"a Newton request carries one array (w_t); got {len(parameters)}.")
    coef = check_contribution(name, parameters[0], calibration.n_features)
    digest = coef_digest(coef)
    ledger, budget, entry, answered, repeat = next_round(context, run_id, name, rounds_answered, last,
                                                         int(config["round"]), digest)
    if repeat:
        return [last[2]]  # the same answer again: nothing new is released
    if answered >= calibration.n_rounds:
        raise RuntimeError(f"party {name!r} has answered all {calibration.n_rounds} agreed rounds of run {run_id}; "
                           "a further answer is not covered by the calibration.")
    X, y = _party_rows(context, calibration.data_norm)
    reply = party_reply(X, y, get_loss(calibration.loss, h=h), calibration, coef, check_random_state(None),
                         party_id=name)
    if entry.per_round:  # charged before anything is sent; refused once over the party's budget
        ledger.charge_round(run_id, answered + 1, *newton_prefix_guarantee(calibration, answered + 1), **budget)
    _save_state(context, run_id, calibration, h, answered + 1, (answered, digest, reply))
    return [reply]


def newton_secagg_terms(context, config):
    """``K`` and the secure sum's encoding of the party's checked Newton calibration for this run."""
    run_id = check_run_id(config.get("run-id"))
    saved = _load_state(context, run_id)
    if saved is None:
        raise RuntimeError(f"party {party_name(context)!r} got a Newton request for run {run_id} before its "
                           "set-up.")
    calibration = saved[0]
    return SecAggTerms(n_parties=calibration.n_parties, clipping_range=calibration.clipping_range,
                       quantization_range=calibration.quantization_range, modulus_range=calibration.modulus_range)


class FlowerNewtonNetwork(GridNetwork, NewtonNetwork):
    """The Newton protocol's network over a Flower grid: one SecAgg+ round per sum, in the calibration's encoding.

    Parameters as for :class:`~dperm.multiparty.flower._grid_network.GridNetwork`.
    """

    def __init__(self, grid, parties, *, timeout=None, server_context=None, h=0.5, engine_name=None, run_id=None):
        super().__init__(grid, parties, timeout=timeout, server_context=server_context, h=h,
                         engine_name=engine_name, run_id=run_id)
        self._calibration = None

    def setup(self, calibration: NewtonCalibration) -> None:
        self._send_setup({"action": "setup", "protocol": PROTOCOL, "run-id": self.run_id, "h": self.h,
                          **calibration.to_config()})
        self._calibration = calibration

    def round_sum(self, coef, round_index: int):
        calibration = self._calibration
        encoding = (calibration.clipping_range, calibration.quantization_range, calibration.modulus_range)
        config = {"protocol": PROTOCOL, "run-id": self.run_id, "round": int(round_index)}
        (total,) = self._secure_round(coef, config, round_index, encoding)
        return total, self._report(calibration.dimension, encoding)
