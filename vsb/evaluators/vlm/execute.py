"""The call machinery of the judge: cache, budget, concurrency, retries, ledger recorder,
fail-fast on a dead endpoint (``execute_calls``) and the dry run (``plan_cost``).

Only replies whose every answer parses are cached; a budget stop lets running calls finish,
then raises ``BudgetExceeded``; ``UNREACHABLE_AFTER`` connection failures in a row raise
``JudgeUnreachable``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from vsb.errors import AdapterError, RunError
from vsb.evaluators.vlm.answers import SYSTEM_PROMPT_SINGLE, Answer, parse_answer, parse_batch
from vsb.evaluators.vlm.plan import JudgeCall, estimate_cost
from vsb.evaluators.vlm.store import JudgeCache, JudgePricing
from vsb.evaluators.vlm.transports import (
    JudgeReply,
    JudgeRequest,
    VlmTransport,
)
from vsb.evaluators.vlm.wire import Unreachable
from vsb.store.calls import Budget, BudgetExceeded, RetryPolicy
from vsb.store.paid import LedgerRows, paid_attempts

#: Connection failures in a row that make the judge's endpoint count as down.
UNREACHABLE_AFTER = 5


@dataclass(frozen=True)
class JudgeOptions:
    """How the judge calls: batching, concurrency, budget, retries, cache, prices."""

    batch: int = 0
    concurrency: int = 4
    budget_usd: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache_dir: Path | None = Path(".vsb-cache")
    pricing: JudgePricing | None = None
    sleep: Callable[[float], None] = time.sleep
    #: Connection failures in a row (no server accepted a connection, no answer came in
    #: between) after which the pass stops with ``JudgeUnreachable``.
    unreachable_after: int = UNREACHABLE_AFTER


@dataclass
class CallOutcome:
    """What became of one call (``reply`` None: it failed or was not made). A repeat of
    another call of the same pass (``duplicate``) reuses its answer as a free cache hit."""

    call: JudgeCall
    reply: JudgeReply | None = None
    cache_hit: bool = False
    latency_s: float = 0.0
    cost_usd: float | None = None
    attempts: int = 0
    error: str | None = None
    duplicate: bool = False


def media_type(data: bytes) -> str:
    """The image's MIME type from its magic bytes (PNG unless recognisably otherwise)."""
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


def _actual_cost(
    reply: JudgeReply, call: JudgeCall, pricing: JudgePricing | None, judge_model: str
) -> float | None:
    price = pricing.price(judge_model) if pricing else None
    if price is None:
        return None
    if reply.input_tokens is None or reply.output_tokens is None:
        return estimate_cost(call, pricing, judge_model)
    return price.cost(reply.input_tokens, reply.output_tokens)


@dataclass(frozen=True)
class CostPlan:
    """What a judge pass would cost: calls in all, already cached, repeats of another call
    of the same pass (the same image and questions in two cells: sent once), to make, and
    the estimate. ``calls == cached + duplicates + to_make``."""

    calls: int
    cached: int
    to_make: int
    estimated_usd: float | None
    per_cell: dict[tuple[str, str], int]
    duplicates: int = 0


def _cached(cache: JudgeCache | None, call: JudgeCall) -> JudgeReply | None:
    """The cached reply of a call, if one parses (an unparsable one is asked again)."""
    if cache is None:
        return None
    hit = cache.lookup(call.key)
    return hit if hit is not None and unparsed(call, hit) == 0 else None


def plan_cost(
    calls: Sequence[JudgeCall], transport: VlmTransport, options: JudgeOptions
) -> CostPlan:
    """The dry run: which calls are not cached yet and what they would cost."""
    cache = JudgeCache(options.cache_dir) if options.cache_dir and transport.paid else None
    unique = list({c.key: c for c in calls}.values())
    todo = [c for c in unique if _cached(cache, c) is None]
    costs = [estimate_cost(c, options.pricing, transport.judge_model) for c in todo]
    total = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    if not transport.paid:
        total = 0.0
    per_cell: dict[tuple[str, str], int] = {}
    for c in todo:
        per_cell[(c.model, c.condition)] = per_cell.get((c.model, c.condition), 0) + 1
    dupes = len(calls) - len(unique)
    return CostPlan(len(calls), len(unique) - len(todo), len(todo), total, per_cell, dupes)


def _request(call: JudgeCall) -> JudgeRequest:
    if not call.image_path:  # a text-only call
        return JudgeRequest(b"", "text/plain", call.system, call.prompt, call.max_tokens)
    data = Path(call.image_path).read_bytes()
    first = data
    extra: tuple[bytes, ...] = ()
    if call.prev_image_path is not None:
        first, extra = Path(call.prev_image_path).read_bytes(), (data,)
    extra += tuple(Path(p).read_bytes() for p in call.more_image_paths)
    return JudgeRequest(
        image=first,
        media_type=media_type(first),
        system=call.system,
        prompt=call.prompt,
        max_tokens=call.max_tokens,
        expected=tuple(q.expect for q in call.questions),
        extra_images=extra,
    )


