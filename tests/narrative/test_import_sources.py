"""Reading narratives: plain text (paragraphs, ``Scene N:`` headers), JSON, JSON lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from narrative_helpers import PARK

from vsb.errors import InputError
from vsb.narrative.sources import read_narratives


def test_plain_text_paragraphs_are_scenes_kept_verbatim(tmp_path: Path) -> None:
    p = tmp_path / "My Story.txt"
    p.write_text("\n\n".join(PARK) + "\n\n\n")
    (n,) = read_narratives([p])
    assert n.id == "my-story" and n.scenes == PARK


def test_scene_headers(tmp_path: Path) -> None:
    p = tmp_path / "s.txt"
    p.write_text("Scene 1: first line\ncontinued\n\nstill scene one\nScene 2:\nsecond\n")
    (n,) = read_narratives([p])
    assert n.scenes == ("first line\ncontinued\n\nstill scene one", "second")


def test_scene_headers_out_of_order_name_the_line(tmp_path: Path) -> None:
    p = tmp_path / "s.txt"
    p.write_text("Scene 1: a\nScene 3: b\n")
    with pytest.raises(InputError) as err:
        read_narratives([p])
    assert str(err.value) == f"{p}: line 2: expected 'Scene 2:', got 'Scene 3:'"


def test_json_list_of_scenes_and_list_of_stories(tmp_path: Path) -> None:
    a = tmp_path / "one.json"
    a.write_text(json.dumps(list(PARK)))
    b = tmp_path / "many.json"
    b.write_text(
        json.dumps([{"id": "X 1", "scenes": ["a", "b"]}, {"id": "y", "scenes": ["c", "d"]}])
    )
    got = read_narratives([a, b])
    assert [(n.id, n.scenes) for n in got] == [
        ("one", PARK), ("x-1", ("a", "b")), ("y", ("c", "d"))
    ]  # fmt: skip
    assert got[1].source == f"{b}/0"


def test_jsonl_layout(tmp_path: Path) -> None:
    p = tmp_path / "vina.jsonl"
    rows = [{"story_id": "vwp_12", "narrative": ["a", "b"], "images": ["x.png"]},
            {"story_id": "vwp_13", "narrative": ["c", "d", "e"]}]  # fmt: skip
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = read_narratives([p])
    assert [(n.id, n.scenes, n.source) for n in got] == [
        ("vwp_12", ("a", "b"), f"{p}:1"), ("vwp_13", ("c", "d", "e"), f"{p}:2")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("a.jsonl", '{"story_id": "a"}\n', 'line 1: expected {"story_id": STRING, "narrative"'),
        (
            "a.jsonl",
            '{"story_id": "a", "narrative": ["x", 3, "z"]}\n',
            "line 1: scene 2 is not a string",
        ),
        ("a.json", '{"id": "a"}', "expected a non-empty list of scenes or of stories"),
        ("a.json", '[{"id": "a", "scenes": ["x", "y"], "extra": 1}]', '/0: expected a story {"id"'),
        ("a.json", "[1, 2", "invalid JSON"),
        ("a.txt", "\n\n  \n", "paragraphs: a story has 2 to 16 scenes, this one 0"),
        ("a.md", "x", "expected a .txt, .json or .jsonl narrative file"),
    ],
)
def test_bad_files_give_one_line_naming_the_place(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InputError) as err:
        read_narratives([p])
    assert str(err.value).startswith(f"{p}: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_story_id_used_twice_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    for folder in (tmp_path, tmp_path / "a"):
        (folder / "s.txt").write_text("x\n\ny\n")
    with pytest.raises(InputError, match="story id 's' is used twice"):
        read_narratives([tmp_path / "s.txt", tmp_path / "a" / "s.txt"])
