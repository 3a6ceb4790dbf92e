"""Fixtures for the scores tests (helpers live in score_synth.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from score_synth import Row, write_run


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``make_run(rows, name=..., **manifest)`` -> run directory."""

    def make(rows: Iterable[Row], name: str = "run", **kw: Any) -> Path:
        return write_run(tmp_path / name, rows, **kw)

    return make


SIMULATORS = (
    "procedural-oracle,procedural-drift-low,procedural-drift-mid,procedural-amnesiac,"
    "procedural-sloppy"
)


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default suite run through the five simulators (independent, structured_memory)
    and evaluated, once per session; skipped until the runner and evaluators exist."""
    pytest.importorskip("vsb.run.runner", reason="vsb run not available yet")
    pytest.importorskip("vsb.evaluators.evaluate", reason="vsb evaluate not available yet")
    from vsb.cli.main import main

    root = tmp_path_factory.mktemp("sim")
    suite, run = root / "suite", root / "run"
    assert main(["suite", "generate", "--out", str(suite)]) == 0
    argv = ["run", "--suite", str(suite), "--model", SIMULATORS]
    argv += ["--condition", "independent,structured_memory", "--out", str(run)]
    assert main(argv) == 0
    assert main(["evaluate", str(run)]) == 0
    return run
