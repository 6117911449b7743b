"""The few-round Newton protocol over Flower SecAgg+: the party's handlers and the coordinator's network.

The same party code and coordinator run in process (an in-process Flower
grid) and across machines (``dperm party serve`` / ``dperm coordinate
--protocol newton``). A round is one SecAgg+ secure sum of the parties'
replies (:func:`dperm.multiparty.newton.party_reply`); the secure sum's
encoding is the calibration's, and every reply lies on its grid, so
SecAgg+'s fixed point is exact and the unmasked sum is the sum of the
replies.

Party state in the node-local Flower context: the checked calibration and
the number of answers given. No noise is drawn at set-up (each round's noise
is fresh), so a re-run cannot reuse or skip any; each answer is counted
against the agreed ``n_rounds``.

Imports Flower (through :mod:`dperm.multiparty.flower_app`'s loader).
"""

from __future__ import annotations

import time

import numpy as np

from dperm.losses import get_loss
from dperm.multiparty.newton import NewtonNetwork, party_reply
from dperm.multiparty.newton_privacy import NewtonCalibration, check_newton_calibration
from dperm.multiparty.secure_sum import SecureSumReport, check_contribution, quantization_error_bound
from dperm.validation import check_random_state, clip_rows_to_norm

#: Key of the party's node-local Newton state (never sent anywhere).
NEWTON_STATE_KEY = "dperm.newton"
PROTOCOL = "newton"


def _flower():
    from dperm.multiparty import flower_app

    return flower_app


def newton_setup(context, config) -> dict:
    """A party's ``setup`` for the Newton protocol: recompute, check against its floor, keep the calibration."""
    app = _flower()
    from flwr.app import ConfigRecord

    if NEWTON_STATE_KEY in context.state.config_records:
        raise RuntimeError(f"party {app._party_name(context)!r} is already set up for this Newton run.")
    announced = NewtonCalibration.from_config({key: value for key, value in config.items()
                                               if key in NewtonCalibration.__dataclass_fields__})
    loss = get_loss(announced.loss, h=float(config.get("h", 0.5)))
    X, _ = _party_rows(context, announced.data_norm)
    check_newton_calibration(announced, app.party_floor(context), loss=loss, data_norm=announced.data_norm,
                             n_samples=X.shape[0], n_features=X.shape[1], party_id=app._party_name(context))
    state = announced.to_config()
    state.update({"h": float(config.get("h", 0.5)), "rounds-answered": 0})
    context.state.config_records[NEWTON_STATE_KEY] = ConfigRecord(state)
    return {"ready": True}


def _party_rows(context, data_norm):
    """The party's shard with rows scaled onto ``data_norm`` (the party's own log warns; never sent)."""
    app = _flower()
    path = context.node_config.get("data-path")
    if not path:
        raise ValueError("this SuperNode has no 'data-path' in its node config (dperm party serve --data PATH).")
    X, y, _ = app.load_shard(path, str(context.node_config.get("target", "label")))
    X, _ = clip_rows_to_norm(X, data_norm)
    return X, y


def newton_reply(context, parameters, config) -> list:
    """One Newton request on the party's side, before ``secaggplus_mod`` encodes the reply."""
    app = _flower()
    from flwr.app import ConfigRecord

    name = app._party_name(context)
    if NEWTON_STATE_KEY not in context.state.config_records:
        raise RuntimeError(f"party {name!r} got a Newton request before its set-up.")
    state = dict(context.state.config_records[NEWTON_STATE_KEY])
    calibration = NewtonCalibration.from_config(state)
    if state["rounds-answered"] >= calibration.n_rounds:
        raise RuntimeError(f"party {name!r} has answered all {calibration.n_rounds} agreed rounds; a further "
                           "answer is not covered by the calibration.")
    if len(parameters) != 1:
        raise ValueError(f"a Newton request carries one array (w_t); got {len(parameters)}.")
    coef = check_contribution(name, parameters[0], calibration.n_features)
    X, y = _party_rows(context, calibration.data_norm)
    state["rounds-answered"] = int(state["rounds-answered"]) + 1
    context.state.config_records[NEWTON_STATE_KEY] = ConfigRecord(state)  # counted before anything is sent
    loss = get_loss(calibration.loss, h=float(state["h"]))
    reply = party_reply(X, y, loss, calibration, coef, check_random_state(None))
    return [reply]


class FlowerNewtonNetwork(NewtonNetwork):
    """The coordinator's channel for the Newton protocol over a Flower grid: one SecAgg+ round per sum."""

    def __init__(self, grid, parties, *, timeout=None, server_context=None, h=0.5, engine_name=None):
        self.grid = grid
        self.parties = tuple(parties)
        self.timeout = timeout
        self.server_context = server_context
        self.h = float(h)
        self.engine_name = engine_name or _flower().ENGINE_NAME
        self.round_seconds = []
        self._calibration = None
        self._node_names = {party.node_id: party.name for party in self.parties}

    @property
    def n_samples_by_party(self) -> tuple:
        return tuple(party.n_samples for party in self.parties)

    @property
    def n_features(self) -> int:
        return self.parties[0].n_features

    def setup(self, calibration: NewtonCalibration) -> None:
        app = _flower()
        config = {"action": "setup", "protocol": PROTOCOL, "h": self.h, **calibration.to_config()}
        with app._flower.server_identity(self.grid.run.run_id):
            app._flower.query_parties(self.grid, list(self._node_names), config, timeout=self.timeout)
        self._calibration = calibration

    def round_sum(self, coef, round_index: int):
        app = _flower()
        calibration = self._calibration
        config = {"protocol": PROTOCOL, "round": int(round_index)}
        started = time.perf_counter()
        (total,) = app._flower.secagg_sum_round(
            self.grid, self._node_names, [np.asarray(coef, dtype=float)], config,
            clipping_range=calibration.clipping_range, quantization_range=calibration.quantization_range,
            modulus_range=calibration.modulus_range, round_index=round_index, timeout=self.timeout,
            server_context=self.server_context,
        )
        self.round_seconds.append(time.perf_counter() - started)
        report = SecureSumReport(
            engine=self.engine_name, n_parties=len(self.parties), dimension=calibration.dimension,
            clipping_range=calibration.clipping_range, quantization_range=calibration.quantization_range,
            modulus_range=calibration.modulus_range, coordinates_clipped=None,
            error_bound=quantization_error_bound(len(self.parties), calibration.clipping_range,
                                                 calibration.quantization_range),
        )
        return total, report
