"""Every command in README.md and docs/*.md runs as written (from a fresh folder, in the order
a reader meets them: the README's quick start first, then docs/ by name), except lines marked
``# needs: …`` (a key, a server, weights, a GPU, the built release or a fresh clone)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
ACTIVATE = "source .venv/bin/activate"


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def commands(text: str) -> list[str]:
    """The command lines of every ```bash block (continuation lines joined)."""
    out: list[str] = []
    for block in FENCE.findall(text):
        pending = ""
        for line in block.splitlines():
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            line = pending + line
            pending = ""
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(" ".join(line.split()))
    return out


def runnable(cmd: str) -> bool:
    return "# needs:" not in cmd and cmd != ACTIVATE


def test_commands_are_extracted_and_marked() -> None:
    text = "```bash\nvsb a \\\n  --b c  # note\n# comment\nvsb d  # needs: key\n```\n"
    assert commands(text) == ["vsb a --b c # note", "vsb d # needs: key"]
    assert [runnable(c) for c in commands(text)] == [True, False]
    readme = commands((ROOT / "README.md").read_text("utf-8"))
    assert readme[:2] == ["bash scripts/run_benchmark.sh # needs: fresh clone (CI runs it)",
                          "bash scripts/test.sh # needs: fresh clone (CI runs it)"]  # fmt: skip
    quick = [c for c in readme if runnable(c)]
    assert 4 <= len(quick) <= 10  # the quick start: at most ten lines
    for doc in documents():
        for cmd in commands(doc.read_text("utf-8")):
            assert "huggingface-cli" not in cmd, f"{doc.name}: {cmd} (the CLI is `hf download`)"


@pytest.mark.slow
def test_every_documented_command_runs_as_written(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env.pop("OPENAI_API_KEY", None)
    ran = 0
    said: list[str] = []
    for doc in documents():
        for cmd in commands(doc.read_text("utf-8")):
            if not runnable(cmd):
                continue
            proc = subprocess.run(
                ["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True,
                timeout=600,
            )  # fmt: skip
            assert proc.returncode == 0, (
                f"{doc.relative_to(ROOT)}: `{cmd}` exited {proc.returncode}:\n"
                f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            )
            ran += 1
            if doc.name == "README.md":
                said.append(" ".join((proc.stdout + proc.stderr).split()))
    assert ran >= 15
    # the quick start's expected output is what those commands print (timings aside)
    expected = re.search(
        r"^```text\n(.*?)^```", (ROOT / "README.md").read_text("utf-8"), re.S | re.M
    )
    assert expected is not None
    printed = " ".join(said)
    for line in expected[1].splitlines():
        pattern = re.escape(" ".join(line.split())).replace(r"6\.3\ s", r"[0-9.]+\ s")
        assert re.search(pattern, printed), (
            f"the README's expected output line is not printed: {line}"
        )
