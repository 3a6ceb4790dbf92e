"""A whole blinded session on ``evaluate.html`` opened from disk (file://) in Debian's
chromium through Playwright: keyboard and mouse, a reload mid-session, a phone-sized
viewport, the export downloaded and read back by ``vsb human import``.

Needs ``/usr/bin/chromium`` (CI: scripts/setup_env.sh installs it) and ``playwright``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from site_synth import HOSTILE_MODEL, make_release
from test_browser import CHROMIUM, CHROMIUM_ARGS

from vsb.cli.main import main
from vsb.human.models import CONTROL_BAD, CONTROL_GOOD
from vsb.human.write import load_report
from vsb.site.build import build_site

MODELS = (CONTROL_GOOD, CONTROL_BAD, HOSTILE_MODEL)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent (apt-get install chromium)"
    ),
]


@pytest.fixture(scope="module")
def release_and_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("eval")
    release = make_release(root / "release", models=MODELS)
    build_site(release, root / "site")
    return release, root / "site"


def _state(page: Any) -> dict[str, Any]:
    raw = page.evaluate(
        "() => { for (let i = 0; i < localStorage.length; i++) {"
        " const k = localStorage.key(i); if (k.startsWith('vsb-evaluate:'))"
        " return localStorage.getItem(k); } return null; }"
    )
    assert raw is not None
    result: dict[str, Any] = json.loads(raw)
    return result


def _answer_item(page: Any, n: int) -> None:
    """Answer the item on screen: keys for most, the mouse for some."""
    body = page.locator("#ev-body")
    page.clock.fast_forward(5_000)  # 5 s per item: above the 4 s median-time exclusion
    if body.get_attribute("data-kind") == "likert":
        for k in range(6):
            if n % 3 == 0 and k == 2:  # a mouse click on the third aspect
                page.locator(".ev-dim").nth(2).locator("button[data-value='2']").click()
            else:
                page.keyboard.press(str(1 + (n + k) % 5))
        assert page.locator(".ev-score[aria-pressed='true']").count() == 6
    else:
        state = _state(page)
        item = state["items"][state["index"]]
        if item["kind"] == "control":  # the known answer: the perfect simulator's side
            page.keyboard.press("1" if item["model_a"] == CONTROL_GOOD else "3")
        else:
            page.locator(".ev-choice[data-choice='tie']").click()
        assert page.locator(".ev-choice[aria-pressed='true']").count() == 1
    if n % 2:
        page.keyboard.press("Enter")
    else:
        page.locator("#ev-next").click()


def test_whole_session_from_disk(release_and_site: tuple[Path, Path], tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    release, site = release_and_site
    url = (site / "evaluate.html").resolve().as_uri()
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
            page.clock.install()
            page.goto(url)
            assert page.locator("#ev-start").is_visible()
            # a rater id with markup is refused on the page (and by the import)
            page.fill("#ev-rater", "<b>x</b>")
            page.click("#ev-start-button")
            assert "letters, digits" in page.locator("#ev-rater-error").inner_text()
            page.fill("#ev-rater", "tester-1")
            page.keyboard.press("Enter")
            assert page.locator("#ev-item").is_visible()
            total = len(_state(page)["items"])
            assert total == 8 + 4 + 4 + 1  # likert, pairwise, control, the repeated item
            # blinded: no model name is ever on screen
            for n in range(total):
                text = page.locator("#evaluate").inner_text()
                assert not any(m in text for m in MODELS), text
                if n == 5:  # reload mid-session: nothing is lost
                    before = _state(page)
                    page.reload()
                    assert page.locator("#ev-position").inner_text() == f"Item 6 of {total}"
                    assert _state(page)["answers"] == before["answers"]
                    page.keyboard.press("ArrowLeft")  # the last answered item, still answered
                    pressed = page.locator("[aria-pressed='true']").count()
                    assert pressed in (1, 6)
                    page.keyboard.press("ArrowRight")
                    assert page.locator("#ev-position").inner_text() == f"Item 6 of {total}"
                _answer_item(page, n)
            assert page.locator("#ev-done").is_visible()
            assert f"You answered {total} of {total}" in page.locator("#ev-summary").inner_text()
            # a phone-sized screen: nothing wider than the viewport
            page.set_viewport_size({"width": 390, "height": 844})
            page.click("#ev-back")
            assert page.locator("#ev-item").is_visible()
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, width
            page.keyboard.press("Enter")
            with page.expect_download() as info:
                page.click("#ev-export")
            export = tmp_path / "export.json"
            info.value.save_as(export)
        finally:
            browser.close()
    assert errors == []
    doc = json.loads(export.read_text())
    assert doc["rater_id"] == "tester-1" and not doc["synthetic"]
    assert sorted(doc["letters"].values()) == sorted(MODELS)
    assert len(doc["items"]) == total
    assert all(it["time_s"] >= 5.0 for it in doc["items"])
    out = tmp_path / "human"
    assert main(["human", "import", str(export), "--out", str(out), "--release", str(release),
                 "--resamples", "50"]) == 0  # fmt: skip
    report = load_report(out)
    (rater,) = report.raters
    assert rater.rater_id == "tester-1" and not rater.excluded
    assert rater.n_control == 4 and rater.control_accuracy == 1.0
    assert rater.repeat_abs_diff is not None
    assert {m.model for m in report.model_means} <= set(MODELS)
    assert report.agreement is not None and report.agreement.rankings
