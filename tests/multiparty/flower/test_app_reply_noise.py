"""What one deployed party sends: the ClientApp's reply minus the exact statistic follows the calibration.

Issue 31 (finding 4): with the deployed Newton reply sending its exact packed sums, every multiparty
test passed. Here each deployed reply path is called exactly as the party's ClientApp calls it
(``dperm.multiparty.flower.app.party_reply`` after ``party_setup``, with a SuperNode's node config:
shard file, floor, ledger), the test recomputes the noise-free statistic from the shard file and the
public broadcast, and checks the residual's centre, scale and shape against the calibration at one
party's share (``_reply_noise``). A deployed party draws from the OS CSPRNG; these tests replace the
name ``check_random_state`` in the party's module by a fixed sequence of seeds (a test-side patch;
the release path has no seam), so they are deterministic.

The slow test at the end starts a SuperLink, SuperNodes and ``dperm coordinate`` as real processes and
checks what each party actually handed to ``secaggplus_mod``, logged by a ``sitecustomize`` hook that
exists only in the test's temporary folder and only for the parties' processes.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import Context, RecordDict  # noqa: E402

from dperm.losses import get_loss  # noqa: E402
from dperm.multiparty import calibrate_psgd  # noqa: E402
from dperm.multiparty.flower import app as flower_app  # noqa: E402
from dperm.multiparty.flower._grid_network import new_run_id  # noqa: E402
from dperm.multiparty.newton_privacy import calibrate_newton  # noqa: E402
from dperm.multiparty.privacy import round_noise_calibration  # noqa: E402
from dperm.privacy.newton import view_guarantee  # noqa: E402
from tests._multiparty_data import make_data, write_shard  # noqa: E402
from tests.multiparty._reply_noise import (  # noqa: E402
    FALSE_ALARM,
    broadcasts,
    discrete_gaussian_report,
    discrete_laplace_report,
    gaussian_report,
    gaussian_scale_p,
    logistic_sums,
    newton_residual_steps,
    newton_statistic,
    rows_on_norm,
    shard,
)

LOGISTIC = get_loss("logistic")
SIZES = (200, 150, 250)
NEWTON_ROUNDS, PSGD_ROUNDS, ETA_RUNS = 100, 100, 100

pytestmark = pytest.mark.filterwarnings("ignore::dperm.exceptions.DataClippingWarning")  # the party's own log


def party_context(tmp_path, *, max_epsilon, max_rounds, max_delta=1e-5):
    """One SuperNode's context as ``dperm party serve`` configures it, with a budget for many runs."""
    X, y = shard()
    path = write_shard(tmp_path / "shard.csv", X, y)
    config = {"data-path": str(path), "party-name": "p0", "max-epsilon": max_epsilon, "max-delta": max_delta,
              "max-rounds": max_rounds, "ledger-path": str(tmp_path / "ledger.json"),
              "budget-epsilon": 1e9, "budget-delta": 0.5}
    return Context(run_id=1, node_id=7, node_config=config, state=RecordDict(), run_config={}), X, y


def seeded(monkeypatch, module, start):
    """Each ``check_random_state(None)`` in ``module`` returns the generator of the next fixed seed."""
    seeds, real = itertools.count(start), module.check_random_state
    monkeypatch.setattr(module, "check_random_state", lambda state: real(next(seeds) if state is None else state))


# -- Newton: dperm.multiparty.flower.newton.newton_reply behind the ClientApp's party_reply --------------


@pytest.fixture(scope="module")
def newton_calibration():
    return calibrate_newton(epsilon=2.0, delta=1e-5, alpha=0.05, n_rounds=NEWTON_ROUNDS, n_samples_by_party=SIZES,
                            n_features=4, loss=LOGISTIC, data_norm=1.0)


