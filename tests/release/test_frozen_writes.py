"""Commands that write into RUN_DIR refuse a frozen release: `vsb analysis RELEASE` wrote
analysis/ into it, after which `vsb release verify` failed (found by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vsb.cli.main import main


@pytest.fixture
def frozen(tmp_path: Path) -> Path:
    rel = tmp_path / "release"
    (rel / "scores").mkdir(parents=True)
    (rel / "scores" / "scores.json").write_text("{}\n")
    assert main(["release", "freeze", str(rel)]) == 0
    return rel


@pytest.mark.parametrize(
    ("args", "written"),
    [
        (["score"], "scores/"),
        (["analysis"], "analysis/"),
        (["validate-judge"], "validation/"),
        (["evaluate"], "evaluations/"),
    ],
)
def test_writing_into_a_frozen_release_is_refused(
    frozen: Path, args: list[str], written: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(p.relative_to(frozen) for p in frozen.rglob("*"))
    assert main([*args, str(frozen)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(frozen) in err and "frozen release" in err and written in err
    assert sorted(p.relative_to(frozen) for p in frozen.rglob("*")) == before
    assert main(["release", "verify", str(frozen)]) == 0


def test_analysis_of_a_frozen_release_may_write_elsewhere(frozen: Path, tmp_path: Path) -> None:
    # --out elsewhere passes the guard (it then fails for want of evaluations, not for the
    # release): the release is untouched
    assert main(["analysis", str(frozen), "--out", str(tmp_path / "out")]) == 1
    assert main(["release", "verify", str(frozen)]) == 0


def test_compare_runs_into_a_frozen_release_is_refused(
    frozen: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vsb compare-runs RELEASE OTHER wrote RELEASE/sensitivity/ and broke verify
    other = tmp_path / "other"
    other.mkdir()
    before = sorted(p.relative_to(frozen) for p in frozen.rglob("*"))
    assert main(["compare-runs", str(frozen), str(other)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "frozen release" in err and "sensitivity/" in err
    assert "--out" in err
    assert sorted(p.relative_to(frozen) for p in frozen.rglob("*")) == before
    assert main(["release", "verify", str(frozen)]) == 0
