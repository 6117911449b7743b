"""Issue 31, finding 7 for PSGD: a party's ledger charges PSGD rounds as they are answered, and a crashed
coordinator resumes its PSGD run under the same run id from its last completed round.

In process: the deployed ClientApp and ServerApp code on an in-process Flower grid (each party with its own
shard file, floor, ledger and run state, as ``dperm party serve`` configures it). The real-process test is slow.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest

flwr = pytest.importorskip("flwr")

from dperm.losses import get_loss  # noqa: E402
from dperm.multiparty.flower import app as flower_app  # noqa: E402
from dperm.multiparty.ledger import PartyLedger  # noqa: E402
from dperm.multiparty.privacy import calibrate_psgd, party_view  # noqa: E402
from dperm.privacy.psgd import PartyFloor  # noqa: E402
from dperm.privacy.round_charges import psgd_prefix_guarantee  # noqa: E402
from tests.multiparty.flower.test_flower import FLOOR, deployment_grid, shard_files  # noqa: E402,F401

pytestmark = pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")  # each party's own log

SIZES = (30, 40, 50)
#: The floor of FLOOR as the party reads it: its max_delta is the slack of its advanced composition.
PARTY_FLOOR = PartyFloor(FLOOR["max-epsilon"], FLOOR["max-delta"], FLOOR["max-rounds"])


class CoordinatorCrash(Exception):
    """Stands for a coordinator killed at a chosen point."""


def calibration(n_rounds=4, **keywords):
    keywords = {"epsilon": 1.0, "round_epsilon": 0.5, **keywords}
    return calibrate_psgd(delta=1e-5, alpha=0.05, n_samples=sum(SIZES), n_parties=3, n_features=4,
                          n_rounds=n_rounds, loss=get_loss("logistic"), data_norm=1.0, **keywords)


def settings(n_rounds=4, **keywords):
    keywords = {"round_epsilon": 0.5, **keywords}
    return flower_app.CoordinatorSettings(n_parties=3, epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=n_rounds,
                                          wait_seconds=1.0, protocol="psgd", **keywords)


def ledgers_of(folder):
    return {path.name: PartyLedger(path).charges() for path in sorted(folder.glob("ledger-*.json"))}


def ledger_bytes(folder):
    return {path.name: path.read_bytes() for path in folder.glob("ledger-*.json")}


@pytest.fixture
def seeded_party_noise(monkeypatch):
    """eta^k seeded by the party's size, each round's noise by its size and the broadcast w_t, so two runs that
    broadcast the same iterates draw the same noise (the deployed party draws from the OS; tests only)."""
    real_setup, real_gradient = flower_app.DeployedParty.setup, flower_app.DeployedParty.noisy_gradient

    def setup(self, calibration):
        self._rng = np.random.default_rng([self.n_samples])
        return real_setup(self, calibration)

    def noisy_gradient(self, coef):
        self._rng = np.random.default_rng([self.n_samples, zlib.crc32(np.asarray(coef, dtype="<f8").tobytes())])
        return real_gradient(self, coef)

    monkeypatch.setattr(flower_app.DeployedParty, "setup", setup)
    monkeypatch.setattr(flower_app.DeployedParty, "noisy_gradient", noisy_gradient)
    deterministic_flower_rounding(monkeypatch)


def deterministic_flower_rounding(monkeypatch):
    """SecAgg+'s stochastic rounding (Flower's global numpy generator) seeded by the vector it rounds (tests only):
    the same replies then give the same secure sum, as the same replies on a Newton grid always do."""
    from flwr.common.secure_aggregation import quantization

    def stochastic_round(values):
        rng = np.random.default_rng(zlib.crc32(np.ascontiguousarray(values, dtype="<f8").tobytes()))
        rounded = np.ceil(values).astype(np.int32)
        rounded[rng.random(rounded.shape) < rounded - values] -= 1
        return rounded

    monkeypatch.setattr(quantization, "_stochastic_round", stochastic_round)


def test_a_psgd_party_abandoned_after_r_rounds_has_r_rounds_booked(shard_files, tmp_path):  # noqa: F811
    """Set-up books nothing (the run is opened); each answered round books the prefix charge of the rounds
    answered; a coordinator that then walks away leaves exactly those rounds booked, not the whole run."""
    grid = deployment_grid(shard_files, ledger_dir=tmp_path)
    parties = flower_app.describe_parties(grid, grid.get_node_ids())
    run = calibration(n_rounds=6)
    network = flower_app.FlowerGridNetwork(grid, parties, clipping_range=1e3)
    network.setup(run)
    whole = party_view(run, PARTY_FLOOR)
    for charges in ledgers_of(tmp_path).values():
        entry = charges[network.run_id]
        assert (entry.rounds, entry.epsilon, entry.delta) == (0, 0.0, 0.0)
        assert (entry.n_rounds, entry.booked_epsilon, entry.booked_delta) == (6, whole.epsilon, whole.delta)
    coef = np.zeros(4)
    for t in range(2):  # two rounds answered, then the coordinator is gone
        total, _ = network.gradient_sum(coef, 1.0 / run.n_samples, t)
        coef = coef - 0.1 * total
    for charges in ledgers_of(tmp_path).values():
        entry = charges[network.run_id]
        assert entry.rounds == 2
        assert (entry.epsilon, entry.delta) == psgd_prefix_guarantee(run, 2, slack=PARTY_FLOOR.max_delta) == (1.0, 0)
    assert whole.epsilon == 3.0  # what the abort would have cost when the whole run was booked at set-up


def test_the_psgd_round_in_flight_asked_again_at_the_same_w_gets_the_same_answers_and_costs_nothing(
        shard_files, tmp_path, monkeypatch):  # noqa: F811
    """OS noise (not seeded): the repeated round's secure sum is bit for bit the first one (SecAgg+'s rounding made
    deterministic) and nothing is charged; the same round at another w_t, an earlier round or a skipped round is
    refused; a repeated set-up draws no new eta^k."""
    deterministic_flower_rounding(monkeypatch)
    grid = deployment_grid(shard_files[:2], ledger_dir=tmp_path)
    parties = flower_app.describe_parties(grid, grid.get_node_ids())
    run = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=70, n_parties=2, n_features=4, n_rounds=3,
                         loss=get_loss("logistic"), data_norm=1.0, round_epsilon=0.5)
    network = flower_app.FlowerGridNetwork(grid, parties, clipping_range=1e3)
    network.setup(run)
    states = sorted(tmp_path.glob("ledger-*.json.runs/*.json"))
    etas = [json.loads(path.read_text())["eta"] for path in states]
    w0, w1 = np.zeros(4), np.array([0.1, -0.2, 0.3, 0.0])
    first, _ = network.gradient_sum(w0, 1.0 / 70, 0)
    second, _ = network.gradient_sum(w1, 1.0 / 70, 1)
    charged = ledger_bytes(tmp_path)
    resumed = flower_app.FlowerGridNetwork(grid, parties, clipping_range=1e3, run_id=network.run_id)
    resumed.setup(run)
    assert [json.loads(path.read_text())["eta"] for path in states] == etas  # the same eta^k, not a new draw
    again, _ = resumed.gradient_sum(w1, 1.0 / 70, 1)
    np.testing.assert_array_equal(again, second)  # the same answers: no new release
    assert ledger_bytes(tmp_path) == charged
    for coef, round_index, problem in ((w0, 1, "has answered 2 round"), (w0, 0, "continue at round 3"),
                                       (w0, 3, "continue at round 3")):
        with pytest.raises(Exception, match=problem):
            resumed.gradient_sum(coef, 1.0 / 70, round_index)
    assert ledger_bytes(tmp_path) == charged
    assert all(charges[network.run_id].rounds == 2 for charges in ledgers_of(tmp_path).values())
    assert not np.array_equal(first, second)


def test_with_coordinator_dp_the_round_in_flight_is_not_sent_again(shard_files, tmp_path):  # noqa: F811
    """Only the sum is accounted with coordinator_dp: a second SecAgg+ rounding of the same replies is refused,
    and the refusal costs nothing more (the next round is still the only one a party would answer)."""
    from dperm.exceptions import DropoutError

    grid = deployment_grid(shard_files[:2], ledger_dir=tmp_path)
    parties = flower_app.describe_parties(grid, grid.get_node_ids())
    run = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=70, n_parties=2, n_features=4, n_rounds=3,
                         loss=get_loss("logistic"), data_norm=1.0, coordinator_dp=True, coordinator_accountant="rdp")
    network = flower_app.FlowerGridNetwork(grid, parties, clipping_range=1e3)
    network.setup(run)
    network.gradient_sum(np.zeros(4), 1.0 / 70, 0)
    charged = ledger_bytes(tmp_path)
    with pytest.raises(DropoutError, match="does not send it again: with coordinator_dp only the sum"):
        network.gradient_sum(np.zeros(4), 1.0 / 70, 0)
    assert ledger_bytes(tmp_path) == charged
    for charges in ledgers_of(tmp_path).values():
        assert (charges[network.run_id].rounds, charges[network.run_id].epsilon) == (
            1, psgd_prefix_guarantee(run, 1, slack=PARTY_FLOOR.max_delta)[0])


def _crash_at(monkeypatch, crash_round: int, inside: bool):
    """Kill the coordinator at round ``crash_round``: before asking it, or after the parties answered it."""
    real = flower_app.FlowerGridNetwork.gradient_sum

    def gradient_sum(self, coef, scale, round_index):
        if round_index == crash_round and not inside:
            raise CoordinatorCrash(f"killed before round {round_index + 1}")
        result = real(self, coef, scale, round_index)
        if round_index == crash_round:
            raise CoordinatorCrash(f"killed inside round {round_index + 1}, after the parties answered")
        return result

    monkeypatch.setattr(flower_app.FlowerGridNetwork, "gradient_sum", gradient_sum)


@pytest.mark.parametrize("crash_round, inside", [(2, False), (1, True)])
def test_a_crashed_psgd_coordinator_resumes_its_run_and_ends_where_an_uninterrupted_run_ends(
        shard_files, tmp_path, monkeypatch, seeded_party_noise, crash_round, inside):  # noqa: F811
    """Kill the coordinator after round r (between rounds, or inside round r + 1 after the parties answered);
    an abort costs the rounds answered; resuming the same run id from its checkpoint gives the uninterrupted
    run's model bit for bit, and every party's ledger books exactly T rounds, the whole run's guarantee, once."""
    (tmp_path / "reference").mkdir()
    uninterrupted, *_ = flower_app.coordinate(deployment_grid(shard_files, ledger_dir=tmp_path / "reference"),
                                              settings())
    ledgers = tmp_path / "ledgers"
    ledgers.mkdir()
    checkpoint = tmp_path / "coordinator" / "checkpoint.json"
    checkpoint.parent.mkdir()
    with monkeypatch.context() as crash:
        _crash_at(crash, crash_round, inside)
        with pytest.raises(CoordinatorCrash):
            flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers), settings(),
                                  checkpoint_path=checkpoint)
    stored = json.loads(checkpoint.read_text())
    assert stored["protocol"] == "psgd" and len(stored["rounds"]) == crash_round  # completed rounds, no more
    run_id = stored["run-id"]
    answered = crash_round + int(inside)
    run = calibration()
    for charges in ledgers_of(ledgers).values():  # an abort costs the rounds answered
        assert charges[run_id].rounds == answered
        assert (charges[run_id].epsilon, charges[run_id].delta) == psgd_prefix_guarantee(
            run, answered, slack=PARTY_FLOOR.max_delta)
    # public values only: the iterates are the ones broadcast, the sums are the noisy secure sums
    assert set(stored) == {"format", "version", "run-id", "protocol", "calibration", "parties", "rounds"}
    assert [party["n_samples"] for party in stored["parties"]] == list(SIZES)

    resumed, _, network, record = flower_app.coordinate(
        deployment_grid(shard_files, ledger_dir=ledgers), settings(run_id=run_id, resume=True),
        checkpoint_path=checkpoint)
    np.testing.assert_array_equal(resumed.coef, uninterrupted.coef)
    assert record.to_dict() == uninterrupted.record.to_dict()
    assert record.secure_sum.n_sums == 4 and len(json.loads(checkpoint.read_text())["rounds"]) == 4
    assert len(network.round_seconds) == 4 - crash_round  # only the rounds left were asked
    whole = party_view(run, PARTY_FLOOR)
    for charges in ledgers_of(ledgers).values():
        assert list(charges) == [run_id]
        assert (charges[run_id].rounds, charges[run_id].epsilon, charges[run_id].delta) == (
            4, whole.epsilon, whole.delta)


