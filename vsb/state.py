"""The deterministic state machine: replays a story's events into per-scene states.

``replay`` starts from the world specification and applies each scene's events in order;
the state at the end of scene *k* is the expected state of image *k*. Impossible events
raise ``TransitionError`` naming the story, scene, event index and the rule broken.
Rules (the ``rule`` names): ``unknown_character``, ``unknown_object``, ``unknown_value``,
``character_absent``, ``enter_present``, ``exit_absent``, ``move_same_location``,
``time_backwards``, ``appear_present``, ``acting_on_removed``, ``object_absent``,
``state_backwards``, ``give_not_held``, ``give_self``, ``drop_not_held``,
``pickup_held_by_other``, ``pickup_not_here``, ``count_negative``, ``not_counted``,
``identity_change``, ``swap_self``, ``hands_full`` (a character holds at most one object),
``counted_held`` (counted objects always lie on the ground), ``attr_unchanged`` (a clothing
change must change something: no taking off an accessory that is not worn),
``clothing_not_distinct`` (tops differ between characters and from the wearer's trousers).
The world itself is checked with the same rule names (scene 0) before the first event.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from vsb.errors import TransitionError
from vsb.story import vocab
from vsb.story.models import (
    Appear,
    ChangeAttr,
    ChangeState,
    CharacterState,
    Drop,
    Enter,
    Event,
    Exit,
    Give,
    Move,
    ObjectState,
    Pickup,
    Remove,
    SceneState,
    SetCount,
    SetPose,
    SetTime,
    SetWeather,
    Swap,
    World,
)


@dataclass
class _Char:
    skin: str
    hair_color: str
    hair_style: str
    top: str
    trousers: str
    accessory: str
    pose: str
    present: bool
    seen: bool


@dataclass
class _Obj:
    color: str
    state: str
    count: int | None
    holder: str | None
    place: str | None
    appeared: bool
    removed: bool = False


@dataclass
class MutableState:
    """Working state while replaying; ``freeze`` turns it into a ``SceneState``."""

    location: str
    time: str
    day: int
    weather: str
    order: list[str]
    characters: dict[str, _Char]
    objects: dict[str, _Obj] = field(default_factory=dict)

    def freeze(self) -> SceneState:
        return SceneState(
            location=self.location,
            time=self.time,
            day=self.day,
            weather=self.weather,
            order=list(self.order),
            characters={n: CharacterState(**vars(c)) for n, c in self.characters.items()},
            objects={k: ObjectState(**vars(o)) for k, o in self.objects.items()},
        )


def initial_state(world: World) -> MutableState:
    """The state before scene 1's events."""
    start = world.locations[0]
    chars = {
        c.name: _Char(
            c.skin, c.hair_color, c.hair_style, c.top, c.trousers, c.accessory, c.pose,
            present=c.initially_present, seen=c.initially_present,
        )
        for c in world.characters
    }  # fmt: skip
    objs = {
        o.kind: _Obj(
            o.color, o.initial_state, o.count, o.initial_holder,
            None if o.initial_holder else start, appeared=o.initially_present,
        )
        for o in world.objects
    }  # fmt: skip
    order = [c.name for c in world.characters if c.initially_present]
    return MutableState(start, world.start_time, 1, world.start_weather, order, chars, objs)


class EventContext:
    """Where an event sits (story, 1-based scene, event index), for error messages."""

    def __init__(self, story: str, scene: int, event: int) -> None:
        self.story, self.scene, self.event = story, scene, event

    def fail(self, rule: str, detail: str) -> TransitionError:
        return TransitionError(rule, detail, story=self.story, scene=self.scene, event=self.event)


def _char(s: MutableState, name: str, ctx: EventContext, *, present: bool = True) -> _Char:
    if name not in s.characters:
        raise ctx.fail("unknown_character", f"no character named {name!r}")
    c = s.characters[name]
    if present and not c.present:
        raise ctx.fail("character_absent", f"{name} is not in the scene")
    return c


def _obj(s: MutableState, kind: str, ctx: EventContext, *, appeared: bool = True) -> _Obj:
    if kind not in s.objects:
        raise ctx.fail("unknown_object", f"no object {kind!r} in the world")
    o = s.objects[kind]
    if o.removed:
        raise ctx.fail("acting_on_removed", f"the {kind} was removed earlier")
    if appeared and not o.appeared:
        raise ctx.fail("object_absent", f"the {kind} has not appeared yet")
    return o


def _check_value(value: str, allowed: Collection[str], what: str, ctx: EventContext) -> None:
    if value not in allowed:
        raise ctx.fail("unknown_value", f"{value!r} is not a known {what}")


def _visible_here(s: MutableState, o: _Obj) -> bool:
    if o.holder is not None:
        return s.characters[o.holder].present
    return o.place == s.location


def _held_by(s: MutableState, name: str) -> str | None:
    """The object ``name`` holds, if any (removed objects are held by nobody)."""
    return next((k for k, o in s.objects.items() if o.holder == name and not o.removed), None)


