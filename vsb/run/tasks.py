"""What one task of ``vsb run`` does: its scene loop, with the cache, the ledger and retries.

``_Shared`` is the run's state every task reads (``vsb.run.executors.RunState``: adapters,
per-model concurrency, ``run_task``); ``_run_scenes`` builds a task's requests in order and
takes each from the generation cache or, on a miss, from ``_call``: the adapter called
through ``vsb.store.paid.paid_attempts`` — every attempt written to the ledger before it is
sent, a failed one finished after it, a successful one finished only once the cache has
stored its image (``_cached_call``), the budget reserved before a paid attempt and settled
after —
and one record per image (``error`` and ``refused`` for images that did not come; the
prompt's fit to the model's budget, ``vsb.run.budgets``). A
refusal is recorded in the ledger with ``REFUSED_PREFIX`` so a rerun of the directory reuses
it; a spent quota blocks the model; a budget stop halts every task at its next request.
``vsb.run.runner`` cuts the run into tasks and writes the run directory; ``vsb.run.executors_ray``
runs this same loop on its workers.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
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
from vsb.adapters.oracle import fault_row
from vsb.conditions import get_condition
from vsb.errors import AdapterError, CredentialMissing
from vsb.fsio import atomic_write_bytes, canonical_json, sha256_hex
from vsb.run.budgets import fit_of, record_fields
from vsb.run.executors import Task, TaskOutput
from vsb.store.cache import GenerationCache
from vsb.store.calls import (
    Budget,
    BudgetExceeded,
    CallError,
    QuotaExceeded,
    Refused,
    RetryPolicy,
)
from vsb.store.ledger import Ledger, LedgerEntry, Pricing, request_cost
from vsb.store.paid import paid_attempts
from vsb.story.models import Story

#: Ledger errors of refusals start so (a rerun of the directory does not send them again).
REFUSED_PREFIX = "refused: "


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
        """Do ``task`` in this process and thread (``vsb.run.executors.RunState``)."""
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
    stored: list[_Unfinished],
) -> GenerationResult:
    """One request, retried on transient failures (``vsb.store.paid``); every attempt recorded in
    the ledger before it is sent (``begin``, committed). A failed attempt is finished at once;
    the successful one is appended to ``stored`` unfinished, with its attempt id: the caller
    finishes it only after the cache has committed the image (an image is paid for once:
    a row left ``started`` whose attempt id the cache holds is reconciled by the next run).
    ``where``: key, condition, story id, scene."""
    key, cname, story_id, scene = where
    price_key = getattr(adapter, "pricing_key", req.model)
    price = st.pricing.price(price_key)
    held = [0.0]  # this attempt's budget reservation

    def before() -> None:
        if st.halt.is_set() or req.model in st.blocked:
            raise _Halted
        held[0] = 0.0
        if adapter.paid:
            try:
                held[0] = st.budget.reserve(price)
            except BudgetExceeded as err:
                st.stop(err.message)
                raise _Halted from None

    def nap(seconds: float) -> None:
        st.halt.wait(seconds)  # a stop wakes it (the next attempt then ends the call)

    rows = _Rows(st, adapter, req, where, price, held)
    paid = paid_attempts(
        lambda: adapter.generate(req), rows, st.retry, before=before, sleep=nap, jitter_key=key,
        what=f"{req.model} (story {story_id}, scene {scene}, {cname})",
    )  # fmt: skip
    result = paid.value
    cost = request_cost(st.pricing, price_key, hit=False, success=True, reported=result.cost_usd)
    st.budget.settle(held[0], cost)
    stored.append(_Unfinished(paid.row, paid.attempt, paid.latency_s, cost))
    return result


@dataclass(frozen=True)
class _Rows:
    """The ledger rows of one request's attempts (``vsb.store.paid.AttemptRows``)."""

    st: _Shared
    adapter: ImageModelAdapter
    req: GenerationRequest
    where: tuple[str, str, str, int]
    price: float | None
    held: list[float]

    def begin(self, attempt: str) -> int:
        key, cname, story_id, scene = self.where
        return self.st.ledger.begin(
            key, self.req.model, condition=cname, story_id=story_id, scene=scene,
            cost_usd=self.price, attempt=attempt,
        )  # fmt: skip

    def failed(self, row: int, err: BaseException, latency_s: float) -> None:
        st = self.st
        cost = _failure_cost(err, self.adapter, self.price)
        text = str(err) or type(err).__name__
        st.ledger.finish(
            row, latency_s=latency_s, success=False, cost_usd=cost,
            error=REFUSED_PREFIX + text if isinstance(err, Refused) else text,
        )  # fmt: skip
        st.budget.settle(self.held[0], cost)
        if isinstance(err, QuotaExceeded):
            st.blocked.setdefault(self.req.model, f"quota exhausted: {err.message}")


