"""Issue 45, item 8: a model whose samples are missing under a condition is not ranked there
(never ranked last at 0.000 from generation-failed rows alone); the board says why, and a story
page shows no "0/0 ✓" for an image no check applies to."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.generator.generate import generate_suite, write_suite


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """procedural-amnesiac under two conditions and stored:mine with samples for one alone
    (and no first scene, whose request is the same under both): no image under random_context."""
    root = tmp_path_factory.mktemp("missing")
    suite = root / "suite"
    write_suite(generate_suite(0)[:3], suite, seed=0)
    common = ["--suite", str(suite), "--cache", str(root / "cache"), "--workers", "1"]
    made = root / "made"
    assert main(["run", *common, "--model", "procedural-oracle", "--condition", "independent",
                 "--out", str(made)]) == 0  # fmt: skip
    for png in (made / "images" / "procedural-oracle" / "independent").rglob("*.png"):
        if png.name == "scene_01.png":  # the first scene's request is the same under both
            continue
        dest = (
            root
            / "samples"
            / "mine"
            / "independent"
            / png.relative_to(made / "images" / "procedural-oracle" / "independent")
        )
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, dest)
    run = root / "run"
    code = main(["run", *common, "--model", "procedural-amnesiac,stored:mine", "--condition",
                 "independent,random_context", "--samples", str(root / "samples"),
                 "--out", str(run)])  # fmt: skip
    assert code in (0, 3)
    assert main(["evaluate", str(run)]) == 0
    assert main(["score", str(run), "--resamples", "50"]) == 0
    return run


def test_a_model_without_samples_under_a_condition_is_not_ranked_there(run_dir: Path) -> None:
    doc = json.loads((run_dir / "scores" / "scores.json").read_text("utf-8"))
    ranked = {(r["model"], r["condition"]) for r in doc["scores"] if r["evaluator"] == "rules"}
    assert ("stored:mine", "independent") in ranked
    assert ("stored:mine", "random_context") not in ranked  # was ranked last at 0.000
    (na,) = [n for n in doc["not_applicable"] if n["model"] == "stored:mine"]
    assert na["conditions"] == ["random_context"] and "no readable image" in na["reason"]


def test_the_board_says_why_and_story_pages_show_no_empty_tally(
    run_dir: Path, tmp_path: Path
) -> None:
    from vsb.release.manifest import freeze
    from vsb.site.build import build_site

    release = tmp_path / "release"
    shutil.copytree(run_dir, release)
    freeze(release, "v0.0.45")
    build_site(release, tmp_path / "site")
    board = (tmp_path / "site" / "index.html").read_text("utf-8")
    assert "Not ranked by rules" in board and "no readable image under random_context" in board
    for page in (tmp_path / "site" / "stories").rglob("*.html"):
        assert "0/0" not in page.read_text("utf-8"), page
