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

An image that was generated but cannot be read (not an image, data that does not decode,
over the pixel cap) gets the same treatment with verdict ``unreadable`` and failure label
``unreadable`` (``unreadable_rows``; its observed ``reason`` says why): not passed, so
scores count it as a failed check, and its image counts against the model's coverage like
a failed generation.

The requirements of an image are the evaluator's ``requirements_at(story, scene)``: its
scene's (``vlm_xframe``: the cross-frame questions located at the image, i.e. the pair it
forms with the frame before).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from vsb.evaluators.interface import Evaluator, Image
from vsb.evaluators.rules import RequirementResult, Verdict
from vsb.story.models import Story

LABEL = "generation_failed"
#: Verdict and failure label of every row of an image that cannot be read.
UNREADABLE: Final = "unreadable"

__all__ = ["LABEL", "UNREADABLE", "Image", "generation_failed_rows", "replace_failed",
           "unreadable_rows"]  # fmt: skip


def generation_failed_rows(
    failed: Iterable[Image],
    stories: Mapping[str, Story],
    evaluators: Sequence[Evaluator],
    judge_model: str = "",
) -> list[dict[str, Any]]:
    """One ``failed`` row with failure ``generation_failed`` per requirement of every failed
    image, for every evaluator of kind ``verdicts`` among ``evaluators``."""
    why = "no image: the generation failed or was refused"
    return _rows(dict.fromkeys(failed, why), stories, evaluators, judge_model, "failed", LABEL)


def unreadable_rows(
    unreadable: Mapping[Image, str],
    stories: Mapping[str, Story],
    evaluators: Sequence[Evaluator],
    judge_model: str = "",
) -> list[dict[str, Any]]:
    """One ``unreadable`` row per requirement of every image of ``unreadable`` (image ->
    why it cannot be read), for every evaluator of kind ``verdicts`` among ``evaluators``."""
    reasons = {k: f"unreadable image: {why}" for k, why in unreadable.items()}
    return _rows(reasons, stories, evaluators, judge_model, UNREADABLE, UNREADABLE)


def _rows(
    reasons: Mapping[Image, str],
    stories: Mapping[str, Story],
    evaluators: Sequence[Evaluator],
    judge_model: str,
    verdict: Verdict,
    label: str,
) -> list[dict[str, Any]]:
    verdicts = [e for e in evaluators if e.kind == "verdicts"]
    rows: list[dict[str, Any]] = []
    for image in sorted(reasons):
        model, condition, story_id, scene = image
        story = stories[story_id]
        observed = {"reason": reasons[image]}
        for ev in verdicts:
            jm = judge_model if ev.stage == "calls" else ""
            for req in ev.requirements_at(story, scene):
                res = RequirementResult.of(
                    req, observed, False, label, ev.name, verdict=verdict, judge_model=jm
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
    unreadable: Mapping[Image, str] | None = None,
) -> list[dict[str, Any]]:
    """``rows`` without any row about a failed or unreadable image, then the
    ``generation_failed`` rows, then the ``unreadable`` rows."""
    unreadable = unreadable or {}
    gone = set(failed)
    drop = gone | set(unreadable)
    kept = [
        r for r in rows
        if (r["model"], r["condition"], r["story_id"], int(r["scene"])) not in drop
    ]  # fmt: skip
    return (
        kept
        + generation_failed_rows(gone, stories, evaluators, judge_model)
        + unreadable_rows(unreadable, stories, evaluators, judge_model)
    )
