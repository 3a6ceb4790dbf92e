"""Writing ``RUN/scores/``: ``scores.json`` plus long-format CSV tables (atomic writes)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from vsb.fsio import atomic_write_json, atomic_write_text
from vsb.scores.models import SUMMARIES, Comparison, Estimate, ScoresReport

SCORES_DIR = "scores"
MODEL_HEADER = (
    "model", "condition", "rank", "metric_kind", "metric", "score", "ci_low", "ci_high",
    "n_stories",
)  # fmt: skip
RANK_HEADER = (
    "condition", "primary", "model", "rank", "keep_rank", "mean_rank", "rank_p05", "rank_p95",
    "tau_mean", "tau_p05", "tau_p95", "n_draws", "alpha",
)  # fmt: skip


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV text (``\\n`` line ends; None as an empty cell, which pandas reads as NaN)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow(["" if x is None else x for x in row])
    return buf.getvalue()


def _metrics(row: Any) -> list[tuple[str, str, Any]]:
    """(kind, metric, value) for the ten dimensions and the three summaries of a row."""
    out: list[tuple[str, str, Any]] = [("dimension", d, v) for d, v in row.dimensions.items()]
    out += [("summary", s, getattr(row, "global_score" if s == "global" else s)) for s in SUMMARIES]
    return out


def _model_rows(report: ScoresReport) -> Iterable[list[Any]]:
    for r in report.scores:
        for kind, metric, e in _metrics(r):
            if isinstance(e, Estimate):
                yield [r.model, r.condition, r.rank, kind, metric, *_est(e)]


def _est(e: Estimate) -> list[Any]:
    return [e.score, e.ci_low, e.ci_high, e.n_stories]


def _story_rows(report: ScoresReport) -> Iterable[list[Any]]:
    for r in report.stories:
        head = [r.model, r.condition, r.story_id, r.n_images, r.n_requirements]
        yield head + [v for _, _, v in _metrics(r)]


def _rank_rows(report: ScoresReport) -> Iterable[list[Any]]:
    for rs in report.rank_stability:
        tail = [rs.tau_mean, rs.tau_p05, rs.tau_p95, rs.n_draws, rs.alpha]
        for m in rs.models:
            head = [rs.condition, rs.primary, m.model, m.rank, m.keep_rank, m.mean_rank]
            yield [*head, m.rank_p05, m.rank_p95, *tail]


def write_scores(run_dir: str | Path, report: ScoresReport) -> list[Path]:
    """Write ``scores.json`` and the four CSV tables under ``RUN/scores/``; return the paths."""
    out = Path(run_dir) / SCORES_DIR
    story_header = ["model", "condition", "story_id", "n_images", "n_requirements"]
    story_header += [f"dim_{d}" for d in report.dimensions] + [f"summary_{s}" for s in SUMMARIES]
    cmp_header = list(Comparison.model_fields)
    tables = {
        "model_scores.csv": csv_text(MODEL_HEADER, _model_rows(report)),
        "story_scores.csv": csv_text(story_header, _story_rows(report)),
        "comparisons.csv": csv_text(
            cmp_header, ([getattr(c, f) for f in cmp_header] for c in report.comparisons)
        ),
        "rank_stability.csv": csv_text(RANK_HEADER, _rank_rows(report)),
    }
    paths = [out / "scores.json"]
    atomic_write_json(paths[0], report.model_dump(mode="json"))
    for name, text in tables.items():
        atomic_write_text(out / name, text)
        paths.append(out / name)
    return paths
