"""``vsb site serve`` and ``vsb human serve``: local static file servers on 127.0.0.1
(http.server).

Beyond ``SimpleHTTPRequestHandler``: a path without an extension is served from the page of
that name (``/evaluate`` is ``evaluate.html``, as static hosts do), and a path holding a NUL
byte (``/index.html%00``) is answered 400 instead of dropping the connection. Only files whose
real path (every symbolic link resolved) lies inside the served folder are served: a link
that leads out of it (``rate/x.png -> /etc/passwd``) answers 404 like a missing file.

``make_rating_server`` serves the rating page alone: ``/`` and ``/evaluate.html``, the three
files it loads from ``static/`` and its opaque pictures under ``rate/``; every other path
(the leaderboard, the story pages with model names, ``images/``, ``data/``) answers 404.
"""

from __future__ import annotations

import os
import re
import sys
import urllib.parse
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from vsb.errors import InputError


class _QuietHandler(SimpleHTTPRequestHandler):
    """Serves files; request logging is dropped (the library never prints)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def translate_path(self, path: str) -> str:
        fs = super().translate_path(path)
        url_path = urllib.parse.urlsplit(path).path
        if (
            not url_path.endswith("/")
            and not os.path.splitext(fs)[1]
            and not os.path.exists(fs)
            and os.path.isfile(fs + ".html")
        ):
            return fs + ".html"
        return fs

    def send_head(self) -> Any:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path, errors="surrogatepass")
        if "\x00" in path:
            self.send_error(HTTPStatus.BAD_REQUEST, "NUL byte in the path")
            return None
        refused = self._refused(self.translate_path(self.path))
        if refused:
            self.send_error(HTTPStatus.NOT_FOUND, refused)
            return None
        return super().send_head()

    def _refused(self, fs: str) -> str:
        """Why the file ``fs`` is answered 404 ('' when it is served as usual)."""
        return "File not found" if fs and os.path.lexists(fs) and not self._inside(fs) else ""

    def _inside(self, fs: str) -> bool:
        """Whether ``fs``, every link on its way resolved, lies inside the served folder (a
        link in the site that leads out of it is never followed: 404)."""
        root = os.path.realpath(self.directory)
        real = os.path.realpath(fs)
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


class SiteServer(ThreadingHTTPServer):
    """A threading server that drops clients hanging up mid-response (a browser leaving a page
    while lazy images load) instead of printing a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):
            return
        super().handle_error(request, client_address)


def serve_until_interrupted(server: SiteServer) -> None:
    """Run ``server`` until Ctrl-C, then close it."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def make_server(site_dir: str | Path, port: int = 8000) -> SiteServer:
    """A server for ``site_dir`` bound to 127.0.0.1:``port`` (0 picks a free port); the
    caller runs it (``serve_until_interrupted``)."""
    root = Path(site_dir)
    if not (root / "index.html").is_file():
        raise InputError("not a built site (no index.html); run `vsb site build`", file=root)
    handler = partial(_QuietHandler, directory=str(root.resolve()))
    return SiteServer(("127.0.0.1", port), handler)


#: What the rating page loads besides itself (the page links to nothing else).
RATING_STATIC = ("static/style.css", "static/evaluate.css", "static/evaluate.js")
_RATE_IMAGE = re.compile(r"rate/[0-9a-f]{32}\.(?:png|jpg)")


class _RatingHandler(_QuietHandler):
    """The rating page and its own files; 404 for everything else."""

    def translate_path(self, path: str) -> str:
        url = urllib.parse.unquote(urllib.parse.urlsplit(path).path, errors="surrogatepass")
        rel = url.lstrip("/")
        if rel in ("", "evaluate", "evaluate.html"):
            rel = "evaluate.html"
        elif rel not in RATING_STATIC and not _RATE_IMAGE.fullmatch(rel):
            return ""
        return os.path.join(self.directory, *rel.split("/"))

    def _refused(self, fs: str) -> str:
        return (
            "Not on the rating server" if not fs or not os.path.isfile(fs) else super()._refused(fs)
        )


def make_rating_server(site_dir: str | Path, port: int = 8000) -> SiteServer:
    """A server of ``site_dir``'s rating page alone, bound to 127.0.0.1:``port``."""
    root = Path(site_dir)
    if not (root / "evaluate.html").is_file():
        raise InputError("not a built site with a rating page (no evaluate.html)", file=root)
    if "evaluate-data" not in (root / "evaluate.html").read_text("utf-8", errors="replace"):
        raise InputError(
            "this site's rating page offers no session (the release has no sealed oracle/)",
            file=root / "evaluate.html",
        )
    handler = partial(_RatingHandler, directory=str(root.resolve()))
    return SiteServer(("127.0.0.1", port), handler)
