"""A story builder: templates add events scene by scene; every event is checked as it is added.

The builder keeps a working state (``vsb.state.MutableState``) so templates can ask who holds
what, and it assembles the final ``Story``: expected states by replay, scene texts, causal
links and requirements.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vsb.state import EventContext, MutableState, apply_event, initial_state, replay
from vsb.story import vocab
from vsb.story.models import (
    Character,
    Event,
    PromptStyle,
    Scene,
    Story,
    World,
    WorldObject,
)
from vsb.story.requirements import derive_story
from vsb.story.text import paraphrase


def pick(rng: np.random.Generator, options: Sequence[str], exclude: Sequence[str] = ()) -> str:
    """A uniform draw from ``options`` minus ``exclude``."""
    pool = [o for o in options if o not in exclude]
    return pool[int(rng.integers(len(pool)))]


def make_characters(
    rng: np.random.Generator, n: int, *, present: Sequence[bool] | None = None
) -> list[Character]:
    """``n`` characters with distinct names, distinct (skin, hair colour) and distinct tops."""
    names = rng.permutation(len(vocab.NAMES))[:n]
    chars: list[Character] = []
    used_tops: list[str] = []
    used_ids: set[tuple[str, str]] = set()
    used_skin: list[str] = []
    for i, ni in enumerate(names):
        while True:
            skin = pick(rng, list(vocab.SKIN_TONES), used_skin)
            hair = pick(rng, list(vocab.HAIR_COLORS))
            if (skin, hair) not in used_ids:
                break
        used_ids.add((skin, hair))
        used_skin.append(skin)
        top = pick(rng, list(vocab.CLOTHING_COLORS), used_tops)
        used_tops.append(top)
        chars.append(
            Character(
                name=vocab.NAMES[int(ni)],
                skin=skin,
                hair_color=hair,
                hair_style=pick(rng, vocab.HAIR_STYLES),
                top=top,
                trousers=pick(rng, list(vocab.CLOTHING_COLORS), [top]),
                accessory=pick(rng, vocab.ACCESSORIES),
                pose="standing",
                initially_present=True if present is None else present[i],
            )
        )
    return chars


class StoryBuilder:
    """Collects events per scene, applying each one to a working state as it is added."""

    def __init__(self, story_id: str, world: World) -> None:
        self.story_id = story_id
        self.world = world
        self.state: MutableState = initial_state(world)
        self.scenes: list[list[Event]] = [[]]
        #: Empty hands that later beats need (the hard variants hand an object over).
        self.reserve_hands = 0

    # -- building ----------------------------------------------------------------------------
    def next_scene(self) -> None:
        """Start the next scene."""
        self.scenes.append([])

    def add(self, event: Event) -> None:
        """Append an event to the current scene (raises TransitionError if impossible).
        A ``ChangeState`` with a ``cause`` becomes a causal link."""
        k = len(self.scenes)
        apply_event(self.state, event, EventContext(self.story_id, k, len(self.scenes[-1])))
        self.scenes[-1].append(event)

    # -- queries on the working state ------------------------------------------------------------
    def present(self) -> list[str]:
        """Characters now present, left to right."""
        return list(self.state.order)

    def holder(self, kind: str) -> str | None:
        """Who holds an object now."""
        return self.state.objects[kind].holder

    def empty_handed(self) -> list[str]:
        """Present characters holding nothing."""
        held = {o.holder for o in self.state.objects.values() if not o.removed}
        return [n for n in self.state.order if n not in held]

    def obj_state(self, kind: str) -> str:
        """The object's current state."""
        return self.state.objects[kind].state

    def count(self, kind: str) -> int:
        """The current count of a counted object."""
        c = self.state.objects[kind].count
        assert c is not None
        return c

    # -- assembly ----------------------------------------------------------------------------
    def build(
        self, *, category: str, difficulty: str, seed: int, style: PromptStyle = "plain"
    ) -> Story:
        """Replay, compose texts (in the prompt ``style``), derive causal links and
        requirements, and return the story."""
        states = replay(self.world, self.scenes, self.story_id)
        derived = derive_story(self.world, self.scenes, states, implicit=style == "implicit")
        scenes = [
            Scene(
                index=k,
                events=list(events),
                text=paraphrase(text) if style == "paraphrase" else text,
                state=states[k - 1],
                requirements=reqs,
            )
            for k, (events, text, reqs) in enumerate(
                zip(self.scenes, derived.texts, derived.requirements, strict=True), start=1
            )
        ]
        return Story(
            id=self.story_id,
            category=category,
            difficulty=difficulty,
            seed=seed,
            prompt_style=style,
            world=self.world,
            scenes=scenes,
            causal_links=derived.causal_links,
        )


def make_object(
    rng: np.random.Generator,
    kind: str,
    *,
    holder: str | None = None,
    state: str | None = None,
    count: int | None = None,
    present: bool = True,
    exclude_colors: Sequence[str] = (),
) -> WorldObject:
    """A world object of ``kind`` with a random colour."""
    k = vocab.OBJECT_KINDS[kind]
    if k.counted and count is None:
        count = int(rng.integers(3, vocab.MAX_COUNT + 1))
    return WorldObject(
        kind=kind,
        color=pick(rng, list(vocab.OBJECT_COLORS), exclude_colors),
        initial_state=state or k.states[0],
        count=count if k.counted else None,
        initial_holder=holder,
        initially_present=present,
    )
