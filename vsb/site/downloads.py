"""Every table of the site, downloadable: one CSV and one JSON file per table, and the
release's per-requirement results as CSV and Parquet.

A page's view function returns its tables as ``DataTable`` objects (raw values, not the
formatted text of the HTML); the site writer saves each under ``data/<page>/<name>.csv`` and
``.json`` and hands the page the links. The JSON names the release it came from. Files are
byte-identical for identical input (sorted keys, ``\\n`` line ends, fixed float repr).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb import fsio

DATA_DIR = "data"
#: Cell types ``json_text`` writes with json's C encoder.
_SCALARS = frozenset({str, int, float, bool, type(None)})
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class DataTable:
    """One table's raw data: column names and rows of plain values (None = empty)."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    title: str = ""


@dataclass(frozen=True)
class Download:
    """Where one table's files lie, relative to the site root."""

    csv: str
    json: str
    n_rows: int


def _plain(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, tuple | list):
        return ";".join(str(x) for x in v)
    return v


def _plain_rows(table: DataTable) -> list[list[Any]]:
    return [[_plain(v) for v in row] for row in table.rows]


def csv_text(table: DataTable, plain: list[list[Any]] | None = None) -> str:
    """The table as CSV (header first; None as an empty cell; text cells that a spreadsheet
    would run as a formula escaped by ``vsb.fsio.csv_text``); ``plain``: its rows already
    through ``_plain``."""
    return fsio.csv_text(table.columns, plain if plain is not None else _plain_rows(table))


def json_text(
    table: DataTable, release: str, root_hash: str, plain: list[list[Any]] | None = None
) -> str:
    """The table as JSON: release, root hash, title, columns and one object per row."""
    cells = plain if plain is not None else _plain_rows(table)
    rows = [dict(zip(table.columns, r, strict=True)) for r in cells]
    doc = {
        "release": release,
        "root_hash": root_hash,
        "title": table.title,
        "columns": list(table.columns),
        "rows": rows,
    }
    if not rows or not all(type(v) in _SCALARS for r in cells for v in r):
        return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    # The same bytes, faster: json's C encoder writes each flat row (json uses its slower
    # Python encoder whenever ``indent`` is set), laid out as ``indent=1`` would lay it out.
    doc["rows"] = []
    head = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False)
    flat = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",\n   ", ": "))
    body = ",\n".join(f"  {{\n   {flat.encode(r)[1:-1]}\n  }}" if r else "  {}" for r in rows)
    return head.replace('"rows": []', f'"rows": [\n{body}\n ]', 1) + "\n"


def table_stem(page_path: str, name: str) -> str:
    """``data/<page without .html>/<name>`` with every part file-name safe."""
    page = page_path.removesuffix(".html")
    parts = [_SAFE.sub("-", p) or "_" for p in page.split("/")]
    return "/".join([DATA_DIR, *parts, _SAFE.sub("-", name) or "table"])


def write_tables(
    out: Path, page_path: str, tables: dict[str, DataTable], release: str, root_hash: str
) -> dict[str, Download]:
    """Write every table of one page; returns name -> its download links."""
    links: dict[str, Download] = {}
    for name, table in tables.items():
        stem = table_stem(page_path, name)
        (out / stem).parent.mkdir(parents=True, exist_ok=True)
        plain = _plain_rows(table)
        (out / f"{stem}.csv").write_text(csv_text(table, plain), encoding="utf-8")
        (out / f"{stem}.json").write_text(
            json_text(table, release, root_hash, plain), encoding="utf-8"
        )
        links[name] = Download(f"{stem}.csv", f"{stem}.json", len(table.rows))
    return links


#: The release's per-requirement results, as offered by the site.
REQUIREMENT_FILES = ("data/requirements.csv", "data/requirements.parquet")


def write_requirements(table: Path, out: Path) -> tuple[str, ...]:
    """Every evaluated (image, requirement) of the release as CSV and Parquet; ``table`` is
    the release's requirements table (``vsb.tables.requirements_file``). The Parquet file is
    the release's own (hard-linked where the filesystem allows; an older release's JSON lines
    are converted), the CSV has its columns in the same order (the data contract's), text
    cells escaped as in every CSV vsb writes. Returns the site paths."""
    from vsb.tables import REQUIREMENT_COLUMNS, is_legacy, parquet_bytes, read_columns, read_table

    (out / DATA_DIR).mkdir(parents=True, exist_ok=True)
    parquet = out / REQUIREMENT_FILES[1]
    if is_legacy(table):
        rows = read_table(table)
        order = [c for c in REQUIREMENT_COLUMNS if c in rows.column_names]
        order += sorted(set(rows.column_names) - set(order))
        fsio.atomic_write_bytes(parquet, parquet_bytes(rows.select(order)))
    else:
        fsio.link_or_copy(table, parquet)
    order = _column_names(parquet)
    cols = read_columns(parquet, order)
    fsio.atomic_write_csv_columns(out / REQUIREMENT_FILES[0], order, [cols.pop(c) for c in order])
    return REQUIREMENT_FILES


def _column_names(parquet: Path) -> list[str]:
    import pyarrow.parquet as pq

    return list(pq.read_schema(parquet).names)
