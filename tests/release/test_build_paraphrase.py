"""``vsb release build --paraphrase``: the reworded suite is run and compared with the
release, the comparison is frozen into it and shown on the site; without the flag it goes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from vsb.release.build import BuildConfig, build_release
from vsb.release.manifest import load_manifest, verify
from vsb.release.stages import default_conditions
from vsb.scores.sensitivity import SENSITIVITY_FILE, SensitivityReport

pytestmark = pytest.mark.slow

CONDITIONS = ("structured_memory", "random_context")


def test_main_job_runs_the_placebo_beside_the_six_conditions() -> None:
    assert default_conditions() == [
        "independent", "previous_text", "structured_memory", "previous_image",
        "summarized_state", "full_context", "random_context", "predicted_memory",
    ]  # fmt: skip


def test_paraphrase_run_in_the_release(tmp_path: Path) -> None:
    cfg = BuildConfig(
        name="v0.0.8",
        out=tmp_path,
        workers=2,
        models=("procedural-amnesiac",),
        conditions=CONDITIONS,
        paraphrase=True,
    )
    first = build_release(cfg)
    assert first.images == 2 * 210 and "paraphrase" in first.seconds
    assert (tmp_path / "v0.0.8" / "run-paraphrase" / "records.jsonl").is_file()
    assert verify(first.release_dir) == []
    paths = {f.path for f in load_manifest(first.release_dir).files}
    assert {SENSITIVITY_FILE, "sensitivity/prompt_sensitivity.csv"} <= paths
    report = SensitivityReport.model_validate_json(
        (first.release_dir / SENSITIVITY_FILE).read_text()
    )
    assert report.cells == [f"procedural-amnesiac@{c}" for c in CONDITIONS]
    assert report.run_a.prompt_style == "plain" and report.run_b.prompt_style == "paraphrase"
    # a simulator reads the story's state, never its wording: the paraphrase moves nothing
    assert report.rows and all(r.diff == 0.0 for r in report.rows)
    assert all(r.n_stories == 40 for r in report.rows if r.metric_kind == "summary")
    page = (first.site_dir / "analysis.html").read_text()
    section = page.split('id="sensitivity"', 1)[1]
    assert "procedural-amnesiac" in section and "run-paraphrase" in section

    again = build_release(cfg)
    assert "paraphrase" in again.skipped and again.generated == 0
    assert again.manifest is not None and first.manifest is not None
    assert again.manifest.root_hash == first.manifest.root_hash

    plain = build_release(replace(cfg, paraphrase=False))
    assert not (plain.release_dir / "sensitivity").exists()
    assert SENSITIVITY_FILE not in {f.path for f in load_manifest(plain.release_dir).files}
    assert "This release has no paraphrase run" in (plain.site_dir / "analysis.html").read_text()
