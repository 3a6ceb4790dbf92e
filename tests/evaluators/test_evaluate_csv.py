"""Issue #23 item 5 on ``vsb evaluate``: a model named with a spreadsheet formula is quoted
in ``requirements.csv`` and ``signals.csv`` and exact in the JSONL files."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from test_csv_injection import scan
from test_evaluate import make_run

from vsb.evaluators.evaluate import evaluate_run
from vsb.story.models import Story

MODEL = "=1+1"


def test_formula_model_name_is_quoted_in_the_csvs_only(
    tmp_path: Path, default_suite: list[Story]
) -> None:
    run = make_run(tmp_path / "run", default_suite[:1], model=MODEL)
    evaluate_run(run)
    ev = run / "evaluations"
    assert scan(ev) == {}
    for name in ("requirements", "signals"):
        rows = list(csv.DictReader(io.StringIO((ev / f"{name}.csv").read_text())))
        assert rows and {r["model"] for r in rows} == {"'" + MODEL}
        lines = (ev / f"{name}.jsonl").read_text().splitlines()
        assert {json.loads(x)["model"] for x in lines} == {MODEL}
    # negative numbers stay numbers: no value cell is quoted
    sig = list(csv.DictReader(io.StringIO((ev / "signals.csv").read_text())))
    assert all(float(r["value"]) >= 0 for r in sig)


@pytest.mark.parametrize("cell", ["-0.5", "1e-05"])
def test_numeric_text_is_left_alone(cell: str) -> None:
    from vsb.fsio import csv_text

    assert csv_text(["v"], [[cell], [float(cell)]]) == f"v\n{cell}\n{float(cell)}\n"
