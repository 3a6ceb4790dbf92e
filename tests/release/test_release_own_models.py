"""``vsb release build NAME --suite DIR --model NAME[,…] --samples DIR``: your suite and your
models published beside the five simulators, which stay as anchors (issue #36)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vsb.adapters.reader import READERS
from vsb.adapters.simulators import SIMULATORS
from vsb.cli.main import main
from vsb.generator.generate import generate_suite, write_suite
from vsb.run.prompts import suite_prompts

CONDS = "independent,structured_memory,previous_image"
PARK = (
    "In the park, in the morning; the weather is clear. Ama has light skin and short black "
    "hair, wears a red top, blue trousers and a hat, and is standing. A red umbrella, "
    "which is closed, is in Ama's hands.\n\nIn the park. A gust of wind catches the "
    "umbrella, so the umbrella is broken now. Ama is here.\n\nIn the park. Ama is waving now.\n"
)
PIPELINE = """
from PIL import Image

def make(req):
    return Image.new("RGB", (48, 48), (len(req.prompt) % 256, req.scene * 40 % 256, 0))
"""


def _suite(kind: str, tmp: Path) -> Path:
    if kind == "imported":  # vsb suite import (the mock LLM reads vsb's own sentences)
        (tmp / "park.txt").write_text(PARK, "utf-8")
        args = ["suite", "import", str(tmp / "park.txt"), "--llm", "mock"]
        assert main([*args, "--out", str(tmp / "suite"), "--cache", str(tmp / "icache")]) == 0
    else:  # vsb suite generate --per-cell 1 (three of its stories)
        write_suite(generate_suite(0, per_cell=1)[::11], tmp / "suite", seed=0)
    return tmp / "suite"


@pytest.mark.parametrize("kind", ["imported", "per_cell"])
def test_your_suite_and_models_on_the_board(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    suite = _suite(kind, tmp_path)
    # the outside pipeline: the oracle's frame for each distinct exported request
    oracle = tmp_path / "oracle-run"
    args = ["run", "--suite", str(suite), "--condition", CONDS, "--model", "procedural-oracle"]
    assert main([*args, "--out", str(oracle), "--cache", str(tmp_path / "c")]) == 0
    for row in suite_prompts(suite, CONDS.split(","), "ext"):
        if row.same_as is None:
            src = oracle / "images" / "procedural-oracle" / row.path.removeprefix("ext/")
            (tmp_path / "samples" / row.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, tmp_path / "samples" / row.path)
    (tmp_path / "mypipe.py").write_text(PIPELINE, "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    capsys.readouterr()
    build = ["release", "build", "mine", "--out", str(tmp_path / "b"), "--suite", str(suite)]
    build += ["--model", "stored:ext,python:mypipe:make", "--samples", str(tmp_path / "samples")]
    assert main([*build, "--condition", CONDS, "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert "suite variants are off" in err
    rel, site = tmp_path / "b" / "mine" / "release", tmp_path / "b" / "mine" / "site"
    manifest = json.loads((rel / "manifest.json").read_text())
    anchors = [*SIMULATORS, *READERS]  # the readers see only the prompt: no oracle
    assert manifest["models"] == [*anchors, "stored:ext", "python:mypipe:make"]
    assert manifest["oracle_models"] == list(SIMULATORS)  # the anchors validate the judges
    assert not (rel / "sensitivity").exists()  # the variants reword the default suite only
    scores = json.loads((rel / "scores" / "scores.json").read_text())
    ours = {r["condition"]: r for r in scores["scores"] if r["model"] == "stored:ext"}
    orc = {r["condition"]: r for r in scores["scores"] if r["model"] == "procedural-oracle"}
    assert set(ours) == set(CONDS.split(","))
    for c, row in ours.items():  # made from the oracle's frames: scored like the oracle
        assert row["global_score"] == orc[c]["global_score"], c
    judge = json.loads((rel / "validation" / "judge.json").read_text())
    assert set(judge["models_without_oracle"]) == {"stored:ext", "python:mypipe:make", *READERS}
    assert "stored:ext" not in (rel / "validation" / "verdicts.csv").read_text()
    # the site: leaderboard, a model page, the story pages
    index = (site / "index.html").read_text("utf-8")
    assert "stored:ext" in index and "python:mypipe:make" in index
    pages = list((site / "models").glob("stored-ext*.html"))
    assert len(pages) == 1 and "stored:ext" in pages[0].read_text("utf-8")
    story = json.loads((suite / "suite.json").read_text())["stories"][0]["id"]
    page = (site / "stories" / story / "independent.html").read_text("utf-8")
    assert "stored:ext" in page


def test_a_bad_suite_is_one_line_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "suite").mkdir()
    args = ["release", "build", "x", "--out", str(tmp_path / "b"), "--suite"]
    assert main([*args, str(tmp_path / "suite"), "--model", "stored:ext"]) == 1
    err = capsys.readouterr().err
    assert "no story files" in err and "Traceback" not in err
    assert not (tmp_path / "b" / "x" / "release").exists()


def test_the_summary_names_where_samples_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue 45, item 8: "568 images (595 generated, 21 from cache)" and no word of the 48
    requests that failed; the build says how many failed, under which model and condition."""
    write_suite(generate_suite(0)[:2], tmp_path / "suite", seed=0)
    args = ["run", "--suite", str(tmp_path / "suite"), "--model", "procedural-oracle"]
    made = tmp_path / "made"
    args += ["--condition", "independent", "--cache", str(tmp_path / "c")]
    assert main([*args, "--out", str(made)]) == 0
    shutil.copytree(made / "images" / "procedural-oracle", tmp_path / "samples" / "mine")
    capsys.readouterr()
    build = ["release", "build", "mine", "--out", str(tmp_path / "b"), "--no-paraphrase"]
    build += ["--suite", str(tmp_path / "suite"), "--model", "stored:mine", "--samples"]
    build += [str(tmp_path / "samples"), "--condition", "independent,structured_memory"]
    assert main([*build, "--no-implicit", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    records = (tmp_path / "b" / "mine" / "release" / "records.jsonl").read_text().splitlines()
    failed = [r for r in map(json.loads, records) if r["error"] is not None]
    assert failed and {(r["model"], r["condition"]) for r in failed} == {
        ("stored:mine", "structured_memory")
    }
    assert f"\n{len(failed)} failed: stored:mine under structured_memory ({len(failed)})\n" in out
