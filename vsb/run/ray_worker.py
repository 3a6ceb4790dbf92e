"""What runs on Ray's side of ``vsb run --executor ray`` (the driver is
``vsb.run.executors_ray``; its docstring tells the whole flow): the in-memory cache and ledger a
worker runs the runner's scene loop against, the run's desk (an actor on the driver's node
that writes a paid model's calls into the ledger and cache as they happen), what travels
between driver and worker, and ``work`` itself."""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.pool import ThreadPool
from pathlib import Path
from typing import Any

from vsb.adapters.base import GenerationResult, ImageModelAdapter
from vsb.errors import InputError
from vsb.run.executors import TaskOutput
from vsb.run.runner import _run_scenes, _Shared
from vsb.store.cache import Compute, GenerationCache, Origin
from vsb.store.ledger import Ledger, LedgerEntry


def ray_resources(adapter: ImageModelAdapter) -> dict[str, float]:
    """What one task of ``adapter`` asks the cluster for."""
    declared = getattr(adapter, "ray_resources", None)
    if declared is not None:
        return dict(declared)
    if adapter.process_safe or adapter.privileged:
        return {"num_cpus": 1}  # simulators, stored samples: CPU work
    return {"num_cpus": 0}  # HTTP providers: waiting on the network


# --- the in-memory cache and ledger a worker (or the driver's walk) runs against ----------


class Miss(Exception):
    """The walk reached a request the cache does not hold."""


class WalkCache:
    """Reads the driver's cache and remembers what it found; a miss ends the walk."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache
        self.found: dict[str, GenerationResult] = {}

    def get(
        self, key: str, compute: Compute, origin: Origin = None
    ) -> tuple[GenerationResult, bool]:
        if key in self.found:
            return self.found[key], True
        result, _ = self.cache.get(key, raise_miss)
        self.found[key] = result
        return result, True


def same_result(result: GenerationResult) -> GenerationResult:
    """``result`` itself (a cache ``compute`` that stores what is already made)."""
    return result


def raise_miss() -> GenerationResult:
    """A cache ``compute`` that ends the walk: the cache does not hold the request."""
    raise Miss


class _TaskCache:
    """A worker's cache: the entries the driver sent, plus what the worker generates; with a
    desk, also the run's cache itself (asked on a miss, and given every new entry at once)."""

    def __init__(self, known: dict[str, GenerationResult], desk: Any = None) -> None:
        self.known = dict(known)
        self.new: dict[str, GenerationResult] = {}
        self.desk = desk
        self._lock = threading.Lock()

    def get(
        self, key: str, compute: Compute, origin: Origin = None
    ) -> tuple[GenerationResult, bool]:
        with self._lock:
            hit = self.known.get(key) or self.new.get(key)
        if hit is None and self.desk is not None:
            # stored since the task was shipped: by an earlier try of this task whose
            # worker died, or by another task
            hit = _ray_get(self.desk.lookup.remote(key))
        if hit is not None:
            return hit, True
        result = compute()
        if self.desk is not None:  # stored before the caller finishes the call's row
            _ray_get(self.desk.store.remote(key, result, origin() if origin else None))
        with self._lock:
            self.new[key] = result
        return result, False


class _EventLedger:
    """A worker's ledger. With a desk every call's rows are written at once through it
    (``begin`` before the call is sent); without one (a ``ray://`` client) they are kept
    in the order made and replayed by the driver. Cache hits are always replayed."""

    def __init__(self, desk: Any = None) -> None:
        self.events: list[tuple[str, Any, dict[str, Any]]] = []
        self.desk = desk
        self._lock = threading.Lock()
        self._next = 0

    def begin(self, key: str, model: str, **kw: Any) -> int:
        if self.desk is not None:
            return int(_ray_get(self.desk.begin.remote(key, model, kw)))
        with self._lock:
            self._next += 1
            self.events.append(("begin", self._next, {"key": key, "model": model, **kw}))
            return self._next

    def finish(self, row_id: int, **kw: Any) -> None:
        if self.desk is not None:
            _ray_get(self.desk.finish.remote(row_id, kw))
            return
        with self._lock:
            self.events.append(("finish", row_id, kw))

    def record_many(self, entries: Sequence[LedgerEntry]) -> None:
        with self._lock:
            self.events.append(("hits", None, {"entries": list(entries)}))


def _ray_get(ref: Any) -> Any:
    import ray

    return ray.get(ref)


class _Desk:
    """A Ray actor on the driver's node that writes the workers' calls into the run's ledger
    and cache as they happen: ``begin`` (committed before the worker sends the request),
    ``store`` (the image, with the attempt id) and then ``finish`` — the local executor's
    order, so a worker killed mid-task leaves its calls in the ledger (interrupted, or
    finished with their images in the cache) and a retry of its task reuses what it stored.
    One call at a time (Ray's default for an actor): SQLite writes are quick."""

    def __init__(self, ledger_path: str, session: int | None, cache_dir: str) -> None:
        self.ledger = Ledger(ledger_path)
        self.ledger.session = session
        self.cache = GenerationCache(cache_dir)

    def begin(self, key: str, model: str, kw: dict[str, Any]) -> int:
        return self.ledger.begin(key, model, **kw)

    def finish(self, row_id: int, kw: dict[str, Any]) -> None:
        self.ledger.finish(row_id, **kw)

    def lookup(self, key: str) -> GenerationResult | None:
        return self.cache.peek(key)

    def store(self, key: str, result: GenerationResult, origin: str | None) -> None:
        self.cache.get(key, functools.partial(same_result, result), lambda: origin)

    def close(self) -> None:
        self.ledger.close()
        self.cache.close()