def _check_hands(s: MutableState, kind: str, name: str, ctx: EventContext) -> None:
    """``name`` may take the object ``kind``: it is not counted and their hands are free."""
    if vocab.OBJECT_KINDS[kind].counted:
        raise ctx.fail("counted_held", f"the {kind} is counted and always lies on the ground")
    held = _held_by(s, name)
    if held is not None and held != kind:
        raise ctx.fail("hands_full", f"{name} already holds the {held}")


def _check_clothing(
    s: MutableState, name: str, attribute: str, value: str, ctx: EventContext
) -> None:
    """A clothing change must change something and keep tops distinct (rules
    ``attr_unchanged`` and ``clothing_not_distinct``)."""
    c = s.characters[name]
    if getattr(c, attribute) == value:
        if attribute == "accessory" and value == "none":
            raise ctx.fail("attr_unchanged", f"{name} wears no accessory to take off")
        raise ctx.fail("attr_unchanged", f"{name} already wears {value} ({attribute})")
    if attribute == "top":
        other = next((n for n, o in s.characters.items() if n != name and o.top == value), None)
        if other is not None:
            raise ctx.fail("clothing_not_distinct", f"{other} already wears a {value} top")
        if value == c.trousers:
            raise ctx.fail("clothing_not_distinct", f"{name}'s trousers are {value} too")
    if attribute == "trousers" and value == c.top:
        raise ctx.fail("clothing_not_distinct", f"{name}'s top is {value} too")


def apply_event(s: MutableState, ev: Event, ctx: EventContext) -> None:
    """Apply one event in place, or raise ``TransitionError``."""
    match ev:
        case Enter():
            c = _char(s, ev.character, ctx, present=False)
            if c.present:
                raise ctx.fail("enter_present", f"{ev.character} is already in the scene")
            c.present = c.seen = True
            pos = len(s.order) if ev.position is None else max(0, min(ev.position, len(s.order)))
            s.order.insert(pos, ev.character)
        case Exit():
            c = _char(s, ev.character, ctx, present=False)
            if not c.present:
                raise ctx.fail("exit_absent", f"{ev.character} is not in the scene")
            c.present = False
            s.order.remove(ev.character)
        case Move():
            _check_value(ev.location, vocab.LOCATIONS, "location", ctx)
            if ev.location == s.location:
                raise ctx.fail("move_same_location", f"already at the {ev.location}")
            s.location = ev.location
        case SetTime():
            _check_value(ev.time, vocab.TIMES, "time of day", ctx)
            if ev.new_day:
                s.day += 1
            elif vocab.time_index(ev.time) < vocab.time_index(s.time):
                raise ctx.fail("time_backwards", f"{s.time} -> {ev.time} without a new day")
            s.time = ev.time
        case SetWeather():
            _check_value(ev.weather, vocab.WEATHERS, "weather", ctx)
            s.weather = ev.weather
        case Appear():
            o = _obj(s, ev.object, ctx, appeared=False)
            if o.appeared:
                raise ctx.fail("appear_present", f"the {ev.object} is already in the story")
            if ev.holder is not None:
                _char(s, ev.holder, ctx)
                _check_hands(s, ev.object, ev.holder, ctx)
            o.appeared = True
            o.holder = ev.holder
            o.place = None if ev.holder else s.location
        case Remove():
            o = _obj(s, ev.object, ctx)
            if not _visible_here(s, o):
                raise ctx.fail("object_absent", f"the {ev.object} is not in this scene")
            o.removed = True
            o.holder = o.place = None  # gone for good: held by nobody, lying nowhere
        case ChangeState():
            o = _obj(s, ev.object, ctx)
            if not _visible_here(s, o):
                raise ctx.fail("object_absent", f"the {ev.object} is not in this scene")
            kind = vocab.OBJECT_KINDS[ev.object]
            _check_value(ev.state, kind.states, f"{ev.object} state", ctx)
            if not kind.can_change(o.state, ev.state):
                raise ctx.fail(
                    "state_backwards", f"the {ev.object} cannot go {o.state} -> {ev.state}"
                )
            o.state = ev.state
        case Give():
            o = _obj(s, ev.object, ctx)
            _char(s, ev.giver, ctx)
            _char(s, ev.receiver, ctx)
            if ev.giver == ev.receiver:
                raise ctx.fail("give_self", f"{ev.giver} cannot give to themself")
            if o.holder != ev.giver:
                raise ctx.fail("give_not_held", f"{ev.giver} does not hold the {ev.object}")
            _check_hands(s, ev.object, ev.receiver, ctx)
            o.holder = ev.receiver
        case Drop():
            o = _obj(s, ev.object, ctx)
            _char(s, ev.character, ctx)
            if o.holder != ev.character:
                raise ctx.fail("drop_not_held", f"{ev.character} does not hold the {ev.object}")
            o.holder, o.place = None, s.location
        case Pickup():
            o = _obj(s, ev.object, ctx)
            _char(s, ev.character, ctx)
            if o.holder is not None:
                raise ctx.fail("pickup_held_by_other", f"{o.holder} holds the {ev.object}")
            if o.place != s.location:
                raise ctx.fail("pickup_not_here", f"the {ev.object} is not at the {s.location}")
            _check_hands(s, ev.object, ev.character, ctx)
            o.holder, o.place = ev.character, None
        case SetCount():
            o = _obj(s, ev.object, ctx)
            if o.count is None:
                raise ctx.fail("not_counted", f"the {ev.object} is not a counted object")
            if not _visible_here(s, o):
                raise ctx.fail("object_absent", f"the {ev.object} is not in this scene")
            if ev.count < 0:
                raise ctx.fail("count_negative", f"count {ev.count} is below zero")
            if ev.count > vocab.MAX_COUNT:
                raise ctx.fail("unknown_value", f"count {ev.count} exceeds {vocab.MAX_COUNT}")
            o.count = ev.count
        case ChangeAttr():
            c = _char(s, ev.character, ctx)
            if ev.attribute in vocab.IDENTITY_ATTRIBUTES:
                raise ctx.fail("identity_change", f"{ev.attribute} is an identity attribute")
            if ev.attribute not in vocab.CLOTHING_ATTRIBUTES:
                raise ctx.fail("unknown_value", f"{ev.attribute!r} is not a clothing attribute")
            allowed = vocab.ACCESSORIES if ev.attribute == "accessory" else vocab.CLOTHING_COLORS
            _check_value(ev.value, allowed, ev.attribute, ctx)
            _check_clothing(s, ev.character, ev.attribute, ev.value, ctx)
            setattr(c, ev.attribute, ev.value)
        case Swap():
            _char(s, ev.a, ctx)
            _char(s, ev.b, ctx)
            if ev.a == ev.b:
                raise ctx.fail("swap_self", f"{ev.a} cannot swap with themself")
            i, j = s.order.index(ev.a), s.order.index(ev.b)
            s.order[i], s.order[j] = s.order[j], s.order[i]
        case SetPose():
            c = _char(s, ev.character, ctx)
            _check_value(ev.pose, vocab.POSES, "pose", ctx)
            c.pose = ev.pose
        case _:  # pragma: no cover - the Event union is exhaustive
            raise ctx.fail("unknown_event", f"unknown event {ev!r}")


