"""Issue #23 items 3 and 4: an image that cannot be read is that image's ``unreadable``
rows, never the end of ``vsb evaluate`` (scrambled pixel data with correct CRCs, a text
file, a header declaring 60000×60000 pixels, one over the pixel cap)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_evaluate import make_run

from tests.hostile_images import huge_header, scrambled_idat
from vsb.cli.main import main
from vsb.evaluators.evaluate import evaluate_run
from vsb.evaluators.vlm.transports import build_transport
from vsb.scores.compute import score_run
from vsb.scores.stats.bootstrap import Resampling
from vsb.story.models import Story
from vsb.tables import iter_rows

Image = tuple[str, str, str, int]


@pytest.fixture
def run(tmp_path: Path, default_suite: list[Story]) -> tuple[Path, list[Story]]:
    stories = [s for s in default_suite if s.difficulty != "hard"][:2]
    return make_run(tmp_path / "run", stories), stories


def _spoil(run: Path, stories: list[Story]) -> dict[Image, str]:
    """Three images made unreadable in three ways: image -> what the reason says."""
    spoilt: dict[Image, str] = {}
    targets = [(stories[0], 1), (stories[0], 3), (stories[1], 2)]
    kinds = ["broken data stream", "not an image file", "decompression bomb"]
    for (story, scene), kind in zip(targets, kinds, strict=True):
        path = run / f"images/truth/independent/{story.id}/scene_{scene:02d}.png"
        if kind == "broken data stream":
            path.write_bytes(scrambled_idat(path.read_bytes()))
        elif kind == "not an image file":
            path.write_text("this is not a picture\n")
        else:
            path.write_bytes(huge_header(60000, 60000))
        spoilt[("truth", "independent", story.id, scene)] = kind
    return spoilt


def _rows(run: Path, name: str = "requirements") -> list[dict]:
    return [r for _, r in iter_rows(run / "evaluations" / f"{name}.parquet")]


def _where(r: dict) -> Image:
    return (r["model"], r["condition"], r["story_id"], r["scene"])


@pytest.mark.parametrize("workers", [1, 2])
def test_unreadable_images_get_their_own_rows_and_the_pass_goes_on(
    run: tuple[Path, list[Story]], workers: int
) -> None:
    root, stories = run
    spoilt = _spoil(root, stories)
    result = evaluate_run(root, workers=workers)
    rows = _rows(root)
    n_req = sum(len(sc.requirements) for s in stories for sc in s.scenes)
    assert len(rows) == n_req  # one row per (image, requirement): none lost, none doubled
    for image, kind in spoilt.items():
        mine = [r for r in rows if _where(r) == image]
        scene = next(s for s in stories if s.id == image[2]).scenes[image[3] - 1]
        assert sorted(r["req_id"] for r in mine) == sorted(q.id for q in scene.requirements)
        assert {(r["verdict"], r["failure"], r["passed"]) for r in mine} == {
            ("unreadable", "unreadable", False)
        }
        assert all(kind in json.loads(r["observed"])["reason"] for r in mine)
        assert all(str(root) not in r["observed"] for r in mine)  # no path in a row
    others = [r for r in rows if _where(r) not in spoilt]
    assert others and all(r["verdict"] == "passed" for r in others)
    # no pairwise signal touches an unreadable frame
    assert not [s for s in _rows(root, "signals") if _where(s) in spoilt]
    assert any("3 of" in w and "cannot be read" in w for w in result.warnings)
    n_img = sum(len(s.scenes) for s in stories)
    manifest = json.loads((root / "evaluations/manifest.json").read_text())
    assert result.images == manifest["images"] == manifest["last"]["images"] == n_img


def test_unreadable_images_count_against_the_model_in_scores(
    run: tuple[Path, list[Story]],
) -> None:
    root, stories = run
    _spoil(root, stories)
    evaluate_run(root)
    report = score_run(root, settings=Resampling(n_resamples=20))
    (cell,) = [s for s in report.scores if s.evaluator == "rules"]
    n_img = sum(len(s.scenes) for s in stories)
    assert cell.coverage == pytest.approx((n_img - 3) / n_img)
    assert cell.adherence is not None and cell.adherence.score < 1.0


def test_cli_evaluate_exits_zero_and_says_which_images(
    run: tuple[Path, list[Story]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, stories = run
    _spoil(root, stories)
    assert main(["evaluate", str(root), "--workers", "2"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "cannot be read" in captured.out + captured.err
    assert main(["score", str(root)]) == 0


def test_a_judge_pass_alone_finds_unreadable_images(run: tuple[Path, list[Story]]) -> None:
    """The judge (and the embedding evaluators) never see an unreadable image: without a
    local pass the images are checked before any call is planned."""
    from vsb.evaluators.evaluate import plan_judge
    from vsb.evaluators.vlm.transports import build_transport
    from vsb.evaluators.vlm_judge import JudgeOptions

    root, stories = run
    before = plan_judge(root, build_transport("mock"), JudgeOptions(), evaluators=["vlm"])
    spoilt = _spoil(root, stories)
    judge = build_transport("mock")
    # the dry run counts only calls for images that can be read (one per scene here)
    after = plan_judge(root, judge, JudgeOptions(), evaluators=["vlm"])
    assert after.calls == before.calls - len(spoilt)
    evaluate_run(root, evaluators=["vlm", "vlm_xframe"], judge=judge)
    rows = _rows(root)
    bad = [r for r in rows if _where(r) in spoilt]
    assert bad and {(r["verdict"], r["evaluator"] in ("vlm", "vlm_xframe")) for r in bad} == {
        ("unreadable", True)
    }
    assert all(r["judge_model"] == judge.judge_model for r in bad)
    text = (root / "evaluations/judge_calls.jsonl").read_text()
    calls = [json.loads(x) for x in text.splitlines()]
    assert not [c for c in calls if _where(c) in spoilt]


def test_image_problem_checks_the_header_before_decoding(tmp_path: Path) -> None:
    from vsb.evaluators.render.decode import image_problem

    big = tmp_path / "big.png"
    big.write_bytes(huge_header(5000, 5000))  # under PIL's bomb limit, over vsb's cap
    assert image_problem(big) == "the image is 5000×5000 pixels, over the 4096×4096 cap"
    (tmp_path / "t.png").write_text("x")
    assert image_problem(tmp_path / "t.png") == "not an image file (no known image format)"
    from vsb.errors import InputError
    from vsb.evaluators.render.decode import decode_render, open_rgb

    for read in (open_rgb, decode_render):  # every decoder of evaluate has the same cap
        with pytest.raises(InputError, match="over the 4096×4096 cap") as err:
            read(big)
        assert err.value.file == str(big)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files ``image_problem`` decodes, in order."""
    import vsb.evaluators.render.decode as decode

    seen: list[str] = []
    real_open = decode._open
    monkeypatch.setattr(decode, "_open", lambda p: seen.append(str(p)) or real_open(p))
    return seen


