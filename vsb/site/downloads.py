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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb import fsio

DATA_DIR = "data"
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


def csv_text(table: DataTable) -> str:
    """The table as CSV (header first; None as an empty cell; text cells that a spreadsheet
    would run as a formula escaped by ``vsb.fsio.csv_text``)."""
    return fsio.csv_text(table.columns, ([_plain(v) for v in row] for row in table.rows))


def json_text(table: DataTable, release: str, root_hash: str) -> str:
    """The table as JSON: release, root hash, title, columns and one object per row."""
    rows = [dict(zip(table.columns, (_plain(v) for v in r), strict=True)) for r in table.rows]
    doc = {
        "release": release,
        "root_hash": root_hash,
        "title": table.title,
        "columns": list(table.columns),
        "rows": rows,
    }
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


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
        (out / f"{stem}.csv").write_text(csv_text(table), encoding="utf-8")
        (out / f"{stem}.json").write_text(json_text(table, release, root_hash), encoding="utf-8")
        links[name] = Download(f"{stem}.csv", f"{stem}.json", len(table.rows))
    return links


#: The release's per-requirement results, as offered by the site.
REQUIREMENT_FILES = ("data/requirements.csv", "data/requirements.parquet")


def write_requirements(requirements_jsonl: Path, out: Path) -> tuple[str, ...]:
    """Every evaluated (image, requirement) of the release as CSV and Parquet (pandas +
    pyarrow), columns in the order of the release's evaluations/requirements.csv (the data
    contract's); returns the site paths."""
    import pandas as pd

    from vsb.evaluators.evaluate import REQUIREMENT_COLUMNS
    from vsb.fsio import iter_jsonl

    rows = [obj for _, obj in iter_jsonl(requirements_jsonl)]
    df = pd.DataFrame.from_records(rows)
    order = [c for c in REQUIREMENT_COLUMNS if c in df.columns]
    df = df[order + sorted(set(df.columns) - set(order))]
    for col in df.columns:
        if df[col].dtype == object:
            _map_distinct(df, col, _cell)
    (out / DATA_DIR).mkdir(parents=True, exist_ok=True)
    df.to_parquet(out / REQUIREMENT_FILES[1], index=False, engine="pyarrow")
    # the CSV's text cells escaped as in every CSV vsb writes (the Parquet file keeps them)
    for col in df.columns:
        if pd.api.types.is_object_dtype(df[col]) or pd.api.types.is_string_dtype(df[col]):
            _map_distinct(df, col, fsio.csv_cell)
    df.to_csv(out / REQUIREMENT_FILES[0], index=False, lineterminator="\n")
    return REQUIREMENT_FILES


def _map_distinct(df: Any, col: str, fn: Callable[[Any], Any]) -> None:
    """``df[col] = df[col].map(fn)``, computing ``fn`` once per distinct value and leaving the
    column as it is when ``fn`` changes none (most columns: a few hundred distinct values in
    ~140k rows). Values that cannot be hashed (lists, objects) take the plain map."""
    s = df[col]
    try:
        changed = {v: out for v in s.unique() if (out := fn(v)) is not v}
    except TypeError:  # an unhashable cell
        df[col] = s.map(fn)
        return
    if changed:
        df[col] = s.map(lambda v: changed.get(v, v) if _hashable(v) else fn(v))


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _cell(v: Any) -> Any:
    """Nested values (lists, objects) as JSON text so every column has one type."""
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True, ensure_ascii=False)
    return v
