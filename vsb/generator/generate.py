"""Story generation: one template per category, three difficulties, and the default suite.

The default suite holds four stories per category — easy, medium ×2 (different seeds) and
hard — 40 stories and 210 scenes. Generation is a pure function of the seed: every random
choice comes from a ``numpy.random.Generator`` seeded from (suite seed, story id).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from vsb.errors import InputError
from vsb.fsio import atomic_write_json, atomic_write_text, sha256_hex
from vsb.generator import templates
from vsb.story.models import (
    CATEGORIES,
    DIFFICULTIES,
    PROMPT_STYLES,
    PromptStyle,
    Story,
    SuiteEntry,
    SuiteIndex,
)

#: The default suite's variants per category: (story-id suffix, difficulty).
DEFAULT_VARIANTS: tuple[tuple[str, str], ...] = (
    ("easy", "easy"),
    ("medium-a", "medium"),
    ("medium-b", "medium"),
    ("hard", "hard"),
)

# Template draws that end up impossible (a beat's fallbacks exhausted) are redrawn with the
# next attempt number; this bounds the loop.
_MAX_ATTEMPTS = 50


def story_seed(suite_seed: int, story_id: str, attempt: int = 0) -> int:
    """The per-story seed: 63 bits of sha256 over (suite seed, story id, attempt)."""
    digest = hashlib.sha256(f"{suite_seed}:{story_id}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _style(paraphrase: bool, text_style: PromptStyle | None) -> PromptStyle:
    if text_style is None:
        return "paraphrase" if paraphrase else "plain"
    if paraphrase and text_style != "paraphrase":
        raise InputError(f"paraphrase=True contradicts text style {text_style!r}")
    if text_style not in PROMPT_STYLES:
        raise InputError(f"unknown text style {text_style!r}; known: {', '.join(PROMPT_STYLES)}")
    return text_style


def generate_story(
    category: str,
    difficulty: str,
    story_id: str,
    *,
    seed: int,
    paraphrase: bool = False,
    text_style: PromptStyle | None = None,
) -> Story:
    """One story of ``category`` at ``difficulty``, deterministic in ``seed``; worded in
    ``text_style`` (plain, paraphrase or implicit; ``paraphrase=True`` is the paraphrase
    style). The styles differ in scene texts only, plus the ``inferred`` mark of the
    implicit style: the events, states and requirement ids are the same."""
    template = templates.TEMPLATES.get(category)
    rng = np.random.default_rng(seed)
    builder = template(rng, difficulty, story_id)
    return builder.build(
        category=category,
        difficulty=difficulty,
        seed=seed,
        style=_style(paraphrase, text_style),
    )


def cell_suffix(i: int) -> str:
    """The letter suffix of the ``i``-th (0-based) story of a cell: a … z, aa, ab, …"""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(ord("a") + r) + out
    return out


def suite_jobs(per_cell: int | None = None) -> list[tuple[str, str, str]]:
    """(category, difficulty, story id) of every story of a suite: the default variants, or
    ``per_cell`` stories in every category × difficulty cell (ids ``<category>-<difficulty>-
    <a, b, …>``, so the medium stories of ``per_cell=2`` are the default suite's)."""
    if per_cell is None:
        return [(c, d, f"{c}-{suffix}") for c in CATEGORIES for suffix, d in DEFAULT_VARIANTS]
    if per_cell < 1:
        raise InputError(f"--per-cell must be at least 1, got {per_cell}")
    return [
        (c, d, f"{c}-{d}-{cell_suffix(i)}")
        for c in CATEGORIES
        for d in DIFFICULTIES
        for i in range(per_cell)
    ]


def generate_suite(
    seed: int = 0,
    *,
    paraphrase: bool = False,
    progress: Callable[[int, int], None] | None = None,
    per_cell: int | None = None,
    text_style: PromptStyle | None = None,
) -> list[Story]:
    """The default suite (40 stories), or ``per_cell`` stories per category × difficulty
    (``suite_jobs``), sorted by id."""
    jobs = suite_jobs(per_cell)
    stories = []
    for i, (category, difficulty, story_id) in enumerate(jobs):
        stories.append(
            generate_story(
                category,
                difficulty,
                story_id,
                seed=story_seed(seed, story_id),
                paraphrase=paraphrase,
                text_style=text_style,
            )
        )
        if progress:
            progress(i + 1, len(jobs))
    return sorted(stories, key=lambda s: s.id)


def story_json(story: Story) -> str:
    """The canonical file text of a story (sorted keys, 2-space indent, trailing newline)."""
    return json.dumps(story.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def write_suite(stories: Sequence[Story], out_dir: str | Path, *, seed: int = 0) -> SuiteIndex:
    """Write one ``<id>.json`` per story plus ``suite.json``; byte-identical for equal input."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for story in stories:
        text = story_json(story)
        atomic_write_text(out / f"{story.id}.json", text)
        entries.append(
            SuiteEntry(
                id=story.id,
                file=f"{story.id}.json",
                category=story.category,
                difficulty=story.difficulty,
                scenes=len(story.scenes),
                requirements=sum(len(s.requirements) for s in story.scenes),
                sha256=sha256_hex(text.encode()),
            )
        )
    style = stories[0].prompt_style if stories else "plain"
    index = SuiteIndex(seed=seed, prompt_style=style, stories=entries)
    atomic_write_json(out / "suite.json", index.model_dump(mode="json"))
    return index
