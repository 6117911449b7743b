"""``dperm party`` and ``dperm coordinate``: multiparty training across machines on Flower.

Parsing and printing only; the work is in :mod:`dperm.multiparty.flower.deploy`
(processes, keys, settings) and the protocols in :mod:`dperm.multiparty.flower.app`.
Flower is needed only when a command runs (``pip install 'dperm[multiparty]'``).

- ``dperm party keygen --out party.key`` makes the party's SuperNode key pair
  (ECDSA P-384, OpenSSH format, as Flower's node authentication needs);
  ``party.key.pub`` goes to the coordinator.
- ``dperm party serve --data shard.csv --superlink HOST:PORT --auth-key
  party.key --root-certificates ca.pem --max-epsilon EPS --max-delta DELTA
  --max-rounds T`` runs a Flower SuperNode for one party (004 Proc. 3) that
  runs only dperm's ClientApp; the data never leave the machine, only
  SecAgg+-masked replies, and the party refuses a set-up weaker than its
  floor. Each run is charged, by its run id, to the party's own ledger
  (``--ledger``, ``--budget-epsilon``, ``--budget-delta``) before any noise
  is drawn, round by round as it answers (PSGD and Newton). Once connected
  the party serves across coordinator restarts, and
  its SuperNode ends with it (even after ``kill -9``).
- ``dperm coordinate --shards K --party-keys a.pub b.pub ... --epsilon EPS
  --out model.json`` starts a locked-down Flower SuperLink (only the listed
  keys may connect), submits the ServerApp (Newton by default, or 004's PSGD)
  as a Flower run from this machine, waits for it, writes the model file and
  stops the SuperLink. A run checkpoints after each round in
  ``--workdir``; ``--resume`` continues a crashed run from its last
  completed round under the same run id.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
from pathlib import Path

from dperm.catalog import loss_names
from dperm.multiparty.defaults import DEFAULT_MODULUS_RANGE, DEFAULT_QUANTIZATION_RANGE
from dperm.multiparty.flower import deploy
from dperm.multiparty.flower.deploy import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_CONTROL_PORT,
    DEFAULT_NODE_PORT,
    DEFAULT_SUPERLINK_PORT,
)

__all__ = ["add_commands"]


# -- dperm party -----------------------------------------------------------------------


def _party_keygen(args) -> int:
    public_path = deploy.write_party_key(args.out)
    print(f"private key: {args.out} (keep it on this machine: dperm party serve --auth-key {args.out})\n"
          f"public key: {public_path} (give it to the coordinator: dperm coordinate --party-keys ...)")
    return 0


def _party_serve(args) -> int:
    started = time.monotonic()  # --connect-timeout counts from here, imports and checks included
    # a private folder (0700) for the party's settings file, removed when the party stops
    with tempfile.TemporaryDirectory(prefix="dperm-party-") as config_dir:
        try:
            plan = deploy.plan_party(args, config_dir)
        except ImportError as error:
            print(f"dperm: error: {error}", file=sys.stderr)
            return 2
        from dperm.multiparty.flower.supernode import freeze_imports

        freeze_imports()  # a long-lived supervisor: its imports need no garbage collection
        return _serve_plan(args, plan, started)


def _serve_plan(args, plan, started) -> int:
    floor, ledger, budget = plan.floor, plan.ledger, plan.budget
    spent = ledger.spent()
    print(f"party {plan.name!r}: {plan.n_samples} rows, {len(plan.features)} features ({', '.join(plan.features)}); "
          f"accepts at most ({floor.max_epsilon:g}, {floor.max_delta:g})-DP over at most {floor.max_rounds} "
          f"rounds, tolerating at least {floor.min_collusion_threshold} colluding parties; has spent "
          f"({spent[0]:.6g}, {spent[1]:.3g}) of its budget ({budget[0]:g}, {budget[1]:g}) "
          f"over {len(ledger.charges())} run(s) (ledger {ledger.path}); runs only dperm's app; serving as a "
          f"Flower SuperNode for SuperLink {args.superlink} (gives up if it is not reached within "
          f"{args.connect_timeout:g} s; once connected, serves across coordinator restarts until stopped)",
          flush=True)
    code = deploy.supervise_party(plan.supernode_command, plan.runtime_command, deploy.flower_environment(),
                                  connect_timeout=args.connect_timeout, started=started)
    if code == deploy.NEVER_CONNECTED:
        print(f"dperm: error: party {plan.name!r} stopped: the SuperLink {args.superlink} was not reached within "
              f"{args.connect_timeout:g} s (--connect-timeout), refused this party's key (is "
              f"{args.auth_key}.pub listed in the coordinator's --party-keys?), or closed the connection; "
              f"Flower's log above says which.", file=sys.stderr)
        return 1
    return code


# -- dperm coordinate ------------------------------------------------------------------


def _resume_run_id(args) -> None:
    """``--resume``: the run id from the checkpoint in ``--workdir`` (``--run-id``, if given, must be it)."""
    from dperm.multiparty.flower.checkpoint import CHECKPOINT_NAME, CoordinatorCheckpoint

    if not args.workdir:
        raise ValueError("--resume needs --workdir: the crashed run's work folder, which holds its checkpoint.")
    checkpoint = CoordinatorCheckpoint.load(Path(args.workdir) / CHECKPOINT_NAME)
    if args.run_id is not None and args.run_id != checkpoint.run_id:
        raise ValueError(f"--run-id {args.run_id} is not the run checkpointed in --workdir {args.workdir} "
                         f"({checkpoint.run_id}); leave --run-id out to resume that run.")
    args.run_id = checkpoint.run_id
    print(f"resuming run {checkpoint.run_id} after its {len(checkpoint.rounds)} completed round(s) "
          f"({checkpoint.path})", flush=True)


def _coordinate(args) -> int:
    if args.resume:
        _resume_run_id(args)
    try:
        settings = deploy.coordinator_settings(args)
    except ImportError as error:
        print(f"dperm: error: {error}", file=sys.stderr)
        return 2
    settings = dataclasses.replace(settings, resume=bool(args.resume))
    keys = deploy.check_coordinate_files(args)
    created = not args.workdir
    if created:  # a folder of its own (0700), named now so that a crash can be resumed from it
        args.workdir = str(deploy.coordinator_workdir(None))
    code = 1
    from dperm.multiparty.flower.supernode import freeze_imports

    freeze_imports()  # this process imported dperm's apps: its exit need not collect them
    try:
        code = _run_coordination(args, settings, keys, created)
        return code
    finally:
        if created:
            _remove_own_workdir(Path(args.workdir), finished=code == 0)


def _remove_own_workdir(workdir: Path, *, finished: bool) -> None:
    """Remove the work folder ``dperm coordinate`` made itself, unless an unfinished run's checkpoint is in it."""
    from dperm.multiparty.flower.checkpoint import CHECKPOINT_NAME

    if not finished and (workdir / CHECKPOINT_NAME).exists():
        print(f"dperm: the work folder {workdir} is kept: it holds the unfinished run's checkpoint; the same "
              f"command with --resume --workdir {workdir} continues the run (delete the folder to abandon it).",
              file=sys.stderr, flush=True)
        return
    shutil.rmtree(workdir, ignore_errors=True)


