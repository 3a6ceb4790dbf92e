"""One way to make a paid call: the image providers (``vsb run``), the VLM judge
(``vsb evaluate``) and the narrative reader (``vsb suite import``) all go through here
(../shared/design/paid-calls.md, docs/CRASH_SAFETY.md).

``paid_attempts(send, rows, policy, …)`` makes one call, retried on transient failures
(``vsb.store.calls.call_with_retries``). Every attempt, retries included, is a ledger row
*before* it is sent (``rows.begin(attempt_id)``, committed); a failed attempt is finished at
once (``rows.failed``); the successful one comes back unfinished (``Paid``: its row and
attempt id), for the caller to store its value (with the attempt id) and only then finish the
row. So each path keeps the same order, row begun -> request -> cached -> row finished, and
the same reconciliation on rerun: a row left ``started`` whose attempt id the store holds was
paid once and is marked ``reconciled`` (``vsb.store.ledger.Ledger.reconcile``).

The callers: ``vsb.run.tasks._call`` (its value stored by the generation cache's ``get``, then
the row finished in ``_cached_call``) and ``vsb.evaluators.vlm.execute.execute_calls`` (the
judge's and the importer's: the answer validated, a rejected one returned for the report and
never stored, a used one stored in the answer cache with its attempt id, then ``LedgerRows.
done``). ``LedgerRows`` is the rows of one call in ``vsb.store.ledger.Ledger``; ``reconcile``
finishes, on rerun, the rows whose answer a store holds under their attempt id.

``IN_FLIGHT`` holds the calls being waited for, so a command can say what it waits for
(``watch``: "waiting for openai:x (story park, scene 2): 45 s").
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from vsb.store.calls import RetryPolicy, call_with_retries

T = TypeVar("T")


class AttemptRows(Protocol):
    """Where the attempts of one call are recorded (the ledger)."""

    def begin(self, attempt: str) -> int:
        """A row for an attempt about to be sent, committed before it returns."""
        ...

    def failed(self, row: int, err: BaseException, latency_s: float) -> None:
        """Finish the row of an attempt that failed."""
        ...


@dataclass(frozen=True)
class Paid(Generic[T]):
    """A successful attempt, its ledger row still unfinished."""

    value: T
    row: int
    attempt: str
    latency_s: float
    attempts: int = 1


def new_attempt_id() -> str:
    """A fresh attempt id: names one ledger row, and the stored value that attempt paid for
    (an identifier, not a random choice: nothing computed depends on it)."""
    return uuid.uuid4().hex


class InFlight:
    """Calls being waited for (thread-safe): what each is, and since when."""

    def __init__(self) -> None:
        self._calls: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._n = 0

    @contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        with self._lock:
            self._n += 1
            token = self._n
            self._calls[token] = (what, time.monotonic())
        try:
            yield
        finally:
            with self._lock:
                self._calls.pop(token, None)

    def longest(self) -> tuple[str, float, int] | None:
        """``(what, seconds, calls in flight)`` of the call waited for longest, or None."""
        with self._lock:
            if not self._calls:
                return None
            what, t0 = min(self._calls.values(), key=lambda c: c[1])
            return what, time.monotonic() - t0, len(self._calls)


#: The calls of this process being waited for.
IN_FLIGHT = InFlight()


def waiting_line(what: str, seconds: float, n: int) -> str:
    """``waiting for WHAT: 45 s`` (and how many other calls are in flight)."""
    more = f" (and {n - 1} other call{'s' * (n > 2)} in flight)" if n > 1 else ""
    return f"waiting for {what}: {seconds:.0f} s{more}"


@contextmanager
def watch(
    report: Callable[[str], None], *, every: float = 15.0, flight: InFlight = IN_FLIGHT
) -> Iterator[None]:
    """While inside, ``report`` a line every ``every`` seconds when a call has been waited
    for that long ("waiting for …: 45 s"), from a daemon thread."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            found = flight.longest()
            if found is not None and found[1] >= every:
                report(waiting_line(*found))

    thread = threading.Thread(target=loop, name="vsb-waiting", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1.0)


