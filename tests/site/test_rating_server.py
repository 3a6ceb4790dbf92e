"""`vsb human serve SITE`: the rating page alone. Every other path answers 404; the page links
to nothing else on the site; a rater's picture is never the bytes (nor a hard link) of a file
under a model's name, on this server or on `vsb site serve`; a rater can enlarge a picture,
by keyboard too; the desktop thumbnails are large enough to judge details."""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from served import serving
from site_synth import HOSTILE_MODEL, make_release
from test_browser import CHROMIUM, CHROMIUM_ARGS

from vsb.cli.main import main
from vsb.human.blinding import release_blinding, with_nonce
from vsb.human.models import CONTROL_BAD, CONTROL_GOOD
from vsb.site.build import build_site
from vsb.site.serve import RATING_STATIC, make_rating_server

MODELS = (CONTROL_GOOD, CONTROL_BAD, HOSTILE_MODEL)


@pytest.fixture(scope="module")
def release_and_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("rating")
    release = make_release(root / "release", models=MODELS)
    build_site(release, root / "site")
    return release, root / "site"


@pytest.fixture(scope="module")
def rating_url(release_and_site: tuple[Path, Path]) -> Iterator[str]:
    with serving(make_rating_server(release_and_site[1], 0)) as url:
        yield url + "/"


def _payload(site: Path) -> dict[str, Any]:
    text = (site / "evaluate.html").read_text("utf-8")
    (embedded,) = re.findall(r'id="evaluate-data">(.*?)</script>', text, re.DOTALL)
    result: dict[str, Any] = json.loads(embedded)
    return result


def _rated(site: Path) -> list[str]:
    return sorted({p for s in _payload(site)["stories"] for t in s["strips"] for p in t["images"]})


def test_only_the_rating_page_and_its_own_files_are_served(
    release_and_site: tuple[Path, Path], rating_url: str
) -> None:
    site = release_and_site[1]
    with httpx.Client(base_url=rating_url) as client:
        for path in ("", "evaluate.html", "evaluate", *RATING_STATIC, *_rated(site)[:20]):
            r = client.get("/" + path)
            assert r.status_code == 200, path
        assert "evaluate-data" in client.get("/").text
        others = [p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()]
        allowed = {"evaluate.html", *RATING_STATIC, *(p for p in others if p.startswith("rate/"))}
        refused = [p for p in others if p not in allowed]
        assert any(p.startswith("images/") for p in refused)
        assert "stories/index.html" in refused and "index.html" in refused
        for path in [*refused, "rate/", "static/", "images/", "rate/../index.html",
                     "%2e%2e/index.html", "stories", "index", "rate/x.png"]:  # fmt: skip
            assert client.get("/" + path).status_code == 404, path
        assert client.get("/evaluate.html%00").status_code == 400


def test_the_rating_page_links_to_nothing_else_on_the_site(
    release_and_site: tuple[Path, Path],
) -> None:
    text = (release_and_site[1] / "evaluate.html").read_text("utf-8")
    refs = re.findall(r'(?:href|src)="([^"]*)"', text)
    assert refs
    outside = [r for r in refs if not r.startswith("#") and r not in (*RATING_STATIC, "data:,")]
    assert not outside, outside
    assert "<nav" not in text


def test_a_raters_picture_is_never_the_bytes_of_a_models_file(
    release_and_site: tuple[Path, Path],
) -> None:
    release, site = release_and_site
    blinding = release_blinding(release)
    by_name = {blinding.image_name(p): p for s in blinding.strips.values() for p in s.images}
    named = {
        hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in (site, release)
        for p in folder.rglob("*")
        if p.is_file() and not p.relative_to(folder).as_posix().startswith("rate/")
    }
    rated = _rated(site)
    assert rated
    for rel in rated:
        f = site / rel
        assert f.stat().st_nlink == 1, rel  # a copy, never a hard link
        data = f.read_bytes()
        assert hashlib.sha256(data).hexdigest() not in named, rel
        source = release / by_name[rel]
        with Image.open(io.BytesIO(data)) as a, Image.open(source) as b:
            assert a.size == b.size and a.tobytes() != b.tobytes()  # issue 45: other pixels


def test_the_nonce_goes_where_decoders_skip_it() -> None:
    buf = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 10, 10)).save(buf, "PNG")
    png = buf.getvalue()
    marked = with_nonce(png, "ab" * 16)
    assert marked != png and b"vsb-rate" in marked
    with Image.open(io.BytesIO(marked)) as im:
        im.load()
        assert im.size == (4, 3) and im.getpixel((0, 0)) == (200, 10, 10)
    buf = io.BytesIO()
    Image.new("RGB", (4, 3), (0, 0, 0)).save(buf, "JPEG")
    with Image.open(io.BytesIO(with_nonce(buf.getvalue(), "cd" * 16))) as im:
        im.load()
        assert im.size == (4, 3)


def test_the_command_refuses_a_folder_without_a_rating_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["human", "serve", str(tmp_path), "--port", "0"]) != 0
    err = capsys.readouterr().err
    assert "evaluate.html" in err and "Traceback" not in err


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent")
def test_a_rater_enlarges_a_picture_by_keyboard_and_thumbnails_are_large(
    rating_url: str,
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(rating_url)
            page.fill("#ev-rater", "zoomer")
            page.keyboard.press("Enter")
            position = page.locator("#ev-position").inner_text()
            page.locator(".ev-zoom").first.focus()
            page.keyboard.press("Enter")
            dialog = page.locator("#ev-zoom")
            assert dialog.evaluate("d => d.open")
            assert page.locator("#ev-position").inner_text() == position  # not "next item"
            big = page.locator("#ev-zoom-img").bounding_box()
            assert big is not None and big["width"] >= 512, big
            assert re.search(
                r"rate/[0-9a-f]{32}\.png$", page.locator("#ev-zoom-img").get_attribute("src") or ""
            )
            page.keyboard.press("Escape")
            assert not dialog.evaluate("d => d.open")
            assert page.evaluate("document.activeElement.classList.contains('ev-zoom')")
            page.keyboard.press(" ")  # Space on the focused picture enlarges it too
            assert dialog.evaluate("d => d.open")
            page.keyboard.press("Escape")
            # every picture of a rating item and of a comparison is at least 128 px wide
            kinds: set[str] = set()
            for _ in range(20):
                widths = page.eval_on_selector_all(
                    "#ev-body img", "els => els.map(e => e.getBoundingClientRect().width)"
                )
                assert widths and min(widths) >= 128, widths
                kind = page.locator("#ev-body").get_attribute("data-kind") or ""
                kinds.add(kind)
                if {"likert", "pair"} <= kinds:
                    break
                for _ in range(6):  # answer (six aspects, or 2: about the same), then next
                    page.keyboard.press("3" if kind == "likert" else "2")
                page.locator("#ev-next").click()
            assert {"likert", "pair"} <= kinds, kinds
        finally:
            browser.close()


def test_the_command_serves_the_rating_page_until_stopped(
    release_and_site: tuple[Path, Path],
) -> None:
    import signal
    import subprocess
    import sys

    site = release_and_site[1]
    argv = [sys.executable, "-m", "vsb", "human", "serve", str(site), "--port", "0"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            line = proc.stdout.readline()
            url = re.search(r"http://127\.0\.0\.1:\d+/", line)
            assert url, line
            assert "evaluate-data" in httpx.get(url.group(0)).text
            assert httpx.get(url.group(0) + "index.html").status_code == 404
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
        assert proc.returncode == 0
        assert "Traceback" not in proc.stderr.read()
