"""A ledger that was there and is now empty is damaged, never a new ledger (issue 45, item 6).

Only a missing file is a new ledger. A 0-byte ``ledger.sqlite``, or a SQLite file that holds
no ledger tables (its write-ahead log lost), makes ``vsb ledger`` and ``vsb run`` say so in one
line naming it and exit non-zero: ``vsb ledger`` never shows "no calls" for a run that made
some, and the run writes nothing into it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.errors import RunError
from vsb.generator.generate import generate_story, write_suite
from vsb.store.ledger import LEDGER_NAME, Ledger


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    write_suite([generate_story("wardrobe", "easy", "wardrobe-easy", seed=1)], suite, seed=0)
    out = tmp_path / "run"
    assert main(["run", "--suite", str(suite), "--out", str(out), "--cache",
                 str(tmp_path / "cache"), "--model", "procedural-oracle",
                 "--condition", "independent"]) == 0  # fmt: skip
    return out


def _emptied(path: Path, how: str) -> None:
    if how == "zero bytes":
        path.write_bytes(b"")
    else:  # a SQLite file without the ledger's tables
        path.unlink()
        db = sqlite3.connect(path)
        db.execute("PRAGMA user_version = 1")
        db.close()


@pytest.mark.parametrize("how", ["zero bytes", "no tables"])
def test_an_emptied_ledger_is_damaged(
    run_dir: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = run_dir / LEDGER_NAME
    _emptied(path, how)
    before = path.read_bytes()
    capsys.readouterr()
    assert main(["ledger", str(run_dir)]) == 1
    io = capsys.readouterr()
    err = io.err.strip()
    assert err.count("\n") == 0 and str(path) in err and "damaged" in err, err
    assert "Traceback" not in err and "procedural-oracle" not in io.out
    assert path.read_bytes() == before
    with pytest.raises(RunError, match="damaged"):
        Ledger(path)
    assert path.read_bytes() == before
    suite = run_dir / "suite"
    again = ["run", "--suite", str(suite), "--out", str(run_dir), "--cache",
             str(run_dir.parent / "cache"), "--model", "procedural-oracle",
             "--condition", "independent"]  # fmt: skip
    assert main(again) == 1
    assert str(path) in capsys.readouterr().err
    assert path.read_bytes() == before


def test_a_missing_ledger_is_a_new_one(tmp_path: Path) -> None:
    with Ledger(tmp_path / LEDGER_NAME) as led:
        led.start_session("new")
    with Ledger.open_existing(tmp_path / LEDGER_NAME) as led:
        assert led.summary() == []
