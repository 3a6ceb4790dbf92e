"""The VLM judge: question wording, batch parsing, transports (mocked HTTP), calls, cost."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from eval_helpers import character, first_state, world
from hypothesis import given
from hypothesis import strategies as st

from vsb.errors import AdapterError, CredentialMissing, InputError
from vsb.evaluators.registry import evaluator_info
from vsb.evaluators.vlm.questions import Question, question_for
from vsb.evaluators.vlm.store import JudgeCache, JudgePrice, JudgePricing, call_key
from vsb.evaluators.vlm.transports import (
    AnthropicVlm,
    JudgeReply,
    JudgeRequest,
    MockVlm,
    OpenAICompatibleVlm,
    ReplayVlm,
    build_transport,
)
from vsb.evaluators.vlm_judge import (
    SYSTEM_PROMPT,
    JudgeCall,
    JudgeOptions,
    estimate_cost,
    execute_calls,
    outcome_results,
    parse_answer,
    parse_batch,
    plan_cost,
    scene_prompt,
)
from vsb.store.calls import (
    Budget,
    BudgetExceeded,
    RetryableError,
    RetryPolicy,
    call_with_retries,
    is_loopback,
)
from vsb.story.models import Requirement, SceneState, Story

PNG = b"\x89PNG fake image bytes"


@pytest.fixture(scope="module")
def state() -> SceneState:
    from vsb.story.models import WorldObject

    w = world(
        [
            character("Ama", skin="tone-2", hair_color="black", hair_style="short", top="red"),
            character("Bo", skin="tone-6", hair_color="auburn", hair_style="ponytail", top="blue"),
        ],
        [
            WorldObject(kind="umbrella", color="red", initial_state="broken"),
            WorldObject(kind="apple", color="green", initial_state="whole", count=3),
        ],
    )
    return first_state(w)


def _req(subject: str, attribute: str, expected: Any) -> Requirement:
    return Requirement(
        id=f"s1.{subject}.{attribute}", dimension="adherence", taxonomy="character_missing",
        source="prompt", subject=subject, attribute=attribute, expected=expected,
    )  # fmt: skip


AMA = (
    "the person with light skin or black hair (failing that, with a red top; failing that, with "
    "short hair)"
)
BO = (
    "the person with very dark skin or auburn hair (failing that, with a blue top; failing that, "
    "with a ponytail)"
)
WORDING = [
    ("Ama", "present", True,
     "Is there a person with light skin, black hair or a red top in the picture?", "YES"),
    ("Ama", "present", False,
     "Is there a person with light skin, black hair or a red top in the picture?", "NO"),
    ("Bo", "skin", "tone-6",
     "Does the person with auburn hair (failing that, with a blue top; failing that, with a "
     "ponytail) have very dark skin?", "YES"),
    ("Ama", "hair", ["black", "short"],
     "Does the person with light skin (failing that, with a red top) have short black hair?",
     "YES"),
    ("Ama", "top", "red",
     "Is the person with light skin or black hair (failing that, with short hair) wearing a red "
     "top?", "YES"),
    ("Ama", "trousers", "navy", f"Is {AMA} wearing navy trousers?", "YES"),
    ("Ama", "accessory", "bag", f"Is {AMA} carrying a bag?", "YES"),
    ("Ama", "accessory", "none", f"Is {AMA} wearing a hat, a scarf or glasses, or carrying a bag?",
     "NO"),
    ("Ama", "pose", "cheering", f"Is {AMA} cheering with both arms raised?", "YES"),
    ("umbrella", "holder", "Bo", f"Is {BO} holding the red umbrella?", "YES"),
    ("umbrella", "present", False, "Is there an umbrella in the picture?", "NO"),
    ("umbrella", "state", "broken", "Is the umbrella broken?", "YES"),
    ("apple", "count", 3, "Are there exactly 3 apples in the picture?", "YES"),
    ("apple", "state", "whole", "Are the apples whole?", "YES"),
    ("scene", "order", ["Ama", "Bo"],
     f"From left to right, do these people stand in this order: {AMA}; then {BO}?", "YES"),
    ("scene", "time", "noon", "Is it noon?", "YES"),
]  # fmt: skip


@pytest.mark.parametrize(("subject", "attribute", "expected", "text", "expect"), WORDING)
def test_question_wording(
    state: SceneState, subject: str, attribute: str, expected: Any, text: str, expect: str
) -> None:
    q = question_for(_req(subject, attribute, expected), state)
    assert (q.text, q.expect) == (text, expect)


def test_questions_never_name_a_character_nor_reveal_the_asked_fact(
    default_suite: list[Story],
) -> None:
    from vsb.evaluators.vlm.questions import hair_words, skin_words

    n = 0
    for story in default_suite:
        names = [c.name for c in story.world.characters]
        for scene in story.scenes:
            for req in scene.requirements:
                q = question_for(req, scene.state)
                assert q.text.endswith("?") and q.expect in ("YES", "NO")
                assert not any(re.search(rf"\b{re.escape(nm)}\b", q.text) for nm in names), q
                c = scene.state.characters.get(req.subject)
                if c is not None and req.attribute in ("skin", "hair"):
                    asked = (
                        skin_words(c.skin)
                        if req.attribute == "skin"
                        else hair_words([c.hair_color, c.hair_style])
                    )
                    assert q.text.count(asked) == 1, q  # only as the question, not the locator
                if c is not None and req.attribute == "top":
                    # the top is asked, never used to find its wearer
                    assert q.text.count(f"{c.top} top") == 1, q
                n += 1
    assert n > 1000


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("YES", "YES"), ("Yes.", "YES"), ("**NO**", "NO"), ("answer: unsure", "UNSURE"),
        ("The answer is no.", "NO"), ("I looked carefully.\nAnswer: NO", "NO"),
        ("", None), ("maybe", None), ("Yes, but actually no", None), ("Yesterday", None),
    ],
)  # fmt: skip
def test_parse_answer(reply: str, answer: str | None) -> None:
    assert parse_answer(reply) == answer


def test_parse_batch_missing_duplicated_unparsable() -> None:
    text = "1: YES\n2. no\n**3**: UNSURE\n4: maybe\n5: YES\n5: NO\n7: YES\n"
    assert parse_batch(text, 6) == ["YES", "NO", "UNSURE", None, None, None]
    assert parse_batch("Sure! Here you go:\n1) Yes\n2 - No.", 2) == ["YES", "NO"]
    assert parse_batch("", 3) == [None, None, None]


@given(st.text(max_size=300), st.integers(min_value=0, max_value=40))
def test_parse_batch_never_raises(text: str, n: int) -> None:
    out = parse_batch(text, n)
    assert len(out) == n and all(a in ("YES", "NO", "UNSURE", None) for a in out)
    assert parse_answer(text) in ("YES", "NO", "UNSURE", None)


def _call(qs: list[Question], tmp_path: Path, reqs: list[Requirement] | None = None) -> JudgeCall:
    img = tmp_path / "img.png"
    img.write_bytes(PNG)
    reqs = reqs or [_req("scene", "time", "noon") for _ in qs]
    prompt = scene_prompt(qs)
    return JudgeCall(
        "m", "c", "s", 1, str(img), "ab" * 32, tuple(reqs), tuple(qs), SYSTEM_PROMPT, prompt,
        call_key("j", SYSTEM_PROMPT, prompt, "ab" * 32),
    )  # fmt: skip


def test_verdicts_unsure_and_parse_failure_never_pass(tmp_path: Path) -> None:
    from vsb.evaluators.vlm_judge import CallOutcome

    qs = [Question("a?", "YES"), Question("b?", "NO"), Question("c?", "YES"), Question("d?", "NO")]
    out = CallOutcome(_call(qs, tmp_path), reply=JudgeReply("1: YES\n2: YES\n3: UNSURE\n"))
    res = outcome_results(out, "j")
    assert [r.verdict for r in res] == ["passed", "failed", "unsure", "parse_failure"]
    assert [r.passed for r in res] == [True, False, False, False]
    assert {r.judge_model for r in res} == {"j"} and {r.evaluator for r in res} == {"vlm"}


# --- transports ----------------------------------------------------------------------------


def _client(handler: Any) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler), follow_redirects=False)


def _request(prompt: str = "1. Is it night?") -> JudgeRequest:
    return JudgeRequest(PNG, "image/png", "SYS", prompt, 24, ("YES",))


def test_openai_compatible_request_shape_and_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, json={
            "choices": [{"message": {"content": [{"type": "text", "text": "1: YES"}]}}],
            "usage": {"prompt_tokens": 321, "completion_tokens": 5},
        })  # fmt: skip

    t = OpenAICompatibleVlm(_client(handler), model="gpt-x", base_url="https://vlm.example/v1/")
    reply = t.ask(_request())
    assert reply == JudgeReply("1: YES", 321, 5) and t.judge_model == "openai-compatible:gpt-x"
    (req,) = seen
    assert str(req.url) == "https://vlm.example/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    body = json.loads(req.content)
    assert body["model"] == "gpt-x" and body["max_tokens"] == 24 and body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": "SYS"}
    image, text = body["messages"][1]["content"]
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    assert text == {"type": "text", "text": "1. Is it night?"}


def test_anthropic_request_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-test")
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, json={
            "content": [{"type": "text", "text": "1: NO"}],
            "usage": {"input_tokens": 400, "output_tokens": 4},
        })  # fmt: skip

    t = AnthropicVlm(_client(handler), model="claude-x")
    assert t.ask(_request()) == JudgeReply("1: NO", 400, 4)
    (req,) = seen
    assert str(req.url) == "https://api.anthropic.com/v1/messages"
    assert req.headers["x-api-key"] == "ak-test" and req.headers["anthropic-version"]
    body = json.loads(req.content)
    assert body["system"] == "SYS" and body["max_tokens"] == 24 and body["model"] == "claude-x"
    image, text = body["messages"][0]["content"]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert text == {"type": "text", "text": "1. Is it night?"}


def test_missing_key_and_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ok = _client(lambda r: httpx.Response(200, json={"choices": [{"message": {"content": "NO"}}]}))
    with pytest.raises(CredentialMissing, match="OPENAI_API_KEY"):
        OpenAICompatibleVlm(ok, model="m").ask(_request())
    with pytest.raises(CredentialMissing, match="ANTHROPIC_API_KEY"):
        AnthropicVlm(ok, model="m").ask(_request())
    local = OpenAICompatibleVlm(ok, model="m", base_url="http://127.0.0.1:9/v1")
    assert local.ask(_request()).text == "NO"
    assert is_loopback("http://localhost:8000/v1") and not is_loopback("https://api.openai.com")


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
def test_transient_statuses_are_retryable_and_honour_retry_after(
    status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    t = OpenAICompatibleVlm(
        _client(lambda r: httpx.Response(status, headers={"retry-after": "7"}, text="busy")),
        model="m",
    )
    with pytest.raises(RetryableError) as info:
        t.ask(_request())
    assert info.value.retry_after == 7.0


def test_the_key_never_appears_in_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRET-123")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-SECRET-456")

    def echo(req: httpx.Request) -> httpx.Response:  # a hostile server echoing the request
        return httpx.Response(400, text=f"bad request {dict(req.headers)}")

    for t in (
        OpenAICompatibleVlm(_client(echo), model="m"),
        AnthropicVlm(_client(echo), model="m"),
    ):
        with pytest.raises(AdapterError) as info:
            t.ask(_request())
        assert "SECRET" not in str(info.value) and "***" in str(info.value)


def test_redirects_are_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    hosts: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        hosts.append(req.url.host)
        return httpx.Response(307, headers={"location": "https://evil.example/steal"})

    with pytest.raises(AdapterError, match="HTTP 307"):
        OpenAICompatibleVlm(_client(handler), model="m").ask(_request())
    assert hosts == ["api.openai.com"]


def test_build_transport_names() -> None:
    assert build_transport("mock:0.25").judge_model == "mock:0.25"
    assert build_transport("openai-compatible:qwen").judge_model == "openai-compatible:qwen"
    for bad in ("gpt4", "openai-compatible:", "mock:x", "replay:"):
        with pytest.raises(InputError):
            build_transport(bad)
    assert evaluator_info("vlm").reads == "any" and evaluator_info("rules").reads == "renders"


def test_replay_round_trip(tmp_path: Path) -> None:
    import hashlib

    row = {
        "judge_model": "anthropic:claude-x", "image_sha256": hashlib.sha256(PNG).hexdigest(),
        "system": "SYS", "prompt": "1. Is it night?", "answer": "1: NO",
    }  # fmt: skip
    (tmp_path / "judge_calls.jsonl").write_text(json.dumps(row) + "\n")
    t = ReplayVlm(tmp_path)
    assert t.judge_model == "replay:anthropic:claude-x"
    assert t.ask(_request()).text == "1: NO"
    with pytest.raises(InputError, match="no recorded answer"):
        t.ask(_request("1. Is it day?"))
    (tmp_path / "bad.jsonl").write_text('{"answer": 1}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl: line 1"):
        ReplayVlm(tmp_path)


def test_mock_error_rate_is_seeded() -> None:
    req = JudgeRequest(PNG, "image/png", "S", "1. a?\n2. b?", 32, ("YES",) * 200)
    a, b = MockVlm(0.3).ask(req).text, MockVlm(0.3).ask(req).text
    assert a == b
    answers = parse_batch(a, 200)
    assert 0.2 < answers.count("NO") / 200 < 0.4


# --- retries, budget, cache, dry run -------------------------------------------------------


def test_call_with_retries_backs_off_and_gives_up() -> None:
    waits: list[float] = []
    attempts = iter([RetryableError("x", retry_after=3.0), RetryableError("y"), "ok"])

    def fn() -> str:
        v = next(attempts)
        if isinstance(v, Exception):
            raise v
        return v

    assert call_with_retries(fn, RetryPolicy(base_delay_s=1.0), sleep=waits.append) == ("ok", 3)
    assert waits == [3.0, 2.0]

    def always() -> str:
        raise RetryableError("down")

    with pytest.raises(AdapterError, match="gave up after 2 attempts"):
        call_with_retries(always, RetryPolicy(max_attempts=2), sleep=waits.append)


def test_budget_refuses_a_call_that_could_exceed() -> None:
    b = Budget(0.10)
    held = b.reserve(0.06)
    with pytest.raises(BudgetExceeded, match="could exceed"):
        b.reserve(0.05)
    b.settle(held, 0.01)
    b.reserve(0.05)
    with pytest.raises(BudgetExceeded, match="unknown price"):
        Budget(1.0).reserve(None)
    assert Budget(None).reserve(None) == 0.0


class _Counting:
    """A paid transport answering YES to everything, counting calls."""

    paid = True
    judge_model = "test:counting"

    def __init__(self) -> None:
        self.calls = 0

    def ask(self, request: JudgeRequest) -> JudgeReply:
        self.calls += 1
        n = request.prompt.count("\n") + 1
        return JudgeReply("\n".join(f"{i}: YES" for i in range(1, n + 1)), 1000, 10)


def test_cache_dry_run_and_budget(tmp_path: Path) -> None:
    pricing = JudgePricing("2025-01-01", {"test:counting": JudgePrice(1.0, 2.0, 255)})
    calls = []
    for i in range(5):
        img = tmp_path / f"{i}.png"
        img.write_bytes(PNG + bytes([i]))
        qs = (Question("a?", "YES"),)
        calls.append(JudgeCall(
            "m", "c", "s", i + 1, str(img), f"{i:064d}", (_req("scene", "time", "noon"),), qs,
            SYSTEM_PROMPT, scene_prompt(qs), call_key("t", SYSTEM_PROMPT, "1. a?", str(i)),
        ))  # fmt: skip
    t = _Counting()
    opts = JudgeOptions(cache_dir=tmp_path / "cache", pricing=pricing, concurrency=2)
    plan = plan_cost(calls, t, opts)
    assert (plan.calls, plan.cached, plan.to_make) == (5, 0, 5)
    assert plan.estimated_usd == pytest.approx(5 * estimate_cost(calls[0], pricing, t.judge_model))
    assert plan.per_cell == {("m", "c"): 5}
    tight = JudgeOptions(
        cache_dir=tmp_path / "cache", pricing=pricing, budget_usd=2.5e-3, concurrency=1
    )
    with pytest.raises(BudgetExceeded, match="could exceed --budget") as info:
        execute_calls(calls, t, tight)
    made = t.calls
    assert 1 <= made < 5 and f"{made} calls made and cached, {5 - made} not made" in str(info.value)
    outs = execute_calls(calls, t, opts)
    assert t.calls == 5 and sum(o.cache_hit for o in outs) == made
    assert all(o.cost_usd == pytest.approx(1000e-6 + 20e-6) for o in outs if not o.cache_hit)
    assert plan_cost(calls, t, opts).to_make == 0
    execute_calls(calls, t, opts)
    assert t.calls == 5  # a rerun pays nothing
    assert JudgeCache(tmp_path / "cache").lookup(calls[0].key) is not None
