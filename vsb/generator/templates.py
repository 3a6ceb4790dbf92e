"""The ten category templates. Each builds a story scene by scene from "beats".

A beat adds one or more events to the current scene and returns False when its
precondition does not hold (the caller then tries the next fallback). Hard variants add
the reversal traps: an object handed back, a character who leaves and returns, and an
object set down and picked up again, still broken.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vsb import vocab
from vsb.generator.builder import StoryBuilder, make_characters, make_object, pick
from vsb.registry import Registry
from vsb.story.models import (
    ChangeAttr,
    ChangeState,
    Drop,
    Enter,
    Exit,
    Give,
    Move,
    Pickup,
    SetCount,
    SetPose,
    SetTime,
    SetWeather,
    Swap,
    World,
    WorldObject,
)

Beat = Callable[[StoryBuilder, np.random.Generator], bool]

N_SCENES = {"easy": 3, "medium": 5, "hard": 8}
CAUSES = {
    "umbrella": ("broken", "A strong gust of wind catches the umbrella"),
    "lantern": ("lit", "A spark from the fire reaches the lantern"),
    "candle": ("lit", "A match is struck against the candle"),
    "vase": ("broken", "The vase slips off the edge and hits the floor"),
    "book": ("torn", "A dog pulls at the book"),
    "flower": ("wilted", "The hot sun beats down on the flowers"),
    "box": ("open", "The wind blows the lid of the box away"),
    "letter": ("opened", "A curious hand slits the letter open"),
}


# --- generic beats ------------------------------------------------------------------------------


def pose(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Someone present takes a new pose."""
    if not b.present():
        return False
    who = pick(rng, b.present())
    b.add(SetPose(character=who, pose=pick(rng, vocab.POSES, [b.state.characters[who].pose])))
    return True


