"""Issue #23 item 5 on ``vsb evaluate``: a model named with a spreadsheet formula is kept
exactly in the evaluation tables (Parquet, no CSV beside them) and quoted in every CSV the
scores write."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from test_evaluate import make_run

from tests.test_csv_injection import scan
from vsb.evaluators.evaluate import evaluate_run
from vsb.scores.compute import score_run
from vsb.scores.write import write_scores
from vsb.story.models import Story
from vsb.tables import iter_rows

MODEL = "=1+1"


def test_formula_model_name_is_exact_in_the_tables_and_quoted_in_the_csvs(
    tmp_path: Path, default_suite: list[Story]
) -> None:
    run = make_run(tmp_path / "run", default_suite[:1], model=MODEL)
    evaluate_run(run)
    ev = run / "evaluations"
    for name in ("requirements", "signals"):
        assert {r["model"] for _, r in iter_rows(ev / f"{name}.parquet")} == {MODEL}
    assert not list(ev.glob("*.csv"))
    write_scores(run, score_run(run))
    assert scan(run / "scores") == {}
    sig = list(csv.DictReader(io.StringIO((run / "scores" / "signals.csv").read_text())))
    assert sig and {r["model"] for r in sig} == {"'" + MODEL}


@pytest.mark.parametrize("cell", ["-0.5", "1e-05"])
def test_numeric_text_is_left_alone(cell: str) -> None:
    from vsb.fsio import csv_text

    assert csv_text(["v"], [[cell], [float(cell)]]) == f"v\n{cell}\n{float(cell)}\n"
