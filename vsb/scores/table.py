"""The story × metric table: per-run pass rates, the input of every model-level statistic.

A *run* is one (story, model, condition). Its metrics are the pass rate of each of the ten
dimensions, ``adherence`` (prompt-source requirements) and ``coherence`` (memory-source
requirements); NaN where the run has no requirement of that kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from vsb.scores.bootstrap import FloatArray, nan_mean
from vsb.scores.inputs import RequirementRows
from vsb.story.models import DIMENSIONS

#: Story-level metric columns: the ten dimensions, then adherence and coherence.
BASE_METRICS: tuple[str, ...] = (*DIMENSIONS, "adherence", "coherence")
N_DIMS = len(DIMENSIONS)
ADHERENCE = N_DIMS
COHERENCE = N_DIMS + 1
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
    """``(models, conditions, stories, 12)`` pass rates, NaN where undefined."""
    n_images: np.ndarray
    """``(models, conditions, stories)`` evaluated images."""
    n_requirements: np.ndarray
    """``(models, conditions, stories)`` evaluated checks."""

    def has_row(self, m: int, c: int) -> bool:
        """Whether (model m, condition c) has at least one evaluated image."""
        return bool(self.n_images[m, c].sum() > 0)

    def story_global(self) -> FloatArray:
        """``(models, conditions, stories)``: mean of the dimensions each run has."""
        return nan_mean(self.values[..., :N_DIMS], axis=-1)


def _ordered(seen: Iterable[str], preferred: Sequence[str]) -> tuple[str, ...]:
    present = set(seen)
    head = [x for x in dict.fromkeys(preferred) if x in present]
    return (*head, *sorted(present - set(head)))


def build_story_table(
    rows: RequirementRows,
    model_order: Sequence[str] = (),
    condition_order: Sequence[str] = (),
) -> StoryTable:
    """Aggregate requirement rows into per-run pass rates (bincount over integer codes)."""
    models = _ordered(rows.model, model_order)
    conditions = _ordered(rows.condition, (*condition_order, *CONDITION_ORDER))
    stories = tuple(sorted(set(rows.story_id)))
    mi = {x: i for i, x in enumerate(models)}
    ci = {x: i for i, x in enumerate(conditions)}
    si = {x: i for i, x in enumerate(stories)}
    di = {x: i for i, x in enumerate(DIMENSIONS)}
    n_m, n_c, n_s, n_k = len(models), len(conditions), len(stories), len(BASE_METRICS)
    run = np.fromiter(
        (
            (mi[m] * n_c + ci[c]) * n_s + si[s]
            for m, c, s in zip(rows.model, rows.condition, rows.story_id, strict=True)
        ),
        dtype=np.int64,
        count=len(rows),
    )
    dim = np.fromiter((di[d] for d in rows.dimension), dtype=np.int64, count=len(rows))
    src = np.fromiter(
        (ADHERENCE if s == "prompt" else COHERENCE for s in rows.source),
        dtype=np.int64,
        count=len(rows),
    )
    passed = np.fromiter(rows.passed, dtype=np.float64, count=len(rows))
    size = n_m * n_c * n_s * n_k
    keys = np.concatenate([run * n_k + dim, run * n_k + src])
    w = np.concatenate([passed, passed])
    total = np.bincount(keys, minlength=size).astype(np.float64)
    npass = np.bincount(keys, weights=w, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(total > 0, npass / total, np.nan)
    values = values.reshape(n_m, n_c, n_s, n_k)
    n_req = np.bincount(run, minlength=n_m * n_c * n_s).reshape(n_m, n_c, n_s)
    images = {(r, sc) for r, sc in zip(run.tolist(), rows.scene, strict=True)}
    img_runs = np.fromiter((r for r, _ in images), dtype=np.int64, count=len(images))
    n_img = np.bincount(img_runs, minlength=n_m * n_c * n_s).reshape(n_m, n_c, n_s)
    return StoryTable(models, conditions, stories, values, n_img, n_req)
