"""Where the data passes run: a Dask scheduler, and one tree-reduced pass over the chunks."""

from __future__ import annotations

import contextlib
import time

from dperm.exceptions import DistributedFitError

#: Dask's single-machine schedulers, accepted by name (useful in tests and notebooks).
_LOCAL_SCHEDULERS = ("threads", "synchronous", "sync", "processes")
#: Partial results combined per node of the reduction tree.
_TREE_FAN_IN = 8
#: Seconds between checks on the workers while a pass runs.
CHECK_INTERVAL = 5.0
#: Seconds every worker may stay paused (its memory above Dask's pause threshold) before
#: the pass is abandoned: a paused worker starts no task, so a cluster whose workers all
#: stay paused never finishes (issue 31, finding 8: a fit "hung" for 13 minutes).
PAUSED_TIMEOUT = 120.0
#: What to do when partitions do not fit, named in both errors.
_PARTITION_HINT = (
    "Partitions larger than a worker can hold cause this: read large Parquet files with "
    "dperm.scale.read_parquet (partitions sized to the workers' memory limit) and CSV with "
    "blocksize=dperm.scale.csv_blocksize(...); see docs/dask.md, 'Partitions that fit the "
    "workers'."
)


@contextlib.contextmanager
def dask_scheduler(scheduler=None):
    """Yield a :class:`PassRunner` bound to the scheduler a fit should use.

    Parameters
    ----------
    scheduler : None, str or distributed.Client
        ``None``: the current ``distributed.Client`` if one is active, otherwise a
        ``LocalCluster`` on 127.0.0.1 started for this fit and closed after it.
        ``"tcp://host:port"`` (any address): a client connected to that
        scheduler for this fit. ``"threads"``, ``"synchronous"`` or
        ``"processes"``: Dask's single-machine schedulers. A ``Client``: used as is.
    """
    if isinstance(scheduler, str) and scheduler in _LOCAL_SCHEDULERS:
        yield PassRunner(scheduler=scheduler)
        return
    import distributed

    if scheduler is None:
        try:
            client = distributed.default_client()
        except ValueError:
            client = None
        if client is not None:
            yield PassRunner(client=client)
            return
        with distributed.LocalCluster(host="127.0.0.1", dashboard_address=None) as cluster:
            with distributed.Client(cluster) as client:
                yield PassRunner(client=client)
        return
    if isinstance(scheduler, str):
        with distributed.Client(scheduler) as client:
            yield PassRunner(client=client)
        return
    if isinstance(scheduler, distributed.Client):
        yield PassRunner(client=scheduler)
        return
    raise ValueError(
        "scheduler must be None (current client, else a LocalCluster), a scheduler address "
        f"such as 'tcp://host:port', one of {_LOCAL_SCHEDULERS}, or a distributed.Client; "
        f"got {scheduler!r}."
    )


class PassRunner:
    """Run map-reduce passes over the chunks and count them.

    ``run(chunk_function, pairs, combine, *args)`` maps ``chunk_function``
    over every ``(X_block, y_block)`` pair, combines the partial results in a
    tree of fan-in :data:`_TREE_FAN_IN` on the workers, and returns the root:
    one read of every chunk, counted in ``passes``.
    """

    def __init__(self, client=None, scheduler=None):
        self.client = client
        self.scheduler = scheduler
        self.passes = 0

    def run(self, chunk_function, pairs, combine, *args):
        from dask import delayed

        parts = [delayed(chunk_function, pure=True)(x, y, *args) for x, y in pairs]
        if not parts:
            raise ValueError("X has no chunks.")
        while len(parts) > 1:
            parts = [
                delayed(combine, pure=True)(*parts[i:i + _TREE_FAN_IN])
                for i in range(0, len(parts), _TREE_FAN_IN)
            ]
        self.passes += 1
        return self._compute(parts[0])

    def _compute(self, graph):
        if self.client is None:
            return graph.compute(scheduler=self.scheduler)
        from distributed import KilledWorker

        future = self.client.compute(graph)
        paused_since = None
        try:
            while True:
                try:
                    return future.result(timeout=CHECK_INTERVAL)
                except TimeoutError:
                    paused_since = self._check_paused(paused_since)
        except KilledWorker as error:
            raise DistributedFitError(
                "a Dask worker died repeatedly while computing chunk sums, so the pass "
                "could not complete and no model was released. Check worker memory "
                f"limits and logs ({error}). {_PARTITION_HINT}"
            ) from error
        except DistributedFitError:
            future.cancel()
            raise

    def _check_paused(self, paused_since):
        """When every worker has been paused for :data:`PAUSED_TIMEOUT` s, give up the pass."""
        workers = self.client.scheduler_info(n_workers=-1)["workers"].values()
        if not workers or any(info.get("status") != "paused" for info in workers):
            return None
        now = time.monotonic()
        if paused_since is None:
            return now
        if now - paused_since >= PAUSED_TIMEOUT:
            raise DistributedFitError(
                f"every Dask worker has been paused for {now - paused_since:.0f} s (memory "
                "above Dask's pause threshold), so the pass cannot finish and no model was "
                f"released. {_PARTITION_HINT}"
            )
        return paused_since
