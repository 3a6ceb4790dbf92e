"""The story browser and the story pages: scene texts, image strips and the pass/fail mark
of every requirement, with the data the browser's filters use."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from vsb.site.data import SiteData
from vsb.site.downloads import DataTable
from vsb.story.models import Story


@dataclass(frozen=True)
class Mark:
    """One requirement's result for one model (None: not evaluated)."""

    passed: bool | None
    observed: str
    failure: str


@dataclass(frozen=True)
class ReqRow:
    """A requirement and its marks, one per model."""

    id: str
    dimension: str
    source: str
    expected: str
    marks: list[Mark]


@dataclass(frozen=True)
class Cell:
    """One image of a strip: its site path (None: no image), pass count, error."""

    src: str | None
    passed: int
    total: int
    error: str | None


def story_page(
    data: SiteData, story: Story, condition: str, image_paths: dict[str, str]
) -> dict[str, Any]:
    """A story under one condition: scene texts, image strips per model, per-requirement
    pass/fail marks. ``image_paths`` maps release paths to site paths."""
    models = data.models
    strips: dict[str, list[Cell]] = {}
    scenes: list[tuple[Any, list[ReqRow]]] = []
    for m in models:
        cells = []
        for scene in story.scenes:
            key = (m, condition, story.id, scene.index)
            rel = data.images.get(key)
            checks = data.checks.get((story.id, condition, scene.index), {})
            res = [c[m] for c in checks.values() if m in c]
            cells.append(
                Cell(
                    image_paths.get(rel) if rel else None,
                    sum(c.passed for c in res),
                    len(res),
                    data.errors.get(key),
                )
            )
        strips[m] = cells
    flat = []
    for scene in story.scenes:
        checks = data.checks.get((story.id, condition, scene.index), {})
        reqs = []
        for r in scene.requirements:
            per = checks.get(r.id, {})
            marks = [
                Mark(per[m].passed, per[m].observed, per[m].failure)
                if m in per
                else Mark(None, "", "")
                for m in models
            ]
            reqs.append(ReqRow(r.id, r.dimension, r.source, _show(r.expected, r.attribute), marks))
            flat.append((scene.index, r, marks))
        scenes.append((scene, reqs))
    scores = {
        s.model: s
        for s in data.scores.stories
        if s.story_id == story.id and s.condition == condition
    }
    table = DataTable(
        ("scene", "req_id", "dimension", "source", "expected", *models),
        [
            (
                k,
                r.id,
                r.dimension,
                r.source,
                _show(r.expected, r.attribute),
                *(None if mk.passed is None else mk.passed for mk in marks),
            )
            for k, r, marks in flat
        ],
        f"{story.id} under {condition}: pass/fail per requirement and model",
    )
    return {
        "story": story,
        "condition": condition,
        "strips": strips,
        "scenes": scenes,
        "story_scores": scores,
        "tables": {"requirements": table},
    }


def _show(value: object, attribute: str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return (" → " if attribute == "order" else ", ").join(str(v) for v in value)
    return str(value)


def story_index(data: SiteData) -> dict[str, Any]:
    """The story browser: every story with its global score per model (primary condition)
    and, for the filters, the dimensions in which some model failed a check there."""
    primary = data.scores.primary_condition
    score = {
        (s.story_id, s.model): s.global_score for s in data.scores.stories if s.condition == primary
    }
    failing: dict[str, set[str]] = defaultdict(set)
    for story in data.stories:
        dims = {r.id: r.dimension for sc in story.scenes for r in sc.requirements}
        for sc in story.scenes:
            for req_id, per in data.checks.get((story.id, primary, sc.index), {}).items():
                if any(not c.passed for c in per.values()) and req_id in dims:
                    failing[story.id].add(dims[req_id])
    order = list(data.scores.dimensions)
    fails = {s: [d for d in order if d in failing[s]] for s in (x.id for x in data.stories)}
    n_reqs = {s.id: sum(len(sc.requirements) for sc in s.scenes) for s in data.stories}
    table = DataTable(
        (
            "story_id",
            "category",
            "difficulty",
            "scenes",
            "requirements",
            "failing_dimensions",
            *data.models,
        ),
        [
            (
                s.id,
                s.category,
                s.difficulty,
                len(s.scenes),
                n_reqs[s.id],
                fails[s.id],
                *(score.get((s.id, m)) for m in data.models),
            )
            for s in data.stories
        ],
        f"Stories (global score per model, {primary})",
    )
    return {
        "score": score,
        "primary": primary,
        "fails": fails,
        "n_reqs": n_reqs,
        "categories": sorted({s.category for s in data.stories}),
        "difficulties": [
            d for d in ("easy", "medium", "hard") if any(s.difficulty == d for s in data.stories)
        ],
        "scene_counts": sorted({len(s.scenes) for s in data.stories}),
        "tables": {"stories": table},
    }