def test_a_psgd_resume_that_does_not_continue_the_checkpointed_run_is_refused_before_anything_is_asked(
        shard_files, tmp_path, monkeypatch):  # noqa: F811
    from dperm.multiparty.flower.checkpoint import CheckpointError

    checkpoint = tmp_path / "checkpoint.json"
    ledgers = tmp_path / "ledgers"
    ledgers.mkdir()
    with monkeypatch.context() as crash:
        _crash_at(crash, 1, False)
        with pytest.raises(CoordinatorCrash):
            flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers), settings(),
                                  checkpoint_path=checkpoint)
    run_id = json.loads(checkpoint.read_text())["run-id"]
    before = ledger_bytes(ledgers)
    for changed, problem in ((settings(run_id=run_id, resume=True, round_epsilon=0.25), "calibration differ"),
                             (settings(run_id="f" * 32, resume=True), "run id differ"),
                             (dataclasses.replace(settings(run_id=run_id, resume=True), protocol="newton"),
                              "protocol, calibration differ")):
        with pytest.raises(CheckpointError, match=rf"of another run .*{problem}"):
            flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers), changed,
                                  checkpoint_path=checkpoint)
    with pytest.raises(ValueError, match="resuming needs the run's id and its checkpoint"):
        flower_app.coordinate(deployment_grid(shard_files, ledger_dir=ledgers), settings(resume=True),
                              checkpoint_path=checkpoint)
    assert ledger_bytes(ledgers) == before


