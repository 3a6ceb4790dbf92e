"""``vsb evaluate --executor ray`` on a local two-CPU Ray cluster: the same rows, byte for
byte, as the local executor — rules and pairwise as Ray tasks, the CLIP and DINOv2 models
in Ray actors (tiny random-weight models built in the test; no download)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from embed_helpers import save_tiny_clip, save_tiny_dino

from vsb.cli.main import main
from vsb.generator.generate import write_suite
from vsb.story.models import Story
from vsb.tables import read_columns

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install 'vsb[ray]'")
pytest.importorskip("transformers", reason="needs the embed extra: pip install 'vsb[embed]'")

OUT = ("requirements.parquet", "signals.parquet")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    root = tmp_path_factory.mktemp("eval-ray")
    stories = [s for s in default_suite if s.difficulty != "hard"][::6][:3]
    write_suite(stories, root / "suite")
    argv = ["run", "--suite", str(root / "suite"), "--model",
            "procedural-drift-mid,procedural-amnesiac", "--condition", "independent,previous_image",
            "--out", str(root / "run"), "--cache", str(root / "g")]  # fmt: skip
    assert main(argv) == 0
    save_tiny_clip(root / "clip", [sc.text for s in stories for sc in s.scenes])
    save_tiny_dino(root / "dino")
    return root


def _evaluate(root: Path, run: Path, *extra: str) -> dict[str, bytes]:
    argv = ["evaluate", str(run), "--evaluator", "rules,pairwise,clip,dino", "--clip-model",
            str(root / "clip"), "--dino-model", str(root / "dino"), "--cache",
            str(run.parent / f"{run.name}-cache"), "--batch-size", "4", *extra]  # fmt: skip
    assert main(argv) == 0
    return {name: (run / "evaluations" / name).read_bytes() for name in OUT}


def _column(path: Path, name: str) -> list[object]:
    return read_columns(path, [name])[name]


def test_ray_evaluation_equals_the_local_one(cluster: None, world: Path, tmp_path: Path) -> None:
    local, remote = tmp_path / "local", tmp_path / "ray"
    shutil.copytree(world / "run", local)
    shutil.copytree(world / "run", remote)
    want = _evaluate(world, local)
    got = _evaluate(world, remote, "--executor", "ray")
    assert "rules" in _column(local / "evaluations/requirements.parquet", "evaluator")
    assert "clip" in _column(local / "evaluations/signals.parquet", "evaluator")
    assert got == want


def test_an_unreadable_image_gives_the_same_rows_from_ray_workers(
    cluster: None, world: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #23 item 3: an image that does not decode used to stop the pass (one line from
    the worker, exit 1); on Ray as locally it is now that image's ``unreadable`` rows."""
    files = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        run = tmp_path / name
        shutil.copytree(world / "run", run)
        broken = sorted((run / "images").rglob("*.png"))[3]
        broken.write_bytes(b"\x89PNG\r\n\x1a\n broken")
        capsys.readouterr()
        assert main(["evaluate", str(run), "--evaluator", "rules,pairwise", *extra]) == 0
        assert "Traceback" not in capsys.readouterr().err
        files[name] = {n: (run / "evaluations" / n).read_bytes() for n in OUT}
    assert files["ray"] == files["local"]
    assert "unreadable" in _column(tmp_path / "local/evaluations/requirements.parquet", "verdict")


def test_ray_address_needs_the_ray_executor(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(world / "run"), "--ray-address", "auto"]) == 1
    assert "--ray-address needs --executor ray" in capsys.readouterr().err


def test_following_run_dir_on_ray_enters_no_module_more_than_twice(
    cluster: None, world: Path, tmp_path: Path
) -> None:
    """Issue #40: on Ray as locally, following run_dir from ``vsb evaluate`` enters no module
    of the evaluation pass more than twice (``scripts/follow_run_dir.py``)."""
    from tests.evaluators.test_one_pass import follow

    run = tmp_path / "run"
    shutil.copytree(world / "run", run)
    argv = ["evaluate", str(run), "--evaluator", "rules,pairwise,clip,dino", "--clip-model",
            str(world / "clip"), "--dino-model", str(world / "dino"), "--cache",
            str(tmp_path / "cache"), "--batch-size", "4", "--executor", "ray"]  # fmt: skip
    entered = {m: c for m, c in follow.follow(argv).items() if m.startswith(follow.PASS)}
    assert "evaluators/evaluate_ray.py" in entered or "evaluators/machinery.py" in entered
    assert not {m: c for m, c in entered.items() if len(c) > 2}
