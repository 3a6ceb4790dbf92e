"""``clip_image_rr``: VinaBench's image-side ranking (the generated image among the reference
images nearest the scene text; ties to the generated image; 1 / (rank + 1)), with the run's
procedural-oracle renders as references, on a tiny random-weight CLIP."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embed_helpers import save_tiny_clip

from vsb.cli.main import main
from vsb.evaluators.embed.signals import image_reciprocal_rank
from vsb.generator.generate import write_suite
from vsb.story.io import load_suite
from vsb.story.models import Story
from vsb.tables import iter_rows

pytest.importorskip("torch")
pytest.importorskip("transformers")

ORACLE = "procedural-oracle"


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_image_rank_counts_only_strictly_nearer_references_among_the_nearest() -> None:
    text = _unit(1, 0)
    image = _unit(1, 1)  # cos 0.707 with the text
    nearer, farther = _unit(1, 0.2), _unit(0, 1)
    refs = np.stack([nearer, farther, farther])
    assert image_reciprocal_rank(text, image, refs, 100) == 0.5  # one nearer: rank 1
    # a reference exactly as near as the image: the tie goes to the generated image
    assert image_reciprocal_rank(text, image, np.stack([image.copy(), farther]), 100) == 1.0
    assert image_reciprocal_rank(text, image, np.stack([nearer, nearer.copy(), farther]), 5) == (
        pytest.approx(1 / 3)
    )
    # only the `pool` references nearest the text are candidates: here nearer and image-like
    refs = np.stack([farther, nearer, _unit(1, 0.9999), farther])
    assert image_reciprocal_rank(text, image, refs, 2) == pytest.approx(1 / 3)
    far = _unit(0, 1)  # as far from the text as `farther`: those two tie, in its favour
    assert image_reciprocal_rank(text, far, refs, 100) == pytest.approx(1 / 3)
    assert image_reciprocal_rank(text, far, refs, 1) == 0.5  # a pool of one: `nearer` only


def _signals(run: Path, name: str = "clip_image_rr") -> dict[tuple[Any, ...], float]:
    rows = [r for _, r in iter_rows(run / "evaluations" / "signals.parquet")]
    return {(r["model"], r["story_id"], r["scene"]): r["value"] for r in rows
            if r["signal"] == name}  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("imgrank")
    stories = [s for s in default_suite if s.difficulty != "hard"][::7][:3]
    write_suite(stories, root / "suite")
    run = root / "run"
    models = f"{ORACLE},procedural-amnesiac"
    argv = ["run", "--suite", str(root / "suite"), "--model", models, "--condition",
            "independent", "--out", str(run), "--cache", str(root / "g")]  # fmt: skip
    assert main(argv) == 0
    clip = save_tiny_clip(root / "clip", [sc.text for s in stories for sc in s.scenes])
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["evaluate", str(run), "--evaluator", "clip", "--clip-model", str(clip),
                     "--cache", str(root / "cache")]) == 0  # fmt: skip
    return {"root": root, "run": run, "clip": clip, "out": buf.getvalue()}


def test_every_frame_of_every_model_is_ranked_against_the_oracle_renders(
    world: dict[str, Any],
) -> None:
    run = world["run"]
    recs = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    frames = {(r["model"], r["story_id"], r["scene"]) for r in recs if r["error"] is None}
    got = _signals(run)
    assert set(got) == frames
    assert all(0 < v <= 1 and abs(1 / v - round(1 / v)) < 1e-9 for v in got.values())
    n_refs = len({r["sha256"] for r in recs if r["model"] == ORACLE and r["error"] is None})
    assert f"{n_refs} {ORACLE} reference images" in world["out"]


def test_values_match_a_direct_forward_pass(world: dict[str, Any]) -> None:
    import torch
    from PIL import Image
    from transformers import AutoModel, AutoProcessor

    run = world["run"]
    stories = {s.id: s for s in load_suite(run / "suite")}
    recs = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    refs = {r["sha256"]: r["path"] for r in recs if r["model"] == ORACLE and r["error"] is None}
    model = AutoModel.from_pretrained(str(world["clip"])).eval()
    proc = AutoProcessor.from_pretrained(str(world["clip"]))

    def images(paths: list[str]) -> np.ndarray:
        ims = [Image.open(run / p).convert("RGB") for p in paths]
        with torch.no_grad():
            px = proc.image_processor(images=ims, return_tensors="pt")["pixel_values"]
            v = model.visual_projection(model.vision_model(pixel_values=px).pooler_output)
        out = v.numpy().astype(np.float64)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    ref_vecs = images(sorted(refs.values()))
    got = _signals(run)
    checked = 0
    for rec in [r for r in recs if r["model"] != ORACLE and r["error"] is None][:6]:
        text = stories[rec["story_id"]].scenes[rec["scene"] - 1].text
        with torch.no_grad():
            tok = proc.tokenizer([text], padding=True, truncation=True, max_length=64,
                                 return_tensors="pt")  # fmt: skip
            t = model.text_projection(model.text_model(**tok).pooler_output)[0].numpy()
        t = t.astype(np.float64) / np.linalg.norm(t)
        own = float(images([rec["path"]])[0] @ t)
        nearest = np.sort(ref_vecs @ t)[-100:]  # fewer than 100 references here: all of them
        want = 1 / (1 + int((nearest > own + 1e-6).sum()))
        key = (rec["model"], rec["story_id"], rec["scene"])
        assert got[key] == pytest.approx(want), key
        checked += 1
    assert checked == 6


def test_references_do_not_depend_on_the_models_evaluated(
    world: dict[str, Any], tmp_path: Path
) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(world["run"], run)
    assert main(["evaluate", str(run), "--evaluator", "clip", "--clip-model", str(world["clip"]),
                 "--cache", str(world["root"] / "cache"), "--model",
                 "procedural-amnesiac"]) == 0  # fmt: skip

    def amnesiac(d: dict[tuple[Any, ...], float]) -> dict[tuple[Any, ...], float]:
        return {k: v for k, v in d.items() if k[0] == "procedural-amnesiac"}

    full = amnesiac(_signals(world["run"]))
    assert amnesiac(_signals(run)) == full and full


def test_without_oracle_renders_there_is_no_image_rank_and_the_cli_says_so(
    world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(world["run"], run)
    recs = (run / "records.jsonl").read_text().splitlines()
    kept = [x for x in recs if json.loads(x)["model"] != ORACLE]
    (run / "records.jsonl").write_text("\n".join(kept) + "\n")
    shutil.rmtree(run / "evaluations")
    capsys.readouterr()
    assert main(["evaluate", str(run), "--evaluator", "clip", "--clip-model", str(world["clip"]),
                 "--cache", str(world["root"] / "cache")]) == 0  # fmt: skip
    assert f"no clip_image_rr: no {ORACLE} images in the run" in capsys.readouterr().out
    assert _signals(run) == {} and _signals(run, "clip_rr")
