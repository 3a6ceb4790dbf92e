"""The prompting conditions: registry, contexts, and which facts each context carries (the six
main ones, the placebo and the field ablations)."""

from __future__ import annotations

import json

import pytest

from vsb.conditions import (
    ABLATIONS,
    FACT_GROUPS,
    PLACEBO_CONDITION,
    PRIMARY_CONDITION,
    ablation_names,
    all_condition_names,
    condition_names,
    fact_group,
    fact_value,
    get_condition,
    placebo_partner,
    resolve_conditions,
    state_json,
    state_summary,
)
from vsb.errors import InputError, UnknownNameError
from vsb.fsio import canonical_json
from vsb.generator.generate import generate_story
from vsb.story import vocab
from vsb.story.models import Story
from vsb.story.words import in_words

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
    assert data == in_words(state_json(prev.state))
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


ABLATION_NAMES = [
    "structured_memory-no_identity",
    "structured_memory-no_clothing",
    "structured_memory-no_objects",
    "structured_memory-no_environment",
]


def test_control_conditions_registered_apart_from_all() -> None:
    assert all_condition_names() == [*SIX, "random_context", *ABLATION_NAMES, "predicted_memory"]
    assert ablation_names() == ABLATION_NAMES == list(ABLATIONS)
    assert PLACEBO_CONDITION == "random_context"
    assert resolve_conditions("ablations") == ABLATION_NAMES
    assert resolve_conditions("All, random_context") == [*SIX, "random_context"]
    assert resolve_conditions("independent,ABLATIONS,independent") == [
        "independent",
        *ABLATION_NAMES,
    ]
    assert resolve_conditions("") == []
    kinds = {n: get_condition(n).kind for n in all_condition_names()}
    assert [n for n, k in kinds.items() if k == "main"] == SIX
    assert kinds["random_context"] == "placebo"
    assert kinds["predicted_memory"] == "predicted"
    for name, group in ABLATIONS.items():
        cond = get_condition(name)
        assert cond.kind == "ablation" and cond.removes == group
        assert cond.stream == PRIMARY_CONDITION and cond.context_factor == 1.0
    assert get_condition("random_context").stream == "independent"
    assert all(get_condition(n).stream == n for n in SIX)
    with pytest.raises(UnknownNameError, match="structured_memory-no_identity"):
        resolve_conditions("structured_memory-no_hair")


def test_fact_groups_cover_the_requirements(default_suite: list[Story]) -> None:
    seen: dict[str | None, set[str]] = {}
    for story in default_suite:
        for scene in story.scenes:
            for r in scene.requirements:
                g = fact_group(r.subject, r.attribute)
                seen.setdefault(g, set()).add(r.dimension)
                if r.subject == "scene":
                    assert g == ("environment" if r.attribute != "order" else None)
                elif r.subject in vocab.OBJECT_KINDS:
                    assert g == "objects"
                elif r.attribute in ("skin", "hair"):
                    assert g == "identity" and r.dimension == "identity"
                elif r.attribute in ("top", "trousers", "accessory"):
                    assert g == "clothing" and r.dimension == "clothing"
                else:
                    assert r.attribute in ("present", "pose") and g is None
    assert set(seen) == {*FACT_GROUPS, None}
    assert seen["environment"] == {"environment", "chronology"}
    assert {"object_persistence", "object_state", "spatial"} <= seen["objects"]


def test_ablation_contexts_drop_exactly_their_group(default_suite: list[Story]) -> None:
    story = next(s for s in default_suite if s.id == "object_persistence-hard")
    k = 4
    full = in_words(state_json(story.scenes[k - 2].state))
    removed = {
        "identity": {"skin", "hair"},
        "clothing": {"top", "trousers", "accessory"},
        "objects": {"objects"},
        "environment": {"location", "time", "day", "weather"},
    }
    for name, group in ABLATIONS.items():
        ctx = get_condition(name).context(story, k)
        assert ctx.condition == name and ctx.text is None and not ctx.reference_image
        data = ctx.data
        assert data is not None and json.loads(canonical_json(data)) == data
        gone = removed[group]
        assert set(data) == set(full) - gone
        for char, fields in full["characters"].items():
            assert data["characters"][char] == {f: v for f, v in fields.items() if f not in gone}, (
                name,
                char,
            )
        for key in set(full) - gone - {"characters"}:
            assert data[key] == full[key]
        assert get_condition(name).context(story, 1).is_empty()
    assert full["objects"], "the story should have objects in scene 3"


def test_ablations_supply_structured_memory_minus_their_group(
    default_suite: list[Story],
) -> None:
    sm = get_condition(PRIMARY_CONDITION)
    counts = dict.fromkeys(ABLATIONS, 0)
    for story in default_suite:
        for scene in story.scenes[1:]:
            k = scene.index
            for r in scene.requirements:
                full = sm.supplies(story, k, r)
                for name, group in ABLATIONS.items():
                    got = get_condition(name).supplies(story, k, r)
                    in_group = fact_group(r.subject, r.attribute) == group
                    assert got == (full and not in_group), (name, story.id, r.id)
                    counts[name] += full and in_group
    assert all(n > 100 for n in counts.values()), counts


def test_placebo_is_another_storys_memory(default_suite: list[Story]) -> None:
    placebo = get_condition("random_context")
    ids = {s.id for s in default_suite}
    for story in default_suite:
        partner = placebo_partner(story)
        assert placebo_partner(story) is partner  # fixed (and memoised)
        assert partner.category == story.category and len(partner.scenes) == len(story.scenes)
        names = {c.name for c in story.world.characters}
        assert not names & {c.name for c in partner.world.characters}
        assert placebo.context(story, 1).is_empty()
        for k in range(2, len(story.scenes) + 1):
            ctx = placebo.context(story, k)
            assert ctx.data == in_words(state_json(partner.scenes[k - 2].state))
            assert ctx.data != in_words(state_json(story.scenes[k - 2].state))
            assert not set(ctx.data["characters"]) & names
            for r in story.scenes[k - 1].requirements:
                assert not placebo.supplies(story, k, r)
    assert len({placebo_partner(s).seed for s in default_suite}) == len(ids)


def test_placebo_partner_is_the_same_for_the_paraphrase() -> None:
    plain = generate_story("possession", "hard", "p-hard", seed=11)
    para = generate_story("possession", "hard", "p-hard", seed=11, paraphrase=True)
    other = generate_story("possession", "hard", "p-hard", seed=12)
    placebo = get_condition("random_context")
    for k in range(2, len(plain.scenes) + 1):
        assert placebo.context(para, k) == placebo.context(plain, k)
    assert placebo_partner(other).seed != placebo_partner(plain).seed


def test_placebo_partner_of_an_odd_length() -> None:
    base = generate_story("counting", "medium", "c-odd", seed=4)
    four = base.model_copy(update={"scenes": base.scenes[:4]})
    partner = placebo_partner(four)
    assert len(partner.scenes) >= 3 and partner.category == "counting"
    hard = generate_story("counting", "hard", "c-long", seed=4)
    long = hard.model_copy(update={"scenes": [*hard.scenes, *hard.scenes[:2]]})
    with pytest.raises(InputError, match="no placebo partner"):
        placebo_partner(long)
