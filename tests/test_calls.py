"""``vsb.store.calls``: the one retry layer (backoff, seeded jitter, Retry-After, what is not
retried), the budget and redaction."""

from __future__ import annotations

from typing import Any

import pytest

from vsb.errors import AdapterError
from vsb.store.calls import (
    Budget,
    BudgetExceeded,
    CallError,
    QuotaExceeded,
    Refused,
    RetryableError,
    RetryPolicy,
    call_with_retries,
    classify,
    jitter_rng,
    parse_retry_after,
    redact,
)


def test_classify_error_answers() -> None:
    # transient: retried
    for status in (408, 409, 425, 429, 500, 502, 503, 504, 529):
        assert classify(status, "slow down") == "retry", status
    # a spent quota or billing limit is not a rate limit: stop, do not retry
    openai = '{"error": {"code": "insufficient_quota", "message": "You exceeded your current quota'
    assert classify(429, openai + ', please check your plan and billing details."}}') == "quota"
    assert classify(402, "Payment Required") == "quota"
    assert classify(403, "Your credit balance is too low") == "quota"
    # ... but a per-minute "quota" (Google's 429s) and OpenAI's rate limit are transient
    assert classify(429, "Quota exceeded for quota metric 'requests per minute'") == "retry"
    assert classify(429, "Rate limit reached on requests per min (RPM). Try again in 2s") == (
        "retry"
    )
    # content-policy refusals: a result, never retried
    assert classify(400, '{"code": "content_policy_violation"}') == "refused"
    assert classify(400, "rejected by the safety system") == "refused"
    assert classify(422, "NSFW content detected") == "refused"
    # anything else: an error, not retried
    assert classify(400, "invalid size") == "error"
    assert classify(401, "bad key") == "error"
    assert classify(501, "not implemented") == "error"


def test_backoff_doubles_honours_retry_after_and_caps() -> None:
    p = RetryPolicy(base_delay_s=1.0, max_delay_s=10.0)
    assert [p.delay(a, None) for a in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 8.0, 10.0]
    assert p.delay(1, 3.0) == 3.0  # Retry-After is a floor
    assert p.delay(3, 1.0) == 4.0  # ... never shortening the backoff
    assert p.delay(1, 99.0) == 10.0  # capped


def test_jitter_is_seeded_by_the_request_and_bounded() -> None:
    p = RetryPolicy(base_delay_s=1.0, max_delay_s=100.0, jitter=0.25)

    def delays(key: str) -> list[float]:
        waits: list[float] = []
        attempts = iter([RetryableError("x")] * 4 + [None])

        def fn() -> str:
            err = next(attempts)
            if err is not None:
                raise err
            return "ok"

        assert call_with_retries(fn, p, sleep=waits.append, rng=jitter_rng(key)) == ("ok", 5)
        return waits

    a, b = delays("key-a"), delays("key-b")
    assert a == delays("key-a")  # the same request waits the same
    assert a != b  # two requests do not retry in lockstep
    for waits in (a, b):
        for n, w in enumerate(waits, start=1):
            base = 2.0 ** (n - 1)
            assert 0.75 * base <= w < 1.25 * base
    # without a generator there is no jitter (the judge's exact delays)
    assert RetryPolicy().delay(2, None, None) == 2.0


@pytest.mark.parametrize(
    "err",
    [QuotaExceeded("quota"), Refused("no"), CallError("bad request"), AdapterError("other")],
)
def test_only_transient_failures_are_retried(err: AdapterError) -> None:
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        raise err

    with pytest.raises(type(err)):
        call_with_retries(fn, RetryPolicy(max_attempts=5), sleep=lambda s: None)
    assert len(calls) == 1


def test_gives_up_after_max_attempts() -> None:
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        raise RetryableError("HTTP 503", retry_after=0.0)

    with pytest.raises(AdapterError, match="gave up after 3 attempts"):
        call_with_retries(fn, RetryPolicy(max_attempts=3), sleep=lambda s: None)
    assert len(calls) == 3


def test_billed_flags() -> None:
    assert RetryableError("timed out", billed=True).billed
    assert not RetryableError("HTTP 429").billed
    assert not QuotaExceeded("quota").billed and Refused("filtered", billed=True).billed


def test_retry_after_forms() -> None:
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_budget_unknown_price_is_refused_with_a_limit() -> None:
    b = Budget(1.0)
    with pytest.raises(BudgetExceeded, match="unknown price"):
        b.reserve(None)
    assert Budget(None).reserve(None) == 0.0


def test_redact_plain_and_encoded_forms() -> None:
    key = "sk-canary/+=key"
    text = f"echo: {key} url: ?key=sk-canary%2F%2B%3Dkey form: sk-canary%2F%2B%3Dkey"
    out = redact(text, key, None, "")
    assert "canary" not in out and out.count("***") == 3


def test_the_judge_shares_the_layer_a_spent_quota_is_one_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import httpx

    from vsb.evaluators.vlm.transports import JudgeRequest, OpenAICompatibleVlm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    seen: list[httpx.Request] = []

    def handler(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        return httpx.Response(429, json={"error": {"code": "insufficient_quota",
                                                   "message": "check your billing"}})  # fmt: skip

    vlm = OpenAICompatibleVlm(httpx.Client(transport=httpx.MockTransport(handler)), model="m")
    req = JudgeRequest(b"png", "image/png", "system", "prompt", 10)
    with pytest.raises(QuotaExceeded):
        call_with_retries(lambda: vlm.ask(req), RetryPolicy(), sleep=lambda s: None)
    assert len(seen) == 1


def test_a_jitter_key_gives_the_delays_of_its_generator_and_none_without_a_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import vsb.store.calls as calls

    p = RetryPolicy(base_delay_s=1.0, max_delay_s=100.0, jitter=0.25)

    def waits_of(**how: Any) -> list[float]:
        waits: list[float] = []
        attempts = iter([RetryableError("x")] * 3 + [None])

        def fn() -> str:
            if (err := next(attempts)) is not None:
                raise err
            return "ok"

        call_with_retries(fn, p, sleep=waits.append, **how)
        return waits

    assert waits_of(jitter_key="k") == waits_of(rng=jitter_rng("k"))
    made: list[str] = []
    monkeypatch.setattr(calls, "jitter_rng", lambda key: made.append(key) or jitter_rng(key))
    assert call_with_retries(lambda: "ok", p, jitter_key="k") == ("ok", 1)
    assert made == []  # no retry: no generator made
    waits_of(jitter_key="k")
    assert made == ["k"]  # made once, at the first retry
