"""``--compare-gold``: how the LLM's reading of VinaBench narratives agrees with the gold
annotations (VinaBench's LLM-vs-gold constraints comparison, measured per field).

Compared per imported story whose sample carries usable annotations:

- ``presence``: each profiled character in each scene, present or not (the LLM's character
  of the same name, case aside; one the LLM does not name is absent in its reading);
- ``time`` and ``location``: each scene whose annotation gives one, against the value the
  LLM's story checks there (a vocabulary value or the free text; none when the LLM's reading
  withheld it: ``llm_unknown``). Places compare without a leading article, case aside;
- ``identity``: each look attribute a character's profile gives (``vsb.narrative.profile``:
  skin, hair colour, hair style, top, trousers, accessory) against the LLM's value in that
  character's first scene.

``agreement`` gives one row per comparison and the counts per field; ``write_agreement``
writes ``gold-agreement.json`` (counts, rate = agree / compared) and ``gold-agreement.csv``
(the rows) beside the import's report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vsb.fsio import atomic_write_json, atomic_write_text, csv_text
from vsb.narrative.gold import GoldError, check_annotations, place_key
from vsb.narrative.importer import ImportReport
from vsb.narrative.profile import ProfileConflict, read_profile
from vsb.story.models import Story

FIELDS = ("presence", "time", "location", "identity")
JSON_NAME = "gold-agreement.json"
CSV_NAME = "gold-agreement.csv"
COLUMNS = ("story_id", "scene", "field", "subject", "attribute", "gold", "llm", "agree")


def _norm(value: Any, *, place: bool = False) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        value = " ".join(str(v) for v in value if v)
    text = " ".join(str(value).split()).lower()
    return place_key(text) if place else text


def _requirement(story: Story, k: int, subject: str, attribute: str) -> Any:
    for r in story.scenes[k - 1].requirements:
        if r.subject == subject and r.attribute == attribute:
            return r.expected
    return None


def _story_rows(story: Story, gold: Any) -> list[dict[str, Any]]:
    ann = check_annotations(gold, len(story.scenes))
    names = {c.name.lower(): c.name for c in story.world.characters}
    rows: list[dict[str, Any]] = []

    def row(k: int, field: str, subject: str, attribute: str, g: Any, llm: Any) -> None:
        rows.append({
            "story_id": story.id, "scene": k, "field": field, "subject": subject,
            "attribute": attribute, "gold": g, "llm": llm, "agree": g == llm,
        })  # fmt: skip

    for k, present in enumerate(ann.present, start=1):
        state = story.scenes[k - 1].state
        for name in ann.profile:
            mine = names.get(name.lower())
            seen = mine is not None and state.characters[mine].present
            row(k, "presence", name, "present", name in present, seen)
        for field, gold_value in (("time", ann.times[k - 1]), ("location", ann.places[k - 1])):
            if gold_value is None:
                continue
            place = field == "location"
            llm_value = _requirement(story, k, "scene", field)
            row(k, field, "scene", field, _norm(gold_value, place=place),
                _norm(llm_value, place=place))  # fmt: skip
    for name, desc in ann.profile.items():
        mine = names.get(name.lower())
        try:
            look = read_profile(desc)
        except ProfileConflict:
            continue
        first = next((k for k, p in enumerate(ann.present, 1) if name in p), None)
        for attr, fact in look.facts.items():
            value: Any = None
            if mine is not None and first is not None:
                if attr in ("hair_color", "hair_style"):
                    hair = _requirement(story, first, mine, "hair")
                    if isinstance(hair, list) and len(hair) == 2:
                        value = hair[0 if attr == "hair_color" else 1] or None
                else:
                    value = _requirement(story, first, mine, attr)
            row(first or 1, "identity", name, attr, _norm(fact.value), _norm(value))
    return rows


def agreement(report: ImportReport) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every comparison of the imported stories with their annotations, and the summary:
    per field the comparisons, the agreements, the rate and how often the LLM's reading
    gave no value (``llm_unknown``)."""
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    compared = 0
    for r in report.results:
        if r.story is None or r.narrative.gold is None:
            continue
        try:
            rows += _story_rows(r.story, r.narrative.gold)
        except GoldError as err:
            skipped.append({"id": r.narrative.id, "scene": err.scene, "error": err.message})
            continue
        compared += 1
    fields: dict[str, Any] = {}
    for field in FIELDS:
        mine = [x for x in rows if x["field"] == field]
        agree = sum(x["agree"] for x in mine)
        fields[field] = {
            "compared": len(mine),
            "agree": agree,
            "rate": agree / len(mine) if mine else None,
            "llm_unknown": sum(x["llm"] is None for x in mine),
        }
    pres = [x for x in rows if x["field"] == "presence"]
    fields["presence"]["confusion"] = {
        f"gold_{g}_llm_{m}": sum(x["gold"] is (g == "present") and x["llm"] is (m == "present")
                                 for x in pres)
        for g in ("present", "absent") for m in ("present", "absent")
    }  # fmt: skip
    summary = {"version": "1.0", "stories": compared, "fields": fields,
               "not_compared": skipped}  # fmt: skip
    return rows, summary


def write_agreement(import_dir: Path, report: ImportReport) -> dict[str, Any]:
    """``gold-agreement.json`` and ``gold-agreement.csv`` in ``import_dir``; the summary."""
    rows, summary = agreement(report)
    atomic_write_json(import_dir / JSON_NAME, summary)
    atomic_write_text(import_dir / CSV_NAME, csv_text(COLUMNS, rows))
    return summary


def summary_line(summary: dict[str, Any]) -> str:
    """``presence 18/20 (0.90), time …``: the agreement per field in one line."""
    parts: Sequence[str] = [
        f"{f} {v['agree']}/{v['compared']}"
        + (f" ({v['rate']:.2f})" if v["rate"] is not None else "")
        for f, v in summary["fields"].items()
    ]
    return f"agreement with the gold annotations ({summary['stories']} stories): " + ", ".join(
        parts
    )
