"""The state machine: one test per refusal rule, and a property test over random events."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vsb.errors import TransitionError
from vsb.state import replay
from vsb.story import vocab
from vsb.story.invariants import state_problems
from vsb.story.models import (
    EVENT_TYPES,
    Appear,
    ChangeAttr,
    ChangeState,
    Character,
    Drop,
    Enter,
    Event,
    Exit,
    Give,
    Move,
    Pickup,
    Remove,
    SetCount,
    SetPose,
    SetTime,
    SetWeather,
    Swap,
    World,
    WorldObject,
)


def _char(name: str, skin: str, top: str, present: bool = True) -> Character:
    return Character(
        name=name, skin=skin, hair_color="black", hair_style="short", top=top,
        trousers="blue", accessory="hat", initially_present=present,
    )  # fmt: skip


WORLD = World(
    characters=[
        _char("Ama", "tone-1", "red"),
        _char("Bo", "tone-2", "green"),
        _char("Kai", "tone-3", "yellow", present=False),
    ],
    objects=[
        WorldObject(kind="umbrella", color="red", initial_state="closed", initial_holder="Ama"),
        WorldObject(kind="vase", color="blue", initial_state="intact"),
        WorldObject(kind="apple", color="green", initial_state="whole", count=3),
    ],
    locations=["park", "kitchen"],
    start_time="noon",
    start_weather="clear",
)


def run(*events: Event) -> None:
    replay(WORLD, [[], list(events)], "t")


def rule_of(*events: Event) -> str:
    with pytest.raises(TransitionError) as info:
        run(*events)
    assert info.value.story == "t" and info.value.scene == 2
    return info.value.rule


@pytest.mark.parametrize(
    ("events", "rule"),
    [
        ((Give(object="umbrella", giver="Bo", receiver="Ama"),), "give_not_held"),
        ((Pickup(object="umbrella", character="Bo"),), "pickup_held_by_other"),
        ((ChangeState(object="vase", state="broken"), ChangeState(object="vase", state="intact")),
         "state_backwards"),
        ((SetTime(time="morning"),), "time_backwards"),
        ((Enter(character="Ama"),), "enter_present"),
        ((Exit(character="Kai"),), "exit_absent"),
        ((Remove(object="vase"), ChangeState(object="vase", state="broken")), "acting_on_removed"),
        ((SetCount(object="apple", count=-1),), "count_negative"),
        ((SetCount(object="vase", count=2),), "not_counted"),
        ((ChangeAttr(character="Ama", attribute="skin", value="tone-3"),), "identity_change"),
        ((Drop(object="umbrella", character="Bo"),), "drop_not_held"),
        ((Move(location="kitchen"), Pickup(object="vase", character="Bo")), "pickup_not_here"),
        ((Move(location="park"),), "move_same_location"),
        ((SetPose(character="Kai", pose="sitting"),), "character_absent"),
        ((Appear(object="vase"),), "appear_present"),
        ((Give(object="umbrella", giver="Ama", receiver="Ama"),), "give_self"),
        ((Swap(a="Ama", b="Ama"),), "swap_self"),
        ((SetWeather(weather="foggy"),), "unknown_value"),
        ((SetPose(character="Zed", pose="sitting"),), "unknown_character"),
        # one object per pair of hands: picking up, receiving
        ((Pickup(object="vase", character="Ama"),), "hands_full"),
        ((Pickup(object="vase", character="Bo"),
          Give(object="umbrella", giver="Ama", receiver="Bo")), "hands_full"),
        # counted objects always lie on the ground
        ((Pickup(object="apple", character="Bo"),), "counted_held"),
        # taking off an accessory that is not worn; changing into what one wears
        ((ChangeAttr(character="Ama", attribute="accessory", value="none"),
          ChangeAttr(character="Ama", attribute="accessory", value="none")), "attr_unchanged"),
        ((ChangeAttr(character="Ama", attribute="trousers", value="blue"),), "attr_unchanged"),
        # tops differ between characters and from the wearer's trousers
        ((ChangeAttr(character="Ama", attribute="top", value="blue"),), "clothing_not_distinct"),
        ((ChangeAttr(character="Ama", attribute="top", value="green"),), "clothing_not_distinct"),
        ((ChangeAttr(character="Ama", attribute="top", value="yellow"),),  # Kai, who is away
         "clothing_not_distinct"),
        ((ChangeAttr(character="Ama", attribute="trousers", value="red"),),
         "clothing_not_distinct"),
        # an object changes (state, count) only where it can be seen
        ((Move(location="kitchen"), ChangeState(object="vase", state="broken")), "object_absent"),
        ((Move(location="kitchen"), SetCount(object="apple", count=2)), "object_absent"),
    ],
)  # fmt: skip
def test_refusal_rules(events: tuple[Event, ...], rule: str) -> None:
    assert rule_of(*events) == rule


def test_taking_off_a_missing_accessory_says_so() -> None:
    with pytest.raises(TransitionError, match="wears no accessory to take off"):
        run(
            ChangeAttr(character="Ama", attribute="accessory", value="none"),
            ChangeAttr(character="Ama", attribute="accessory", value="none"),
        )


def _world(*objects: WorldObject, characters: tuple[Character, ...] = ()) -> World:
    return WORLD.model_copy(
        update={"objects": list(objects), "characters": list(characters or WORLD.characters)}
    )


@pytest.mark.parametrize(
    ("world", "rule"),
    [
        (_world(WorldObject(kind="apple", color="red", initial_state="whole", count=2,
                            initial_holder="Ama")), "counted_held"),
        (_world(WorldObject(kind="vase", color="red", initial_state="intact", initial_holder="Bo"),
                WorldObject(kind="book", color="blue", initial_state="closed",
                            initial_holder="Bo")), "hands_full"),
        (_world(WorldObject(kind="vase", color="red", initial_state="intact", initial_holder="Bo",
                            initially_present=False)), "object_absent"),
    ],
)  # fmt: skip
def test_world_refusal_rules(world: World, rule: str) -> None:
    with pytest.raises(TransitionError) as info:
        replay(world, [[]], "w")
    assert info.value.rule == rule and info.value.scene == 0


def test_appear_in_full_hands_or_counted_in_hands_is_refused() -> None:
    late = _world(
        WorldObject(kind="umbrella", color="red", initial_state="closed", initial_holder="Ama"),
        WorldObject(kind="vase", color="blue", initial_state="intact", initially_present=False),
        WorldObject(kind="coin", color="green", initial_state="whole", count=2,
                    initially_present=False),
    )  # fmt: skip
    for ev, rule in (
        (Appear(object="vase", holder="Ama"), "hands_full"),
        (Appear(object="coin", holder="Bo"), "counted_held"),
    ):
        with pytest.raises(TransitionError) as info:
            replay(late, [[], [ev]], "t")
        assert info.value.rule == rule
    states = replay(late, [[], [Appear(object="vase", holder="Bo"), Appear(object="coin")]], "t")
    assert states[1].objects["vase"].holder == "Bo" and states[1].object_visible("coin")


def test_removed_object_frees_the_hands_that_held_it() -> None:
    states = replay(
        WORLD, [[], [Remove(object="umbrella")], [Pickup(object="vase", character="Ama")]], "t"
    )
    gone = states[1].objects["umbrella"]
    assert gone.removed and gone.holder is None and gone.place is None
    assert not states[1].object_visible("umbrella")
    assert states[2].objects["vase"].holder == "Ama"


def test_error_names_story_scene_event_and_rule() -> None:
    with pytest.raises(TransitionError) as info:
        run(SetPose(character="Ama", pose="sitting"), SetTime(time="morning"))
    err = info.value
    assert (err.story, err.scene, err.event, err.rule) == ("t", 2, 1, "time_backwards")
    assert "story t scene 2 event 1" in str(err) and "time_backwards" in str(err)


def test_new_day_allows_earlier_time_and_counts_days() -> None:
    states = replay(WORLD, [[], [SetTime(time="morning", new_day=True)]], "t")
    assert states[1].time == "morning" and states[1].day == 2


def test_valid_sequence_tracks_holders_places_and_visibility() -> None:
    states = replay(
        WORLD,
        [
            [],
            [Give(object="umbrella", giver="Ama", receiver="Bo"),
             Drop(object="umbrella", character="Bo")],
            [Move(location="kitchen")],
            [Move(location="park"), Pickup(object="umbrella", character="Ama"),
             ChangeState(object="umbrella", state="broken")],
        ],
        "t",
    )  # fmt: skip
    assert states[1].objects["umbrella"].holder is None
    assert states[1].objects["umbrella"].place == "park"
    assert not states[2].object_visible("umbrella")  # left behind in the park
    assert states[3].objects["umbrella"].holder == "Ama"
    assert states[3].objects["umbrella"].state == "broken"


def test_exit_takes_held_object_out_of_view_and_enter_restores_it() -> None:
    states = replay(WORLD, [[], [Exit(character="Ama")], [Enter(character="Ama", position=0)]], "t")
    assert not states[1].object_visible("umbrella")
    assert states[2].object_visible("umbrella") and states[2].order[0] == "Ama"


# --- property test: random events either apply or raise TransitionError ----------------------

names = st.sampled_from(["Ama", "Bo", "Kai", "Zed"])
objects = st.sampled_from(["umbrella", "vase", "apple", "kite"])
any_state = st.sampled_from(sorted({s for k in vocab.OBJECT_KINDS.values() for s in k.states}))
EVENT_STRATEGIES = {
    "Enter": st.builds(Enter, character=names, position=st.none() | st.integers(-2, 5)),
    "Exit": st.builds(Exit, character=names),
    "Move": st.builds(Move, location=st.sampled_from([*vocab.LOCATIONS, "moon"])),
    "SetTime": st.builds(SetTime, time=st.sampled_from([*vocab.TIMES, "dusk"]),
                         new_day=st.booleans()),
    "SetWeather": st.builds(SetWeather, weather=st.sampled_from([*vocab.WEATHERS, "foggy"])),
    "Appear": st.builds(Appear, object=objects, holder=st.none() | names),
    "Remove": st.builds(Remove, object=objects),
    "ChangeState": st.builds(ChangeState, object=objects, state=any_state),
    "Give": st.builds(Give, object=objects, giver=names, receiver=names),
    "Drop": st.builds(Drop, object=objects, character=names),
    "Pickup": st.builds(Pickup, object=objects, character=names),
    "SetCount": st.builds(SetCount, object=objects, count=st.integers(-3, 9)),
    "ChangeAttr": st.builds(ChangeAttr, character=names,
              attribute=st.sampled_from(["top", "trousers", "accessory", "skin", "wings"]),
              value=st.sampled_from(["red", "hat", "none", "tone-1", "plaid"])),
    "Swap": st.builds(Swap, a=names, b=names),
    "SetPose": st.builds(SetPose, character=names, pose=st.sampled_from([*vocab.POSES, "flying"])),
}  # fmt: skip
event_strategy = st.one_of(*EVENT_STRATEGIES.values())


def test_strategy_covers_every_event_type() -> None:
    types = {cls: cls.model_fields["type"].default for cls in (
        Enter, Exit, Move, SetTime, SetWeather, Appear, Remove, ChangeState, Give, Drop, Pickup,
        SetCount, ChangeAttr, Swap, SetPose)}  # fmt: skip
    assert {types[globals()[n]] for n in EVENT_STRATEGIES} == set(EVENT_TYPES)


LATE_WORLD = _world(
    WorldObject(kind="umbrella", color="red", initial_state="closed", initial_holder="Ama"),
    WorldObject(kind="vase", color="blue", initial_state="intact", initially_present=False),
    WorldObject(kind="apple", color="green", initial_state="whole", count=3,
                initially_present=False),
)  # fmt: skip


@pytest.mark.parametrize("world", [WORLD, LATE_WORLD], ids=["all-present", "late-objects"])
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(event_strategy, max_size=4), min_size=1, max_size=5))
def test_random_events_apply_or_raise_transition_error(
    world: World, scenes: list[list[Event]]
) -> None:
    try:
        states = replay(world, [[], *scenes], "prop")
    except TransitionError as err:
        assert err.rule and err.story == "prop" and err.scene >= 2
        return
    # Invariants of every reachable state.
    for s in states:
        assert len(set(s.order)) == len(s.order)
        assert set(s.order) == {n for n, c in s.characters.items() if c.present}
        # hands hold one object, counted objects lie on the ground, tops stay distinct
        assert state_problems(s) == []
        for o in s.objects.values():
            assert o.count is None or o.count >= 0
            assert o.holder is None or o.place is None
            assert not o.removed or (o.holder is None and o.place is None)
