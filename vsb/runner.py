"""``vsb run``: generate every (story, scene, model, condition) image into a run directory.

The layout is the one of docs/CONTRACTS.md::

    RUN/manifest.json  RUN/records.jsonl  RUN/images/<model>/<condition>/<story>/scene_<kk>.png
    RUN/oracle/faults.jsonl (simulator runs)  RUN/suite/ (copy of the suite)  RUN/ledger.sqlite

Every request goes through the generation cache, so an interrupted run resumes where it
stopped and an identical run makes no adapter call. Work is split into (story, model)
tasks run in parallel — a fork process pool when every adapter is ``process_safe`` (the
simulators), threads otherwise; the scenes of one story run in order because
previous_image hands each request the image generated for the scene before. The manifest is
written last: a run directory without one is incomplete. Progress goes to a callback
``progress(done_images, total_images)``; the library never prints.

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
import multiprocessing
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.pool import ThreadPool
from pathlib import Path
from typing import Any

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter, Privileged
from vsb.adapters.oracle import fault_row, write_faults
from vsb.adapters.registry import get_adapter
from vsb.cache import DEFAULT_CACHE_DIR, GenerationCache
from vsb.conditions import get_condition
from vsb.errors import AdapterError, CredentialMissing, InputError
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


@dataclass(frozen=True)
class RunConfig:
    """What to run and where."""

    suite_dir: Path
    models: Sequence[str]
    conditions: Sequence[str]
    out: Path
    seed: int = 0
    workers: int = 1
    cache_dir: Path = Path(DEFAULT_CACHE_DIR)
    pricing: Path | None = None
    #: where tasks run: None = the local pools; else an object with
    #: ``run(tasks, state) -> Iterator[_TaskOutput]`` (``vsb.executors_ray.RayExecutor``)
    executor: Any = None


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


@dataclass
class _TaskOutput:
    model: str
    records: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    credential_error: str | None = None


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


_STATE: _Shared | None = None


def image_path(model: str, condition: str, story_id: str, scene: int) -> str:
    """An image's path relative to the run directory."""
    return f"images/{model}/{condition}/{story_id}/scene_{scene:02d}.png"


def story_sha256(story: Story) -> str:
    """sha256 of a story's canonical JSON."""
    return sha256_hex(canonical_json(story.model_dump(mode="json")))


def _call(
    st: _Shared,
    adapter: ImageModelAdapter,
    req: GenerationRequest,
    where: tuple[str, str, str, int],
) -> GenerationResult:
    """One adapter call, recorded in the ledger before and after it (both committed before
    the cache may store the image). ``where``: key, condition, story id, scene."""
    key, cname, story_id, scene = where
    price_key = getattr(adapter, "pricing_key", req.model)
    row = st.ledger.begin(
        key, req.model, condition=cname, story_id=story_id, scene=scene,
        cost_usd=st.pricing.price(price_key),
    )  # fmt: skip
    t0 = time.perf_counter()
    try:
        result = adapter.generate(req)
    except BaseException as err:
        st.ledger.finish(
            row, latency_s=time.perf_counter() - t0, success=False,
            cost_usd=request_cost(st.pricing, price_key, hit=False, success=False, reported=None),
            error=str(err) or type(err).__name__,
        )  # fmt: skip
        raise
    st.ledger.finish(
        row, latency_s=time.perf_counter() - t0, success=True,
        cost_usd=request_cost(
            st.pricing, price_key, hit=False, success=True, reported=result.cost_usd
        ),
    )  # fmt: skip
    return result


def _run_task(task: tuple[int, str]) -> _TaskOutput:
    st = _STATE
    assert st is not None, "worker state not initialised"
    i, model = task
    adapter = st.adapters[model]
    out = _TaskOutput(model)
    if os.getpid() != st.parent and os.getppid() != st.parent:
        return out  # the run was killed: nobody will collect this task, generate nothing
    hits: list[LedgerEntry] = []  # calls are recorded as they happen; hits at the end
    try:
        _run_scenes(st, i, adapter, out, hits)
    finally:
        st.ledger.record_many(hits)
    return out


def _run_scenes(
    st: _Shared, i: int, adapter: ImageModelAdapter, out: _TaskOutput, hits: list[LedgerEntry]
) -> None:
    story, model = st.stories[i], out.model
    params = adapter.parameters()
    for cname in st.conditions:
        cond = get_condition(cname)
        prev_png: bytes | None = None
        for scene in story.scenes:
            k = scene.index
            ctx = cond.context(story, k)
            refs = (
                (prev_png,)
                if ctx.reference_image and prev_png is not None and adapter.accepts_reference_image
                else ()
            )
            priv = Privileged(story, st.shas[i], k, cname) if adapter.privileged else None
            req = GenerationRequest(
                model, adapter.version, scene.text, st.seed, ctx, params, refs, priv
            )
            key = req.key()
            t0 = time.perf_counter()
            error: str | None = None
            try:
                result, hit = st.cache.get(
                    key, partial(_call, st, adapter, req, (key, cname, story.id, k))
                )
            except CredentialMissing as err:
                out.credential_error = str(err)
                return
            except AdapterError as err:
                result, hit, error = None, False, str(err)
            latency = time.perf_counter() - t0
            rel = image_path(model, cname, story.id, k)
            sha: str | None = None
            if result is not None:
                _write_image(st.run_dir / rel, result.png)
                sha = sha256_hex(result.png)
                if adapter.privileged:
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
                    "error": error,
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


