"""The VLM question-answering judge (optional; not run by ``vsb evaluate`` by default).

Every requirement becomes one YES/NO question in plain words (``question_for``), asked with
a calibrated system prompt (``SYSTEM_PROMPT``) through a transport (vlm_transports.py). The
reply is parsed strictly (``parse_answer``): YES, NO or UNSURE, anything else is UNSURE.
A requirement passes only when the answer equals the question's expected answer; UNSURE
never passes. Rows have the rules rows' shape with ``evaluator = "vlm_judge"`` and
``observed`` = the answer; each judged frame also gets the signal ``vlm_pass_rate``.

Library use (a transport must be given; the registered name alone cannot build one)::

    judge = VlmJudge(AnthropicVlm(httpx.Client(timeout=60), model="..."))
    out = judge.evaluate_story(story, frames)

``Frame.image`` holds canonical palette indices, so ``evaluate_story`` re-encodes them as an
indexed PNG; that is exact for renders but loses colours outside the palette. To judge an
arbitrary image, pass its original bytes to ``judge_png``.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from vsb.errors import InputError
from vsb.evaluators import style
from vsb.evaluators.registry import EvaluatorOutput, Frame, register_evaluator
from vsb.evaluators.rules import RequirementResult
from vsb.evaluators.vlm_transports import VlmTransport
from vsb.story.models import Requirement, Scene, SceneState, Story
from vsb.vocab import OBJECT_KINDS

Answer = Literal["YES", "NO", "UNSURE"]
EVALUATOR_NAME = "vlm_judge"
SIGNAL_NAME = "vlm_pass_rate"

SYSTEM_PROMPT = (
    "You are checking one picture from an illustrated story against a single fact. "
    "Look only at the picture. Answer with exactly one word: YES, NO or UNSURE. "
    "Answer YES only if the picture clearly shows the fact is true, and NO only if it clearly "
    "shows the fact is false. Answer UNSURE when the picture does not let you tell (the thing "
    "is too small, hidden, ambiguous, or you cannot tell who is who). Do not guess. "
    "Do not explain."
)

_SKIN = {
    "tone-1": "very light",
    "tone-2": "light",
    "tone-3": "medium-light",
    "tone-4": "medium-dark",
    "tone-5": "dark",
    "tone-6": "very dark",
}
_POSE = {
    "standing": "standing",
    "sitting": "sitting",
    "waving": "waving",
    "cheering": "cheering with both arms raised",
}
_ACCESSORY = {
    "hat": "wearing a hat",
    "scarf": "wearing a scarf",
    "glasses": "wearing glasses",
    "bag": "carrying a bag",
}
_PLACE = {
    "beach": "on a beach",
    "street": "on a street",
}
_WEATHER = {
    "clear": "Is the weather clear?",
    "cloudy": "Is it cloudy?",
    "rainy": "Is it raining?",
    "snowy": "Is it snowing?",
}
_TIME = {
    "morning": "Is it morning?",
    "noon": "Is it midday?",
    "afternoon": "Is it afternoon?",
    "evening": "Is it evening?",
    "night": "Is it night?",
}


@dataclass(frozen=True)
class Question:
    """One requirement as a question, and the answer that satisfies the requirement."""

    text: str
    expect: Literal["YES", "NO"]


def _a(words: str) -> str:
    return ("an " if words[:1] in "aeiou" else "a ") + words


def _hair(value: Any) -> str:
    parts = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    color, hair_style = [*parts, "", ""][:2]
    if hair_style in ("bun", "ponytail"):
        return f"{color} hair in {_a(hair_style)}"
    return f"{hair_style} {color} hair".strip()


def _character_question(req: Requirement) -> Question:
    who, attr, value = req.subject, req.attribute, req.expected
    if attr == "present":
        return Question(f"Is {who} in the picture?", "YES" if value is True else "NO")
    if attr == "skin":
        return Question(f"Does {who} have {_SKIN.get(str(value), str(value))} skin?", "YES")
    if attr == "hair":
        return Question(f"Does {who} have {_hair(value)}?", "YES")
    if attr == "top":
        return Question(f"Is {who} wearing {_a(f'{value} top')}?", "YES")
    if attr == "trousers":
        return Question(f"Is {who} wearing {value} trousers?", "YES")
    if attr == "accessory":
        if value == "none":
            return Question(f"Is {who} wearing a hat, a scarf or glasses, or carrying a bag?", "NO")
        return Question(f"Is {who} {_ACCESSORY.get(str(value), f'wearing {value}')}?", "YES")
    if attr == "pose":
        return Question(f"Is {who} {_POSE.get(str(value), str(value))}?", "YES")
    raise InputError(f"the VLM judge has no question for character attribute {attr!r}")


def _object_question(req: Requirement, state: SceneState) -> Question:
    kind, attr, value = req.subject, req.attribute, req.expected
    spec = OBJECT_KINDS.get(kind)
    color = state.objects[kind].color if kind in state.objects else ""
    thing = f"{color} {kind}".strip()
    if attr == "present":
        if value is False:  # removed: no object of this kind, in any colour, may be seen
            return Question(f"Is there {_a(kind)} in the picture?", "NO")
        return Question(f"Is there {_a(thing)} in the picture?", "YES")
    if attr == "holder":
        return Question(f"Is {value} holding the {thing}?", "YES")
    if attr == "state":
        if spec is not None and spec.counted:
            return Question(f"Are the {color} {spec.plural} {value}?".replace("  ", " "), "YES")
        return Question(f"Is the {thing} {value}?", "YES")
    if attr == "count":
        n = int(value) if isinstance(value, int) else 0
        plural = spec.plural if spec is not None else f"{kind}s"
        if n == 0:
            return Question(f"Are there any {plural} in the picture?", "NO")
        if n == 1:
            return Question(f"Is there exactly one {thing} in the picture?", "YES")
        return Question(f"Are there exactly {n} {color} {plural} in the picture?", "YES")
    raise InputError(f"the VLM judge has no question for object attribute {attr!r}")


def _scene_question(req: Requirement) -> Question:
    attr, value = req.attribute, req.expected
    if attr == "location":
        where = _PLACE.get(str(value), f"in {_a(str(value))}")
        return Question(f"Is the scene set {where}?", "YES")
    if attr == "weather":
        return Question(_WEATHER.get(str(value), f"Is the weather {value}?"), "YES")
    if attr == "time":
        return Question(_TIME.get(str(value), f"Is it {value}?"), "YES")
    if attr == "order":
        names = list(value) if isinstance(value, list) else [str(value)]
        return Question(f"From left to right, are the people {', then '.join(names)}?", "YES")
    raise InputError(f"the VLM judge has no question for scene attribute {attr!r}")


def question_for(req: Requirement, state: SceneState) -> Question:
    """The plain-words question for ``req`` (``state`` gives the story's object colours)."""
    if req.subject == "scene":
        return _scene_question(req)
    if req.subject in state.objects:
        return _object_question(req, state)
    return _character_question(req)


_ANSWER = re.compile(
    r"^(?:(?:the\s+)?(?:final\s+)?(?:answer|verdict)(?:\s+is)?\s*[:\-]?\s*|[^:\n]{0,40}:\s*)?"
    r"(yes|no|unsure)[\s.!]*$"
)
_STRIP = str.maketrans("", "", "*_`\"'[]()<>")


def parse_answer(text: str) -> Answer:
    """YES, NO or UNSURE from a reply: the whole reply (or its last line) must be the word,
    optionally after a short label ("Answer:"); case, markdown and final punctuation are
    ignored. Anything else is UNSURE."""
    cleaned = text.translate(_STRIP).strip().lower()
    lines = [ln.strip() for ln in cleaned.splitlines() if ln.strip()]
    for candidate in (cleaned, lines[-1] if lines else ""):
        m = _ANSWER.match(candidate)
        if m:
            return "YES" if m.group(1) == "yes" else "NO" if m.group(1) == "no" else "UNSURE"
    return "UNSURE"


def encode_indices_png(indices: NDArray[np.uint8]) -> bytes:
    """An indexed PNG of a canonical palette-index array (unknown pixels drawn black)."""
    h, w = indices.shape
    im = Image.frombytes("P", (w, h), np.ascontiguousarray(indices, dtype=np.uint8).tobytes())
    pal = bytes(v for rgb in style.PALETTE for v in rgb)
    im.putpalette(pal + bytes(768 - len(pal)))
    buf = io.BytesIO()
    im.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


@register_evaluator(EVALUATOR_NAME)
class VlmJudge:
    """Asks a VLM one question per requirement of each frame."""

    name = EVALUATOR_NAME

    def __init__(self, transport: VlmTransport | None = None, *, system: str = SYSTEM_PROMPT):
        if transport is None:
            raise InputError(
                "the vlm_judge evaluator needs a transport: build "
                "VlmJudge(transport) from vsb.evaluators.vlm_judge "
                "(OpenAICompatibleVlm, AnthropicVlm, FixtureVlm or MockVlm)"
            )
        self.transport = transport
        self.system = system

    def judge_png(self, image_png: bytes, scene: Scene) -> list[RequirementResult]:
        """Every requirement of ``scene`` asked about one image."""
        out = []
        for req in scene.requirements:
            q = question_for(req, scene.state)
            answer = parse_answer(self.transport.ask(image_png, self.system, q.text))
            passed = answer == q.expect
            out.append(
                RequirementResult.of(req, answer, passed, req.taxonomy, evaluator=EVALUATOR_NAME)
            )
        return out

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        out = EvaluatorOutput()
        for f in frames:
            if f.image is None:
                continue
            scene = story.scenes[f.scene - 1]
            results = self.judge_png(encode_indices_png(f.image), scene)
            out.requirements += [
                r.row(model=f.model, condition=f.condition, story_id=f.story_id, scene=f.scene)
                for r in results
            ]
            if results:
                out.signals.append(
                    {
                        "model": f.model,
                        "condition": f.condition,
                        "story_id": f.story_id,
                        "scene": f.scene,
                        "signal": SIGNAL_NAME,
                        "value": sum(r.passed for r in results) / len(results),
                    }
                )
        return out
