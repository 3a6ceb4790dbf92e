"""A plug-in evaluator found by entry point runs through ``vsb evaluate`` with no edit to vsb.

The plug-in is a real distribution made in the test: a module and a ``*.dist-info`` folder
whose ``entry_points.txt`` declares it under the group ``vsb.evaluators``, put on sys.path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluators.test_evaluate import make_run
from tests.plugins.demo_plugin import write_module_plugin
from vsb.cli.main import main
from vsb.errors import InputError
from vsb.evaluators import registry
from vsb.story.models import Story
from vsb.tables import iter_rows

PLUGIN = '''
"""A third-party evaluator: one signal per frame, the mean grey level."""

import numpy as np
from PIL import Image

from vsb.evaluators.interface import EvaluatorOutput, StoryEvaluator, signal_row


class Brightness(StoryEvaluator):
    name = "brightness"
    kind = "signals"
    reads = "any"
    description = "mean grey level of each frame"

    def evaluate_story(self, story, frames):
        out = EvaluatorOutput()
        for f in frames:
            if f.path is not None:
                with Image.open(f.path) as im:
                    value = float(np.asarray(im.convert("L")).mean()) / 255
                out.signals.append(signal_row(f, "brightness_mean", value, self.name))
        return out
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    points = "[vsb.evaluators]\nbrightness = vsb_brightness:Brightness\n"
    site = write_module_plugin(tmp_path / "site", "vsb_brightness", PLUGIN, points)
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop("vsb_brightness", None)


def test_a_plug_in_evaluator_runs_through_vsb_evaluate(
    plugin: Path, tmp_path: Path, default_suite: list[Story]
) -> None:
    stories = [s for s in default_suite if s.difficulty != "hard"][:2]
    run = make_run(tmp_path / "run", stories)
    assert "brightness" in registry.evaluator_names()
    info = registry.evaluator_info("brightness")
    assert (info.kind, info.reads, info.paid, info.stage) == ("signals", "any", False, "frames")
    assert info.target == "vsb_brightness:Brightness"
    argv = ["evaluate", str(run), "--evaluator", "rules,brightness", "--workers", "2"]
    assert main(argv) == 0
    ev = run / "evaluations"
    rows = [r for _, r in iter_rows(ev / "signals.parquet")]
    mine = [r for r in rows if r["evaluator"] == "brightness"]
    assert len(mine) == sum(len(s.scenes) for s in stories)
    assert all(0.0 < r["value"] < 1.0 for r in mine)
    manifest = json.loads((ev / "manifest.json").read_text())
    assert manifest["evaluators"] == ["rules", "brightness"]


def test_an_unknown_evaluator_lists_the_plug_ins_too(plugin: Path) -> None:
    with pytest.raises(InputError) as err:
        registry.evaluator_info("brightnes")
    assert "did you mean 'brightness'" in err.value.message
    assert "rules" in err.value.message and "brightness" in err.value.message


def test_a_plug_in_never_shadows_a_built_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plug-in named like a built-in is refused with one line naming it (it used to be
    ignored silently, so the built-in ran under the plug-in's name)."""
    info = tmp_path / "evil-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[vsb.evaluators]\nrules = evil:Rules\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError, match="plug-in evil: entry point 'rules'"):
        registry.evaluator_info("rules")


def test_the_registry_imports_none_of_its_evaluators() -> None:
    code = (
        "import sys, vsb.evaluators.registry as r\n"
        "r.evaluator_names()\n"
        "loaded = [m for m in sys.modules if m.startswith('vsb.evaluators.')]\n"
        "print(sorted(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    for member in ("rules", "pairwise", "vlm_judge", "embed", "extractor"):
        assert f"'vsb.evaluators.{member}'" not in out, out
