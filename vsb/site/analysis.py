"""The analysis page: is the memory gain really memory, how much of it survives imperfect
extraction, which facts buy it, and how much does the wording move a model — each figure a
paired difference with its CI.

Everything is read from the release: the effects from ``scores/scores.json``'s paired
comparisons (``vsb.scores.analysis.effects_from_comparisons``: the same numbers as the
comparisons page and ``vsb analysis``), the prompt sensitivity from
``sensitivity/prompt_sensitivity.json`` and the implicit effects from
``sensitivity/implicit_effects.json`` when the release holds those suite variants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from vsb.conditions import ABLATIONS, PLACEBO_CONDITION, PREDICTED_CONDITION, PRIMARY_CONDITION
from vsb.fsio import load_model
from vsb.scores.analysis import Effect, effects_from_comparisons
from vsb.scores.implicit import IMPLICIT_FILE, ImplicitReport, ImplicitRow
from vsb.scores.peer.vinabench import COLUMNS as VINABENCH_COLUMNS
from vsb.scores.sensitivity import SENSITIVITY_FILE, SensitivityReport, SensitivityRow
from vsb.site.data import SiteData
from vsb.site.svg import CHAR_W
from vsb.story.context.predicted import DEFAULT_ERROR_RATE, suite_reading_errors
from vsb.story.models import DIMENSION_LABELS, DIMENSIONS

#: Columns of the ablation table (rows of its plot): the ten dimensions, then two summaries.
ABLATION_METRICS: tuple[tuple[str, str], ...] = (
    *(("dimension", d) for d in DIMENSIONS),
    ("summary", "coherence"),
    ("summary", "global"),
)
#: Summary metrics of the gain and sensitivity tables.
GAIN_METRICS = ("coherence", "global")
SENSITIVITY_METRICS = ("global", "adherence", "coherence")


@dataclass(frozen=True)
class Cell:
    """One shown difference: Δ, its CI and whether the CI excludes 0."""

    diff: float
    low: float | None
    high: float | None
    n: int

    @property
    def excludes_zero(self) -> bool:
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)

    @property
    def css(self) -> str:
        if not self.excludes_zero:
            return ""
        return "pos" if self.diff > 0 else "neg"


def _cell(x: Effect | SensitivityRow | ImplicitRow | None) -> Cell | None:
    if isinstance(x, ImplicitRow):
        return Cell(x.diff, x.ci_low, x.ci_high, x.n_stories)
    return None if x is None else Cell(x.diff, x.ci_low, x.ci_high, x.n_stories)


def _label(kind: str, metric: str) -> str:
    if kind == "dimension":
        return DIMENSION_LABELS.get(metric, metric)
    return {"coherence": "memory coherence", "adherence": "prompt adherence"}.get(metric, metric)


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:+.3f}"


def _fill(diff: float, scale: float) -> str:
    """Green for a gain, red for a loss, stronger with |Δ| (white at 0)."""
    t = min(1.0, abs(diff) / scale) if scale > 0 else 0.0
    base = (0, 158, 115) if diff > 0 else (213, 94, 0)
    r, g, b = (round(255 + (c - 255) * t * 0.85) for c in base)
    return f"#{r:02x}{g:02x}{b:02x}"


def ablation_plot(model: str, grid: dict[str, dict[tuple[str, str], Cell]]) -> Markup:
    """A heat map: one row per metric, one column per removed group (narrow enough for a
    phone); the cell holds Δ (structured_memory − ablation), a frame where the paired CI
    excludes 0, and the CI in its tooltip."""
    groups, char_w, cw, ch = list(grid), CHAR_W * 11 / 12, 50.0, 24.0  # 11 px text
    left = max(len(_label(*m)) for m in ABLATION_METRICS) * char_w + 12
    rise = max((len(f"no {g}") * char_w * 0.71 for g in groups), default=0.0)  # at −45°
    top, tail = rise + 12, max(8.0, rise - cw / 2 + 8)
    width, height = left + cw * len(groups) + tail, top + ch * len(ABLATION_METRICS) + 8
    values = [abs(c.diff) for row in grid.values() for c in row.values()]
    scale = max([*values, 0.05])
    title = f"{model}: what remembering each group of facts buys (structured_memory − ablation)"
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
        f'aria-label="{escape(title)}" style="font-family:system-ui,sans-serif;font-size:11px">'
        f"<title>{escape(title)}</title>"
    ]
    for j, group in enumerate(groups):
        x = left + cw * j + cw / 2
        body.append(
            f'<text transform="translate({x:.1f},{top - 6:.1f}) rotate(-45)">'
            f"no {escape(group)}</text>"
        )
    for i, (kind, metric) in enumerate(ABLATION_METRICS):
        y = top + ch * i
        weight = "700" if kind == "summary" else "400"
        body.append(
            f'<text x="{left - 6:.0f}" y="{y + ch / 2 + 4:.1f}" text-anchor="end" '
            f'font-weight="{weight}">{escape(_label(kind, metric))}</text>'
        )
        for j, group in enumerate(groups):
            x = left + cw * j
            c = grid[group].get((kind, metric))
            if c is None:
                body.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{cw:.0f}" height="{ch:.0f}" '
                    f'fill="#f3f3f3" stroke="#fff"/>'
                )
                continue
            stroke = ' stroke="#222" stroke-width="2"' if c.excludes_zero else ' stroke="#fff"'
            tip = (
                f"no {group}, {_label(kind, metric)}: Δ {_fmt(c.diff)}, 95% CI "
                f"[{_fmt(c.low)}, {_fmt(c.high)}], {c.n} stories"
            )
            body.append(
                f'<g><title>{escape(tip)}</title><rect x="{x + 1:.1f}" y="{y + 1:.1f}" '
                f'width="{cw - 2:.0f}" height="{ch - 2:.0f}" fill="{_fill(c.diff, scale)}"'
                f'{stroke}/><text x="{x + cw / 2:.1f}" y="{y + ch / 2 + 4:.1f}" '
                f'text-anchor="middle">{escape(f"{c.diff:+.2f}")}</text></g>'
            )
    body.append("</svg>")
    return Markup("".join(body))


def load_sensitivity(data: SiteData) -> SensitivityReport | None:
    """The release's prompt-sensitivity report, if it has one."""
    path = data.root / SENSITIVITY_FILE
    if not path.is_file():
        return None
    return load_model(path, SensitivityReport, "does not match SensitivityReport")


