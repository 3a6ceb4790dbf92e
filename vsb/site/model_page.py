"""The page of one model: its card, every condition's scores, the long-horizon view,
comparisons, rank stability and failures, with the raw data of each table."""

from __future__ import annotations

from collections import Counter
from typing import Any

from vsb.site import board, svg
from vsb.site.cards import model_card
from vsb.site.data import SiteData
from vsb.site.downloads import DataTable
from vsb.site.page_tables import (
    EST_FIELDS,
    comparison_table,
    corrected_view,
    est_cells,
    horizon_table,
    interval,
)


def model_page(data: SiteData, model: str) -> dict[str, Any]:
    """One model: its card, every condition's scores, long-horizon view, comparisons, rank
    stability, failures."""
    rows = {r.condition: r for r in data.scores.scores if r.model == model}
    conds = [c for c in data.conditions if c in rows]
    bars = [i for c in conds if (i := interval(c, rows[c].global_score)) is not None]
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
    primary_stories = [s for s in stories if s.condition == data.scores.primary_condition]
    mine = [p for p in data.scores.horizon if p.model == model]
    scene = [p for p in mine if p.axis == "scene" and p.metric == "coherence"]
    groups = [p for p in mine if p.axis in ("difficulty", "length")]
    card = model_card(data, model)
    dims = list(data.scores.dimensions)
    tables = {
        "conditions": DataTable(
            (
                "condition",
                "rank",
                "rank_low",
                "rank_high",
                *(f"{m}_{x}" for m in ("global", "adherence", "coherence") for x in EST_FIELDS),
                *dims,
            ),
            [
                (
                    c,
                    rows[c].rank,
                    rows[c].rank_low,
                    rows[c].rank_high,
                    *est_cells(rows[c].global_score),
                    *est_cells(rows[c].adherence),
                    *est_cells(rows[c].coherence),
                    *((e.score if (e := rows[c].dimensions.get(d)) else None) for d in dims),
                )
                for c in conds
            ],
            f"{model}: scores per condition",
        ),
        "coverage": DataTable(
            ("condition", "expected_images", "images", "failed", "context_supported"),
            [(v.condition, v.expected, v.made, v.failed, v.supported) for v in card.coverage],
            f"{model}: coverage",
        ),
        "horizon": horizon_table(scene + groups, f"{model}: long-horizon view"),
        "comparisons": comparison_table(comps, f"{model}: paired comparisons"),
        "stability": DataTable(
            ("condition", "rank", "keep_rank", "mean_rank", "rank_p05", "rank_p95"),
            [
                (s.condition, m.rank, m.keep_rank, m.mean_rank, m.rank_p05, m.rank_p95)
                for s, m in stability
            ],
            f"{model}: rank stability",
        ),
        "failures": DataTable(
            ("label", *conds),
            [(t, *(failures[c][t] for c in conds)) for t in labels],
            f"{model}: failures by taxonomy label",
        ),
        "stories": DataTable(
            (
                "story_id",
                "condition",
                "global",
                "adherence",
                "coherence",
                "n_images",
                "n_requirements",
            ),
            [
                (
                    s.story_id,
                    s.condition,
                    s.global_score,
                    s.adherence,
                    s.coherence,
                    s.n_images,
                    s.n_requirements,
                )
                for s in primary_stories
            ],
            f"{model}: per story",
        ),
    }
    return {
        "model": model,
        "card": card,
        "rows": rows,
        "conds": conds,
        "dims": dims,
        "ci_plot": svg.ci_chart(bars, f"Global score by condition (95% CI): {model}"),
        "horizon_plot": board.horizon_chart(
            scene, conds, f"Memory coherence by scene position: {model}", by="condition"
        ),
        "groups": groups,
        "gain": board.memory_gain(data.scores).get(model),
        "comparisons": comps,
        "stability": stability,
        "failures": failures,
        "failure_labels": labels,
        "story_scores": primary_stories,
        "tables": tables,
        "corrected": _corrected(data, model, tables),
    }


def _corrected(data: SiteData, model: str, tables: dict[str, DataTable]) -> dict[str, Any] | None:
    """This model's rows of every judged evaluator, raw and corrected (issue 39)."""
    got = corrected_view(data.all_scores or data.scores, data.root, model)
    if got is None:
        return None
    tables["corrected"] = got[1]
    return got[0]
