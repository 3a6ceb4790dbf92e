"""``vsb site serve``: a local static file server on 127.0.0.1 (http.server).

Beyond ``SimpleHTTPRequestHandler``: a path without an extension is served from the page of
that name (``/evaluate`` is ``evaluate.html``, as static hosts do), and a path holding a NUL
byte (``/index.html%00``) is answered 400 instead of dropping the connection.
"""

from __future__ import annotations

import os
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
        return super().send_head()


class SiteServer(ThreadingHTTPServer):
    """A threading server that drops clients hanging up mid-response (a browser leaving a page
    while lazy images load) instead of printing a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):
            return
        super().handle_error(request, client_address)


def make_server(site_dir: str | Path, port: int = 8000) -> SiteServer:
    """A server for ``site_dir`` bound to 127.0.0.1:``port`` (0 picks a free port); the
    caller runs ``serve_forever()`` and ``server_close()``."""
    root = Path(site_dir)
    if not (root / "index.html").is_file():
        raise InputError("not a built site (no index.html); run `vsb site build`", file=root)
    handler = partial(_QuietHandler, directory=str(root.resolve()))
    return SiteServer(("127.0.0.1", port), handler)
