"""Drive Debian's chromium through Playwright over the built synthetic site.

Needs ``/usr/bin/chromium`` (CI: ``apt-get install -y chromium``) and the ``playwright``
Python package; no Playwright browser download is used."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from site_synth import RELEASE

from vsb.site.serve import make_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
PAGES = (
    "index.html", "models/alpha.html", "comparisons.html", "stability.html", "judge.html",
    "stories/index.html", "stories/cause_effect-hard/structured_memory.html", "methodology.html",
)  # fmt: skip

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent (apt-get install chromium)"
    ),
]


@pytest.fixture(scope="module")
def base_url(synth_site: Path) -> Iterator[str]:
    server = make_server(synth_site, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_leaderboard_renders_in_chromium(
    base_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    shots = tmp_path_factory.mktemp("screenshots")
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
            page.goto(base_url + "index.html")
            table = page.locator("table#leaderboard")
            assert table.is_visible()
            assert table.locator("tbody tr").count() == 3
            # the local JS made it sortable; sorting by model name puts 'alpha' first
            assert "js-sortable" in (table.get_attribute("class") or "")
            plots = page.locator("svg.plot")
            assert plots.count() == 3
            for i in range(3):
                box = plots.nth(i).bounding_box()
                assert box is not None and box["width"] > 200 and box["height"] > 80
            assert page.locator("svg.plot circle.ci, svg.plot line.ci").count() >= 3
            assert page.locator("svg.plot circle.point").count() == 3
            assert page.locator("svg.plot rect.cell").count() == 30
            header = table.locator("thead th").nth(2)  # global
            header.click()
            first = table.locator("tbody tr").first.locator("td.model").inner_text()
            header.click()
            last_first = table.locator("tbody tr").first.locator("td.model").inner_text()
            assert first != last_first
            shot = shots / "leaderboard.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot: {shot}")
            for path in PAGES:
                page.goto(base_url + path)
                assert page.locator(".release-name").inner_text() == RELEASE, path
                assert RELEASE in page.locator("footer").inner_text(), path
            story = shots / "story.png"
            page.goto(base_url + "stories/cause_effect-easy/structured_memory.html")
            page.wait_for_load_state("load")
            assert page.locator("td.frame img").count() == 9
            # the strips load lazily; ask for every image now, then wait until all decoded
            page.evaluate("document.querySelectorAll('img').forEach(i => { i.loading = 'eager'; })")
            page.wait_for_function(
                "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)",
                timeout=15_000,
            )
            page.screenshot(path=str(story), full_page=True)
            print(f"screenshot: {story}")
        finally:
            browser.close()
    assert errors == []
