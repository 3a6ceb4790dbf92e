"""Paid calls done safely: retries with backoff, a spending budget, redaction of secrets.

The one retry layer of vsb: the VLM judge (``vsb.evaluators.vlm_judge``) and the image
providers (``vsb.run.runner`` around ``vsb.adapters.providers``) both go through it.

- ``RetryPolicy`` + ``call_with_retries(fn, policy, rng=…)``: ``fn`` raises
  ``RetryableError`` for a transient failure (a timeout, a dropped connection, HTTP
  408/409/425/429/5xx); the call is tried again after an exponential backoff that honours
  the server's ``Retry-After`` (never shorter), with jitter drawn from ``rng`` (a seeded
  numpy Generator: ``jitter_rng(key)`` gives one per request, so delays are reproducible).
  Any other exception ends the call at once, in particular:
  ``QuotaExceeded`` (a 429/402 that says the account's quota, credit or billing limit is
  spent: retrying cannot help, the provider is done for this run) and ``Refused`` (a content
  policy refusal: a result to record, not a failure to retry).
- ``classify(status, body)``: which of those an HTTP error answer is.
- ``Budget``: ``reserve(estimate)`` before a call, ``settle(reservation, actual)`` after;
  a call that could take spending past the limit is refused with ``BudgetExceeded``
  before it is made. Thread-safe (calls run concurrently).
- ``redact(text, *secrets)``: every secret replaced by ``***`` (errors quote response
  bodies, which a hostile or echoing server can fill with the request's key).
- ``is_loopback(url)``: whether a URL points at this machine (a local server needs no key).
"""

from __future__ import annotations

import email.utils
import hashlib
import ipaddress
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar
from urllib.parse import urlsplit

import numpy as np

from vsb.errors import AdapterError, VsbError

T = TypeVar("T")

#: HTTP statuses worth another try: timeouts, conflicts, rate limits, server errors
#: (proxies' 52x and "overloaded" 529 included; 501 Not Implemented is not transient).
RETRY_STATUSES: frozenset[int] = frozenset(
    {408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529}
)


class CallError(AdapterError):
    """A call that failed in a known way. ``billed``: whether it may have been charged (a
    timeout or a dropped connection: the provider may have done the work; an error answer
    or a request never sent: not)."""

    def __init__(self, message: str, *, billed: bool = False) -> None:
        super().__init__(message)
        self.billed = billed


class RetryableError(CallError):
    """A transient failure: the same call may succeed later (``retry_after`` in seconds)."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, billed: bool = False
    ) -> None:
        super().__init__(message, billed=billed)
        self.retry_after = retry_after


class QuotaExceeded(CallError):
    """The provider says the account's quota, credit or spending limit is used up (HTTP 402,
    or a 429 naming quota/billing): no retry, and no further request to that provider."""


class Refused(CallError):
    """The provider refused the request or withheld the image under its content policy: a
    recorded result (``refused``), never retried; ``billed`` when an image was generated
    and then filtered."""


#: Words of an error body that make a 429 (or 403) a spent quota rather than a rate limit.
_QUOTA = re.compile(
    r"insufficient_quota|quota|billing|credit|spend(ing)?[ _-]?limit|payment|balance",
    re.IGNORECASE,
)
#: ...unless it speaks of a rate (Google's per-minute "quota" 429s are rate limits).
_RATE = re.compile(
    r"rate[ _-]?limit|per[ _-]?(minute|min|second|sec|hour)\b|\b[rt]pm\b|\brps\b|"
    r"too many requests|try again",
    re.IGNORECASE,
)
#: Words of a 4xx body that make it a content-policy refusal.
_POLICY = re.compile(
    r"content[ _-]?polic|content[ _-]?filter|moderation|safety|nsfw|unsafe|"
    r"inappropriate|prohibited|responsible ai|flagged",
    re.IGNORECASE,
)

Outcome = Literal["retry", "quota", "refused", "error"]


def classify(status: int, body: str = "") -> Outcome:
    """What an HTTP error answer means: ``retry`` (transient), ``quota`` (spent; stop),
    ``refused`` (content policy) or ``error`` (anything else: not retried)."""
    if status == 402 or (status in (403, 429) and _QUOTA.search(body) and not _RATE.search(body)):
        return "quota"
    if status in RETRY_STATUSES:
        return "retry"
    if 400 <= status < 500 and _POLICY.search(body):
        return "refused"
    return "error"


class BudgetExceeded(VsbError):
    """The next call could take spending past ``--budget``; it was not made."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transient failure is retried."""

    max_attempts: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    #: Relative spread of a backoff when a jitter draw is given: ×[1 − jitter, 1 + jitter).
    jitter: float = 0.25

    def delay(self, attempt: int, retry_after: float | None, u: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based); ``u`` in [0, 1) is a
        jitter draw (None: none). A server's ``Retry-After`` is a floor."""
        backoff = self.base_delay_s * 2 ** (attempt - 1)
        if u is not None:
            backoff *= 1.0 + self.jitter * (2.0 * u - 1.0)
        backoff = min(self.max_delay_s, backoff)
        if retry_after is not None:
            return min(self.max_delay_s, max(backoff, retry_after))
        return backoff


def jitter_rng(token: str) -> np.random.Generator:
    """A Generator seeded by ``token`` (a request key): the same request, the same delays."""
    seed = int.from_bytes(hashlib.sha256(token.encode("utf-8")).digest()[:8], "big")
    return np.random.default_rng(seed)


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
    rng: np.random.Generator | None = None,
    jitter_key: str | None = None,
) -> tuple[T, int]:
    """``(fn(), attempts)``; ``RetryableError`` is retried up to ``policy.max_attempts``,
    with jitter drawn from ``rng`` when given, else from ``jitter_rng(jitter_key)`` (made
    at the first retry: most calls never retry, and a Generator costs ~40 µs to make)."""
    attempt = 1
    while True:
        try:
            return fn(), attempt
        except RetryableError as err:
            if attempt >= policy.max_attempts:
                raise AdapterError(f"{err.message} (gave up after {attempt} attempts)") from err
            if on_retry is not None:
                on_retry(attempt, err)
            if rng is None and jitter_key is not None:
                rng = jitter_rng(jitter_key)
            u = float(rng.random()) if rng is not None else None
            sleep(policy.delay(attempt, err.retry_after, u))
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
                    f"the next call has an unknown price, so --budget {self.limit:g} USD "
                    "cannot be kept (add its price to config/pricing.json or drop --budget)"
                )
            if self.spent + self.reserved + estimate > self.limit + 1e-12:
                raise BudgetExceeded(
                    f"stopped before a call that could exceed --budget {self.limit:g} USD "
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
    """``text`` with every non-empty secret replaced by ``***`` (also URL-encoded, as a query
    string or an echoed form would carry it)."""
    from urllib.parse import quote, quote_plus

    for s in secrets:
        if s:
            for form in {s, quote(s, safe=""), quote_plus(s)}:
                text = text.replace(form, "***")
    return text


def is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (a local server or judge needs no key)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
