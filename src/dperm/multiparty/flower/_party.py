"""A party's node config on its own machine, read the same way by both protocols' handlers.

The SuperNode's ``node_config`` (``dperm party serve``) holds the path of
the party's shard (``data-path``), its label column (``target``), its name,
its floor (``max-epsilon``, ``max-delta``, ``max-rounds``), its ledger and
its total budget. PSGD's handlers (:mod:`dperm.multiparty.flower.app`) and
Newton's (:mod:`dperm.multiparty.flower.newton`) read them here. Nothing
here imports Flower or sends anything.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dperm.multiparty.ledger import PartyLedger, check_run_id
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
