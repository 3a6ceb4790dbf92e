"""scripts/setup_env.sh (issue 14, item 9): the main job installs only vsb's runtime
dependencies (no browser, no torch, no test tools), the test set-up installs the dev and embed
extras, the CPU torch 2.13.0 and chromium, and uv does the installing when it is there.

Run against stub python3, uv, apt-get and id executables that only log their arguments."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "scripts" / "setup_env.sh"
STUB = """#!{bash}
# a stub that logs its name and arguments; python3 -m venv DIR makes DIR/bin/python
echo "$(basename "$0") $*" >> "$LOG"
if [ "${1:-}" = "-m" ] && [ "${2:-}" = "venv" ]; then
  /bin/mkdir -p "$3/bin" && /bin/cp "$0" "$3/bin/python"
fi
exit 0
"""


def _run(tmp_path: Path, *args: str, uv: bool = True) -> list[str]:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts" / "setup_env.sh")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    names = ["python3", "apt-get", "uv"] if uv else ["python3", "apt-get"]
    bash = shutil.which("bash") or "/bin/bash"
    for name in names:
        (stubs / name).write_text(STUB.replace("{bash}", bash))
        (stubs / name).chmod(0o755)
    (stubs / "id").write_text("#!/bin/sh\necho 0\n")
    (stubs / "id").chmod(0o755)
    for tool in ("dirname", "basename"):
        (stubs / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    log = tmp_path / "log"
    env = {"PATH": str(stubs), "LOG": str(log), "HOME": str(tmp_path)}
    res = subprocess.run(
        [bash, str(repo / "scripts" / "setup_env.sh"), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    return log.read_text().splitlines() if log.exists() else []


def _flat(lines: list[str]) -> str:
    return "\n".join(lines)


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_main_job_installs_no_browser_no_torch_no_test_tools(tmp_path: Path) -> None:
    lines = _run(tmp_path)
    text = _flat(lines)
    assert "python3 -m venv .venv" in text
    assert any(ln.startswith("uv pip install") and ln.endswith("-e .") for ln in lines), text
    for unwanted in ("chromium", "apt-get", "torch", "[dev", "embed", "playwright"):
        assert unwanted not in text, unwanted


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_test_setup_installs_extras_cpu_torch_and_chromium(tmp_path: Path) -> None:
    lines = _run(tmp_path, "--test")
    text = _flat(lines)
    torch = [ln for ln in lines if "torch" in ln and "[dev" not in ln]
    pip = "python -m pip install --quiet --disable-pip-version-check"
    # the fid extra's torch-fidelity without its declared torchvision (it would replace torch)
    assert torch == [f"{pip} torch==2.13.0", f"{pip} --no-deps torch-fidelity==0.4.0"]
    extras = [ln for ln in lines if ln.startswith("uv pip install") and "-e .[dev,embed" in ln]
    assert extras, text  # the dev and embed extras (and any other test extra) through uv
    assert "apt-get install -y -qq chromium" in text


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_pip_when_asked_or_when_there_is_no_uv(tmp_path: Path) -> None:
    lines = _run(tmp_path / "a", "--pip")
    assert not any(ln.startswith("uv ") for ln in lines)
    assert "python -m pip install --quiet --disable-pip-version-check -e ." in lines
    # no uv on PATH: pip is asked to bootstrap it into .venv; the stub pip makes no uv, so
    # the dependencies go through pip
    lines = _run(tmp_path / "b", uv=False)
    assert "python -m pip install --quiet --disable-pip-version-check uv" in lines
    assert "python -m pip install --quiet --disable-pip-version-check -e ." in lines


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
@pytest.mark.parametrize("args", [(), ("--test",), ("--pip",)])
def test_bytecode_is_compiled_at_set_up(tmp_path: Path, args: tuple[str, ...]) -> None:
    """Issue #25: every process compiled ~1,000 modules (none kept under
    PYTHONDONTWRITEBYTECODE); set-up compiles them once, through uv, pip and compileall."""
    lines = _run(tmp_path, *args)
    uv = [ln for ln in lines if ln.startswith("uv pip install")]
    assert all("--compile-bytecode" in ln for ln in uv), uv
    assert not any("--no-compile" in ln for ln in lines)
    assert "python -m compileall -q -j 0 vsb" in lines, lines
