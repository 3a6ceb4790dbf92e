"""The simulated extractor behind predicted_memory: its error rate, its determinism, its kinds
of error, the condition built on it (errNN variants) and the hook for a real extractor."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest

import vsb.conditions as conditions
from vsb.conditions import (
    PREDICTED_CONDITION,
    all_condition_names,
    get_condition,
    is_condition,
    register_extractor,
    resolve_conditions,
    state_json,
    supplies_previous_state,
)
from vsb.errors import InputError, UnknownNameError
from vsb.story.context.predicted import (
    DEFAULT_ERROR_RATE,
    extractor_seed,
    memory_facts,
    memory_value,
    reading_errors,
    simulated_reading,
    state_value,
    suite_reading_errors,
)
from vsb.story.models import Story


def _readings(suite: list[Story], rate: float) -> list[tuple[Story, int, dict[str, Any], list]]:
    return [
        (s, k, *simulated_reading(s, k, rate)) for s in suite for k in range(2, len(s.scenes) + 1)
    ]


@pytest.mark.parametrize("rate", [0.05, DEFAULT_ERROR_RATE, 0.3])
def test_the_error_rate_is_honoured(rate: float, default_suite: list[Story]) -> None:
    wrong, total = suite_reading_errors(default_suite, rate)
    assert total > 3000
    sd = math.sqrt(rate * (1 - rate) / total)
    assert abs(wrong / total - rate) < 4 * sd, (wrong, total)


def test_every_drawn_error_is_a_wrong_fact(default_suite: list[Story]) -> None:
    for story, k, memory, drawn in _readings(default_suite[:12], 0.2):
        true = story.scenes[k - 2].state
        assert reading_errors(true, memory)[0] == len(drawn), (story.id, k)
        for subject, attribute in drawn:
            assert memory_value(memory, subject, attribute) != state_value(true, subject, attribute)


def test_rate_zero_is_the_structured_memory(default_suite: list[Story]) -> None:
    for story, k, memory, drawn in _readings(default_suite, 0.0):
        assert drawn == [] and memory == state_json(story.scenes[k - 2].state)


def test_readings_are_deterministic_and_nested_across_rates(default_suite: list[Story]) -> None:
    before = [s.model_dump_json() for s in default_suite]
    low, high = _readings(default_suite, 0.05), _readings(default_suite, 0.2)
    assert _readings(default_suite, 0.05) == low  # same seed, same reading
    for (_, _, _, a), (_, _, _, b) in zip(low, high, strict=True):
        # one uniform per fact decides: an error at 5 % is an error at 20 % (dropped objects
        # hide their other facts, so compare the facts of objects kept)
        assert {f for f in a if f[1] == "present"} <= {f for f in b if f[1] == "present"}
    assert [s.model_dump_json() for s in default_suite] == before  # the truth is untouched
    assert extractor_seed("x", 2) == extractor_seed("x", 2) != extractor_seed("x", 3)
    assert extractor_seed("x", 2) != extractor_seed("y", 2)


def test_a_story_read_under_another_id_gets_other_errors(default_suite: list[Story]) -> None:
    story = next(s for s in default_suite if len(s.scenes) == 8)
    twin = story.model_copy(update={"id": story.id + "-twin"})
    a = [simulated_reading(story, k, 0.3)[1] for k in range(2, 9)]
    b = [simulated_reading(twin, k, 0.3)[1] for k in range(2, 9)]
    assert a != b


def test_every_kind_of_error_occurs(default_suite: list[Story]) -> None:
    kinds: Counter[str] = Counter()
    for story, k, memory, drawn in _readings(default_suite, 0.2):
        history = [s.state for s in story.scenes[: k - 2]]
        for subject, attribute in drawn:
            if attribute == "present" and subject in story.scenes[0].state.objects:
                kinds["dropped"] += 1
                assert subject not in memory["objects"]
                continue
            said = memory_value(memory, subject, attribute)
            earlier = [state_value(h, subject, attribute) for h in history]
            kinds["stale" if said in earlier else "other value"] += 1
    assert min(kinds.values()) >= 20 and set(kinds) == {"dropped", "stale", "other value"}


def test_memory_facts_cover_the_memory_requirements(default_suite: list[Story]) -> None:
    """Every memory check's fact is one the extractor reads (or an object's entry)."""
    for story in default_suite:
        for scene in story.scenes[1:]:
            facts = set(memory_facts(story.scenes[scene.index - 2].state))
            for r in scene.requirements:
                if r.source == "memory":
                    attr = "present" if r.attribute == "holder" else r.attribute
                    assert (r.subject, attr) in facts or (r.subject, "holder") in facts, r.id


def test_err00_supplies_what_structured_memory_supplies(default_suite: list[Story]) -> None:
    cond = get_condition(f"{PREDICTED_CONDITION}-err00")
    structured = get_condition("structured_memory")
    for story in default_suite:
        for scene in story.scenes[1:]:
            k = scene.index
            assert cond.context(story, k).data == structured.context(story, k).data
            for r in scene.requirements:
                # a prompt check never reads the context (the simulators' rule): compare the
                # memory checks only (structured memory "supplies" a character not yet seen)
                if r.source == "memory":
                    assert cond.supplies(story, k, r) == supplies_previous_state(story, k, r)
                assert cond.misleads is not None and cond.misleads(story, k, r) is None, r.id


def test_predicted_memory_supplies_or_misleads(default_suite: list[Story]) -> None:
    cond = get_condition(PREDICTED_CONDITION)
    assert cond.kind == "predicted" and cond.stream == "structured_memory"
    assert cond.context_factor == 1.0 and cond.misleads is not None
    n: Counter[str] = Counter()
    for story in default_suite:
        for scene in story.scenes[1:]:
            k = scene.index
            for r in scene.requirements:
                if r.source != "memory":
                    continue
                told = cond.misleads(story, k, r)
                if cond.supplies(story, k, r):
                    assert told is None
                    n["supplied"] += 1
                else:
                    n["misled" if told is not None else "neither"] += 1
    total = sum(n.values())
    assert 0.05 < n["misled"] / total < 0.2 and n["neither"] > 0, n
    assert 0.8 < n["supplied"] / total < 0.95, n


def test_error_variants_are_made_on_demand() -> None:
    cond = get_condition(f"{PREDICTED_CONDITION}-err25")
    assert "25%" in cond.description and cond.kind == "predicted"
    assert get_condition(f"{PREDICTED_CONDITION}-err25") is cond
    assert f"{PREDICTED_CONDITION}-err25" not in all_condition_names()
    assert is_condition(f"{PREDICTED_CONDITION}-err25") and not is_condition("nope")
    assert resolve_conditions("structured_memory,predicted_memory-err50") == [
        "structured_memory",
        "predicted_memory-err50",
    ]
    with pytest.raises(InputError, match="two digits"):
        get_condition(f"{PREDICTED_CONDITION}-err5")
    with pytest.raises(UnknownNameError, match="predicted_memory"):
        get_condition(f"{PREDICTED_CONDITION}-llm")


def test_register_extractor_hook(
    default_suite: list[Story], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real extractor is a callable; the condition reads what it returns, and a malformed
    answer is one clear error naming the extractor, story and scene."""
    monkeypatch.setattr(conditions.CONDITIONS, "_items", dict(conditions.CONDITIONS._items))
    calls: list[tuple[str, int]] = []

    def reader(story: Story, k: int) -> dict[str, Any]:
        calls.append((story.id, k))
        memory = state_json(story.scenes[k - 2].state)
        memory["weather"] = "snowy" if memory["weather"] != "snowy" else "clear"
        return memory

    name = register_extractor("reader", reader)
    assert name == "predicted_memory-reader" and name in all_condition_names()
    cond = get_condition(name)
    story = next(s for s in default_suite if len(s.scenes) == 5)
    weather = next(r for r in story.scenes[2].requirements if r.attribute == "weather")
    assert weather.source == "memory"
    assert not cond.supplies(story, 3, weather)
    assert cond.misleads is not None
    assert cond.misleads(story, 3, weather) == ("weather", cond.context(story, 3).data["weather"])
    assert calls == [(story.id, 3)]  # read once per story and scene (memoised)

    def broken(story: Story, k: int) -> Any:
        return ["not", "a", "memory"]

    bad = get_condition(register_extractor("broken", broken))
    with pytest.raises(InputError, match=rf"extractor 'predicted_memory-broken', story {story.id}"):
        bad.context(story, 2)
    for wrong in ("err20", "LLM", ""):
        with pytest.raises(InputError, match="extractor name"):
            register_extractor(wrong, reader)


def test_the_documented_rate_is_the_default_suites(default_suite: list[Story]) -> None:
    """docs/analysis.md states the share of facts the default extractor reads wrong."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "analysis.md").read_text("utf-8")
    wrong, total = suite_reading_errors(default_suite, DEFAULT_ERROR_RATE)
    assert f"{100 * wrong / total:.1f} % of {total:,} facts are read" in doc
