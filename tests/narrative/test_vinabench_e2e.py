"""A suite imported from VinaBench's files with gold constraints runs end to end (issue #37):
``vsb suite validate``, ``vsb suite prompts``, the images made outside and served by
``vsb run --model stored:``, ``vsb evaluate --evaluator vlm`` against a judge server on
127.0.0.1, ``vsb score``. The judge's questions for free-text facts name them as written."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from vsb.cli.main import main

sys.path.insert(0, str(Path(__file__).parents[1] / "evaluators"))
from judge_http import JudgeHttpServer, say

FILES = sorted((Path(__file__).parent / "vinabench").glob("*.json"))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gold suite, its prompts exported, an image made for each, run through stored:."""
    root = tmp_path_factory.mktemp("vina")
    suite = root / "suite"
    assert main(["suite", "import", *map(str, FILES), "--constraints", "gold",
                 "--out", str(suite)]) == 0  # fmt: skip
    assert main(["suite", "validate", str(suite)]) == 0
    prompts = root / "prompts.jsonl"
    assert main(["suite", "prompts", str(suite), "--condition", "independent", "--out",
                 str(prompts), "--source", "outside"]) == 0  # fmt: skip
    rows = [json.loads(x) for x in prompts.read_text("utf-8").splitlines()]
    assert len(rows) == 4 + 3 + 5 + 9 + 9 + 3
    for i, r in enumerate(rows):
        assert r["prompt"] == r["scene_text"]  # independent: the scene text as written
        dest = root / "samples" / r["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (48, 48), (i * 7 % 256, 90, 160)).save(dest)
    run = root / "run"
    assert main(["run", "--suite", str(suite), "--condition", "independent", "--model",
                 "stored:outside", "--samples", str(root / "samples"), "--out", str(run),
                 "--cache", str(root / "cache")]) == 0  # fmt: skip
    return run


def _evaluate(run: Path, word: str, cache: Path) -> tuple[pd.DataFrame, list[str]]:
    asked: list[str] = []

    def answer(questions: list[str]) -> str:
        asked.extend(questions)
        return say(word)(questions)

    with JudgeHttpServer(answer) as judge:
        code = main(["evaluate", str(run), "--evaluator", "vlm", "--judge",
                     "openai-compatible:fake", "--base-url", judge.url, "--cache",
                     str(cache)])  # fmt: skip
    assert code == 0
    rows = pd.read_parquet(run / "evaluations" / "requirements.parquet")
    return rows[rows["evaluator"] == "vlm"], asked


@pytest.mark.parametrize("word", ["YES", "NO"])
def test_gold_suite_runs_evaluates_and_scores(served: Path, tmp_path: Path, word: str) -> None:
    rows, asked = _evaluate(served, word, tmp_path / "cache")
    assert len(rows) > 0 and set(rows["verdict"]) <= {"passed", "failed"}
    absent = rows["attribute"] == "absent"
    assert absent.any()
    # a judge that says YES to everything sees every profiled character: absences fail,
    # the rest pass; one that says NO the other way round
    want_absent = "passed" if word == "NO" else "failed"
    assert set(rows.loc[absent, "verdict"]) == {want_absent}
    assert set(rows.loc[~absent, "verdict"]) == {"failed" if word == "NO" else "passed"}
    text = "\n".join(asked)
    # a judge cannot know the story's names: presence is never asked by name
    assert not re.search(r"Is the person called [^?]* in the picture\?", text)
    for question in (
        "Is this in a restaurant?",
        "Is this under a bridge?",
        "Is this in a police station?",
        "Is it early morning?",
        "Is there someone in the picture who fits this description: a thin man in a grey "
        "coat with a scarf?",
    ):
        assert question in text
    assert main(["score", str(served), "--resamples", "200"]) == 0
    scores = json.loads((served / "scores" / "scores.json").read_text("utf-8"))
    vlm = [r for r in scores["scores"] if r["evaluator"] == "vlm"]
    assert len(vlm) == 1 and vlm[0]["model"] == "stored:outside"
    share = (~absent).mean() if word == "YES" else absent.mean()
    assert 0 < vlm[0]["global_score"]["score"] < 1
    assert abs(rows["verdict"].eq("passed").mean() - share) < 1e-9


def test_a_garbage_judge_passes_nothing(served: Path, tmp_path: Path) -> None:
    with JudgeHttpServer(lambda questions: "I like this picture a lot.") as judge:
        code = main(["evaluate", str(served), "--evaluator", "vlm", "--judge",
                     "openai-compatible:fake", "--base-url", judge.url, "--cache",
                     str(tmp_path / "cache")])  # fmt: skip
    assert code == 4  # more than --max-parse-failures of the answers cannot be read
    rows = pd.read_parquet(served / "evaluations" / "requirements.parquet")
    assert set(rows.loc[rows["evaluator"] == "vlm", "verdict"]) == {"parse_failure"}
