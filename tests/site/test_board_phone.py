"""Issue 45, item 16: on a 390 px phone the leaderboard leads with memory coherence (the
benchmark's question) without sideways scrolling, and the table starts near the top; the
column picker still brings every column back. On the site of a small release built by the main
job's own code path (``built_release_site``), in Debian's chromium."""

from __future__ import annotations

from typing import Any

import pytest
from test_browser import CHROMIUM, browser  # noqa: F401  (fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent"),
]
PHONE = {"width": 390, "height": 844}


def _box(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    return dict(box)


def test_a_phone_sees_memory_coherence_first(
    browser: Any,  # noqa: F811
    built_base_url: str,
) -> None:
    page = browser.new_page(viewport=PHONE)
    try:
        page.goto(built_base_url + "index.html")
        row = "#leaderboard tbody tr:not([hidden])"
        cell = _box(page, f'{row} td[data-col="coherence"]')
        assert cell["x"] >= 0 and cell["x"] + cell["width"] <= PHONE["width"], cell
        top = _box(page, "#leaderboard")["y"]
        assert top < 400, f"the board starts {top:.0f} px down"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        # the columns a phone leaves out at first are one tap away
        glob = page.locator(f'{row} td[data-col="global"]').first
        assert not glob.is_visible()
        page.locator("details.column-picker summary").click()
        page.locator('fieldset[data-table="leaderboard"] input[value="global"]').check()
        assert glob.is_visible()
        # a wide screen shows the board as before
        wide = browser.new_page(viewport={"width": 1280, "height": 900})
        wide.goto(built_base_url + "index.html")
        assert wide.locator(f'{row} td[data-col="global"]').first.is_visible()
        wide.close()
    finally:
        page.close()
