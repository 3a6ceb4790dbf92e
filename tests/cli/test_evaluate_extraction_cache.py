"""``vsb evaluate --extraction-cache``: what the extractor read is kept under --cache, so a
re-evaluation extracts nothing again and writes the same rows; without the flag nothing is
kept there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vsb.cli.main import main


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("xcache")
    suite, run = root / "suite", root / "run"
    assert main(["suite", "generate", "--out", str(suite)]) == 0
    argv = ["run", "--suite", str(suite), "--model", "procedural-drift-mid,procedural-oracle"]
    argv += ["--condition", "independent", "--out", str(run), "--workers", "1"]
    assert main(argv) == 0
    return run


def test_a_second_evaluation_reads_every_extraction_from_the_cache(
    small_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    base = ["evaluate", "--evaluator", "rules", "--cache", str(cache), "--workers", "1"]
    assert main([*base, str(small_run)]) == 0
    first_rows = (small_run / "evaluations" / "requirements.parquet").read_bytes()
    assert not (cache / "extractions.sqlite").exists()  # off unless asked for
    capsys.readouterr()

    assert main([*base, "--extraction-cache", str(small_run)]) == 0
    out = capsys.readouterr().out
    assert "read from the extraction cache" in out
    assert (cache / "extractions.sqlite").is_file()
    assert (small_run / "evaluations" / "requirements.parquet").read_bytes() == first_rows

    copy = tmp_path / "copy"  # another run with the same images: none extracted again
    shutil.copytree(small_run, copy)
    assert main([*base, "--extraction-cache", str(copy)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("extractor:"))
    assert line.startswith("extractor: 0 images extracted, ")
    assert (copy / "evaluations" / "requirements.parquet").read_bytes() == first_rows


def test_the_extraction_cache_is_refused_on_ray(small_run: Path, tmp_path: Path) -> None:
    argv = ["evaluate", str(small_run), "--extraction-cache", "--executor", "ray"]
    assert main([*argv, "--cache", str(tmp_path / "c")]) == 2
