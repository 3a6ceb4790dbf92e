"""Drive Debian's chromium through Playwright over the built synthetic site: every page kind
at 1280 px and 390 px wide, downloads, filters and selectors, and keyboard-only sorting.

Needs ``/usr/bin/chromium`` (CI: ``apt-get install -y chromium``) and the ``playwright``
Python package; no Playwright browser download is used. Screenshots go to a pytest tmp dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from served import serving
from site_synth import RELEASE

from vsb.site.serve import make_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
#: One page of every kind.
PAGES = (
    "index.html", "models/alpha.html", "comparisons.html", "stability.html", "judge.html",
    "stories/index.html", "stories/cause_effect-hard/structured_memory.html", "methodology.html",
)  # fmt: skip
WIDTHS = (1280, 390)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent (apt-get install chromium)"
    ),
]


@pytest.fixture(scope="module")
def base_url(synth_site: Path) -> Iterator[str]:
    with serving(make_server(synth_site, 0)) as url:
        yield url + "/"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class _Page:
    """A page that records console errors, page errors and dialogs."""

    def __init__(self, browser: Any, width: int) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("dialog", lambda d: self.errors.append(f"dialog: {d.message}"))


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_kind_at_desktop_and_phone_width(
    browser: Any, base_url: str, width: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    shots = tmp_path_factory.mktemp(f"screenshots-{width}")
    p = _Page(browser, width)
    page = p.page
    for path in PAGES:
        page.goto(base_url + path)
        assert page.locator(".release-name").inner_text() == RELEASE, path
        assert RELEASE in page.locator("footer").inner_text(), path
        # the page itself never scrolls sideways; wide tables scroll inside their wrapper
        assert page.evaluate("document.documentElement.scrollWidth") <= width, (path, width)
        page.screenshot(path=str(shots / (path.replace("/", "_") + ".png")))
    page.goto(base_url + "index.html")
    wrap = page.locator("#leaderboard").locator("xpath=..")
    sizes = wrap.evaluate("e => [e.scrollWidth, e.clientWidth]")
    if width == 1280:  # the default columns fit a laptop screen
        assert sizes[0] <= sizes[1], sizes
    else:  # on a phone the table scrolls, and the model column stays in view
        cell = page.locator("#leaderboard tbody tr:not([hidden]) th.model").first
        assert cell.evaluate("e => getComputedStyle(e).position") == "sticky"
        before = cell.bounding_box()["x"]
        wrap.evaluate("e => { e.scrollLeft = 400; }")
        after = cell.bounding_box()["x"]
        assert after <= before and after >= wrap.bounding_box()["x"] - 1
        # charts shrink to a phone's width and their text stays legible
        for svg in page.locator("section.plots:not([hidden]) svg.plot").all():
            outer = svg.bounding_box()
            assert outer is not None and outer["x"] >= 0 and outer["x"] + outer["width"] <= width
            box = svg.locator("text").first.bounding_box()
            assert box is not None and box["height"] >= 9, box
    assert p.errors == []
    page.close()


def test_downloads_resolve(browser: Any, base_url: str) -> None:
    page = _Page(browser, 1280).page
    for path in ("index.html", "models/alpha.html", "comparisons.html", "stories/index.html"):
        page.goto(base_url + path)
        links = page.locator("a[download]")
        assert links.count() >= 2
        for href in {links.nth(i).get_attribute("href") for i in range(links.count())}:
            url = page.evaluate("h => new URL(h, location.href).href", href)
            resp = page.request.get(url)
            assert resp.ok, url
            body = resp.body()
            assert body, url
            if url.endswith(".csv"):
                assert b"," in body.split(b"\n", 1)[0]
            elif url.endswith(".json"):
                assert resp.json()
    page.goto(base_url + "index.html")
    with page.expect_download() as info:
        page.locator("p.downloads a", has_text="CSV").first.click()
    assert info.value.suggested_filename == "leaderboard.csv"
    page.close()


def test_selectors_and_filters_change_what_is_shown(browser: Any, base_url: str) -> None:
    p = _Page(browser, 1280)
    page = p.page
    page.goto(base_url + "index.html")
    shown = page.locator("#leaderboard tbody tr:visible")
    assert shown.count() == 3
    assert {r.get_attribute("data-condition") for r in shown.all()} == {"structured_memory"}
    page.select_option("#condition-select", "independent")
    assert {r.get_attribute("data-condition") for r in shown.all()} == {"independent"}
    assert page.locator("#leaderboard caption").inner_text().startswith("Leaderboard, independent")
    assert page.locator("section.plots:visible").get_attribute("data-condition") == "independent"
    assert page.locator("#horizon tbody tr:visible").count() == 3
    # column picker: the ten dimensions go, the counts come
    dims = page.locator('#leaderboard thead th[data-col="dims"]')
    assert dims.first.is_visible() and not page.locator('th[data-col="counts"]').first.is_visible()
    page.locator("details.column-picker summary").click()
    page.locator('fieldset input[value="dims"]').uncheck()
    page.locator('fieldset input[value="counts"]').check()
    assert not dims.first.is_visible() and page.locator('th[data-col="counts"]').first.is_visible()
    # story filters
    page.goto(base_url + "stories/index.html")
    rows = page.locator("#stories tbody tr:visible")
    out = page.locator("#story-filters output")
    assert rows.count() == 3 and out.inner_text() == "3 of 3 stories shown"
    page.select_option('select[name="difficulty"]', "hard")
    assert rows.count() == 1 and out.inner_text() == "1 of 3 stories shown"
    assert rows.first.get_attribute("data-difficulty") == "hard"
    page.select_option('select[name="difficulty"]', "")
    page.select_option('select[name="scenes"]', "5")
    assert rows.count() == 1 and rows.first.get_attribute("data-scenes") == "5"
    page.select_option('select[name="scenes"]', "")
    page.select_option('select[name="category"]', "counting")
    assert rows.count() == 1
    page.select_option('select[name="category"]', "")
    fail = page.locator('select[name="fail"] option').nth(1).get_attribute("value")
    page.select_option('select[name="fail"]', fail)
    n = rows.count()
    assert all(fail in (r.get_attribute("data-fail") or "").split() for r in rows.all())
    page.fill('input[name="q"]', "zzz-no-such-story")
    assert rows.count() == 0 and out.inner_text() == "0 of 3 stories shown"
    page.fill('input[name="q"]', "")
    assert rows.count() == n
    assert p.errors == []
    page.close()


def _tab_walk(page: Any, limit: int) -> list[dict[str, Any]]:
    """Focus the page top, press Tab up to ``limit`` times; what each stop was."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Tab")
    stops = []
    for _ in range(limit):
        stops.append(
            page.evaluate(
                """() => { const e = document.activeElement; if (!e) return {};
                  const t = e.closest('table');
                  return {tag: e.tagName, cls: e.className, table: t ? t.dataset.k : null,
                          href: e.getAttribute('href')}; }"""
            )
        )
        if stops[-1].get("tag") == "BODY":
            break
        page.keyboard.press("Tab")
    return stops


