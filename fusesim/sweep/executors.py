"""Where tasks run: this process, local worker processes, or a Dask distributed cluster.

Each executor yields the rows of every task as it finishes (completion order); the runner writes
them at once. Results do not depend on the executor because `run_task` is deterministic and the
file's rows are keyed by point id, not by position. Dask is imported only when asked for, so a
plain install never needs it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from fusesim.errors import InputError
from fusesim.sweep.evaluate import run_task
from fusesim.sweep.spec import Task

Rows = list[dict[str, Any]]


def run_serial(tasks: Sequence[Task]) -> Iterator[tuple[Task, Rows]]:
    for t in tasks:
        yield t, run_task(t)


def _worker_init(parent_pid: int, inherited_fds: tuple[int, ...]) -> None:
    """Workers must not outlive a killed sweep, nor keep its results file locked.

    A forked worker inherits the parent's lock on the results file; after `kill -9` of the parent
    an orphaned worker would keep that lock and make the resume fail. So each worker closes the
    inherited descriptors and (Linux) asks to be killed when its parent dies.
    """
    for fd in inherited_fds:
        try:
            os.close(fd)
        except OSError:
            pass
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def run_processes(tasks: Sequence[Task], jobs: int, inherited_fds: Sequence[int] = ()) -> Iterator[tuple[Task, Rows]]:
    """A process pool, with at most 2*jobs tasks in flight so a 100k-point grid does not queue all.

    fork (where available) starts workers in milliseconds and shares the already-imported modules;
    `inherited_fds` (the results file and its lock) are closed in each worker.
    """
    if jobs <= 1 or len(tasks) <= 1:
        yield from run_serial(tasks)
        return
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init,
                             initargs=(os.getpid(), tuple(inherited_fds))) as pool:
        pending: dict[Future, Task] = {}
        it = iter(tasks)
        for t in it:
            pending[pool.submit(run_task, t)] = t
            if len(pending) >= 2 * jobs:
                break
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                t = pending.pop(fut)
                yield t, fut.result()
                nxt = next(it, None)
                if nxt is not None:
                    pending[pool.submit(run_task, nxt)] = nxt


def run_dask(tasks: Sequence[Task], jobs: int = 2, scheduler: str | None = None) -> Iterator[tuple[Task, Rows]]:
    """Dask distributed: a LocalCluster of `jobs` single-threaded worker processes, or `scheduler`.

    Workers of an existing cluster need fusesim (and the evaluator's module) importable, and the
    hardware/workload paths of the spec readable at the same absolute paths.
    """
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise InputError("<command line>", "--dask",
                         "dask is not installed (pip install 'fusesim[dist]' or 'dask[distributed]')") from None
    cluster = None
    if scheduler:
        client = Client(scheduler, timeout="30s")
    else:
        cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40)
        client = Client(cluster)
    try:
        futures = client.map(run_task, list(tasks), pure=False)
        by_key = {f.key: t for f, t in zip(futures, tasks, strict=True)}
        for fut in as_completed(futures):
            rows = fut.result()
            yield by_key[fut.key], rows
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
