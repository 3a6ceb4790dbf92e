"""Requirement derivation, pinned: which facts a scene's image must show and in what order,
their labels, state regressions, causal links and the scene texts' states."""

from __future__ import annotations

from vsb.state import replay
from vsb.story.models import (
    CausalLink,
    ChangeAttr,
    ChangeState,
    Character,
    Enter,
    Event,
    Exit,
    Move,
    Remove,
    SetCount,
    SetPose,
    World,
    WorldObject,
)
from vsb.story.requirements import (
    build_requirements,
    derive_causal_links,
    derive_story,
    scene_facts,
)

WORLD = World(
    characters=[
        Character(name="Ama", skin="tone-1", hair_color="black", hair_style="short", top="red",
                  trousers="blue", accessory="none"),
        Character(name="Bo", skin="tone-5", hair_color="grey", hair_style="bun", top="green",
                  trousers="navy", accessory="hat"),
        Character(name="Cy", skin="tone-3", hair_color="auburn", hair_style="long", top="teal",
                  trousers="pink", accessory="none", initially_present=False),
    ],
    objects=[
        WorldObject(kind="lantern", color="blue", initial_state="unlit", initial_holder="Bo"),
        WorldObject(kind="coin", color="yellow", initial_state="whole", count=3),
        WorldObject(kind="vase", color="pink", initial_state="intact", initial_holder="Ama"),
    ],
    locations=["kitchen", "park", "beach"],
    start_time="noon",
    start_weather="clear",
)  # fmt: skip

SCENE_END = [("scene", "location", "kitchen"), ("scene", "weather", "clear"),
             ("scene", "time", "noon")]  # fmt: skip
AMA = [("Ama", "present", True), ("Ama", "skin", "tone-1"), ("Ama", "hair", ["black", "short"]),
       ("Ama", "top", "red"), ("Ama", "trousers", "blue"), ("Ama", "pose", "standing")]  # fmt: skip
VASE = [("vase", "holder", "Ama"), ("vase", "state", "intact")]


def _states(*scenes: list[Event]):
    events: list[list[Event]] = [[], *scenes]
    return events, replay(WORLD, events, "t")


def test_scene_one_facts_in_their_fixed_order() -> None:
    _, states = _states()
    assert scene_facts(states[0], WORLD) == [
        *AMA,
        ("Bo", "present", True), ("Bo", "skin", "tone-5"), ("Bo", "hair", ["grey", "bun"]),
        ("Bo", "top", "green"), ("Bo", "trousers", "navy"), ("Bo", "accessory", "hat"),
        ("Bo", "pose", "standing"),
        # Cy has not appeared yet: nothing about Cy
        ("scene", "order", ["Ama", "Bo"]),
        ("lantern", "holder", "Bo"), ("lantern", "state", "unlit"),  # two states: checked
        ("coin", "present", True), ("coin", "count", 3),  # one state: not checked
        *VASE,
        *SCENE_END,
    ]  # fmt: skip


def test_someone_who_left_is_required_absent_and_what_they_hold_is_not_checked() -> None:
    _, states = _states([Exit(character="Bo")])
    assert scene_facts(states[1], WORLD, states[:1]) == [
        *AMA,
        ("Bo", "present", False),  # seen before, gone now
        # one person left: no left-to-right order; Bo's lantern left with Bo
        ("coin", "present", True), ("coin", "count", 3),
        *VASE,
        *SCENE_END,
    ]  # fmt: skip


def test_a_removed_object_is_required_gone_and_the_next_objects_still_checked() -> None:
    _, states = _states([Remove(object="lantern"), SetCount(object="coin", count=1)])
    facts = scene_facts(states[1], WORLD, states[:1])
    objects = [f for f in facts if f[0] in ("lantern", "coin", "vase")]
    assert objects == [
        ("lantern", "present", False), ("coin", "present", True), ("coin", "count", 1), *VASE,
    ]  # fmt: skip


def test_no_coin_left_is_not_checked() -> None:
    _, states = _states([SetCount(object="coin", count=0)])
    facts = scene_facts(states[1], WORLD, states[:1])
    assert [f for f in facts if f[0] == "coin"] == []
    assert [f for f in facts if f[0] == "vase"] == VASE  # the objects after it still are


def test_accessory_none_is_checked_only_once_one_was_worn() -> None:
    _, states = _states(
        [SetPose(character="Ama", pose="sitting")],
        [ChangeAttr(character="Ama", attribute="accessory", value="scarf")],
        [ChangeAttr(character="Ama", attribute="accessory", value="none")],
    )
    acc = [
        [f for f in scene_facts(s, WORLD, states[:k]) if f[:2] == ("Ama", "accessory")]
        for k, s in enumerate(states)
    ]
    assert acc == [[], [], [("Ama", "accessory", "scarf")], [("Ama", "accessory", "none")]]


def test_three_people_and_an_entrance() -> None:
    _, states = _states([Enter(character="Cy")])
    facts = scene_facts(states[1], WORLD, states[:1])
    assert ("scene", "order", ["Ama", "Bo", "Cy"]) in facts
    assert ("Cy", "present", True) in facts


def _reqs(k: int, states, links=(), stated=frozenset()):
    return {
        r.id: r
        for r in build_requirements(k, states[k - 1], WORLD, set(stated), states[: k - 1], links)
    }


