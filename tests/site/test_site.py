"""The static site: every page names its release, numbers come from the release, text is
escaped, builds are deterministic."""

from __future__ import annotations

import json
import shutil
import threading
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest
from site_synth import HOSTILE, HOSTILE_MODEL, RELEASE

from vsb.cli.main import main
from vsb.errors import InputError, ReleaseError
from vsb.release.manifest import load_manifest
from vsb.site.build import build_site
from vsb.site.serve import make_server
from vsb.site.svg import Interval, Point, ci_chart, heatmap, scatter

SCRIPTS = ("static/sort.js", "static/board.js", "static/evaluate.js")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_expected_pages(synth_site: Path) -> None:
    rel = {p.relative_to(synth_site).as_posix() for p in _pages(synth_site)}
    for page in (
        "index.html", "comparisons.html", "stability.html", "judge.html", "methodology.html",
        "stories/index.html", "stories/cause_effect-easy/structured_memory.html",
        "stories/counting-medium-a/independent.html", "models/alpha.html",
    ):  # fmt: skip
        assert page in rel
    assert "evaluate.html" in rel  # the blinded human-evaluation page (issue #13)
    for name in ("style.css", "sort.js", "board.js"):
        assert (synth_site / "static" / name).is_file()


def test_every_page_names_release_and_root_hash(synth_site: Path, synth_release: Path) -> None:
    root_hash = load_manifest(synth_release).root_hash
    for page in _pages(synth_site):
        html = page.read_text()
        assert RELEASE in html, page
        assert root_hash in html, page


def test_no_cdn_and_every_local_link_resolves(synth_site: Path) -> None:
    """Every src and href is local and names a file of the site (downloads included), and
    every #fragment names an id of its page."""
    for page in _pages(synth_site):
        parser = _Tags()
        parser.feed(page.read_text())
        ids = {a.get("id") for _, a in parser.tags if a.get("id")}
        for tag, attrs in parser.tags:
            for attr in ("src", "href"):
                url = attrs.get(attr) or ""
                assert not url.startswith(("http:", "https:", "//")), (page, tag, url)
                if not url or url.startswith("data:"):
                    continue
                path, _, frag = url.partition("#")
                if path:
                    target = (page.parent / path).resolve()
                    assert target.is_file(), (page, url)
                elif frag:
                    assert frag in ids, (page, url)


def test_hostile_text_is_escaped_everywhere(synth_site: Path) -> None:
    seen_model = seen_text = False
    for page in _pages(synth_site):
        html = page.read_text()
        assert HOSTILE not in html, page
        assert "<script>alert" not in html and "<img src=x" not in html, page
        parser = _Tags()
        parser.feed(html)
        for tag, attrs in parser.tags:
            assert not any(k.startswith("on") for k in attrs), (page, tag, attrs)
            if tag == "script":  # local scripts, or the evaluate page's embedded JSON
                src = attrs.get("src") or ""
                data = attrs.get("type") == "application/json" and not src
                assert data or src.endswith(SCRIPTS), page
            if tag == "img":
                assert attrs.get("src") != "x", page
        seen_model |= "evil&lt;/script&gt;&lt;script&gt;alert(1)" in html
        seen_text |= "&lt;img src=x onerror=alert(2)&gt;" in html
    assert seen_model and seen_text  # the hostile strings are shown, as text
    assert any("evil-script" in p.name for p in (synth_site / "models").iterdir())


def test_leaderboard_numbers_come_from_scores_json(synth_site: Path, synth_release: Path) -> None:
    scores = json.loads((synth_release / "scores" / "scores.json").read_text())
    html = (synth_site / "index.html").read_text()
    primary = [r for r in scores["scores"] if r["condition"] == scores["primary_condition"]]
    assert primary
    for r in primary:
        g = r["global_score"]
        assert f"{g['score']:.3f}" in html
        assert f"[{g['ci_low']:.3f}, {g['ci_high']:.3f}]" in html
        assert f"{r['coherence']['score']:.3f}" in html
    judge = json.loads((synth_release / "validation" / "judge.json").read_text())
    jhtml = (synth_site / "judge.html").read_text()
    for a in judge["auroc"]:
        assert f"{a['auroc']:.3f}" in jhtml


def test_story_page_marks_every_requirement(synth_site: Path, synth_release: Path) -> None:
    story = json.loads((synth_release / "suite" / "cause_effect-easy.json").read_text())
    html = (synth_site / "stories" / "cause_effect-easy" / "independent.html").read_text()
    n_reqs = sum(len(s["requirements"]) for s in story["scenes"])
    marks = html.count('class="mark pass"') + html.count('class="mark fail"')
    assert marks == n_reqs * 3  # three models
    for scene in story["scenes"]:
        assert f"Scene {scene['index']}" in html
    assert html.count("<img ") == len(story["scenes"]) * 3


def test_build_is_deterministic(synth_release: Path, synth_site: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    build_site(synth_release, again)
    first = {
        p.relative_to(synth_site): p.read_bytes() for p in synth_site.rglob("*") if p.is_file()
    }
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert first == second


def test_site_must_live_outside_release(synth_release: Path) -> None:
    with pytest.raises(ReleaseError, match="outside"):
        build_site(synth_release, synth_release / "site")


def test_refuses_to_overwrite_foreign_directory(synth_release: Path, tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(ReleaseError, match="refusing"):
        build_site(synth_release, tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_svg_escapes_labels() -> None:
    for markup in (
        ci_chart([Interval(HOSTILE_MODEL, 0.5, 0.4, 0.6)], HOSTILE),
        scatter([Point(HOSTILE_MODEL, 0.5, 0.6)], HOSTILE, "x", "y"),
        heatmap([HOSTILE_MODEL], ["<b>"], [[0.5]], HOSTILE),
    ):
        assert "<script>" not in markup and "<img" not in markup and "<b>" not in markup
        assert markup.startswith("<svg")


def test_serve_and_cli(
    synth_release: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    assert main(["site", "build", str(synth_release), "--out", str(out)]) == 0
    assert "index.html" in capsys.readouterr().out
    server = make_server(out, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html") as resp:
            assert RELEASE in resp.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_serve_needs_a_site(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a built site"):
        make_server(tmp_path, 0)


def test_judge_page_says_which_frames_validation_left_out(
    synth_release: Path, synth_site: Path, tmp_path: Path
) -> None:
    """judge.json counts the frames of models without an oracle that validation leaves out; the
    judge page used to drop that count, so a reader could not tell the figures cover less."""
    release = tmp_path / "release"
    shutil.copytree(synth_release, release)
    path = release / "validation" / "judge.json"
    judge = json.loads(path.read_text())
    judge.update(n_frames_without_oracle=42, models_without_oracle=["stored", "demo-painter"])
    path.write_text(json.dumps(judge))
    build_site(release, tmp_path / "site")
    text = " ".join((tmp_path / "site" / "judge.html").read_text().split())
    assert "42 frames of models without an oracle" in text
    assert "(stored, demo-painter)" in text
    assert "without an oracle" not in (synth_site / "judge.html").read_text()  # none left out
