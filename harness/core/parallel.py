"""CPU-bound work over the machine's cores: a process pool for jobs a model does not do (Praat's resynthesis and
pitch tracking of the counterfactual arms), with one progress bar.

A few jobs run in this process (a pool's start costs more than they do); more run in a pool of workers, one per
core this process may use (:func:`usable_cores`), or ``LALM_WORKERS`` of them when that is set (``1`` keeps every
job in this process). Results come back in the jobs' order, so a pool gives what one process gives.

On Linux the workers are forked, as PyTorch's data loaders are: a ``spawn`` worker imports the parent's main module
again, which re-runs a script that calls the gate without an ``if __name__ == "__main__"`` guard (a benchmark, a
user's notebook export). Elsewhere (macOS, Windows, where forking a threaded process is unsafe) they are spawned.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

from harness.core.progress import Progress

Job = TypeVar("Job")
Result = TypeVar("Result")

MIN_POOLED_JOBS = 16
"""Fewer jobs than this run in this process: starting the workers costs about as much as Praat's resynthesis of
this many two-second clips (spawned workers cost more: an interpreter and numpy each)."""
START_METHOD = "fork" if sys.platform == "linux" else "spawn"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; every core where the system does not say)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def worker_count() -> int:
    """``LALM_WORKERS`` when set to a positive integer, else :func:`usable_cores`; a bad value is an error naming it."""
    setting = os.environ.get("LALM_WORKERS", "").strip()
    if not setting:
        return usable_cores()
    if not setting.isdigit() or int(setting) < 1:
        raise ValueError(f"LALM_WORKERS={setting!r}: give a positive whole number of worker processes")
    return int(setting)


def map_in_processes(
    function: Callable[[Job], Result], jobs: Sequence[Job], label: str, *, chunk_size: int = 8, progress: bool = True
) -> list[Result]:
    """``[function(job) for job in jobs]``, over :func:`worker_count` processes when there are at least
    :data:`MIN_POOLED_JOBS` jobs; ``function`` must be importable by name (a module-level function) and its jobs and
    results picklable. With ``progress``, a bar named ``label`` advances as results arrive."""
    workers = min(worker_count(), max(1, len(jobs) // chunk_size))
    bar = Progress(len(jobs), label, min_items=MIN_POOLED_JOBS) if progress else Progress(0, label)
    with bar:
        if workers == 1 or len(jobs) < MIN_POOLED_JOBS:
            results = []
            for job in jobs:
                results.append(function(job))
                bar.update()
            return results
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(START_METHOD)) as pool:
            results = []
            for result in pool.map(function, jobs, chunksize=chunk_size):
                results.append(result)
                bar.update()
            return results
