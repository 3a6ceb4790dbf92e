"""Executors: where the runner's tasks run (a local pool, or a cluster), chosen by name.

The runner (``vsb.run.runner``) cuts a run into ``Task``\\ s and hands them, with its shared
``RunState``, to one executor; nothing else in the runner knows which executor runs.

The interface every executor implements::

    class Executor(Protocol):
        name: str
        def run(self, tasks: Sequence[Task], state: RunState) -> Iterator[TaskOutput]: ...

- ``run`` submits every task and yields one ``TaskOutput`` per task **as tasks complete**
  (any order). It may run a task anywhere, provided every adapter call reaches the state's
  ledger (``begin`` before the call is sent, ``finish`` after its image is in the state's
  cache) as it happens, and its image the state's cache before the output is yielded.
  ``state.run_task(task)`` does exactly that in the calling process or thread; an executor
  that runs tasks elsewhere (``vsb.run.executors_ray``) has its workers write through an actor
  on the driver's node.
- A ``Task`` is requests of one story for one model: under one condition, every scene in
  order (a condition whose request carries the previous frame: previous_image) or one scene
  (any other condition, so that a provider's requests do not wait on story order); or, with
  ``condition`` None, every condition of the run in turn (the runner gives simulators and
  stored samples such (story, model) tasks; an executor may merge a story's tasks of one
  model into one, as the Ray executor does: the scene loop is the same).
- Concurrency is per model: ``state.concurrency[model]`` requests at a time (``--concurrency``,
  else the adapter's ``concurrency``, else ``--workers``); how an executor honours it is its
  own business.
- When the consumer stops iterating (an exception, Ctrl-C), ``run`` stops taking tasks and
  returns once the tasks in hand are finished or abandoned; the runner has already told the
  state to stop (``run_task`` then makes no further call).

Executors by name (``EXECUTORS``: name -> "module:Class", imported on first use, so an
extra such as Ray is needed only when chosen):

- ``local`` (default): a fork process pool for adapters that are ``process_safe`` (the
  simulators, stored samples), a thread pool per other adapter (HTTP providers: 8 threads
  by default), all at once; a model whose concurrency is 1 runs in the calling thread when
  every model's is.
- ``ray``: ``vsb.run.executors_ray.RayExecutor`` (``pip install 'vsb[ray]'``).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import queue
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol

from vsb.adapters.base import ImageModelAdapter
from vsb.errors import UnknownNameError
from vsb.store.locks import die_with_parent


@dataclass(frozen=True)
class Task:
    """One unit of work: requests of story ``story`` (index into the run's stories) for
    ``model`` under ``condition`` (None: every condition of the run), for scene ``scene``
    (1-based; None: every scene, in order)."""

    story: int
    model: str
    condition: str | None = None
    scene: int | None = None


@dataclass
class TaskOutput:
    """What a task produced: one record per image request, the oracle faults of simulators,
    and, when the model cannot go on (credential gone, quota exhausted), why it is skipped."""

    model: str
    records: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None


class RunState(Protocol):
    """What an executor may use of the runner's shared state (``vsb.run.runner._Shared``)."""

    @property
    def adapters(self) -> Mapping[str, ImageModelAdapter]:
        """The run's adapters by model name."""
        ...

    @property
    def concurrency(self) -> Mapping[str, int]:
        """Requests at a time, per model."""
        ...

    def run_task(self, task: Task) -> TaskOutput:
        """Do ``task`` here (this process, this thread): cache, ledger and images as it goes."""
        ...


class Executor(Protocol):
    """Runs a run's tasks somewhere (see the module docstring)."""

    name: str

    def run(self, tasks: Sequence[Task], state: RunState) -> Iterator[TaskOutput]:
        """Every task's output, as tasks complete."""
        ...


#: Executor name -> "module:Class" (constructed with keyword options; imported on use).
EXECUTORS: dict[str, str] = {
    "local": "vsb.run.executors:LocalExecutor",
    "ray": "vsb.run.executors_ray:RayExecutor",
}


def executor_names() -> list[str]:
    """Every executor name."""
    return list(EXECUTORS)


def get_executor(name: str, **options: Any) -> Executor:
    """A new executor ``name`` built with ``options`` (``UnknownNameError`` lists the known)."""
    if name not in EXECUTORS:
        raise UnknownNameError("executor", name, EXECUTORS)
    module, _, attr = EXECUTORS[name].partition(":")
    executor: Executor = getattr(importlib.import_module(module), attr)(**options)
    return executor


# --- the local executor ------------------------------------------------------------------

#: The state fork workers run against (inherited through fork, never pickled).
_FORK_STATE: RunState | None = None


def _in_fork(task: Task) -> TaskOutput:
    assert _FORK_STATE is not None, "fork worker state not initialised"
    return _FORK_STATE.run_task(task)


class LocalExecutor:
    """Processes for ``process_safe`` adapters, a thread pool per other model (see above)."""

    name = "local"

    def run(self, tasks: Sequence[Task], state: RunState) -> Iterator[TaskOutput]:
        """Every task's output, as tasks complete."""
        global _FORK_STATE
        tasks = list(tasks)
        width = {t.model: max(1, int(state.concurrency.get(t.model, 1))) for t in tasks}
        if len(tasks) <= 1 or all(w == 1 for w in width.values()):
            for t in tasks:
                yield state.run_task(t)
            return
        can_fork = "fork" in multiprocessing.get_all_start_methods()
        forked = {
            m for m, w in width.items() if w > 1 and can_fork and state.adapters[m].process_safe
        }
        done: queue.SimpleQueue[tuple[TaskOutput | None, BaseException | None]]
        done = queue.SimpleQueue()
        with ExitStack() as stack:
            if forked:
                # Fork before any thread of ours starts (a fork copies no running thread).
                _FORK_STATE = state
                stack.callback(_clear_fork_state)
                pool = multiprocessing.get_context("fork").Pool(
                    max(width[m] for m in forked),
                    initializer=die_with_parent,  # a killed run leaves no worker behind
                    initargs=(os.getpid(),),
                )
                stack.callback(pool.terminate)
                for t in tasks:
                    if t.model in forked:
                        pool.apply_async(
                            _in_fork, (t,),
                            callback=lambda out: done.put((out, None)),
                            error_callback=lambda err: done.put((None, err)),
                        )  # fmt: skip
            threads: dict[str, ThreadPoolExecutor] = {}
            for t in tasks:
                if t.model in forked:
                    continue
                ex = threads.get(t.model)
                if ex is None:
                    ex = ThreadPoolExecutor(width[t.model], thread_name_prefix="vsb-task")
                    threads[t.model] = ex
                    stack.callback(ex.shutdown, wait=True, cancel_futures=True)
                ex.submit(state.run_task, t).add_done_callback(lambda f: done.put(_outcome(f)))
            for _ in tasks:
                out, err = done.get()
                if err is not None:
                    raise err
                assert out is not None
                yield out


def _outcome(f: Future[TaskOutput]) -> tuple[TaskOutput | None, BaseException | None]:
    if f.cancelled():
        return None, None
    err = f.exception()
    return (None, err) if err is not None else (f.result(), None)


def _clear_fork_state() -> None:
    global _FORK_STATE
    _FORK_STATE = None
