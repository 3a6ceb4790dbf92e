"""Failed generations count: every requirement of an image that was not generated fails.

An image whose request failed or was refused (a record with an ``error``: no picture) has
nothing for an evaluator to look at. Leaving it out would reward a model for failing — its
cell would just have fewer images, ``n_stories`` would drop and nothing would be penalised.
So ``generation_failed_rows`` gives, for every evaluator of kind ``verdicts`` in an
evaluation, one ``failed`` row per (image, requirement) with the failure label
``generation_failed`` (a judge's rows carry its judge model); the evaluators themselves skip
such frames, and ``replace_failed`` drops any row one of them wrote for a failed image, so
there is exactly one row per (image, requirement, evaluator).

The requirements of an image are its scene's (``vlm_xframe``: the cross-frame questions
located at the image, i.e. the pair it forms with the frame before).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vsb.evaluators.registry import evaluator_info
from vsb.evaluators.rules import RequirementResult
from vsb.evaluators.vlm_questions import pair_questions
from vsb.story.models import Requirement, Story

LABEL = "generation_failed"
#: Evaluators whose requirements are the cross-frame pairs ending at the image.
PAIR_EVALUATORS = ("vlm_xframe",)
#: Evaluators whose rows name the judge model.
JUDGE_EVALUATORS = ("vlm", "vlm_xframe")

Image = tuple[str, str, str, int]  # model, condition, story id, scene


def _requirements(name: str, story: Story, scene: int) -> list[Requirement]:
    if name in PAIR_EVALUATORS:
        if scene < 2:
            return []
        return [r for r, _q in pair_questions(story.scenes[scene - 2], story.scenes[scene - 1])]
    return list(story.scenes[scene - 1].requirements)


def generation_failed_rows(
    failed: Iterable[Image],
    stories: Mapping[str, Story],
    evaluators: Sequence[str],
    judge_model: str = "",
) -> list[dict[str, Any]]:
    """One ``failed`` row with failure ``generation_failed`` per requirement of every failed
    image, for every evaluator of kind ``verdicts`` among ``evaluators``."""
    names = [n for n in evaluators if evaluator_info(n).kind == "verdicts"]
    rows: list[dict[str, Any]] = []
    observed = {"reason": "no image: the generation failed or was refused"}
    for model, condition, story_id, scene in sorted(set(failed)):
        story = stories[story_id]
        for name in names:
            jm = judge_model if name in JUDGE_EVALUATORS else ""
            for req in _requirements(name, story, scene):
                res = RequirementResult.of(
                    req, observed, False, LABEL, name, verdict="failed", judge_model=jm
                )
                rows.append(
                    res.row(model=model, condition=condition, story_id=story_id, scene=scene)
                )
    return rows


def replace_failed(
    rows: list[dict[str, Any]],
    failed: Iterable[Image],
    stories: Mapping[str, Story],
    evaluators: Sequence[str],
    judge_model: str = "",
) -> list[dict[str, Any]]:
    """``rows`` without any row about a failed image, then the ``generation_failed`` rows."""
    gone = set(failed)
    kept = [
        r for r in rows
        if (r["model"], r["condition"], r["story_id"], int(r["scene"])) not in gone
    ]  # fmt: skip
    return kept + generation_failed_rows(gone, stories, evaluators, judge_model)
