"""The VLM judge's rows through validation, end to end: a real simulator run judged by
``vsb evaluate --evaluator vlm`` against the simulated OpenAI-compatible judge
(vsb.validation.sim_judge), then ``validate_run`` / ``vsb validate-judge``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.generator.generate import write_suite
from vsb.story.models import Story
from vsb.validation.judge import validate_run
from vsb.validation.models import JudgeReport
from vsb.validation.sim_judge import SimJudgeServer

pytestmark = pytest.mark.slow
MODELS = "procedural-drift-mid,procedural-amnesiac"


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    """Two simulators × independent on ten stories, evaluated by the rule checker."""
    root = tmp_path_factory.mktemp("simvlm")
    write_suite([s for s in default_suite if s.difficulty != "hard"][::3][:10], root / "suite")
    argv = ["run", "--suite", str(root / "suite"), "--model", MODELS, "--condition",
            "independent", "--out", str(root / "run"), "--cache", str(root / "g")]  # fmt: skip
    assert main(argv) == 0
    assert main(["evaluate", str(root / "run")]) == 0
    return root / "run"


def _judged(base: Path, error_rate: float) -> Path:
    run = base.parent / f"judged-{error_rate}"
    if not run.exists():
        shutil.copytree(base, run)
        with SimJudgeServer(run, error_rate=error_rate, seed=3) as server:
            argv = ["evaluate", str(run), "--evaluator", "vlm", "--judge",
                    "openai-compatible:sim", "--base-url", server.url,
                    "--cache", str(base.parent / f"c-{error_rate}")]  # fmt: skip
            assert main(argv) == 0
    return run


@pytest.fixture(scope="module")
def perfect(base_run: Path) -> JudgeReport:
    return validate_run(_judged(base_run, 0.0))


@pytest.fixture(scope="module")
def noisy(base_run: Path) -> JudgeReport:
    return validate_run(_judged(base_run, 0.2))


def test_a_judge_that_answers_from_the_oracle_is_perfect_strictly(perfect: JudgeReport) -> None:
    assert [s.evaluator for s in perfect.evaluators] == ["rules", "vlm"]
    vlm = perfect.section("vlm")
    assert vlm.judge_model == "openai-compatible:sim"
    assert vlm.taxonomy[-1].n_faults > 100
    for t in vlm.taxonomy:
        assert t.recall in (None, 1.0) and t.precision in (None, 1.0), t
    assert (vlm.pass_rate.evaluator, vlm.pass_rate.signal) == ("vlm", "vlm_pass_rate")
    assert vlm.pass_rate.auroc == perfect.section("rules").pass_rate.auroc == 1.0
    assert vlm.verdicts.n_checks == perfect.section("rules").verdicts.n_checks


def test_a_noisy_judge_loses_strict_recall_and_precision(
    noisy: JudgeReport, perfect: JudgeReport
) -> None:
    vlm = noisy.section("vlm").taxonomy[-1]
    assert vlm.recall is not None and vlm.precision is not None
    assert vlm.recall < 0.95 and vlm.precision < 0.9
    assert vlm.recall_root_cause is not None and vlm.recall_root_cause >= vlm.recall
    auroc = noisy.section("vlm").pass_rate.auroc
    assert auroc is not None and 0.6 < auroc < 1.0
    # another evaluator's rows leave the rule checker's section as it was
    assert noisy.section("rules") == perfect.section("rules")


def test_cli_filter_on_a_judged_run(
    base_run: Path, noisy: JudgeReport, capsys: pytest.CaptureFixture
) -> None:
    assert main(["validate-judge", str(_judged(base_run, 0.2)), "--evaluator", "vlm"]) == 0
    out = capsys.readouterr().out
    assert "evaluator vlm (openai-compatible:sim)" in out and "evaluator rules" not in out
