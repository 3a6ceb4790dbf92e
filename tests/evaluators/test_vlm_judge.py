"""The VLM judge: question wording, answer parsing, transports (mocked HTTP), the judge."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from eval_helpers import character, first_state, with_obj, world

from vsb.errors import AdapterError, CredentialMissing, InputError
from vsb.evaluators.decode import load_indices
from vsb.evaluators.evaluate import REQUIREMENT_COLUMNS
from vsb.evaluators.registry import DEFAULT_EVALUATORS, EVALUATORS, Frame
from vsb.evaluators.vlm_judge import (
    SYSTEM_PROMPT,
    VlmJudge,
    encode_indices_png,
    parse_answer,
    question_for,
)
from vsb.evaluators.vlm_transports import (
    VLM_TRANSPORTS,
    AnthropicVlm,
    FixtureVlm,
    MockVlm,
    OpenAICompatibleVlm,
    fixture_key,
    fixture_row,
)
from vsb.generator.generate import generate_suite
from vsb.render import render_png
from vsb.story.models import Requirement, SceneState, Story

PNG = b"\x89PNG fake image bytes"


@pytest.fixture(scope="module")
def state() -> SceneState:
    from vsb.story.models import WorldObject

    w = world(
        [character("Ama", top="red"), character("Bo", skin="tone-6", top="blue")],
        [
            WorldObject(kind="umbrella", color="red", initial_state="broken"),
            WorldObject(kind="apple", color="green", initial_state="whole", count=3),
            WorldObject(kind="flower", color="pink", initial_state="wilted", count=2),
        ],
    )
    return first_state(w)


def _req(subject: str, attribute: str, expected: Any) -> Requirement:
    return Requirement(
        id=f"s1.{subject}.{attribute}", dimension="adherence", taxonomy="character_missing",
        source="prompt", subject=subject, attribute=attribute, expected=expected,
    )  # fmt: skip


WORDING = [
    ("Ama", "present", True, "Is Ama in the picture?", "YES"),
    ("Ama", "present", False, "Is Ama in the picture?", "NO"),
    ("Bo", "skin", "tone-6", "Does Bo have very dark skin?", "YES"),
    ("Ama", "skin", "tone-1", "Does Ama have very light skin?", "YES"),
    ("Ama", "hair", ["black", "short"], "Does Ama have short black hair?", "YES"),
    ("Ama", "hair", ["auburn", "ponytail"], "Does Ama have auburn hair in a ponytail?", "YES"),
    ("Ama", "hair", ["grey", "bun"], "Does Ama have grey hair in a bun?", "YES"),
    ("Ama", "top", "red", "Is Ama wearing a red top?", "YES"),
    ("Ama", "top", "orange", "Is Ama wearing an orange top?", "YES"),
    ("Ama", "trousers", "navy", "Is Ama wearing navy trousers?", "YES"),
    ("Ama", "accessory", "hat", "Is Ama wearing a hat?", "YES"),
    ("Ama", "accessory", "glasses", "Is Ama wearing glasses?", "YES"),
    ("Ama", "accessory", "bag", "Is Ama carrying a bag?", "YES"),
    (
        "Ama", "accessory", "none",
        "Is Ama wearing a hat, a scarf or glasses, or carrying a bag?", "NO",
    ),
    ("Ama", "pose", "sitting", "Is Ama sitting?", "YES"),
    ("Ama", "pose", "cheering", "Is Ama cheering with both arms raised?", "YES"),
    ("umbrella", "holder", "Bo", "Is Bo holding the red umbrella?", "YES"),
    ("umbrella", "present", True, "Is there a red umbrella in the picture?", "YES"),
    ("umbrella", "present", False, "Is there an umbrella in the picture?", "NO"),
    ("umbrella", "state", "broken", "Is the red umbrella broken?", "YES"),
    ("flower", "state", "wilted", "Are the pink flowers wilted?", "YES"),
    ("apple", "count", 3, "Are there exactly 3 green apples in the picture?", "YES"),
    ("apple", "count", 1, "Is there exactly one green apple in the picture?", "YES"),
    ("apple", "count", 0, "Are there any apples in the picture?", "NO"),
    ("scene", "location", "park", "Is the scene set in a park?", "YES"),
    ("scene", "location", "beach", "Is the scene set on a beach?", "YES"),
    ("scene", "location", "kitchen", "Is the scene set in a kitchen?", "YES"),
    ("scene", "weather", "rainy", "Is it raining?", "YES"),
    ("scene", "weather", "clear", "Is the weather clear?", "YES"),
    ("scene", "time", "night", "Is it night?", "YES"),
    ("scene", "time", "noon", "Is it midday?", "YES"),
    ("scene", "order", ["Ama", "Bo"], "From left to right, are the people Ama, then Bo?", "YES"),
    (
        "scene", "order", ["Ama", "Bo", "Kai"],
        "From left to right, are the people Ama, then Bo, then Kai?", "YES",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("subject", "attribute", "expected", "text", "expect"), WORDING)
def test_question_wording(
    state: SceneState, subject: str, attribute: str, expected: Any, text: str, expect: str
) -> None:
    q = question_for(_req(subject, attribute, expected), state)
    assert (q.text, q.expect) == (text, expect)


def test_wording_covers_every_contract_attribute() -> None:
    covered = {(s == "scene", s in ("umbrella", "apple", "flower"), a) for s, a, *_ in WORDING}
    contract = (
        {(False, False, a) for a in ("present", "skin", "hair", "top", "trousers")}
        | {(False, False, a) for a in ("accessory", "pose")}
        | {(False, True, a) for a in ("holder", "present", "state", "count")}
        | {(True, False, a) for a in ("location", "weather", "time", "order")}
    )
    assert contract <= covered


def test_every_generated_requirement_has_a_question(default_suite: list[Story]) -> None:
    n = 0
    for story in default_suite:
        for scene in story.scenes:
            for req in scene.requirements:
                q = question_for(req, scene.state)
                assert q.text.endswith("?") and q.expect in ("YES", "NO")
                n += 1
    assert n > 1000


def test_unknown_attribute_is_an_input_error(state: SceneState) -> None:
    with pytest.raises(InputError, match="no question"):
        question_for(_req("Ama", "height", "tall"), state)


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("YES", "YES"), ("Yes.", "YES"), ("yes", "YES"), ("**NO**", "NO"), ("No!", "NO"),
        ("answer: unsure", "UNSURE"), ("Answer: YES", "YES"), ("The answer is no.", "NO"),
        ("Final answer: Yes", "YES"), ("  `no`  ", "NO"), ("I looked carefully.\nAnswer: NO", "NO"),
        ("UNSURE", "UNSURE"), ("", "UNSURE"), ("maybe", "UNSURE"), ("No idea", "UNSURE"),
        ("Yes, but actually no", "UNSURE"), ("yes no", "UNSURE"), ("Yesterday", "UNSURE"),
        ("I cannot tell", "UNSURE"), ("Probably yes", "UNSURE"), ("Y", "UNSURE"),
    ],
)  # fmt: skip
def test_parse_answer(reply: str, answer: str) -> None:
    assert parse_answer(reply) == answer


def _judge_one(reply: str, expect_yes: bool) -> bool:
    st = first_state(world([character("Ama")]))
    from vsb.story.models import Scene

    req = _req("Ama", "present", expect_yes)
    scene = Scene(index=1, events=[], text="", state=st, requirements=[req])
    return VlmJudge(MockVlm(lambda _png, _q: reply)).judge_png(PNG, scene)[0].passed


@pytest.mark.parametrize("expect_yes", [True, False])
@pytest.mark.parametrize("reply", ["UNSURE", "unsure.", "cannot tell", "", "yes and no"])
def test_unsure_never_passes(reply: str, expect_yes: bool) -> None:
    assert _judge_one(reply, expect_yes) is False


def test_a_no_question_passes_on_no() -> None:
    assert _judge_one("NO", expect_yes=False) is True
    assert _judge_one("YES", expect_yes=False) is False


# --- transports ----------------------------------------------------------------------------


def _client(reply: dict[str, Any], seen: list[httpx.Request], status: int = 200) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json=reply)

    return httpx.Client(transport=httpx.MockTransport(handler))


def test_openai_compatible_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_VLM_KEY", "sk-test")
    seen: list[httpx.Request] = []
    reply = {"choices": [{"message": {"role": "assistant", "content": "Yes."}}]}
    t = OpenAICompatibleVlm(
        _client(reply, seen), model="gpt-x", base_url="http://vlm.local/v1/",
        api_key_env="MY_VLM_KEY",
    )  # fmt: skip
    assert t.ask(PNG, SYSTEM_PROMPT, "Is it night?") == "Yes."
    (req,) = seen
    assert str(req.url) == "http://vlm.local/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    body = json.loads(req.content)
    assert body["model"] == "gpt-x"
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    parts = body["messages"][1]["content"]
    image = next(p for p in parts if p["type"] == "image_url")["image_url"]["url"]
    assert image == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert {"type": "text", "text": "Is it night?"} in parts


def test_openai_transport_default_key_and_content_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default")
    seen: list[httpx.Request] = []
    reply = {"choices": [{"message": {"content": [{"type": "text", "text": "NO"}]}}]}
    t = OpenAICompatibleVlm(_client(reply, seen), model="m")
    assert t.ask(PNG, "sys", "q?") == "NO"
    assert str(seen[0].url) == "https://api.openai.com/v1/chat/completions"
    assert seen[0].headers["authorization"] == "Bearer sk-default"


def test_anthropic_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-test")
    seen: list[httpx.Request] = []
    reply = {"content": [{"type": "text", "text": "**NO**"}], "stop_reason": "end_turn"}
    t = AnthropicVlm(_client(reply, seen), model="claude-x")
    assert t.ask(PNG, SYSTEM_PROMPT, "Is Ama wearing a red top?") == "**NO**"
    (req,) = seen
    assert req.method == "POST"
    assert str(req.url) == "https://api.anthropic.com/v1/messages"
    assert req.headers["x-api-key"] == "ak-test"
    assert req.headers["anthropic-version"] == "2023-06-01"
    body = json.loads(req.content)
    assert body["model"] == "claude-x" and body["system"] == SYSTEM_PROMPT
    blocks = body["messages"][0]["content"]
    image = next(b for b in blocks if b["type"] == "image")
    assert image["source"] == {
        "type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode(),
    }  # fmt: skip
    assert {"type": "text", "text": "Is Ama wearing a red top?"} in blocks


@pytest.mark.parametrize(
    ("make", "env"),
    [
        (lambda c: OpenAICompatibleVlm(c, model="m"), "OPENAI_API_KEY"),
        (lambda c: OpenAICompatibleVlm(c, model="m", api_key_env="OTHER_KEY"), "OTHER_KEY"),
        (lambda c: AnthropicVlm(c, model="m"), "ANTHROPIC_API_KEY"),
    ],
)
def test_missing_credential(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[httpx.Client], Any], env: str
) -> None:
    monkeypatch.delenv(env, raising=False)
    seen: list[httpx.Request] = []
    t = make(_client({}, seen))  # constructing needs no key: it is read at call time
    with pytest.raises(CredentialMissing, match=env):
        t.ask(PNG, "sys", "q?")
    assert not seen


def test_http_error_is_an_adapter_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    t = AnthropicVlm(_client({"error": "overloaded"}, [], status=529), model="m")
    with pytest.raises(AdapterError, match="529"):
        t.ask(PNG, "sys", "q?")


def test_fixture_replay_hit_and_miss(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    rows = [fixture_row(PNG, "Is it night?", "YES"), fixture_row(PNG, "Is it noon?", "NO")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    t = FixtureVlm(path)
    assert t.ask(PNG, "any system", "Is it night?") == "YES"
    assert t.ask(PNG, "any system", "Is it noon?") == "NO"
    assert rows[0]["key"] == fixture_key(PNG, "Is it night?")
    with pytest.raises(InputError, match="no stored answer") as err:
        t.ask(PNG, "sys", "Is it raining?")
    assert err.value.file == str(path)
    with pytest.raises(InputError, match="no stored answer"):
        t.ask(b"another image", "sys", "Is it night?")


def test_fixture_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        FixtureVlm(tmp_path / "absent.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "k", "answer": "YES"}\n{not json\n')
    with pytest.raises(InputError) as err:
        FixtureVlm(bad)
    assert err.value.location == "line 2"


def test_transport_registry() -> None:
    assert set(VLM_TRANSPORTS.names()) == {"openai", "anthropic", "fixture", "mock"}


# --- the judge -----------------------------------------------------------------------------


def test_registered_but_not_default() -> None:
    assert "vlm_judge" in EVALUATORS
    assert "vlm_judge" not in DEFAULT_EVALUATORS
    with pytest.raises(InputError, match="needs a transport"):
        EVALUATORS.get("vlm_judge")()


def _true_answers(story: Story, scene_index: int) -> dict[str, str]:
    """What an ideal observer of the true state answers to each of the scene's questions:
    each requirement's expected value is compared with the true state independently."""
    scene = story.scenes[scene_index - 1]
    st = scene.state
    out = {}
    for req in scene.requirements:
        if req.subject == "scene":
            true: Any = getattr(st, req.attribute)
        elif req.subject in st.objects:
            o = st.objects[req.subject]
            true = st.object_visible(req.subject) if req.attribute == "present" else None
            true = {"holder": o.holder, "state": o.state, "count": o.count}.get(req.attribute, true)
        else:
            c = st.characters[req.subject]
            true = [c.hair_color, c.hair_style] if req.attribute == "hair" else None
            true = getattr(c, req.attribute) if true is None else true
        q = question_for(req, st)
        holds = true == req.expected
        out[q.text] = q.expect if holds else ("NO" if q.expect == "YES" else "YES")
    return out


