"""``vsb run``: generate every (story, scene, model, condition) image into a run directory.

The layout is the one of docs/CONTRACTS.md::

    RUN/manifest.json  RUN/records.jsonl  RUN/images/<model>/<condition>/<story>/scene_<kk>.png
    RUN/oracle/faults.jsonl (simulator runs)  RUN/suite/ (copy of the suite)  RUN/ledger.sqlite

Every request goes through the generation cache, so an interrupted run resumes where it
stopped and an identical run makes no adapter call. The run is cut into tasks
(``vsb.executors.Task``): one per (story, model, condition) where a request carries the
previous frame (previous_image: scenes in order), one per (story, model, condition, scene)
otherwise; an executor runs them (``vsb.executors``: the local one runs process-safe
adapters in a fork pool and every other model in its own thread pool, ``--concurrency``
requests at a time, HTTP providers 8 by default). A model without image input is not run
under previous_image (the manifest's ``not_supported``). The manifest is written last: a
run directory without one is incomplete. Progress goes to a callback
``progress(done_images, total_images)``; the library never prints.

Paid calls (``vsb.calls``, the one retry layer): each attempt is written to the ledger
before it is sent and completed after it; transient failures are retried with backoff and
seeded jitter, honouring Retry-After; a content-policy refusal is a recorded result
(``refused``: not retried, not sent again by a rerun of this directory); a spent quota
stops that model (it is skipped, like a model whose credential is missing); ``budget_usd``
stops the whole run before a paid attempt that could exceed it (records of what was done
are written, the manifest is not).

Crash safety and concurrency:

- the process that calls an adapter records the call in the ledger itself, before the call
  and again after it, and only then lets the cache store the image (``vsb.ledger``), so no
  call whose image reached the cache is missing from the ledger, however the run dies;
- a run holds ``RUN/.vsb-run.lock`` (``vsb.locks.DirectoryLock``) from before it touches the
  directory until it is done: a second run on the same directory fails at once, naming the
  pid that holds it; the lock goes with its process, so a killed run never blocks the next;
- runs on different directories that share a cache never generate a key twice: the cache
  claims each key while it is being generated (``vsb.cache``);
- a fork worker whose ``vsb run`` process was killed finishes the task in hand (its calls
  reach the ledger and the cache) and takes no other.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

from vsb.adapters.base import (
    GenerationRequest,
    GenerationResult,
    ImageModelAdapter,
    Privileged,
    writes_oracle,
)
from vsb.adapters.oracle import fault_row, write_faults
from vsb.adapters.registry import get_adapter
from vsb.cache import DEFAULT_CACHE_DIR, GenerationCache
from vsb.calls import (
    Budget,
    BudgetExceeded,
    CallError,
    QuotaExceeded,
    Refused,
    RetryPolicy,
    call_with_retries,
    jitter_rng,
)
from vsb.conditions import get_condition
from vsb.errors import AdapterError, CredentialMissing, InputError
from vsb.executors import Task, TaskOutput, get_executor
from vsb.fsio import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    canonical_json,
    sha256_file,
    sha256_hex,
)
from vsb.ledger import LEDGER_NAME, Ledger, LedgerEntry, Pricing, request_cost
from vsb.locks import DirectoryLock
from vsb.story.io import load_suite, load_suite_index
from vsb.story.models import Story

RUN_FORMAT_VERSION = "1.0"
ProgressFn = Callable[[int, int], None]
#: Ledger errors of refusals start so (a rerun of the directory does not send them again).
REFUSED_PREFIX = "refused: "
#: The task output type under its former name (``vsb.executors_ray`` uses it).
_TaskOutput = TaskOutput


@dataclass(frozen=True)
class RunConfig:
    """What to run and where."""

    suite_dir: Path
    models: Sequence[str]
    conditions: Sequence[str]
    out: Path
    seed: int = 0
    #: processes (or threads) for adapters that do not set their own concurrency
    workers: int = 1
    cache_dir: Path = Path(DEFAULT_CACHE_DIR)
    pricing: Path | None = None
    #: where tasks run: None = the local executor; else a ``vsb.executors.Executor``
    #: (``vsb.executors_ray.RayExecutor``)
    executor: Any = None
    #: requests at a time per model (None: the adapter's own, else ``workers``)
    concurrency: int | None = None
    #: stop before a paid attempt that could take this run's spending past it (USD)
    budget_usd: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass
class RunResult:
    """What a run did."""

    run_dir: Path
    images: int = 0
    calls: int = 0
    hits: int = 0
    failures: int = 0
    faults: int = 0
    seconds: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)
    #: images the provider refused (content policy); counted in ``failures`` too
    refused: int = 0
    #: model -> conditions it cannot run (previous_image without image input)
    not_supported: dict[str, list[str]] = field(default_factory=dict)
    #: models every request of which failed
    all_failed: list[str] = field(default_factory=list)
    #: why the run stopped before the end (the budget); None when it ran to the end
    stopped: str | None = None

    def problems(self) -> list[str]:
        """One line per reason the run is not whole (``vsb run`` exits non-zero on any)."""
        lines = [f"skipped {m}: {why}" for m, why in self.skipped.items()]
        lines += [f"every request of {m} failed" for m in self.all_failed]
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        return lines


class _Halted(Exception):
    """No further request: the run stopped (budget, interrupt) or the model is blocked."""


@dataclass
class _Shared:
    """Everything a worker needs; inherited through fork (never pickled)."""

    stories: list[Story]
    shas: list[str]
    adapters: dict[str, ImageModelAdapter]
    conditions: list[str]
    cache: GenerationCache
    ledger: Ledger
    run_dir: Path
    seed: int
    pricing: Pricing
    #: the ``vsb run`` process; a fork worker whose parent is gone stops taking tasks
    parent: int = field(default_factory=os.getpid)
    #: requests at a time, per model
    concurrency: dict[str, int] = field(default_factory=dict)
    budget: Budget = field(default_factory=lambda: Budget(None))
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: keys refused before in this run directory: the refusal is reused, never re-sent
    refused: dict[str, str] = field(default_factory=dict)
    #: set when no further request may be made (``halted`` says why)
    halt: threading.Event = field(default_factory=threading.Event)
    halted: list[str] = field(default_factory=list)
    #: models that take no further request (quota spent), and why
    blocked: dict[str, str] = field(default_factory=dict)

    def stop(self, reason: str) -> None:
        """Make no further request (tasks in hand end at their next one)."""
        if not self.halt.is_set():
            self.halted.append(reason)
        self.halt.set()

    def run_task(self, task: Task) -> TaskOutput:
        """Do ``task`` in this process and thread (``vsb.executors.RunState``)."""
        out = TaskOutput(task.model)
        if os.getpid() != self.parent and os.getppid() != self.parent:
            return out  # the run was killed: nobody will collect this task, generate nothing
        hits: list[LedgerEntry] = []  # calls are recorded as they happen; hits at the end
        try:
            _run_scenes(
                self, task.story, self.adapters[task.model], out, hits,
                conditions=None if task.condition is None else (task.condition,),
                scenes=None if task.scene is None else (task.scene,),
            )  # fmt: skip
        finally:
            self.ledger.record_many(hits)
        return out


def image_path(model: str, condition: str, story_id: str, scene: int) -> str:
    """An image's path relative to the run directory (the model name as one folder: a '/'
    in it is escaped, so ``replicate:owner/name`` never nests and nothing climbs out)."""
    return f"images/{quote(model, safe=':@+=,-._~')}/{condition}/{story_id}/scene_{scene:02d}.png"


def story_sha256(story: Story) -> str:
    """sha256 of a story's canonical JSON."""
    return sha256_hex(canonical_json(story.model_dump(mode="json")))


