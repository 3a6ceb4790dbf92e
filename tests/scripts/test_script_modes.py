"""Every script with a shebang under scripts/ is executable as the docs run it
(``scripts/embed_release.py RUN`` once gave "Permission denied": stored without its run bit)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "scripts").iterdir() if p.read_bytes().startswith(b"#!"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_is_executable(script: Path) -> None:
    assert os.access(script, os.X_OK), f"{script.name}: chmod +x and git update-index --chmod=+x"


def test_git_stores_the_run_bit() -> None:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(
        [git, "ls-files", "-s", "scripts"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    modes = {line.split("\t")[1]: line.split()[0] for line in out.splitlines()}
    for script in SCRIPTS:
        rel = script.relative_to(ROOT).as_posix()
        if rel in modes:
            assert modes[rel] == "100755", rel
