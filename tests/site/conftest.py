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


PER_CELL_MODELS = ("procedural-oracle", "procedural-drift-mid")


@pytest.fixture(scope="session")
def per_cell_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A frozen release of a `vsb suite generate --per-cell 2` suite (60 stories), with two
    registered simulators' names (synthetic verdicts: the oracle's all pass)."""
    from vsb.generator.generate import generate_suite

    return make_release(
        tmp_path_factory.mktemp("percell") / "v0.0.2-percell",
        stories=generate_suite(0, per_cell=2),
        models=PER_CELL_MODELS,
        conditions=("structured_memory",),
        hostile=False,
        n_resamples=100,
        release="v0.0.2-percell",
    )


@pytest.fixture(scope="session")
def per_cell_site(tmp_path_factory: pytest.TempPathFactory, per_cell_release: Path) -> Path:
    """The site built from ``per_cell_release``."""
    out = tmp_path_factory.mktemp("percell-site") / "site"
    build_site(per_cell_release, out)
    return out
