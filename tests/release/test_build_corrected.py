"""A release built with ``--judge`` carries the judge's scores corrected for its own error
(issue 39): in scores.json, in scores/judge_error.*, and on the site beside the raw scores,
with the assumption stated where the numbers are. The judge is served over HTTP on
127.0.0.1: the literal judge, YES→NO 15 %, NO→YES 10 % (``NoisyJudge``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.validation.correct.noisy import NoisyJudge
from vsb.validation.reference_judges import LiteralJudge
from vsb.validation.sim_judge import JudgeServer

pytestmark = pytest.mark.slow


def test_a_judged_release_shows_raw_and_corrected(tmp_path: Path) -> None:
    from vsb.release.build import BuildConfig, build_release
    from vsb.release.manifest import load_manifest

    judge = NoisyJudge(LiteralJudge(), {"YES": 0.15, "NO": 0.10}, seed=39)
    with JudgeServer(judge) as server:
        cfg = BuildConfig(
            name="vC",
            out=tmp_path,
            models=("procedural-drift-mid", "procedural-sloppy"),
            conditions=("structured_memory",),
            judge="openai-compatible:noisy",
            base_url=server.url,
            judge_concurrency=1,
            paraphrase=False,
            implicit=False,
        )
        built = build_release(cfg)
    rel, site = built.release_dir, built.site_dir
    scores = json.loads((rel / "scores" / "scores.json").read_text())
    vlm = [r for r in scores["scores"] if r["evaluator"] == "vlm"]
    assert len(vlm) == 2 and all(
        "corrected" not in r for r in scores["scores"] if r["evaluator"] == "rules"
    )
    for r in vlm:
        fixed = r["corrected"]
        assert set(fixed) >= {
            "global_score",
            "adherence",
            "coherence",
            "conditional_coherence",
            "dimensions",
        }
        assert set(fixed["dimensions"]) == set(r["dimensions"])
        g = fixed["global_score"]
        assert g["score"] is not None and g["ci_low"] <= g["score"] <= g["ci_high"]
        # the noise pulls the raw score down; the correction lifts it
        assert g["score"] > r["global_score"]["score"] + 0.03
    files = {f.path for f in load_manifest(rel).files}
    assert {
        "scores/judge_error.json",
        "scores/judge_error.csv",
        "scores/corrected_scores.csv",
    } <= files
    errors = json.loads((rel / "scores" / "judge_error.json").read_text())
    assert errors["evaluators"][0]["n_frames_without_oracle"] == 0
    board = (site / "leaderboard" / "vlm.html").read_text()
    assert (
        "Corrected for the judge&#39;s own error" in board
        or "Corrected for the judge's own error" in board
    )
    assert "flat renders" in board and "judge_swap" in board and 'id="corrected"' in board
    assert 'class="table-wrap" tabindex="0" role="group"' in board
    model = (site / "models" / "procedural-sloppy.html").read_text()
    assert 'id="corrected"' in model and "flat renders" in model
    assert 'id="corrected"' not in (site / "index.html").read_text()  # the rule checker's board
    assert main(["release", "verify", str(rel)]) == 0


def test_a_judge_that_answers_from_the_story_is_not_correctable(tmp_path: Path) -> None:
    """The mock judge answers from the story, not the picture: specificity ≈ its error rate,
    J ≈ 0, so every corrected figure is null with its reason, on the page too."""
    from vsb.release.build import BuildConfig, build_release

    cfg = BuildConfig(
        name="vM", out=tmp_path, models=("procedural-drift-mid",), conditions=("independent",),
        judge="mock:0.05", paraphrase=False, implicit=False,
    )  # fmt: skip
    built = build_release(cfg)
    scores = json.loads((built.release_dir / "scores" / "scores.json").read_text())
    (row,) = [r for r in scores["scores"] if r["evaluator"] == "vlm"]
    g = row["corrected"]["global_score"]
    assert g["score"] is None and "not correctable" in g["reason"]
    board = (built.site_dir / "leaderboard" / "vlm.html").read_text()
    assert "not correctable" in board
