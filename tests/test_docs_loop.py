"""The loops the docs show, run as written (issue #36): docs/providers.md's "Your own
pipeline" section (prompts out, the stand-in pipeline, stored:, evaluate, score, a release
with your model) and every snippet of docs/python.md, in order, in a fresh folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    return env


def _section(doc: str, heading: str) -> str:
    text = (ROOT / "docs" / doc).read_text("utf-8")
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end > 0 else len(text)]


def _commands(block: str) -> list[str]:
    out, pending = [], ""
    for line in block.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line)
    return out


@pytest.mark.slow
def test_the_outside_pipeline_loop_runs_as_written(tmp_path: Path) -> None:
    section = _section("providers.md", "## Your own pipeline: prompts out, images in")
    blocks = BLOCK.findall(section)
    scripts = [b for kind, b in blocks if kind == "python"]
    assert len(scripts) == 1 and scripts[0].startswith("# my_pipeline.py")
    (tmp_path / "my_pipeline.py").write_text(scripts[0], "utf-8")
    commands = [c for kind, b in blocks if kind == "bash" for c in _commands(b)]
    assert any("vsb suite prompts" in c for c in commands)
    assert any("vsb release build" in c and "--model stored:mine" in c for c in commands)
    for cmd in commands:
        proc = subprocess.run(
            ["bash", "-c", cmd], cwd=tmp_path, env=_env(), capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, f"`{cmd}` exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    scores = json.loads((tmp_path / "mine" / "scores" / "scores.json").read_text())
    mine = [r for r in scores["scores"] if r["model"] == "stored:mine"]
    assert {r["condition"] for r in mine} == {"independent", "previous_image"}
    assert all(r["global_score"]["score"] == 1.0 for r in mine)  # the oracle's frames
    release = tmp_path / "my-build" / "mine"
    board = json.loads((release / "release" / "scores" / "scores.json").read_text())
    assert {r["model"] for r in board["scores"]} >= {"procedural-oracle", "stored:mine"}
    assert "stored:mine" in (release / "site" / "index.html").read_text("utf-8")


@pytest.mark.slow
def test_every_python_snippet_runs_in_order(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "python.md").read_text("utf-8")
    snippets = [b for kind, b in BLOCK.findall(text) if kind == "python"]
    assert len(snippets) >= 4
    script = tmp_path / "notebook.py"
    script.write_text("\n".join(snippets), "utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "nb-run" / "scores" / "model_scores.csv").is_file()
    out = proc.stdout
    assert "stored:copies" in out and "mine" in out and "oracle" in out
