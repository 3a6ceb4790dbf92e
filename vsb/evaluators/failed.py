"""Failed generations count: every requirement of an image that was not generated fails.

An image whose request failed or was refused (a record with an ``error``: no picture) has
nothing for an evaluator to look at. Leaving it out would reward a model for failing — its
cell would just have fewer images, ``n_stories`` would drop and nothing would be penalised.
So ``generation_failed_rows`` gives, for every evaluator of kind ``verdicts`` in an
evaluation, one ``failed`` row per (image, requirement) with the failure label
``generation_failed`` (a judge's rows carry its judge model); the evaluators themselves skip
such frames, and ``replace_failed`` drops any row one of them wrote for a failed image, so
there is exactly one row per (image, requirement, evaluator).

An image that was generated but cannot be read (not an image, data that does not decode,
over the pixel cap) gets the same treatment with verdict ``unreadable`` and failure label
``unreadable`` (``unreadable_rows``; its observed ``reason`` says why): not passed, so
scores count it as a failed check, and its image counts against the model's coverage like
a failed generation.

The requirements of an image are its scene's (``vlm_xframe``: the cross-frame questions
located at the image, i.e. the pair it forms with the frame before).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from vsb.evaluators.registry import evaluator_info
from vsb.evaluators.rules import RequirementResult, Verdict
from vsb.evaluators.vlm_questions import pair_questions
from vsb.story.models import Requirement, Story

LABEL = "generation_failed"
#: Verdict and failure label of every row of an image that cannot be read.
UNREADABLE: Final = "unreadable"
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
    why = "no image: the generation failed or was refused"
    return _rows(dict.fromkeys(failed, why), stories, evaluators, judge_model, "failed", LABEL)


def unreadable_rows(
    unreadable: Mapping[Image, str],
    stories: Mapping[str, Story],
    evaluators: Sequence[str],
    judge_model: str = "",
) -> list[dict[str, Any]]:
    """One ``unreadable`` row per requirement of every image of ``unreadable`` (image ->
    why it cannot be read), for every evaluator of kind ``verdicts`` among ``evaluators``."""
    reasons = {k: f"unreadable image: {why}" for k, why in unreadable.items()}
    return _rows(reasons, stories, evaluators, judge_model, UNREADABLE, UNREADABLE)


def _rows(
    reasons: Mapping[Image, str],
    stories: Mapping[str, Story],
    evaluators: Sequence[str],
    judge_model: str,
    verdict: Verdict,
    label: str,
) -> list[dict[str, Any]]:
    names = [n for n in evaluators if evaluator_info(n).kind == "verdicts"]
    rows: list[dict[str, Any]] = []
    for image in sorted(reasons):
        model, condition, story_id, scene = image
        story = stories[story_id]
        observed = {"reason": reasons[image]}
        for name in names:
            jm = judge_model if name in JUDGE_EVALUATORS else ""
            for req in _requirements(name, story, scene):
                res = RequirementResult.of(
                    req, observed, False, label, name, verdict=verdict, judge_model=jm
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
