"""The ten category templates. Each builds a story scene by scene from beats (vsb.generator.beats).

A template names its object kinds, its world options and a plan: scene *k* (k >= 2) tries
the beats of ``plan[(k-2) % len(plan)]``, then the fallbacks. Hard variants interleave the
plan with the reversal traps. Together the templates use every event type of the schema
(``object_persistence`` brings objects in with ``appear`` and takes them away with
``remove``, so the default suite tests resurrections).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vsb.generator.beats import (
    BREAKABLE,
    Beat,
    appear,
    arrive,
    causal,
    causal_break_held,
    change_state,
    come_back,
    count_changes,
    drop,
    drop_broken,
    give,
    hand_back,
    hand_over,
    leave,
    leave_empty_handed,
    move,
    pickup,
    pickup_broken,
    pose,
    remove,
    swap,
    time_passes,
    wardrobe,
    weather,
)
from vsb.generator.builder import StoryBuilder, make_characters, make_object, pick
from vsb.registry import Registry
from vsb.story import vocab
from vsb.story.models import World, WorldObject

N_SCENES = {"easy": 3, "medium": 5, "hard": 8}


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
    late_object: bool = False,
) -> World:
    """Characters (the last one enters later if ``late_character``), locations and objects
    (the first held by the first character if ``hold_first``; the last one appears later,
    on the ground, if ``late_object``)."""
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
        late = late_object and j == len(object_kinds) - 1 and j > 0
        objects.append(
            make_object(
                rng, kind, holder=holder, present=not late,
                exclude_colors=[o.color for o in objects],
            )
        )  # fmt: skip
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


def _template(
    name: str,
    kinds: Callable[[np.random.Generator], list[str]],
    core: list[list[Beat]],
    **kw: object,
) -> None:
    def build(rng: np.random.Generator, difficulty: str, story_id: str) -> StoryBuilder:
        obj_kinds = kinds(rng)
        if difficulty == "hard":  # the first (held) object must be breakable for the traps
            breakable = [k for k in obj_kinds if k in BREAKABLE]
            first = breakable[0] if breakable else pick(rng, BREAKABLE)
            obj_kinds = [first, *(k for k in obj_kinds if k != first)][:3]
        world = _world(rng, difficulty, obj_kinds, **kw)  # type: ignore[arg-type]
        b = StoryBuilder(story_id, world)
        b.reserve_hands = 1 if difficulty == "hard" else 0  # for the hand-over trap
        plan = _hard_plan(core) if difficulty == "hard" else core
        return _run(b, rng, N_SCENES[difficulty], plan)

    TEMPLATES.add(name, build)


def _choose(*options: str, n: int = 1) -> Callable[[np.random.Generator], list[str]]:
    def f(rng: np.random.Generator) -> list[str]:
        return [options[int(i)] for i in rng.permutation(len(options))[:n]]

    return f


# An object appears, another is taken away for good (its absence is then remembered: a
# resurrection fails), and the group leaves and comes back to what was left on the ground.
_template(
    "object_persistence",
    _choose("umbrella", "lantern", "book", "box", n=3),
    [[appear], [remove], [move], [move]],
    n_locations=2,
    late_object=True,
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
