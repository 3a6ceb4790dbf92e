"""Shared fixtures: the default suite, generated once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from vsb.generator.generate import generate_suite, write_suite
from vsb.story.models import Story


@pytest.fixture(scope="session")
def default_suite() -> list[Story]:
    """The default suite at seed 0 (40 stories)."""
    return generate_suite(0)


@pytest.fixture(scope="session")
def suite_dir(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    """The default suite written to a directory (read-only by convention)."""
    out = tmp_path_factory.mktemp("suite")
    write_suite(default_suite, out, seed=0)
    return out