def _adapters(
    models: Sequence[str], skipped: dict[str, str], given: Mapping[str, ImageModelAdapter]
) -> dict[str, ImageModelAdapter]:
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
    active = _adapters(config.models, result.skipped, adapters or {})
    run_dir = Path(config.out)
    run_dir.mkdir(parents=True, exist_ok=True)
    with DirectoryLock(run_dir):
        (run_dir / "manifest.json").unlink(missing_ok=True)
        _copy_suite(suite_dir, run_dir / "suite")
        records, faults = _generate(config, stories, active, result, progress)
        # A model skipped half-way (credential vanished) is dropped from the run entirely.
        records = [r for r in records if r["model"] not in result.skipped]
        faults = [f for f in faults if f["model"] not in result.skipped]
        records.sort(key=lambda r: (r["model"], r["condition"], r["story_id"], r["scene"]))
        atomic_write_text(
            run_dir / "records.jsonl",
            "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records),
        )
        if any(a.privileged for m, a in active.items() if m not in result.skipped):
            write_faults(run_dir, faults)
        models = [m for m in active if m not in result.skipped]
        result.images = sum(r["error"] is None for r in records)
        result.calls = sum(not r["cache_hit"] for r in records)
        result.hits = sum(bool(r["cache_hit"]) for r in records)
        result.failures = sum(r["error"] is not None for r in records)
        result.faults = len(faults)
        manifest = {
            "version": RUN_FORMAT_VERSION,
            "suite": suite_dir.resolve().name,
            "suite_sha256": sha256_file(suite_dir / "suite.json"),
            "models": models,
            "conditions": list(config.conditions),
            "seed": config.seed,
            "prompt_style": index.prompt_style,
            "images": result.images,
        }
        atomic_write_json(run_dir / "manifest.json", manifest)
    result.seconds = time.perf_counter() - t_start
    return result


def _generate(
    config: RunConfig,
    stories: list[Story],
    active: dict[str, ImageModelAdapter],
    result: RunResult,
    progress: ProgressFn | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run every (story, model) task; the records and oracle faults they produced."""
    global _STATE
    run_dir = Path(config.out)
    cache = GenerationCache(config.cache_dir)
    cache.open()
    ledger = Ledger(run_dir / LEDGER_NAME)
    ledger.start_session(f"seed={config.seed} models={','.join(active)}")
    _STATE = _Shared(
        stories=stories,
        shas=[story_sha256(s) for s in stories],
        adapters=active,
        conditions=list(config.conditions),
        cache=cache,
        ledger=ledger,
        run_dir=run_dir,
        seed=config.seed,
        pricing=Pricing.load(config.pricing),
    )
    # Longest stories first, so the pool's tail is short.
    order = sorted(range(len(stories)), key=lambda i: -len(stories[i].scenes))
    tasks = [(i, m) for i in order for m in active]
    total = sum(len(stories[i].scenes) * len(config.conditions) for i, _m in tasks)
    records: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    done = 0
    if progress:
        progress(0, total)
    try:
        safe = all(a.process_safe for a in active.values())
        # No SQLite connection crosses a fork: workers (and the parent, later) reopen.
        ledger.close()
        cache.close()
        outputs = (
            _execute(tasks, config.workers, safe)
            if config.executor is None
            else config.executor.run(tasks, _STATE)
        )
        for out in outputs:
            if out.credential_error is not None:
                result.skipped.setdefault(out.model, out.credential_error)
            records.extend(out.records)
            faults.extend(out.faults)
            done += len(out.records)
            if progress:
                progress(done, total)
    finally:
        _STATE = None
        # Workers' connections are gone with them; the parent's, closed last, folds the
        # write-ahead logs into ledger.sqlite and index.sqlite (no -wal files left behind).
        for db in (ledger, cache):
            db.open()
            db.close()
    return records, faults


def _execute(
    tasks: list[tuple[int, str]], workers: int, process_safe: bool
) -> Iterator[_TaskOutput]:
    if workers <= 1 or len(tasks) <= 1:
        yield from map(_run_task, tasks)
        return
    if process_safe and "fork" in multiprocessing.get_all_start_methods():
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            yield from pool.imap_unordered(_run_task, tasks)
        return
    with ThreadPool(workers) as tpool:
        yield from tpool.imap_unordered(_run_task, tasks)
