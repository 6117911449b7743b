"""The coordinator's channel to the parties over a Flower grid, shared by PSGD and Newton.

:class:`GridNetwork` holds the parties (public :class:`PartyInfo` from the
``describe`` query), the run id and the grid; it sends set-up queries and
runs one SecAgg+ round per secure sum
(:func:`~dperm.multiparty.flower.grid.secagg_sum_round`).
:class:`~dperm.multiparty.flower.app.FlowerGridNetwork` (PSGD, 004 Alg. 1)
and :class:`~dperm.multiparty.flower.newton.FlowerNewtonNetwork` add what
each protocol sends. Imports Flower (through the grid).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

import numpy as np

from dperm.multiparty.flower.engine import load_flower
from dperm.multiparty.ledger import check_run_id
from dperm.multiparty.protocol import PartyNetwork
from dperm.multiparty.secure_sum import SecureSumReport, quantization_error_bound

_flower = load_flower()  # Flower's environment first, then Flower and the grid

from dperm.multiparty.flower._adapter import server_identity  # noqa: E402

#: The engine named in every :class:`SecureSumReport` of a networked run.
ENGINE_NAME = "flower_secaggplus_networked"


@dataclass(frozen=True)
class PartyInfo:
    """What the coordinator knows about a party: public values only."""

    node_id: int
    name: str
    n_samples: int
    n_features: int
    features: tuple


def new_run_id() -> str:
    """A fresh public run identifier: 128 random bits as 32 hex digits (one per private training)."""
    return secrets.token_hex(16)


class GridNetwork(PartyNetwork):
    """The coordinator's channel to ``K`` parties over a Flower grid, shared by both protocols.

    Holds the parties, the run id and the grid; sends a set-up query to
    every party (:meth:`_send_setup`) and runs one SecAgg+ round per secure
    sum (:meth:`_secure_round`), timing it. :class:`FlowerGridNetwork`
    (PSGD) and :class:`~dperm.multiparty.flower.newton.FlowerNewtonNetwork`
    add what each protocol sends.

    Parameters
    ----------
    grid : flwr.serverapp.grid.Grid
        The ServerApp's grid (networked) or an in-process grid (tests).
    parties : sequence of PartyInfo
        From the ``describe`` query.
    timeout : float, optional
        Seconds to wait for the parties' replies at each stage.
    server_context : flwr.app.Context, optional
    h : float, default=0.5
        Width of the Huber loss, sent with the calibration.
    engine_name : str, default=ENGINE_NAME
        Recorded in every :class:`SecureSumReport` (and so in ``privacy_``).
    run_id : str, optional
        The training's public identifier (32 hex digits), sent with the
        set-up and every request; each party keys its ledger charge and its
        run state by it. Default: a fresh random one (:func:`new_run_id`).
    """

    def __init__(self, grid, parties, *, timeout=None, server_context=None, h=0.5, engine_name=ENGINE_NAME,
                 run_id=None):
        self.grid = grid
        self.run_id = new_run_id() if run_id is None else check_run_id(run_id)
        self.engine_name = str(engine_name or ENGINE_NAME)
        self.h = float(h)
        self.parties = tuple(parties)
        self.timeout = timeout
        self.server_context = server_context
        self.round_seconds = []  # wall-clock time of each SecAgg+ round (benchmarks)
        self._node_names = {party.node_id: party.name for party in self.parties}

    @property
    def n_samples_by_party(self) -> tuple:
        return tuple(party.n_samples for party in self.parties)

    @property
    def n_features(self) -> int:
        return self.parties[0].n_features

    def _send_setup(self, config: dict) -> None:
        """Send a set-up query to every party; any refusal fails the set-up."""
        with server_identity(self.grid.run.run_id):
            _flower.query_parties(self.grid, list(self._node_names), config, timeout=self.timeout)

    def _secure_round(self, coef, config: dict, round_index: int, encoding) -> list:
        """One SecAgg+ round broadcasting ``coef``: the unmasked sums (:func:`~.grid.secagg_sum_round`)."""
        clipping_range, quantization_range, modulus_range = encoding
        started = time.perf_counter()
        sums = _flower.secagg_sum_round(
            self.grid, self._node_names, [np.asarray(coef, dtype=float)], config,
            clipping_range=clipping_range, quantization_range=quantization_range, modulus_range=modulus_range,
            round_index=round_index, timeout=self.timeout, server_context=self.server_context,
        )
        self.round_seconds.append(time.perf_counter() - started)
        return sums

    def _report(self, dimension: int, encoding, coordinates_clipped=None) -> SecureSumReport:
        clipping_range, quantization_range, modulus_range = encoding
        n_parties = len(self.parties)
        return SecureSumReport(
            engine=self.engine_name, n_parties=n_parties, dimension=dimension, clipping_range=clipping_range,
            quantization_range=quantization_range, modulus_range=modulus_range,
            coordinates_clipped=coordinates_clipped,
            error_bound=quantization_error_bound(n_parties, clipping_range, quantization_range),
        )
