"""Fixtures for the human-evaluation tests: a small frozen release whose models include
both control simulators and a model named with markup, and synthetic raters of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from human_synth import MODELS, N_RATERS, SEED  # also puts tests/site on sys.path
from site_synth import make_release

from vsb.human.models import RatingFile
from vsb.human.simulate import simulate_raters, write_simulated


@pytest.fixture(scope="session")
def human_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A frozen synthetic release (read-only by convention)."""
    return make_release(tmp_path_factory.mktemp("human") / "release", models=MODELS)


@pytest.fixture(scope="session")
def simulated(human_release: Path) -> list[RatingFile]:
    """``N_RATERS`` synthetic raters (a quarter careless) of ``human_release``."""
    return simulate_raters(human_release, N_RATERS, SEED)


@pytest.fixture(scope="session")
def simulated_files(
    tmp_path_factory: pytest.TempPathFactory, human_release: Path, simulated: list[RatingFile]
) -> list[Path]:
    """The synthetic rating files on disk (read-only by convention)."""
    return write_simulated(tmp_path_factory.mktemp("ratings"), simulated, human_release)