def deployed_newton_residuals(tmp_path, monkeypatch, calibration, n_rounds=NEWTON_ROUNDS):
    from dperm.multiparty.flower import newton as flower_newton

    seeded(monkeypatch, flower_newton, 7000)
    epsilon, _ = view_guarantee(calibration)
    context, X, y = party_context(tmp_path, max_epsilon=max(epsilon, calibration.epsilon),
                                  max_rounds=calibration.n_rounds)
    run_id = new_run_id()
    assert flower_app.party_setup(context, {"action": "setup", "protocol": "newton", "run-id": run_id, "h": 0.5,
                                            **calibration.to_config()}) == {"ready": True}
    ws = broadcasts(n_rounds)
    replies = []
    for t, w in enumerate(ws):
        (reply,) = flower_app.party_reply(context, [w], {"protocol": "newton", "run-id": run_id, "round": t})
        replies.append(reply)
    rows = rows_on_norm(X, 1.0)
    statistics = [newton_statistic(rows, y, w, calibration) for w in ws]
    return newton_residual_steps(replies, statistics, calibration.grid_step)


def test_a_deployed_newton_party_sends_one_share_of_discrete_gaussian_noise(tmp_path, monkeypatch,
                                                                            newton_calibration):
    residual = deployed_newton_residuals(tmp_path, monkeypatch, newton_calibration)
    report = discrete_gaussian_report(residual, newton_calibration.party_sigma_squared)
    assert report.passes(), report
    total = math.sqrt(newton_calibration.n_parties * newton_calibration.party_sigma_squared)
    assert gaussian_scale_p(residual, total) < FALSE_ALARM  # one party's share, not the K-party total


def test_the_deployed_newton_check_catches_finding_4s_noise_free_party(tmp_path, monkeypatch, newton_calibration):
    """The party of issue 31's finding 4, sending its exact packed sums, fails the check above.

    The other mutations (a negated statistic, half the noise) run through the same
    ``dperm.multiparty.newton.party_reply`` and are caught in ``tests/multiparty/test_multiparty_reply_noise.py``.
    """
    from dperm.multiparty import newton

    monkeypatch.setattr(newton, "sample_discrete_gaussian_vector", lambda dimension, *_: [0] * dimension)
    residual = deployed_newton_residuals(tmp_path, monkeypatch, newton_calibration, n_rounds=10)
    report = discrete_gaussian_report(residual, newton_calibration.party_sigma_squared)
    assert not report.passes(), report


# -- PSGD: the ClientApp's party_reply (004 Proc. 3) ------------------------------------------------------


def psgd_calibration(n_rounds, coordinator_dp=False):
    return calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=sum(SIZES), n_parties=len(SIZES),
                          n_features=4, n_rounds=n_rounds, loss=LOGISTIC, data_norm=1.0,
                          coordinator_dp=coordinator_dp,
                          coordinator_accountant="rdp")  # the same noise law as PLD's; 10x faster to calibrate


def psgd_floor(calibration):
    from dperm.privacy.psgd import accepting_floor

    floor = accepting_floor(calibration)
    return {"max_epsilon": floor.max_epsilon, "max_rounds": floor.max_rounds}


def deployed_psgd_run(context, calibration, ws):
    """One run id: set-up, then one reply per broadcast; returns the replies (unscaled) and the saved eta."""
    run_id = new_run_id()
    assert flower_app.party_setup(context, {"action": "setup", "run-id": run_id,
                                            **flower_app.calibration_to_config(calibration, 0.5)})
    scale = 1.0 / calibration.n_samples
    config = {"scale": scale, "clipping-range": 1e6, "quantization-range": 2**22, "run-id": run_id}
    replies = np.array([flower_app.party_reply(context, [w], config)[0] for w in ws]) / scale
    eta = np.array(json.loads(flower_app.run_state_path(context, run_id).read_text())["eta"])
    return replies, eta


