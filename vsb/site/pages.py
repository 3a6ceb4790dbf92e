"""View models: what each page of the site shows, computed from ``SiteData`` only.

Every view returns, beside what its template renders, ``tables``: the raw data of each table
of the page (``vsb.site.downloads.DataTable``), which the writer saves as CSV and JSON and the
template links under the table.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from vsb.scores.models import Comparison, Estimate, ModelScore
from vsb.site import board, svg
from vsb.site.analysis import implicit_cells, load_implicit
from vsb.site.data import SiteData
from vsb.site.downloads import DataTable
from vsb.site.model_page import model_page
from vsb.site.page_tables import (
    EST_FIELDS,
    comparison_table,
    corrected_view,
    est_cells,
    horizon_table,
    interval,
    judge_tables,
    stability_tables,
)
from vsb.site.story_pages import story_index, story_page
from vsb.story.models import DIMENSION_LABELS

__all__ = [
    "comparisons",
    "heat_class",
    "judge_tables",
    "leaderboard",
    "metric_label",
    "model_page",
    "stability_tables",
    "story_index",
    "story_page",
]

SUMMARY_LABELS = {
    "global": "global",
    "adherence": "prompt adherence",
    "coherence": "memory coherence",
    "conditional_coherence": "conditional coherence",
}
#: Column headers of the dimensions where space is short (the full label is the tooltip).
DIM_SHORT = {
    "identity": "identity",
    "object_persistence": "object persist.",
    "object_state": "object state",
    "environment": "environ\u00adment",
    "chronology": "chrono\u00adlogy",
    "adherence": "adher\u00adence",
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


def _charts(data: SiteData, cond: str) -> dict[str, Any]:
    """The plots of one condition's leaderboard."""
    rows = rows_for(data, cond)
    bars = [i for r in rows if (i := interval(r.model, r.global_score)) is not None]
    points = [
        svg.Point(r.model, r.adherence.score, r.coherence.score)
        for r in rows
        if r.adherence is not None and r.coherence is not None
    ]
    dims = list(data.scores.dimensions)
    heat = [
        [(e.score if (e := r.dimensions.get(d)) is not None else None) for d in dims] for r in rows
    ]
    models = [r.model for r in rows]
    pts = board.horizon_points(data.scores, cond, "scene", "coherence")
    return {
        "ci_plot": svg.ci_chart(bars, f"Global score, {cond} (95% CI)", "global score"),
        "scatter": svg.scatter(
            points, f"Adherence vs coherence, {cond}", "prompt adherence", "memory coherence"
        ),
        "heatmap": svg.heatmap(  # dimensions down, models across: narrow enough for a phone
            [DIMENSION_LABELS[d] for d in dims],
            models,
            [list(col) for col in zip(*heat, strict=True)] if heat else [[] for _ in dims],
            f"Dimension × model, {cond}",
        ),
        "horizon": board.horizon_chart(
            pts, models, f"Memory coherence by scene position, {cond} (95% CI)"
        ),
    }


