"""The long-horizon view: pass rates by scene position, by difficulty and by story length.

The question the benchmark exists for is whether a model keeps a story's facts as the story
goes on. For each (model, condition) this module reports, with story-clustered percentile
bootstrap CIs (the same resample counts as every other interval of the evaluator):

* ``axis="scene"``: the pass rate of memory requirements (``coherence``) and of prompt
  requirements (``adherence``) at each scene position 1…8, macro-averaged over the stories
  that have that position (a story's value at position k is its pass rate over the checks of
  scene k). Scene 1 states everything, so it has no memory requirement.
* ``axis="difficulty"`` and ``axis="length"`` (number of scenes): the global score, prompt
  adherence and memory coherence macro-averaged over the stories of each group.

A resample draws stories from the whole suite; a group's mean in a resample is over the
drawn stories of that group (a ratio estimator), and a resample without any is left out.
``not_applicable`` rows must already be removed; ``unsure``/``parse_failure`` count as not
passed (they are not ``passed``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from vsb.fsio import STRICT
from vsb.scores.inputs import NOT_APPLICABLE, RequirementRows, codes, equals
from vsb.scores.stats.bootstrap import (
    FloatArray,
    nan_mean,
    nan_to_none,
    percentile_interval,
    weighted_means,
)
from vsb.scores.table import ADHERENCE, COHERENCE, StoryTable

HorizonAxis = Literal["scene", "difficulty", "length"]
#: Metrics per axis, display order.
SCENE_METRICS: tuple[str, ...] = ("coherence", "adherence")
GROUP_METRICS: tuple[str, ...] = ("global", "adherence", "coherence")
DIFFICULTY_ORDER: tuple[str, ...] = ("easy", "medium", "hard")


class HorizonPoint(BaseModel):
    """One (model, condition, axis, group, metric) of the long-horizon view."""

    model_config = STRICT
    evaluator: str = Field(description="Who judged (the rows of one evaluator only).")
    model: str
    condition: str
    axis: HorizonAxis = Field(
        description="scene: scene position; difficulty; length: number of scenes."
    )
    group: str = Field(description="Scene position (1…8), difficulty, or scene count.")
    metric: str = Field(
        description="coherence (memory requirements), adherence (prompt requirements) or "
        "global (mean of the dimensions; group axes only)."
    )
    score: float = Field(description="Macro-average over the stories of the group/position.")
    ci_low: float | None = Field(description="Lower bound of the story bootstrap CI.")
    ci_high: float | None = Field(description="Upper bound of the story bootstrap CI.")
    n_stories: int = Field(ge=0, description="Stories contributing.")
    n_checks: int = Field(ge=0, description="Requirement checks behind the figure.")


@dataclass(frozen=True)
class StoryInfo:
    """What the long-horizon view needs to know of a story."""

    difficulty: str | None
    n_scenes: int


def _scene_values(
    rows: RequirementRows, table: StoryTable, n_pos: int
) -> tuple[FloatArray, np.ndarray]:
    """``(stories, models, conditions, positions, 2)`` pass rates (coherence, adherence) and
    the matching check counts."""
    mi = {x: i for i, x in enumerate(table.models)}
    ci = {x: i for i, x in enumerate(table.conditions)}
    si = {x: i for i, x in enumerate(table.stories)}
    n_s, n_m, n_c = len(table.stories), len(table.models), len(table.conditions)
    shape = (n_s, n_m, n_c, n_pos, 2)
    n = len(rows)
    scene = np.fromiter(rows.scene, dtype=np.int64, count=n) - 1
    other = (~equals(rows.source, "memory")).astype(np.int64)  # 0 memory, 1 prompt
    index = (codes(rows.story_id, si), codes(rows.model, mi), codes(rows.condition, ci))
    keys = np.ravel_multi_index((*index, scene, other), shape)
    passed = np.fromiter(rows.passed, dtype=np.float64, count=len(rows))
    size = int(np.prod(shape))
    total = np.bincount(keys, minlength=size).astype(np.float64)
    npass = np.bincount(keys, weights=passed, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(total > 0, npass / total, np.nan)
    return values.reshape(shape), total.reshape(shape).astype(np.int64)


def _group_order(axis: str, groups: set[str]) -> list[str]:
    if axis == "difficulty":
        return [g for g in DIFFICULTY_ORDER if g in groups] + sorted(groups - set(DIFFICULTY_ORDER))
    return sorted(groups, key=lambda g: (int(g) if g.isdigit() else 10**9, g))


def horizon(
    rows: RequirementRows,
    table: StoryTable,
    weights: FloatArray,
    evaluator: str,
    stories: Mapping[str, StoryInfo] | None = None,
    confidence: float = 0.95,
) -> list[HorizonPoint]:
    """The long-horizon view of one evaluator (``rows`` and ``table`` are its own, built
    from the same rows; ``weights`` its bootstrap counts over ``table.stories``).

    ``stories`` gives each story's difficulty and scene count (from the run's suite index);
    without it the length is the highest scene evaluated and difficulty is left out.
    """
    if NOT_APPLICABLE in rows.verdict:
        rows = rows.view([v != NOT_APPLICABLE for v in rows.verdict])
    if not len(rows):
        return []
    n_pos = max(rows.scene)
    info: dict[str, StoryInfo] = {}
    for sid in table.stories:
        known = (stories or {}).get(sid)
        if known is None:
            seen = max((k for s, k in zip(rows.story_id, rows.scene, strict=True) if s == sid))
            known = StoryInfo(None, seen)
        info[sid] = known
    n_pos = max(n_pos, *(i.n_scenes for i in info.values()))
    out: list[HorizonPoint] = []
    # scene positions: (stories, models, conditions, positions, metric)
    vals, counts = _scene_values(rows, table, n_pos)
    out += _points(
        evaluator, table, vals, counts, weights, confidence, "scene",
        [str(k + 1) for k in range(n_pos)], SCENE_METRICS,
    )  # fmt: skip
    # groups: per story, (global, adherence, coherence) of every (model, condition)
    story_vals = np.stack(
        [table.story_global(), table.values[..., ADHERENCE], table.values[..., COHERENCE]],
        axis=-1,
    )  # (models, conditions, stories, 3)
    story_vals = np.moveaxis(story_vals, 2, 0)  # (stories, models, conditions, 3)
    per_source = counts.sum(axis=3)  # (stories, models, conditions, [memory, prompt])
    story_checks = np.stack(
        [per_source.sum(axis=-1), per_source[..., 1], per_source[..., 0]], axis=-1
    )  # (stories, models, conditions, 3): the checks behind global, adherence, coherence
    for axis in ("difficulty", "length"):
        label = {
            sid: (i.difficulty if axis == "difficulty" else str(i.n_scenes))
            for sid, i in info.items()
        }
        groups = _group_order(axis, {g for g in label.values() if g is not None})
        if not groups:
            continue
        member = np.array(
            [[label[sid] == g for g in groups] for sid in table.stories], dtype=bool
        )  # (stories, groups)
        gv = np.where(
            member[:, None, None, :, None], story_vals[:, :, :, None, :], np.nan
        )  # (stories, models, conditions, groups, 3)
        gc = np.where(member[:, None, None, :, None], story_checks[:, :, :, None, :], 0)
        out += _points(evaluator, table, gv, gc, weights, confidence, axis, groups, GROUP_METRICS)
    return out


def _points(
    evaluator: str,
    table: StoryTable,
    vals: FloatArray,
    counts: np.ndarray,
    weights: FloatArray,
    confidence: float,
    axis: str,
    groups: Sequence[str],
    metrics: Sequence[str],
) -> list[HorizonPoint]:
    """Rows for ``vals`` ``(stories, models, conditions, groups, metrics)``."""
    point = nan_mean(vals, axis=0)
    low, high = percentile_interval(weighted_means(weights, vals), confidence)
    n_stories = (~np.isnan(vals)).sum(axis=0)
    n_checks = np.where(np.isnan(vals), 0, counts).sum(axis=0)
    out: list[HorizonPoint] = []
    for m, model in enumerate(table.models):
        for c, cond in enumerate(table.conditions):
            if not table.has_row(m, c):
                continue
            for g, group in enumerate(groups):
                for j, metric in enumerate(metrics):
                    score = float(point[m, c, g, j])
                    if math.isnan(score):
                        continue
                    out.append(
                        HorizonPoint(
                            evaluator=evaluator,
                            model=model,
                            condition=cond,
                            axis=axis,
                            group=group,
                            metric=metric,
                            score=score,
                            ci_low=nan_to_none(low[m, c, g, j]),
                            ci_high=nan_to_none(high[m, c, g, j]),
                            n_stories=int(n_stories[m, c, g, j]),
                            n_checks=int(n_checks[m, c, g, j]),
                        )
                    )
    return out
