"""
Several data holders on real processes: a deployment on loopback
================================================================

:doc:`plot_multiparty` ran the multiparty protocol inside one Python process.
A real deployment runs one process per machine: the coordinator runs
``dperm coordinate`` (a Flower SuperLink with its Fleet API over TLS, and the
training's ServerApp), and every party runs ``dperm party serve`` next to its
own data (a Flower SuperNode whose ClientApp checks the calibration, its own
privacy floor, its ledger and every SecAgg+ message before it answers). This
example starts exactly those commands on 127.0.0.1, with throw-away
certificates, party keys and a party roster, so each step is the one you would
type on separate machines (:doc:`/multiparty`, "Multiparty deployment on
Flower").

Three parties hold 2,000 rows of Adult each. The coordinator never sees a
row or a single party's reply: only the securely aggregated, noised sums of a
few Newton rounds. Each party's ledger books what it answered.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from dperm.datasets import load_adult
from dperm.multiparty.flower.deploy import (
    free_loopback_ports,
    stop_process_group,
    write_loopback_certificates,
    write_party_key,
    write_party_roster,
)

adult = load_adult()
rng = np.random.default_rng(7)
rows = rng.choice(len(adult.y_train), size=6_000, replace=False)
X, y = adult.X_train[rows], adult.y_train[rows]
n_parties, epsilon, delta, rounds = 3, 1.0, 1e-5, 3

# %%
# Each party's shard is a CSV file with a header on its own machine (here: a
# temporary folder). The last column is the label.
work = Path(tempfile.mkdtemp(prefix="dperm-loopback-"))
header = ",".join([*adult.feature_names, "label"])
shards = []
for k in range(n_parties):
    path = work / f"party-{k}.csv"
    np.savetxt(path, np.column_stack([X[k::n_parties], y[k::n_parties]]), delimiter=",",
               header=header, comments="", fmt="%.17g")
    shards.append(path)

# %%
# The set-up a deployment does once: a certificate authority and the
# coordinator's TLS certificate, one key pair per party (the coordinator lists
# the public keys; nobody else can join), and the roster of party keys every
# party checks its peers' SecAgg+ keys against.
tls = write_loopback_certificates(work)
private_keys = [work / f"party-{k}.key" for k in range(n_parties)]
keys = [write_party_key(path) for path in private_keys]  # each returns the public file, PATH.pub
roster = write_party_roster(work / "roster.pub", keys)
fleet_port, control_port, *party_ports = free_loopback_ports(2 + n_parties)
dperm = [sys.executable, "-m", "dperm.cli"]

# %%
# The coordinator, then the parties. Each party states the weakest guarantee
# it accepts (``--max-epsilon``, ``--max-delta``, ``--max-rounds``) and refuses
# anything weaker; its ledger (next to its key) books what it answered.
processes = []
try:
    coordinator = subprocess.Popen(
        dperm + ["coordinate", "--protocol", "newton", "--shards", str(n_parties),
                 "--epsilon", str(epsilon), "--delta", str(delta), "--alpha", "1e-3",
                 "--rounds", str(rounds), "--port", str(fleet_port), "--control-port", str(control_port),
                 "--party-keys", *map(str, keys), "--ssl-certfile", str(tls["server.pem"]),
                 "--ssl-keyfile", str(tls["server.key"]), "--ssl-ca-certfile", str(tls["ca.pem"]),
                 "--wait", "300", "--stage-timeout", "300", "--workdir", str(work / "coordinator"),
                 "--out", str(work / "model.json")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    processes.append(coordinator)
    for k, port in enumerate(party_ports):
        processes.append(subprocess.Popen(
            dperm + ["party", "serve", "--data", str(shards[k]), "--name", f"party-{k}",
                     "--superlink", f"127.0.0.1:{fleet_port}", "--port", str(port),
                     "--auth-key", str(private_keys[k]),
                     "--roster", str(roster), "--root-certificates", str(tls["ca.pem"]),
                     "--max-epsilon", str(epsilon), "--max-delta", str(delta), "--max-rounds", str(rounds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    output, _ = coordinator.communicate(timeout=600)
finally:
    for process in reversed(processes):
        stop_process_group(process, grace_seconds=15)
if coordinator.returncode != 0:
    raise RuntimeError(output[-2000:])

# %%
# What the coordinator printed: the protocol's rounds and the released
# model's guarantee.
print("\n".join(line for line in output.splitlines() if line.strip())[-1500:])

# %%
# The model file is what the coordinator publishes: public coefficients and
# the privacy record, nothing computed from a row without noise.
document = json.loads((work / "model.json").read_text())
coef = np.ravel(document["coef"])
print(json.dumps({key: document["privacy"][key] for key in ("epsilon", "delta")}, indent=1))

# %%
# Test error of the released model on Adult's test file, against the
# majority class.
margin = adult.X_test @ coef
error = float(np.mean((margin > 0).astype(int) != adult.y_test))
majority = min(adult.y_test.mean(), 1 - adult.y_test.mean())
fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(["released model\n(3 parties, loopback)", "majority class"], [error, majority],
       color=["tab:blue", "tab:grey"])
ax.set_ylabel("test error")
ax.set_title(f"Adult, Newton on secure sums, (eps {epsilon:g}, delta {delta:g})")
fig.tight_layout()
print(f"test error {error:.3f} (majority class {majority:.3f})")
