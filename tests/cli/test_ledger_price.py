"""``vsb ledger`` shows the price its totals were costed at (issue 35 item 9): a provider
reached through ``--base-url`` was shown as price "unknown" while its calls were totalled at
$0.042 each (the rows are costed by the adapter's pricing key, ``openai/gpt-image-1``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_paid_runs import images_server
from vsb.cli.main import main
from vsb.generator.generate import generate_story, write_suite


def test_the_ledger_shows_the_price_its_totals_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite([generate_story("wardrobe", "easy", "w", seed=1)], tmp_path / "suite", seed=0)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("COLUMNS", "250")
    with images_server(tmp_path / "log") as url:
        code = main(["run", "--suite", str(tmp_path / "suite"), "--model", "openai:gpt-image-1",
                     "--base-url", url, "--condition", "independent", "--out",
                     str(tmp_path / "run"), "--cache", str(tmp_path / "cache")])  # fmt: skip
    assert code == 0
    capsys.readouterr()
    assert main(["ledger", str(tmp_path / "run")]) == 0
    (row,) = [x for x in capsys.readouterr().out.splitlines() if "openai:gpt-image-1" in x]
    cells = row.split()
    calls = int(cells[3])
    assert "$0.042/image" in cells and f"${0.042 * calls:.4f}" in cells, row
    assert "unknown" not in row
