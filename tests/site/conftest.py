"""Fixtures for the site tests: one synthetic frozen release and its built site."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from served import serving
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


#: The simulators of the small real release: the oracle (at (1, 1) on every plot) and the
#: mid-drift simulator, whose frames the reference judges answer on the judge page.
BUILT_MODELS = ("procedural-oracle", "procedural-drift-mid")
#: Every kind of condition the default release shows (the placebo and predicted memory too).
BUILT_CONDITIONS = ("independent", "structured_memory", "random_context", "predicted_memory")


@pytest.fixture(scope="session")
def built_release_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of a small release built by the main job's own code path (`vsb release
    build`: the default suite, the paraphrase and implicit-effect variants, judge validation
    with the reference judges) on two simulators and four conditions: every page kind, and
    every section, that the default site has, in seconds rather than a minute."""
    from vsb.release.build import build_release
    from vsb.release.config import BuildConfig

    out = tmp_path_factory.mktemp("built")
    built = build_release(
        BuildConfig(name="v0.0.38", out=out, models=BUILT_MODELS, conditions=BUILT_CONDITIONS)
    )
    assert built.site_dir is not None
    return Path(built.site_dir)


@pytest.fixture(scope="module")
def built_base_url(built_release_site: Path) -> Iterator[str]:
    """``built_release_site`` served on 127.0.0.1 by `vsb site serve`'s server."""
    from vsb.site.serve import make_server

    with serving(make_server(built_release_site, 0)) as url:
        yield url + "/"
