"""One pass: following run_dir from ``vsb evaluate`` enters no module of the evaluation pass
more than twice, for every kind of evaluator (frames, calls, models, a plug-in), a dry run and
the options that change the path (a selection, workers, the extraction cache).

``scripts/follow_run_dir.py`` does the following (a profiler on every call handed the run
directory, its ``RunView`` or a path under it); ``--executor ray`` is checked in
``test_evaluate_ray.py`` on its cluster.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.evaluators.test_plugin_evaluator import plugin  # noqa: F401  (a fixture)
from vsb.cli.main import main
from vsb.generator.generate import write_suite
from vsb.story.models import Story

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "follow_run_dir.py"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("follow_run_dir", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


follow = _script()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    root = tmp_path_factory.mktemp("one-pass")
    stories = [s for s in default_suite if s.difficulty != "hard"][::7][:3]
    write_suite(stories, root / "suite")
    argv = ["run", "--suite", str(root / "suite"), "--model",
            "procedural-drift-mid,procedural-amnesiac", "--condition", "independent,previous_image",
            "--out", str(root / "run"), "--cache", str(root / "g")]  # fmt: skip
    assert main(argv) == 0
    return root


def _entries(argv: list[str]) -> dict[str, list[str]]:
    entered = follow.follow(argv)
    return {m: calls for m, calls in entered.items() if m.startswith(follow.PASS)}


FAMILY = {
    "rules and pairwise": [],
    "every judge beside the local ones": [
        "--evaluator", "rules,pairwise,vlm,vlm_xframe", "--judge", "mock",
    ],
    "a judge alone": ["--evaluator", "vlm", "--judge", "mock"],
    "a dry run": ["--evaluator", "vlm,vlm_xframe", "--judge", "mock", "--dry-run"],
    "a selection in worker processes with the extraction cache": [
        "--model", "procedural-amnesiac", "--condition", "previous_image", "--workers", "2",
        "--extraction-cache",
    ],
}  # fmt: skip


@pytest.mark.parametrize("extra", list(FAMILY.values()), ids=list(FAMILY))
def test_no_module_of_the_pass_is_entered_more_than_twice(
    world: Path, extra: list[str], tmp_path: Path
) -> None:
    argv = ["evaluate", str(world / "run"), "--cache", str(tmp_path / "cache"), *extra]
    entered = _entries(argv)
    assert "evaluators/evaluate.py" in entered and "evaluators/interface.py" in entered
    over = {m: calls for m, calls in entered.items() if len(calls) > 2}
    assert not over, over


def test_the_evaluation_tables_are_read_once_and_written_once(world: Path, tmp_path: Path) -> None:
    """tables/io.py is entered twice: the earlier evaluation read once (both tables and the
    transcript: ``kept_evaluation``), the new one written once; before, the pass asked it for
    each file's name and then each file's rows (4 entries)."""
    argv = ["evaluate", str(world / "run"), "--cache", str(tmp_path / "cache"), "--evaluator",
            "rules,vlm", "--judge", "mock"]  # fmt: skip
    assert main(argv) == 0  # an earlier evaluation to keep rows from
    entered = follow.follow(argv)["tables/io.py"]
    assert entered == [
        "evaluators/evaluate.py:_evaluate_run -> kept_evaluation",
        "evaluators/evaluate.py:_evaluate_run -> write_evaluation",
    ]


def test_the_embedding_evaluators_too(world: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="needs the embed extra: pip install 'vsb[embed]'")
    from embed_helpers import save_tiny_clip, save_tiny_dino

    from vsb.story.io import load_suite

    texts = [sc.text for s in load_suite(world / "suite") for sc in s.scenes]
    clip, dino = save_tiny_clip(tmp_path / "clip", texts), save_tiny_dino(tmp_path / "dino")
    argv = ["evaluate", str(world / "run"), "--evaluator", "rules,clip,dino", "--clip-model",
            str(clip), "--dino-model", str(dino), "--cache", str(tmp_path / "cache"),
            "--batch-size", "8"]  # fmt: skip
    entered = _entries(argv)
    assert "evaluators/embed/signals.py" in entered
    assert not {m: c for m, c in entered.items() if len(c) > 2}


def test_a_plug_in_evaluator_too(world: Path, plugin: Path, tmp_path: Path) -> None:  # noqa: F811
    argv = ["evaluate", str(world / "run"), "--evaluator", "rules,brightness", "--cache",
            str(tmp_path / "cache")]  # fmt: skip
    entered = _entries(argv)
    assert not {m: c for m, c in entered.items() if len(c) > 2}


def test_the_count_sees_a_module_entered_more_than_twice(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: a pass that reads the run's frames in two more places (as the pass
    did before it planned every item first) enters interface.py four times."""
    from vsb.evaluators import interface, machinery

    def first(run: interface.RunView) -> None:
        interface.read_run(run.root)

    def second(run: interface.RunView) -> None:
        interface.read_run(run.root, check_images=True)

    real = machinery.run_evaluators

    def bouncing(evaluators: Any, run: Any, options: Any) -> Any:
        first(run)
        second(run)
        return real(evaluators, run, options)

    monkeypatch.setattr("vsb.evaluators.evaluate.run_evaluators", bouncing)
    argv = ["evaluate", str(world / "run"), "--cache", str(tmp_path / "cache")]
    assert len(_entries(argv)["evaluators/interface.py"]) == 4
    assert follow.main(argv) == 1  # the script's exit status says so too
    monkeypatch.undo()
    assert follow.main(argv) == 0
