"""Issue 45, item 8: a model whose images are not renders, judged by the rule checker and a
VLM judge. ``vsb evaluate``, ``vsb score`` and the site give one reason for it, naming the
worst images (evaluate said 70 %, the share most images had, where score and the site said
100 %, the share most rows had); and the vlm board's "Not ranked by vlm" note lists only the
models vlm does not rank (it was the rules board's note, copied)."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stderr
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vsb.cli.main import main
from vsb.generator.generate import generate_suite, write_suite

#: Pixels off the palette per (story, scene) of stored:photo; every other image 51-56 %.
#: Most images (3 of 14-requirement scenes) are at 70 %, most rows (2 of 28) at 100 %.
OFF = {
    ("cause_effect-easy", 1): 0.7, ("cause_effect-easy", 2): 0.7, ("cause_effect-easy", 3): 0.7,
    ("cause_effect-hard", 1): 1.0, ("cause_effect-hard", 2): 1.0,
}  # fmt: skip
REASON = (
    "51–100% of pixels are off the palette, 100% in independent/cause_effect-hard/scene_01.png, "
    "independent/cause_effect-hard/scene_02.png"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The run, its site, and what ``vsb evaluate`` wrote to stderr."""
    root = tmp_path_factory.mktemp("not_ranked")
    suite = root / "suite"
    write_suite(generate_suite(0)[:2], suite, seed=0)
    assert [len(s.requirements) for s in generate_suite(0)[1].scenes][:2] == [28, 28]
    common = ["--suite", str(suite), "--cache", str(root / "cache"), "--workers", "1"]
    made = root / "made"
    assert main(["run", *common, "--model", "procedural-oracle", "--condition", "independent",
                 "--out", str(made)]) == 0  # fmt: skip
    src = made / "images" / "procedural-oracle" / "independent"
    others = iter(range(51, 57))
    for png in sorted(src.rglob("*.png")):
        key = (png.parent.name, int(png.stem.removeprefix("scene_")))
        off = OFF.get(key) or next(others) / 100
        rgb = np.asarray(Image.open(png).convert("RGB")).copy()
        rgb[: round(rgb.shape[0] * off)] = (13, 200, 77)  # a colour off the palette
        dest = root / "samples" / "photo" / "independent" / png.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rgb).save(dest)
    run = root / "run"
    argv = ["run", *common, "--model", "procedural-oracle,stored:photo", "--condition"]
    assert main([*argv, "independent", "--samples", str(root / "samples"), "--out", str(run)]) == 0
    err = io.StringIO()
    with redirect_stderr(err):
        argv = ["evaluate", str(run), "--evaluator", "rules,vlm", "--judge", "mock"]
        assert main([*argv, "--cache", str(root / "cache")]) == 0
    assert main(["score", str(run), "--resamples", "50"]) == 0
    from vsb.release.manifest import freeze
    from vsb.site.build import build_site

    release = root / "release"
    shutil.copytree(run, release)
    freeze(release, "v0.0.45")
    build_site(release, root / "site")
    return run, root / "site", err.getvalue()


def test_evaluate_score_and_the_site_give_one_reason_naming_the_worst_images(
    built: tuple[Path, Path, str],
) -> None:
    run, site, evaluate_err = built
    doc = json.loads((run / "scores" / "scores.json").read_text("utf-8"))
    (na,) = [n for n in doc["not_applicable"] if n["model"] == "stored:photo"]
    assert na["evaluator"] == "rules" and na["reason"] == REASON  # was "100% of pixels …"
    # was "(70% of pixels are off the palette)"
    assert f"stored:photo: 11 of 11 images are not renders ({REASON});" in evaluate_err
    board = (site / "index.html").read_text("utf-8")
    assert f"stored:photo ({REASON})" in board


def test_the_vlm_board_lists_only_models_vlm_does_not_rank(built: tuple[Path, Path, str]) -> None:
    run, site, _ = built
    doc = json.loads((run / "scores" / "scores.json").read_text("utf-8"))
    vlm = {r["model"] for r in doc["scores"] if r["evaluator"] == "vlm"}
    assert "stored:photo" in vlm
    assert not [n for n in doc["not_applicable"] if n["evaluator"] == "vlm"]
    rules = (site / "index.html").read_text("utf-8")
    assert "Not ranked by rules" in rules
    board = (site / "leaderboard" / "vlm.html").read_text("utf-8")
    assert "judged by vlm" in board
    assert "Not ranked by" not in board  # was the rules board's note, naming stored:photo
