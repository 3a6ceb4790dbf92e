"""A story is schema-validated once per file content in a process (issue #25): a release
build loads its suite in every stage and again from scratch copies (the reference judges'
slices), and the JSON Schema check is most of a load. A copy at another path is reused; a
changed or broken file is still checked and still refused."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from vsb.errors import StoryValidationError
from vsb.generator.generate import generate_story, write_suite
from vsb.story import io


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    out = tmp_path / "suite"
    write_suite([generate_story("wardrobe", "easy", "wardrobe-easy", seed=3)], out, seed=0)
    return out


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files ``_check_story`` (JSON Schema, models, transitions) is run on."""
    seen: list[Path] = []
    real = io._check_story

    def counting(path: Path, found: list[io.Story]) -> Iterator[StoryValidationError]:
        seen.append(path)
        return real(path, found)

    monkeypatch.setattr(io, "_check_story", counting)
    monkeypatch.setattr(io, "_LOADED", {})
    return seen


def test_a_copy_of_a_suite_elsewhere_is_not_validated_again(
    tmp_path: Path, suite: Path, checks: list[Path]
) -> None:
    first = io.load_suite(suite)
    assert len(checks) == 1
    copy = tmp_path / "scratch" / "suite"
    shutil.copytree(suite, copy)
    again = io.load_suite(copy)
    assert len(checks) == 1  # same bytes at another path: the validated story is reused
    assert again == first


def test_changed_or_broken_content_is_still_checked(
    tmp_path: Path, suite: Path, checks: list[Path]
) -> None:
    story_file = next(p for p in suite.glob("*.json") if p.name != "suite.json")
    io.load_story(story_file)
    doc = json.loads(story_file.read_text())
    doc["id"] = "wardrobe-easy-edited"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    io.load_story(edited)
    assert checks == [story_file, edited]
    doc["scenes"] = doc["scenes"][:2]  # 2 scenes: refused every time, never cached
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc))
    for _ in range(2):
        with pytest.raises(StoryValidationError):
            io.load_story(broken)
    assert checks[2:] == [broken, broken]
