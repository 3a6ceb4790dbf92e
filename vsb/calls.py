"""Paid calls done safely: retries with backoff, a spending budget, redaction of secrets.

Shared by everything that calls a remote service per item (the VLM judge today; provider
adapters can use the same pieces):

- ``RetryPolicy`` + ``call_with_retries(fn, policy)``: ``fn`` raises ``RetryableError``
  for a transient failure (HTTP 408/409/429/5xx, a dropped connection); the call is tried
  again after an exponential backoff that honours the server's ``Retry-After``. Any other
  exception ends the call at once.
- ``Budget``: ``reserve(estimate)`` before a call, ``settle(reservation, actual)`` after;
  a call that could take spending past the limit is refused with ``BudgetExceeded``
  before it is made. Thread-safe (calls run concurrently).
- ``redact(text, *secrets)``: every secret replaced by ``***`` (errors quote response
  bodies, which a hostile or echoing server can fill with the request's key).
"""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from vsb.errors import AdapterError, VsbError

T = TypeVar("T")

#: HTTP statuses worth another try: timeouts, conflicts, rate limits, server errors.
RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class RetryableError(AdapterError):
    """A transient failure: the same call may succeed later (``retry_after`` in seconds)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BudgetExceeded(VsbError):
    """The next call could take spending past ``--budget``; it was not made."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transient failure is retried."""

    max_attempts: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based)."""
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        if retry_after is not None:
            return min(self.max_delay_s, max(backoff, retry_after))
        return backoff


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` in seconds: delta-seconds or an HTTP date; None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, RetryableError], None] | None = None,
) -> tuple[T, int]:
    """``(fn(), attempts)``; ``RetryableError`` is retried up to ``policy.max_attempts``."""
    attempt = 1
    while True:
        try:
            return fn(), attempt
        except RetryableError as err:
            if attempt >= policy.max_attempts:
                raise AdapterError(f"{err.message} (gave up after {attempt} attempts)") from err
            if on_retry is not None:
                on_retry(attempt, err)
            sleep(policy.delay(attempt, err.retry_after))
            attempt += 1


class Budget:
    """A spending limit in USD shared by concurrent calls (``limit`` None = no limit)."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.spent = 0.0
        self.reserved = 0.0
        self._lock = threading.Lock()

    def reserve(self, estimate: float | None) -> float:
        """Hold ``estimate`` for one call; ``BudgetExceeded`` if it could pass the limit.
        With a limit, a call of unknown cost is refused (it could cost anything)."""
        with self._lock:
            if self.limit is None:
                return 0.0
            if estimate is None:
                raise BudgetExceeded(
                    f"the next call has an unknown price, so --budget {self.limit:.2f} USD "
                    "cannot be kept (add its price to config/pricing.json or drop --budget)"
                )
            if self.spent + self.reserved + estimate > self.limit + 1e-12:
                raise BudgetExceeded(
                    f"stopped before a call that could exceed --budget {self.limit:.2f} USD "
                    f"(spent {self.spent:.4f}, next call up to {estimate:.4f})"
                )
            self.reserved += estimate
            return estimate

    def settle(self, reservation: float, actual: float | None) -> None:
        """Release a reservation and add what the call really cost (its estimate if unknown)."""
        with self._lock:
            self.reserved -= reservation
            self.spent += reservation if actual is None else actual


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every non-empty secret replaced by ``***``."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text
