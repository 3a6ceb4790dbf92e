"""Hostile suites (issue #10 items 1, 2, 4): deep JSON, index entries that escape the suite
directory, duplicate story ids. ``vsb suite validate`` and ``vsb run`` answer each with exit 1
and one line on stderr naming the file, write nothing outside ``--out``, and show no traceback."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.errors import InputError
from vsb.generator.generate import generate_story, write_suite
from vsb.story.io import load_story, load_suite, load_suite_index

DEEP = "[" * 100_000


@pytest.fixture(scope="module")
def clean_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "suite"
    write_suite(
        [
            generate_story("wardrobe", "easy", "wardrobe-easy", seed=1),
            generate_story("possession", "easy", "possession-easy", seed=2),
        ],
        out,
        seed=0,
    )
    return out


@pytest.fixture
def work(tmp_path: Path, clean_suite: Path) -> Path:
    """tmp/work/suite (a copy of the clean suite); runs go to tmp/work/out."""
    shutil.copytree(clean_suite, tmp_path / "work" / "suite")
    return tmp_path / "work"


def _edit_index(suite: Path, entry: int, **fields: object) -> None:
    doc = json.loads((suite / "suite.json").read_text())
    doc["stories"][entry].update(fields)
    (suite / "suite.json").write_text(json.dumps(doc))


def _snapshot(root: Path, skip: Path) -> dict[str, bytes]:
    """Every file under ``root`` outside ``skip`` (the run's --out and its cache)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.is_relative_to(skip)
    }


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.splitlines()


