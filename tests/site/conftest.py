"""Fixtures for the site tests: one synthetic frozen release and its built site."""

from __future__ import annotations

from pathlib import Path

import pytest
from site_synth import make_release

from vsb.site.build import build_site


@pytest.fixture(scope="session")
def synth_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A frozen synthetic release (read-only by convention)."""
    return make_release(tmp_path_factory.mktemp("release") / "v0.0.1-test")


@pytest.fixture(scope="session")
def synth_site(tmp_path_factory: pytest.TempPathFactory, synth_release: Path) -> Path:
    """The site built from ``synth_release``."""
    out = tmp_path_factory.mktemp("site") / "site"
    build_site(synth_release, out)
    return out
