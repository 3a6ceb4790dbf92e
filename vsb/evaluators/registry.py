"""The evaluator registry: evaluators register by name with a decorator.

An evaluator is a class with a ``name`` and ``evaluate_story(story, frames)`` returning the
requirement rows and signal rows of one (model, condition, story) sequence of frames.
The rule checker (``rules``) and pairwise consistency (``pairwise``) are built in; the VLM
judge and embedding evaluators plug in the same way.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from vsb.evaluators.detected import EntityVocabulary
from vsb.evaluators.extractor import extract
from vsb.evaluators.pairwise import pairwise_scores
from vsb.evaluators.rules import check_scene
from vsb.registry import Registry
from vsb.story.models import Story


@dataclass(frozen=True)
class Frame:
    """One generated image of a run (``image`` is None when generation failed)."""

    model: str
    condition: str
    story_id: str
    scene: int
    image: NDArray[np.uint8] | None


@dataclass
class EvaluatorOutput:
    """Rows an evaluator produced for one sequence of frames."""

    requirements: list[dict[str, Any]] = field(default_factory=list)
    signals: list[dict[str, Any]] = field(default_factory=list)


class Evaluator(Protocol):
    """What every registered evaluator offers."""

    name: str

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        """Rows for the frames of one (model, condition, story), in scene order."""
        ...


EVALUATORS: Registry[type[Evaluator]] = Registry("evaluator")
#: Evaluators ``vsb evaluate`` runs by default.
DEFAULT_EVALUATORS: tuple[str, ...] = ("rules", "pairwise")


def register_evaluator(name: str) -> Any:
    """Class decorator: register an evaluator under ``name``."""
    return EVALUATORS.register(name)


def get_evaluator(name: str) -> Evaluator:
    """A fresh instance of the evaluator registered as ``name``."""
    return EVALUATORS.get(name)()


def _signal(f: Frame, signal: str, value: float) -> dict[str, Any]:
    return {
        "model": f.model,
        "condition": f.condition,
        "story_id": f.story_id,
        "scene": f.scene,
        "signal": signal,
        "value": value,
    }


@register_evaluator("rules")
class RulesEvaluator:
    """Blind extractor + rule checker: one row per (image, requirement). Frames without an
    image (generation failed) get no rows; the run's records report them."""

    name = "rules"

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        out = EvaluatorOutput()
        voc = EntityVocabulary.from_world(story.world)
        for f in frames:
            if f.image is None:
                continue
            scene = story.scenes[f.scene - 1]
            results = check_scene(extract(f.image, voc), scene, story.world)
            out.requirements += [
                r.row(model=f.model, condition=f.condition, story_id=f.story_id, scene=f.scene)
                for r in results
            ]
        return out


@register_evaluator("pairwise")
class PairwiseEvaluator:
    """Histogram intersection with the previous frame (from scene 2 on)."""

    name = "pairwise"

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        out = EvaluatorOutput()
        for prev, cur in itertools.pairwise(frames):
            if prev.image is None or cur.image is None or cur.scene != prev.scene + 1:
                continue
            for signal, value in pairwise_scores(prev.image, cur.image).items():
                out.signals.append(_signal(cur, signal, value))
        return out


# Optional evaluators register on import; they import this module, so they come last.
from vsb.evaluators import vlm_judge as _vlm_judge  # noqa: E402, F401
