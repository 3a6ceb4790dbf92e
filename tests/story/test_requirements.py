"""Requirement derivation details: accessories once taken off, causal links from events."""

from __future__ import annotations

from vsb.state import replay
from vsb.story.models import (
    ChangeAttr,
    ChangeState,
    Character,
    Event,
    SceneState,
    World,
    WorldObject,
)
from vsb.story.requirements import Derived, derive_causal_links, derive_story

WORLD = World(
    characters=[
        Character(name="Ama", skin="tone-1", hair_color="black", hair_style="short", top="red",
                  trousers="blue", accessory="none"),
    ],
    objects=[WorldObject(kind="vase", color="pink", initial_state="intact", initial_holder="Ama")],
    locations=["kitchen"],
    start_time="noon",
    start_weather="clear",
)  # fmt: skip


def _derive(*scenes: list[Event]) -> tuple[Derived, list[SceneState], list[list[Event]]]:
    events: list[list[Event]] = [[], *scenes]
    states = replay(WORLD, events, "t")
    return derive_story(WORLD, events, states), states, events


def test_accessory_taken_off_is_required_even_if_none_at_the_start() -> None:
    d, _, _ = _derive(
        [ChangeAttr(character="Ama", attribute="accessory", value="hat")],
        [ChangeAttr(character="Ama", attribute="accessory", value="none")],
        [ChangeAttr(character="Ama", attribute="top", value="green")],
    )
    acc = [[r for r in reqs if r.attribute == "accessory"] for reqs in d.requirements]
    assert acc[0] == []  # never worn one: "none" is not checked
    assert [r.expected for r in acc[1]] == ["hat"]
    assert [(r.expected, r.source) for r in acc[2]] == [("none", "prompt")]
    assert [(r.expected, r.source) for r in acc[3]] == [("none", "memory")]


def test_causal_links_come_from_the_stated_causes_of_the_events() -> None:
    cause = "Ama knocks the vase hard against the wall"
    d, states, events = _derive(
        [ChangeState(object="vase", state="cracked", cause=cause)],
        [ChangeAttr(character="Ama", attribute="top", value="green")],
        [ChangeState(object="vase", state="broken")],
    )
    links = derive_causal_links(events, states)
    assert links == d.causal_links and len(links) == 1
    assert (links[0].cause_scene, links[0].effect_scenes, links[0].description) == (2, [3], cause)
    state_reqs = {k: r for k, reqs in enumerate(d.requirements, 1) for r in reqs
                  if r.attribute == "state"}  # fmt: skip
    assert state_reqs[3].dimension == "causal" and state_reqs[3].causal_link == 0
    assert state_reqs[4].dimension == "object_state" and state_reqs[4].causal_link is None
    assert d.texts[1].startswith(f"In the kitchen. {cause}, so the vase is cracked now.")
