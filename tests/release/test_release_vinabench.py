"""A release built from imported VinaBench files has VinaBench's gold images
(``vinabench:gold``) and a model in VinaBench's inference layout (``stored:mm --layout
vinabench``) on its board (issue 47, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from vsb.cli.main import main
from vsb.story.vinabench import gold_file, read_samples

FILES = sorted((Path(__file__).parents[1] / "evaluators" / "vinabench").glob("*.json"))


def test_gold_and_vinabench_layout_on_the_board(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    assert main(["suite", "import", *map(str, FILES), "--constraints", "gold",
                 "--out", str(suite)]) == 0  # fmt: skip
    annotations = tmp_path / "annotations"  # VinaBench's folder: gold images, and a model's
    n = 0
    for f in FILES:
        for s in read_samples(f).values():
            for tid, link in enumerate(s.gold):
                n += 1
                for path in (annotations / gold_file(s.portion, link),
                             annotations / "mm" / f"{s.index}_{tid}.jpg"):  # fmt: skip
                    path.parent.mkdir(parents=True, exist_ok=True)
                    shade = n * 9 % 256 if path.parent.name == "mm" else 255 - n * 9 % 256
                    Image.new("RGB", (24, 24), (shade, 80, 120)).save(path)
    build = ["release", "build", "vb", "--out", str(tmp_path / "b"), "--suite", str(suite),
             "--model", "stored:mm,vinabench:gold", "--samples", str(annotations),
             "--layout", "vinabench", "--condition", "independent", "--workers", "1"]  # fmt: skip
    assert main(build) == 0
    rel, site = tmp_path / "b" / "vb" / "release", tmp_path / "b" / "vb" / "site"
    manifest = json.loads((rel / "manifest.json").read_text())
    assert {"stored:mm", "vinabench:gold"} <= set(manifest["models"])
    records = [json.loads(x) for x in (rel / "records.jsonl").read_text().splitlines()]
    for model in ("stored:mm", "vinabench:gold"):
        mine = [r for r in records if r["model"] == model]
        assert len(mine) == n and all(r["error"] is None for r in mine), model
    # not renders: the rule checker marks them not_applicable, and the board says so
    scores = json.loads((rel / "scores" / "scores.json").read_text())
    named = {x["model"] for x in scores["not_applicable"]}
    assert {"stored:mm", "vinabench:gold"} <= named
    index = (site / "index.html").read_text("utf-8")
    assert "stored:mm" in index and "vinabench:gold" in index
