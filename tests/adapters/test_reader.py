"""The reader simulators see the prompt only (issue #44 item 5).

``procedural-reader`` draws what the prompt states and guesses the rest: with the whole
previous state in its context (structured memory, every previous scene) it draws every fact
that must be remembered; with none (independent) it guesses, so it loses most of them.
``procedural-reader-77`` reads only the first 77 CLIP tokens of the prompt.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from vsb.adapters.base import GenerationRequest
from vsb.adapters.reader import ProceduralReader, _rng, scene_state
from vsb.adapters.registry import get_adapter
from vsb.cli.main import cli
from vsb.conditions import ConditionContext, get_condition
from vsb.run.prompts import full_prompt
from vsb.story.models import Requirement, SceneState, Story
from vsb.story.reading import partial_json, read_prompt
from vsb.story.tokens import clip_count, clip_keep

TEXT_CONDITIONS = (
    "independent",
    "previous_text",
    "structured_memory",
    "summarized_state",
    "full_context",
)


def _drawn(state: SceneState, req: Requirement) -> object:
    """The value ``state`` shows for ``req``'s fact (as the rule checker would read it)."""
    s, a = req.subject, req.attribute
    if s == "scene":
        return list(state.order) if a == "order" else getattr(state, a)
    if s in state.characters:
        c = state.characters[s]
        return [c.hair_color, c.hair_style] if a == "hair" else getattr(c, a)
    if s not in state.objects:
        return False if a == "present" else None
    if a == "present":
        return state.object_visible(s)
    if not state.object_visible(s):
        return None
    o = state.objects[s]
    return (o.holder or None) if a == "holder" else getattr(o, a)


def _kept(suite: list[Story], condition: str, budget: int | None) -> dict[str, float]:
    """Share of prompt and memory requirements the reader draws right under ``condition``."""
    cond = get_condition(condition)
    total, right = Counter[str](), Counter[str]()
    for story in suite:
        for scene in story.scenes:
            prompt = full_prompt(scene.text, cond.context(story, scene.index))
            read = prompt if budget is None else clip_keep(prompt, budget)
            state = scene_state(read_prompt(read), _rng("t", prompt, 0))
            for req in scene.requirements:
                total[req.source] += 1
                right[req.source] += _drawn(state, req) == req.expected
    return {k: right[k] / total[k] for k in total}


@pytest.fixture(scope="module")
def ceilings(default_suite: list[Story]) -> dict[tuple[str, int | None], dict[str, float]]:
    return {(c, b): _kept(default_suite, c, b) for c in TEXT_CONDITIONS for b in (None, 77)}


def test_the_reader_draws_every_stated_fact(ceilings: dict) -> None:
    for c in TEXT_CONDITIONS:
        assert ceilings[(c, None)]["prompt"] == 1.0, c


def test_a_whole_state_in_the_context_carries_every_remembered_fact(ceilings: dict) -> None:
    assert ceilings[("structured_memory", None)]["memory"] >= 0.99
    assert ceilings[("full_context", None)]["memory"] >= 0.99
    assert ceilings[("summarized_state", None)]["memory"] >= 0.99
    assert ceilings[("independent", None)]["memory"] < 0.3
    assert ceilings[("previous_text", None)]["memory"] < 0.6


def test_77_tokens_lose_the_scene_under_long_contexts(ceilings: dict) -> None:
    # the context comes first: a CLIP encoder keeps it and drops the scene text
    assert ceilings[("structured_memory", 77)]["prompt"] < 0.7
    assert ceilings[("structured_memory", 77)]["memory"] < 0.5
    for c in TEXT_CONDITIONS:
        assert ceilings[(c, 77)]["prompt"] <= ceilings[(c, None)]["prompt"]


def test_the_reader_is_not_told_the_story(default_suite: list[Story]) -> None:
    reader = get_adapter("procedural-reader")
    assert not reader.privileged
    story = default_suite[0]
    scene = story.scenes[1]
    ctx = get_condition("structured_memory").context(story, 2)
    req = GenerationRequest("procedural-reader", reader.version, scene.text, 0, ctx)
    a, b = reader.generate(req).png, reader.generate(req).png
    assert a == b and a.startswith(b"\x89PNG")
    # the same prompt for another story gives the same picture: it reads the text only
    other = GenerationRequest("procedural-reader", reader.version, scene.text, 0, ctx, story_id="x")
    assert reader.generate(other).png == a


def test_77_reads_only_what_a_clip_encoder_keeps() -> None:
    long_context = ConditionContext("previous_text", text="It is night now. " * 30)
    scene = "On the beach, in the morning; the weather is snowy."
    prompt = GenerationRequest("m", "1", scene, 0, long_context).full_prompt()
    assert clip_count(prompt) > 77
    whole, cut = ProceduralReader("r", None), ProceduralReader("r77", 77)
    assert read_prompt(whole.read(prompt)).location == "beach"
    assert read_prompt(cut.read(prompt)).location is None  # the scene text was cut off
    fit = cut.prompt_fit(GenerationRequest("m", "1", scene, 0, long_context))
    assert fit.cut and fit.budget == 77 and fit.length == clip_count(prompt)
    assert not whole.prompt_fit(GenerationRequest("m", "1", scene, 0, long_context)).cut


def test_a_json_cut_short_is_read_to_its_last_whole_value() -> None:
    memory = {"location": "park", "time": "noon", "characters": {"Ama": {"skin": "dark"}}}
    text = json.dumps(memory, separators=(",", ":"))
    assert partial_json(text) == memory
    assert partial_json(text[: text.index('"characters"') + 5]) == {
        "location": "park",
        "time": "noon",
    }
    assert partial_json('{"loc') is None


def test_a_run_of_the_readers_scores_through_the_rule_checker(tmp_path: Path) -> None:
    suite, run = tmp_path / "suite", tmp_path / "run"
    runner = CliRunner()
    assert runner.invoke(cli, ["suite", "generate", "--out", str(suite)]).exit_code == 0
    got = runner.invoke(
        cli,
        ["run", "--suite", str(suite), "--model", "procedural-reader,procedural-reader-77",
         "--condition", "independent,structured_memory", "--limit", "4", "--out", str(run)],
    )  # fmt: skip
    assert got.exit_code == 0, got.output
    assert not (run / "oracle" / "faults.jsonl").exists() or all(
        '"procedural-reader' not in line
        for line in (run / "oracle" / "faults.jsonl").read_text().splitlines()
    )
    got = runner.invoke(cli, ["evaluate", str(run)])
    assert got.exit_code == 0, got.output
    got = runner.invoke(cli, ["score", str(run), "--condition", "structured_memory"])
    assert got.exit_code == 0, got.output
    assert "procedural-reader-77" in got.output
