"""Beats: the building blocks of the category templates.

A beat adds one or more events to the current scene and returns False when its
precondition does not hold (the caller then tries the next fallback). Every sentence a beat
causes must agree with the picture at the end of the scene: a stated cause is worded for
where the object is (held or lying, indoors or out), the time of day and the weather
(``stated_cause``), and nobody takes two poses in one scene. The reversal traps of the hard
variants are here too: an object handed back, a character who leaves and returns, and an
object set down and picked up again, still broken.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vsb.generator.builder import StoryBuilder, pick
from vsb.story import vocab
from vsb.story.models import (
    Appear,
    ChangeAttr,
    ChangeState,
    Drop,
    Enter,
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
)

Beat = Callable[[StoryBuilder, np.random.Generator], bool]

#: The state a stated cause brings each kind to.
CAUSE_TARGETS: dict[str, str] = {
    "umbrella": "broken",
    "lantern": "lit",
    "candle": "lit",
    "vase": "broken",
    "book": "torn",
    "flower": "wilted",
    "box": "open",
    "letter": "opened",
}
BREAKABLE = ("umbrella", "vase", "book")
_DAYTIME = ("morning", "noon", "afternoon")


def stated_cause(b: StoryBuilder, kind: str, rng: np.random.Generator) -> str:
    """The cause of ``kind`` reaching ``CAUSE_TARGETS[kind]``, worded for the current state:
    a held object never falls, the sun only shines outdoors by day in clear weather, the
    wind only blows outdoors, and whoever acts is someone in the picture."""
    s = b.state
    holder = s.objects[kind].holder
    indoor = vocab.LOCATIONS[s.location].indoor
    actor = holder or pick(rng, b.present())
    match kind:
        case "umbrella":
            if not indoor:
                return "A strong gust of wind catches the umbrella"
            if holder:
                return "The umbrella gets caught in a slamming door"
            return "A heavy chair falls on the umbrella"
        case "lantern" | "candle":
            return f"{actor} lights the {kind} with a match"
        case "vase":
            if holder:
                return f"{holder} knocks the vase hard against {'the wall' if indoor else 'a rock'}"
            return f"The vase tips over and smashes on the {'floor' if indoor else 'ground'}"
        case "book":
            return "A dog pulls at the book"
        case "flower":
            if not indoor and s.time in _DAYTIME and s.weather == "clear":
                return "The hot sun beats down on the flowers"
            return "Nobody waters the flowers"
        case "box":
            if not indoor:
                return "The wind blows the lid of the box open"
            return "A cat knocks the lid of the box open"
        case "letter":
            return f"{actor} slits the letter open"
    raise ValueError(f"no stated cause for {kind!r}")  # pragma: no cover


# --- generic beats ------------------------------------------------------------------------------


def pose(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Someone present takes a new pose (nobody takes two poses in one scene: the text would
    state a pose the picture does not show)."""
    posed = {ev.character for ev in b.scenes[-1] if isinstance(ev, SetPose)}
    who_pool = [n for n in b.present() if n not in posed]
    if not who_pool:
        return False
    who = pick(rng, who_pool)
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


def visible(b: StoryBuilder, kind: str) -> bool:
    """Whether the object is in the picture now."""
    o = b.state.objects[kind]
    if not o.appeared or o.removed:
        return False
    if o.holder is not None:
        return b.state.characters[o.holder].present
    return o.place == b.state.location


def change_state(b: StoryBuilder, rng: np.random.Generator, *, with_cause: bool = False) -> bool:
    """An object visible here changes to a reachable state (optionally with a stated cause)."""
    for kind, o in sorted(b.state.objects.items()):
        if not visible(b, kind):
            continue
        k = vocab.OBJECT_KINDS[kind]
        if with_cause and kind in CAUSE_TARGETS:
            target = CAUSE_TARGETS[kind]
            if k.can_change(o.state, target) and o.state != target:
                cause = stated_cause(b, kind, rng)
                b.add(ChangeState(object=kind, state=target, cause=cause))
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
        if o.count is not None and visible(b, kind):
            options = [c for c in range(1, vocab.MAX_COUNT + 1) if c != o.count]
            b.add(SetCount(object=kind, count=options[int(rng.integers(len(options)))]))
            return True
    return False


def appear(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """An object not yet in the story appears: in the hands of an empty-handed character
    (keeping ``b.reserve_hands`` free), otherwise on the ground here."""
    for kind, o in sorted(b.state.objects.items()):
        if o.appeared or o.removed:
            continue
        free = b.empty_handed()
        counted = vocab.OBJECT_KINDS[kind].counted
        holder = pick(rng, free) if len(free) > b.reserve_hands and not counted else None
        b.add(Appear(object=kind, holder=holder))
        return True
    return False


def remove(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """An object in the picture is taken away for good (it must not come back). The story's
    first object is kept: the hard variants' traps are played with it."""
    first = b.world.objects[0].kind if b.world.objects else None
    options = [k for k in sorted(b.state.objects) if k != first and visible(b, k)]
    if not options:
        return False
    b.add(Remove(object=pick(rng, options)))
    return True


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


def _enter_first(b: StoryBuilder, rng: np.random.Generator, names: list[str]) -> bool:
    """The first of ``names`` enters at a random place in the line (False: nobody to)."""
    if not names:
        return False
    b.add(Enter(character=names[0], position=int(rng.integers(len(b.present()) + 1))))
    return True


def arrive(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """A character not yet seen enters (and is described in full)."""
    return _enter_first(b, rng, [n for n, c in sorted(b.state.characters.items()) if not c.seen])


def come_back(b: StoryBuilder, rng: np.random.Generator) -> bool:
    """Someone who left, or has not yet appeared, comes in."""
    away = [n for n, c in sorted(b.state.characters.items()) if not c.present]
    return _enter_first(b, rng, away)


# --- the reversal traps of the hard variants ----------------------------------------------------


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


def _ensure_held(b: StoryBuilder, rng: np.random.Generator) -> str | None:
    """Make sure someone present holds the story's breakable object (picking it up if it
    lies here); returns its kind, or None if that is impossible. One already held wins."""
    for kind in BREAKABLE:
        o = b.state.objects.get(kind)
        if o is not None and o.holder is not None and b.state.characters[o.holder].present:
            return kind
    for kind in BREAKABLE:
        o = b.state.objects.get(kind)
        if o is None or o.removed or not o.appeared:
            continue
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
        if o.holder in b.present() and kind in CAUSE_TARGETS and not o.removed:
            target = CAUSE_TARGETS[kind]
            k = vocab.OBJECT_KINDS[kind]
            if target in ("broken", "torn") and k.can_change(o.state, target) and o.state != target:
                cause = stated_cause(b, kind, rng)
                b.add(ChangeState(object=kind, state=target, cause=cause))
                return True
    return pose(b, rng)