@dataclass(frozen=True)
class _Unfinished:
    """A call that succeeded, to be finished in the ledger once the cache holds its image."""

    row: int
    attempt: str
    latency_s: float
    cost_usd: float | None


def _cached_call(
    st: _Shared,
    adapter: ImageModelAdapter,
    req: GenerationRequest,
    where: tuple[str, str, str, int],
) -> tuple[GenerationResult, bool]:
    """``(result, hit)`` for one request: from the cache, or called and stored. The ledger
    row of the call that produced the image is finished only once the cache has committed
    it, so a call finished in the ledger always has its image in the cache."""
    stored: list[_Unfinished] = []

    def origin() -> str | None:
        return stored[-1].attempt if stored else None

    error: str | None = None
    try:
        return st.cache.get(where[0], partial(_call, st, adapter, req, where, stored), origin)
    except BaseException as err:
        # the call was made, its image not stored (a rerun makes it again): say so
        error = f"the image could not be stored: {str(err) or type(err).__name__}"
        raise
    finally:
        for u in stored:  # after the cache's commit
            st.ledger.finish(
                u.row, latency_s=u.latency_s, success=True, cost_usd=u.cost_usd, error=error
            )


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
                model, adapter.version, scene.text, st.seed, ctx,
                adapter.request_parameters(params, priv), refs, priv,
                story_id=story.id, scene=k, condition=cname,
            )  # fmt: skip
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
                    result, hit = _cached_call(st, adapter, req, (key, cname, story.id, k))
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
                sha = sha256_hex(result.png)
                where = getattr(st.cache, "object_path", None)  # not a Ray worker's cache
                _place_image(st.run_dir / rel, result.png, where(sha) if where else None)
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
                    **record_fields(fit_of(adapter, req, result)),
                }
            )  # fmt: skip
            if hit:
                hits.append(LedgerEntry(key, model, latency, True, True, 0.0, cname, story.id, k))


def _write_image(path: Path, data: bytes) -> None:
    """Atomically write an image unless the same bytes are already there."""
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    atomic_write_bytes(path, data)


def _place_image(path: Path, data: bytes, cached: Path | None) -> None:
    """Put an image at ``path`` unless the same bytes are already there (a resumed run): a
    hard link to ``cached``, the cache's copy of the same bytes (written once, never
    modified in place), where the filesystem allows; else an atomic write. A new image is
    linked at once (its folder made when missing): no read, no folder check before it."""
    if cached is not None and _link_new(cached, path):
        return
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    if cached is not None:
        try:
            path.unlink(missing_ok=True)
            os.link(cached, path)
            return
        except OSError:  # no cached copy, another device, no link support
            pass
    atomic_write_bytes(path, data)


def _link_new(src: Path, dest: Path) -> bool:
    """Hard-link ``dest`` to ``src`` where nothing is at ``dest`` yet, making its folder when
    missing; False when something is there, ``src`` is missing or links cannot be made."""
    for _ in range(2):
        try:
            os.link(src, dest)
            return True
        except FileNotFoundError:
            if dest.parent.is_dir():
                return False  # no cached copy
            dest.parent.mkdir(parents=True, exist_ok=True)
        except OSError:  # something there already, another device, no link support
            return False
    return False