def time_passes(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """The time of day moves on (a new day after night)."""
    i = vocab.time_index(b.state.time)
    if i + 1 < len(vocab.TIMES):
        b.add(SetTime(time=vocab.TIMES[int(rng.integers(i + 1, len(vocab.TIMES)))]))
    else:
        b.add(SetTime(time="morning", new_day=True))
    return True


def weather(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """The weather changes."""
    b.add(SetWeather(weather=pick(rng, vocab.WEATHERS, [b.state.weather])))
    return True


def move(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Everyone goes to another of the story's locations (or back)."""
    options = [loc for loc in b.world.locations if loc != b.state.location]
    b.add(Move(location=pick(rng, options)))
    return True


def give(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """A holder hands their object to an empty-handed companion."""
    free = b.empty_handed()
    for kind, o in sorted(b.state.objects.items()):
        if o.holder in b.present() and not o.removed and free:
            b.add(Give(object=kind, giver=o.holder, receiver=pick(rng, free)))
            return True
    return False


def drop(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Someone sets their object down."""
    for kind, o in sorted(b.state.objects.items()):
        if o.holder in b.present() and not o.removed:
            b.add(Drop(object=kind, character=o.holder))
            return True
    return False


def pickup(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """An empty-handed character picks up a (non-counted) object lying here."""
    free = b.empty_handed()
    for kind, o in sorted(b.state.objects.items()):
        counted = vocab.OBJECT_KINDS[kind].counted
        here = o.appeared and not o.removed and o.holder is None and o.place == b.state.location
        if here and free and not counted:
            b.add(Pickup(object=kind, character=pick(rng, free)))
            return True
    return False


def change_state(b: StoryBuilder, rng: np.random.Generator, *, with_cause: bool = False) -> bool:
    """An object visible here changes to a reachable state (optionally with a stated cause)."""
    for kind, o in sorted(b.state.objects.items()):
        if not o.appeared or o.removed or not _visible(b, kind):
            continue
        k = vocab.OBJECT_KINDS[kind]
        if with_cause and kind in CAUSES:
            target, cause = CAUSES[kind]
            if k.can_change(o.state, target) and o.state != target:
                b.add(ChangeState(object=kind, state=target, cause=cause), cause=cause)
                return True
            continue
        nexts = [s for s in k.states if s != o.state and k.can_change(o.state, s)]
        if nexts:
            b.add(ChangeState(object=kind, state=pick(rng, nexts)))
            return True
    return False


def causal(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """A stated cause changes an object's state; the effect must persist."""
    return change_state(b, rng, with_cause=True)


def count_changes(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """A counted object's number goes up or down."""
    for kind, o in sorted(b.state.objects.items()):
        if o.count is not None and o.appeared and not o.removed and _visible(b, kind):
            options = [c for c in range(1, vocab.MAX_COUNT + 1) if c != o.count]
            b.add(SetCount(object=kind, count=options[int(rng.integers(len(options)))]))
            return True
    return False


def _visible(b: StoryBuilder, kind: str) -> bool:
    o = b.state.objects[kind]
    if o.holder is not None:
        return b.state.characters[o.holder].present
    return o.place == b.state.location


def wardrobe(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Someone changes their top or accessory (tops stay distinct between characters)."""
    if not b.present():
        return False
    who = pick(rng, b.present())
    c = b.state.characters[who]
    if rng.random() < 0.5:
        tops = [ch.top for ch in b.state.characters.values()]
        b.add(
            ChangeAttr(
                character=who,
                attribute="top",
                value=pick(rng, list(vocab.CLOTHING_COLORS), [*tops, c.trousers]),
            )
        )
    else:
        b.add(
            ChangeAttr(
                character=who,
                attribute="accessory",
                value=pick(rng, vocab.ACCESSORIES, [c.accessory]),
            )
        )
    return True  # fmt: skip


def swap(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Two present characters swap places."""
    p = b.present()
    if len(p) < 2:
        return False
    i = int(rng.integers(len(p) - 1))
    b.add(Swap(a=p[i], b=p[i + 1]))
    return True


def leave(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Someone (not the last person) leaves."""
    p = b.present()
    if len(p) < 2:
        return False
    b.add(Exit(character=p[-1]))
    return True


def arrive(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """A character not yet seen enters (and is described in full)."""
    unseen = [n for n, c in sorted(b.state.characters.items()) if not c.seen]
    if not unseen:
        return False
    b.add(Enter(character=unseen[0], position=int(rng.integers(len(b.present()) + 1))))
    return True


def come_back(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Someone who left, or has not yet appeared, comes in."""
    away = [n for n, c in sorted(b.state.characters.items()) if not c.present]
    if not away:
        return False
    b.add(Enter(character=away[0], position=int(rng.integers(len(b.present()) + 1))))
    return True


# --- templates ------------------------------------------------------------------------------

Template = Callable[[np.random.Generator, str, str], StoryBuilder]
TEMPLATES: Registry[Template] = Registry("template")


def _world(
    rng: np.random.Generator,
    difficulty: str,
    object_kinds: list[str],
    *,
    indoor: bool | None = None,
    n_locations: int = 2,
    hold_first: bool = True,
    late_character: bool = False,
) -> World:
    n = {"easy": 1, "medium": 2, "hard": 2 + int(rng.random() < 0.3)}[difficulty]
    present = [True] * n
    if late_character and n >= 2:
        present[-1] = False
    chars = make_characters(rng, n, present=present)
    pool = [name for name, loc in vocab.LOCATIONS.items() if indoor is None or loc.indoor == indoor]
    locs = [pool[int(i)] for i in rng.permutation(len(pool))[:n_locations]]
    objects: list[WorldObject] = []
    for j, kind in enumerate(object_kinds):
        counted = vocab.OBJECT_KINDS[kind].counted
        holder = chars[0].name if hold_first and not counted and j == 0 else None
        objects.append(
            make_object(rng, kind, holder=holder, exclude_colors=[o.color for o in objects])
        )
    return World(
        characters=chars,
        objects=objects,
        locations=locs,
        start_time=vocab.TIMES[int(rng.integers(2))],
        start_weather=pick(rng, ["clear", "cloudy"]),
    )


def _run(
    b: StoryBuilder, rng: np.random.Generator, n_scenes: int, plan: list[list[Beat]]
) -> StoryBuilder:
    """Fill scenes 2..n: scene k tries the beats of plan[(k-2) % len(plan)], then fallbacks."""
    for k in range(2, n_scenes + 1):
        b.next_scene()
        beats = plan[(k - 2) % len(plan)]
        added = sum(bool(beat(b, rng)) for beat in beats)
        if not added:
            for fallback in (pose, time_passes):
                if fallback(b, rng):
                    break
    return b


def _hard_plan(core: list[list[Beat]]) -> list[list[Beat]]:
    """Hard stories interleave the template's beats with the three reversal traps."""
    return [
        [arrive, *core[0]],
        [hand_over],  # hand over...
        [hand_back],  # ...and hand back
        [leave_empty_handed, *core[1 % len(core)]],
        [causal_break_held],
        [drop_broken, come_back],  # set the broken object down; the one who left returns
        [pickup_broken, *core[2 % len(core)]],  # picked up again: still broken
    ]


def hand_back(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """The last object given is handed back to its giver."""
    for events in reversed(b.scenes[:-1]):
        for ev in reversed(events):
            if isinstance(ev, Give):
                o = b.state.objects[ev.object]
                giver = b.state.characters[ev.giver]
                if (
                    o.holder == ev.receiver
                    and giver.present
                    and b.state.characters[ev.receiver].present
                    and ev.giver in b.empty_handed()
                ):
                    b.add(Give(object=ev.object, giver=ev.receiver, receiver=ev.giver))
                    return True
                return give(b, rng)
    return give(b, rng)


def leave_empty_handed(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Someone holding nothing leaves (so the held objects stay in the story)."""
    p = b.present()
    free = b.empty_handed()
    if len(p) < 2:
        return False
    b.add(Exit(character=free[-1] if free else p[-1]))
    return True


def _broken(b: StoryBuilder) -> list[str]:
    return [
        kind
        for kind, o in sorted(b.state.objects.items())
        if o.state in ("broken", "torn") and not o.removed and o.appeared
    ]


def drop_broken(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Whoever holds the broken object sets it down."""
    for kind in _broken(b):
        holder = b.state.objects[kind].holder
        if holder is not None and b.state.characters[holder].present:
            b.add(Drop(object=kind, character=holder))
            return True
    return drop(b, rng)


def pickup_broken(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """The broken object lying here is picked up again: it is still broken."""
    free = b.empty_handed()
    for kind in _broken(b):
        o = b.state.objects[kind]
        if o.holder is None and o.place == b.state.location and free:
            b.add(Pickup(object=kind, character=pick(rng, free)))
            return True
    return pickup(b, rng)


BREAKABLE = ("umbrella", "vase", "book")


def _ensure_held(b: StoryBuilder, rng: np.random.Generator) -> str | None:
    """Make sure someone present holds the story's breakable object (picking it up if it
    lies here); returns its kind, or None if that is impossible."""
    for kind in BREAKABLE:
        o = b.state.objects.get(kind)
        if o is None or o.removed or not o.appeared:
            continue
        if o.holder is not None and b.state.characters[o.holder].present:
            return kind
        free = b.empty_handed()
        if o.holder is None and o.place == b.state.location and free:
            b.add(Pickup(object=kind, character=pick(rng, free)))
            return kind
    return None


def hand_over(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """The breakable object is handed to an empty-handed companion."""
    kind = _ensure_held(b, rng)
    free = b.empty_handed()
    if kind is None or not free:
        return give(b, rng)
    holder = b.holder(kind)
    assert holder is not None
    b.add(Give(object=kind, giver=holder, receiver=pick(rng, free)))
    return True


def causal_break_held(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """A held breakable object breaks (or tears), with a stated cause."""
    _ensure_held(b, rng)
    for kind, o in sorted(b.state.objects.items()):
        if o.holder in b.present() and kind in CAUSES and not o.removed:
            target, cause = CAUSES[kind]
            k = vocab.OBJECT_KINDS[kind]
            if target in ("broken", "torn") and k.can_change(o.state, target) and o.state != target:
                b.add(ChangeState(object=kind, state=target, cause=cause), cause=cause)
                return True
    return pose(b, rng)


def _template(
    name: str,
    kinds: Callable[[np.random.Generator], list[str]],
    core: list[list[Beat]],
    **kw: object,
) -> None:
    def build(rng: np.random.Generator, difficulty: str, story_id: str) -> StoryBuilder:
        obj_kinds = kinds(rng)
        if difficulty == "hard":  # the first (held) object must be breakable for the traps
            breakable = [k for k in obj_kinds if k in ("umbrella", "vase", "book")]
            first = breakable[0] if breakable else pick(rng, ["umbrella", "vase", "book"])
            obj_kinds = [first, *(k for k in obj_kinds if k != first)][:3]
        world = _world(rng, difficulty, obj_kinds, **kw)  # type: ignore[arg-type]
        b = StoryBuilder(story_id, world)
        plan = _hard_plan(core) if difficulty == "hard" else core
        return _run(b, rng, N_SCENES[difficulty], plan)

    TEMPLATES.add(name, build)


def _choose(*options: str, n: int = 1) -> Callable[[np.random.Generator], list[str]]:
    def f(rng: np.random.Generator) -> list[str]:
        return [options[int(i)] for i in rng.permutation(len(options))[:n]]

    return f


_template(
    "object_persistence",
    _choose("umbrella", "lantern", "book", "box", n=2),
    [[move], [pose], [move], [time_passes]],
    n_locations=2,
)
_template(
    "wardrobe",
    _choose("book", "lantern", n=1),
    [[come_back, wardrobe], [pose], [wardrobe], [weather]],
    late_character=True,
)
_template(
    "location_transitions",
    _choose("umbrella", "lantern", n=1),
    [[move], [weather], [move], [time_passes]],
    n_locations=3,
)
_template(
    "counting",
    _choose("apple", "coin", "flower", n=1),
    [[count_changes, come_back], [pose], [count_changes], [time_passes]],
    late_character=True,
)
_template(
    "possession",
    _choose("umbrella", "book", "lantern", "box", n=2),
    [[give, drop], [pickup, pose], [give, drop], [pickup, weather]],
)
_template(
    "cause_effect",
    _choose("umbrella", "candle", "vase", "lantern", n=2),
    [[causal], [pose], [causal], [time_passes]],
)
_template(
    "damage_state",
    _choose("vase", "book", "letter", "box", n=1),
    [[causal], [pose], [change_state], [weather]],
)
_template(
    "relationships",
    _choose("book", "letter", "lantern", n=1),
    [[come_back, give], [pose, pose], [give, swap], [leave]],
    late_character=True,
)
_template(
    "spatial_arrangement",
    _choose("box", "lantern", "umbrella", n=1),
    [[swap], [pose], [come_back, swap], [drop]],
    late_character=True,
)
_template("temporal_progression", _choose("candle", "flower", n=1),
          [[time_passes, come_back], [weather], [time_passes, causal], [time_passes]],
          late_character=True)  # fmt: skip