def test_labels_of_presence_depend_on_the_expected_value() -> None:
    _, states = _states([Exit(character="Bo"), Remove(object="coin")])
    r = _reqs(2, states)
    labels = {i: (x.dimension, x.taxonomy) for i, x in r.items() if x.attribute == "present"}
    assert labels == {
        "s2.Ama.present": ("adherence", "character_missing"),
        "s2.Bo.present": ("adherence", "character_unexpected"),
        "s2.coin.present": ("object_persistence", "object_resurrected"),
    }
    r1 = _reqs(1, states)
    assert (r1["s1.coin.present"].dimension, r1["s1.coin.present"].taxonomy) == (
        "object_persistence", "object_disappeared",
    )  # fmt: skip
    assert (r1["s1.coin.count"].dimension, r1["s1.coin.count"].taxonomy) == (
        "object_persistence", "count_mismatch",
    )  # fmt: skip
    assert (r1["s1.scene.order"].dimension, r1["s1.scene.order"].taxonomy) == (
        "spatial", "order_swap",
    )  # fmt: skip
    assert (r1["s1.Bo.hair"].dimension, r1["s1.Bo.hair"].taxonomy) == (
        "identity", "identity_drift",
    )  # fmt: skip
    assert (r1["s1.Bo.pose"].dimension, r1["s1.Bo.pose"].taxonomy) == ("action", "pose_mismatch")
    assert (r1["s1.Bo.top"].dimension, r1["s1.Bo.top"].taxonomy) == (
        "clothing", "clothing_change",
    )  # fmt: skip
    assert (r1["s1.scene.time"].dimension, r1["s1.scene.time"].taxonomy) == (
        "chronology", "time_regression",
    )  # fmt: skip


def test_a_state_that_differs_from_an_earlier_one_is_a_regression_check() -> None:
    _, states = _states([ChangeState(object="vase", state="cracked")], [])
    r1, r2, r3 = _reqs(1, states), _reqs(2, states), _reqs(3, states)
    assert r1["s1.vase.state"].taxonomy == "wrong_state"
    assert r2["s2.vase.state"].taxonomy == "state_regression"
    assert r3["s3.vase.state"].taxonomy == "state_regression"
    assert r2["s2.lantern.state"].taxonomy == "wrong_state"  # unchanged lantern
    # other attributes of the object keep their own label
    assert r2["s2.vase.holder"].taxonomy == "wrong_holder"
    assert r2["s2.Ama.top"].taxonomy == "clothing_change"


def test_sources_prompt_in_scene_one_and_when_stated() -> None:
    _, states = _states([])
    r1 = _reqs(1, states)
    assert {x.source for x in r1.values()} == {"prompt"}
    r2 = _reqs(2, states, stated={("Ama", "top")})
    assert r2["s2.Ama.top"].source == "prompt"
    assert {x.source for i, x in r2.items() if i != "s2.Ama.top"} == {"memory"}


def test_causal_links_mark_the_cause_and_effect_scenes_only() -> None:
    cause = "Bo lights the lantern with a match"
    events, states = _states(
        [SetPose(character="Ama", pose="sitting"), ChangeState(object="lantern", state="lit",
                                                               cause=cause)],
        [Exit(character="Bo")],  # the lantern leaves with Bo
        [Enter(character="Bo")],  # back, still lit: an effect scene
        [ChangeState(object="lantern", state="unlit")],
        [ChangeState(object="lantern", state="lit")],  # lit again, but not by that cause
    )  # fmt: skip
    links = derive_causal_links(events, states)
    assert links == [
        CausalLink(cause_scene=2, cause_event=1, description=cause, subject="lantern",
                   attribute="state", value="lit", effect_scenes=[4]),
    ]  # fmt: skip
    marked = {
        k: [(i, x.dimension, x.taxonomy) for i, x in _reqs(k, states, links).items()
            if x.causal_link is not None]
        for k in range(1, 7)
    }  # fmt: skip
    assert marked == {
        1: [], 2: [("s2.lantern.state", "causal", "causal_break")], 3: [],
        4: [("s4.lantern.state", "causal", "causal_break")], 5: [], 6: [],
    }  # fmt: skip
    r2 = _reqs(2, states, links)
    assert r2["s2.lantern.holder"].causal_link is None  # the same subject, another attribute
    assert r2["s2.Ama.pose"].causal_link is None


def test_an_effect_ends_when_the_object_is_removed() -> None:
    events, states = _states(
        [ChangeState(object="vase", state="cracked", cause="Ama drops it")],
        [],
        [Remove(object="vase")],
        [],
    )
    (link,) = derive_causal_links(events, states)
    assert (link.cause_scene, link.effect_scenes) == (2, [3])


def test_derive_story_gives_each_scene_its_own_text_and_requirements() -> None:
    events, states = _states(
        [Move(location="park"), ChangeAttr(character="Ama", attribute="top", value="orange")],
        [Move(location="beach")],
    )
    d = derive_story(WORLD, events, states)
    assert d.texts[0].startswith("In the kitchen, at noon; the weather is clear.")
    assert "wears a red top" in d.texts[0] and "orange" not in d.texts[0]
    # a scene that moves opens where the one before ended
    assert d.texts[1].startswith("In the kitchen. Everyone goes to the park.")
    assert d.texts[2].startswith("In the park. Everyone goes to the beach.")
    assert [[r.id for r in reqs if r.attribute == "location"] for reqs in d.requirements] == [
        ["s1.scene.location"], ["s2.scene.location"], ["s3.scene.location"],
    ]  # fmt: skip
    tops = [next(r for r in reqs if r.id.endswith("Ama.top")) for reqs in d.requirements]
    assert [(t.expected, t.source) for t in tops] == [
        ("red", "prompt"), ("orange", "prompt"), ("orange", "memory"),
    ]  # fmt: skip
