"""Ray as the distributed executor of ``vsb run`` (``pip install 'vsb[ray]'``).

``vsb run … --executor ray [--ray-address ADDR]`` sends the run's (story, model) tasks to a
Ray cluster (``ADDR``: ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``; none starts a local
one and shuts it down after). The runner hands over its task list and shared state
(``RayExecutor.run``, the ``vsb.executors.Executor`` interface) and gets the same
``TaskOutput``\\ s back as from the local executor; nothing else in the runner knows which
executor ran. The runner's tasks of one story and model (one per previous-frame chain, one
per scene of other conditions) travel together as one (story, model) task: a worker runs
all its conditions, scene after scene.

Only the driver's node touches the cache, the ledger and the run directory, so a cluster
needs no shared filesystem:

1. for each task the driver walks the cache with the runner's own scene loop
   (``runner._run_scenes``), condition by condition, up to the first request it does not
   hold; a task that is all cached is finished there and then, without Ray;
2. any other task goes to a worker with its story and the cached entries the walk found
   (tasks of an adapter that batches — ``adapter.concurrency`` > 1, e.g. diffusers with
   ``--batch-size`` — go as groups of that many stories, run in threads so batches fill);
3. the worker runs the same scene loop against that in-memory cache. For a paid model it
   writes each call as it happens through the run's *desk* (``_Desk``, an actor pinned to
   the driver's node that owns the ledger and cache there), in the local executor's order:
   the ledger row (``begin``, committed before the request is sent), the image into the
   cache, then the row finished; a miss asks the desk first, so a retried task reuses what
   its killed try stored. For any other model (simulators, stored samples, local weights:
   nothing billed per call, and four actor round trips an image would be most of a
   simulator's time) the ledger rows travel with the result. The worker returns the
   records, oracle faults, new entries and ledger events;
4. the driver stores the entries, replays the ledger events and writes the images. A
   task's outputs reach the driver whole or not at all; a paid model's calls are in the
   ledger either way (a free model's calls of a task whose worker died are not: nothing
   was paid, and the retry makes them again).

Resources per task: ``adapter.ray_resources`` when it declares them (the diffusers adapter:
``num_gpus=1`` on CUDA), else one CPU for simulators and stored samples, none for HTTP
providers (they wait on the network). A worker rebuilds the adapter from its pickle (the
diffusers adapter pickles as its source and options; the pipeline loads on first use and
stays loaded in that worker process) or, for adapters that do not pickle (an HTTP client),
by name from the registry on the worker, and checks that its version — for local weights
their hash — equals the driver's. Ray retries a task whose worker dies (``max_retries``);
a task lost for good becomes one failed record per image (and a failed ledger row), never a
gap; a rerun generates it.

Limits: with a ``ray://`` client address there is no desk (no cluster node sees the
client's files): a worker's ledger rows travel with its result, so the calls of a worker
killed mid-task, and of all workers when the driver is killed, are missing from the ledger
(their images never reached the cache; a resumed run generates them again). For paid
providers, prefer the local executor or an address the driver joins as a node.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pickle
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.pool import ThreadPool
from pathlib import Path
from typing import Any

from vsb.adapters.base import GenerationResult, ImageModelAdapter
from vsb.cache import GenerationCache
from vsb.errors import InputError, VsbError
from vsb.executors import Task, TaskOutput
from vsb.ledger import Ledger, LedgerEntry
from vsb.ray_session import connect, import_ray
from vsb.runner import _run_scenes, _Shared, _write_image

DEFAULT_MAX_RETRIES = 3
#: a (story index, model) pair: the unit the Ray executor ships
Pair = tuple[int, str]


def ray_resources(adapter: ImageModelAdapter) -> dict[str, float]:
    """What one task of ``adapter`` asks the cluster for."""
    declared = getattr(adapter, "ray_resources", None)
    if declared is not None:
        return dict(declared)
    if adapter.process_safe or adapter.privileged:
        return {"num_cpus": 1}  # simulators, stored samples: CPU work
    return {"num_cpus": 0}  # HTTP providers: waiting on the network


# --- the in-memory cache and ledger a worker (or the driver's walk) runs against ----------


class _Miss(Exception):
    """The walk reached a request the cache does not hold."""


class _WalkCache:
    """Reads the driver's cache and remembers what it found; a miss ends the walk."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache
        self.found: dict[str, GenerationResult] = {}

    def get(
        self,
        key: str,
        compute: Callable[[], GenerationResult],
        origin: Callable[[], str | None] | None = None,
    ) -> tuple[GenerationResult, bool]:
        if key in self.found:
            return self.found[key], True
        result, _ = self.cache.get(key, _raise_miss)
        self.found[key] = result
        return result, True


def _same(result: GenerationResult) -> GenerationResult:
    return result


def _raise_miss() -> GenerationResult:
    raise _Miss


