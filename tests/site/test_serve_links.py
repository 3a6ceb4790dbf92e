"""``vsb site serve`` and ``vsb human serve`` serve only files whose real path (links
resolved) lies inside the served folder: a link in rate/, static/ or anywhere else that leads
out of it answers 404, with a real server on 127.0.0.1 (issue 45, item 9)."""

from __future__ import annotations

from pathlib import Path

import httpx
from served import serving

from vsb.site.serve import make_rating_server, make_server

SECRET = "the secret outside the site"
PICTURE = "0123456789abcdef0123456789abcdef"


def _site(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_text(SECRET)
    (outside / "style.css").write_text(SECRET)
    site = tmp_path / "site"
    (site / "rate").mkdir(parents=True)
    (site / "static").mkdir()
    (site / "index.html").write_text("<p>index</p>")
    (site / "evaluate.html").write_text('<script id="evaluate-data">{}</script>')
    (site / "static" / "evaluate.css").write_text("body {}")
    (site / "rate" / f"{'f' * 32}.png").write_text("a rater's picture")
    (site / "static" / "evaluate.js").symlink_to(site / "static" / "evaluate.css")  # inside
    (site / "rate" / f"{PICTURE}.png").symlink_to(outside / "secret.png")
    (site / "static" / "style.css").symlink_to(outside / "style.css")
    (site / "leak.png").symlink_to(outside / "secret.png")
    (site / "away").symlink_to(outside, target_is_directory=True)
    return site, outside


def test_a_link_out_of_the_site_is_a_404(tmp_path: Path) -> None:
    site, _ = _site(tmp_path)
    with serving(make_server(site, 0)) as url, httpx.Client(base_url=url) as client:
        for path in (f"/rate/{PICTURE}.png", "/static/style.css", "/leak.png", "/leak",
                     "/away/secret.png", "/away/", "/away"):  # fmt: skip
            resp = client.get(path)
            assert resp.status_code == 404 and SECRET not in resp.text, path
        assert client.get("/static/evaluate.js").text == "body {}"  # a link that stays inside
        assert client.get(f"/rate/{'f' * 32}.png").status_code == 200
        assert client.get("/").status_code == 200


def test_a_link_out_of_the_rating_site_is_a_404(tmp_path: Path) -> None:
    site, _ = _site(tmp_path)
    with serving(make_rating_server(site, 0)) as url, httpx.Client(base_url=url) as client:
        for path in (f"/rate/{PICTURE}.png", "/static/style.css"):
            resp = client.get(path)
            assert resp.status_code == 404 and SECRET not in resp.text, path
        assert client.get("/static/evaluate.js").text == "body {}"
        assert client.get(f"/rate/{'f' * 32}.png").status_code == 200
        assert client.get("/").status_code == 200
