"""One full default-suite run (5 simulators × 6 conditions = 6,300 images), shared."""

from __future__ import annotations

from pathlib import Path

import pytest

from vsb.adapters.simulators import SIMULATORS
from vsb.conditions import condition_names
from vsb.run.runner import RunConfig, RunResult, run


@pytest.fixture(scope="session")
def full_run(
    suite_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[RunConfig, RunResult]:
    """The default suite, every simulator and condition, seed 0, two workers, cold cache."""
    root = tmp_path_factory.mktemp("full-run")
    config = RunConfig(
        suite_dir=suite_dir,
        models=list(SIMULATORS),
        conditions=condition_names(),
        out=root / "run",
        seed=0,
        workers=2,
        cache_dir=root / "cache",
    )
    return config, run(config)
