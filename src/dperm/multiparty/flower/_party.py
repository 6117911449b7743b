"""A party's node config on its own machine, read the same way by both protocols' handlers.

The SuperNode's ``node_config`` (``dperm party serve``) holds the path of
the party's shard (``data-path``), its label column (``target``), its name,
its floor (``max-epsilon``, ``max-delta``, ``max-rounds``), its ledger and
its total budget. PSGD's handlers (:mod:`dperm.multiparty.flower.app`) and
Newton's (:mod:`dperm.multiparty.flower.newton`) read them here. Nothing
here imports Flower or sends anything.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from dperm.multiparty.ledger import PartyLedger, check_run_id, write_private_atomically
from dperm.multiparty.model_file import SHARD_CELL_REMEDY, load_numeric_columns
from dperm.privacy.psgd import PartyFloor
from dperm.tabular import finite_numbers, read_csv_columns

#: The party's floor in its node config (``dperm party serve --max-epsilon --max-delta --max-rounds``).
FLOOR_KEYS = {"max_epsilon": "max-epsilon", "max_delta": "max-delta", "max_rounds": "max-rounds"}
#: The party's fewest tolerated colluders (``dperm party serve --min-collusion-threshold``), optional.
COLLUSION_FLOOR_KEY = "min-collusion-threshold"
#: The party's ledger and total budget in its node config (``dperm party serve --ledger
#: --budget-epsilon --budget-delta``); the budget defaults to the floor (one run's worth).
LEDGER_KEY = "ledger-path"
BUDGET_KEYS = {"budget_epsilon": ("budget-epsilon", "max-epsilon"), "budget_delta": ("budget-delta", "max-delta")}


def load_shard(path, target: str = "label"):
    """Read a party's shard: a CSV file with a header, numeric features and a label column.

    Labels must be -1/+1 (or 0/1, with 0 read as -1). Every other column is
    a feature, in file order; the parties must agree on them (the
    coordinator checks the names).

    Returns
    -------
    X : ndarray of shape (N_k, d)
    y : ndarray of shape (N_k,), values in {-1, +1}
    features : list of str
    """
    columns = read_csv_columns(path)
    if target not in columns:
        raise ValueError(f"label column {target!r} is not in {path}; columns are {list(columns)}.")
    features = [name for name in columns if name != target]
    if not features:
        raise ValueError(f"{path} has no feature columns besides the label column {target!r}.")
    X = load_numeric_columns(columns, features, path)  # the same reader predict uses (model_file)
    labels = finite_numbers(columns[target], target, source=path, remedy=SHARD_CELL_REMEDY)
    if not np.all(np.isin(labels, (-1.0, 0.0, 1.0))) or (np.any(labels == 0) and np.any(labels == -1)):
        raise ValueError(
            f"labels in column {target!r} of {path} must be -1/+1 or 0/1; got {np.unique(labels)[:5].tolist()}."
        )
    return X, np.where(labels > 0, 1.0, -1.0), features


_SHARD_CACHE: dict = {}


def cached_shard(path, target: str):
    """``load_shard(path, target)[:2]``, read again only when the file changes (size or mtime).

    dperm's party runner (:mod:`dperm.multiparty.flower.party_runtime`)
    is one long-lived process, so the shard is parsed once per run rather
    than once per gradient request. Copies are returned: nothing a round
    does can alter the cached rows.
    """
    X, y, _ = _cached(path, target)
    return X.copy(), y.copy()


def _cached(path, target: str):
    """``load_shard(path, target)``, kept for the process and read again when the file changes."""
    stat = Path(path).stat()
    key = (str(Path(path).resolve()), target)
    stamp = (stat.st_mtime_ns, stat.st_size)
    cached = _SHARD_CACHE.get(key)
    if cached is None or cached[0] != stamp:
        _SHARD_CACHE.clear()  # one shard per party process
        cached = _SHARD_CACHE[key] = (stamp, load_shard(path, target))
    return cached[1]


def shard_description(context) -> tuple[int, int, list]:
    """``(N_k, d, feature names)`` of the party's shard: the public answer to ``describe`` (parsed once per process)."""
    X, _, features = _cached(data_path(context), str(context.node_config.get("target", "label")))
    return int(X.shape[0]), int(X.shape[1]), list(features)


def data_path(context) -> str:
    """The path of the party's shard from its node config; refuse to take part without one."""
    path = context.node_config.get("data-path")
    if not path:
        raise ValueError("this SuperNode has no 'data-path' in its node config (dperm party serve --data PATH).")
    return path


def party_rows(context):
    """``(X, y)`` of the party's shard, parsed once per process (:func:`cached_shard`)."""
    return cached_shard(data_path(context), str(context.node_config.get("target", "label")))


