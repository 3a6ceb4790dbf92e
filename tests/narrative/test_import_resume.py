"""``vsb suite import`` resumes like ``vsb run`` (issue 35 items 2 and 4): the same command
reruns after an import killed while writing, and a rejected answer is never served from the
cache (a rerun against a good server asks again and imports)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from narrative_helpers import KITCHEN, PARK, answer_doc, llm_server, write_txt

from vsb.cli.main import main
from vsb.story.io import load_suite

THIRD = (
    "In the garden, at noon; the weather is cloudy. Lu has very light skin and short red "
    "hair, wears a white top, black trousers and no accessory, and is standing.",
    "In the garden. Lu is sitting now.",
)


def _import(*args: object) -> int:
    return main(["suite", "import", *map(str, args)])


@pytest.mark.parametrize(
    "deleted",
    [
        ("suite.json", "import/report.json", "import/calls.jsonl"),  # the repro
        ("import/report.json", "import/calls.jsonl"),  # killed before the transcript
        ("import/report.json",),  # killed before the report
        ("suite.json", "kitchen.json", "import/report.json", "import/calls.jsonl"),
    ],
)
def test_an_import_killed_while_writing_reruns_with_the_same_arguments(
    tmp_path: Path, deleted: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [write_txt(tmp_path, n, s) for n, s in (("park", PARK), ("kitchen", KITCHEN),
                                                     ("garden", THIRD))]  # fmt: skip
    args = [*paths, "--llm", "mock", "--out", tmp_path / "out", "--cache", tmp_path / "c"]
    assert _import(*args) == 0
    for name in deleted:  # what a kill while writing leaves out
        (tmp_path / "out" / name).unlink()
    capsys.readouterr()
    assert _import(*args) == 0, capsys.readouterr().err
    assert sorted(s.id for s in load_suite(tmp_path / "out")) == ["garden", "kitchen", "park"]
    report = json.loads((tmp_path / "out" / "import" / "report.json").read_text())
    assert report["imported"] == 3


def test_a_folder_with_other_files_is_still_refused(tmp_path: Path) -> None:
    paths = [write_txt(tmp_path, "park", PARK)]
    out = tmp_path / "out"
    assert _import(*paths, "--llm", "mock", "--out", out, "--cache", tmp_path / "c") == 0
    (out / "import" / "report.json").unlink()
    (out / "notes.txt").write_text("mine")
    assert _import(*paths, "--llm", "mock", "--out", out, "--cache", tmp_path / "c") == 1
    assert (out / "notes.txt").read_text() == "mine" and (out / "park.json").is_file()


def test_a_rejected_answer_is_asked_again_on_rerun(tmp_path: Path) -> None:
    path = write_txt(tmp_path, "park", PARK)
    good = [False]

    def answer(scenes: list[str], prompt: str) -> str:
        doc = answer_doc(scenes)
        if not good[0]:
            doc["objects"][0]["kind"] = "dragon"  # outside the vocabulary: rejected
        return json.dumps(doc)

    with llm_server(answer) as (url, prompts):
        common = ["--llm", "openai-compatible:fake", "--base-url", url, "--cache", tmp_path / "c"]
        assert _import(path, *common, "--out", tmp_path / "bad") == 2
        assert len(prompts) == 2  # the answer, and its repair
        report = json.loads((tmp_path / "bad" / "import" / "report.json").read_text())
        assert "dragon" in report["stories"][0]["error"]
        good[0] = True  # the same endpoint (the cache key names it), now answering well
        assert _import(path, *common, "--out", tmp_path / "good") == 0
    assert len(prompts) == 3  # asked again, not served the rejected answer
    assert [s.id for s in load_suite(tmp_path / "good")] == ["park"]
