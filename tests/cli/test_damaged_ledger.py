"""A damaged ledger is one line naming the file and what to do (issue 35 item 5): ``vsb
ledger RUN`` printed ``sqlite3.DatabaseError: file is not a database`` as a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from vsb.cli.main import main


def test_vsb_ledger_of_a_damaged_ledger_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    ledger.write_bytes(b"\x00garbage, not SQLite\n" * 64)
    assert main(["ledger", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert out == "" and line.startswith(f"error: {ledger}: cannot open the ledger: ")
    assert "move it aside (mv ledger.sqlite ledger.sqlite.broken)" in line
    assert ledger.read_bytes() == b"\x00garbage, not SQLite\n" * 64  # left as it was