@pytest.mark.slow
def test_real_processes_kill_9_of_the_psgd_coordinator_after_a_round_then_resume(shard_files, tmp_path):  # noqa: F811
    """`dperm coordinate --protocol psgd` (T = 3) killed with SIGKILL once round 1 is checkpointed; the same command
    with --resume --workdir finishes the run under its id with the same parties: each ledger books exactly the 3
    rounds, the whole run's guarantee, once."""
    from dperm.multiparty.flower.deploy import (
        flower_environment,
        free_loopback_ports,
        stop_process_group,
        write_loopback_certificates,
        write_party_key,
        write_party_roster,
    )
    from tests.multiparty.flower.test_deploy_lockdown import _stop_superlinks_on

    tls = write_loopback_certificates(tmp_path)
    fleet_port, control_port, *node_ports = free_loopback_ports(4)
    keys = [write_party_key(tmp_path / f"k{k}") for k in range(2)]
    roster = write_party_roster(tmp_path / "roster.pub", keys)
    ledgers = [tmp_path / f"ledger-{k}.json" for k in range(2)]
    env = flower_environment(FLWR_HOME=str(tmp_path / "flwr-home"))
    workdir, out = tmp_path / "coordinator", tmp_path / "model.json"
    command = [sys.executable, "-m", "dperm.cli", "coordinate", "--protocol", "psgd", "--shards", "2",
               "--party-keys", *map(str, keys), "--epsilon", "1", "--round-epsilon", "0.5", "--alpha", "0.05",
               "--rounds", "3", "--port", str(fleet_port), "--control-port", str(control_port), "--ssl-certfile",
               str(tls["server.pem"]), "--ssl-keyfile", str(tls["server.key"]), "--ssl-ca-certfile",
               str(tls["ca.pem"]), "--wait", "150", "--stage-timeout", "60", "--workdir", str(workdir),
               "--out", str(out)]
    checkpoint = workdir / "checkpoint.json"
    parties, coordinators = [], []
    try:
        coordinators.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True))
        for k, port in enumerate(node_ports):
            log = (tmp_path / f"party-{k}.log").open("w")
            parties.append(subprocess.Popen(
                [sys.executable, "-m", "dperm.cli", "party", "serve", "--data", str(shard_files[k]), "--name",
                 f"party-{k}", "--superlink", f"127.0.0.1:{fleet_port}", "--port", str(port), "--auth-key",
                 str(tmp_path / f"k{k}"), "--roster", str(roster), "--root-certificates", str(tls["ca.pem"]),
                 "--connect-timeout", "90",
                 "--ledger", str(ledgers[k]), "--max-epsilon", "1.5", "--max-delta", "1e-5", "--max-rounds", "3"],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline, done = time.monotonic() + 150, 0
        while time.monotonic() < deadline and done < 1 and coordinators[0].poll() is None:
            try:
                done = len(json.loads(checkpoint.read_text())["rounds"])
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        assert done >= 1, "round 1 was not checkpointed"
        os.kill(coordinators[0].pid, signal.SIGKILL)  # the coordinator only: its SuperLink dies with it
        coordinators[0].wait(timeout=10)
        _stop_superlinks_on(fleet_port)  # the watch's job; here only to leave no orphan if it failed
        killed_after = len(json.loads(checkpoint.read_text())["rounds"])
        run_id = json.loads(checkpoint.read_text())["run-id"]
        coordinators.append(subprocess.Popen(command + ["--resume"], env=env, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True, start_new_session=True))
        output, _ = coordinators[1].communicate(timeout=300)
    finally:
        for process in coordinators + parties:
            stop_process_group(process, grace_seconds=15)
        _stop_superlinks_on(fleet_port)
    logs = "\n".join((tmp_path / f"party-{k}.log").read_text(errors="replace")[-3000:] for k in range(2))
    assert coordinators[1].returncode == 0, output + logs
    assert f"resuming run {run_id} after its {killed_after} completed round(s)" in output
    document = json.loads(out.read_text())
    assert document["estimator"] == "PSGDClassifier" and document["privacy"]["secure_sum"]["n_sums"] == 3
    assert np.all(np.isfinite(document["coef"]))
    run = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=70, n_parties=2, n_features=4, n_rounds=3,
                         loss=get_loss("logistic"), data_norm=1.0, round_epsilon=0.5)
    whole = party_view(run, PartyFloor(1.5, 1e-5, 3))
    for path in ledgers:
        charges = PartyLedger(path).charges()
        assert list(charges) == [run_id], logs
        assert (charges[run_id].rounds, charges[run_id].epsilon, charges[run_id].delta) == (
            3, whole.epsilon, whole.delta)
