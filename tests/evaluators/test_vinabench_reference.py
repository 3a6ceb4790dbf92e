"""VinaBench's whole table from vsb (issue 47): FID and CLIP-I against the gold images
(``vsb evaluate --evaluator vinabench_ref``) and CLIP-T from the ``clip`` evaluator, in
``scores/vinabench.csv`` beside the VQA metrics' columns.

The fixture: three of VinaBench's annotation files imported with ``--constraints gold``, their
gold images and a model's images in VinaBench's ``annotations`` folder (``stored:mm --layout
vinabench`` and ``vinabench:gold``), a random-weight FID Inception (a state-dict file, read by
the real loading code) and a tiny random CLIP. The table's numbers must be
``reference_scores`` called directly on the pairs VinaBench's ``calculate_fid_clipi.py``
makes (a generated image and the gold image of the same sample and scene, per portion), and
the gold row, compared with itself, CLIP-I 1 and FID 0.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embed_helpers import save_tiny_clip
from PIL import Image
from reference_helpers import save_random_inception

from vsb.cli.main import main
from vsb.story.vinabench import gold_file, read_samples

FILES = sorted((Path(__file__).parent / "vinabench").glob("*.json"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("vinaref")
    suite = root / "suite"
    assert main(["suite", "import", *map(str, FILES), "--constraints", "gold",
                 "--out", str(suite)]) == 0  # fmt: skip
    annotations = root / "annotations"
    rng = np.random.default_rng(7)
    n = 0
    for f in FILES:
        for s in read_samples(f).values():
            for tid, link in enumerate(s.gold):
                n += 1
                for path in (annotations / gold_file(s.portion, link),
                             annotations / "mm" / f"{s.index}_{tid}.jpg"):  # fmt: skip
                    path.parent.mkdir(parents=True, exist_ok=True)
                    base = rng.integers(0, 256, size=3)
                    px = np.clip(base + rng.integers(-70, 70, size=(40, 56, 3)), 0, 255)
                    Image.fromarray(px.astype(np.uint8)).save(path)
    run = root / "run"
    assert main(["run", "--suite", str(suite), "--condition", "independent", "--model",
                 "stored:mm,vinabench:gold", "--samples", str(annotations), "--layout",
                 "vinabench", "--out", str(run), "--cache", str(root / "gen")]) == 0  # fmt: skip
    return {
        "run": run,
        "cache": root / "cache",
        "weights": save_random_inception(root / "random-inception.pth"),
        "clip": save_tiny_clip(root / "tiny-clip", ["a picture of a scene"]),
        "images": n,
    }


def _files() -> list[str]:
    return [a for f in FILES for a in ("--vinabench-file", str(f))]


def _table(run: Path) -> dict[tuple[str, str], dict[str, str]]:
    with (run / "scores" / "vinabench.csv").open(newline="") as fh:
        return {(r["model"], r["portion"]): r for r in csv.DictReader(fh)}


def _pairs(run: Path) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(model, portion) -> (image, gold image) of each scene, as VinaBench pairs them."""
    samples = read_samples(list(FILES))
    recs = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    gold = {(r["story_id"], r["scene"]): str(run / r["path"]) for r in recs
            if r["model"] == "vinabench:gold"}  # fmt: skip
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for r in sorted(recs, key=lambda r: (r["model"], r["story_id"], r["scene"])):
        key = (r["model"], samples[r["story_id"]].portion)
        out.setdefault(key, []).append((str(run / r["path"]), gold[(r["story_id"], r["scene"])]))
    return out


@pytest.mark.slow  # about 30 s of CPU on the random Inception (200 s on a loaded 2-core box)
def test_fid_and_clip_i_in_vinabenchs_table(built: dict[str, Any]) -> None:
    from vsb.evaluators.embed.cache import EmbeddingCache
    from vsb.evaluators.embed.inception import load_inception
    from vsb.evaluators.embed.reference import load_clip_i, reference_scores

    run, cache = built["run"], built["cache"]
    assert main(["evaluate", str(run), "--evaluator", "clip", "--clip-model",
                 str(built["clip"]), "--cache", str(cache)]) == 0  # fmt: skip
    assert main(["evaluate", str(run), "--evaluator", "vinabench_ref", *_files(),
                 "--fid-weights", str(built["weights"]), "--clip-i-model", str(built["clip"]),
                 "--batch-size", "4", "--cache", str(cache)]) == 0  # fmt: skip
    assert main(["score", str(run), "--evaluator", "vinabench"]) == 0
    table = _table(run)
    pairs = _pairs(run)
    assert set(table) == set(pairs)
    with EmbeddingCache(cache) as c:
        inception = load_inception(built["weights"])
        clip = load_clip_i(c, str(built["clip"]))
        for (model, portion), ps in sorted(pairs.items()):
            want = reference_scores(ps, inception, clip, c, batch_size=4)
            row = table[(model, portion)]
            assert float(row["clip_i"]) == pytest.approx(want.clip_i, abs=1e-6)
            assert float(row["fid"]) == pytest.approx(want.fid, rel=1e-6, abs=1e-6)
            assert row["fid_ci_low"] == row["fid_ci_high"] == ""  # a set statistic
            if model == "vinabench:gold":  # the gold images against themselves
                assert float(row["clip_i"]) == pytest.approx(1.0, abs=1e-6)
                assert abs(float(row["fid"])) < 1e-3
            else:
                assert float(row["fid"]) > 0 and float(row["clip_i"]) < 1
                lo, hi = float(row["clip_i_ci_low"]), float(row["clip_i_ci_high"])
                assert lo <= float(row["clip_i"]) <= hi
            # CLIP-T from the clip evaluator's signals (CLIP-T-MRR needs reference renders)
            assert row["clip_t"] != "" and row["clip_t_mrr"] == ""
            print(model, portion, len(ps), row["fid"], row["clip_i"], row["clip_t"])


def test_missing_extra_or_weights_is_one_line_before_any_work(
    built: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No Inception weights given and none in torch's hub cache (TORCH_HOME an empty folder),
    or no torch-fidelity: one line, exit status 1, nothing evaluated."""

    args = ["evaluate", str(built["run"]), "--evaluator", "vinabench_ref", *_files(),
            "--clip-i-model", str(built["clip"]), "--cache", str(tmp_path / "c")]  # fmt: skip
    evaluations = built["run"] / "evaluations"
    before = sorted(evaluations.iterdir()) if evaluations.is_dir() else []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TORCH_HOME", str(tmp_path / "torch"))
        assert main(args) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "FID Inception weights" in err, err
        real = importlib.util.find_spec  # torch-fidelity not installed, as the extra would be
        mp.setattr(
            importlib.util, "find_spec",
            lambda name, *a: None if name == "torch_fidelity" else real(name, *a),
        )  # fmt: skip
        assert main([*args, "--fid-weights", str(built["weights"])]) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "pip install 'vsb[fid]'" in err, err
    assert (sorted(evaluations.iterdir()) if evaluations.is_dir() else []) == before