#: The effects of the two gain tables: placebo, and imperfect extraction.
PLACEBO_EFFECTS = ("memory_gain", "placebo_gain", "memory_vs_placebo")
PREDICTED_EFFECTS = ("memory_gain", "predicted_gain", "memory_vs_predicted")


def _gain_rows(
    data: SiteData, by: dict[tuple[str, str, str, str], Effect], kinds: tuple[str, ...]
) -> list[tuple[str, dict[tuple[str, str], Cell | None]]]:
    """Per model, the summary cells of ``kinds`` (models with none of ``kinds[1:]`` left
    out, but for the first table, which shows the memory gain alone too)."""
    rows = []
    for model in data.models:
        row = {
            (kind, metric): _cell(by.get((model, kind, "summary", metric)))
            for kind in kinds
            for metric in GAIN_METRICS
        }
        needed = kinds if kinds == PLACEBO_EFFECTS else kinds[1:]
        if any(row[(k, m)] for k in needed for m in GAIN_METRICS):
            rows.append((model, row))
    return rows


def extraction_error_rate(data: SiteData) -> float | None:
    """The share of facts the release's predicted memory read wrong over its stories (the
    built-in simulated extractor; None when the release has no predicted_memory run)."""
    if PREDICTED_CONDITION not in data.scores.conditions:
        return None
    wrong, total = suite_reading_errors(data.stories, DEFAULT_ERROR_RATE)
    return wrong / total if total else None


def load_implicit(data: SiteData) -> ImplicitReport | None:
    """The release's implicit-effects report, if it has one."""
    path = data.root / IMPLICIT_FILE
    if not path.is_file():
        return None
    return load_model(path, ImplicitReport, "does not match ImplicitReport")


def implicit_cells(report: ImplicitReport | None) -> dict[tuple[str, str], Cell]:
    """(model, condition) → implicit − explicit pass rate on the inferred checks, with CI."""
    if report is None:
        return {}
    return {(r.model, r.condition): Cell(r.diff, r.ci_low, r.ci_high, r.n_stories)
            for r in report.rows}  # fmt: skip


#: The readers (models that see only the prompt) and the text budget each reads (None: all).
READERS: dict[str, int | None] = {"procedural-reader": None, "procedural-reader-77": 77}


