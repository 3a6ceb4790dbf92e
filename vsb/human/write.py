"""Writing and reading a human report directory (atomic writes; CSV beside the JSON).

``DIR/report.json`` is the ``HumanReport``; beside it ``ratings.csv`` (every likert item,
long format), ``pairwise.csv`` (every pairwise and control item), and one CSV per
table of the report (``preferences.csv`` is the per-pair preference table). Every CSV
starts with a ``synthetic`` column, so no table made from synthetic ratings can be mistaken
for human data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from vsb.errors import InputError
from vsb.fsio import atomic_write_json, atomic_write_text, csv_text, load_model
from vsb.human.load import LoadedFile
from vsb.human.models import DIMENSION_KEYS, LikertItem
from vsb.human.results import HumanReport, MixedEffectRow

REPORT_FILE = "report.json"
#: Where a release keeps its human report (the site reads it from there when present).
RELEASE_REPORT = "human/report.json"


def _table(synthetic: bool, rows: Sequence[BaseModel], model: type[BaseModel]) -> str:
    header = ["synthetic", *model.model_fields]
    return csv_text(header, ([synthetic, *_cells(r)] for r in rows))


def _cells(row: BaseModel) -> list[Any]:
    out = []
    for v in row.model_dump().values():
        out.append(";".join(map(str, v)) if isinstance(v, list) else v)
    return out


def _item_rows(files: Sequence[LoadedFile], synthetic: bool) -> tuple[list[Any], list[Any]]:
    likert, pairs = [], []
    for f in files:
        r = f.rating
        for it in r.items:
            base = [synthetic, r.rater_id, r.session_id, it.item_id, it.order, it.story_id,
                    it.condition, it.time_s]  # fmt: skip
            if isinstance(it, LikertItem):
                scores = [getattr(it.ratings, d) for d in DIMENSION_KEYS]
                likert.append([*base, it.model, it.letter, it.repeat_of, *scores])
            else:
                pairs.append([*base, it.kind, it.model_a, it.model_b, it.choice])
    return likert, pairs


def write_report(
    out_dir: str | Path, report: HumanReport, files: Sequence[LoadedFile]
) -> list[Path]:
    """Write ``report.json`` and its CSVs into ``out_dir`` (created); returns the paths."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("output exists and is not a directory", file=out)
    syn = report.synthetic
    likert, pairs = _item_rows(files, syn)
    common = ["synthetic", "rater_id", "session_id", "item_id", "order", "story_id", "condition",
              "time_s"]  # fmt: skip
    tables: dict[str, str] = {
        "ratings.csv": csv_text([*common, "model", "letter", "repeat_of", *DIMENSION_KEYS], likert),
        "pairwise.csv": csv_text([*common, "kind", "model_a", "model_b", "choice"], pairs),
    }
    pieces: Iterable[tuple[str, Sequence[BaseModel]]] = [
        ("raters.csv", report.raters),
        ("alpha.csv", report.alpha),
        ("icc.csv", report.icc),
        ("model_means.csv", report.model_means),
        ("preferences.csv", report.preferences),
        ("bradley_terry.csv", report.bradley_terry),
    ]
    for name, rows in pieces:
        if rows:
            tables[name] = _table(syn, rows, type(rows[0]))
    if report.mixed_model is not None:
        tables["mixed_model.csv"] = _table(syn, report.mixed_model.effects, MixedEffectRow)
    if report.agreement is not None:
        a = report.agreement
        if a.correlations:
            tables["agreement_stories.csv"] = _table(syn, a.correlations, type(a.correlations[0]))
        if a.rankings:
            tables["agreement_rankings.csv"] = _table(syn, a.rankings, type(a.rankings[0]))
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in tables.items():
        atomic_write_text(out / name, text)
        written.append(out / name)
    atomic_write_json(out / REPORT_FILE, report.model_dump(mode="json"))
    written.append(out / REPORT_FILE)
    return written


def load_report(path: str | Path) -> HumanReport:
    """A report from ``DIR/report.json`` (or the file itself); ``InputError`` if unreadable."""
    p = Path(path)
    if p.is_dir():
        p = p / REPORT_FILE
    try:
        return load_model(p, HumanReport, "not a human report")
    except FileNotFoundError:
        raise InputError("no human report here (run `vsb human import`)", file=p) from None


def release_report(release_dir: str | Path) -> HumanReport | None:
    """The release's ``human/report.json`` if it has one (what the site shows)."""
    p = Path(release_dir) / RELEASE_REPORT
    return load_report(p) if p.is_file() else None