def test_image_problem_decodes_a_file_once_until_it_is_replaced(
    tmp_path: Path, opened: list[str]
) -> None:
    import os

    from PIL import Image

    import vsb.evaluators.render.decode as decode

    path = tmp_path / "a.png"
    Image.new("RGB", (64, 48), "white").save(path)
    assert decode.image_problem(path) == decode.image_problem(str(path)) == ""
    assert len(opened) == 1  # asked twice, decoded once
    (tmp_path / "b.png").write_bytes(path.read_bytes()[:40])  # truncated
    os.replace(tmp_path / "b.png", path)  # a new file at the same path
    assert decode.image_problem(path) == "not an image file (no known image format)"
    assert len(opened) == 2
    path.unlink()
    assert decode.image_problem(path).startswith("cannot decode image")  # gone: asked again
    assert decode.image_problem(path).startswith("cannot decode image")
    assert len(opened) == 4


def test_image_problem_takes_a_hard_link_for_the_same_file(
    tmp_path: Path, opened: list[str]
) -> None:
    import os

    from PIL import Image

    import vsb.evaluators.render.decode as decode

    path = tmp_path / "a.png"
    Image.new("RGB", (64, 48), "white").save(path)
    os.link(path, tmp_path / "b.png")
    assert decode.image_problem(path) == decode.image_problem(tmp_path / "b.png") == ""
    assert len(opened) == 1


def test_unreadable_images_get_the_same_rows_whichever_evaluators_share_the_pass(
    run: tuple[Path, list[Story]], tmp_path: Path
) -> None:
    """Issue #40: with a later stage in the pass the images are checked while the run is read
    (before any item is planned), alone the frames stage finds them while it decodes; every
    evaluator's rows are the same either way."""
    import shutil

    root, stories = run
    _spoil(root, stories)
    apart = tmp_path / "apart"
    shutil.copytree(root, apart)
    judge = build_transport("mock")
    evaluate_run(root, evaluators=["rules", "pairwise", "vlm", "vlm_xframe"], judge=judge)
    evaluate_run(apart, evaluators=["rules", "pairwise"])
    evaluate_run(apart, evaluators=["vlm", "vlm_xframe"], judge=judge)

    def key(r: dict) -> tuple:
        return (r["evaluator"], *_where(r), r.get("req_id") or r.get("signal"))

    for name in ("requirements", "signals"):
        together, alone = _rows(root, name), _rows(apart, name)
        assert sorted(together, key=key) == sorted(alone, key=key)
    verdicts = {(r["evaluator"], r["verdict"]) for r in _rows(root)}
    assert {(e, "unreadable") for e in ("rules", "vlm", "vlm_xframe")} <= verdicts
