"""Writing ``RUN/scores/``: ``scores.json`` plus long-format CSV tables (atomic writes).

Every table starts with an ``evaluator`` column: rows of different evaluators are never
pooled, so a reader filters on it first. ``model_scores.csv``'s ``prompts_cut`` is the share
of the model's prompts under that condition its text encoder cut (empty: not known).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from vsb.fsio import atomic_write_json, atomic_write_text, csv_text
from vsb.scores.horizon import HorizonPoint
from vsb.scores.models import (
    SUMMARIES,
    Comparison,
    Estimate,
    JudgeSwapPair,
    NotApplicable,
    ScoresReport,
)
from vsb.scores.signals import SIGNAL_HEADER

SCORES_DIR = "scores"
MODEL_HEADER = (
    "evaluator", "model", "condition", "rank", "metric_kind", "metric", "score", "ci_low",
    "ci_high", "n_stories", "n_unsure", "n_parse_failure", "n_not_applicable", "rank_low",
    "rank_high", "coverage", "prompts_cut",
)  # fmt: skip
HORIZON_HEADER = tuple(HorizonPoint.model_fields)
RANK_HEADER = (
    "evaluator", "condition", "primary", "model", "rank", "keep_rank", "mean_rank", "rank_p05",
    "rank_p95", "tau_mean", "tau_p05", "tau_p95", "n_draws", "alpha",
)  # fmt: skip
SWAP_HEADER = (
    "condition", "evaluator_a", "evaluator_b", "kendall_tau", "n_models", "n_flips",
    "n_separated_flips", *JudgeSwapPair.model_fields,
)  # fmt: skip
NA_HEADER = tuple(NotApplicable.model_fields)


def _metrics(row: Any) -> list[tuple[str, str, Any]]:
    """(kind, metric, value) for the ten dimensions and the three summaries of a row."""
    out: list[tuple[str, str, Any]] = [("dimension", d, v) for d, v in row.dimensions.items()]
    out += [("summary", s, getattr(row, "global_score" if s == "global" else s)) for s in SUMMARIES]
    return out


def _model_rows(report: ScoresReport) -> Iterable[list[Any]]:
    cuts = {p.model: p for p in report.prompts}
    for r in report.scores:
        counts: list[Any] = [r.n_unsure, r.n_parse_failure, r.n_not_applicable, r.rank_low]
        cut = cuts[r.model].share(r.condition) if r.model in cuts else None
        counts += [r.rank_high, r.coverage, cut]
        for kind, metric, e in _metrics(r):
            if isinstance(e, Estimate):
                yield [r.evaluator, r.model, r.condition, r.rank, kind, metric, *_est(e), *counts]


def _est(e: Estimate) -> list[Any]:
    return [e.score, e.ci_low, e.ci_high, e.n_stories]


def _story_rows(report: ScoresReport) -> Iterable[list[Any]]:
    for r in report.stories:
        head = [r.evaluator, r.model, r.condition, r.story_id, r.n_images, r.n_requirements]
        yield head + [v for _, _, v in _metrics(r)]


def _rank_rows(report: ScoresReport) -> Iterable[list[Any]]:
    for rs in report.rank_stability:
        tail = [rs.tau_mean, rs.tau_p05, rs.tau_p95, rs.n_draws, rs.alpha]
        for m in rs.models:
            head = [rs.evaluator, rs.condition, rs.primary, m.model, m.rank, m.keep_rank]
            head.append(m.mean_rank)
            yield [*head, m.rank_p05, m.rank_p95, *tail]


def _swap_rows(report: ScoresReport) -> Iterable[list[Any]]:
    for js in report.judge_swap:
        head = [js.condition, js.evaluator_a, js.evaluator_b, js.kendall_tau, len(js.models)]
        head += [js.n_flips, js.n_separated_flips]
        for p in js.pairs:
            yield head + [getattr(p, f) for f in JudgeSwapPair.model_fields]


def _na_rows(report: ScoresReport) -> Iterable[list[Any]]:
    for na in report.not_applicable:
        row = na.model_dump()
        yield [";".join(v) if isinstance(v, list) else v for v in row.values()]


def write_scores(run_dir: str | Path, report: ScoresReport) -> list[Path]:
    """Write ``scores.json`` and the eight CSV tables under ``RUN/scores/``; return the paths."""
    out = Path(run_dir) / SCORES_DIR
    story_header = ["evaluator", "model", "condition", "story_id", "n_images", "n_requirements"]
    story_header += [f"dim_{d}" for d in report.dimensions] + [f"summary_{s}" for s in SUMMARIES]
    cmp_header = list(Comparison.model_fields)
    tables = {
        "model_scores.csv": csv_text(MODEL_HEADER, _model_rows(report)),
        "story_scores.csv": csv_text(story_header, _story_rows(report)),
        "comparisons.csv": csv_text(
            cmp_header, ([getattr(c, f) for f in cmp_header] for c in report.comparisons)
        ),
        "rank_stability.csv": csv_text(RANK_HEADER, _rank_rows(report)),
        "judge_swap.csv": csv_text(SWAP_HEADER, _swap_rows(report)),
        "not_applicable.csv": csv_text(NA_HEADER, _na_rows(report)),
        "signals.csv": csv_text(
            SIGNAL_HEADER, ([getattr(s, f) for f in SIGNAL_HEADER] for s in report.signals)
        ),
        "horizon.csv": csv_text(
            HORIZON_HEADER, ([getattr(h, f) for f in HORIZON_HEADER] for h in report.horizon)
        ),
    }
    paths = [out / "scores.json"]
    atomic_write_json(paths[0], report.model_dump(mode="json"))
    for name, text in tables.items():
        atomic_write_text(out / name, text)
        paths.append(out / name)
    return paths


def write_report_files(
    out_dir: str | Path, stem: str, report: BaseModel, header: tuple[str, ...], rows: Iterable[Any]
) -> list[Path]:
    """Write ``STEM.json`` (the whole report) and ``STEM.csv`` (one line per row of ``rows``,
    the ``header`` fields in order) into ``out_dir``; returns the two paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.json", out / f"{stem}.csv"]
    atomic_write_json(paths[0], report.model_dump(mode="json"))
    atomic_write_text(paths[1], csv_text(header, ([getattr(r, k) for k in header] for r in rows)))
    return paths
