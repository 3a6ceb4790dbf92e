"""``python -m vsb`` is the ``vsb`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from vsb import __version__

ROOT = Path(__file__).resolve().parents[1]


def _python_m_vsb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "vsb", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_python_m_vsb_runs_the_cli(tmp_path: Path) -> None:
    done = _python_m_vsb("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"vsb, version {__version__}"
    listed = _python_m_vsb("models", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "procedural-oracle" in listed.stdout


def test_python_m_vsb_reports_errors_in_one_line(tmp_path: Path) -> None:
    done = _python_m_vsb(
        "run", "--suite", str(tmp_path), "--model", "procedural-orcle",
        "--condition", "independent", "--out", str(tmp_path / "run"), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "unknown model 'procedural-orcle' (did you mean 'procedural-oracle'?)" in done.stderr
