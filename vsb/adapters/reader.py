"""The reader simulators: models that see only the prompt, as a real model does.

``procedural-reader`` reads the whole prompt it is sent (``GenerationRequest.full_prompt``,
context then scene) with ``vsb.story.reading.read_prompt``, draws every fact the text states
as stated, and guesses the rest: each unstated look, pose, place, time, weather and order from
a ``numpy.random.Generator`` seeded by (model, prompt, run seed), so the same prompt gives
the same picture and a fact no prompt carries is a fresh guess in each scene. An object the
text never names is not drawn. ``procedural-reader-77`` reads only what a CLIP text encoder
keeps of the prompt (its first 77 tokens, start and end included: ``vsb.story.tokens``), as
Stable Diffusion 1.5 and SDXL do when a long prompt is not encoded in chunks.

They are not privileged (no story, no oracle file): the rule checker scores them like any
model. Their scores are the benchmark's information ceiling: how much of what must be
remembered each condition's prompt carries, and how much of it survives a 77-token encoder
(docs/analysis.md). A reader never fails to adhere: its only errors are what the text did not
say, or said in words it does not read (an imported story's own words are guessed over).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import partial

import numpy as np

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter, PromptFit
from vsb.fsio import canonical_json
from vsb.story import vocab
from vsb.story.models import CharacterState, ObjectState, SceneState
from vsb.story.reading import Reading, read_prompt

#: Bump when the reading or the guessing changes: it is part of every cache key.
READER_VERSION = "1"

#: name -> the text budget in CLIP tokens (None: the whole prompt is read).
READERS: dict[str, int | None] = {"procedural-reader": None, "procedural-reader-77": 77}


def _rng(model: str, prompt: str, seed: int) -> np.random.Generator:
    digest = hashlib.sha256(canonical_json(["reader", model, prompt, seed])).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "big"))


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return str(options[int(rng.integers(len(options)))])


def _known(value: str | None, options: Sequence[str]) -> bool:
    return value is not None and value in options


def scene_state(reading: Reading, rng: np.random.Generator) -> SceneState:
    """The state a reader draws: what ``reading`` states, a guess from ``rng`` for the rest
    (one draw per fact, in a fixed order, whether or not it is used)."""
    guesses = {
        "location": _pick(rng, list(vocab.LOCATIONS)),
        "time": _pick(rng, vocab.TIMES),
        "weather": _pick(rng, vocab.WEATHERS),
    }
    location = reading.location if _known(reading.location, list(vocab.LOCATIONS)) else None
    time = reading.time if _known(reading.time, vocab.TIMES) else None
    weather = reading.weather if _known(reading.weather, vocab.WEATHERS) else None
    location = location or guesses["location"]
    choices: dict[str, Sequence[str]] = {
        "skin": list(vocab.SKIN_TONES),
        "hair_color": list(vocab.HAIR_COLORS),
        "hair_style": vocab.HAIR_STYLES,
        "top": list(vocab.CLOTHING_COLORS),
        "trousers": list(vocab.CLOTHING_COLORS),
        "accessory": vocab.ACCESSORIES,
        "pose": vocab.POSES,
    }
    characters: dict[str, CharacterState] = {}
    for name in sorted(reading.people):
        p = reading.people[name]
        values = {}
        for attr, options in choices.items():
            guess = _pick(rng, options)
            said = getattr(p, attr)
            values[attr] = said if _known(said, options) else guess
        characters[name] = CharacterState(**values, present=bool(p.present), seen=True)
    shown = [n for n, c in characters.items() if c.present]
    stated = [n for n in reading.order or [] if n in shown]
    rest = [n for n in shown if n not in stated]
    order = stated + [rest[i] for i in rng.permutation(len(rest))]
    objects: dict[str, ObjectState] = {}
    for kind in sorted(reading.things):
        t, spec = reading.things[kind], vocab.OBJECT_KINDS[kind]
        color = _pick(rng, list(vocab.OBJECT_COLORS))
        state = _pick(rng, spec.states)
        count = int(rng.integers(1, vocab.MAX_COUNT + 1))
        holder = t.holder if t.holder in characters else None
        objects[kind] = ObjectState(
            color=t.color if _known(t.color, list(vocab.OBJECT_COLORS)) else color,
            state=t.state if _known(t.state, spec.states) else state,
            count=(t.count if t.count is not None else count) if spec.counted else None,
            holder=holder,
            place=None if holder else (t.place or location),
            appeared=True,
            removed=t.removed,
        )
    return SceneState(
        location=location,
        time=time or guesses["time"],
        day=1,
        weather=weather or guesses["weather"],
        order=order,
        characters=characters,
        objects=objects,
    )


class ProceduralReader(ImageModelAdapter):
    """A simulator that reads the prompt and nothing else (see the module docstring)."""

    process_safe = True
    oracle = False

    def __init__(self, name: str, budget: int | None) -> None:
        self.name = name
        self.version = READER_VERSION
        self.budget = budget

    def parameters(self) -> dict[str, object]:
        return {"budget_clip_tokens": self.budget}

    def read(self, prompt: str) -> str:
        """The part of ``prompt`` this reader reads."""
        if self.budget is None:
            return prompt
        from vsb.story.tokens import clip_keep

        return clip_keep(prompt, self.budget)

    def prompt_fit(self, request: GenerationRequest) -> PromptFit:
        prompt = request.full_prompt()
        if self.budget is None:
            return PromptFit("characters", len(prompt), None, False)
        from vsb.story.tokens import clip_count

        n = clip_count(prompt)
        cut = n > self.budget
        return PromptFit("clip tokens", n, self.budget, cut, "truncated" if cut else "whole")

    def generate(self, request: GenerationRequest) -> GenerationResult:
        from vsb.render import render_png

        prompt = request.full_prompt()
        state = scene_state(read_prompt(self.read(prompt)), _rng(self.name, prompt, request.seed))
        jitter = int.from_bytes(hashlib.sha256(canonical_json(["jitter", prompt])).digest()[:8])
        png = render_png(state, seed=jitter >> 1)
        return GenerationResult(png=png, metadata={}, cost_usd=0.0)


def _reader(name: str) -> partial[ProceduralReader]:
    return partial(ProceduralReader, name, READERS[name])


procedural_reader = _reader("procedural-reader")
procedural_reader_77 = _reader("procedural-reader-77")
