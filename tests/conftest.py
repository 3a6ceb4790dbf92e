"""Shared fixtures: the default suite, generated once per test session."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from vsb.generator.generate import generate_suite, write_suite
from vsb.story.models import Story

# No property test fails for taking long: on two workers sharing two cores an example can
# take seconds (Hypothesis's 200 ms deadline would make it a flaky failure, not a finding).
settings.register_profile("vsb", deadline=None)
settings.load_profile("vsb")


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


#: Under ``pytest -n N --dist loadgroup`` (scripts/test.sh) a worker takes a whole work unit:
#: by default a test module, so that its module fixtures are built once. Modules that share a
#: costly session fixture or a resource form one unit together (listed here by module: the
#: test ids are all the scheduler sees); the tests of a SPREAD module are units of their own.
UNITS = {
    # they build releases, each stage in worker processes of its own (two builds at once
    # only contend for the cores: tests/release 119 s in one process, 138 s on two workers),
    # or read built_release_site (a release built by the main job's code path, ~25 s)
    "builds": (
        "tests/site/test_accessibility.py", "tests/site/test_built_plots.py",
        "tests/site/test_site.py", "tests/site/test_site_helper.py",
        "tests/site/test_methodology_inventory.py", "tests/site/test_board_site.py",
        "tests/site/test_board_phone.py", "tests/site/test_vinabench_validity_page.py",
        "tests/release/test_build_judge.py", "tests/release/test_build_variants.py",
        "tests/release/test_main_job.py", "tests/release/test_build_corrected.py",
        "tests/release/test_release_own_models.py",
    ),
    # they start a Ray cluster: one at a time
    "ray": (
        "tests/test_ray_executor.py", "tests/cli/test_evaluate_extraction_cache.py",
        "tests/evaluators/test_evaluate_ray.py", "tests/evaluators/test_one_pass.py",
    ),
}  # fmt: skip
UNIT_OF = {module: unit for unit, modules in UNITS.items() for module in modules}
#: Modules whose tests share nothing costly and are each seconds long.
SPREAD = frozenset({"tests/test_paid_paths.py", "tests/test_docs_commands.py"})


def work_unit(nodeid: str) -> str:
    """The work unit of the test ``nodeid`` (see UNITS)."""
    module = nodeid.split("::", 1)[0]
    if module in SPREAD:
        return nodeid
    return UNIT_OF.get(module, module)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown without xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadgroup``: pytest-xdist's scope scheduler over ``work_unit`` (xdist's own
    loadgroup reads ``xdist_group`` marks through a node id attribute pytest 9 no longer has),
    the units in collection order (``pytest_collection_modifyitems`` puts the long ones first)."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # keep the order below, not units by test count
    return WorkUnits(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker under --dist loadgroup: the work units that hold a test marked
    ``slow`` first (stable otherwise), so that no long unit is left to the end while the other
    worker idles. Every worker sorts the same collection the same way."""
    if not getattr(config.option, "loadgroup", False):  # set by xdist in its workers
        return
    slow = {work_unit(it.nodeid) for it in items if it.get_closest_marker("slow") is not None}
    items.sort(key=lambda it: work_unit(it.nodeid) not in slow)


#: Terminal size variables: an xdist worker starts with COLUMNS=80 and LINES=24 in its
#: environment however pytest was started (so `vsb ledger` printed a table cut at 80 columns
#: in a worker, whole in one process); a worker takes the values of the pytest command.
TERMINAL = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput["vsb_terminal"] = {name: os.environ.get(name) for name in TERMINAL}


def pytest_configure(config: pytest.Config) -> None:
    sent = getattr(config, "workerinput", {}).get("vsb_terminal")
    for name, value in (sent or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
