"""Scene texts never contradict the scene's state, and the templates use every event type.

Issue #10 items 5 and 6: a model that follows the text must draw the expected state (no
held vase "hits the floor", no hot sun at night), and the default suite exercises every
event type of the schema, ``appear`` and ``remove`` included, so resurrections are tested.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from text_contradictions import SHAPES, scene_contradictions

from vsb.generator.generate import generate_suite
from vsb.state import replay
from vsb.story.invariants import story_problems
from vsb.story.models import (
    EVENT_TYPES,
    PROMPT_STYLES,
    Appear,
    ChangeAttr,
    Character,
    Enter,
    Event,
    Remove,
    SceneState,
    Story,
    World,
    WorldObject,
)
from vsb.story.text import compose_scene, split_sentences

SEEDS = range(5)


@pytest.fixture(scope="module")
def suites(default_suite: list[Story]) -> dict[tuple[int, str], list[Story]]:
    """The default suite at seeds 0-4, in every text style."""
    out = {(0, "plain"): default_suite}
    for seed in SEEDS:
        for style in PROMPT_STYLES:
            if (seed, style) not in out:
                out[(seed, style)] = generate_suite(seed, text_style=style)  # type: ignore[arg-type]
    return out


def _stories(suites: dict[tuple[int, str], list[Story]]) -> Iterator[tuple[str, Story]]:
    for (seed, style), stories in sorted(suites.items()):
        for story in stories:
            yield f"seed {seed} {style} {story.id}", story


def test_no_scene_text_contradicts_its_state(
    suites: dict[tuple[int, str], list[Story]],
) -> None:
    found = [f"{where}: {p}" for where, s in _stories(suites) for p in scene_contradictions(s)]
    assert found == [], "\n".join(found[:20])


def test_the_scanner_reads_every_sentence(suites: dict[tuple[int, str], list[Story]]) -> None:
    unread = Counter[str]()
    n = 0
    for _, story in _stories(suites):
        for sc in story.scenes:
            for sentence in split_sentences(sc.text):
                n += 1
                if not any(p.fullmatch(sentence) for p in SHAPES.values()):
                    unread[sentence] += 1
    assert not unread, unread.most_common(5)
    assert n > 5_000


def test_generated_suites_satisfy_every_invariant(
    suites: dict[tuple[int, str], list[Story]],
) -> None:
    for where, story in _stories(suites):
        states = [sc.state for sc in story.scenes]
        assert list(story_problems(story, states, where)) == [], where


# --- the scanner finds the contradictions of the issue ---------------------------------------


def _with_text(story: Story, k: int, extra: str) -> Story:
    scenes = list(story.scenes)
    scenes[k - 1] = scenes[k - 1].model_copy(update={"text": f"{scenes[k - 1].text} {extra}"})
    return story.model_copy(update={"scenes": scenes})


def _scene_where(
    default_suite: list[Story], test: Callable[[SceneState], bool]
) -> tuple[Story, int]:
    for story in default_suite:
        for sc in story.scenes[1:]:
            if test(sc.state):
                return story, sc.index
    raise AssertionError("no such scene")  # pragma: no cover


def test_scanner_flags_falling_held_object_and_sun_at_night(default_suite: list[Story]) -> None:
    story, k = _scene_where(
        default_suite, lambda s: any(o.holder for o in s.objects.values() if not o.removed)
    )
    kind = next(kd for kd, o in story.scenes[k - 1].state.objects.items() if o.holder)
    bad = _with_text(story, k, f"The {kind} slips off the edge and hits the floor.")
    assert any("falls but stays in" in p for p in scene_contradictions(bad))

    story, k = _scene_where(default_suite, lambda s: s.time in ("evening", "night"))
    bad = _with_text(story, k, "The hot sun beats down on the flowers.")
    assert any("sun or daylight" in p for p in scene_contradictions(bad))


def test_scanner_flags_two_poses_and_changes_that_change_nothing(
    default_suite: list[Story],
) -> None:
    story, k = _scene_where(default_suite, lambda s: bool(s.order))
    state = story.scenes[k - 1].state
    who = state.order[0]
    bad = _with_text(story, k, f"{who} is waving now. {who} is cheering now.")
    assert any("stated as 'waving' and 'cheering'" in p for p in scene_contradictions(bad))
    top = state.characters[who].top
    bad = _with_text(story, k, f"{who} changes into a {top} top.")
    assert any("changes nothing" in p for p in scene_contradictions(bad))
    bad = _with_text(story, k, f"{who} takes off the none and now has no accessory.")
    assert any("starts from 'none'" in p for p in scene_contradictions(bad))


# --- event-type coverage ---------------------------------------------------------------------


def test_default_suite_uses_every_event_type(default_suite: list[Story]) -> None:
    used = Counter(ev.type for s in default_suite for sc in s.scenes for ev in sc.events)
    assert set(used) == set(EVENT_TYPES), set(EVENT_TYPES) - set(used)
    resurrection = [
        r
        for s in default_suite
        for sc in s.scenes
        for r in sc.requirements
        if r.taxonomy == "object_resurrected" and r.source == "memory"
    ]
    assert resurrection and all(r.attribute == "present" and r.expected is False
                                for r in resurrection)  # fmt: skip


def test_every_seed_uses_every_event_type(suites: dict[tuple[int, str], list[Story]]) -> None:
    for seed in SEEDS:
        stories = suites[(seed, "plain")]
        used = {ev.type for s in stories for sc in s.scenes for ev in sc.events}
        assert used == set(EVENT_TYPES), (seed, set(EVENT_TYPES) - used)


# --- sentences of the new and mended events ------------------------------------------------


def _char(name: str, skin: str, top: str, present: bool = True) -> Character:
    return Character(name=name, skin=skin, hair_color="black", hair_style="short", top=top,
                     trousers="blue", accessory="none", initially_present=present)  # fmt: skip


WORLD = World(
    characters=[_char("Ama", "tone-1", "red"), _char("Bo", "tone-2", "green", present=False)],
    objects=[
        WorldObject(kind="vase", color="pink", initial_state="intact", initially_present=False),
        WorldObject(kind="apple", color="red", initial_state="whole", count=3),
    ],
    locations=["park"],
    start_time="noon",
    start_weather="clear",
)


def _texts(*scenes: list[Event]) -> list[str]:
    events: list[list[Event]] = [[], *scenes]
    states = replay(WORLD, events, "t")
    return [
        compose_scene(k, ev, states[k - 2] if k > 1 else None, states[k - 1], WORLD)[0]
        for k, ev in enumerate(events, start=1)
    ]


def test_appear_in_hands_and_counted_removal_read_right() -> None:
    texts = _texts([Appear(object="vase", holder="Ama")], [Remove(object="apple")])
    assert "A pink vase, which is intact, appears in Ama's hands." in texts[1]
    assert "The apples are taken away." in texts[2]


def test_an_entering_character_is_described_as_they_enter() -> None:
    texts = _texts(
        [Enter(character="Bo"), ChangeAttr(character="Bo", attribute="accessory", value="hat")]
    )
    assert "and no accessory, and is standing. Bo puts on a hat." in texts[1]