def not_supported(adapter: ImageModelAdapter, conditions: Sequence[str]) -> list[str]:
    """The conditions ``adapter`` cannot run: those that hand over the previous frame, for
    a model without image input (run anyway, they would be the independent request).
    Privileged adapters (simulators, stored samples) see the condition itself: they run."""
    if adapter.accepts_reference_image or adapter.privileged:
        return []
    return [c for c in conditions if get_condition(c).reference_image]


def _failure_cost(err: BaseException, adapter: ImageModelAdapter, price: float | None) -> Any:
    """What a failed attempt is taken to cost: nothing when the provider surely did not bill
    it, the list price when it may have, unknown (None) otherwise."""
    if isinstance(err, CredentialMissing) or (isinstance(err, CallError) and not err.billed):
        return 0.0
    if isinstance(err, CallError) or adapter.paid:
        return price
    return None


def _call(
    st: _Shared,
    adapter: ImageModelAdapter,
    req: GenerationRequest,
    where: tuple[str, str, str, int],
) -> GenerationResult:
    """One request, retried on transient failures (``vsb.calls``); every attempt recorded in
    the ledger before it is sent and after it (both committed before the cache may store the
    image). ``where``: key, condition, story id, scene."""
    key, cname, story_id, scene = where
    price_key = getattr(adapter, "pricing_key", req.model)
    price = st.pricing.price(price_key)

    def attempt() -> GenerationResult:
        if st.halt.is_set() or req.model in st.blocked:
            raise _Halted
        held = 0.0
        if adapter.paid:
            try:
                held = st.budget.reserve(price)
            except BudgetExceeded as err:
                st.stop(err.message)
                raise _Halted from None
        row = st.ledger.begin(
            key, req.model, condition=cname, story_id=story_id, scene=scene, cost_usd=price
        )
        t0 = time.perf_counter()
        try:
            result = adapter.generate(req)
        except BaseException as err:
            cost = _failure_cost(err, adapter, price)
            text = str(err) or type(err).__name__
            st.ledger.finish(
                row, latency_s=time.perf_counter() - t0, success=False, cost_usd=cost,
                error=REFUSED_PREFIX + text if isinstance(err, Refused) else text,
            )  # fmt: skip
            st.budget.settle(held, cost)
            if isinstance(err, QuotaExceeded):
                st.blocked.setdefault(req.model, f"quota exhausted: {err.message}")
            raise
        cost = request_cost(
            st.pricing, price_key, hit=False, success=True, reported=result.cost_usd
        )
        st.ledger.finish(row, latency_s=time.perf_counter() - t0, success=True, cost_usd=cost)
        st.budget.settle(held, cost)
        return result

    def nap(seconds: float) -> None:
        st.halt.wait(seconds)  # a stop wakes it (the next attempt then ends the call)

    result, _attempts = call_with_retries(attempt, st.retry, sleep=nap, rng=jitter_rng(key))
    return result


