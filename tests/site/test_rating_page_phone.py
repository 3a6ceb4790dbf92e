"""Issue 45, item 15: on the rating page (``evaluate.html``) every tap target is at least 44 px
tall on a 390 px phone, and a digit rates the highlighted aspect and moves on to the next one,
as the page's help and docs/human.md say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_browser import CHROMIUM, browser  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[2]
#: Apple's and WCAG 2.5.5's smallest comfortable touch target.
TAP_PX = 44
_TARGETS = "button, label, input, [role=radio], [role=button]"


def test_the_docs_say_a_digit_rates_and_moves_on() -> None:
    human = " ".join((REPO / "docs" / "human.md").read_text("utf-8").split())
    assert "rates the highlighted aspect and moves on to the next" in human
    page = (REPO / "vsb" / "site" / "templates" / "evaluate.html").read_text("utf-8")
    assert "rate the highlighted aspect and move on to the next" in " ".join(page.split())


def _short_targets(page: Any) -> list[str]:
    """The visible tap targets under 44 px tall: 'id-or-text: height'."""
    found = page.eval_on_selector_all(
        _TARGETS,
        "els => els.filter(e => e.offsetParent !== null).map(e => "
        "[e.id || e.getAttribute('aria-label') || e.textContent.trim().slice(0, 30),"
        " e.getBoundingClientRect().height])",
    )
    return [f"{name}: {h:.1f}" for name, h in found if h < TAP_PX]


def _walk_items(page: Any, *, until: str, check_digit: bool = False) -> tuple[set[str], list[str]]:
    """Sign in and answer item after item until ``until`` ("done": the end page; "both": a
    rating and a comparison seen); the kinds of item seen and the short tap targets of the
    first item of each kind. ``check_digit``: a digit must move the highlighted aspect on."""
    page.fill("#ev-rater", "tester-1")
    page.keyboard.press("Enter")
    kinds: set[str] = set()
    short: list[str] = []
    for _ in range(40):  # every kind of item: ratings and comparisons
        kind = page.locator("#ev-body").get_attribute("data-kind") or ""
        if kind not in kinds:
            kinds.add(kind)
            short += [f"{kind}: {s}" for s in _short_targets(page)]
        if kind == "likert":
            active = page.locator(".ev-dim.active").get_attribute("data-dim")
            page.keyboard.press("4")  # a digit rates the highlighted aspect, and moves on
            if check_digit:
                assert page.locator(".ev-dim.active").get_attribute("data-dim") != active
            for _ in range(5):
                page.keyboard.press("4")
        else:
            page.keyboard.press("2")
        page.keyboard.press("Enter")
        if until == "done" and page.locator("#ev-done").is_visible():
            break
        if until == "both" and {"likert", "pair"} <= kinds:
            break
    return kinds, short


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent")
def test_tap_targets_are_44_px_tall_on_a_phone(
    browser: Any,  # noqa: F811
    synth_site: Path,
) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto((synth_site / "evaluate.html").as_uri())
        assert page.locator("#ev-start").is_visible()
        short = _short_targets(page)
        kinds, found = _walk_items(page, until="done", check_digit=True)
        short += found
        assert {"likert", "pair"} <= kinds, kinds
        assert page.locator("#ev-done").is_visible()
        short += [f"done: {s}" for s in _short_targets(page)]
        page.click("#ev-back")
        page.locator(".ev-zoom").first.click()
        short += [f"zoom: {s}" for s in _short_targets(page)]
        assert not short, f"tap targets under {TAP_PX} px tall at 390 px: {short}"
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent")
def test_picture_buttons_are_tap_sized_before_their_pictures_arrive(
    browser: Any,  # noqa: F811
    synth_site: Path,
) -> None:
    """CI found the comparison's picture buttons 2 px tall: measured before their PNGs had
    arrived, a button holding an image with no size yet is only its border. A phone on a slow
    line sees that page; the buttons must be tap-sized whether or not the picture has come."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    held: list[Any] = []
    try:
        page.route("**/*.png", lambda route: held.append(route))  # the pictures never arrive
        page.goto((synth_site / "evaluate.html").as_uri())
        kinds, short = _walk_items(page, until="both")
        assert held, "the test held no picture: the route did not apply"
        assert {"likert", "pair"} <= kinds, kinds
        assert not short, f"tap targets under {TAP_PX} px before the pictures came: {short}"
    finally:
        page.close()