def party_name(context) -> str:
    """The party's name in messages and logs: its ``party-name``, else its node id."""
    return str(context.node_config.get("party-name", f"node {context.node_id}"))


def party_floor(context) -> PartyFloor:
    """The party's own floor from its node config; refuse to take part without one."""
    missing = [key for key in FLOOR_KEYS.values() if key not in context.node_config]
    if missing:
        raise ValueError(
            f"this SuperNode has no {missing} in its node config: a party takes part only with its own "
            "limits (dperm party serve --max-epsilon EPS --max-delta DELTA --max-rounds T)."
        )
    limits = {name: context.node_config[key] for name, key in FLOOR_KEYS.items()}
    if COLLUSION_FLOOR_KEY in context.node_config:  # optional: PartyFloor's default (1) otherwise
        limits["min_collusion_threshold"] = context.node_config[COLLUSION_FLOOR_KEY]
    return PartyFloor(**limits)


def party_ledger(context) -> tuple[PartyLedger, dict]:
    """The party's ledger and total budget from its node config; refuse to take part without a ledger."""
    path = context.node_config.get(LEDGER_KEY)
    if not path:
        raise ValueError(f"this SuperNode has no {LEDGER_KEY!r} in its node config: a party takes part only with "
                         "its own spending ledger (dperm party serve --ledger PATH).")
    floor = party_floor(context)
    budget = {name: context.node_config.get(key, getattr(floor, default.replace("-", "_")))
              for name, (key, default) in BUDGET_KEYS.items()}
    return PartyLedger(path), budget


def run_state_path(context, run_id: str) -> Path:
    """Where the party keeps its state for run ``run_id``: ``LEDGER.runs/RUN_ID.json`` beside its ledger."""
    ledger, _ = party_ledger(context)
    return ledger.path.with_name(ledger.path.name + ".runs") / f"{check_run_id(run_id)}.json"


def coef_digest(coef) -> str:
    """SHA-256 of ``w_t`` as little-endian float64: how a party recognises a round asked again."""
    return hashlib.sha256(np.ascontiguousarray(coef, dtype="<f8").tobytes()).hexdigest()


def save_run_document(path: Path, document: dict, last_answer=None) -> None:
    """Write a protocol's run state (mode 0600, replaced atomically); ``last_answer`` is ``(round, digest, reply)``."""
    if last_answer is not None:
        round_index, digest, reply = last_answer
        document["last-answer"] = {"round": int(round_index), "coef-sha256": digest,
                                   "reply": [float(value) for value in np.asarray(reply, dtype=float)]}
    path.parent.mkdir(mode=0o700, exist_ok=True)
    write_private_atomically(path, json.dumps(document) + "\n")


def load_run_document(path: Path, state_format: str, run_id: str, parse, refusal: str):
    """``parse(document, last_answer)`` of the run state at ``path``, or None if there is none.

    ``last_answer`` is ``(round, digest of w_t, reply)`` or None. A state of another format or run, or one
    that does not parse, is refused with ``refusal`` (formatted with ``run_id``, ``path`` and ``error``).
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("format") != state_format or document.get("run-id") != run_id:
            raise ValueError("not this run's state")
        last = document.get("last-answer")
        if last is not None:
            last = (int(last["round"]), str(last["coef-sha256"]), np.asarray(last["reply"], dtype=float))
        return parse(document, last)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise RuntimeError(refusal.format(run_id=run_id, path=path, error=error)) from None


def next_round(context, run_id: str, name, state_rounds: int, last, round_index, digest: str):
    """The party's answered rounds, checked against the round asked: ``(ledger, budget, entry, answered, repeat)``.

    The ledger's count is the party's word (a run charged whole by an older dperm: its state's
    ``state_rounds``); ``round_index`` None asks the next round. ``repeat`` is True when the last round
    answered is asked again at the same ``w_t`` (``digest``); any round but that one or the next is refused.
    """
    ledger, budget = party_ledger(context)
    entry = ledger.charges().get(run_id)
    if entry is None:
        raise RuntimeError(f"party {name!r} has no entry for run {run_id} in its ledger {ledger.path}; it answers "
                           "no round its ledger does not account for.")
    answered = entry.rounds if entry.per_round else state_rounds
    round_index = answered if round_index is None else int(round_index)
    if last is not None and round_index == last[0] == answered - 1 and digest == last[1]:
        return ledger, budget, entry, answered, True
    if round_index != answered:
        raise RuntimeError(
            f"party {name!r} has answered {answered} round(s) of run {run_id} and is asked for round "
            f"{round_index + 1}: a resumed run must continue at round {answered + 1} (dperm coordinate --resume; "
            "asking an answered round again at another w_t would be a new release).")
    return ledger, budget, entry, answered, False
