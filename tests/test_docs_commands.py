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


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def _git_ignored(path: str) -> bool:
    """Whether .gitignore covers ``path`` (relative to the checkout; need not exist)."""
    cmd = ["git", "check-ignore", "--no-index", "-q", path]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True).returncode == 0


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
    # what the commands wrote is covered by .gitignore: run from a checkout, they leave
    # `git status` clean (issue 38: `vsb release keygen --out keys` left a private key there)
    made = sorted(p.name + ("/" if p.is_dir() else "") for p in tmp_path.iterdir())
    assert made
    tracked = set(_git("ls-files").split())
    unignored = [m for m in made if m.rstrip("/") not in tracked and not _git_ignored(m)]
    assert not unignored, f"documented commands write paths .gitignore does not cover: {unignored}"
    # the quick start's expected output is what those commands print (timings aside)
    printed = " ".join(said)
    _assert_printed(printed)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env.pop("OPENAI_API_KEY", None)
    return env


def _assert_printed(printed: str) -> None:
    """Every line of the README's expected output is in ``printed`` (timings aside)."""
    expected = re.search(
        r"^```text\n(.*?)^```", (ROOT / "README.md").read_text("utf-8"), re.S | re.M
    )
    assert expected is not None
    for line in expected[1].splitlines():
        pattern = re.sub(
            r"in\\ [0-9\\.]+\\ s", r"in\\ [0-9.]+\\ s", re.escape(" ".join(line.split()))
        )
        assert re.search(pattern, printed), (
            f"the README's expected output line is not printed: {line}"
        )


@pytest.mark.slow
def test_the_quick_start_prints_what_the_readme_shows_in_a_used_checkout(tmp_path: Path) -> None:
    """Issue 38, item 8: in a checkout where the tests and the main job already ran (a
    generation cache in the checkout's `.vsb-cache/`), the quick start, run as one script as a
    reader pastes it, still prints "840 generated": its scratch folder has its own cache."""
    quick = (ROOT / "README.md").read_text("utf-8").split("## Quick start", 1)[1]
    block = FENCE.search(quick)
    assert block is not None
    lines = [ln for ln in block[1].splitlines() if ln.strip() and ln.strip() != ACTIVATE]
    assert any(ln.startswith("vsb run ") for ln in lines)
    env = _env()
    # the checkout's own cache already holds every image of the quick start
    warm = "vsb suite generate --out suite && " + next(
        ln for ln in lines if ln.startswith("vsb run ")
    )
    subprocess.run(["bash", "-ec", warm], cwd=tmp_path, env=env, check=True, capture_output=True)
    assert (tmp_path / ".vsb-cache").is_dir()
    proc = subprocess.run(
        ["bash", "-ec", "\n".join(lines)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    _assert_printed(" ".join((proc.stdout + proc.stderr).split()))


def test_paths_into_the_build_are_right_from_the_scratch_folder() -> None:
    """Issue 45, item 13: the documented commands run in scratch/ (the README's quick start),
    so the main job's build, made in the checkout, is ``../build/``, not ``build/``."""
    wrong = [
        f"{doc.name}: {cmd}"
        for doc in documents()
        for cmd in commands(doc.read_text("utf-8"))
        if re.search(r"(^|[\s=])build/v", cmd)
    ]
    assert not wrong, "paths from the checkout root, not scratch/: " + "; ".join(wrong)
    assert any("../build/v0.1.0/release" in c for c in commands((ROOT / "README.md").read_text()))


def test_the_readme_stays_short() -> None:
    """Issue 38, item 7: at most 150 lines; tables of timings live in docs/performance.md."""
    text = (ROOT / "README.md").read_text("utf-8")
    assert len(text.splitlines()) <= 150
    assert "docs/performance.md#the-main-job-against-its-baseline" in text
    assert "## The main job against its baseline" in (ROOT / "docs" / "performance.md").read_text(
        "utf-8"
    )
    assert "| per image |" not in text  # the performance tables are not in the README
