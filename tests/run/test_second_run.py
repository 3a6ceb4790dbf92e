"""A second ``vsb run`` into a run directory that holds other models adds to it, keeping
every record, fault and image of the first; one that cannot be added (another suite, seed or
set of conditions) is refused in one line and changes nothing (issue 45, item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.generator.generate import generate_story, write_suite

A, B = "procedural-drift-mid", "procedural-sloppy"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    stories = [
        generate_story("wardrobe", "easy", "wardrobe-easy", seed=1),
        generate_story("possession", "medium", "possession-medium", seed=2),
    ]
    out = tmp_path / "suite"
    write_suite(stories, out, seed=0)
    return out


def _run(suite: Path, out: Path, cache: Path, model: str, *more: str) -> int:
    return main(["run", "--suite", str(suite), "--out", str(out), "--cache", str(cache),
                 "--model", model, "--condition", "all", *more])  # fmt: skip


def _lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines()


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}  # fmt: skip


def _ids(lines: list[str]) -> list[tuple[object, ...]]:
    fields = ("model", "condition", "story_id", "scene", "key", "sha256")
    return [tuple(json.loads(x)[f] for f in fields) for x in lines]


def test_a_second_model_is_added_keeping_every_record(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rd, cache = tmp_path / "run", tmp_path / "cache"
    assert _run(suite, rd, cache, A) == 0
    first = _lines(rd / "records.jsonl")
    faults = _lines(rd / "oracle" / "faults.jsonl")
    assert len(first) == 48 and faults
    assert _run(suite, rd, cache, B) == 0
    both = _lines(rd / "records.jsonl")
    assert set(first) <= set(both)  # every record of A, byte for byte
    assert len(both) == 96 and {json.loads(x)["model"] for x in both} == {A, B}
    assert set(faults) < set(_lines(rd / "oracle" / "faults.jsonl"))
    man = json.loads((rd / "manifest.json").read_text())
    assert man["models"] == [A, B] and man["oracle_models"] == [A, B]
    assert man["images"] == 96
    for r in map(json.loads, both):
        assert (rd / r["path"]).is_file()
    # running A again replaces A's records by the same images (from the cache), keeps B's
    assert _run(suite, rd, cache, A) == 0
    assert _ids(_lines(rd / "records.jsonl")) == _ids(both)
    capsys.readouterr()


def test_a_run_that_cannot_be_added_is_refused_changing_nothing(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rd, cache = tmp_path / "run", tmp_path / "cache"
    assert _run(suite, rd, cache, A) == 0
    capsys.readouterr()
    before = _tree(rd)
    assert _run(suite, rd, cache, B, "--seed", "7") == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert str(rd) in err and A in err and "seed" in err
    assert _tree(rd) == before
    # a run that did not finish (no manifest) cannot say what it was: refused too
    (rd / "manifest.json").unlink()
    before = _tree(rd)
    assert _run(suite, rd, cache, B) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "manifest" in err and A in err
    assert _tree(rd) == before
    # naming every model it holds finishes it
    assert _run(suite, rd, cache, f"{A},{B}") == 0
    assert len(_lines(rd / "records.jsonl")) == 96
