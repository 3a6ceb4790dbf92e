"""The clip and dino evaluators end to end through the CLI, on a small simulated run, with
tiny random-weight models built from configs (tests/evaluators/embed_helpers.py)."""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import sys
from collections import defaultdict
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embed_helpers import CLIP_DIM, DINO_DIM, save_tiny_clip, save_tiny_dino

from vsb.cli.main import main
from vsb.evaluators.embed import models as embed_models
from vsb.evaluators.embed.signals import EmbedOptions, candidate_texts
from vsb.evaluators.registry import Frame, get_evaluator
from vsb.generator.generate import write_suite
from vsb.story.io import load_suite
from vsb.story.models import Story
from vsb.tables import iter_rows, write_signals

MODELS = "procedural-drift-mid,procedural-amnesiac"
SIGNALS = {"clip": ("clip_rr", "clip_text"), "dino": ("dino_first", "dino_prev")}


def _signals(run: Path) -> list[dict[str, Any]]:
    return [r for _, r in iter_rows(run / "evaluations" / "signals.parquet")]


def _embed(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], float]:
    return {
        (r["evaluator"], r["signal"], r["model"], r["condition"], r["story_id"], r["scene"]):
        r["value"] for r in rows if r["evaluator"] in SIGNALS
    }  # fmt: skip


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]


class World:
    """The shared run, the tiny models, and the signals and output of the first evaluation."""

    def __init__(self, root: Path, clip: Path, dino: Path) -> None:
        self.root, self.run, self.clip, self.dino = root, root / "run", clip, dino
        buf = io.StringIO()
        with redirect_stdout(buf):
            assert main(self.argv()) == 0
        self.first_out = buf.getvalue()
        self.first = _embed(_signals(self.run))

    def argv(self, cache: Path | None = None, *extra: str) -> list[str]:
        return ["evaluate", str(self.run), "--evaluator", "clip,dino", "--clip-model",
                str(self.clip), "--dino-model", str(self.dino), "--cache",
                str(cache or self.root / "cache"), "--batch-size", "8", *extra]  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> World:
    root = tmp_path_factory.mktemp("embed")
    stories = [s for s in default_suite if s.difficulty != "hard"][::5][:4]
    write_suite(stories, root / "suite")
    argv = ["run", "--suite", str(root / "suite"), "--model", MODELS, "--condition",
            "independent", "--out", str(root / "run"), "--cache", str(root / "g")]  # fmt: skip
    assert main(argv) == 0
    assert main(["evaluate", str(root / "run")]) == 0  # rules + pairwise, for score/validate
    texts = [sc.text for s in stories for sc in s.scenes]
    clip = save_tiny_clip(root / "clip", texts)
    dino = save_tiny_dino(root / "dino")
    return World(root, clip, dino)


def test_one_row_per_frame_and_signal(world: World) -> None:
    recs = [r for r in _records(world.run) if r["error"] is None]
    assert len(recs) >= 30
    got = world.first
    frames = {(r["model"], r["condition"], r["story_id"], r["scene"]) for r in recs}
    for ev, names in SIGNALS.items():
        for name in names:
            keys = {k[2:] for k in got if k[:2] == (ev, name)}
            want = frames if ev == "clip" else {f for f in frames if f[3] > 1}
            assert keys == want, (ev, name)
    for (_, name, *_), v in got.items():
        assert -1.0 - 1e-6 <= v <= 1.0 + 1e-6
        if name == "clip_rr":  # 1 / rank
            assert 0 < v <= 1 and abs(1 / v - round(1 / v)) < 1e-9
    # the other evaluators' rows were kept beside the new ones
    evs = {r["evaluator"] for r in _signals(world.run)}
    assert evs == {"pairwise", "clip", "dino"}
    n_img = len({r["sha256"] for r in recs})
    assert f"{n_img} images, {n_img} embedded, 0 cached" in world.first_out


def _load_clip(path: Path) -> tuple[Any, Any]:
    from transformers import AutoModel, AutoProcessor

    return AutoModel.from_pretrained(str(path)).eval(), AutoProcessor.from_pretrained(str(path))


