"""View models: what each page of the site shows, computed from ``SiteData`` only."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from vsb.scores.models import Comparison, Estimate, ModelScore
from vsb.site import svg
from vsb.site.data import SiteData
from vsb.story.models import DIMENSION_LABELS, Story

SUMMARY_LABELS = {
    "global": "global",
    "adherence": "prompt adherence",
    "coherence": "memory coherence",
}


def metric_label(kind: str, metric: str) -> str:
    """Display name of a metric (the dimension and the summary 'adherence' differ)."""
    if kind == "summary":
        return SUMMARY_LABELS.get(metric, metric)
    return DIMENSION_LABELS.get(metric, metric)


def rows_for(data: SiteData, condition: str) -> list[ModelScore]:
    """Leaderboard rows of one condition, by rank."""
    return sorted(
        (r for r in data.scores.scores if r.condition == condition), key=lambda r: (r.rank, r.model)
    )


def _interval(label: str, est: Estimate | None) -> svg.Interval | None:
    return None if est is None else svg.Interval(label, est.score, est.ci_low, est.ci_high)


def leaderboard(data: SiteData) -> dict[str, Any]:
    """The index page: primary-condition table, plots, per-condition global scores."""
    primary = data.scores.primary_condition
    rows = rows_for(data, primary) or rows_for(data, data.conditions[0])
    cond = rows[0].condition if rows else primary
    bars = [i for r in rows if (i := _interval(r.model, r.global_score)) is not None]
    points = [
        svg.Point(r.model, r.adherence.score, r.coherence.score)
        for r in rows
        if r.adherence is not None and r.coherence is not None
    ]
    dims = list(data.scores.dimensions)
    heat = [
        [(e.score if (e := r.dimensions.get(d)) is not None else None) for d in dims] for r in rows
    ]
    by_condition: dict[str, dict[str, Estimate | None]] = defaultdict(dict)
    for r in data.scores.scores:
        by_condition[r.model][r.condition] = r.global_score
    return {
        "condition": cond,
        "rows": rows,
        "dims": dims,
        "ci_plot": svg.ci_chart(bars, f"Global score, {cond} (95% CI)", "global score"),
        "scatter": svg.scatter(
            points, f"Adherence vs coherence, {cond}", "prompt adherence", "memory coherence"
        ),
        "heatmap": svg.heatmap(
            [r.model for r in rows],
            [DIMENSION_LABELS[d] for d in dims],
            heat,
            f"Dimension × model, {cond}",
        ),
        "by_condition": by_condition,
        "order": [r.model for r in rows],
    }


def _comparisons(
    data: SiteData, kind: str
) -> dict[str, dict[tuple[str, str, str, str], list[Comparison]]]:
    """Comparisons of ``kind`` grouped by condition (model kind) or model (condition kind),
    then by pair; within a pair, summaries first."""
    out: dict[str, dict[tuple[str, str, str, str], list[Comparison]]] = defaultdict(dict)
    for c in data.scores.comparisons:
        if c.kind != kind:
            continue
        group = c.a_condition if kind == "model" else c.a_model
        pair = (c.a_model, c.a_condition, c.b_model, c.b_condition)
        out[group].setdefault(pair, []).append(c)
    for pairs in out.values():
        for lst in pairs.values():
            lst.sort(key=lambda c: (c.metric_kind != "summary", _metric_order(data, c)))
    return out


def _metric_order(data: SiteData, c: Comparison) -> int:
    if c.metric_kind == "summary":
        return ("global", "adherence", "coherence").index(c.metric) if c.metric in (
            "global", "adherence", "coherence"
        ) else 9  # fmt: skip
    dims = list(data.scores.dimensions)
    return dims.index(c.metric) if c.metric in dims else 99


def comparisons(data: SiteData) -> dict[str, Any]:
    """Paired comparisons: models within each condition, conditions within each model."""
    by_model = _comparisons(data, "model")
    by_cond = _comparisons(data, "condition")
    return {
        "model_groups": [(c, by_model[c]) for c in data.conditions if c in by_model],
        "condition_groups": [(m, by_cond[m]) for m in data.models if m in by_cond],
    }


def model_page(data: SiteData, model: str) -> dict[str, Any]:
    """One model: every condition's scores, its comparisons, rank stability, failures."""
    rows = {r.condition: r for r in data.scores.scores if r.model == model}
    conds = [c for c in data.conditions if c in rows]
    bars = [i for c in conds if (i := _interval(c, rows[c].global_score)) is not None]
    comps = [
        c
        for c in data.scores.comparisons
        if c.metric_kind == "summary" and model in (c.a_model, c.b_model)
    ]
    comps.sort(key=lambda c: (c.kind, c.a_condition, c.b_condition, c.a_model, c.b_model))
    stability = [(s, m) for s in data.scores.rank_stability for m in s.models if m.model == model]
    failures = {c: data.failures.get((model, c), Counter()) for c in conds}
    labels = sorted({t for f in failures.values() for t in f})
    stories = [s for s in data.scores.stories if s.model == model]
    stories.sort(key=lambda s: (data.conditions.index(s.condition), s.story_id))
    return {
        "model": model,
        "rows": rows,
        "conds": conds,
        "dims": list(data.scores.dimensions),
        "ci_plot": svg.ci_chart(bars, f"Global score by condition (95% CI): {model}"),
        "comparisons": comps,
        "stability": stability,
        "failures": failures,
        "failure_labels": labels,
        "story_scores": [s for s in stories if s.condition == data.scores.primary_condition],
    }


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
        scenes.append((scene, reqs))
    scores = {
        s.model: s
        for s in data.scores.stories
        if s.story_id == story.id and s.condition == condition
    }
    return {"story": story, "condition": condition, "strips": strips, "scenes": scenes,
            "story_scores": scores}  # fmt: skip


def _show(value: object, attribute: str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return (" → " if attribute == "order" else ", ").join(str(v) for v in value)
    return str(value)


def story_index(data: SiteData) -> dict[str, Any]:
    """The story browser's index: every story with its global score per model (primary)."""
    primary = data.scores.primary_condition
    score = {
        (s.story_id, s.model): s.global_score for s in data.scores.stories if s.condition == primary
    }
    return {"score": score, "primary": primary}


def heat_class(v: float | None) -> str:
    """A CSS class bucket for shading a score cell."""
    if v is None:
        return "na"
    return f"h{min(9, max(0, int(v * 10)))}"