def test_a_deployed_psgd_party_sends_rho_on_the_grid_and_one_share_of_eta(tmp_path, monkeypatch):
    """``reply / scale = grad G_k(w) + rho^k + eta^k`` over ``ETA_RUNS`` set-ups (run ids), one reply each.

    ``eta^k`` is read from the party's own saved state: the reply minus it and minus the gradient the
    test computes must be exact discrete Laplace on the round's grid (``rho``), and the saved ``eta^k``
    must be ``N(0, sigma^2 / K)`` per coordinate, not ``sigma^2``. A party whose reply lacks its saved
    eta, or carries another, leaves the grid. (``test_flower.py`` checks ``rho`` over 400
    rounds of one run.)
    """
    from dperm.multiparty import protocol

    seeded(monkeypatch, protocol, 11000)
    calibration = psgd_calibration(1)
    context, X, y = party_context(tmp_path, **psgd_floor(calibration))
    w = broadcasts(1)
    rows = rows_on_norm(X, 1.0)
    gradient = logistic_sums(rows, y, w[0])[0]
    grid = round_noise_calibration(calibration.round_epsilon, 1.0, 1.0, 4)
    etas, rho = [], []
    for _ in range(ETA_RUNS):
        replies, eta = deployed_psgd_run(context, calibration, w)
        steps = (replies[0] - eta) / grid.step  # the saved eta is the eta in the reply
        np.testing.assert_allclose(steps, np.round(steps), rtol=0, atol=1e-3)
        rho.append(np.round(steps) - np.round(gradient / grid.step))
        etas.append(eta)
    report = discrete_laplace_report(np.array(rho), grid.scale_in_steps)
    assert report.passes(), report
    report = gaussian_report(np.array(etas), calibration.party_noise_sigma)
    assert report.passes(), report
    assert gaussian_scale_p(np.array(etas), calibration.noise_sigma) < FALSE_ALARM


def test_a_deployed_coordinator_dp_party_sends_one_share_of_the_gaussian_noise(tmp_path, monkeypatch):
    pytest.importorskip("dp_accounting")
    from dperm.multiparty import protocol

    seeded(monkeypatch, protocol, 13000)
    calibration = psgd_calibration(PSGD_ROUNDS, coordinator_dp=True)
    context, X, y = party_context(tmp_path, **psgd_floor(calibration))
    ws = broadcasts(PSGD_ROUNDS)
    replies, eta = deployed_psgd_run(context, calibration, ws)
    assert not eta.any()
    rows = rows_on_norm(X, 1.0)
    residual = replies - np.array([logistic_sums(rows, y, w)[0] for w in ws])
    report = gaussian_report(residual, calibration.round_noise_scale)
    assert report.passes(), report
    assert gaussian_scale_p(residual, calibration.round_noise_sigma) < FALSE_ALARM


# -- real processes: what each party handed to secaggplus_mod ------------------------------------------------

#: A ``sitecustomize`` for the parties' processes only (put first on their PYTHONPATH by the test): when
#: ``dperm.multiparty.flower.grid`` is imported it wraps ``make_party_client_app`` so that the party's
#: reply handler also appends ``(party, config, w_t, reply arrays)`` to a JSON-lines file of its own.
#: Nothing in dperm changes; the ClientApp built from the wrapped handler is otherwise dperm's.
REPLY_LOG_HOOK = textwrap.dedent('''
    import importlib.abc, importlib.util, json, os, sys

    LOG = os.environ.get("DPERM_TEST_REPLY_LOG")
    TARGET = "dperm.multiparty.flower.grid"


    def _plain(value):
        return value if isinstance(value, (bool, int, float, str)) else repr(value)


    def _wrap(module):
        make = module.make_party_client_app

        def make_logged(reply_fn, *args, **kwargs):
            def logged(context, parameters, config):
                arrays = reply_fn(context, parameters, config)
                record = {"party": str(context.node_config.get("party-name")),
                          "config": {key: _plain(value) for key, value in config.items()},
                          "parameters": [[float(v) for v in p.ravel()] for p in parameters],
                          "reply": [[float(v) for v in a.ravel()] for a in arrays]}
                with open(os.path.join(LOG, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(record) + "\\n")
                return arrays
            return make(logged, *args, **kwargs)

        module.make_party_client_app = make_logged


    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != TARGET:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _wrap(module)

            spec.loader.exec_module = exec_module
            return spec


    if LOG:
        sys.meta_path.insert(0, _Finder())
''')

