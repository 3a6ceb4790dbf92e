"""The site's per-requirement downloads: the release's own Parquet file (hard-linked) and a CSV
of it with the same cells as every CSV vsb writes; an older release's JSON lines give the same
files."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest

from vsb.fsio import csv_columns_text, csv_text
from vsb.site.downloads import REQUIREMENT_FILES, write_requirements
from vsb.tables import REQUIREMENT_COLUMNS, iter_rows
from vsb.tables import write_requirements as write_table


def _rows() -> list[dict[str, Any]]:
    out = []
    for i in range(30):
        passed = i % 4 != 0
        out.append({
            "model": "=HYPERLINK(1)" if i == 3 else f"m{i % 3}", "condition": "independent",
            "story_id": f"s{i % 5}", "scene": i % 3 + 1, "req_id": f"s1.Ana.r{i}",
            "dimension": "identity", "taxonomy": "identity_drift", "source": "prompt",
            "subject": "Ana", "attribute": "hair", "expected": json.dumps(-i),
            "observed": json.dumps("-x" if i == 5 else i), "passed": passed,
            "failure": "" if passed else "identity_drift", "evaluator": "rules",
            "verdict": "passed" if passed else "failed", "judge_model": None if i % 2 else "",
        })  # fmt: skip
    return out


def test_the_release_s_parquet_is_linked_and_its_csv_written(tmp_path: Path) -> None:
    rows = _rows()
    table = tmp_path / "release" / "requirements.parquet"
    write_table(table, rows)
    site = tmp_path / "site"
    assert write_requirements(table, site) == REQUIREMENT_FILES
    parquet, text = site / REQUIREMENT_FILES[1], (site / REQUIREMENT_FILES[0]).read_text()
    assert parquet.read_bytes() == table.read_bytes()
    assert os.stat(parquet).st_ino == os.stat(table).st_ino  # one file on disk, not two
    assert text == csv_text(REQUIREMENT_COLUMNS, rows)  # the cells every vsb CSV has
    got = list(csv.DictReader(text.splitlines()))
    assert got[3]["model"] == "'=HYPERLINK(1)" and got[5]["observed"] == '"-x"'
    assert got[1]["expected"] == "-1"  # a number is no formula


def test_an_older_release_s_json_lines_give_the_same_downloads(tmp_path: Path) -> None:
    rows = _rows()
    write_table(tmp_path / "new" / "requirements.parquet", rows)
    legacy = tmp_path / "old" / "requirements.jsonl"
    legacy.parent.mkdir()
    legacy.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    write_requirements(tmp_path / "new" / "requirements.parquet", tmp_path / "site-new")
    write_requirements(legacy, tmp_path / "site-old")
    for name in REQUIREMENT_FILES:
        assert (tmp_path / "site-old" / name).read_bytes() == (
            tmp_path / "site-new" / name
        ).read_bytes(), name
    assert [r for _, r in iter_rows(tmp_path / "site-old" / REQUIREMENT_FILES[1])] == rows


@pytest.mark.parametrize(
    "cells",
    [
        ["plain", "=1+1", "-0.5", "+x", "@sum", None, True, 3, 2.5, "", "a,b", 'q"q'],
        ["line\nbreak", "\ttab", "cr\rhere", "=x"],  # a carriage return: the careful way
    ],
)
def test_csv_by_columns_equals_csv_by_rows(cells: list[Any]) -> None:
    rows = [[c, cells[-1 - i]] for i, c in enumerate(cells)]
    columns = [[r[0] for r in rows], [r[1] for r in rows]]
    assert csv_columns_text(["a", "b"], columns) == csv_text(["a", "b"], rows)