def _run_scenes(
    st: _Shared,
    i: int,
    adapter: ImageModelAdapter,
    out: TaskOutput,
    hits: list[LedgerEntry],
    *,
    conditions: Sequence[str] | None = None,
    scenes: Sequence[int] | None = None,
) -> None:
    """The requests of story ``i`` for ``adapter`` under ``conditions`` (default: the run's)
    and ``scenes`` (default: every scene, in order); records, faults and hits into ``out``
    and ``hits``."""
    story, model = st.stories[i], out.model
    params = adapter.parameters()
    skip = set(not_supported(adapter, st.conditions))
    for cname in conditions if conditions is not None else st.conditions:
        if cname in skip:
            continue
        cond = get_condition(cname)
        prev_png: bytes | None = None
        for scene in story.scenes:
            k = scene.index
            if scenes is not None and k not in scenes:
                continue
            if model in st.blocked:
                out.skipped = st.blocked[model]
                return
            ctx = cond.context(story, k)
            refs = (prev_png,) if ctx.reference_image and prev_png is not None else ()
            priv = Privileged(story, st.shas[i], k, cname) if adapter.privileged else None
            req = GenerationRequest(
                model, adapter.version, scene.text, st.seed, ctx, params, refs, priv
            )
            key = req.key()
            t0 = time.perf_counter()
            error: str | None = None
            refused = key in st.refused
            result: GenerationResult | None = None
            hit = False
            try:
                if refused:
                    error = st.refused[key]
                else:
                    result, hit = st.cache.get(
                        key, partial(_call, st, adapter, req, (key, cname, story.id, k))
                    )
            except _Halted:
                if model in st.blocked:
                    out.skipped = st.blocked[model]
                return
            except CredentialMissing as err:
                out.skipped = str(err)
                return
            except QuotaExceeded:
                out.skipped = st.blocked.get(model, "quota exhausted")
                return
            except AdapterError as err:
                error, refused = str(err), isinstance(err, Refused)
            latency = time.perf_counter() - t0
            rel = image_path(model, cname, story.id, k)
            sha: str | None = None
            if result is not None:
                _write_image(st.run_dir / rel, result.png)
                sha = sha256_hex(result.png)
                if writes_oracle(adapter):
                    for f in result.metadata.get("faults", ()):
                        out.faults.append(fault_row(model, cname, story.id, f))
            prev_png = result.png if result is not None else None
            cost = request_cost(
                st.pricing,
                getattr(adapter, "pricing_key", model),
                hit=hit,
                success=result is not None,
                reported=result.cost_usd if result is not None else None,
            )
            out.records.append(
                {
                    "model": model, "condition": cname, "story_id": story.id, "scene": k,
                    "key": key, "path": rel if sha else None, "sha256": sha,
                    "cache_hit": hit, "latency_s": round(latency, 6), "cost_usd": cost,
                    "error": error, "refused": refused,
                }
            )  # fmt: skip
            if hit:
                hits.append(LedgerEntry(key, model, latency, True, True, 0.0, cname, story.id, k))


