"""The story × metric table: per-run pass rates, the input of every model-level statistic.

A *run* is one (story, model, condition) as judged by one evaluator. Its metrics are the
pass rate of each of the ten dimensions, ``adherence`` (prompt-source requirements),
``coherence`` (memory-source requirements) and ``conditional_coherence`` (memory-source
requirements that are not knock-ons of a missing subject, ``vsb.scores.knockon``); NaN where
the run has no requirement of that kind. ``not_applicable`` rows are left out; ``unsure``
and ``parse_failure`` rows count as not passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from vsb.scores.inputs import NOT_APPLICABLE, RequirementRows, codes, equals
from vsb.scores.knockon import knock_on_mask
from vsb.scores.stats.bootstrap import FloatArray, nan_mean
from vsb.story.models import DIMENSIONS

#: Story-level metric columns: the ten dimensions, adherence, coherence (strict) and
#: conditional coherence.
BASE_METRICS: tuple[str, ...] = (*DIMENSIONS, "adherence", "coherence", "conditional_coherence")
N_DIMS = len(DIMENSIONS)
ADHERENCE = N_DIMS
COHERENCE = N_DIMS + 1
CONDITIONAL_COHERENCE = N_DIMS + 2
#: Canonical condition order (used for conditions the run manifest does not list).
CONDITION_ORDER: tuple[str, ...] = (
    "independent",
    "previous_text",
    "structured_memory",
    "previous_image",
    "summarized_state",
    "full_context",
)


@dataclass(frozen=True)
class StoryTable:
    """Per-run metrics of a whole run directory."""

    models: tuple[str, ...]
    conditions: tuple[str, ...]
    stories: tuple[str, ...]
    values: FloatArray
    """``(models, conditions, stories, len(BASE_METRICS))`` pass rates, NaN where undefined."""
    n_images: np.ndarray
    """``(models, conditions, stories)`` images with at least one applicable check."""
    n_requirements: np.ndarray
    """``(models, conditions, stories)`` applicable checks."""

    def has_row(self, m: int, c: int) -> bool:
        """Whether (model m, condition c) has at least one evaluated image."""
        return bool(self.n_images[m, c].sum() > 0)

    def story_global(self) -> FloatArray:
        """``(models, conditions, stories)``: mean of the dimensions each run has."""
        return nan_mean(self.values[..., :N_DIMS], axis=-1)


def ordered_names(seen: Iterable[str], preferred: Sequence[str]) -> tuple[str, ...]:
    """The distinct names of ``seen``: those in ``preferred`` first (in its order), then
    the rest sorted."""
    present = set(seen)
    head = [x for x in dict.fromkeys(preferred) if x in present]
    return (*head, *sorted(present - set(head)))


def build_story_table(
    rows: RequirementRows,
    model_order: Sequence[str] = (),
    condition_order: Sequence[str] = (),
) -> StoryTable:
    """Aggregate one evaluator's requirement rows into per-run pass rates (bincount over
    integer codes); ``not_applicable`` rows are left out. Rows of several evaluators are a
    programming error (they must never be pooled)."""
    if len(set(rows.evaluator)) > 1:
        raise ValueError(f"rows of several evaluators: {', '.join(rows.evaluators())}")
    if NOT_APPLICABLE in rows.verdict:
        rows = rows.view([v != NOT_APPLICABLE for v in rows.verdict])
    models = ordered_names(rows.model, model_order)
    conditions = ordered_names(rows.condition, (*condition_order, *CONDITION_ORDER))
    stories = tuple(sorted(set(rows.story_id)))
    mi = {x: i for i, x in enumerate(models)}
    ci = {x: i for i, x in enumerate(conditions)}
    si = {x: i for i, x in enumerate(stories)}
    di = {x: i for i, x in enumerate(DIMENSIONS)}
    n_m, n_c, n_s, n_k = len(models), len(conditions), len(stories), len(BASE_METRICS)
    run = (codes(rows.model, mi) * n_c + codes(rows.condition, ci)) * n_s + codes(rows.story_id, si)
    dim = codes(rows.dimension, di)
    src = np.where(equals(rows.source, "prompt"), ADHERENCE, COHERENCE)
    passed = np.fromiter(rows.passed, dtype=np.float64, count=len(rows))
    knock_on = np.fromiter(knock_on_mask(rows), dtype=bool, count=len(rows))
    found = equals(rows.source, "memory") & ~knock_on
    size = n_m * n_c * n_s * n_k
    keys = np.concatenate(
        [run * n_k + dim, run * n_k + src, run[found] * n_k + CONDITIONAL_COHERENCE]
    )
    w = np.concatenate([passed, passed, passed[found]])
    total = np.bincount(keys, minlength=size).astype(np.float64)
    npass = np.bincount(keys, weights=w, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(total > 0, npass / total, np.nan)
    values = values.reshape(n_m, n_c, n_s, n_k)
    n_req = np.bincount(run, minlength=n_m * n_c * n_s).reshape(n_m, n_c, n_s)
    scenes = np.fromiter(rows.scene, dtype=np.int64, count=len(rows))
    img_runs = np.unique(np.stack([run, scenes]), axis=1)[0]  # one per (run, scene) image
    n_img = np.bincount(img_runs, minlength=n_m * n_c * n_s).reshape(n_m, n_c, n_s)
    return StoryTable(models, conditions, stories, values, n_img, n_req)