class _TaskCache:
    """A worker's cache: the entries the driver sent, plus what the worker generates; with a
    desk, also the run's cache itself (asked on a miss, and given every new entry at once)."""

    def __init__(self, known: dict[str, GenerationResult], desk: Any = None) -> None:
        self.known = dict(known)
        self.new: dict[str, GenerationResult] = {}
        self.desk = desk
        self._lock = threading.Lock()

    def get(
        self,
        key: str,
        compute: Callable[[], GenerationResult],
        origin: Callable[[], str | None] | None = None,
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
        self.cache.get(key, functools.partial(_same, result), lambda: origin)

    def close(self) -> None:
        self.ledger.close()
        self.cache.close()


def _start_desk(ray: Any, st: _Shared) -> Any:
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
class _Unit:
    """One (story, model) task as shipped: the story and the cached entries found for it."""

    index: int
    story: Any
    sha: str


@dataclass
class _Shipment:
    model: str
    adapter_spec: bytes | None  # the pickled adapter; None: rebuild by name on the worker
    version: str
    units: list[_Unit]
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
class _Returned:
    outputs: list[tuple[int, TaskOutput]]
    new: dict[str, GenerationResult]
    events: list[tuple[str, Any, dict[str, Any]]] = field(default_factory=list)


_WORKER_ADAPTERS: dict[tuple[str, str], ImageModelAdapter] = {}
_WORKER_LOCK = threading.Lock()


def _worker_adapter(s: _Shipment) -> ImageModelAdapter:
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


def work(s: _Shipment) -> _Returned:
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
    return _Returned(outputs, cache.new, ledger.events)


# --- the driver ------------------------------------------------------------------------


class RayExecutor:
    """Runs the runner's (story, model) tasks on a Ray cluster (see the module docstring)."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        num_cpus: int | None = None,
    ) -> None:
        import_ray()  # a missing extra fails here, before the run touches its directory
        self.address = address
        self.max_retries = max_retries
        self.num_cpus = num_cpus
        #: tasks finished on the driver from the cache / sent to workers / lost (last run)
        self.stats = {"cached": 0, "shipped": 0, "lost": 0}

    def run(self, tasks: Sequence[Task], state: _Shared) -> Iterator[TaskOutput]:
        """Every task's output, as tasks complete (the runner's tasks of one story and model
        are merged into one (story, model) task: a worker runs all its conditions)."""
        paid = [m for m, a in state.adapters.items() if a.paid]
        if state.budget.limit is not None and paid:
            raise InputError(
                f"--budget with --executor ray: workers cannot share one spending limit "
                f"({', '.join(paid)} paid); run paid models with the local executor"
            )
        pairs = list(dict.fromkeys((t.story, t.model) for t in tasks))
        ray = import_ray()
        started = self._connect(ray)
        try:
            yield from self._run(ray, pairs, state)
        finally:
            if started:
                ray.shutdown()

    def _connect(self, ray: Any) -> bool:
        """Join the cluster (or start a local one); True when this call started Ray."""
        return connect(ray, self.address, self.num_cpus)

    def _run(self, ray: Any, tasks: list[Pair], st: _Shared) -> Iterator[TaskOutput]:
        self.stats = {"cached": 0, "shipped": 0, "lost": 0}
        specs = {m: _adapter_spec(a) for m, a in st.adapters.items()}
        remote = ray.remote(work)
        desk = _start_desk(ray, st) if any(a.paid for a in st.adapters.values()) else None
        try:
            yield from self._ship_all(ray, remote, desk, specs, tasks, st)
        finally:
            if desk is not None:
                try:
                    ray.get(desk.close.remote(), timeout=60)  # its connections fold the WAL
                finally:
                    ray.kill(desk)

    def _ship_all(
        self,
        ray: Any,
        remote: Any,
        desk: Any,
        specs: dict[str, bytes | None],
        tasks: list[Pair],
        st: _Shared,
    ) -> Iterator[TaskOutput]:
        waiting: dict[str, list[tuple[Pair, dict[str, GenerationResult]]]] = {}
        pending: dict[Any, _Shipment] = {}

        def ship(model: str, batch: list[tuple[Pair, dict[str, GenerationResult]]]) -> None:
            adapter = st.adapters[model]
            known: dict[str, GenerationResult] = {}
            for _t, found in batch:
                known.update(found)
            shipment = _Shipment(
                model, specs[model], adapter.version,
                [_Unit(i, st.stories[i], st.shas[i]) for (i, _m), _f in batch],
                known, list(st.conditions), st.seed, st.pricing, st.retry, dict(st.refused),
                desk if adapter.paid else None,
            )  # fmt: skip
            opts = {**ray_resources(adapter), "max_retries": self.max_retries}
            if opts.get("num_gpus"):
                opts["max_calls"] = 0  # keep the worker (and its loaded pipeline) for the next
            pending[remote.options(**opts).remote(shipment)] = shipment
            self.stats["shipped"] += len(batch)

        for task in tasks:
            done, found = _walk(st, task)
            if done is not None:
                self.stats["cached"] += 1
                yield done
                continue
            model = task[1]
            group = waiting.setdefault(model, [])
            group.append((task, found))
            if len(group) >= max(1, int(getattr(st.adapters[model], "concurrency", 1))):
                ship(model, waiting.pop(model))
        for model, group in waiting.items():
            ship(model, group)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            shipment = pending.pop(ready[0])
            try:
                returned: _Returned = ray.get(ready[0])
            except ray.exceptions.RayTaskError as err:
                cause = getattr(err, "cause", None)
                if isinstance(cause, VsbError):
                    raise cause from None
                yield from self._lost(st, shipment, err)
                continue
            except ray.exceptions.RayError as err:
                yield from self._lost(st, shipment, err)
                continue
            yield from _land(st, shipment, returned)

    def _lost(self, st: _Shared, s: _Shipment, err: BaseException) -> Iterator[TaskOutput]:
        """A shipment Ray gave up on: a failed record (and ledger row) for every image."""
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        reason = f"ray: task lost after {self.max_retries} retries ({type(err).__name__}: {first})"
        self.stats["lost"] += len(s.units)
        for u in s.units:
            out = TaskOutput(s.model)
            rows = []
            for cname in s.conditions:
                for scene in u.story.scenes:
                    k = scene.index
                    out.records.append(
                        {
                            "model": s.model, "condition": cname, "story_id": u.story.id,
                            "scene": k, "key": "", "path": None, "sha256": None,
                            "cache_hit": False, "latency_s": 0.0, "cost_usd": None,
                            "error": reason, "refused": False,
                        }
                    )  # fmt: skip
                    rows.append(
                        LedgerEntry(
                            "", s.model, 0.0, False, False, None, cname, u.story.id, k, reason
                        )
                    )
            st.ledger.record_many(rows)
            yield out


def _adapter_spec(adapter: ImageModelAdapter) -> bytes | None:
    """The adapter pickled for the workers (cloudpickle: what ``pickle.loads`` reads back);
    None when it does not pickle (an HTTP client)."""
    from ray import cloudpickle

    try:
        return bytes(cloudpickle.dumps(adapter))
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


def _walk(st: _Shared, task: Pair) -> tuple[TaskOutput | None, dict[str, GenerationResult]]:
    """Walk ``task`` through the driver's cache: its finished output when every request is
    cached (hits recorded in the ledger, images written), else None; and what was found."""
    i, model = task
    adapter = st.adapters[model]
    walker = _WalkCache(st.cache)
    merged = TaskOutput(model)
    hits: list[LedgerEntry] = []
    complete = True
    for cname in st.conditions:
        sub = dataclasses.replace(st, conditions=[cname], cache=walker)  # type: ignore[arg-type]
        out = TaskOutput(model)
        part: list[LedgerEntry] = []
        try:
            _run_scenes(sub, i, adapter, out, part)
        except _Miss:
            complete = False
            continue
        merged.records.extend(out.records)
        merged.faults.extend(out.faults)
        hits.extend(part)
    if not complete:
        return None, walker.found
    st.ledger.record_many(hits)
    return merged, walker.found


def _ledger_entries(events: list[tuple[str, Any, dict[str, Any]]]) -> list[LedgerEntry]:
    """A worker's ledger events as finished rows, in the order the calls began (one
    transaction on the driver; a call begun but never finished is kept as a failure)."""
    begun: dict[int, dict[str, Any]] = {}
    order: list[Any] = []
    for kind, ref, kw in events:
        if kind == "begin":
            begun[ref] = {**kw, "latency_s": 0.0, "success": False, "error": "never finished"}
            order.append(ref)
        elif kind == "finish":
            begun[ref].update(kw)
        else:
            order.extend(kw["entries"])
    out: list[LedgerEntry] = []
    for item in order:
        if isinstance(item, LedgerEntry):
            out.append(item)
            continue
        b = begun[item]
        out.append(
            LedgerEntry(
                b["key"], b["model"], b["latency_s"], b["success"], False, b.get("cost_usd"),
                b.get("condition"), b.get("story_id"), b.get("scene"), b.get("error"),
            )
        )  # fmt: skip
    return out


def _land(st: _Shared, s: _Shipment, r: _Returned) -> Iterator[TaskOutput]:
    """Store a worker's results: cache entries, ledger events, images; then its outputs."""
    for key, result in r.new.items():
        st.cache.get(key, functools.partial(_same, result))
    st.ledger.record_many(_ledger_entries(r.events))
    for _index, out in r.outputs:
        if out.skipped is not None:  # credential gone or quota spent on the worker
            st.blocked.setdefault(out.model, out.skipped)
        for rec in out.records:
            if rec["path"] is None:
                continue
            res = r.new.get(rec["key"]) or s.known.get(rec["key"])
            if res is None:  # pragma: no cover - a record always names an entry it used
                res, _ = st.cache.get(rec["key"], _raise_miss)
            _write_image(st.run_dir / rec["path"], res.png)
        yield out
