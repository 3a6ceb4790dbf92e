"""``stored:SOURCE`` against hostile samples (issue #23 item 3: a sample that only looks like
an image) and a new folder under an old name (issue #22 item 13: the cache is keyed by the
sample's bytes, never by its name)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile_images import huge_header, scrambled_idat
from vsb.cli.main import main
from vsb.generator.generate import write_suite
from vsb.render import render_png
from vsb.story.models import Story


def _samples(root: Path, story: Story, *, seed: int) -> Path:
    """``root/model-x/independent/<story>/scene_kk.png``: renders of ``story`` (``seed``
    picks the renders, so two folders differ in their bytes)."""
    for scene in story.scenes:
        path = root / "model-x/independent" / story.id / f"scene_{scene.index:02d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render_png(scene.state, seed=seed + scene.index))
    return root


@pytest.fixture
def one_story(tmp_path: Path, default_suite: list[Story]) -> tuple[Path, Story]:
    story = next(s for s in default_suite if s.difficulty == "easy")
    write_suite([story], tmp_path / "suite")
    return tmp_path / "suite", story


def _run(suite: Path, samples: Path, out: Path, cache: Path) -> int:
    return main([
        "run", "--suite", str(suite), "--model", "stored:model-x", "--condition", "independent",
        "--samples", str(samples), "--out", str(out), "--cache", str(cache), "--workers", "1",
    ])  # fmt: skip


def _records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]


def test_a_new_samples_folder_under_the_same_name_is_never_served_old_images(
    tmp_path: Path, one_story: tuple[Path, Story]
) -> None:
    suite, story = one_story
    cache = tmp_path / "cache"
    a = _samples(tmp_path / "a", story, seed=100)
    b = _samples(tmp_path / "b", story, seed=200)
    assert _run(suite, a, tmp_path / "run_a", cache) == 0
    assert _run(suite, b, tmp_path / "run_b", cache) == 0
    for scene in story.scenes:
        rel = f"stored:model-x/independent/{story.id}/scene_{scene.index:02d}.png"
        served = (tmp_path / "run_b/images" / rel).read_bytes()
        assert served == (b / rel.removeprefix("stored:")).read_bytes()
    assert not any(r["cache_hit"] for r in _records(tmp_path / "run_b"))
    # the same folder again is all cache hits (the key is the content, which is unchanged)
    assert _run(suite, b, tmp_path / "run_c", cache) == 0
    assert all(r["cache_hit"] for r in _records(tmp_path / "run_c"))


@pytest.mark.parametrize("spoil", ["scrambled", "text", "bomb"])
def test_a_sample_that_does_not_decode_is_refused_per_image(
    tmp_path: Path,
    one_story: tuple[Path, Story],
    spoil: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite, story = one_story
    samples = _samples(tmp_path / "s", story, seed=1)
    bad = samples / "model-x/independent" / story.id / "scene_02.png"
    if spoil == "scrambled":  # opens and passes verify(): only decoding finds it
        bad.write_bytes(scrambled_idat(bad.read_bytes()))
    elif spoil == "text":
        bad.write_text("not a picture\n")
    else:
        bad.write_bytes(huge_header(60000, 60000))
    out = tmp_path / "run"
    assert _run(suite, samples, out, tmp_path / "cache") == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    recs = {r["scene"]: r for r in _records(out)}
    assert recs[2]["error"] and "scene_02.png" in recs[2]["error"]
    assert all(r["error"] is None for k, r in recs.items() if k != 2)
    assert not (out / f"images/stored:model-x/independent/{story.id}/scene_02.png").exists()
    # and the run evaluates: the refused image is a failed generation
    assert main(["evaluate", str(out), "--workers", "1"]) == 0