def _run_coordination(args, settings, keys, created: bool) -> int:
    from dperm.multiparty.flower.checkpoint import CHECKPOINT_NAME

    def listening():
        print(f"SuperLink: Fleet API on {args.host}:{args.port} for the {len(keys)} listed party keys, Control "
              f"API on 127.0.0.1:{args.control_port} only; waiting for {settings.n_parties} parties "
              f"(dperm party serve --superlink HOST:{args.port} ...), then {settings.n_rounds} SecAgg+ rounds "
              f"of run {settings.run_id}", flush=True)
        print(f"checkpoint after each round in {args.workdir}; after a crash, the same command with --resume "
              f"--workdir {args.workdir} continues run {settings.run_id} from its last completed round "
              "(each party charges its ledger per round answered and answers no round twice)", flush=True)

    def logs():  # a folder dperm made is removed at exit unless it holds a checkpoint
        kept = not created or (Path(args.workdir) / CHECKPOINT_NAME).exists()
        return f"logs in {args.workdir}" if kept else "the logs' tail follows"

    try:
        outcome = deploy.run_coordinator(args, settings, keys, on_listening=listening)
    except deploy.CoordinatorStopped as stop:
        print(f"dperm: stopped by {stop}; the SuperLink and the run are stopped too.", file=sys.stderr)
        return 130
    status = outcome.status
    if status is None:
        print(f"dperm: error: the Flower run ended without a result; {logs()}.\n"
              f"{outcome.run_log_tail}", file=sys.stderr)
        return 1
    if not status["ok"]:
        kept = logs().startswith("logs in")
        print(f"dperm: error: {status['error']} ({logs()})" + ("" if kept else f"\n{outcome.run_log_tail}"),
              file=sys.stderr)
        return 1
    print(status["summary"])
    if status.get("round_seconds"):
        rounds = sorted(status["round_seconds"])
        print(f"SecAgg+ rounds: median {rounds[len(rounds) // 2]:.1f} s over {len(rounds)} rounds")
    print(f"finished in {outcome.seconds:.1f} s; model written to {outcome.out}")
    return 0