def replay(
    world: World, scene_events: Sequence[Sequence[Event]], story_id: str
) -> list[SceneState]:
    """The expected state at the end of every scene; raises ``TransitionError``."""
    s = initial_state(world)
    _validate_world(world, s, story_id)
    states: list[SceneState] = []
    for k, events in enumerate(scene_events, start=1):
        for i, ev in enumerate(events):
            apply_event(s, ev, EventContext(story_id, k, i))
        states.append(s.freeze())
    return states


def _validate_world(world: World, s: MutableState, story_id: str) -> None:
    ctx = EventContext(story_id, 0, 0)
    names = [c.name for c in world.characters]
    if len(set(names)) != len(names):
        raise ctx.fail("unknown_character", "character names are not unique")
    kinds = [o.kind for o in world.objects]
    if len(set(kinds)) != len(kinds):
        raise ctx.fail("unknown_object", "object kinds are not unique")
    for c in world.characters:
        _check_value(c.skin, vocab.SKIN_TONES, "skin tone", ctx)
        _check_value(c.hair_color, vocab.HAIR_COLORS, "hair colour", ctx)
        _check_value(c.hair_style, vocab.HAIR_STYLES, "hair style", ctx)
        _check_value(c.top, vocab.CLOTHING_COLORS, "top colour", ctx)
        _check_value(c.trousers, vocab.CLOTHING_COLORS, "trouser colour", ctx)
        _check_value(c.accessory, vocab.ACCESSORIES, "accessory", ctx)
        _check_value(c.pose, vocab.POSES, "pose", ctx)
    for o in world.objects:
        _check_value(o.kind, vocab.OBJECT_KINDS, "object kind", ctx)
        kind = vocab.OBJECT_KINDS[o.kind]
        _check_value(o.color, vocab.OBJECT_COLORS, "object colour", ctx)
        _check_value(o.initial_state, kind.states, f"{o.kind} state", ctx)
        if kind.counted != (o.count is not None):
            raise ctx.fail("not_counted", f"the {o.kind} count must be set iff it is counted")
        if o.count is not None and not 0 <= o.count <= vocab.MAX_COUNT:
            raise ctx.fail("count_negative", f"the {o.kind} count {o.count} is out of range")
        if o.initial_holder is not None:
            _char(s, o.initial_holder, ctx)
            if not o.initially_present:
                raise ctx.fail("object_absent", f"the {o.kind} is held before it appears")
            if kind.counted:
                raise ctx.fail("counted_held", f"the {o.kind} is counted and cannot be held")
    holders = [o.initial_holder for o in world.objects if o.initial_holder is not None]
    twice = sorted({h for h in holders if holders.count(h) > 1})
    if twice:
        raise ctx.fail("hands_full", f"{twice[0]} holds more than one object at the start")
    for loc in world.locations:
        _check_value(loc, vocab.LOCATIONS, "location", ctx)
    _check_value(world.start_time, vocab.TIMES, "time of day", ctx)
    _check_value(world.start_weather, vocab.WEATHERS, "weather", ctx)
