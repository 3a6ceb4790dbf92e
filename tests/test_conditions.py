"""The six prompting conditions: registry, contexts, and which facts each context carries."""

from __future__ import annotations

import json

import pytest

from vsb.conditions import (
    PRIMARY_CONDITION,
    condition_names,
    fact_value,
    get_condition,
    resolve_conditions,
    state_json,
    state_summary,
)
from vsb.errors import UnknownNameError
from vsb.fsio import canonical_json
from vsb.generator.generate import generate_story
from vsb.story.models import Story

SIX = [
    "independent",
    "previous_text",
    "structured_memory",
    "previous_image",
    "summarized_state",
    "full_context",
]


def test_six_conditions_registered_in_order() -> None:
    assert condition_names() == SIX
    assert PRIMARY_CONDITION == "structured_memory"
    assert resolve_conditions("all") == SIX
    assert resolve_conditions("previous_text, independent") == ["previous_text", "independent"]


def test_unknown_condition_lists_known_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        get_condition("structured")
    msg = str(info.value)
    assert "unknown condition 'structured'" in msg and "structured_memory" in msg
    assert all(n in msg for n in SIX)
    with pytest.raises(UnknownNameError):
        resolve_conditions("independent,nope")


def test_scene_one_has_no_context(default_suite: list[Story]) -> None:
    story = default_suite[0]
    for name in SIX:
        assert get_condition(name).context(story, 1).is_empty()


def test_contexts(default_suite: list[Story]) -> None:
    story = next(s for s in default_suite if len(s.scenes) == 8)
    k = 5
    prev = story.scenes[k - 2]
    assert get_condition("independent").context(story, k).is_empty()
    assert get_condition("previous_text").context(story, k).text == prev.text
    data = get_condition("structured_memory").context(story, k).data
    assert data == state_json(prev.state)
    assert json.loads(canonical_json(data)) == data  # plain JSON
    assert data is not None and data["location"] == prev.state.location
    assert set(data["characters"]) == {n for n, c in prev.state.characters.items() if c.seen}
    img = get_condition("previous_image").context(story, k)
    assert img.reference_image and img.text is None and img.data is None
    summary = get_condition("summarized_state").context(story, k).text
    assert summary == state_summary(prev.state) and "\n" not in summary
    for name, c in prev.state.characters.items():
        if c.seen:
            assert name in summary and c.top in summary
    full = get_condition("full_context").context(story, k).text
    assert full is not None
    assert [line.split(": ", 1)[1] for line in full.splitlines()] == [
        s.text for s in story.scenes[: k - 1]
    ]


def test_paraphrase_contexts_use_the_storys_own_texts() -> None:
    plain = generate_story("wardrobe", "medium", "w", seed=3)
    para = generate_story("wardrobe", "medium", "w", seed=3, paraphrase=True)
    assert para.prompt_style == "paraphrase"
    assert [s.state for s in plain.scenes] == [s.state for s in para.scenes]
    changed = [k for k in range(2, 6) if plain.scenes[k - 2].text != para.scenes[k - 2].text]
    assert changed, "the paraphrase style should change some text"
    for k in range(2, len(para.scenes) + 1):
        assert get_condition("previous_text").context(para, k).text == para.scenes[k - 2].text
        full = get_condition("full_context").context(para, k).text
        assert full is not None and para.scenes[k - 2].text in full
        # state-based contexts do not depend on the wording
        for name in ("structured_memory", "summarized_state"):
            assert get_condition(name).context(para, k) == get_condition(name).context(plain, k)


def test_what_each_context_supplies(default_suite: list[Story]) -> None:
    cond = {n: get_condition(n) for n in SIX}
    n_memory = 0
    for story in default_suite:
        for scene in story.scenes[1:]:
            k = scene.index
            prev = story.scenes[k - 2]
            for r in scene.requirements:
                assert not cond["independent"].supplies(story, k, r)
                same_prev = fact_value(prev.state, r.subject, r.attribute) == r.expected
                assert cond["structured_memory"].supplies(story, k, r) == same_prev
                assert cond["summarized_state"].supplies(story, k, r) == same_prev
                stated = any(
                    p.source == "prompt" and (p.subject, p.attribute, p.expected)
                    == (r.subject, r.attribute, r.expected)
                    for p in prev.requirements
                )  # fmt: skip
                assert cond["previous_text"].supplies(story, k, r) == stated
                if r.source == "memory" and r.attribute != "order":
                    # a fact carried from memory was true at the end of the previous scene
                    # (an exit shortens the left-to-right order without restating it)
                    n_memory += 1
                    assert same_prev, (story.id, r.id)
                    assert cond["full_context"].supplies(story, k, r), (story.id, r.id)
                    assert cond["previous_image"].supplies(story, k, r) == any(
                        (p.subject, p.attribute, p.expected) == (r.subject, r.attribute, r.expected)
                        for p in prev.requirements
                    )
    assert n_memory > 2000
    assert cond["structured_memory"].context_factor == 1.0
    assert cond["summarized_state"].context_factor == 1.3
    assert cond["full_context"].context_factor == 1.6
    assert cond["previous_text"].context_factor == 1.0
    assert cond["previous_image"].reference_image and cond["previous_image"].context_factor is None
