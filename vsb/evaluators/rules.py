"""The rule checker: a ``DetectedState`` against a scene's requirements.

Detected people are matched to the world's characters by weighted attribute distance
(identity attributes weigh most) with ``scipy.optimize.linear_sum_assignment``; then every
requirement is evaluated. A failure carries the requirement's taxonomy, except knock-on
failures, which carry their root cause: a character not found fails its identity,
clothing, pose and order checks as ``character_missing``; an object not found fails its
holder, state and count checks as ``object_disappeared``; an object found only in another
colour fails its presence/holder checks as ``object_color_change``.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from vsb.evaluators.extractor import extract
from vsb.evaluators.interface import EvaluatorOutput, Frame, StoryEvaluator
from vsb.evaluators.render.detected import (
    DetectedObject,
    DetectedPerson,
    DetectedState,
    EntityVocabulary,
)
from vsb.fsio import STRICT
from vsb.story.models import CharacterState, Requirement, Scene, Story, Value, World

#: Attribute weights of the matching distance (identity first).
WEIGHTS: dict[str, float] = {
    "skin": 3.0,
    "hair_color": 3.0,
    "hair_style": 3.0,
    "top": 1.0,
    "trousers": 1.0,
    "accessory": 1.0,
    "pose": 0.5,
}
#: A pairing at or above this distance is no match. Above the largest possible distance:
#: a figure whose every attribute drifted is still the character it stands in for; who it
#: is goes to the cheapest assignment.
MAX_DISTANCE = sum(WEIGHTS.values()) + 10.0
#: Added for characters expected absent: a seen figure is taken for an expected character
#: unless it resembles an absent one far better (an unexpected appearance costs 0 + bias).
#: What a requirement row can say (docs/CONTRACTS.md); ``passed`` iff verdict == "passed".
Verdict = Literal["", "passed", "failed", "unsure", "not_applicable", "parse_failure", "unreadable"]
ABSENT_BIAS = 6.0
#: Added when a person stands at another rank than the character's expected place, only for
#: pairings in which every identity attribute differs (identity then says nothing, and the
#: place is the remaining cue), and only when as many people are seen as are expected.
ORDER_WEIGHT = 2.0
_IDENTITY = ("skin", "hair_color", "hair_style")


#: The requirement's fields a result row carries as they are (and its id, as ``req_id``).
_CARRIED = ("dimension", "taxonomy", "source", "subject", "attribute", "expected")


class RequirementResult(BaseModel):
    """One requirement checked on one image (the evaluations row minus the run columns)."""

    model_config = STRICT
    req_id: str = Field(description="Requirement id (s<scene>.<subject>.<attribute>).")
    dimension: str = Field(description="Scored dimension of the requirement.")
    taxonomy: str = Field(description="The requirement's own failure label.")
    source: str = Field(description="prompt | memory.")
    subject: str = Field(description="Character name, object kind or 'scene'.")
    attribute: str = Field(description="Checked attribute.")
    expected: Value = Field(description="Expected value.")
    observed: Any = Field(description="What the image shows (JSON value; null = not found).")
    passed: bool = Field(description="Whether the image satisfies the requirement.")
    failure: str = Field(description="Failure label ('' when passed; root cause if knock-on).")
    evaluator: str = Field(default="rules", description="Evaluator that produced the row.")
    verdict: Verdict = Field(
        default="",
        description=(
            "passed | failed | unsure | not_applicable | parse_failure | unreadable "
            "('' = from passed)."
        ),
    )
    judge_model: str = Field(default="", description="The judge model ('' for non-judges).")

    @classmethod
    def of(
        cls,
        req: Requirement,
        observed: Any,
        passed: bool,
        failure: str,
        evaluator: str = "rules",
        *,
        verdict: Verdict = "",
        judge_model: str = "",
    ) -> RequirementResult:
        """The result of checking ``req``: ``failure`` is kept only when it did not pass.
        ``verdict`` defaults to passed/failed from ``passed``."""
        return cls(
            req_id=req.id,
            **{f: getattr(req, f) for f in _CARRIED},
            observed=observed,
            passed=passed,
            failure="" if passed else failure,
            evaluator=evaluator,
            verdict=verdict or ("passed" if passed else "failed"),
            judge_model=judge_model,
        )

    def row(self, *, model: str, condition: str, story_id: str, scene: int) -> dict[str, Any]:
        """The ``requirements.jsonl`` row (expected and observed as JSON text)."""
        run = {"model": model, "condition": condition, "story_id": story_id, "scene": scene}
        return {**run, **self.cells()}

    def cells(self) -> dict[str, Any]:
        """The row's cells but the run's own (model, condition, story_id, scene)."""
        return {
            "req_id": self.req_id,
            "dimension": self.dimension,
            "taxonomy": self.taxonomy,
            "source": self.source,
            "subject": self.subject,
            "attribute": self.attribute,
            "expected": json.dumps(self.expected, sort_keys=True),
            "observed": json.dumps(self.observed, sort_keys=True),
            "passed": self.passed,
            "failure": self.failure,
            "evaluator": self.evaluator,
            "verdict": self.verdict or ("passed" if self.passed else "failed"),
            "judge_model": self.judge_model,
        }


def distance(p: DetectedPerson, c: CharacterState) -> float:
    """Weighted attribute distance between a detected person and a character."""
    return sum(w for a, w in WEIGHTS.items() if getattr(p, a) != getattr(c, a))


def match_people(detected: DetectedState, scene: Scene, world: World) -> dict[str, int]:
    """Character name -> index of the detected person shown as that character."""
    names = [c.name for c in world.characters]
    people = detected.people
    if not people:
        return {}
    chars = [scene.state.characters[n] for n in names]
    cost = np.array(
        [[distance(p, c) + (0.0 if c.present else ABSENT_BIAS) for c in chars] for p in people]
    )
    order = scene.state.order
    if len(people) == len(order):
        rank = {i: r for r, i in enumerate(sorted(range(len(people)), key=lambda i: people[i].x))}
        for i in range(len(people)):
            for j, n in enumerate(names):
                unknown = all(getattr(people[i], a) != getattr(chars[j], a) for a in _IDENTITY)
                if unknown and n in order and order.index(n) != rank[i]:
                    cost[i, j] += ORDER_WEIGHT
    from scipy.optimize import linear_sum_assignment  # slow to import: only when matching

    rows, cols = linear_sum_assignment(cost)
    return {names[j]: int(i) for i, j in zip(rows, cols, strict=True) if cost[i, j] < MAX_DISTANCE}


class _Context:
    def __init__(self, detected: DetectedState, scene: Scene, world: World) -> None:
        self.d = detected
        self.scene = scene
        self.matched = match_people(detected, scene, world)
        self.who = {i: n for n, i in self.matched.items()}

    def person(self, name: str) -> DetectedPerson | None:
        i = self.matched.get(name)
        return None if i is None else self.d.people[i]

    def holder_name(self, o: DetectedObject) -> str | None:
        if o.holder is None:
            return None
        return self.who.get(o.holder, "?")

    def find(self, kind: str) -> tuple[DetectedObject | None, DetectedObject | None]:
        """(an object of this kind in the story's colour, any object of this kind)."""
        color = self.scene.state.objects[kind].color
        found = self.d.objects_of(kind)
        exact = next((o for o in found if o.color == color), None)
        return exact, (exact or (found[0] if found else None))


def _result(req: Requirement, observed: Any, passed: bool, failure: str) -> RequirementResult:
    return RequirementResult.of(req, observed, passed, failure)


def _scene_fact(ctx: _Context, req: Requirement) -> RequirementResult:
    if req.attribute == "order":
        expected = list(req.expected) if isinstance(req.expected, list) else []
        shown = sorted((ctx.d.people[i].x, n) for n, i in ctx.matched.items() if n in expected)
        observed = [n for _, n in shown]
        # Someone missing is the root cause only when those seen stand in the story's order;
        # a swap among those seen is an order fault of its own.
        seen = [n for n in expected if n in ctx.matched]
        label = "character_missing" if seen != expected and observed == seen else req.taxonomy
        return _result(req, observed, observed == expected, label)
    observed = getattr(ctx.d, req.attribute)
    return _result(req, observed, observed == req.expected, req.taxonomy)


def _character_fact(ctx: _Context, req: Requirement) -> RequirementResult:
    p = ctx.person(req.subject)
    if req.attribute == "present":
        seen = p is not None
        return _result(req, seen, seen == req.expected, req.taxonomy)
    if p is None:
        return _result(req, None, False, "character_missing")
    if req.attribute == "hair":
        observed: Any = [p.hair_color, p.hair_style]
    else:
        observed = getattr(p, req.attribute)
    return _result(req, observed, observed == req.expected, req.taxonomy)


def _object_fact(ctx: _Context, req: Requirement) -> RequirementResult:
    exact, any_ = ctx.find(req.subject)
    attr = req.attribute
    if attr == "present" and req.expected is False:
        return _result(req, any_ is not None, any_ is None, req.taxonomy)
    if any_ is None:
        return _result(req, None if attr != "present" else False, False, "object_disappeared")
    if attr in ("present", "holder") and exact is None:
        return _result(req, {"color": any_.color}, False, "object_color_change")
    if attr == "present":
        return _result(req, True, True, req.taxonomy)
    if attr == "holder":
        assert exact is not None
        observed = ctx.holder_name(exact)
        return _result(req, observed, observed == req.expected, req.taxonomy)
    observed = getattr(any_, attr)
    return _result(req, observed, observed == req.expected, req.taxonomy)


def check_scene(detected: DetectedState, scene: Scene, world: World) -> list[RequirementResult]:
    """Evaluate every requirement of ``scene`` on what was detected in its image."""
    ctx = _Context(detected, scene, world)
    kinds = {o.kind for o in world.objects}
    out = []
    for req in scene.requirements:
        if req.judged_by == "vlm":  # free text outside the render vocabulary
            why = {"reason": "judged by VLM only (free text outside the render vocabulary)"}
            out.append(RequirementResult.of(req, why, False, "", "rules", verdict="not_applicable"))
        elif req.subject == "scene":
            out.append(_scene_fact(ctx, req))
        elif req.subject in kinds:
            out.append(_object_fact(ctx, req))
        else:
            out.append(_character_fact(ctx, req))
    return out


class RulesEvaluator(StoryEvaluator):
    """Blind extractor + rule checker: one row per (image, requirement). Frames without an
    image (generation failed) get no rows; images that are not renders get one
    ``not_applicable`` row per requirement."""

    name = "rules"
    kind = "verdicts"
    reads = "renders"
    description = "blind extractor + rule checker (renders only)"

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        # scipy.optimize (~0.2 s) is imported by the instance, not the module: reading this
        # class's declaration (the site's evaluator table) does not load it, and the pool
        # workers of an evaluation, forked after the instance is made, inherit it.
        import scipy.optimize  # noqa: F401

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        """Rows for the frames of one (model, condition, story)."""
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
            elif f.memo is not None and f.sha256:
                # The checks of one picture of one scene, made once: a release shows the same
                # bytes under several conditions (the oracle under all of them), and each
                # check costs a result and two JSON texts (~25 µs; 218,754 of them).
                checked = f.memo.keep(
                    f"rules:{story.id}:{f.scene}",
                    f.sha256,
                    partial(_checked_cells, f, voc, scene, story),
                    hit="extract_hits",
                )
                run = {"model": f.model, "condition": f.condition, "story_id": f.story_id,
                       "scene": f.scene}  # fmt: skip
                out.requirements += [{**run, **cells} for cells in checked]
                continue
            else:
                results = check_scene(extract(f.image, voc, f.counts), scene, story.world)
            out.requirements += [
                r.row(model=f.model, condition=f.condition, story_id=f.story_id, scene=f.scene)
                for r in results
            ]
        return out


def _checked_cells(
    f: Frame, voc: EntityVocabulary, scene: Scene, story: Story
) -> list[dict[str, Any]]:
    """The cells (``RequirementResult.cells``) of every check of ``scene`` on the render of
    frame ``f``, read through its memo."""
    assert f.memo is not None and f.image is not None
    state = f.memo.extract(f.sha256, f.image, f.counts, voc)
    return [r.cells() for r in check_scene(state, scene, story.world)]
