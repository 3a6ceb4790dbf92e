"""Failed generations count: every requirement of an image that was not generated fails.

An image whose request failed or was refused (a record with an ``error``: no picture) has
nothing for an evaluator to look at. Leaving it out would reward a model for failing — its
cell would just have fewer images, ``n_stories`` would drop and nothing would be penalised.
So it is a work item whose outcome is known without work: ``generation_failed_rows`` gives,
for every evaluator of kind ``verdicts`` in an evaluation, one ``failed`` row per (image,
requirement) with the failure label ``generation_failed`` (a judge's rows — those of the
``calls`` stage — carry its judge model); the evaluators themselves skip such frames, and
``replace_failed`` drops any row one of them wrote for a failed image, so there is exactly
one row per (image, requirement, evaluator).

The requirements of an image are the evaluator's ``requirements_at(story, scene)``: its
scene's (``vlm_xframe``: the cross-frame questions located at the image, i.e. the pair it
forms with the frame before).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vsb.evaluators.interface import Evaluator, Image
from vsb.evaluators.rules import RequirementResult
from vsb.story.models import Story

LABEL = "generation_failed"


def generation_failed_rows(
    failed: Iterable[Image],
    stories: Mapping[str, Story],
    evaluators: Sequence[Evaluator],
    judge_model: str = "",
) -> list[dict[str, Any]]:
    """One ``failed`` row with failure ``generation_failed`` per requirement of every failed
    image, for every evaluator of kind ``verdicts`` among ``evaluators``."""
    verdicts = [e for e in evaluators if e.kind == "verdicts"]
    rows: list[dict[str, Any]] = []
    observed = {"reason": "no image: the generation failed or was refused"}
    for model, condition, story_id, scene in sorted(set(failed)):
        story = stories[story_id]
        for ev in verdicts:
            jm = judge_model if ev.stage == "calls" else ""
            for req in ev.requirements_at(story, scene):
                res = RequirementResult.of(
                    req, observed, False, LABEL, ev.name, verdict="failed", judge_model=jm
                )
                rows.append(
                    res.row(model=model, condition=condition, story_id=story_id, scene=scene)
                )
    return rows


def replace_failed(
    rows: list[dict[str, Any]],
    failed: Iterable[Image],
    stories: Mapping[str, Story],
    evaluators: Sequence[Evaluator],
    judge_model: str = "",
) -> list[dict[str, Any]]:
    """``rows`` without any row about a failed image, then the ``generation_failed`` rows."""
    gone = set(failed)
    kept = [
        r for r in rows
        if (r["model"], r["condition"], r["story_id"], int(r["scene"])) not in gone
    ]  # fmt: skip
    return kept + generation_failed_rows(gone, stories, evaluators, judge_model)