def _run(work: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    args = ["run", "--suite", str(work / "suite"), "--model", "procedural-oracle"]
    args += ["--condition", "independent", "--out", str(work / "out")]
    return _cli([*args, "--cache", str(work / "out" / "cache"), "--workers", "1"], capsys)


def _assert_refused(work: Path, capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    """validate and run both exit 1 with one line naming ``needles``; run writes nothing
    outside --out (here: nothing at all, it fails before creating --out)."""
    code, lines = _cli(["suite", "validate", str(work / "suite")], capsys)
    assert code == 1 and len(lines) == 1, lines
    assert all(n in lines[0] for n in needles), lines
    root = work.parent
    before = _snapshot(root, work / "out")
    code, lines = _run(work, capsys)
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith("error: ")
    assert all(n in lines[0] for n in needles), lines
    assert _snapshot(root, work / "out") == before
    assert not (work / "out").exists()


def test_clean_suite_validates_and_loads(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["suite", "validate", str(work / "suite")], capsys) == (0, [])
    assert [s.id for s in load_suite(work / "suite")] == ["possession-easy", "wardrobe-easy"]


# --- item 1: deep nesting -------------------------------------------------------------


def test_deep_story_file(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = work / "suite" / "wardrobe-easy.json"
    deep.write_text(DEEP)
    _assert_refused(work, capsys, f"{deep}: line 1 column 65: JSON nested deeper than 64")


def test_deep_story_outside_a_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    code, lines = _cli(["suite", "validate", str(deep)], capsys)
    assert code == 1 and lines == [f"{deep}: line 1 column 65: JSON nested deeper than 64 levels"]
    with pytest.raises(InputError, match="nested deeper"):
        load_story(deep)


def test_deep_suite_index(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (work / "suite" / "suite.json").write_text('{"stories": ' + DEEP)
    _assert_refused(work, capsys, "suite.json: line 1 column 76: JSON nested deeper")


def test_deep_but_legal_string_is_not_nesting(work: Path) -> None:
    """Brackets inside a string are text, not structure: a story keeps loading."""
    p = work / "suite" / "wardrobe-easy.json"
    doc = json.loads(p.read_text())
    doc["scenes"][0]["text"] += " [" * 200
    p.write_text(json.dumps(doc))
    assert load_story(p).scenes[0].text.endswith("[ [")


def test_repeated_key_in_a_story(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = work / "suite" / "wardrobe-easy.json"
    p.write_text(p.read_text().replace('{\n  "category"', '{\n  "id": "other",\n  "category"', 1))
    _assert_refused(work, capsys, f"{p}: invalid JSON: an object repeats the key 'id'")


# --- item 2: index entries that leave the suite directory ------------------------------


def test_dotdot_entry_cannot_write_outside_out(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the old code ``vsb run`` copied ../../X.json to OUT/suite/../../X.json = work/X.json."""
    shutil.copyfile(work / "suite" / "wardrobe-easy.json", work.parent / "X.json")
    _edit_index(work / "suite", 1, file="../../X.json")
    _assert_refused(work, capsys, "suite.json: /stories/1/file: '../../X.json' leads out")
    assert not (work / "X.json").exists()


def test_absolute_entry(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On the old code this ended in a shutil.SameFileError traceback."""
    target = str((work / "suite" / "wardrobe-easy.json").resolve())
    _edit_index(work / "suite", 1, file=target)
    _assert_refused(work, capsys, f"suite.json: /stories/1/file: {target!r} is an absolute path")


def test_symlink_leading_out(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = work.parent / "outside.json"
    shutil.move(work / "suite" / "wardrobe-easy.json", outside)
    os.symlink(outside, work / "suite" / "wardrobe-easy.json")
    _assert_refused(
        work, capsys, "/stories/0/file: 'wardrobe-easy.json' is a symlink that resolves outside"
    )


def test_symlink_inside_the_suite_is_fine(work: Path) -> None:
    suite = work / "suite"
    (suite / "wardrobe-easy.json").rename(suite / "real.txt")
    os.symlink("real.txt", suite / "wardrobe-easy.json")
    assert len(load_suite(suite)) == 2 and load_suite_index(suite).stories[1].file


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("sub/wardrobe-easy.json", "is a path; name a file directly inside"),
        ("sub\\..\\..\\x.json", "leads out of the suite directory"),
        ("C:\\x.json", "is an absolute path"),
        ("wardrobe\x00.json", "contains a control character"),
        ("wardrobe\n.json", "contains a control character"),
        ("suite.json", "is not a story file name"),
        ("", "empty file name"),
        ("missing.json", "'missing.json' does not exist in the suite directory"),
        ("wardrobe-easy.json", "'wardrobe-easy.json' is listed twice (also at /stories/0/file)"),
    ],
)  # fmt: skip
def test_bad_entry_names(
    work: Path, capsys: pytest.CaptureFixture[str], name: str, why: str
) -> None:
    (work / "suite" / "sub").mkdir()
    shutil.copyfile(work / "suite" / "wardrobe-easy.json", work / "suite/sub/wardrobe-easy.json")
    _edit_index(work / "suite", 1, file=name)
    code, lines = _cli(["suite", "validate", str(work / "suite")], capsys)
    assert code == 1 and lines[0].startswith(f"{work / 'suite' / 'suite.json'}: /stories/1/file: ")
    assert why in lines[0]
    with pytest.raises(InputError, match="/stories/1/file"):
        load_suite_index(work / "suite")
    with pytest.raises(InputError, match="/stories/1/file"):
        load_suite(work / "suite")


def test_listing_must_match_the_files(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = work / "suite"
    shutil.copyfile(suite / "wardrobe-easy.json", suite / "spare.json")
    spare = json.loads((suite / "spare.json").read_text())
    spare["id"] = "spare"
    (suite / "spare.json").write_text(json.dumps(spare))
    _assert_refused(work, capsys, f"{suite / 'spare.json'}: story file not listed in")
    (suite / "spare.json").unlink()
    _edit_index(suite, 0, id="not-wardrobe")
    _assert_refused(
        work, capsys, "/stories/0/id: lists id 'not-wardrobe' but wardrobe-easy.json holds"
    )


def test_a_story_changed_after_indexing_is_refused(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """suite.json's SHA-256 of each file was written and never checked: a story edited after
    indexing (still a valid story) ran with the index's stale counts. Re-indexing fixes it."""
    suite = work / "suite"
    path = suite / "wardrobe-easy.json"
    doc = json.loads(path.read_text())
    doc["scenes"][0]["text"] += " A quiet moment."
    path.write_text(json.dumps(doc, indent=2))
    entries = json.loads((suite / "suite.json").read_text())["stories"]
    i = [e["file"] for e in entries].index("wardrobe-easy.json")
    _assert_refused(
        work,
        capsys,
        f"{suite / 'suite.json'}: /stories/{i}/sha256: wardrobe-easy.json changed since the index",
        f"vsb suite index {suite}",
    )
    assert _cli(["suite", "index", str(suite)], capsys)[0] == 0
    assert _cli(["suite", "validate", str(suite)], capsys) == (0, [])


# --- item 4: duplicate story ids ------------------------------------------------------


def test_duplicate_ids_across_files(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On the old code the run wrote 2 records per image and double-counted every check."""
    suite = work / "suite"
    first, second = suite / "wardrobe-easy.json", suite / "zz-copy.json"
    shutil.copyfile(first, second)
    _assert_refused(work, capsys, str(first), str(second), "duplicate story id 'wardrobe-easy'")


def test_duplicate_ids_listed_in_the_index(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = work / "suite"
    shutil.copyfile(suite / "wardrobe-easy.json", suite / "zz-copy.json")
    doc = json.loads((suite / "suite.json").read_text())
    doc["stories"].append({**doc["stories"][0], "file": "zz-copy.json"})
    (suite / "suite.json").write_text(json.dumps(doc))
    _assert_refused(
        work, capsys, str(suite / "zz-copy.json"), str(suite / "wardrobe-easy.json"), "duplicate"
    )


def test_duplicate_ids_without_an_index(tmp_path: Path, clean_suite: Path) -> None:
    shutil.copyfile(clean_suite / "wardrobe-easy.json", tmp_path / "a.json")
    shutil.copyfile(clean_suite / "wardrobe-easy.json", tmp_path / "b.json")
    with pytest.raises(InputError) as exc:
        load_suite(tmp_path)
    assert str(exc.value) == (
        f"{tmp_path / 'b.json'}: /id: duplicate story id 'wardrobe-easy': also in "
        f"{tmp_path / 'a.json'}"
    )


# --- the run's copy of its suite -------------------------------------------------------


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_rerun_on_its_own_suite_copy(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--suite OUT/suite --out OUT`` used to delete the suite, then crash copying it."""
    shutil.move(work / "suite", work / "out" / "suite")
    before = _files(work / "out" / "suite")
    args = ["run", "--suite", str(work / "out" / "suite"), "--model", "procedural-oracle"]
    args += ["--condition", "independent", "--out", str(work / "out")]
    code, lines = _cli([*args, "--cache", str(work / "cache"), "--workers", "1"], capsys)
    assert (code, lines) == (0, [])
    assert _files(work / "out" / "suite") == before


def test_suite_copy_never_writes_through_a_link(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OUT/suite as a symlink to a directory outside --out: replaced, not written through."""
    elsewhere = work.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    (work / "out").mkdir()
    os.symlink(elsewhere, work / "out" / "suite")
    code, lines = _run(work, capsys)
    assert (code, lines) == (0, [])
    assert _files(elsewhere) == {"keep.txt": b"mine"}
    assert not (work / "out" / "suite").is_symlink()
    assert _files(work / "out" / "suite") == _files(work / "suite")


def test_fifo_and_directory_named_like_stories(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO would block ``open`` for ever; a directory cannot be read: both one line."""
    suite = work / "suite"
    os.mkfifo(suite / "pipe.json")
    (suite / "folder.json").mkdir()
    code, lines = _cli(["suite", "validate", str(suite)], capsys)
    assert code == 1
    assert lines == [
        f"{suite / 'folder.json'}: not a regular file",
        f"{suite / 'pipe.json'}: not a regular file",
    ]
    (suite / "folder.json").rmdir()
    (suite / "pipe.json").unlink()
    os.mkfifo(suite / "suite.json.tmp")
    (suite / "suite.json").unlink()
    (suite / "suite.json.tmp").rename(suite / "suite.json")
    with pytest.raises(InputError, match=r"suite\.json: not a regular file"):
        load_suite_index(suite)


def test_overlong_story_id(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 300-character id passed validation, then ``vsb run`` died on a folder name."""
    long_id = "a" * 300
    p = work / "suite" / "wardrobe-easy.json"
    doc = json.loads(p.read_text())
    doc["id"] = long_id
    p.write_text(json.dumps(doc))
    _edit_index(work / "suite", 0, id=long_id)
    _assert_refused(work, capsys, f"{p}: /id: a story id has at most 100 characters, not 300")
