"""A release built with a ``stored:`` model has the same bytes however often it is built in
place: the second build takes every image from the cache, and its records say what the first
build's said (cost 0.0 for a stored sample, not null fresh and 0.0 from the cache; issue 45,
item 7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from vsb.cli.main import main
from vsb.generator.generate import generate_suite, write_suite
from vsb.run.prompts import suite_prompts

CONDS = "independent,structured_memory"


def _build(tmp: Path, suite: Path) -> tuple[str, bytes]:
    build = ["release", "build", "mine", "--out", str(tmp / "b"), "--suite", str(suite)]
    build += ["--model", "stored:ext", "--samples", str(tmp / "samples")]
    assert main([*build, "--condition", CONDS, "--workers", "1"]) == 0
    rel = tmp / "b" / "mine" / "release"
    root = json.loads((rel / "MANIFEST.json").read_text())["root_hash"]
    return root, (rel / "records.jsonl").read_bytes()


def test_an_in_place_rebuild_with_a_stored_model_keeps_the_root_hash(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    write_suite(generate_suite(0, per_cell=1)[::11][:2], suite, seed=0)
    frames = tmp_path / "frames"
    args = ["run", "--suite", str(suite), "--condition", CONDS, "--model", "procedural-oracle"]
    assert main([*args, "--out", str(frames), "--cache", str(tmp_path / "c")]) == 0
    for row in suite_prompts(suite, CONDS.split(","), "ext"):
        if row.same_as is None:  # the outside pipeline: the oracle's frame for each request
            src = frames / "images" / "procedural-oracle" / row.path.removeprefix("ext/")
            (tmp_path / "samples" / row.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, tmp_path / "samples" / row.path)
    first_root, first = _build(tmp_path, suite)
    ours = [r for r in map(json.loads, first.splitlines()) if r["model"] == "stored:ext"]
    assert ours and {r["cost_usd"] for r in ours} == {0.0}
    again_root, again = _build(tmp_path, suite)
    assert again == first
    assert again_root == first_root
