"""axe-core 4 (the standard accessibility engine) on every kind of site page at 1280 px and
390 px: no serious or critical violation, on the synthetic site and on the site of a small
release built by the main job's code path (which has sections the synthetic one lacks, such as
the reference judges' table of the judge page).

axe-core is a test dependency installed by ``bash scripts/setup_env.sh --test`` with npm into
``.venv/axe`` (never committed, never loaded by the site); the test injects it into each page
through Playwright and Debian's chromium, and is skipped when either is absent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from page_kinds import page_kinds
from test_browser import CHROMIUM, WIDTHS, base_url, browser  # noqa: F401  (fixtures)

REPO = Path(__file__).resolve().parents[2]
AXE = REPO / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
#: One page of every kind the site has.
PAGES = (
    "index.html", "models/alpha.html", "comparisons.html", "stability.html", "judge.html",
    "stories/index.html", "stories/cause_effect-hard/structured_memory.html", "methodology.html",
    "analysis.html", "evaluate.html",
)  # fmt: skip
BLOCKING = ("serious", "critical")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent"),
    pytest.mark.skipif(
        not AXE.is_file(), reason=f"{AXE} is absent (bash scripts/setup_env.sh --test)"
    ),
]


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's violations of the loaded page (every rule axe runs by default)."""
    page.add_script_tag(content=AXE.read_text("utf-8"))
    result = page.evaluate("async () => JSON.stringify(await axe.run(document))")
    return list(json.loads(result)["violations"])


def _describe(v: dict[str, Any]) -> str:
    targets = [" ".join(n["target"]) for n in v["nodes"][:3]]
    return f"{v['id']} ({v['impact']}, {len(v['nodes'])} nodes, e.g. {targets})"


@pytest.mark.parametrize("width", WIDTHS)
def test_no_serious_or_critical_violation_on_any_page_kind(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    synth_site: Path,
    width: int,
) -> None:
    found: list[str] = []
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        for rel in PAGES:
            assert (synth_site / rel).is_file(), rel
            page.goto(base_url + rel)
            page.wait_for_load_state("load")
            found += [
                f"{rel} @ {width}px: {_describe(v)}"
                for v in axe_violations(page)
                if v["impact"] in BLOCKING
            ]
    finally:
        page.close()
    assert not found, "\n".join(found)


#: The page kinds of the default site (vsb.site.build's list; leaderboard/* needs a judge).
BUILT_KINDS = {
    "index.html", "models/*", "comparisons.html", "analysis.html", "stability.html",
    "judge.html", "evaluate.html", "stories/index.html", "stories/*/*", "methodology.html",
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_no_serious_or_critical_violation_on_the_built_site(
    browser: Any,  # noqa: F811
    built_base_url: str,
    built_release_site: Path,
    width: int,
) -> None:
    kinds = page_kinds(built_release_site)
    assert set(kinds) >= BUILT_KINDS, sorted(kinds)
    assert 'id="reference"' in (built_release_site / "judge.html").read_text("utf-8")
    found: list[str] = []
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        for rel in kinds.values():
            page.goto(built_base_url + rel)
            page.wait_for_load_state("load")
            found += [
                f"{rel} @ {width}px: {_describe(v)}"
                for v in axe_violations(page)
                if v["impact"] in BLOCKING
            ]
    finally:
        page.close()
    assert not found, "\n".join(found)
