"""A whole blinded session on ``evaluate.html`` in Debian's chromium through Playwright, from
disk (file://) and from ``vsb site serve`` at ``/evaluate``: keyboard and mouse, a reload
mid-session, a phone-sized viewport, focus on Download after Finish, the export downloaded
and read back by ``vsb human import --release``. Blinding: no model name and no control
answer in the page's source, DOM, image addresses, requests, local storage or export (the
test knows the controls only from the release, through ``vsb.human.blinding``).

Needs ``/usr/bin/chromium`` (CI: scripts/setup_env.sh installs it) and ``playwright``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from served import serving
from site_synth import HOSTILE_MODEL, make_release
from test_browser import CHROMIUM, CHROMIUM_ARGS

from vsb.cli.main import main
from vsb.human.blinding import Blinding, release_blinding
from vsb.human.models import CONTROL_BAD, CONTROL_GOOD
from vsb.human.write import load_report
from vsb.site.build import build_site
from vsb.site.serve import make_rating_server, make_server

MODELS = (CONTROL_GOOD, CONTROL_BAD, HOSTILE_MODEL)
#: What must never reach the rater: model names (and pieces of them), the control answer.
#: (The synthetic stories' texts carry markup too, so the hostile name is looked for by its
#: first word.)
SECRETS = (*MODELS, "evil", "procedural", "oracle", "amnesiac", "control", "good", "bad")
_OPAQUE_IMAGE = re.compile(r"^rate/[0-9a-f]{32}\.png$")

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


def _answer_item(page: Any, n: int, blinding: Blinding) -> None:
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
        a, b = (blinding.strips[item[k]].model for k in ("target_a", "target_b"))
        if {a, b} == {CONTROL_GOOD, CONTROL_BAD}:  # known only from the release
            page.keyboard.press("1" if a == CONTROL_GOOD else "3")
        else:
            page.locator(".ev-choice[data-choice='tie']").click()
        assert page.locator(".ev-choice[aria-pressed='true']").count() == 1
    if n % 2:
        page.keyboard.press("Enter")
    else:
        page.locator("#ev-next").click()


#: Opaque ids and image names (HMAC hex): "bad" is hex, so one can hold it by chance.
_HEX = re.compile(r"[0-9a-f]{16,}")


def _assert_blind(where: str, text: str) -> None:
    low = _HEX.sub("#", text.lower())
    leaked = [s for s in SECRETS if s.lower() in low]
    assert not leaked, f"{where} names {leaked}"


@pytest.fixture(scope="module")
def served(release_and_site: tuple[Path, Path]) -> Iterator[str]:
    with serving(make_server(release_and_site[1], 0)) as url:
        yield url


@pytest.fixture(scope="module")
def rating_served(release_and_site: tuple[Path, Path]) -> Iterator[str]:
    """`vsb human serve`'s server: the rating page alone, at /."""
    with serving(make_rating_server(release_and_site[1], 0)) as url:
        yield url


@pytest.mark.parametrize("how", ["file", "server", "rating"])
def test_whole_session_is_blind_and_imports(
    release_and_site: tuple[Path, Path],
    served: str,
    rating_served: str,
    tmp_path: Path,
    how: str,
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    release, site = release_and_site
    blinding = release_blinding(release)
    url = {
        "file": (site / "evaluate.html").resolve().as_uri(),
        "server": f"{served}/evaluate",
        "rating": f"{rating_served}/",
    }[how]
    source = (site / "evaluate.html").read_text()
    key = "vsb-evaluate:" + json.loads((release / "MANIFEST.json").read_text())["root_hash"]
    _assert_blind("the page source", source)
    (embedded,) = re.findall(r'id="evaluate-data">(.*?)</script>', source, re.DOTALL)
    _assert_blind("the page's data", json.dumps(json.loads(embedded), ensure_ascii=False))
    script = (site / "static" / "evaluate.js").read_text()  # its comments say "control"
    assert not any(m in script for m in (*MODELS, "procedural")), "the page script"
    errors: list[str] = []
    requests: list[str] = []
    storage: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
            page.on("request", lambda r: requests.append(r.url))
            page.clock.install()
            page.goto(url)
            assert page.locator("#ev-start").is_visible()
            # an older page's state (it named the models) is dropped on load
            old = {"v": 1, "letters": {"A": CONTROL_GOOD}, "items": [], "index": 0}
            page.evaluate("([k, v]) => localStorage.setItem(k, v)", [key, json.dumps(old)])
            page.reload()
            assert page.evaluate("k => localStorage.getItem(k)", key) is None
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
            for n in range(total):
                _assert_blind(f"the DOM at item {n}", page.content())
                srcs = page.eval_on_selector_all(
                    "#ev-body img", "els => els.map(e => e.getAttribute('src'))"
                )
                assert srcs and all(_OPAQUE_IMAGE.fullmatch(s) for s in srcs), srcs
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
                _answer_item(page, n, blinding)
            assert page.locator("#ev-done").is_visible()
            # Finish moves the focus to the Download button
            assert page.evaluate("document.activeElement.id") == "ev-export"
            assert f"You answered {total} of {total}" in page.locator("#ev-summary").inner_text()
            storage = page.evaluate(
                "() => Object.keys(localStorage).flatMap(k => [k, localStorage.getItem(k)])"
            )
            # a phone-sized screen: nothing wider than the viewport
            page.set_viewport_size({"width": 390, "height": 844})
            page.click("#ev-back")
            assert page.locator("#ev-item").is_visible()
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, width
            page.keyboard.press("Enter")
            with page.expect_download() as info:
                page.keyboard.press("Enter")  # the focused Download button
            export = tmp_path / "export.json"
            info.value.save_as(export)
        finally:
            browser.close()
    assert errors == []
    assert storage
    _assert_blind("local storage", "\n".join(storage))
    _assert_blind("the requests", "\n".join(requests))
    images = [u for u in requests if u.endswith(".png")]
    assert images and all(re.search(r"/rate/[0-9a-f]{32}\.png$", u) for u in images)
    _assert_blind("the export", export.read_text())
    doc = json.loads(export.read_text())
    assert doc["rater_id"] == "tester-1" and not doc["synthetic"] and doc["version"] == "2.0"
    assert len(doc["items"]) == total
    assert all(it["time_s"] >= 5.0 for it in doc["items"])
    out = tmp_path / "human"
    # the export cannot be read without the release that resolves its targets
    assert main(["human", "import", str(export), "--out", str(out)]) == 1
    assert main(["human", "import", str(export), "--out", str(out), "--release", str(release),
                 "--resamples", "50"]) == 0  # fmt: skip
    report = load_report(out)
    (rater,) = report.raters
    assert rater.rater_id == "tester-1" and not rater.excluded
    assert rater.n_control == 4 and rater.control_accuracy == 1.0
    assert rater.n_pairwise == 4 and rater.n_likert == 9
    assert rater.repeat_abs_diff is not None
    assert {m.model for m in report.model_means} <= set(MODELS)
    assert report.agreement is not None and report.agreement.rankings
