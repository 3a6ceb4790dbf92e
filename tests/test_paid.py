"""``vsb.store.paid``: a ledger row before every attempt (retries included), the successful
attempt's row left for the caller to finish after storing, and what a command waits for."""

from __future__ import annotations

import threading
import time

import pytest

from vsb.store.calls import RetryableError, RetryPolicy
from vsb.store.paid import InFlight, paid_attempts, watch, watch_every


class Rows:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def begin(self, attempt: str) -> int:
        self.events.append(f"begin {attempt[:4]}")
        return len(self.events)

    def failed(self, row: int, err: BaseException, latency_s: float) -> None:
        self.events.append(f"failed {row}")


def test_every_attempt_is_a_row_before_it_is_sent() -> None:
    events: list[str] = []
    tries: list[str | RetryableError] = [
        RetryableError("503"), RetryableError("timed out", billed=True), "answer"
    ]  # fmt: skip

    def send() -> str:
        assert events[-1].startswith("begin ")  # its row is there before it leaves
        events.append("send")
        got = tries.pop(0)
        if isinstance(got, RetryableError):
            raise got
        return got

    paid = paid_attempts(send, Rows(events), RetryPolicy(base_delay_s=0.0), sleep=lambda s: None)
    assert paid.value == "answer" and paid.attempts == 3
    assert [e.split()[0] for e in events] == [
        "begin", "send", "failed", "begin", "send", "failed", "begin", "send"
    ]  # fmt: skip
    assert paid.row == 7 and events[-2] == f"begin {paid.attempt[:4]}"  # left unfinished


def test_before_may_stop_an_attempt_before_its_row() -> None:
    events: list[str] = []

    def stop() -> None:
        raise KeyError("budget")

    with pytest.raises(KeyError):
        paid_attempts(lambda: "x", Rows(events), RetryPolicy(), before=stop)
    assert events == []


def test_a_call_waited_for_is_named() -> None:
    flight, lines = InFlight(), list[str]()
    release = threading.Event()

    def slow() -> str:
        release.wait(5)
        return "late"

    with watch(lines.append, every=0.2, flight=flight):
        worker = threading.Thread(
            target=paid_attempts, args=(slow, None, RetryPolicy()),
            kwargs={"what": "openai:x (story s, scene 2, independent)", "flight": flight},
        )  # fmt: skip
        worker.start()
        deadline = time.monotonic() + 5
        while not lines and time.monotonic() < deadline:
            time.sleep(0.05)
        release.set()
        worker.join()
    assert lines and lines[0].startswith("waiting for openai:x (story s, scene 2, independent): ")
    assert lines[0].endswith(" s")
    assert flight.longest() is None  # nothing in flight once it came


def test_watch_every_follows_a_short_timeout() -> None:
    assert watch_every(None) == 15.0 and watch_every(90) == 15.0
    assert watch_every(6) == 2.0 and watch_every(0.5) == 1.0