def _write_image(path: Path, data: bytes) -> None:
    """Atomically write an image unless the same bytes are already there (a resumed run:
    reading is ~20× cheaper than creating a file)."""
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    atomic_write_bytes(path, data)


def _copy_suite(suite_dir: Path, dest: Path) -> None:
    index = load_suite_index(suite_dir)
    src, dst = suite_dir.resolve(), dest.resolve()
    if src == dst:
        return  # --suite is this run's own copy (OUT/suite): already in place
    if src.is_relative_to(dst):
        raise InputError("the suite lies inside OUT/suite, which the run replaces", file=src)
    if dest.is_symlink():
        dest.unlink()  # replace a link, never write through it (it may lead out of --out)
    elif dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copyfile(suite_dir / "suite.json", dest / "suite.json")
    for entry in index.stories:
        shutil.copyfile(suite_dir / entry.file, dest / entry.file)


def build_adapters(
    models: Sequence[str], skipped: dict[str, str], given: Mapping[str, ImageModelAdapter]
) -> dict[str, ImageModelAdapter]:
    """The adapters of ``models`` that pass their preflight (the others into ``skipped``)."""
    out: dict[str, ImageModelAdapter] = {}
    for name in models:
        adapter = given[name] if name in given else get_adapter(name)
        try:
            adapter.preflight()
        except CredentialMissing as err:
            skipped[name] = str(err)
            continue
        out[name] = adapter
    return out


_adapters = build_adapters


def concurrency_of(adapter: ImageModelAdapter, config: RunConfig) -> int:
    """Requests at a time for ``adapter``: ``config.concurrency``, else its own, else
    ``config.workers``."""
    own = getattr(adapter, "concurrency", None)
    return max(1, int(config.concurrency or own or config.workers))


def run(
    config: RunConfig,
    progress: ProgressFn | None = None,
    *,
    adapters: Mapping[str, ImageModelAdapter] | None = None,
) -> RunResult:
    """Generate every image of ``config`` into ``config.out`` (see the module docstring).

    ``adapters`` injects ready-made adapters by model name (tests, custom providers); other
    names are looked up in the adapter registry. ``RunError`` at once when another run holds
    the directory."""
    t_start = time.perf_counter()
    if not config.models:
        raise InputError("no model given (--model NAME[,NAME…])")
    if not config.conditions:
        raise InputError("no condition given (--condition NAME[,…|all])")
    for c in config.conditions:
        get_condition(c)
    suite_dir = Path(config.suite_dir)
    stories = load_suite(suite_dir)
    index = load_suite_index(suite_dir)
    result = RunResult(run_dir=Path(config.out))
    active = build_adapters(config.models, result.skipped, adapters or {})
    for m, a in active.items():
        if missing := not_supported(a, config.conditions):
            result.not_supported[m] = missing
    run_dir = Path(config.out)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        _run_locked(config, stories, index, active, result, progress)
    finally:
        for a in active.values():
            a.close()
    result.seconds = time.perf_counter() - t_start
    return result


