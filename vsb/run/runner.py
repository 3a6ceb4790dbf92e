"""``vsb run``: generate every (story, scene, model, condition) image into a run directory.

The layout is the one of docs/CONTRACTS.md::

    RUN/manifest.json  RUN/records.jsonl  RUN/images/<model>/<condition>/<story>/scene_<kk>.png
    RUN/oracle/faults.jsonl (simulator runs)  RUN/suite/ (copy of the suite)  RUN/ledger.sqlite

Every request goes through the generation cache, so an interrupted run resumes where it
stopped and an identical run makes no adapter call. The run is cut into tasks
(``vsb.run.executors.Task``): one per (story, model, condition) where a request carries the
previous frame (previous_image: scenes in order), one per (story, model, condition, scene)
otherwise; an executor runs them (``vsb.run.executors``: the local one runs process-safe
adapters in a fork pool and every other model in its own thread pool, ``--concurrency``
requests at a time, HTTP providers 8 by default). A model without image input is not run
under previous_image (the manifest's ``not_supported``). The manifest is written last: a
run directory without one is incomplete. A run into a directory that holds other models
adds to it, keeping their records and faults (``vsb.run.existing``: or refuses in one line
when they were made with another suite, seed, prompt style or conditions). Progress goes to
a callback ``progress(done_images, total_images)``; the library never prints.

What one task does — its scene loop, the calls, the records — is in ``vsb.run.tasks``.
Paid calls (``vsb.store.calls``, the one retry layer): each attempt is written to the ledger
before it is sent and completed after it; transient failures are retried with backoff and
seeded jitter, honouring Retry-After; a content-policy refusal is a recorded result
(``refused``: not retried, not sent again by a rerun of this directory); a spent quota
stops that model (it is skipped, like a model whose credential is missing); ``budget_usd``
stops the whole run before a paid attempt that could exceed it (records of what was done
are written, the manifest is not). A paid model's prompt over its provider's documented
limit stops the run before anything is written or sent (``vsb.run.budgets``); every record
says how its prompt fit the model's budget, and the result counts the prompts cut.

Crash safety and concurrency:

- the process that calls an adapter records the call in the ledger itself before the call
  (``begin``), lets the cache store the image, and only then finishes the row
  (``vsb.store.ledger``): no call whose image reached the cache is missing from the ledger, and no
  call finished in the ledger lacks its image in the cache (so none is paid for twice),
  however the run dies; a row the killed run left unfinished whose image the cache holds
  (the same attempt id) is reconciled by the next run, and the others stay *interrupted*
  (docs/CRASH_SAFETY.md);
- a run holds ``RUN/.vsb-run.lock`` (``vsb.store.locks.DirectoryLock``) from before it touches the
  directory until it is done: a second run on the same directory fails at once, naming the
  pid that holds it; the lock goes with its process, so a killed run never blocks the next;
- runs on different directories that share a cache never generate a key twice: the cache
  claims each key while it is being generated (``vsb.store.cache``);
- a fork worker dies with its ``vsb run`` process (``vsb.store.locks.die_with_parent``: the
  kernel kills it; fork workers run only simulators and stored samples, which cost
  nothing), so a killed run leaves no orphan behind.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb.adapters.base import ImageModelAdapter, writes_oracle
from vsb.adapters.oracle import write_faults
from vsb.adapters.registry import get_adapter
from vsb.conditions import get_condition
from vsb.errors import CredentialMissing, InputError
from vsb.fsio import atomic_write_json, atomic_write_text, sha256_file
from vsb.run.budgets import check_budgets, cut_counts
from vsb.run.executors import Task, TaskOutput, get_executor
from vsb.run.existing import check_addable, read_earlier
from vsb.run.tasks import (  # noqa: F401 - re-exported: vsb.run.executors_ray and tests use them
    REFUSED_PREFIX,
    _run_scenes,
    _Shared,
    _write_image,
    image_path,
    not_supported,
    story_sha256,
)
from vsb.store.cache import DEFAULT_CACHE_DIR, GenerationCache
from vsb.store.calls import Budget, RetryPolicy
from vsb.store.ledger import LEDGER_NAME, Ledger, Pricing
from vsb.store.locks import DirectoryLock
from vsb.story.io import load_suite, load_suite_index
from vsb.story.models import Story

RUN_FORMAT_VERSION = "1.0"
ProgressFn = Callable[[int, int], None]
#: The task output type under its former name.
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
    #: where tasks run: None = the local executor; else a ``vsb.run.executors.Executor``
    #: (``vsb.run.executors_ray.RayExecutor``)
    executor: Any = None
    #: requests at a time per model (None: the adapter's own, else ``workers``)
    concurrency: int | None = None
    #: stop before a paid attempt that could take this run's spending past it (USD)
    budget_usd: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: keep what the directory holds of models this run does not run (``vsb.run.existing``);
    #: False: the run is all the directory holds (a release build's run of its own models)
    add: bool = True


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
    #: calls of an earlier, killed run found finished (image in the cache) and so marked
    reconciled: int = 0
    #: cache entries that failed their check (values of another key) and were regenerated
    failed_checks: int = 0
    #: model -> (images that failed, the first error): why, said where the count is
    errors: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: model -> condition -> images that failed there (only where some did)
    failed: dict[str, dict[str, int]] = field(default_factory=dict)
    #: model -> condition -> (prompts cut by the model's text encoder, prompts in all)
    prompts_cut: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)

    def cut_lines(self) -> list[str]:
        """``MODEL CONDITION cut/all`` for each (model, condition) with a prompt cut."""
        return [
            f"{m} {c} {n_cut}/{n}"
            for m, by in self.prompts_cut.items()
            for c, (n_cut, n) in by.items()
            if n_cut
        ]

    def failed_line(self) -> str | None:
        """``N failed: MODEL under CONDITION (n), …; MODEL …`` (None when nothing failed): which
        images failed, named by model and condition (why: ``errors``)."""
        if not self.failed:
            return None
        where = "; ".join(
            f"{m} under " + ", ".join(f"{c} ({n})" for c, n in sorted(by.items()))
            for m, by in sorted(self.failed.items())
        )
        return f"{sum(sum(by.values()) for by in self.failed.values())} failed: {where}"

    def problems(self) -> list[str]:
        """One line per reason the run is not whole (``vsb run`` exits non-zero on any)."""
        lines = [f"skipped {m}: {why}" for m, why in self.skipped.items()]
        lines += [f"every request of {m} failed" for m in self.all_failed]
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        return lines


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
    try:
        if any(a.paid for a in active.values()):  # a prompt over a provider's limit: refused
            runs = {m: [c for c in config.conditions if c not in result.not_supported.get(m, [])]
                    for m in active}  # fmt: skip
            check_budgets(stories, [story_sha256(s) for s in stories], active, runs, config.seed)
        Path(config.out).mkdir(parents=True, exist_ok=True)
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
        # What the directory holds of other models stays (vsb.run.existing): checked first.
        earlier = read_earlier(run_dir)
        now = {
            "suite_sha256": sha256_file(suite_dir / "suite.json"), "seed": config.seed,
            "prompt_style": index.prompt_style, "conditions": list(config.conditions),
        }  # fmt: skip
        if config.add:
            check_addable(run_dir, earlier, config.models, now)
        _copy_suite(suite_dir, run_dir / "suite")
        records, faults = _generate(config, stories, active, result, progress)
        # A model skipped half-way (credential vanished, quota spent) is dropped entirely.
        records = [r for r in records if r["model"] not in result.skipped]
        faults = [f for f in faults if f["model"] not in result.skipped]
        models = [m for m in active if m not in result.skipped]
        same = earlier.same(now) is None
        keep = [m for m in earlier.listed() if config.add
                and m not in models and (same or m not in config.models)]  # fmt: skip
        every = earlier.kept_rows(earlier.records, keep) + records
        every.sort(key=lambda r: (r["model"], r["condition"], r["story_id"], r["scene"]))
        atomic_write_text(
            run_dir / "records.jsonl",
            "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in every),
        )
        kept_faults = earlier.kept_rows(earlier.faults, keep)
        if kept_faults or any(writes_oracle(active[m]) for m in models):
            write_faults(run_dir, kept_faults + faults)
        result.images = sum(r["error"] is None for r in records)
        result.calls = sum(not r["cache_hit"] for r in records)
        result.hits = sum(bool(r["cache_hit"]) for r in records)
        result.failures = sum(r["error"] is not None for r in records)
        result.refused = sum(bool(r.get("refused")) for r in records)
        result.faults = len(faults)
        result.prompts_cut = cut_counts(records)
        for r in records:
            if r["error"] is not None:
                n, first = result.errors.get(r["model"], (0, r["error"]))
                result.errors[r["model"]] = (n + 1, first)
                by = result.failed.setdefault(r["model"], {})
                by[r["condition"]] = by.get(r["condition"], 0) + 1
        result.all_failed = [
            m for m in models
            if any(r["model"] == m for r in records)
            and all(r["error"] is not None for r in records if r["model"] == m)
        ]  # fmt: skip
        if result.stopped is None:
            manifest = {
                "version": RUN_FORMAT_VERSION,
                "suite": suite_dir.resolve().name,
                "suite_sha256": now["suite_sha256"],
                "models": models,
                "conditions": list(config.conditions),
                "seed": config.seed,
                "prompt_style": index.prompt_style,
                "images": sum(r["error"] is None for r in every),
                "not_supported": {m: c for m, c in result.not_supported.items() if m in models},
                "oracle_models": [m for m in models if writes_oracle(active[m])],
            }
            atomic_write_json(run_dir / "manifest.json", earlier.merged_manifest(manifest, keep))


def plan_tasks(
    stories: Sequence[Story], adapters: Mapping[str, ImageModelAdapter], conditions: Sequence[str]
) -> list[Task]:
    """The run's tasks, longest stories first (so the tail is short): for a privileged
    adapter (simulators, stored samples: local work that gains nothing from smaller tasks)
    one per (story, model), every condition in turn; for any other, the previous-frame
    chains first (one per story and condition), then one task per scene of every other
    condition, and last the scene-1 tasks that repeat a request already planned (scene 1 has
    no context: it is one request under every condition), which then find it in the cache
    instead of holding a worker while it is in flight."""
    order = sorted(range(len(stories)), key=lambda i: -len(stories[i].scenes))
    whole: list[Task] = []
    chains: list[Task] = []
    singles: list[Task] = []
    repeats: list[Task] = []
    for i in order:
        for m, a in adapters.items():
            if a.privileged:
                whole.append(Task(i, m))
                continue
            skip = set(not_supported(a, conditions))
            first = True  # the model's first scene-1 request of this story
            for c in conditions:
                if c in skip:
                    continue
                if get_condition(c).reference_image:
                    chains.append(Task(i, m, c))
                else:
                    for s in stories[i].scenes:
                        task = Task(i, m, c, s.index)
                        (repeats if s.index == 1 and not first else singles).append(task)
                first = False
    return whole + chains + singles + repeats


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
    checks_before = cache.failed_checks()
    ledger = Ledger(run_dir / LEDGER_NAME)
    ledger.start_session(f"seed={config.seed} models={','.join(active)}")
    # The cache and the ledger open (a damaged one fails above, removing nothing): from
    # here the run directory is being rewritten, and incomplete until its manifest is.
    (run_dir / "manifest.json").unlink(missing_ok=True)
    # Calls a killed run made whose image reached the cache but whose row it never finished.
    result.reconciled = ledger.reconcile(cache.origins(k for _r, k, _a in ledger.unfinished()))
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
    n_cond = len(config.conditions)
    total = sum(
        1 if t.scene is not None
        else len(stories[t.story].scenes) * (n_cond if t.condition is None else 1)
        for t in tasks
    )  # fmt: skip
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
        result.failed_checks = cache.failed_checks() - checks_before
        cache.close()
    for m, why in st.blocked.items():
        result.skipped.setdefault(m, why)
    if st.halted:
        result.stopped = st.halted[0]
    return records, faults
