"""Every documented limit of ``vsb suite import`` is checked before any call (issue 35 items 3
and 10): scenes per story (2 to 16), characters per scene, file size, NUL and control
characters, ids without a letter. Each is exit 1, one line naming the file, and 0 requests to
a real LLM server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from narrative_helpers import PARK, careful, llm_server

from vsb.cli.main import main
from vsb.narrative.sources import MAX_NARRATIVE_BYTES, MAX_SCENE_CHARS


def _txt(scenes: list[str]) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        p = folder / "story.txt"
        p.write_text("\n\n".join(scenes) + "\n")
        return p

    return write


def _json_ids(*ids: str) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        p = folder / "stories.json"
        p.write_text(json.dumps([{"id": i, "scenes": list(PARK)} for i in ids]))
        return p

    return write


def _big(folder: Path) -> Path:
    p = folder / "big.txt"
    with p.open("wb") as fh:
        fh.truncate(MAX_NARRATIVE_BYTES + 1)  # sparse: nothing written, one byte too many
    return p


CASES = {
    "100,000 paragraphs": (
        _txt([f"Paragraph {i}." for i in range(100_000)]),
        "a story has 2 to 16 scenes, this one 100,000",
    ),
    "17 scenes": (_txt([f"Scene text {i}." for i in range(17)]), "this one 17"),
    "1 scene": (_txt([PARK[0]]), "a story has 2 to 16 scenes, this one 1"),
    "NUL byte": (_txt([PARK[0], "In the park.\x00 Bo leaves."]), "control character U+0000"),
    "escape byte": (_txt([PARK[0], "In the \x1b[31mpark."]), "control character U+001B"),
    "long scene": (_txt([PARK[0], "x" * (MAX_SCENE_CHARS + 1)]), "characters (at most 4,000)"),
    "file size": (_big, "byte limit"),
    "id '..'": (_json_ids("..", "."), "story id '..' has no letter or digit"),
    "id '.'": (_json_ids(".", "ok"), "story id '.' has no letter or digit"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_documented_limit_is_checked_before_any_call(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write, message = CASES[case]
    path = write(tmp_path)
    with llm_server(careful) as (url, prompts):
        code = main(
            ["suite", "import", str(path), "--llm", "openai-compatible:fake", "--base-url", url,
             "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")],
        )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 1, out + err
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith(f"error: {path}: "), err
    assert message in lines[0]
    assert prompts == []  # nothing was sent
    assert not (tmp_path / "out").exists()
