"""Issue 45, item 14: ``vsb run`` and ``vsb suite prompts`` take a few stories (``--stories
ID,…``, ``--limit N``); an unknown id is one line with "did you mean"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.generator.generate import generate_suite, write_suite
from vsb.story.io import load_suite, load_suite_index


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sel") / "suite"
    write_suite(generate_suite(0)[:5], out, seed=0)
    return out


def _ids(suite: Path) -> list[str]:
    return [e.id for e in load_suite_index(suite).stories]


def _prompts(suite: Path, out: Path, *more: str) -> set[str]:
    args = ["suite", "prompts", str(suite), "--condition", "independent", "--out", str(out)]
    assert main([*args, *more]) == 0
    return {json.loads(line)["story_id"] for line in out.read_text("utf-8").splitlines()}


def test_suite_prompts_takes_stories_and_limit(suite: Path, tmp_path: Path) -> None:
    ids = _ids(suite)
    assert _prompts(suite, tmp_path / "all.jsonl") == set(ids)
    assert _prompts(suite, tmp_path / "two.jsonl", "--stories", f"{ids[3]},{ids[1]}") == {
        ids[1], ids[3]
    }  # fmt: skip
    assert _prompts(suite, tmp_path / "lim.jsonl", "--limit", "2") == set(ids[:2])
    both = _prompts(suite, tmp_path / "b.jsonl", "--stories", f"{ids[4]},{ids[2]}", "--limit", "1")
    assert both == {ids[2]}  # the first in suite order of those named


def test_run_takes_stories_and_limit(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _ids(suite)
    out = tmp_path / "run"
    args = ["run", "--suite", str(suite), "--model", "procedural-oracle", "--condition",
            "independent", "--cache", str(tmp_path / "cache"), "--workers", "1"]  # fmt: skip
    assert main([*args, "--out", str(out), "--stories", ids[2]]) == 0
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert {r["story_id"] for r in records} == {ids[2]}
    assert [s.id for s in load_suite(out / "suite")] == [ids[2]]  # the run's suite: that one
    scenes = len(load_suite(suite)[[s.id for s in load_suite(suite)].index(ids[2])].scenes)
    assert f"{scenes} images" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "r2"), "--limit", "2"]) == 0
    assert _ids(tmp_path / "r2" / "suite") == ids[:2]
    assert main([*args, "--out", str(tmp_path / "r3"), "--limit", "2", "--dry-run"]) == 0
    assert "procedural-oracle" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "prompts"])
def test_an_unknown_story_is_one_line_with_did_you_mean(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    ids = _ids(suite)
    typo = ids[1][:-1] + ("x" if ids[1][-1] != "x" else "y")
    if command == "run":
        args = ["run", "--suite", str(suite), "--model", "procedural-oracle", "--condition",
                "independent", "--out", str(tmp_path / "run")]  # fmt: skip
    else:
        args = ["suite", "prompts", str(suite), "--condition", "independent", "--out",
                str(tmp_path / "p.jsonl")]  # fmt: skip
    assert main([*args, "--stories", f"{ids[0]},{typo}"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert repr(typo) in err and f"did you mean {ids[1]!r}" in err
    assert not (tmp_path / "run").exists() and not (tmp_path / "p.jsonl").exists()