class CallRecorder(Protocol):
    """Where made calls are recorded: ``rows`` gives the ledger rows of one call's attempts
    (each begun before it is sent, so a killed run still counts a call that may have been
    billed; ``vsb.store.paid.LedgerRows``), ``reconcile`` finishes the rows a killed pass
    left whose answer reached the cache."""

    def rows(self, call: JudgeCall, estimate_usd: float | None, priced: bool) -> LedgerRows: ...
    def reconcile(self, cache: JudgeCache) -> int: ...


@dataclass
class _Attempts:
    """A call's failed attempts: their rows finished, their budget settled, their cost
    summed (``vsb.store.paid.AttemptRows`` around the ledger's)."""

    rows: LedgerRows | None
    budget: Budget
    held: list[float]
    estimate: float | None
    priced: bool
    n: int = 0
    cost: float | None = 0.0

    def begin(self, attempt: str) -> int:
        self.n += 1
        return self.rows.begin(attempt) if self.rows is not None else 0

    def failed(self, row: int, err: BaseException, latency_s: float) -> None:
        # An error answer or a request never accepted is not billed: a known price makes it
        # cost 0; one that may have been billed (a timeout) its estimate.
        billed = getattr(err, "billed", False)
        cost = self.estimate if billed else (0.0 if self.priced else None)
        if self.rows is not None:
            self.rows.failed(row, err, latency_s)
        self.budget.settle(self.held[0], cost)
        self.cost = None if cost is None or self.cost is None else self.cost + cost


class JudgeUnreachable(AdapterError):
    """No server answered at the judge's endpoint: several connections in a row failed."""


