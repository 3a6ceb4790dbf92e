"""Issue #23 item 8: the ``scenes`` and ``requirements`` counts and the ``seed`` of
``suite.json`` are checked — types (``true`` is no number), ranges, and the counts (and
category, difficulty) against the story files they list. ``vsb suite validate`` and
``vsb run`` refuse a wrong one with one line naming suite.json and the JSON pointer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.generator.generate import generate_story, write_suite
from vsb.story.io import load_suite


@pytest.fixture(scope="module")
def clean_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "suite"
    stories = [
        generate_story("wardrobe", "easy", "wardrobe-easy", seed=1),
        generate_story("counting", "medium", "counting-medium", seed=2),
    ]
    write_suite(stories, out, seed=0)
    return out


@pytest.fixture
def suite(tmp_path: Path, clean_suite: Path) -> Path:
    shutil.copytree(clean_suite, tmp_path / "suite")
    return tmp_path / "suite"


def _edit(suite: Path, top: dict[str, object] | None = None, **entry: object) -> dict:
    doc = json.loads((suite / "suite.json").read_text())
    doc.update(top or {})
    doc["stories"][0].update(entry)
    (suite / "suite.json").write_text(json.dumps(doc))
    return doc


def _refused(suite: Path, capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    for args in (
        ["suite", "validate", str(suite)],
        ["run", "--suite", str(suite), "--model", "procedural-oracle", "--condition",
         "independent", "--out", str(suite.parent / "out"), "--cache", str(suite.parent / "c")],
    ):  # fmt: skip
        code = main(args)
        err = capsys.readouterr().err
        lines = err.splitlines()
        assert code == 1 and len(lines) == 1 and "Traceback" not in err, (args[0], err)
        assert str(suite / "suite.json") in lines[0], lines
        assert all(n in lines[0] for n in needles), lines
    assert not (suite.parent / "out").exists()


def test_the_clean_index_passes(suite: Path) -> None:
    assert len(load_suite(suite)) == 2


@pytest.mark.parametrize("seed", [True, -1, 10**30, "7", 1.5, None])
def test_a_seed_that_is_not_a_64_bit_natural_number_is_refused(
    suite: Path, seed: object, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(suite, {"seed": seed})
    _refused(suite, capsys, "/seed")


@pytest.mark.parametrize("field", ["scenes", "requirements"])
@pytest.mark.parametrize("value", [True, -1, 10**30, "3"])
def test_a_count_that_is_not_a_count_is_refused(
    suite: Path, field: str, value: object, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(suite, **{field: value})
    _refused(suite, capsys, f"/stories/0/{field}")


@pytest.mark.parametrize("field", ["scenes", "requirements"])
def test_a_count_that_differs_from_the_story_is_refused(
    suite: Path, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((suite / "suite.json").read_text())
    entry = doc["stories"][0]
    actual = entry[field]
    _edit(suite, **{field: actual + 1})
    _refused(suite, capsys, f"/stories/0/{field}", f"says {field} {actual + 1}",
             f"has {actual}", "vsb suite index")  # fmt: skip
    assert main(["suite", "index", str(suite)]) == 0
    capsys.readouterr()
    assert len(load_suite(suite)) == 2


def test_a_category_that_differs_from_the_story_is_refused(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((suite / "suite.json").read_text())
    other = "counting" if doc["stories"][0]["category"] != "counting" else "wardrobe"
    _edit(suite, category=other)
    _refused(suite, capsys, "/stories/0/category", f"says category {other!r}")


@pytest.mark.parametrize(
    "args", [["suite", "generate", "--out", "{tmp}/s"], ["suite", "index", "{suite}"],
             ["release", "build", "v0", "--out", "{tmp}/b"]],
)  # fmt: skip
@pytest.mark.parametrize("seed", ["-1", str(10**30)])
def test_commands_refuse_a_seed_suite_json_cannot_hold(
    suite: Path, tmp_path: Path, args: list[str], seed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A seed that suite.json refuses is refused on the command line (exit 2, one message),
    never a traceback from writing the index."""
    argv = [a.format(tmp=tmp_path, suite=suite) for a in args]
    assert main([*argv, "--seed", seed]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--seed" in err
    assert not (tmp_path / "s").exists() and not (tmp_path / "b").exists()
