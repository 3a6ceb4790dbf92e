"""``vsb release build --judge``: a release with a VLM judge pass beside the rule checker,
scored and validated per evaluator, with a leaderboard per evaluator and the judge swap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.cli.main import main

pytestmark = pytest.mark.slow


def test_release_with_a_judge_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vsb.release.build import BuildConfig, build_release

    cfg = BuildConfig(
        name="vJ",
        out=tmp_path,
        models=("procedural-oracle", "procedural-drift-mid", "procedural-amnesiac"),
        conditions=("independent",),
        judge="mock:0.05",
    )
    first = build_release(cfg)
    rel, site = first.release_dir, first.site_dir
    scores = json.loads((rel / "scores" / "scores.json").read_text())
    assert scores["evaluators"][0] == "rules" and "vlm" in scores["evaluators"]
    assert {r["evaluator"] for r in scores["scores"]} == {"rules", "vlm"}
    assert any(j["evaluator_b"] == "vlm" for j in scores["judge_swap"])
    judge = json.loads((rel / "validation" / "judge.json").read_text())
    assert [s["evaluator"] for s in judge["evaluators"]] == ["rules", "vlm"]
    assert (rel / "evaluations" / "judge_calls.jsonl").is_file()
    assert not (rel / "ledger.sqlite").exists()  # judge calls go to the run's ledger
    index = (site / "index.html").read_text()
    assert 'aria-label="Evaluator"' in index and "leaderboard/vlm.html" in index
    board = (site / "leaderboard" / "vlm.html").read_text()
    assert "judged by vlm" in board and "procedural-amnesiac" in board
    stability = (site / "stability.html").read_text()
    assert "rules vs vlm" in stability
    assert "vlm: recall and precision" in (site / "judge.html").read_text()
    # a rerun pays nothing and freezes the same release
    second = build_release(cfg)
    assert first.manifest is not None and second.manifest is not None
    assert second.manifest.root_hash == first.manifest.root_hash
    assert main(["release", "verify", str(rel)]) == 0
    capsys.readouterr()


def test_build_help_names_the_judge_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", "build", "--help"]) == 0
    out = capsys.readouterr().out
    for opt in ("--evaluator", "--judge", "--base-url", "--judge-batch", "--budget"):
        assert opt in out


def test_the_judge_page_shows_the_reference_judges(tmp_path: Path) -> None:
    """Issue 22: the literal and the useless judges (local simulations, no paid call) are
    validated during the build and shown as reference rows on the judge page."""
    from vsb.release.build import BuildConfig, build_release
    from vsb.release.manifest import load_manifest
    from vsb.validation.reference import REFERENCE_FILE, ReferenceReport

    cfg = BuildConfig(
        name="vR", out=tmp_path, models=("procedural-drift-mid",), conditions=("independent",),
        paraphrase=False, implicit=False,  # the suite variants, judged by rules only: not here
    )  # fmt: skip
    built = build_release(cfg)
    assert built.manifest is not None
    assert REFERENCE_FILE in {f.path for f in load_manifest(built.release_dir).files}
    ref = ReferenceReport.model_validate_json((built.release_dir / REFERENCE_FILE).read_text())
    rows = {r.judge: r.section.taxonomy[-1] for r in ref.judges}
    assert list(rows) == [
        "literal", "literal-drawn", "always-yes", "always-no", "always-unsure", "garbage",
    ]  # fmt: skip
    assert ref.n_frames == 210 and ref.models == ["procedural-drift-mid"]
    for name in ("literal", "literal-drawn"):
        assert (rows[name].recall or 0) > 0.95 and (rows[name].precision or 0) > 0.95
    assert (rows["always-yes"].recall or 0) < 0.1
    assert all((rows[n].precision or 0) < 0.2 for n in ("always-no", "always-unsure", "garbage"))
    page = (built.site_dir / "judge.html").read_text()
    assert 'id="reference-judges"' in page
    for name in rows:
        assert f"<tr><td>{name}</td>" in page
    csv = (built.site_dir / "data" / "judge" / "reference.csv").read_text()
    assert csv.count("\n") >= 6 and "always-yes" in csv
    # issue 34: per simulator, the worst label of each judge
    worst = (built.site_dir / "data" / "judge" / "reference_worst.csv").read_text()
    assert worst.splitlines()[0].startswith("judge,model,worst_label")
    assert worst.count("procedural-drift-mid") == len(rows)
    assert (
        'id="reference-worst-table"' in page and '<th scope="col">procedural-drift-mid</th>' in page
    )
