"""Images that are not renders (a real model's pictures, served from a folder) get
``not_applicable`` from the rule checker and pairwise, with one warning per model — never a
score — and ``vsb score`` names the evaluator to use instead; the VLM judge reads them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vsb.cli.main import main
from vsb.fsio import sha256_hex
from vsb.generator.generate import write_suite
from vsb.render import render_png
from vsb.story.models import Story
from vsb.tables import iter_rows


def _photo(rng: np.random.Generator, size: int = 512) -> bytes:
    """A photo-like image: smooth colour gradients, blurred blobs and sensor noise."""
    y, x = np.mgrid[0:size, 0:size] / size
    base = np.stack([np.sin(3 * x + rng.uniform(0, 6)), np.cos(2 * y + rng.uniform(0, 6)),
                     np.sin(x * y * 5)], axis=-1)  # fmt: skip
    img = 127 + 90 * base + rng.normal(0, 12, (size, size, 3))
    buf = io.BytesIO()
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def _make_run(root: Path, stories: list[Story]) -> Path:
    """A run of two models: true renders (``renders``) and photographs (``stored:photos``),
    in the layout ``vsb run`` writes (what ``--model stored`` serves is stored as PNG)."""
    write_suite(stories, root / "suite")
    rng = np.random.default_rng(11)
    records = []
    for model in ("renders", "stored:photos"):
        for story in stories:
            for scene in story.scenes:
                folder = model.replace(":", "_")
                rel = f"images/{folder}/independent/{story.id}/scene_{scene.index:02d}.png"
                if model == "renders":
                    png = render_png(scene.state, seed=scene.index)
                else:
                    buf = io.BytesIO()
                    Image.open(io.BytesIO(_photo(rng))).save(buf, format="PNG")
                    png = buf.getvalue()
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_bytes(png)
                records.append({
                    "model": model, "condition": "independent", "story_id": story.id,
                    "scene": scene.index, "key": rel, "path": rel, "sha256": sha256_hex(png),
                    "cache_hit": False, "latency_s": 0.0, "cost_usd": None, "error": None,
                })  # fmt: skip
    (root / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    manifest = {"version": "1.0", "suite": "suite", "models": ["renders", "stored:photos"],
                "conditions": ["independent"], "seed": 0, "images": len(records)}  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


@pytest.fixture
def photo_run(tmp_path: Path, default_suite: list[Story]) -> Path:
    return _make_run(tmp_path / "run", [s for s in default_suite if s.difficulty == "easy"][:3])


def _rows(run: Path, name: str) -> list[dict[str, object]]:
    return [r for _, r in iter_rows(run / "evaluations" / f"{name}.parquet")]


def test_photos_are_not_applicable_never_scored(
    photo_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(photo_run)]) == 0
    err = capsys.readouterr().err
    warnings = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "stored:photos" in warnings[0] and "not renders" in warnings[0]
    assert "--evaluator vlm" in warnings[0]
    rows = _rows(photo_run, "requirements")
    photos = [r for r in rows if r["model"] == "stored:photos"]
    renders = [r for r in rows if r["model"] == "renders"]
    assert photos and all(r["verdict"] == "not_applicable" and not r["passed"] for r in photos)
    assert renders and all(r["verdict"] == "passed" for r in renders)
    sig = [s for s in _rows(photo_run, "signals") if s["model"] == "stored:photos"]
    assert sig and all(s["value"] is None for s in sig)  # pairwise: no number on photos
    # scoring: the photos model is not ranked by the rule checker, and the message says why
    assert main(["score", str(photo_run), "--resamples", "200"]) == 0
    out = capsys.readouterr()
    assert "rules did not apply to stored:photos" in out.err and "vlm" in out.err
    scores = json.loads((photo_run / "scores" / "scores.json").read_text())
    assert {r["model"] for r in scores["scores"]} == {"renders"}
    assert [n["model"] for n in scores["not_applicable"]] == ["stored:photos"]


def test_the_judge_reads_photos_and_scores_them(
    photo_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(photo_run)]) == 0
    argv = ["evaluate", str(photo_run), "--evaluator", "vlm", "--judge", "mock:0.1",
            "--model", "stored:photos"]  # fmt: skip
    assert main(argv) == 0
    rows = _rows(photo_run, "requirements")
    vlm = [r for r in rows if r["evaluator"] == "vlm"]
    assert vlm and {r["model"] for r in vlm} == {"stored:photos"}
    assert {r["verdict"] for r in vlm} <= {"passed", "failed"}
    assert main(["score", str(photo_run), "--evaluator", "vlm", "--resamples", "200"]) == 0
    scores = json.loads((photo_run / "scores" / "scores.json").read_text())
    assert {(r["evaluator"], r["model"]) for r in scores["scores"]} == {("vlm", "stored:photos")}
    capsys.readouterr()