def leaderboard(data: SiteData) -> dict[str, Any]:
    """The index page: every condition's rows (the primary shown first), honest ranks, memory
    gain, plots, the long-horizon view and the win-rate matrix."""
    conds = [c for c in data.conditions if rows_for(data, c)]
    primary = data.scores.primary_condition
    cond = primary if primary in conds else (conds[0] if conds else primary)
    dims = list(data.scores.dimensions)
    entries = []
    for c in conds:
        tie = board.ties(data.scores, c)
        entries += [(r, tie.get(r.model)) for r in rows_for(data, c)]
    gains = board.memory_gain(data.scores)
    placebo = board.memory_gain(data.scores, "random_context")
    implicit = implicit_cells(load_implicit(data))
    by_condition: dict[str, dict[str, Estimate | None]] = defaultdict(dict)
    for r in data.scores.scores:
        by_condition[r.model][r.condition] = r.global_score
    order = [r.model for r in rows_for(data, cond)]
    order += [m for m in data.models if m not in order and m in by_condition]
    win_models, win = board.win_matrix(data.scores, cond)
    groups = [
        p
        for p in data.scores.horizon
        if p.axis in ("difficulty", "length") and p.metric in ("coherence", "global")
    ]
    scene = board.horizon_points(data.scores, None, "scene", "coherence")
    cuts = {p.model: p for p in data.scores.prompts}  # prompts cut by the text encoder
    lead_cols = ("condition", "rank", "rank_low", "rank_high", "tied_with_next", "model")
    est_cols = tuple(f"{m}_{x}" for m in ("global", "adherence", "coherence") for x in EST_FIELDS)
    gain_cols = ("memory_gain", "memory_gain_ci_low", "memory_gain_ci_high")
    tables = {
        "leaderboard": DataTable(
            (
                *lead_cols,
                *est_cols,
                "conditional_coherence",
                *gain_cols,
                *dims,
                "n_stories",
                "n_images",
                "n_requirements",
                "prompts_cut",
            ),
            [
                (
                    r.condition,
                    r.rank,
                    r.rank_low,
                    r.rank_high,
                    t.other if t else None,
                    r.model,
                    *est_cells(r.global_score),
                    *est_cells(r.adherence),
                    *est_cells(r.coherence),
                    r.conditional_coherence.score if r.conditional_coherence else None,
                    *((g.diff, g.low, g.high) if (g := gains.get(r.model)) else (None,) * 3),
                    *((e.score if (e := r.dimensions.get(d)) else None) for d in dims),
                    r.n_stories,
                    r.n_images,
                    r.n_requirements,
                    cuts[r.model].share(r.condition) if r.model in cuts else None,
                )
                for r, t in entries
            ],
            "Leaderboard: every condition",
        ),
        "by_condition": DataTable(
            ("model", *data.conditions),
            [
                (
                    m,
                    *(
                        (e.score if (e := by_condition[m].get(c)) else None)
                        for c in data.conditions
                    ),
                )
                for m in order
            ],
            "Global score per condition",
        ),
        "win_rate": DataTable(
            ("model", *win_models),
            [(m, *row) for m, row in zip(win_models, win, strict=True)],
            f"Win rate of the row model over the column model (global score), {cond}",
        ),
        "horizon_scene": horizon_table(scene, "Memory coherence by scene position"),
        "horizon_groups": horizon_table(groups, "By difficulty and by story length"),
    }
    positions = sorted({int(p.group) for p in scene})
    at = {(p.condition, p.model, int(p.group)): p for p in scene}
    scene_grid = [
        (r.condition, r.model, [at.get((r.condition, r.model, k)) for k in positions])
        for r, _ in entries
    ]
    group_axes = [
        (
            axis,
            sorted(
                {p.group for p in groups if p.axis == axis},
                key=lambda g: (
                    g not in ("easy", "medium", "hard"),
                    ("easy", "medium", "hard").index(g)
                    if g in ("easy", "medium", "hard")
                    else int(g),
                ),
            ),
        )
        for axis in ("difficulty", "length")
    ]
    gat: dict[tuple[str, str, str, str], Any] = {
        (p.condition, p.model, p.axis, p.group): p for p in groups if p.metric == "coherence"
    }
    group_grid = [
        (
            r.condition,
            r.model,
            [gat.get((r.condition, r.model, axis, g)) for axis, gs in group_axes for g in gs],
        )
        for r, _ in entries
    ]
    return {
        "scores": data.scores,  # this board's evaluator's (the site's common one is the primary's)
        "condition": cond,
        "conds": conds,
        "positions": positions,
        "scene_grid": scene_grid,
        "group_axes": [(a, gs) for a, gs in group_axes if gs],
        "group_grid": group_grid,
        "rows": rows_for(data, cond),
        "entries": entries,
        "gains": gains,
        "placebo": placebo,
        "implicit": implicit,
        "dims": dims,
        "charts": {c: _charts(data, c) for c in conds},
        "by_condition": by_condition,
        "order": order,
        "win_models": win_models,
        "win": win,
        "win_plot": svg.heatmap(
            win_models, win_models, win, f"Win rate, row over column (global), {cond}"
        )
        if len(win_models) > 1
        else None,
        "groups": groups,
        "tables": tables,
        **_corrected(data.scores, data.root, tables),
    }


def _corrected(scores: Any, root: Any, tables: dict[str, DataTable]) -> dict[str, Any]:
    """Raw and corrected side by side (a judged evaluator's page; issue 39)."""
    got = corrected_view(scores, root)
    if got is None:
        return {"corrected": None}
    tables["corrected"] = got[1]
    return {"corrected": got[0]}


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
        names = ("global", "adherence", "coherence", "conditional_coherence")
        return names.index(c.metric) if c.metric in names else 9
    dims = list(data.scores.dimensions)
    return dims.index(c.metric) if c.metric in dims else 99


def comparisons(data: SiteData) -> dict[str, Any]:
    """Paired comparisons: models within each condition, conditions within each model; the
    minimum detectable difference of every global comparison; the win-rate matrix."""
    by_model = _comparisons(data, "model")
    by_cond = _comparisons(data, "condition")
    primary = data.scores.primary_condition
    power = sorted(
        (c for c in data.scores.comparisons if c.metric == "global" and c.kind == "model"),
        key=lambda c: (data.conditions.index(c.a_condition), c.a_model, c.b_model),
    )
    win_models, win = board.win_matrix(data.scores, primary)
    return {
        "model_groups": [(c, by_model[c]) for c in data.conditions if c in by_model],
        "condition_groups": [(m, by_cond[m]) for m in data.models if m in by_cond],
        "power": power,
        "win_models": win_models,
        "win": win,
        "tables": {
            "comparisons": comparison_table(list(data.scores.comparisons), "Paired comparisons"),
            "power": comparison_table(power, "Minimum detectable difference, global score"),
            "win_rate": DataTable(
                ("model", *win_models),
                [(m, *row) for m, row in zip(win_models, win, strict=True)],
                f"Win rate of the row model over the column model (global score), {primary}",
            ),
        },
    }


def heat_class(v: float | None) -> str:
    """A CSS class bucket for shading a score cell."""
    if v is None:
        return "na"
    return f"h{min(9, max(0, int(v * 10)))}"