#: Each protocol's run: rounds, the coordinator's epsilon and the parties' floor (3 parties of 200 rows).
REAL_RUNS = {
    # 3 parties x 4 rounds x D = 14 coordinates: 168 discrete Gaussian draws
    "newton": {"rounds": 4, "epsilon": 4.0, "floor": ["--max-epsilon", "4", "--max-delta", "1e-5",
                                                       "--max-rounds", "4"]},
    # 3 parties x 20 rounds x d = 4: 240 discrete Laplace draws (the view is 20 x round epsilon 1)
    "psgd": {"rounds": 20, "epsilon": 1.0, "floor": ["--max-epsilon", "20", "--max-delta", "1e-5",
                                                     "--max-rounds", "20"]},
}


def run_real_processes(tmp_path, protocol, shards):
    """SuperLink over TLS + 3 `dperm party serve` (with the reply log hook) + `dperm coordinate`."""
    from dperm.multiparty.flower.deploy import (
        free_loopback_ports,
        stop_process_group,
        write_loopback_certificates,
        write_party_key,
        write_party_roster,
    )

    run = REAL_RUNS[protocol]
    tls = write_loopback_certificates(tmp_path)
    superlink_port, control_port, *node_ports = free_loopback_ports(2 + len(shards))
    keys = [write_party_key(tmp_path / f"party-{k}.key") for k in range(len(shards))]
    roster = write_party_roster(tmp_path / "roster.pub", keys)
    hook, log = tmp_path / "hook", tmp_path / "replies"
    hook.mkdir()
    log.mkdir()
    (hook / "sitecustomize.py").write_text(REPLY_LOG_HOOK, encoding="utf-8")
    env = {**os.environ, "FLWR_HOME": str(tmp_path / "flwr-home"), "FLWR_TELEMETRY_ENABLED": "0",
           "FLWR_DISABLE_UPDATE_CHECK": "1"}
    party_env = {**env, "DPERM_TEST_REPLY_LOG": str(log),
                 "PYTHONPATH": os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])}
    dperm = [sys.executable, "-m", "dperm.cli"]
    out = tmp_path / "model.json"
    processes, logs = [], []
    try:
        coordinator = subprocess.Popen(
            dperm + ["coordinate", "--protocol", protocol, "--shards", str(len(shards)),
                     "--epsilon", str(run["epsilon"]), "--alpha", "0.05", "--rounds", str(run["rounds"]),
                     "--port", str(superlink_port), "--control-port", str(control_port),
                     "--party-keys", *map(str, keys), "--ssl-certfile", str(tls["server.pem"]),
                     "--ssl-keyfile", str(tls["server.key"]), "--ssl-ca-certfile", str(tls["ca.pem"]),
                     "--wait", "240", "--stage-timeout", "120",
                     "--workdir", str(tmp_path / "coordinator"), "--out", str(out)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        processes.append(coordinator)
        for k, port in enumerate(node_ports):
            party_log = open(tmp_path / f"party-{k}.log", "w", encoding="utf-8")  # noqa: SIM115 (closed below)
            logs.append(party_log)
            processes.append(subprocess.Popen(
                dperm + ["party", "serve", "--data", str(shards[k]), "--name", f"party-{k}",
                         "--superlink", f"127.0.0.1:{superlink_port}", "--port", str(port),
                         "--auth-key", str(tmp_path / f"party-{k}.key"), "--roster", str(roster), "--ledger", str(tmp_path / f"ledger-{k}.json"),
                         "--root-certificates", str(tls["ca.pem"]), *run["floor"]],
                env=party_env, stdout=party_log, stderr=subprocess.STDOUT, start_new_session=True))
        output, _ = coordinator.communicate(timeout=600)
    finally:
        for process in reversed(processes):
            stop_process_group(process, grace_seconds=15)
        for party_log in logs:
            party_log.close()
    parties = "".join(f"\n--- party-{k} ---\n" + (tmp_path / f"party-{k}.log").read_text()[-2000:]
                      for k in range(len(logs)))
    assert coordinator.returncode == 0, output + parties
    records = [json.loads(line) for path in sorted(log.glob("*.jsonl"))
               for line in path.read_text(encoding="utf-8").splitlines()]
    return json.loads(out.read_text()), records


@pytest.mark.slow  # two real-process trainings on loopback: about 1.5-3 min on a loaded 2-core machine
@pytest.mark.parametrize("protocol", ["newton", "psgd"])
def test_what_each_real_party_sent_follows_the_calibration(tmp_path, protocol):
    """Each party's logged replies, minus the statistic at the ``w_t`` it received, follow its noise law."""
    X, y = make_data(n=600, seed=23)
    shards = [write_shard(tmp_path / f"shard{k}.csv", X[200 * k:200 * (k + 1)], y[200 * k:200 * (k + 1)])
              for k in range(3)]
    document, records = run_real_processes(tmp_path, protocol, shards)
    run = REAL_RUNS[protocol]
    sizes = document["privacy"]["n_samples_by_party"]
    assert sorted(sizes) == [200, 200, 200] and sorted(document["parties"]) == ["party-0", "party-1", "party-2"]
    assert sorted(record["party"] for record in records) == sorted(f"party-{k}" for k in range(3)
                                                                  for _ in range(run["rounds"]))
    shard_rows = {f"party-{k}": (rows_on_norm(X[200 * k:200 * (k + 1)], 1.0), y[200 * k:200 * (k + 1)])
                  for k in range(3)}
    if protocol == "newton":
        calibration = calibrate_newton(epsilon=run["epsilon"], delta=1e-5, alpha=0.05, n_rounds=run["rounds"],
                                       n_samples_by_party=sizes, n_features=4, loss=LOGISTIC, data_norm=1.0)
        assert (document["privacy"]["epsilon"], document["privacy"]["delta"]) == pytest.approx(
            view_guarantee(calibration))
        residual = [newton_residual_steps([record["reply"][0]], newton_statistic(
            *shard_rows[record["party"]], np.array(record["parameters"][0]), calibration), calibration.grid_step)[0]
            for record in records]
        report = discrete_gaussian_report(np.array(residual), calibration.party_sigma_squared)
        assert report.passes(), report
        assert gaussian_scale_p(np.array(residual), math.sqrt(3 * calibration.party_sigma_squared)) < FALSE_ALARM
        return
    calibration = calibrate_psgd(epsilon=run["epsilon"], delta=1e-5, alpha=0.05, n_samples=600, n_parties=3,
                                 n_features=4, n_rounds=run["rounds"], loss=LOGISTIC, data_norm=1.0)
    grid = round_noise_calibration(calibration.round_epsilon, 1.0, 1.0, 4)
    rho, etas = [], {}
    for record in records:
        config = record["config"]
        k = int(record["party"].split("-")[1])
        state = tmp_path / f"ledger-{k}.json.runs" / f"{config['run-id']}.json"
        eta = etas.setdefault(k, np.array(json.loads(state.read_text())["eta"]))  # the party's own state
        steps = (np.array(record["reply"][0]) / float(config["scale"]) - eta) / grid.step
        np.testing.assert_allclose(steps, np.round(steps), rtol=0, atol=1e-3)
        gradient = logistic_sums(*shard_rows[record["party"]], np.array(record["parameters"][0]))[0]
        rho.append(np.round(steps) - np.round(gradient / grid.step))
    report = discrete_laplace_report(np.array(rho), grid.scale_in_steps)
    assert report.passes(), report
    # only 3 x 4 draws of eta^k: a loose check of its law (tests above check it over 100 set-ups)
    report = gaussian_report(np.array(list(etas.values())), calibration.party_noise_sigma)
    assert report.passes(), report
