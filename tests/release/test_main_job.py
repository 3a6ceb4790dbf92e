"""The main job end to end on a reduced grid (two simulators × two conditions, the whole
default suite): a verified release, a site outside it, and a rerun that generates nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.release.build import BuildConfig, build_release
from vsb.release.manifest import load_manifest, verify

pytestmark = pytest.mark.slow


def test_reduced_main_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = BuildConfig(
        name="v0.0.9",
        out=tmp_path,
        workers=2,
        models=("procedural-oracle", "procedural-amnesiac"),
        conditions=("independent", "structured_memory"),
    )
    first = build_release(cfg)
    assert first.images == 2 * 2 * 210 and first.generated == first.images
    assert verify(first.release_dir) == []
    manifest = load_manifest(first.release_dir)
    assert manifest.release == "v0.0.9"
    assert any(p.startswith("oracle/") for p in manifest.excluded)
    assert not any("oracle" in f.path.split("/") for f in manifest.files)
    paths = {f.path for f in manifest.files}
    for need in ("scores/scores.json", "validation/judge.json", "evaluations/requirements.parquet",
                 "records.jsonl", "suite/suite.json"):  # fmt: skip
        assert need in paths
    for name in ("scores/scores.json", "validation/judge.json"):
        assert json.loads((first.release_dir / name).read_text())["run"]["release"] == "v0.0.9"
    index = first.index.read_text()
    assert "v0.0.9" in index and manifest.root_hash in index
    assert (first.site_dir / "stories" / "counting-hard" / "structured_memory.html").is_file()

    second = build_release(cfg)
    assert second.generated == 0 and second.cached == second.images
    assert {"evaluate", "score", "validate", "site"} <= set(second.skipped)
    assert second.manifest is not None and second.manifest.root_hash == manifest.root_hash
    assert main(["release", "verify", str(first.release_dir)]) == 0
    assert "ok: v0.0.9" in capsys.readouterr().out