def _run_locked(
    config: RunConfig,
    stories: list[Story],
    index: Any,
    active: dict[str, ImageModelAdapter],
    result: RunResult,
    progress: ProgressFn | None,
) -> None:
    suite_dir, run_dir = Path(config.suite_dir), Path(config.out)
    with DirectoryLock(run_dir):
        (run_dir / "manifest.json").unlink(missing_ok=True)
        _copy_suite(suite_dir, run_dir / "suite")
        records, faults = _generate(config, stories, active, result, progress)
        # A model skipped half-way (credential vanished, quota spent) is dropped entirely.
        records = [r for r in records if r["model"] not in result.skipped]
        faults = [f for f in faults if f["model"] not in result.skipped]
        records.sort(key=lambda r: (r["model"], r["condition"], r["story_id"], r["scene"]))
        atomic_write_text(
            run_dir / "records.jsonl",
            "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records),
        )
        models = [m for m in active if m not in result.skipped]
        if any(writes_oracle(active[m]) for m in models):
            write_faults(run_dir, faults)
        result.images = sum(r["error"] is None for r in records)
        result.calls = sum(not r["cache_hit"] for r in records)
        result.hits = sum(bool(r["cache_hit"]) for r in records)
        result.failures = sum(r["error"] is not None for r in records)
        result.refused = sum(bool(r.get("refused")) for r in records)
        result.faults = len(faults)
        result.all_failed = [
            m for m in models
            if any(r["model"] == m for r in records)
            and all(r["error"] is not None for r in records if r["model"] == m)
        ]  # fmt: skip
        if result.stopped is None:
            manifest = {
                "version": RUN_FORMAT_VERSION,
                "suite": suite_dir.resolve().name,
                "suite_sha256": sha256_file(suite_dir / "suite.json"),
                "models": models,
                "conditions": list(config.conditions),
                "seed": config.seed,
                "prompt_style": index.prompt_style,
                "images": result.images,
                "not_supported": {m: c for m, c in result.not_supported.items() if m in models},
            }
            atomic_write_json(run_dir / "manifest.json", manifest)


def plan_tasks(
    stories: Sequence[Story], adapters: Mapping[str, ImageModelAdapter], conditions: Sequence[str]
) -> list[Task]:
    """The run's tasks: previous-frame chains first (longest stories first, so the tail is
    short), then one task per scene of every other condition."""
    order = sorted(range(len(stories)), key=lambda i: -len(stories[i].scenes))
    chains: list[Task] = []
    singles: list[Task] = []
    for i in order:
        for m, a in adapters.items():
            skip = set(not_supported(a, conditions))
            for c in conditions:
                if c in skip:
                    continue
                if get_condition(c).reference_image:
                    chains.append(Task(i, m, c))
                else:
                    singles += [Task(i, m, c, s.index) for s in stories[i].scenes]
    return chains + singles


def _generate(
    config: RunConfig,
    stories: list[Story],
    active: dict[str, ImageModelAdapter],
    result: RunResult,
    progress: ProgressFn | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run every task; the records and oracle faults they produced."""
    run_dir = Path(config.out)
    cache = GenerationCache(config.cache_dir)
    cache.open()
    ledger = Ledger(run_dir / LEDGER_NAME)
    ledger.start_session(f"seed={config.seed} models={','.join(active)}")
    refused = {k: e.removeprefix(REFUSED_PREFIX) for k, e in ledger.errors(REFUSED_PREFIX)}
    st = _Shared(
        stories=stories,
        shas=[story_sha256(s) for s in stories],
        adapters=active,
        conditions=list(config.conditions),
        cache=cache,
        ledger=ledger,
        run_dir=run_dir,
        seed=config.seed,
        pricing=Pricing.load(config.pricing),
        concurrency={m: concurrency_of(a, config) for m, a in active.items()},
        budget=Budget(config.budget_usd),
        retry=config.retry,
        refused=refused,
    )
    tasks = plan_tasks(stories, active, config.conditions)
    total = sum(len(stories[t.story].scenes) if t.scene is None else 1 for t in tasks)
    records: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    done = 0
    if progress:
        progress(0, total)
    executor = config.executor if config.executor is not None else get_executor("local")
    try:
        # No SQLite connection crosses a fork: workers (and the parent, later) reopen.
        ledger.close()
        cache.close()
        outputs = executor.run(tasks, st)
        try:
            for out in outputs:
                if out.skipped is not None:
                    result.skipped.setdefault(out.model, out.skipped)
                records.extend(out.records)
                faults.extend(out.faults)
                done += len(out.records)
                if progress:
                    progress(done, total)
        except BaseException:
            st.stop("interrupted")  # tasks in hand make no further request
            raise
        finally:
            close = getattr(outputs, "close", None)
            if close is not None:
                close()  # the executor waits for the tasks in hand
    finally:
        # Workers' connections are gone with them; the parent's, closed last, folds the
        # write-ahead logs into ledger.sqlite and index.sqlite (no -wal files left behind).
        for db in (ledger, cache):
            db.open()
            db.close()
    for m, why in st.blocked.items():
        result.skipped.setdefault(m, why)
    if st.halted:
        result.stopped = st.halted[0]
    return records, faults
