"""A table's JSON download is the bytes ``json.dumps(indent=1, sort_keys=True)`` writes, though
its rows go through json's C encoder (``vsb.site.downloads.json_text``)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from vsb.site.downloads import DataTable, _plain_rows, json_text

_TEXT = ["", "plain", 'quote " and \\ backslash', "line\nbreak\ttab", "café ünï", "🙂", "\x00\x1f"]


def _reference(table: DataTable, release: str, root: str) -> str:
    rows = [dict(zip(table.columns, r, strict=True)) for r in _plain_rows(table)]
    doc = {"release": release, "root_hash": root, "title": table.title,
           "columns": list(table.columns), "rows": rows}  # fmt: skip
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _cell(rng: np.random.Generator) -> Any:
    kind = int(rng.integers(8))
    if kind == 0:
        return None
    if kind == 1:
        return bool(rng.integers(2))
    if kind == 2:
        return int(rng.integers(-(10**12), 10**12))
    if kind == 3:
        return float(rng.choice([0.1, -0.0, 1e-300, 1e300, math.inf, -math.inf, 2 / 3]))
    if kind == 4:
        return math.nan  # written as null
    if kind == 5:
        return ("a", 1)  # joined as text
    return str(rng.choice(_TEXT))


@pytest.mark.parametrize("seed", range(12))
def test_same_bytes_as_json_with_indent(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_cols = int(rng.integers(0, 6))
    columns = tuple(str(rng.choice(["model", "z", "a b", "é", '"q"', "rows"])) + str(i)
                    for i in range(n_cols))  # fmt: skip
    rows = [tuple(_cell(rng) for _ in columns) for _ in range(int(rng.integers(0, 8)))]
    table = DataTable(columns, rows, title=str(rng.choice([*_TEXT, '"rows": []'])))
    assert json_text(table, "v0.1.0", "ab" * 32) == _reference(table, "v0.1.0", "ab" * 32)


def test_a_nested_cell_falls_back_to_the_same_bytes() -> None:
    table = DataTable(("a", "b"), [({"x": [1, 2]}, 1), (None, "y")], title="t")
    assert json_text(table, "r", "h") == _reference(table, "r", "h")
    assert json.loads(json_text(table, "r", "h"))["rows"][0]["a"] == {"x": [1, 2]}
