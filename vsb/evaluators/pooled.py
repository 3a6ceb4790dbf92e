"""The frames stage's process pool (``vsb.evaluators.machinery``), its results kept small.

Each job's outputs are pickled in the worker that made them and stay pickled in the
evaluating process while the pool lives (~10× smaller than the row dicts they become); they
become rows, one job at a time, once the workers are gone. The main job's memory bound counts
every process, and ~218,000 row dicts held beside two fork workers passed it.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from vsb.store.locks import die_with_parent

J = TypeVar("J")


def pooled(
    fn: Callable[[J], tuple[Any, Any]],
    jobs: Sequence[J],
    workers: int,
    done: Callable[[J], None],
) -> Iterator[tuple[J, tuple[Any, Any]]]:
    """``(job, fn(job))`` for every job, in order, computed by ``workers`` fork workers
    (``fn`` a module-level function returning ``(outputs, stats)``); ``done(job)`` as each
    job's result arrives, the pairs yielded once every job is done."""
    ctx = multiprocessing.get_context("fork")
    packed: list[tuple[J, bytes, Any]] = []
    with ctx.Pool(workers, initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        for job, (blob, stats) in zip(jobs, pool.imap(partial(_packed, fn), jobs), strict=True):
            packed.append((job, blob, stats))
            done(job)
    packed.reverse()
    while packed:  # each job's bytes let go as its rows are made
        job, blob, stats = packed.pop()
        yield job, (pickle.loads(blob), stats)


def _packed(fn: Callable[[J], tuple[Any, Any]], job: J) -> tuple[bytes, Any]:
    outs, stats = fn(job)
    return pickle.dumps(outs, protocol=pickle.HIGHEST_PROTOCOL), stats
