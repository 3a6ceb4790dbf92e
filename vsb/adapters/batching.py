"""Micro-batching: concurrent single-image requests gathered into fixed-size batches.

The runner calls an adapter once per image, from several threads (one per story). A GPU is
idle between single prompts, so a local-model adapter hands each request to a ``Batcher``:
the first caller of a group waits up to ``gather_s`` for others of the same group (requests
that can share one pipeline call), then runs the batch for everyone while the rest wait for
their own result. One batch runs at a time (a pipeline is not thread-safe), and requests that
arrive while one runs are gathered for the next.

A batch is always padded to ``size`` items (the last one repeated, its output dropped), so
every call has the same shapes and an item's output never depends on how many others were
waiting — with per-item noise, an image is a function of its own request alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(eq=False)
class _Slot(Generic[T, R]):
    group: Hashable
    item: T
    arrived: float
    result: R | None = None
    error: BaseException | None = None
    done: bool = False
    #: set by the batch that took this slot (so no other batch takes it)
    taken: bool = field(default=False)


class Batcher(Generic[T, R]):
    """Runs ``run(items) -> results`` (same length, same order) on batches of ``size`` items."""

    def __init__(
        self, size: int, run: Callable[[Hashable, Sequence[T]], Sequence[R]], gather_s: float
    ) -> None:
        if size < 1:
            raise ValueError("batch size must be >= 1")
        self.size = size
        self.gather_s = gather_s if size > 1 else 0.0
        self._run = run
        self._cv = threading.Condition()
        self._queue: list[_Slot[T, R]] = []
        self._busy = False
        #: how many pipeline calls ran and how many real items they carried (for tests/benchmarks)
        self.batches: list[int] = []

    def submit(self, group: Hashable, item: T) -> R:
        """The result of ``item``, computed in a batch with others of the same ``group``."""
        slot: _Slot[T, R] = _Slot(group, item, time.monotonic())
        with self._cv:
            self._queue.append(slot)
            self._cv.notify_all()
        while True:
            with self._cv:
                batch = self._wait_or_lead(slot)
            if batch is None:
                break
            self._execute(batch)
        if slot.error is not None:
            raise slot.error
        return slot.result  # type: ignore[return-value]

    def _wait_or_lead(self, slot: _Slot[T, R]) -> list[_Slot[T, R]] | None:
        """Under the lock: None once ``slot`` is done, else a batch this thread must run."""
        while not slot.done:
            waiting = [s for s in self._queue if s.group == slot.group and not s.taken]
            due = time.monotonic() - waiting[0].arrived >= self.gather_s if waiting else False
            if not self._busy and waiting and (len(waiting) >= self.size or due):
                batch = waiting[: self.size]
                for s in batch:
                    s.taken = True
                self._busy = True
                return batch
            timeout = None
            if not self._busy and waiting:
                timeout = max(0.0, self.gather_s - (time.monotonic() - waiting[0].arrived))
            self._cv.wait(timeout=timeout if timeout is None else timeout + 1e-4)
        return None

    def _execute(self, batch: list[_Slot[T, R]]) -> None:
        items = [s.item for s in batch]
        padded = items + [items[-1]] * (self.size - len(items))
        try:
            results = list(self._run(batch[0].group, padded))
            if len(results) != len(padded):
                raise RuntimeError(f"batch of {len(padded)} gave {len(results)} results")
            for s, r in zip(batch, results, strict=False):
                s.result = r
        except BaseException as err:
            for s in batch:
                s.error = err
        finally:
            with self._cv:
                for s in batch:
                    s.done = True
                self._queue = [s for s in self._queue if not s.done]
                self.batches.append(len(batch))
                self._busy = False
                self._cv.notify_all()