def watch_every(timeout_s: float | None) -> float:
    """How often a command says what it waits for: every 15 s, sooner under a short
    ``--timeout`` (a third of it, at least 1 s)."""
    if timeout_s is None:
        return 15.0
    return max(1.0, min(15.0, timeout_s / 3.0))


def paid_attempts(
    send: Callable[[], T],
    rows: AttemptRows | None,
    policy: RetryPolicy,
    *,
    before: Callable[[], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    jitter_key: str | None = None,
    what: str = "a paid call",
    flight: InFlight = IN_FLIGHT,
) -> Paid[T]:
    """One call, retried on transient failures; a ledger row for every attempt before it is
    sent (``rows`` None: none kept). ``before`` runs before each attempt, before its row
    (a budget reservation, a stop check: it may raise to make no attempt). The successful
    attempt's row is left for the caller to finish once its value is stored."""

    def once() -> Paid[T]:
        if before is not None:
            before()
        attempt = new_attempt_id()
        row = rows.begin(attempt) if rows is not None else 0
        t0 = time.perf_counter()
        try:
            with flight.waiting(what):
                value = send()
        except BaseException as err:
            if rows is not None:
                rows.failed(row, err, time.perf_counter() - t0)
            raise
        return Paid(value, row, attempt, time.perf_counter() - t0)

    paid, n = call_with_retries(once, policy, sleep=sleep, jitter_key=jitter_key)
    return Paid(paid.value, paid.row, paid.attempt, paid.latency_s, n)


class LedgerRows:
    """The ledger rows of one call's attempts (``ledger``: ``vsb.store.ledger.Ledger``):
    each begun with ``estimate`` as its cost until it finishes; a failed attempt costs
    ``estimate`` when it may have been billed (a timeout, a dropped connection), else 0 when
    the price is known (an error answer is not billed), else unknown."""

    def __init__(
        self,
        ledger: Any,
        key: str,
        model: str,
        *,
        condition: str | None = None,
        story_id: str | None = None,
        scene: int | None = None,
        estimate: float | None = None,
        priced: bool = True,
    ) -> None:
        self.ledger, self.key, self.model = ledger, key, model
        self.where = (condition, story_id, scene)
        self.estimate, self.priced = estimate, priced

    def begin(self, attempt: str) -> int:
        c, s, k = self.where
        return int(
            self.ledger.begin(
                self.key, self.model, condition=c, story_id=s, scene=k,
                cost_usd=self.estimate, attempt=attempt,
            )
        )  # fmt: skip

    def failure_cost(self, err: BaseException) -> float | None:
        """What a failed attempt is taken to cost: its estimate when it may have been
        billed, else 0 (unknown when the price is)."""
        if getattr(err, "billed", False):
            return self.estimate
        return 0.0 if self.priced else None

    def failed(self, row: int, err: BaseException, latency_s: float) -> None:
        self.ledger.finish(
            row, latency_s=latency_s, success=False, cost_usd=self.failure_cost(err),
            error=str(err) or type(err).__name__,
        )  # fmt: skip

    def done(
        self,
        row: int,
        *,
        latency_s: float,
        cost_usd: float | None,
        error: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> None:
        """Finish the successful attempt's row (after its value was stored)."""
        self.ledger.finish(
            row, latency_s=latency_s, success=True, cost_usd=cost_usd, error=error,
            input_tokens=input_tokens, output_tokens=output_tokens,
        )  # fmt: skip


def reconcile(ledger: Any, stored: Callable[[list[str]], dict[str, str]]) -> int:
    """Finish the rows of calls begun and never finished whose value the store holds under
    the same attempt id (``stored(keys) -> {key: attempt id}``): paid once, not again. The
    number reconciled."""
    unfinished = ledger.unfinished()
    if not unfinished:
        return 0
    held = stored(sorted({k for _r, k, _a in unfinished}))
    return int(ledger.reconcile({k: (a, None) for k, a in held.items()}))