def test_judge_over_a_rendered_scene() -> None:
    story = generate_suite(0)[0]
    k = len(story.scenes)
    scene = story.scenes[k - 1]
    image = load_indices(render_png(scene.state, seed=1))
    frames = [Frame("m", "independent", story.id, k, image), Frame("m", "c", story.id, 1, None)]
    truth = _true_answers(story, k)
    styles = ["Yes.", "**YES**", "answer: yes"]

    def ideal(png: bytes, question: str) -> str:
        assert load_indices(png).tolist() == image.tolist()  # the judge sends the frame
        a = truth[question]
        return styles[len(question) % 3] if a == "YES" else "No."

    mock = MockVlm(ideal)
    out = VlmJudge(mock).evaluate_story(story, frames[:1])
    n = len(scene.requirements)
    assert n > 0 and len(out.requirements) == n and len(mock.questions) == n
    assert all(r["passed"] for r in out.requirements)
    assert {r["evaluator"] for r in out.requirements} == {"vlm_judge"}
    assert set(out.requirements[0]) == set(REQUIREMENT_COLUMNS)
    assert {json.loads(r["observed"]) for r in out.requirements} <= {"YES", "NO"}
    assert out.signals == [
        {"model": "m", "condition": "independent", "story_id": story.id, "scene": k,
         "signal": "vlm_pass_rate", "value": 1.0},
    ]  # fmt: skip

    unsure = VlmJudge(MockVlm(lambda _png, _q: "UNSURE")).evaluate_story(story, frames)
    assert len(unsure.requirements) == n  # the failed frame (image None) gets no rows
    assert not any(r["passed"] for r in unsure.requirements)
    assert all(r["failure"] == r["taxonomy"] for r in unsure.requirements)
    assert {json.loads(r["observed"]) for r in unsure.requirements} == {"UNSURE"}
    assert [s["value"] for s in unsure.signals] == [0.0]


def test_judge_fails_a_contradicted_fact(state: SceneState) -> None:
    from vsb.story.models import Scene

    broken = with_obj(state, "umbrella", state="broken")
    reqs = [_req("umbrella", "state", "broken"), _req("scene", "time", "noon")]
    scene = Scene(index=1, events=[], text="", state=broken, requirements=reqs)
    answers = {"Is the red umbrella broken?": "NO", "Is it midday?": "YES"}
    results = VlmJudge(MockVlm(lambda _p, q: answers[q])).judge_png(PNG, scene)
    assert [(r.observed, r.passed) for r in results] == [("NO", False), ("YES", True)]


def test_encode_indices_png_round_trips() -> None:
    story = generate_suite(0)[0]
    image = load_indices(render_png(story.scenes[0].state, seed=1))
    assert load_indices(encode_indices_png(image)).tolist() == image.tolist()