def test_values_match_a_direct_forward_pass(world: World) -> None:
    """clip_text, clip_rr and dino_prev recomputed here with the model called directly."""
    import torch
    from PIL import Image
    from transformers import AutoImageProcessor, AutoModel

    stories = {s.id: s for s in load_suite(world.run / "suite")}
    recs = [r for r in _records(world.run) if r["error"] is None and r["scene"] in (2, 3)]
    rec = next(r for r in recs if r["scene"] == 3)
    prev = next(r for r in recs if r["scene"] == 2 and r["story_id"] == rec["story_id"]
                and r["model"] == rec["model"])  # fmt: skip
    img = Image.open(world.run / rec["path"]).convert("RGB")
    model, proc = _load_clip(world.clip)
    pool = candidate_texts(stories, rec["story_id"], 3, 100, 0)
    assert pool[0] == stories[rec["story_id"]].scenes[2].text
    with torch.no_grad():
        px = proc.image_processor(images=[img], return_tensors="pt")["pixel_values"]
        iv = model.vision_model(pixel_values=px).pooler_output
        iv = model.visual_projection(iv)[0].numpy().astype(np.float64)
        tok = proc.tokenizer(
            pool, padding=True, truncation=True, max_length=64, return_tensors="pt"
        )
        tv = model.text_model(**tok).pooler_output
        tv = model.text_projection(tv).numpy().astype(np.float64)
    assert iv.shape == (CLIP_DIM,) and tv.shape == (len(pool), CLIP_DIM)
    iv /= np.linalg.norm(iv)
    tv /= np.linalg.norm(tv, axis=1, keepdims=True)
    sims = tv @ iv
    key = (rec["model"], rec["condition"], rec["story_id"], 3)
    assert world.first[("clip", "clip_text", *key)] == pytest.approx(sims[0], abs=1e-5)
    rank = 1 + int((sims[1:] >= sims[0]).sum())
    assert world.first[("clip", "clip_rr", *key)] == pytest.approx(1 / rank)
    dmodel = AutoModel.from_pretrained(str(world.dino)).eval()
    dproc = AutoImageProcessor.from_pretrained(str(world.dino))
    pimg = Image.open(world.run / prev["path"]).convert("RGB")
    with torch.no_grad():
        out = dmodel(**dproc(images=[img, pimg], return_tensors="pt")).pooler_output.numpy()
    assert out.shape == (2, DINO_DIM)
    a, b = (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float64)
    assert world.first[("dino", "dino_prev", *key)] == pytest.approx(float(a @ b), abs=1e-5)


def test_rerun_computes_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[int] = []
    for meth in ("image_forward", "texts"):
        orig = getattr(embed_models.Encoder, meth)

        def counted(self: Any, *a: Any, _orig: Any = orig, **kw: Any) -> Any:
            calls.append(1)
            return _orig(self, *a, **kw)

        monkeypatch.setattr(embed_models.Encoder, meth, counted)
    assert main(world.argv()) == 0
    out = capsys.readouterr().out
    assert calls == []  # not one forward pass
    assert ", 0 embedded, " in out and "texts, 0 embedded" in out
    assert _embed(_signals(world.run)) == world.first


def test_cache_holds_unit_vectors_of_the_model_dimension(world: World) -> None:
    import sqlite3

    db = sqlite3.connect(world.root / "cache" / "embeddings.sqlite")
    try:
        rows = db.execute("SELECT model, kind, dim, data FROM vectors").fetchall()
    finally:
        db.close()
    dims = {(m.split(":")[0], kind, dim) for m, kind, dim, _ in rows}
    assert dims == {
        ("dir", "image", CLIP_DIM),
        ("dir", "text", CLIP_DIM),
        ("dir", "image", DINO_DIM),
    }
    for *_, data in rows:
        assert np.linalg.norm(np.frombuffer(data, dtype="<f4")) == pytest.approx(1.0, abs=1e-5)


