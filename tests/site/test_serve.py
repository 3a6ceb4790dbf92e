"""``vsb site serve`` against a real server on 127.0.0.1: extensionless page paths, and a NUL
byte in the path answered 400 (no dropped connection, no traceback)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from served import serving

from vsb.site.serve import make_server


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    site = tmp_path / "site"
    (site / "stories" / "s1").mkdir(parents=True)
    (site / "index.html").write_text("<p>index</p>")
    (site / "evaluate.html").write_text("<p>the evaluate page</p>")
    (site / "stories" / "index.html").write_text("<p>stories</p>")
    (site / "stories" / "s1" / "plain.html").write_text("<p>plain</p>")
    with serving(make_server(site, 0)) as url:
        yield url


def test_extensionless_paths_serve_their_page(served: str) -> None:
    with httpx.Client(base_url=served) as client:
        for path, text in [
            ("/evaluate", "the evaluate page"),
            ("/evaluate.html", "the evaluate page"),
            ("/evaluate?x=1", "the evaluate page"),
            ("/stories/s1/plain", "plain"),
            ("/stories/", "stories"),
            ("/", "index"),
        ]:
            resp = client.get(path)
            assert resp.status_code == 200 and text in resp.text, path
            assert resp.headers["content-type"].startswith("text/html"), path
        assert client.get("/nothing").status_code == 404
        assert client.get("/evaluate/").status_code == 404


def test_a_nul_byte_in_the_path_is_a_400(served: str, capfd: pytest.CaptureFixture[str]) -> None:
    with httpx.Client(base_url=served) as client:
        for path in ("/index.html%00", "/%00", "/evaluate%00.html"):
            resp = client.get(path)
            assert resp.status_code == 400, path
        assert client.get("/index.html").status_code == 200  # still serving
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ValueError" not in err
