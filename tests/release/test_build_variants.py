"""The main job's suite variants: the paraphrased suite (prompt sensitivity) and the
implicit-effect stories (inference vs memory) are run and compared with the release by
default, frozen into it and shown on the site; ``--no-paraphrase`` / ``--no-implicit`` (the
config's ``paraphrase`` / ``implicit``) take each out again."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from vsb.release.build import BuildConfig, build_release
from vsb.release.manifest import load_manifest, verify
from vsb.release.stages import default_conditions
from vsb.scores.implicit import IMPLICIT_FILE, ImplicitReport
from vsb.scores.sensitivity import SENSITIVITY_FILE, SensitivityReport

pytestmark = pytest.mark.slow

MODEL = "procedural-amnesiac"
CONDITIONS = ("independent", "structured_memory")
IMPLICIT_SCENES = 116  # the scenes of the 18 default stories with a causal link


def test_main_job_runs_the_placebo_beside_the_six_conditions() -> None:
    assert default_conditions() == [
        "independent", "previous_text", "structured_memory", "previous_image",
        "summarized_state", "full_context", "random_context", "predicted_memory",
    ]  # fmt: skip


def test_variants_in_the_release(tmp_path: Path) -> None:
    cfg = BuildConfig(
        name="v0.0.8", out=tmp_path, workers=2, models=(MODEL,), conditions=CONDITIONS
    )
    assert cfg.paraphrase and cfg.implicit  # on by default
    first = build_release(cfg)
    assert first.images == 2 * 210
    assert first.variant_images == 210 + 2 * IMPLICIT_SCENES
    assert {"paraphrase", "implicit"} <= set(first.seconds)
    root = tmp_path / "v0.0.8"
    for run in ("run-paraphrase", "run-implicit"):
        assert (root / run / "records.jsonl").is_file()
    assert verify(first.release_dir) == []
    paths = {f.path for f in load_manifest(first.release_dir).files}
    assert {SENSITIVITY_FILE, "sensitivity/prompt_sensitivity.csv", IMPLICIT_FILE,
            "sensitivity/implicit_effects.csv"} <= paths  # fmt: skip

    sens = SensitivityReport.model_validate_json((first.release_dir / SENSITIVITY_FILE).read_text())
    assert sens.cells == [f"{MODEL}@independent"]
    assert sens.run_a.prompt_style == "plain" and sens.run_b.prompt_style == "paraphrase"
    # a simulator reads the story's state, never its wording: the paraphrase moves nothing
    assert sens.rows and all(r.diff == 0.0 for r in sens.rows)
    assert all(r.n_stories == 40 for r in sens.rows if r.metric_kind == "summary")

    imp = ImplicitReport.model_validate_json((first.release_dir / IMPLICIT_FILE).read_text())
    assert imp.run_b.prompt_style == "implicit" and imp.inferred_requirements == 68
    assert [(r.model, r.condition) for r in imp.rows] == [(MODEL, c) for c in CONDITIONS]
    for r in imp.rows:
        # common random numbers: an implicit image differs only where an inference was
        # missed, so the implicit pass rate can only be lower
        assert r.implicit_pass <= r.explicit_pass and r.n_checks == 68
    assert min(r.diff for r in imp.rows) < 0

    page = (first.site_dir / "analysis.html").read_text()
    section = page.split('id="sensitivity"', 1)[1].split('id="implicit"', 1)
    assert MODEL in section[0] and "run-paraphrase" in section[0]
    assert MODEL in section[1] and "run-implicit" in section[1] and "inferred" in section[1]
    board = (first.site_dir / "index.html").read_text()
    assert '<input type="checkbox" value="implicit">' in board  # a column, off by default
    assert board.count('data-col="implicit"') == 1 + 2  # the header and one cell per row

    again = build_release(cfg)
    assert {"paraphrase", "implicit"} <= set(again.skipped) and again.generated == 0
    assert again.variant_images == first.variant_images
    assert again.manifest is not None and first.manifest is not None
    assert again.manifest.root_hash == first.manifest.root_hash

    no_implicit = build_release(replace(cfg, implicit=False))
    files = {f.path for f in load_manifest(no_implicit.release_dir).files}
    assert SENSITIVITY_FILE in files and IMPLICIT_FILE not in files
    assert "no implicit-effects run" in (no_implicit.site_dir / "analysis.html").read_text()
    assert 'data-col="implicit"' not in (no_implicit.site_dir / "index.html").read_text()

    plain = build_release(replace(cfg, paraphrase=False, implicit=False))
    assert not (plain.release_dir / "sensitivity").exists()
    assert SENSITIVITY_FILE not in {f.path for f in load_manifest(plain.release_dir).files}
    assert "This release has no paraphrase run" in (plain.site_dir / "analysis.html").read_text()
