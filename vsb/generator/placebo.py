"""The placebo's partner story: the story whose structured memory ``random_context`` shows
in place of a story's own (a fresh story of the same template and length, other people)."""

from __future__ import annotations

import hashlib
from functools import lru_cache

from vsb.errors import InputError, TransitionError
from vsb.story.models import DIFFICULTIES, Story

#: Draws tried for a placebo partner before giving up (a clash of names is rare).
_PARTNER_ATTEMPTS = 64


def placebo_seed(story_id: str, seed: int, attempt: int) -> int:
    """The generator seed of the ``attempt``-th partner draw for a story (63 bits of sha256
    over its id and seed: a story's plain and paraphrased copies share it)."""
    digest = hashlib.sha256(f"placebo:{story_id}:{seed}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def placebo_partner(story: Story) -> Story:
    """The story whose structured memory ``random_context`` shows for ``story``.

    A fresh story of the same template (category) and difficulty — hence the same length
    in the generated suites — drawn with ``placebo_seed``: the first draw that has at least
    ``len(story.scenes) - 1`` scenes and shares no character name with ``story`` (so its
    facts are about other people; its objects and places may share kinds and names with
    ``story``'s, with other values). A story whose length its difficulty does not give
    takes the shortest difficulty long enough. Fixed for a given story: a pure function
    of (id, seed, category, difficulty, character names, length)."""
    names = tuple(c.name for c in story.world.characters)
    return _partner(
        story.id, story.seed, story.category, story.difficulty, names, len(story.scenes)
    )


@lru_cache(maxsize=256)
def _partner(
    story_id: str, seed: int, category: str, difficulty: str, names: tuple[str, ...], n: int
) -> Story:
    from vsb.generator.generate import generate_story

    difficulties = [difficulty, *(d for d in DIFFICULTIES if d != difficulty)]
    for d in difficulties:
        for attempt in range(_PARTNER_ATTEMPTS):
            try:
                partner = generate_story(
                    category, d, story_id, seed=placebo_seed(story_id, seed, attempt)
                )
            except TransitionError:  # pragma: no cover - the templates' fallbacks held so far
                continue
            if len(partner.scenes) < n - 1:
                break  # this difficulty is too short for the story: try the next one
            if not {c.name for c in partner.world.characters} & set(names):
                return partner
    raise InputError(
        f"story {story_id!r}: no placebo partner of template {category!r} with "
        f"{n - 1}+ scenes and other characters (random_context)"
    )
