"""Plots that fit the screen, measured in chromium on the site of a small release built by
the main job's code path: at 1280 px and 390 px every plot lies inside the viewport with all
its points (no sideways scrolling, in the page or in the plot's frame), its labels overlap
neither each other nor leave the plot, and the longest story's strip shows every scene on a
laptop screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from page_kinds import page_kinds
from test_browser import CHROMIUM, WIDTHS, browser  # noqa: F401  (fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent"),
]

#: Per visible plot: its box, its figure's overflow, its points' and labels' boxes.
MEASURE = """() => [...document.querySelectorAll('svg.plot')]
  .filter(s => s.getClientRects().length)
  .map(s => {
    const box = e => { const r = e.getBoundingClientRect();
                       return [r.left, r.top, r.right, r.bottom]; };
    const fig = s.closest('figure');
    return {
      title: s.getAttribute('aria-label'),
      svg: box(s),
      overflow: fig ? fig.scrollWidth - fig.clientWidth : 0,
      points: [...s.querySelectorAll('.point')].map(box),
      labels: [...s.querySelectorAll('text.label')].map(box),
    };
  })"""


def _overlap(a: list[float], b: list[float]) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5


@pytest.mark.parametrize("width", WIDTHS)
def test_every_plot_fits_the_screen_with_its_points_and_labels(
    browser: Any,  # noqa: F811
    built_base_url: str,
    built_release_site: Path,
    width: int,
) -> None:
    page = browser.new_page(viewport={"width": width, "height": 900})
    seen = 0
    try:
        for rel in page_kinds(built_release_site).values():
            page.goto(built_base_url + rel)
            page.wait_for_load_state("load")
            assert page.evaluate("document.documentElement.scrollWidth") <= width, rel
            for plot in page.evaluate(MEASURE):
                seen += 1
                where = f"{rel} @ {width}px: {plot['title']}"
                x0, y0, x1, y1 = plot["svg"]
                assert x0 >= 0 and x1 <= width + 0.5, (where, plot["svg"])
                assert plot["overflow"] <= 0, where  # nothing to scroll to inside the figure
                for p in plot["points"]:
                    assert x0 - 0.5 <= p[0] and p[2] <= x1 + 0.5, (where, p)
                    assert y0 - 0.5 <= p[1] and p[3] <= y1 + 0.5, (where, p)
                labels = plot["labels"]
                for i, a in enumerate(labels):
                    assert x0 - 0.5 <= a[0] and a[2] <= x1 + 0.5, (where, a)
                    for b in labels[i + 1 :]:
                        assert not _overlap(a, b), (where, a, b)
    finally:
        page.close()
    assert seen >= 4  # the leaderboard's and the model page's plots at least


def test_the_longest_story_strip_shows_every_scene_on_a_laptop(
    browser: Any,  # noqa: F811
    built_base_url: str,
    built_release_site: Path,
) -> None:
    rel = page_kinds(built_release_site)["stories/*/*"]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(built_base_url + rel)
        page.wait_for_load_state("load")
        heads = page.locator("table.strips thead th").all_inner_texts()
        assert "scene 8" in heads, heads
        wrap = page.locator("table.strips").locator("xpath=..")
        sizes = wrap.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert sizes[0] <= sizes[1], sizes
        right = wrap.bounding_box()["x"] + wrap.bounding_box()["width"]
        for img in page.locator("table.strips td.frame img").all():
            box = img.bounding_box()
            assert box is not None and box["x"] + box["width"] <= right + 0.5, box
            assert box["width"] >= 64, box  # still a picture, not a dot
    finally:
        page.close()