@pytest.mark.parametrize("path", ["index.html", "comparisons.html", "models/alpha.html"])
def test_keyboard_reaches_the_sort_of_every_table(browser: Any, base_url: str, path: str) -> None:
    p = _Page(browser, 1280)
    page = p.page
    page.goto(base_url + path)
    # the first stop is the skip link, which moves focus to the main content
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == "#main"
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    n_tables = page.evaluate(
        """() => { let k = 0; document.querySelectorAll('table.sortable').forEach(t => {
             if (t.offsetParent !== null) t.dataset.k = String(k++); }); return k; }"""
    )
    assert n_tables >= 1
    stops = _tab_walk(page, 4000)
    headers = [s for s in stops if s.get("tag") == "TH"]
    # exactly one tab stop per table, and every table's sort is reached
    assert len(headers) == n_tables, (len(headers), n_tables)
    assert {h["table"] for h in headers} == {str(k) for k in range(n_tables)}
    # sort from the keyboard: arrows move along the header row, Enter sorts
    first = page.locator("table.sortable").first
    th = first.locator("thead th[tabindex='0']")
    th.focus()
    page.keyboard.press("ArrowRight")
    focused = page.evaluate("document.activeElement.cellIndex")
    assert focused == 1
    page.keyboard.press("Enter")
    sorted_th = first.locator("thead th").nth(1)
    assert sorted_th.get_attribute("aria-sort") in ("ascending", "descending")
    assert first.locator("thead th[tabindex='0']").count() == 1
    # no header reads an arrow glyph: the sort icon is aria-hidden decoration
    assert sorted_th.locator(".sort-icon").get_attribute("aria-hidden") == "true"
    assert "↕" not in sorted_th.inner_text()
    # the current page is marked in the navigation
    nav = page.locator('header nav a[aria-current="page"]')
    assert nav.count() == (1 if path in ("index.html", "comparisons.html") else 0)
    assert p.errors == []
    page.close()


def test_story_strips_load(browser: Any, base_url: str) -> None:
    page = _Page(browser, 1400).page
    page.goto(base_url + "stories/cause_effect-easy/structured_memory.html")
    page.wait_for_load_state("load")
    assert page.locator("td.frame img").count() == 9
    page.evaluate("document.querySelectorAll('img').forEach(i => { i.loading = 'eager'; })")
    page.wait_for_function(
        "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)",
        timeout=15_000,
    )
    # full model names in the requirement headers, not clipped
    for th in page.locator("th.mark-h").all():
        assert th.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        assert th.inner_text().strip().replace("\n", "") == th.get_attribute("title")
    page.close()
