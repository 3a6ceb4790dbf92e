"""A vsb HTTP server (``vsb site serve``'s or ``vsb human serve``'s) run on 127.0.0.1 in a
thread for the length of a ``with`` block: the tests' one way to serve a site."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import HTTPServer


@contextlib.contextmanager
def serving(server: HTTPServer) -> Iterator[str]:
    """``server`` answering in a thread; yields its base URL (``http://127.0.0.1:PORT``)."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
