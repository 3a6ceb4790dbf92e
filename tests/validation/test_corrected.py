"""Scores corrected for the judge's own error (issue 39), against a judge of known noise.

The run: the default suite under structured_memory, ``procedural-drift-mid`` (with its
oracle) and ``stored:procedural-drift-mid`` (its frames re-encoded: other bytes, the same
pixels, no oracle). The judge is the literal one (it reads the pictures; no story, no
oracle) whose YES turns NO 15 % of the time and NO turns YES 10 % (``NoisyJudge``, seeded),
asked through the real pipeline in process. The stored copy's truth is the oracle of the
frames it copies (``true_scores``). ``benchmarks/bench_corrected.py`` measures the
interval's coverage over 50 judge seeds (docs/validation.md).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from vsb.cli.main import main
from vsb.evaluators.evaluate import evaluate_run
from vsb.evaluators.vlm.transports import build_transport
from vsb.evaluators.vlm_judge import JudgeOptions
from vsb.scores.compute import Resampling, ScoringInput, load_scoring_input, score_input
from vsb.scores.table import build_story_table
from vsb.validation.correct.apply import Oracle, correct_report, corrector_for
from vsb.validation.correct.estimate import BOUND
from vsb.validation.correct.noisy import NoisyJudge, true_scores
from vsb.validation.reference_judges import LiteralJudge
from vsb.validation.sim_judge import JudgeEndpoint

pytestmark = pytest.mark.slow
SIM = "procedural-drift-mid"
COPY = f"stored:{SIM}"
COND = "structured_memory"
FLIPS = {"YES": 0.15, "NO": 0.10}
SETTINGS = Resampling(seed=0, n_resamples=1000)


def _copies(src: Path, dest: Path) -> None:
    """Re-encode every frame (a text chunk and another compression: other bytes)."""
    for p in src.rglob("*.png"):
        q = dest / p.relative_to(src)
        q.parent.mkdir(parents=True, exist_ok=True)
        info = PngInfo()
        info.add_text("copy", "stored")
        Image.open(p).save(q, compress_level=9, pnginfo=info)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, suite_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("corrected")
    common = ["--suite", str(suite_dir), "--condition", COND, "--cache", str(root / "gen")]
    assert main(["run", *common, "--model", SIM, "--out", str(root / "first")]) == 0
    _copies(root / "first" / "images", root / "samples")
    out = root / "run"
    argv = ["run", *common, "--model", f"{SIM},{COPY}", "--samples", str(root / "samples")]
    assert main([*argv, "--out", str(out)]) == 0
    judge = NoisyJudge(LiteralJudge(), FLIPS, seed=20261206)
    with JudgeEndpoint(judge) as endpoint, endpoint.client() as client:
        evaluate_run(
            out,
            evaluators=["rules", "vlm"],
            judge=build_transport("openai-compatible:noisy", base_url=endpoint.url, client=client),
            judge_options=JudgeOptions(cache_dir=None, concurrency=1),
        )
    return out


@pytest.fixture(scope="module")
def scored(run: Path) -> tuple[ScoringInput, dict[str, object]]:
    inp = load_scoring_input(run)
    report, errors = correct_report(inp, score_input(inp, settings=SETTINGS), SETTINGS)
    assert errors is not None
    return inp, {"report": report, "errors": errors, "truth": true_scores(run, "vlm")}


@pytest.mark.parametrize("model", [COPY, SIM])
def test_the_corrected_global_recovers_the_truth(
    scored: tuple[ScoringInput, dict[str, object]], model: str
) -> None:
    _, got = scored
    report, truth = got["report"], got["truth"]
    row = next(r for r in report.scores if r.evaluator == "vlm" and r.model == model)  # type: ignore[attr-defined]
    true_global = truth[(model, COND)]["global"]  # type: ignore[index]
    assert row.global_score is not None and row.corrected is not None
    fixed = row.corrected.global_score
    assert fixed is not None and fixed.score is not None and fixed.reason is None
    assert abs(row.global_score.score - true_global) > 0.05, "the noise must matter"
    assert abs(fixed.score - true_global) <= 0.03
    assert fixed.ci_low is not None and fixed.ci_high is not None
    assert fixed.ci_low <= true_global <= fixed.ci_high
    # every metric has its corrected twin, and the rule checker has none
    assert set(row.corrected.dimensions) == set(row.dimensions)
    assert all(r.corrected is None for r in report.scores if r.evaluator == "rules")  # type: ignore[attr-defined]


def test_frames_without_an_oracle_never_measure_the_judge(
    scored: tuple[ScoringInput, dict[str, object]],
) -> None:
    inp, got = scored
    errors = got["errors"].evaluators[0]  # type: ignore[attr-defined]
    assert errors.oracle_models == [SIM] and errors.n_frames > 100
    assert errors.n_frames_without_oracle == errors.n_frames  # the copy's frames, left out
    # the copy answered "passed" everywhere: its raw score moves, the judge's error does not
    rows = copy.copy(inp.rows)
    lazy = [m == COPY and e == "vlm" for m, e in zip(rows.model, rows.evaluator, strict=True)]
    rows.verdict = ["passed" if x else v for x, v in zip(lazy, rows.verdict, strict=True)]
    rows.passed = [x or p for x, p in zip(lazy, rows.passed, strict=True)]
    tampered = dataclasses.replace(inp, rows=rows)
    oracle = Oracle.read(inp.root, set(rows.model))
    again = corrector_for(tampered, "vlm", oracle, SETTINGS).error
    assert again.labels == errors.labels
    assert again.sensitivity == errors.sensitivity and again.specificity == errors.specificity


def test_a_judge_that_does_not_look_is_not_correctable(
    scored: tuple[ScoringInput, dict[str, object]],
) -> None:
    """Every answer "passed" (a lazy judge): sensitivity 1, specificity 0, J = 0."""
    inp, _ = scored
    rows = copy.copy(inp.rows)
    vlm = [e == "vlm" for e in rows.evaluator]
    rows.verdict = ["passed" if x else v for x, v in zip(vlm, rows.verdict, strict=True)]
    rows.passed = [x or p for x, p in zip(vlm, rows.passed, strict=True)]
    lazy = dataclasses.replace(inp, rows=rows)
    report, errors = correct_report(lazy, score_input(lazy, settings=SETTINGS), SETTINGS)
    assert errors is not None and errors.evaluators[0].specificity == 0.0
    for r in report.scores:
        if r.evaluator == "vlm":
            assert r.corrected is not None and r.corrected.global_score is not None
            g = r.corrected.global_score
            assert g.score is None and g.ci_low is None and r.corrected.rank is None
            assert g.reason is not None and f"below {BOUND:g}" in g.reason


def test_the_counts_behind_the_correction_are_the_story_table(run: Path) -> None:
    """Summed over labels, the corrector's counts give the raw story table (the same rows,
    the same knock-on rule), so raw and corrected describe the same checks."""
    inp = load_scoring_input(run)
    cor = corrector_for(inp, "vlm", Oracle.read(run, set(inp.rows.model)), SETTINGS)
    table = inp.table("vlm")
    n = cor.corrector.counts.total.sum(axis=-1)
    k = cor.corrector.counts.passed.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(n > 0, k / n, np.nan)
    assert table.values.shape == raw.shape
    np.testing.assert_allclose(raw, table.values, equal_nan=True)
    assert build_story_table(inp.evaluator_rows("vlm")).values.shape == raw.shape


def test_score_and_compare_corrected_from_the_command_line(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "run"
    import shutil

    shutil.copytree(run, work)
    assert main(["score", str(work), "--resamples", "200"]) == 0
    plain = json.loads((work / "scores" / "scores.json").read_text())
    assert not any("corrected" in r for r in plain["scores"])  # unchanged without the flag
    capsys.readouterr()
    argv = ["score", str(work), "--evaluator", "vlm", "--corrected", "--resamples", "200"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "corrected for the judge's error" in out and "flat renders" in out
    data = json.loads((work / "scores" / "scores.json").read_text())
    fixed = [r["corrected"] for r in data["scores"]]
    assert len(fixed) == 2 and all(f["global_score"]["score"] is not None for f in fixed)
    assert (work / "scores" / "judge_error.json").is_file()
    assert (work / "scores" / "corrected_scores.csv").read_text().count("\n") > 20
    argv = ["compare", str(work), "--evaluator", "vlm", "--a", SIM, "--b", COPY, "--corrected"]
    assert main([*argv, "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "corrected" in out and "global" in out
    # scored again without the flag: no stale correction is left beside the scores
    assert main(["score", str(work), "--resamples", "200"]) == 0
    assert not (work / "scores" / "judge_error.json").exists()
    assert not (work / "scores" / "corrected_scores.csv").exists()
    capsys.readouterr()
    # the rule checker is no judge: a one-line error, no traceback
    assert main(["score", str(work), "--evaluator", "rules", "--corrected"]) != 0
    err = capsys.readouterr().err
    assert "no evaluator scored here has a judge model" in err and "Traceback" not in err