class _Breaker:
    """Counts connection failures in a row across the calls of a pass (any answer from the
    server resets it); at ``limit`` the endpoint counts as down."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.in_a_row = 0
        self.tripped: Unreachable | None = None
        self._lock = threading.Lock()

    def guard(self, ask: Callable[[], JudgeReply]) -> Callable[[], JudgeReply]:
        def guarded() -> JudgeReply:
            if self.tripped is not None:
                raise JudgeUnreachable(self.tripped.message)
            try:
                reply = ask()
            except Unreachable as err:
                with self._lock:
                    self.in_a_row += 1
                    if self.in_a_row >= self.limit and self.tripped is None:
                        self.tripped = err
                if self.tripped is not None:
                    raise JudgeUnreachable(err.message) from None
                raise
            except AdapterError:  # the server answered (429, 5xx…): it is there
                with self._lock:
                    self.in_a_row = 0
                raise
            with self._lock:
                self.in_a_row = 0
            return reply

        return guarded


def execute_calls(
    calls: Sequence[JudgeCall],
    transport: VlmTransport,
    options: JudgeOptions,
    *,
    on_done: Callable[[CallOutcome], None] | None = None,
    recorder: CallRecorder | None = None,
) -> list[CallOutcome]:
    """Make every call (cached ones cost nothing), ``options.concurrency`` at a time.
    ``recorder`` records each call made, before and after it; ``on_done`` runs in the calling
    thread as each call finishes (progress, rows for cache hits). Only replies that parse are
    cached (a cached reply that does not parse is asked again). A budget stop lets running
    calls finish, then raises ``BudgetExceeded`` counting what they spent; connection
    failures in a row (``options.unreachable_after``, no answer in between) stop the pass
    the same way with ``JudgeUnreachable`` naming the endpoint."""
    cache = JudgeCache(options.cache_dir) if options.cache_dir and transport.paid else None
    budget = Budget(options.budget_usd if transport.paid else None)
    breaker = _Breaker(options.unreachable_after)
    stop = threading.Event()
    stopped: list[BudgetExceeded] = []
    judge = transport.judge_model
    price = options.pricing.price(judge) if options.pricing else None
    if recorder is not None and cache is not None:
        recorder.reconcile(cache)  # rows a killed pass left whose answer was stored

    def one(call: JudgeCall) -> CallOutcome:
        out = CallOutcome(call)
        if (hit := _cached(cache, call)) is not None:
            out.reply, out.cache_hit, out.cost_usd = hit, True, 0.0
            return out
        if stop.is_set():
            out.error = "not made: the pass was stopped"
            return out
        estimate = estimate_cost(call, options.pricing, judge)
        held = [0.0]

        def before() -> None:  # a reservation per attempt: each may be billed
            held[0] = budget.reserve(estimate)

        rows = recorder.rows(call, estimate, price is not None) if recorder is not None else None
        attempts = _Attempts(rows, budget, held, estimate, price is not None)
        request = _request(call)
        t0 = time.perf_counter()
        try:
            paid = paid_attempts(
                breaker.guard(lambda: transport.ask(request)), attempts, options.retry,
                before=before, sleep=options.sleep,
                jitter_key=call.key,  # seeded jitter: calls do not retry in lockstep
                what=f"{judge} ({_where(call)})",
            )  # fmt: skip
        except BudgetExceeded as err:
            stop.set()
            stopped.append(err)
            out.error, out.attempts = "not made: the budget was reached", attempts.n
            out.cost_usd = attempts.cost
            return out
        except AdapterError as err:
            if isinstance(err, JudgeUnreachable):
                stop.set()
            out.error, out.latency_s = err.message, time.perf_counter() - t0
            out.cost_usd, out.attempts = attempts.cost, attempts.n
            return out
        out.latency_s, out.reply, out.attempts = paid.latency_s, paid.value, paid.attempts
        cost = _actual_cost(paid.value, call, options.pricing, judge)
        budget.settle(held[0], cost)
        # what the call cost, its failed attempts included
        out.cost_usd = None if cost is None or attempts.cost is None else cost + attempts.cost
        rejected = unparsed(call, paid.value) != 0
        if cache is not None and not rejected:  # a rejected answer is never stored
            cache.put(call.key, judge, paid.value, attempt=paid.attempt)
        if rows is not None:  # finished once the answer is stored
            rows.done(
                paid.row, latency_s=paid.latency_s, cost_usd=cost,
                error="rejected: the answer does not parse" if rejected else None,
                input_tokens=paid.value.input_tokens, output_tokens=paid.value.output_tokens,
            )  # fmt: skip
        return out

    # Identical calls (the same image and questions in two cells) are made once.
    first: dict[str, JudgeCall] = {}
    for c in calls:
        first.setdefault(c.key, c)
    made: dict[str, CallOutcome] = {}
    outcomes: list[CallOutcome] = []
    with ExitStack() as stack:
        if options.concurrency > 1:
            pool = stack.enter_context(ThreadPoolExecutor(max_workers=options.concurrency))
            finished = pool.map(one, first.values())
        else:  # one at a time: in this thread (a pool of one only adds a hand-off per call)
            finished = map(one, first.values())
        for out in finished:
            made[out.call.key] = out
            if on_done is not None:
                on_done(out)
    for c in calls:
        base = made[c.key]
        if base.call is c:
            outcomes.append(base)
            continue
        # a repeat: the answer is reused, as a cache hit that costs nothing
        out = CallOutcome(c, base.reply, base.reply is not None, error=base.error, duplicate=True)
        out.cost_usd = 0.0 if base.reply is not None else None
        outcomes.append(out)
        if on_done is not None:
            on_done(out)
    n_made = sum(o.reply is not None and not o.cache_hit for o in outcomes)
    missing = sum(o.reply is None for o in outcomes)
    if breaker.tripped is not None:
        raise JudgeUnreachable(
            f"no judge server answered at {breaker.tripped.endpoint} "
            f"({breaker.in_a_row} connections in a row failed: {_cause(breaker.tripped)}); "
            f"is it running, and is --base-url right? {n_made} answers received are cached"
        )
    if stopped:
        # Counted once the calls in flight at the stop have finished and settled.
        first_stop = stopped[0].message
        head = (
            first_stop
            if budget.limit is None or "unknown price" in first_stop
            else f"stopped before a call that could exceed --budget {budget.limit:g} USD"
        )
        raise BudgetExceeded(
            f"{head}; spent {budget.spent:.4f} USD on {n_made} calls made and cached, "
            f"{missing} not made (rerun with a larger --budget: cached calls cost nothing)"
        )
    return outcomes


def _where(call: JudgeCall) -> str:
    """What a call is about, for "waiting for …" (a story's scene, or a story read whole)."""
    if call.scene:
        return f"story {call.story_id}, scene {call.scene}, {call.model}, {call.condition}"
    return f"{call.evaluator} of {call.story_id}"


def _cause(err: Unreachable) -> str:
    """The transport's reason, without the URL already named (``…failed: REASON``)."""
    return err.message.rsplit(" failed: ", 1)[-1]


def call_answers(call: JudgeCall, reply: JudgeReply) -> list[Answer | None]:
    """The parsed answer to each question of a call (None: a parse failure)."""
    single = len(call.questions) == 1 and call.system == SYSTEM_PROMPT_SINGLE
    return list(_parsed(reply.text, len(call.questions), single))


@lru_cache(maxsize=4096)
def _parsed(text: str, n: int, single: bool) -> tuple[Answer | None, ...]:
    """``parse_answer`` or ``parse_batch`` of a reply, kept for the next call with the same
    text: a reply is parsed when it arrives and again for its rows, and a judge that answers
    alike (the same words to the same number of questions) is parsed once."""
    return (parse_answer(text),) if single else tuple(parse_batch(text, n))


def unparsed(call: JudgeCall, reply: JudgeReply) -> int:
    """How many of a call's questions the reply leaves without a parsable answer (a
    text-only call with ``accepts``: 0 if it accepts the reply, else 1)."""
    if call.accepts is not None:
        return 0 if call.accepts(reply.text) else 1
    return sum(a is None for a in call_answers(call, reply))


def failed_calls_error(outcomes: Sequence[CallOutcome]) -> RunError | None:
    """A one-line error when some calls failed (the others are cached), else None."""
    failed = [o for o in outcomes if o.reply is None]
    if not failed:
        return None
    return RunError(
        f"{len(failed)} of {len(outcomes)} judge calls failed (last: {failed[-1].error}); "
        "the answers received are cached: rerun to retry only the failed calls"
    )