def test_fresh_cache_gives_identical_values(world: World, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(world.run, run)
    argv = world.argv(tmp_path / "c2")
    argv[1] = str(run)
    assert main(argv) == 0
    assert _embed(_signals(run)) == world.first


def test_other_weights_are_embedded_anew(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stories = load_suite(world.run / "suite")
    clip2 = save_tiny_clip(tmp_path / "clip2", [sc.text for s in stories for sc in s.scenes], 1)
    run = tmp_path / "run"
    shutil.copytree(world.run, run)
    capsys.readouterr()
    argv = ["evaluate", str(run), "--evaluator", "clip", "--clip-model", str(clip2),
            "--cache", str(world.root / "cache")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert " 0 embedded" not in out.split("; ")[0]
    new = _embed(_signals(run))
    clip_keys = [k for k in new if k[1] == "clip_text"]
    assert all(new[k] != world.first[k] for k in clip_keys)
    assert {k: v for k, v in new.items() if k[0] == "dino"} == {
        k: v for k, v in world.first.items() if k[0] == "dino"
    }  # dino rows kept


def test_mrr_in_scores(world: World) -> None:
    assert main(["score", str(world.run), "--resamples", "300"]) == 0
    scores = json.loads((world.run / "scores" / "scores.json").read_text())
    mrr = [s for s in scores["signals"] if s["signal"] == "clip_rr"]
    assert {(s["model"], s["condition"]) for s in mrr} == {
        ("procedural-drift-mid", "independent"), ("procedural-amnesiac", "independent"),
    }  # fmt: skip
    per_story: dict[tuple[str, str], list[float]] = defaultdict(list)
    for k, v in world.first.items():
        if k[1] == "clip_rr":
            per_story[(k[2], k[4])].append(v)
    for s in mrr:
        story_means = [np.mean(v) for (m, _), v in per_story.items() if m == s["model"]]
        assert s["score"] == pytest.approx(np.mean(story_means))
        assert s["n_stories"] == 4
        assert s["ci_low"] <= s["score"] <= s["ci_high"]
    csv_text = (world.run / "scores" / "signals.csv").read_text()
    assert csv_text.startswith("evaluator,signal,model,condition,score,ci_low,ci_high")
    assert sum(",clip_rr," in line for line in csv_text.splitlines()) == 2


def test_validate_judge_includes_the_signals(world: World) -> None:
    assert main(["validate-judge", str(world.run)]) == 0
    judge = json.loads((world.run / "validation" / "judge.json").read_text())
    aurocs = {(a["evaluator"], a["signal"]): a for a in judge["auroc"]}
    corr = {(c["evaluator"], c["signal"]) for c in judge["correlations"]}
    for ev, names in SIGNALS.items():
        for name in names:
            assert (ev, name) in aurocs and (ev, name) in corr
            assert aurocs[(ev, name)]["auroc"] is not None
            assert aurocs[(ev, name)]["n_faulty"] > 0


def test_per_story_evaluator_agrees_with_the_batched_phase(world: World) -> None:
    stories = {s.id: s for s in load_suite(world.run / "suite")}
    recs = [r for r in _records(world.run) if r["model"] == "procedural-amnesiac"]
    sid = recs[0]["story_id"]
    frames = [
        Frame(r["model"], r["condition"], sid, r["scene"], None, path=str(world.run / r["path"]),
              is_render=False)
        for r in recs if r["story_id"] == sid
    ]  # fmt: skip
    opts = EmbedOptions(clip_model=str(world.clip), dino_model=str(world.dino),
                        cache_dir=world.root / "cache")  # fmt: skip
    for ev in SIGNALS:
        out = get_evaluator(ev, opts).evaluate_story(stories[sid], frames)
        got = _embed(out.signals)
        assert got and all(
            v == pytest.approx(world.first[k], abs=1e-6) for k, v in got.items()
            if k[1] != "clip_rr"  # only this story's scenes are negatives here
        )  # fmt: skip


def _one_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(argv) != 0
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cap.err, cap.err
    return lines[0]


def test_missing_hub_weights_name_what_to_download(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = (world.run / "evaluations" / "signals.parquet").read_bytes()
    argv = ["evaluate", str(world.run), "--evaluator", "rules,clip", "--clip-model",
            "openai/clip-vit-base-patch32", "--cache", str(tmp_path / "c")]  # fmt: skip
    line = _one_error(argv, capsys)
    assert "hf download openai/clip-vit-base-patch32" in line
    assert str(tmp_path / "hf" / "hub") in line and "--clip-model DIR" in line
    assert (world.run / "evaluations" / "signals.parquet").read_bytes() == before


def test_not_a_model_directory(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    argv = ["evaluate", str(world.run), "--evaluator", "dino", "--dino-model",
            str(tmp_path / "empty")]  # fmt: skip
    assert "not a model directory (no config.json)" in _one_error(argv, capsys)
    argv = ["evaluate", str(world.run), "--evaluator", "clip", "--clip-model", str(world.dino),
            "--cache", str(tmp_path / "c")]  # fmt: skip
    assert "not a CLIP-style model" in _one_error(argv, capsys)


def test_without_the_extra_it_says_what_to_install(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    line = _one_error(world.argv(), capsys)
    assert "pip install 'vsb[embed]'" in line and "clip evaluator" in line


def test_unavailable_device(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if not torch.cuda.is_available():
        device, word = "cuda", "CUDA"
    elif not torch.backends.mps.is_available():
        device, word = "mps", "MPS"
    else:  # pragma: no cover
        pytest.skip("every device is available")
    line = _one_error(world.argv(None, "--device", device), capsys)
    assert f"torch sees no {word} device" in line


def test_model_option_without_its_evaluator(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["evaluate", str(world.run), "--clip-model", str(world.clip)]) == 2
    assert "--clip-model is only used by the clip evaluator" in capsys.readouterr().err


def test_an_unreadable_image_gets_no_embedding_and_the_pass_goes_on(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #23 item 3: an image that does not decode used to stop the pass (exit 1, no
    signals); now that frame has no clip/dino rows and every other frame keeps its values."""
    run = tmp_path / "run"
    shutil.copytree(world.run, run)
    rec = _records(run)[5]
    (run / rec["path"]).write_bytes(b"\x89PNG\r\n\x1a\n broken")
    argv = world.argv(tmp_path / "c")
    argv[1] = str(run)
    capsys.readouterr()
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err and "cannot be read" in cap.out + cap.err
    got = _embed(_signals(run))
    where = (rec["model"], rec["condition"], rec["story_id"], rec["scene"])
    assert got and not [k for k in got if k[2:] == where]
    assert all(world.first[k] == pytest.approx(v) for k, v in got.items())
    # what is missing is that frame's rows and the pairs it anchors, in its own story only
    missing = set(world.first) - set(got)
    assert {k for k in missing if k[2:] == where} and all(k[2:5] == where[:3] for k in missing)


def _script() -> Any:
    path = Path(__file__).resolve().parents[2] / "scripts" / "embed_release.py"
    spec = importlib.util.spec_from_file_location("embed_release", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_embed_release_script_on_a_release_build(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A frozen release gets the signals, a fresh validation and a new freeze that verifies
    (the script used to be refused by vsb evaluate's frozen-release guard)."""
    release = tmp_path / "build" / "release"
    shutil.copytree(world.run, release)
    write_signals(release / "evaluations" / "signals.parquet", [])
    assert main(["validate-judge", str(release)]) == 0
    assert main(["release", "freeze", str(release), "--name", "v9"]) == 0
    old = json.loads((release / "MANIFEST.json").read_text())["root_hash"]
    capsys.readouterr()
    status = _script().main([str(tmp_path / "build"), "--clip-model", str(world.clip),
                             "--dino-model", str(world.dino), "--cache",
                             str(world.root / "cache")])  # fmt: skip
    assert status == 0
    cap = capsys.readouterr()
    assert "0 embedded" in cap.out and f"frozen again as v9: root hash {old} -> " in cap.err
    assert _embed(_signals(release)) == world.first
    assert "clip" in (release / "validation" / "judge.json").read_text()
    assert main(["release", "verify", str(release)]) == 0
    assert json.loads((release / "MANIFEST.json").read_text())["root_hash"] != old


def test_embed_release_script_leaves_a_release_as_it_was_when_evaluation_fails(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release = tmp_path / "release"
    shutil.copytree(world.run, release)
    assert main(["release", "freeze", str(release), "--name", "v9"]) == 0
    before = (release / "MANIFEST.json").read_bytes()
    capsys.readouterr()
    status = _script().main([str(release), "--clip-model", str(tmp_path / "no-such-model")])
    assert status != 0
    assert (release / "MANIFEST.json").read_bytes() == before
    assert main(["release", "verify", str(release)]) == 0


def test_the_site_judge_page_lists_the_signals(world: World, tmp_path: Path) -> None:
    rel = tmp_path / "rel"
    shutil.copytree(world.run, rel, ignore=shutil.ignore_patterns("scores", "validation"))
    assert main(["score", str(rel), "--resamples", "100"]) == 0
    assert main(["validate-judge", str(rel)]) == 0
    assert main(["release", "freeze", str(rel), "--name", "embed-test"]) == 0
    assert main(["site", "build", str(rel), "--out", str(tmp_path / "site")]) == 0
    page = (tmp_path / "site" / "judge.html").read_text()
    for names in SIGNALS.values():
        for name in names:
            assert page.count(f">{name}<") == 2, name  # the AUROC and the correlation tables