def ceiling_rows(data: SiteData) -> list[tuple[str, list[Any]]]:
    """Per condition the readers ran under: each reader's (adherence, memory coherence)
    estimates, in ``READERS`` order (None where it has no score there)."""
    by = {(s.model, s.condition): s for s in data.scores.scores}
    rows = []
    for cond in data.scores.conditions:
        cells: list[Any] = []
        for reader in READERS:
            s = by.get((reader, cond))
            cells += [s.adherence if s else None, s.coherence if s else None]
        if any(c is not None for c in cells):
            rows.append((cond, cells))
    return rows


def vinabench_table(data: SiteData) -> list[dict[str, Any]]:
    """The rows of the release's ``scores/vinabench.csv`` (VinaBench's table; none: empty)."""
    import csv

    path = data.root / "scores" / "vinabench.csv"
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return [
            {k: (float(v) if v and k not in ("model", "portion", "condition") else v)
             for k, v in row.items()}
            for row in csv.DictReader(fh)
        ]  # fmt: skip


def _vinabench_note(data: SiteData) -> str | None:
    """Why the table's fid and clip_i are empty (None: filled, or no table)."""
    from vsb.scores.peer.vinabench import reference_note

    rows = [{k: (None if v == "" else v) for k, v in r.items()} for r in vinabench_table(data)]
    return reference_note(rows)


def analysis_page(data: SiteData) -> dict[str, Any]:
    """What ``analysis.html`` shows, for the primary evaluator."""
    effects = effects_from_comparisons(data.scores.comparisons)
    by: dict[tuple[str, str, str, str, str], Effect] = {
        (e.model, e.effect, e.condition_b, e.metric_kind, e.metric): e for e in effects
    }
    summary: dict[tuple[str, str, str, str], Effect] = {
        (e.model, e.effect, e.metric_kind, e.metric): e for e in effects if e.effect != "ablation"
    }
    conditions = set(data.scores.conditions)
    ablations = []
    for model in data.models:
        grid: dict[str, dict[tuple[str, str], Cell]] = {}
        for name, group in ABLATIONS.items():
            cells = {
                (k, m): c
                for k, m in ABLATION_METRICS
                if (c := _cell(by.get((model, "ablation", name, k, m)))) is not None
            }
            if cells:
                grid[group] = cells
        if grid:
            ablations.append((model, grid, ablation_plot(model, grid)))
    sens = load_sensitivity(data)
    sens_rows = []
    if sens is not None:
        rows = {(r.model, r.condition, r.metric_kind, r.metric): r for r in sens.rows}
        for cell in sens.cells:
            model, _, cond = cell.rpartition("@")
            sens_rows.append(
                (
                    model,
                    cond,
                    [_cell(rows.get((model, cond, "summary", m))) for m in SENSITIVITY_METRICS],
                )
            )
    return {
        "vinabench_rows": vinabench_table(data),
        "vinabench_metrics": VINABENCH_COLUMNS,
        "vinabench_note": _vinabench_note(data),
        "evaluator": data.scores.primary_evaluator,
        "gain_rows": _gain_rows(data, summary, PLACEBO_EFFECTS),
        "gain_metrics": GAIN_METRICS,
        "has_placebo": PLACEBO_CONDITION in conditions,
        "predicted_rows": _gain_rows(data, summary, PREDICTED_EFFECTS),
        "has_predicted": PREDICTED_CONDITION in conditions,
        "extraction_error": extraction_error_rate(data),
        "extraction_rate": DEFAULT_ERROR_RATE,
        "has_memory": PRIMARY_CONDITION in conditions and "independent" in conditions,
        "ablations": ablations,
        "ablation_metrics": [(k, m, _label(k, m)) for k, m in ABLATION_METRICS],
        "missing_ablations": [n for n in ABLATIONS if n not in conditions],
        "sensitivity": sens,
        "sensitivity_rows": sens_rows,
        "sensitivity_metrics": [_label("summary", m) for m in SENSITIVITY_METRICS],
        "sensitivity_conditions": list(dict.fromkeys(c for _, c, _ in sens_rows)),
        "sensitivity_flat": sens is not None and all(r.diff == 0 for r in sens.rows),
        "ceiling_rows": ceiling_rows(data),
        "readers": list(READERS),
        "implicit": (implicit := load_implicit(data)),
        "implicit_rows": [(r, _cell(r)) for r in implicit.rows] if implicit else [],
    }
