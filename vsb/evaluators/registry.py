"""The evaluator registry: what each evaluator is, reads and costs, and how to build it.

An evaluator is a class with a ``name`` and ``evaluate_story(story, frames)`` returning the
requirement rows and signal rows of one (model, condition, story) sequence of frames. Its
``EvaluatorInfo`` declares its kind (requirement ``verdicts`` or continuous ``signals``),
what it reads (``renders`` only, or ``any`` image), whether it costs money, and where its
class lives. Built-ins are listed by import path and imported on first use, so no evaluator
module imports this one at import time of the other (no registration circle); a plug-in
registers with ``register_evaluator``.

Built-ins:

- ``rules``: blind extractor + rule checker (renders only);
- ``pairwise``: colour-histogram intersection of consecutive frames (renders only);
- ``vlm``: the VLM question-answering judge (any image; needs ``--judge``; paid);
- ``vlm_xframe``: the judge's cross-frame questions on consecutive frames (same person, same
  clothes, same place; VinaBench's consistency checks), scored as an evaluator of its own.
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from vsb.errors import UnknownNameError
from vsb.evaluators.detected import EntityVocabulary
from vsb.evaluators.extractor import extract
from vsb.evaluators.pairwise import FrameHistograms, histogram_scores
from vsb.evaluators.rules import RequirementResult, check_scene
from vsb.story.models import Story


@dataclass(frozen=True)
class Frame:
    """One image of a run. ``path`` is None when generation failed; ``image`` holds the
    canonical palette indices when the image is a render (``is_render``), else None and
    ``reason`` says why it is not one."""

    model: str
    condition: str
    story_id: str
    scene: int
    image: NDArray[np.uint8] | None
    path: str | None = None
    is_render: bool = True
    reason: str = ""
    counts: NDArray[np.intp] | None = None
    """Pixels per palette index of ``image`` when the decoder counted them (else None)."""
    unreadable: str = ""
    """Why the image file could not be read ('' when it could); such a frame has no
    ``path`` (evaluators skip it, as a failed generation) and ``vsb evaluate`` gives it
    ``unreadable`` rows (``vsb.evaluators.failed``)."""


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


@dataclass(frozen=True)
class EvaluatorInfo:
    """The declaration of an evaluator."""

    name: str
    kind: Literal["verdicts", "signals"]
    reads: Literal["renders", "any"]
    paid: bool
    target: str  # "module:Class"
    needs: str = ""  # what it needs beyond the run ("--judge", model weights …)
    description: str = ""

    def load(self) -> type[Any]:
        """The evaluator class (imported now)."""
        module, _, cls = self.target.partition(":")
        return getattr(importlib.import_module(module), cls)


_INFO: dict[str, EvaluatorInfo] = {}
#: Evaluators ``vsb evaluate`` runs when none is named (a judge joins them with --judge).
DEFAULT_EVALUATORS: tuple[str, ...] = ("rules", "pairwise")


def register_evaluator(
    name: str,
    *,
    kind: Literal["verdicts", "signals"] = "verdicts",
    reads: Literal["renders", "any"] = "any",
    paid: bool = False,
    needs: str = "",
    description: str = "",
) -> Any:
    """Class decorator: register a plug-in evaluator under ``name``."""

    def deco(cls: type[Any]) -> type[Any]:
        add(EvaluatorInfo(name, kind, reads, paid, f"{cls.__module__}:{cls.__qualname__}",
                          needs, description))  # fmt: skip
        return cls

    return deco


def add(info: EvaluatorInfo) -> None:
    """Register a declaration (names are unique)."""
    if info.name in _INFO:
        raise ValueError(f"evaluator {info.name!r} registered twice")
    _INFO[info.name] = info


def evaluator_info(name: str) -> EvaluatorInfo:
    """The declaration of ``name``; unknown names list the known ones."""
    try:
        return _INFO[name]
    except KeyError:
        raise UnknownNameError("evaluator", name, _INFO) from None


def evaluator_names() -> list[str]:
    """Registered evaluator names, built-ins first."""
    return list(_INFO)


def get_evaluator(name: str, *args: Any, **kwargs: Any) -> Evaluator:
    """A fresh instance of the evaluator registered as ``name``."""
    return evaluator_info(name).load()(*args, **kwargs)


def _signal(f: Frame, signal: str, value: float | None, evaluator: str) -> dict[str, Any]:
    return {
        "model": f.model,
        "condition": f.condition,
        "story_id": f.story_id,
        "scene": f.scene,
        "signal": signal,
        "value": value,
        "evaluator": evaluator,
    }


class RulesEvaluator:
    """Blind extractor + rule checker: one row per (image, requirement). Frames without an
    image (generation failed) get no rows; images that are not renders get one
    ``not_applicable`` row per requirement."""

    name = "rules"

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        out = EvaluatorOutput()
        voc = EntityVocabulary.from_world(story.world)
        for f in frames:
            if f.path is None and f.image is None:
                continue
            scene = story.scenes[f.scene - 1]
            if f.image is None or not f.is_render:
                why = {"reason": f.reason or "not a render"}
                results = [
                    RequirementResult.of(r, why, False, "", "rules", verdict="not_applicable")
                    for r in scene.requirements
                ]
            else:
                results = check_scene(extract(f.image, voc, f.counts), scene, story.world)
            out.requirements += [
                r.row(model=f.model, condition=f.condition, story_id=f.story_id, scene=f.scene)
                for r in results
            ]
        return out


class PairwiseEvaluator:
    """Histogram intersection with the previous frame (from scene 2 on); a pair that is not
    two renders gets null values (not applicable)."""

    name = "pairwise"

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        out = EvaluatorOutput()
        hists: dict[int, FrameHistograms] = {}  # by frame position: each frame read once

        def hist(i: int) -> FrameHistograms:
            if i not in hists:
                hists[i] = FrameHistograms.of(frames[i].image, frames[i].counts)
            return hists[i]

        for i, (prev, cur) in enumerate(itertools.pairwise(frames)):
            if cur.scene != prev.scene + 1:
                continue
            if prev.image is None or cur.image is None:
                if prev.path is not None and cur.path is not None:
                    for signal in ("pairwise_global", "pairwise_band"):
                        out.signals.append(_signal(cur, signal, None, self.name))
                continue
            for signal, value in histogram_scores(hist(i), hist(i + 1)).items():
                out.signals.append(_signal(cur, signal, value, self.name))
        return out


add(EvaluatorInfo(
    "rules", "verdicts", "renders", False, "vsb.evaluators.registry:RulesEvaluator",
    description="blind extractor + rule checker (renders only)",
))  # fmt: skip
add(EvaluatorInfo(
    "pairwise", "signals", "renders", False, "vsb.evaluators.registry:PairwiseEvaluator",
    description="colour-histogram intersection of consecutive frames (renders only)",
))  # fmt: skip
add(EvaluatorInfo(
    "vlm", "verdicts", "any", True, "vsb.evaluators.vlm_judge:VlmJudge", needs="--judge",
    description="VLM question-answering judge, one call per scene (any image)",
))  # fmt: skip
add(EvaluatorInfo(
    "vlm_xframe", "verdicts", "any", True, "vsb.evaluators.vlm_judge:VlmJudge", needs="--judge",
    description="VLM cross-frame questions on consecutive frames: same person, clothes, place",
))  # fmt: skip
add(EvaluatorInfo(
    "clip", "signals", "any", False, "vsb.evaluators.embed:ClipEvaluator",
    needs="CLIP weights (--clip-model); pip install 'vsb[embed]'",
    description="CLIP text–image similarity and reciprocal rank among negative texts (any image)",
))  # fmt: skip
add(EvaluatorInfo(
    "dino", "signals", "any", False, "vsb.evaluators.embed:DinoEvaluator",
    needs="DINOv2 weights (--dino-model); pip install 'vsb[embed]'",
    description="DINOv2 CLS similarity to the previous frame and to scene 1 (any image)",
))  # fmt: skip