# -- the parser ------------------------------------------------------------------------


def add_commands(subparsers) -> None:
    """Add ``party`` (``party serve``) and ``coordinate`` to ``dperm``'s subcommands."""
    party = subparsers.add_parser(
        "party", help="take part in multiparty training (Flower SuperNode)",
        description="One party of a multiparty training: make its key pair (keygen), then serve its "
                    "shard to a coordinator (serve). The rows never leave this machine; only "
                    "SecAgg+-masked sums do.",
        epilog="example:\n  dperm party keygen --out party.key\n"
               "  dperm party serve --data shard.csv --superlink coord.example:9092 --auth-key party.key "
               "--roster parties.pub --root-certificates ca.pem --max-epsilon 1 --max-delta 1e-5 --max-rounds 20")
    party_sub = party.add_subparsers(dest="party_command", required=True, metavar="{serve,keygen}")
    serve = party_sub.add_parser(
        "serve", help="serve one party's shard to a coordinator (SecAgg+)",
        description="Run a Flower SuperNode that answers a coordinator's secure-sum rounds over this "
                    "party's shard (004 Proc. 3). The party refuses a set-up weaker than its floor "
                    "(--max-epsilon, --max-delta, --max-rounds) and charges every run to its own ledger "
                    "before any noise is drawn (a Newton run per round answered). Needs dperm[multiparty].",
        epilog="example:\n  dperm party serve --data shard.csv --superlink coord.example:9092 "
               "--auth-key party.key --roster parties.pub --root-certificates ca.pem --max-epsilon 1 --max-delta 1e-5 "
               "--max-rounds 20")
    serve.add_argument("--data", required=True, help="CSV shard: header, numeric features, label column")
    serve.add_argument("--superlink", required=True, help="the coordinator's SuperLink as HOST:PORT")
    serve.add_argument("--target", default="label", help="label column, -1/+1 or 0/1 (default label)")
    serve.add_argument("--name", default=None, help="party name used in messages (default: file stem)")
    serve.add_argument("--max-epsilon", type=float, required=True,
                       help="largest epsilon this party accepts: for the coordinator's target and for the "
                            "guarantee of the coordinator's whole view over the rounds, which the party "
                            "recomputes itself (004's scheme: about rounds x round epsilon)")
    serve.add_argument("--max-delta", type=float, required=True,
                       help="largest delta this party accepts, likewise (in [0, 1))")
    serve.add_argument("--max-rounds", type=int, required=True,
                       help="most gradient rounds this party answers in one run")
    serve.add_argument("--min-collusion-threshold", type=int, default=1,
                       help="fewest colluding parties the coordinator's set-up must tolerate: this party "
                            "refuses a smaller announced collusion threshold t (default 1)")
    serve.add_argument("--auth-key", required=True,
                       help="this party's private key (dperm party keygen); the coordinator lists its .pub")
    serve.add_argument("--roster", required=True,
                       help="the parties' public keys, one OpenSSH line each (every party's .pub, this one's "
                            "among them: the list the coordinator authorises, agreed among the parties); the "
                            "party refuses a round whose SecAgg+ keys are not signed by exactly these parties")
    serve.add_argument("--root-certificates", default=None, help="CA certificate of the coordinator's SuperLink")
    serve.add_argument("--ledger", default=None,
                       help="this party's spending ledger, a JSON file on this machine (default AUTH_KEY.ledger.json); "
                            "every run is charged there, by its run id, before any noise is drawn")
    serve.add_argument("--budget-epsilon", type=float, default=None,
                       help="this party's total epsilon over all runs (basic composition: the sum; default "
                            "--max-epsilon, i.e. one run)")
    serve.add_argument("--budget-delta", type=float, default=None,
                       help="this party's total delta over all runs (the sum; default --max-delta)")
    serve.add_argument("--connect-timeout", type=float, default=DEFAULT_CONNECT_TIMEOUT,
                       help="seconds to keep retrying an unreachable SuperLink at start before giving up "
                            f"(default {DEFAULT_CONNECT_TIMEOUT:g}); once connected, the party waits for a "
                            "stopped or restarted coordinator until it is itself stopped")
    serve.add_argument("--port", type=int, default=DEFAULT_NODE_PORT,
                       help=f"port of the node's Runtime API on 127.0.0.1 (default {DEFAULT_NODE_PORT}; one per "
                            "party on a machine)")
    serve.add_argument("--insecure", action="store_true", help=argparse.SUPPRESS)  # refused: TLS only
    serve.set_defaults(func=_party_serve)
    keygen = party_sub.add_parser(
        "keygen", help="make this party's SuperNode key pair (ECDSA P-384, OpenSSH)",
        description="Write this party's private key to OUT and its public key to OUT.pub (the format "
                    "Flower's node authentication needs). Keep OUT on this machine; give OUT.pub to "
                    "the coordinator.",
        epilog="example:\n  dperm party keygen --out party.key")
    keygen.add_argument("--out", required=True, help="private key file to write; the public key goes to OUT.pub")
    keygen.set_defaults(func=_party_keygen)

    coordinate = subparsers.add_parser(
        "coordinate", help="train one private classifier over K parties' SecAgg+ sums",
        description="Start a locked-down Flower SuperLink (only the listed party keys may connect), "
                    "run the multiparty training (damped Newton by default, or 004's PSGD) over the "
                    "parties' SecAgg+ sums, write the model file and stop. Needs dperm[multiparty].",
        epilog="example:\n  dperm coordinate --shards 2 --party-keys a.key.pub b.key.pub --epsilon 1 "
               "--ssl-certfile server.pem --ssl-keyfile server.key --ssl-ca-certfile ca.pem "
               "--out model.json")
    coordinate.add_argument("--shards", type=int, required=True, help="K, the number of parties")
    coordinate.add_argument("--party-keys", nargs="+", default=None, metavar="PUB",
                            help="the K parties' public keys (dperm party keygen's .pub files); only they "
                                 "may connect")
    coordinate.add_argument("--epsilon", type=float, required=True,
                            help="the model's privacy budget epsilon (> 0)")
    coordinate.add_argument("--delta", type=float, default=1e-5,
                            help="the model's delta, in [0, 1) (default 1e-5)")
    coordinate.add_argument("--alpha", type=float, default=0.01, help="L2 strength lambda (default 0.01)")
    coordinate.add_argument("--protocol", choices=("newton", "psgd"), default="newton",
                            help="newton: few-round damped Newton on noisy gradient and Hessian sums (default); "
                                 "psgd: 004's multiparty SGD (hundreds of rounds; for the reproduction)")
    coordinate.add_argument("--rounds", type=int, default=10,
                            help="T, secure-sum rounds (default 10; each is one SecAgg+ round)")
    coordinate.add_argument("--gradient-share", type=float, default=0.75,
                            help="newton: share of each round's privacy loss spent on the gradient (default 0.75)")
    coordinate.add_argument("--collusion-threshold", type=int, default=1,
                            help="t: size every party's noise share so that the guarantee holds when the "
                                 "coordinator also knows the noise of up to t parties (0 to K-1; default 1)")
    coordinate.add_argument("--data-norm", type=float, default=1.0, help="public row norm bound R (default 1)")
    coordinate.add_argument("--loss", choices=loss_names(multiparty=True), default="logistic",
                            help="the loss of the classifier (default logistic)")
    coordinate.add_argument("--huber-width", dest="h", type=float, default=0.5,
                            help="huber loss: the width h of its quadratic part (default 0.5)")
    coordinate.add_argument("--round-epsilon", type=float, default=None,
                            help="per-round epsilon of the coordinator's view (default: --epsilon)")
    coordinate.add_argument("--composition-slack", type=float, default=None,
                            help="delta' of the advanced composition (default: --delta)")
    coordinate.add_argument("--coordinator-dp", action="store_true",
                            help="per-round Gaussian noise calibrated with dp-accounting so that the "
                                 "coordinator's whole view is (epsilon, delta)-DP (beyond 004; see README)")
    coordinate.add_argument("--coordinator-accountant", choices=("pld", "rdp"), default="pld",
                            help="dp-accounting's accountant for --coordinator-dp (default pld)")
    coordinate.add_argument("--quantization-range", type=int, default=DEFAULT_QUANTIZATION_RANGE,
                            help="SecAgg+ quantization range: integer levels a party's value is "
                                 f"rounded to (default {DEFAULT_QUANTIZATION_RANGE})")
    coordinate.add_argument("--modulus-range", type=int, default=DEFAULT_MODULUS_RANGE,
                            help="SecAgg+ modulus of the masked sums; must exceed K x the "
                                 f"quantization range (default {DEFAULT_MODULUS_RANGE})")
    coordinate.add_argument("--host", default="127.0.0.1",
                            help="address of the Fleet API, the parties' only entry (0.0.0.0: all interfaces)")
    coordinate.add_argument("--port", type=int, default=DEFAULT_SUPERLINK_PORT,
                            help=f"Fleet API port (default {DEFAULT_SUPERLINK_PORT})")
    coordinate.add_argument("--control-port", type=int, default=DEFAULT_CONTROL_PORT,
                            help="port of the Control API, always on 127.0.0.1 "
                                 f"(default {DEFAULT_CONTROL_PORT})")
    coordinate.add_argument("--insecure", action="store_true", help=argparse.SUPPRESS)  # refused: TLS only
    coordinate.add_argument("--ssl-certfile", default=None, help="TLS: the SuperLink's certificate (PEM)")
    coordinate.add_argument("--ssl-keyfile", default=None, help="TLS: its private key (PEM)")
    coordinate.add_argument("--ssl-ca-certfile", default=None,
                            help="TLS: the CA certificate that signed it (PEM; the parties' --root-certificates)")
    coordinate.add_argument("--wait", type=float, default=300.0, help="seconds to wait for the parties (300)")
    coordinate.add_argument("--stage-timeout", type=float, default=300.0,
                            help="seconds to wait for replies at each SecAgg+ stage (300)")
    coordinate.add_argument("--run-id", default=None,
                            help="32 hex digits: retry an earlier training under its id (the parties charge nothing "
                                 "twice and answer only its rounds left); default: a fresh id")
    coordinate.add_argument("--resume", action="store_true",
                            help="continue the run checkpointed in --workdir (a crashed coordinator's) from "
                                 "its last completed round, under its run id; the parties answer only the rounds "
                                 "left and charge each once")
    coordinate.add_argument("--workdir", default=None,
                            help="folder for the app bundle, logs and the run's checkpoint (default: a new temp "
                                 "folder, printed at start)")
    coordinate.add_argument("--out", required=True, help="model file to write (JSON)")
    coordinate.set_defaults(func=_coordinate)
