"""Ray as the distributed executor of ``vsb run`` (``pip install 'vsb[ray]'``).

``vsb run … --executor ray [--ray-address ADDR]`` sends the run's (story, model) tasks to a
Ray cluster (``ADDR``: ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``; none starts a local
one and shuts it down after). The runner hands over its task list and shared state
(``RayExecutor.run``, the ``vsb.run.executors.Executor`` interface) and gets the same
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
import pickle
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from vsb.adapters.base import GenerationResult, ImageModelAdapter
from vsb.errors import InputError, VsbError
from vsb.run.budgets import UNKNOWN_FIELDS
from vsb.run.executors import Task, TaskOutput
from vsb.run.ray_session import connect, import_ray
from vsb.run.ray_worker import (
    Miss,
    Returned,
    Shipment,
    Unit,
    WalkCache,
    raise_miss,
    ray_resources,
    same_result,
    start_desk,
    work,
)
from vsb.run.runner import _run_scenes, _Shared, _write_image
from vsb.store.ledger import LedgerEntry

__all__ = ["DEFAULT_MAX_RETRIES", "RayExecutor", "ray_resources"]

DEFAULT_MAX_RETRIES = 3
#: a (story index, model) pair: the unit the Ray executor ships
Pair = tuple[int, str]


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
        desk = start_desk(ray, st) if any(a.paid for a in st.adapters.values()) else None
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
        pending: dict[Any, Shipment] = {}

        def ship(model: str, batch: list[tuple[Pair, dict[str, GenerationResult]]]) -> None:
            adapter = st.adapters[model]
            known: dict[str, GenerationResult] = {}
            for _t, found in batch:
                known.update(found)
            shipment = Shipment(
                model, specs[model], adapter.version,
                [Unit(i, st.stories[i], st.shas[i]) for (i, _m), _f in batch],
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
                returned: Returned = ray.get(ready[0])
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

    def _lost(self, st: _Shared, s: Shipment, err: BaseException) -> Iterator[TaskOutput]:
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
                            "error": reason, "refused": False, **UNKNOWN_FIELDS,
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
    None when it does not pickle (an HTTP client). A ``python:`` model's module travels by
    value where it can (else every task failed where the workers cannot import it: a folder
    on the driver's path only, a remote cluster), and by name where its function holds what
    does not pickle (a lock) or is large (a loaded pipeline: the workers load their own)."""
    from ray import cloudpickle

    from vsb.adapters.function import FunctionModel

    fn = adapter.fn if isinstance(adapter, FunctionModel) else None
    own = sys.modules.get(getattr(fn, "__module__", "") or "")
    for by_value in ([own] if own is not None and own.__name__ != "__main__" else []) + [None]:
        try:
            if by_value is not None:
                cloudpickle.register_pickle_by_value(by_value)
            spec = bytes(cloudpickle.dumps(adapter))
        except (pickle.PicklingError, TypeError, AttributeError):
            continue
        finally:
            if by_value is not None:
                cloudpickle.unregister_pickle_by_value(by_value)
        if by_value is None or len(spec) <= BY_VALUE_MAX:
            return spec
    return None


#: The largest pickle of a ``python:`` model sent by value (bytes); larger ones go by name.
BY_VALUE_MAX = 16 << 20


def _walk(st: _Shared, task: Pair) -> tuple[TaskOutput | None, dict[str, GenerationResult]]:
    """Walk ``task`` through the driver's cache: its finished output when every request is
    cached (hits recorded in the ledger, images written), else None; and what was found."""
    i, model = task
    adapter = st.adapters[model]
    walker = WalkCache(st.cache)
    merged = TaskOutput(model)
    hits: list[LedgerEntry] = []
    complete = True
    for cname in st.conditions:
        sub = dataclasses.replace(st, conditions=[cname], cache=walker)  # type: ignore[arg-type]
        out = TaskOutput(model)
        part: list[LedgerEntry] = []
        try:
            _run_scenes(sub, i, adapter, out, part)
        except Miss:
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


def _land(st: _Shared, s: Shipment, r: Returned) -> Iterator[TaskOutput]:
    """Store a worker's results: cache entries, ledger events, images; then its outputs."""
    for key, result in r.new.items():
        st.cache.get(key, functools.partial(same_result, result))
    st.ledger.record_many(_ledger_entries(r.events))
    for _index, out in r.outputs:
        if out.skipped is not None:  # credential gone or quota spent on the worker
            st.blocked.setdefault(out.model, out.skipped)
        for rec in out.records:
            if rec["path"] is None:
                continue
            res = r.new.get(rec["key"]) or s.known.get(rec["key"])
            if res is None:  # pragma: no cover - a record always names an entry it used
                res, _ = st.cache.get(rec["key"], raise_miss)
            _write_image(st.run_dir / rec["path"], res.png)
        yield out
