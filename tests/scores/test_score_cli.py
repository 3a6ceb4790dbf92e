"""`vsb score` / `vsb compare`: output, files, and one-line errors with exit status 1."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from score_synth import simulated_rows

from vsb.cli.main import main

P_FAIL = {("oracle", "structured_memory"): 0.0, ("drift", "structured_memory"): 0.2}


@pytest.fixture
def run(make_run: Callable[..., Path]) -> Path:
    return make_run(simulated_rows(np.random.default_rng(1), P_FAIL, n_stories=6))


def test_score_prints_leaderboard_and_writes(run: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["score", str(run), "--seed", "3", "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "structured_memory" in out and "oracle" in out and "drift" in out
    assert "wrote 5 files" in out
    assert (run / "scores" / "scores.json").is_file()


def test_compare_prints_table(run: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["compare", str(run), "--a", "oracle", "--b", "drift", "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "coherence" in out and "P(Δ>0)" in out


def _err(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    assert main(argv) == 1
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cap.err
    return lines[0]


def test_missing_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    line = _err(["score", str(tmp_path / "nope")], capsys)
    assert "nope" in line and "run directory not found" in line


def test_run_without_evaluations(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "run").mkdir()
    line = _err(["score", str(tmp_path / "run")], capsys)
    assert "requirements.jsonl" in line and "vsb evaluate" in line


def test_empty_and_bad_evaluations(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ev = tmp_path / "run" / "evaluations"
    ev.mkdir(parents=True)
    (ev / "requirements.jsonl").write_text("")
    assert "empty" in _err(["score", str(tmp_path / "run")], capsys)
    (ev / "requirements.jsonl").write_text('{"model": "m"}\n')
    line = _err(["score", str(tmp_path / "run")], capsys)
    assert "line 1" in line and "missing field" in line
    (ev / "requirements.jsonl").write_text("{oops\n")
    assert "invalid JSON" in _err(["score", str(tmp_path / "run")], capsys)


def test_compare_unknown_model(run: Path, capsys: pytest.CaptureFixture) -> None:
    line = _err(["compare", str(run), "--a", "oracel", "--b", "drift"], capsys)
    assert "unknown model 'oracel'" in line and "did you mean 'oracle'" in line
    line = _err(["compare", str(run), "--a", "oracle:previous_txt", "--b", "drift"], capsys)
    assert "unknown condition" in line
    assert "same" in _err(["compare", str(run), "--a", "drift", "--b", "drift"], capsys)