def start_desk(ray: Any, st: _Shared) -> Any:
    """The run's desk actor on this (the driver's) node; None for a ``ray://`` client,
    whose files no cluster node can reach (the workers' calls then travel with their
    results, and a worker killed mid-task loses its calls' ledger rows)."""
    from ray.util.client import ray as client
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if client.is_connected():
        return None
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    actor = ray.remote(num_cpus=0, max_restarts=0)(_Desk)
    return actor.options(scheduling_strategy=here).remote(
        str(Path(st.ledger.path).resolve()), st.ledger.session, str(Path(st.cache.root).resolve())
    )


# --- what travels ----------------------------------------------------------------------


@dataclass
class Unit:
    """One (story, model) task as shipped: the story and the cached entries found for it."""

    index: int
    story: Any
    sha: str


@dataclass
class Shipment:
    model: str
    adapter_spec: bytes | None  # the pickled adapter; None: rebuild by name on the worker
    version: str
    units: list[Unit]
    known: dict[str, GenerationResult]
    conditions: list[str]
    seed: int
    pricing: Any
    retry: Any = None  # the run's RetryPolicy (None: the default)
    #: keys refused before in this run directory: the refusal is reused, never re-sent
    refused: dict[str, str] = field(default_factory=dict)
    #: the run's ``_Desk`` actor (None: the worker's calls travel with its result)
    desk: Any = None


@dataclass
class Returned:
    outputs: list[tuple[int, TaskOutput]]
    new: dict[str, GenerationResult]
    events: list[tuple[str, Any, dict[str, Any]]] = field(default_factory=list)


_WORKER_ADAPTERS: dict[tuple[str, str], ImageModelAdapter] = {}
_WORKER_LOCK = threading.Lock()


def _worker_adapter(s: Shipment) -> ImageModelAdapter:
    """The worker process's adapter for this shipment (built once per process, so a
    pipeline loaded on a GPU stays loaded for the next task)."""
    spec = hashlib.sha256(s.adapter_spec or s.model.encode()).hexdigest()
    with _WORKER_LOCK:
        adapter = _WORKER_ADAPTERS.get((s.model, spec))
        if adapter is None:
            if s.adapter_spec is not None:
                adapter = pickle.loads(s.adapter_spec)
            else:
                from vsb.adapters.registry import get_adapter

                adapter = get_adapter(s.model)
            if ray_resources(adapter).get("num_gpus"):
                _drop_gpu_adapters()  # one loaded pipeline per GPU worker, not one per model
            _WORKER_ADAPTERS[s.model, spec] = adapter
    if adapter.version != s.version:
        raise InputError(
            f"model {s.model}: this Ray worker has version {adapter.version!r}, the driver "
            f"{s.version!r} (different weights or code on the node {os.uname().nodename})"
        )
    return adapter


def _drop_gpu_adapters() -> None:
    """Forget this worker's GPU adapters (their pipelines) and give their memory back."""
    for key in [k for k, a in _WORKER_ADAPTERS.items() if ray_resources(a).get("num_gpus")]:
        del _WORKER_ADAPTERS[key]
    import gc
    import sys

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def work(s: Shipment) -> Returned:
    """Run a shipment on a worker: the runner's scene loop, in memory (see the module doc)."""
    adapter = _worker_adapter(s)
    cache = _TaskCache(s.known, s.desk)
    ledger = _EventLedger(s.desk)
    with tempfile.TemporaryDirectory(prefix="vsb-ray-") as tmp:
        st = _Shared(
            stories=[u.story for u in s.units], shas=[u.sha for u in s.units],
            adapters={s.model: adapter}, conditions=s.conditions, cache=cache,  # type: ignore[arg-type]
            ledger=ledger, run_dir=Path(tmp), seed=s.seed, pricing=s.pricing,  # type: ignore[arg-type]
            refused=dict(s.refused),
        )  # fmt: skip
        if s.retry is not None:
            st.retry = s.retry

        def one(j: int) -> tuple[int, TaskOutput]:
            out = TaskOutput(s.model)
            hits: list[LedgerEntry] = []
            try:
                _run_scenes(st, j, adapter, out, hits)
            finally:
                ledger.record_many(hits)
            return s.units[j].index, out

        if len(s.units) == 1:
            outputs = [one(0)]
        else:
            with ThreadPool(len(s.units)) as pool:
                outputs = pool.map(one, range(len(s.units)))
    return Returned(outputs, cache.new, ledger.events)
