"""`vsb score` / `vsb compare`: output, files, and one-line errors with exit status 1."""

from __future__ import annotations

import json
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
    assert "wrote 9 files" in out
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
    assert "requirements.parquet" in line and "vsb evaluate" in line


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


def test_empty_and_bad_parquet_evaluations(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vsb.tables import write_requirements

    path = tmp_path / "run" / "evaluations" / "requirements.parquet"
    write_requirements(path, [])
    assert "empty" in _err(["score", str(tmp_path / "run")], capsys)
    pq.write_table(pa.table({"model": ["m"]}), path)
    line = _err(["score", str(tmp_path / "run")], capsys)
    assert "row 1" in line and "missing field" in line and str(path) in line
    path.write_bytes(b"not parquet")
    assert "not a readable Parquet file" in _err(["score", str(tmp_path / "run")], capsys)


def test_compare_unknown_model(run: Path, capsys: pytest.CaptureFixture) -> None:
    line = _err(["compare", str(run), "--a", "oracel", "--b", "drift"], capsys)
    assert "unknown model 'oracel'" in line and "did you mean 'oracle'" in line
    line = _err(["compare", str(run), "--a", "oracle:previous_txt", "--b", "drift"], capsys)
    assert "unknown condition" in line
    assert "same" in _err(["compare", str(run), "--a", "drift", "--b", "drift"], capsys)


# --- issue #14: score --condition, compare MODEL@CONDITION; issue #9: --evaluator ----------

P_TWO = {
    ("oracle", "independent"): 0.0,
    ("oracle", "structured_memory"): 0.0,
    ("drift", "independent"): 0.3,
    ("drift", "structured_memory"): 0.2,
}


@pytest.fixture
def run2(make_run: Callable[..., Path]) -> Path:
    return make_run(simulated_rows(np.random.default_rng(2), P_TWO, n_stories=6), name="two")


def test_score_unknown_condition_is_one_line_and_writes_nothing(
    run2: Path, capsys: pytest.CaptureFixture
) -> None:
    line = _err(["score", str(run2), "--condition", "nonsense", "--resamples", "50"], capsys)
    assert "unknown condition 'nonsense'" in line
    assert "independent" in line and "structured_memory" in line
    assert not (run2 / "scores").exists()


def test_score_condition_prints_its_own_rank_stability(
    run2: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["score", str(run2), "--condition", "independent", "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "rank stability (independent" in out
    assert "structured_memory" not in out


@pytest.mark.parametrize("spec", ["All", "ALL", "all"])
def test_score_condition_all_any_case(run2: Path, capsys: pytest.CaptureFixture, spec: str) -> None:
    assert main(["score", str(run2), "--condition", spec, "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "rank stability (independent" in out and "rank stability (structured_memory" in out


def test_score_condition_name_any_case(run2: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["score", str(run2), "--condition", "Independent", "--resamples", "50"]) == 0
    assert "rank stability (independent" in capsys.readouterr().out


def test_score_prints_conditional_coherence_with_caption(
    run: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["score", str(run), "--resamples", "50"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cond. coherence" in out
    assert "a missing subject fails every remembered attribute" in out
    assert "a missing subject fails once" in out


def test_compare_model_names_with_colons(make_run: Callable[..., Path], capsys) -> None:
    p = {
        ("openai:gpt-image-1", "independent"): 0.1,
        ("openai:gpt-image-1", "structured_memory"): 0.0,
        ("replicate:flux:dev", "independent"): 0.4,
    }
    run = make_run(simulated_rows(np.random.default_rng(3), p, n_stories=4), name="colons")
    argv = ["compare", str(run), "--resamples", "50"]
    assert main([*argv, "--a", "openai:gpt-image-1@independent", "--b", "replicate:flux:dev"]) == 0
    out = capsys.readouterr().out
    assert "openai:gpt-image-1@independent − replicate:flux:dev@independent" in out
    a, b = "openai:gpt-image-1@structured_memory", "openai:gpt-image-1@Independent"
    assert main([*argv, "--a", a, "--b", b]) == 0
    assert "openai:gpt-image-1@structured_memory − openai:gpt-image-1@independent" in (
        capsys.readouterr().out
    )
    line = _err(
        [*argv, "--a", "openai:gpt-image-1@previous_text", "--b", "replicate:flux:dev"], capsys
    )
    assert "unknown condition 'previous_text'" in line
    line = _err([*argv, "--a", "openai:gpt-image-2", "--b", "replicate:flux:dev"], capsys)
    assert "unknown model 'openai:gpt-image-2'" in line
    # issue #36: one form everywhere; the older colon form says how to write it
    line = _err([*argv, "--a", "openai:gpt-image-1:independent", "--b", "replicate:flux:dev"],
                capsys)  # fmt: skip
    assert "write a cell as MODEL@CONDITION (openai:gpt-image-1@independent)" in line


def test_compare_reports_ties(run: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["compare", str(run), "--a", "oracle", "--b", "drift", "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "P(Δ=0)" in out and "P(Δ<0)" in out


def _delta(out: str, metric: str) -> float:
    """The Δ column of a metric's row in `vsb compare` output."""
    row = next(ln.split() for ln in out.splitlines() if ln.split()[:1] == [metric])
    return float(row[3])


def _judged(rows: list[dict], evaluator: str) -> list[dict]:
    return [{**r, "evaluator": evaluator, "passed": not r["passed"]} for r in rows]


def test_compare_and_score_by_evaluator(make_run: Callable[..., Path], capsys) -> None:
    rules = simulated_rows(np.random.default_rng(4), P_FAIL, n_stories=4)
    run = make_run(rules + _judged(rules, "vlm"), name="judged")
    argv = ["compare", str(run), "--a", "oracle", "--b", "drift", "--resamples", "50"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "(evaluator rules)" in out and _delta(out, "global") > 0
    assert main([*argv, "--evaluator", "vlm"]) == 0
    out = capsys.readouterr().out
    assert "(evaluator vlm)" in out and _delta(out, "global") < 0
    line = _err([*argv, "--evaluator", "human"], capsys)
    assert "'human'" in line and "rules, vlm" in line
    assert main(["score", str(run), "--resamples", "50", "--evaluator", "vlm"]) == 0
    out = capsys.readouterr().out
    assert "evaluator vlm" in out and "evaluator rules" not in out
    assert main(["score", str(run), "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "evaluator rules" in out and "evaluator vlm" in out and "judge swap" in out
    line = _err(["score", str(run), "--evaluator", "nonexistent"], capsys)
    assert "'nonexistent'" in line and "evaluators present: rules, vlm" in line


def _not_applicable(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        obs = json.dumps({"reason": "its images are not renders"})
        out.append(
            {**r, "passed": False, "verdict": "not_applicable", "observed": obs, "failure": ""}
        )
    return out


def test_score_warns_about_a_model_rules_did_not_apply_to(
    make_run: Callable[..., Path], capsys: pytest.CaptureFixture
) -> None:
    sim = simulated_rows(np.random.default_rng(5), {("sim", "structured_memory"): 0.1}, 4)
    stored = simulated_rows(np.random.default_rng(6), {("stored:foo", "structured_memory"): 0.1}, 4)
    run = make_run(sim + _not_applicable(stored), name="na")
    assert main(["score", str(run), "--resamples", "50"]) == 0
    cap = capsys.readouterr()
    assert cap.err.strip() == (
        f"warning: rules did not apply to stored:foo (its images are not renders); judge them "
        f"with `vsb evaluate {run} --evaluator vlm --judge …` and score with `--evaluator vlm`"
    )
    assert "stored:foo" not in cap.out


def test_score_refuses_an_evaluator_that_applied_to_nothing(
    make_run: Callable[..., Path], capsys: pytest.CaptureFixture
) -> None:
    stored = simulated_rows(np.random.default_rng(6), {("stored:foo", "structured_memory"): 0.1}, 4)
    run = make_run(_not_applicable(stored) + _judged(stored, "vlm"), name="na2")
    line = _err(["score", str(run), "--evaluator", "rules"], capsys)
    assert line.startswith("error: rules did not apply to any model of this run")
    assert "score with `--evaluator vlm`" in line
    assert not (run / "scores").exists()
    assert main(["score", str(run), "--resamples", "50"]) == 0
    cap = capsys.readouterr()
    assert "score with `--evaluator vlm`" in cap.err and "evaluator vlm" in cap.out


def test_compare_refuses_what_an_evaluator_did_not_judge(
    make_run: Callable[..., Path], capsys: pytest.CaptureFixture
) -> None:
    sim = simulated_rows(np.random.default_rng(5), {("sim", "structured_memory"): 0.1}, 4)
    stored = simulated_rows(np.random.default_rng(6), {("stored:foo", "structured_memory"): 0.1}, 4)
    run = make_run(sim + _not_applicable(stored) + _judged(stored, "vlm"), name="na3")
    argv = ["compare", str(run), "--resamples", "50"]
    line = _err([*argv, "--a", "sim", "--b", "stored:foo:structured_memory"], capsys)
    assert line.startswith("error: rules did not apply to stored:foo (its images are not renders)")
    assert "score with `--evaluator vlm`" in line
    run2 = make_run(_not_applicable(stored) + _judged(stored, "vlm"), name="na4")
    line = _err(
        ["compare", str(run2), "--a", "stored:foo", "--b", "x", "--evaluator", "rules"], capsys
    )
    assert line.startswith("error: rules did not apply to any model of this run")


def test_score_table_cuts_no_model_name_or_interval(
    make_run: Callable[..., Path], capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long provider names and every interval print whole: in a pipe at full length, and on
    a narrow terminal folded onto a second line, never ending in "…"."""
    long = "openai-compatible:black-forest-labs/FLUX.1-schnell-long-name"
    p = {(long, "structured_memory"): 0.1, ("procedural-drift-mid", "structured_memory"): 0.3}
    run = make_run(simulated_rows(np.random.default_rng(5), p, n_stories=6), name="long")
    assert main(["score", str(run), "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert long in out and "procedural-drift-mid" in out and "…" not in out
    assert out.count("[0.") >= 4  # global and coherence intervals of both models, whole
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich then treats the output as a terminal
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert main(["score", str(run), "--resamples", "50"]) == 0
    narrow = capsys.readouterr().out
    assert "…" not in narrow
