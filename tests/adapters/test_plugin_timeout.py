"""``vsb run --timeout`` reaches a plug-in model's HTTP client: a factory that names ``client``
is handed one with the timeout (a server on 127.0.0.1 that hangs is given up on); one that
does not is told, in one warning line, that the timeout does not reach it.

The plug-in is a real distribution made in the test (a module and a ``*.dist-info`` folder
whose ``entry_points.txt`` declares its models under ``vsb.adapters``), put on sys.path.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.plugins.demo_plugin import write_module_plugin
from vsb.cli.main import main
from vsb.generator.generate import generate_story, write_suite

PLUGIN = '''
"""Two painters that fetch their picture over HTTP."""

import httpx

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter
from vsb.errors import AdapterError

URL = {url!r}


class Fetching(ImageModelAdapter):
    version = "1"

    def _fetch(self, client):
        try:
            return GenerationResult(png=client.get(URL).content, cost_usd=0.0)
        except httpx.TimeoutException as err:
            raise AdapterError(f"{{self.name}}: timed out ({{type(err).__name__}})") from err


class WithClient(Fetching):
    """Takes an injected client, as docs/PLUGINS.md asks."""

    name = "hang-client"

    def __init__(self, client=None):
        self.client = client or httpx.Client(timeout=None)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        return self._fetch(self.client)


class NoClient(Fetching):
    """Makes its own client."""

    name = "hang-own"

    def __init__(self, **options):
        self.client = httpx.Client(timeout=None)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        return self._fetch(self.client)
'''


class _Hang(BaseHTTPRequestHandler):
    """Answers after ``release`` is set (or 20 s): a provider that stopped answering."""

    release = threading.Event()
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        self.release.wait(20)
        body = b"not a png"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hanging() -> Iterator[str]:
    _Hang.release.clear()
    _Hang.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hang)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/picture"
    finally:
        _Hang.release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def plugin(tmp_path: Path, hanging: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    entry_points = (
        "[vsb.adapters]\nhang-client = vsb_hang:WithClient\nhang-own = vsb_hang:NoClient\n"
    )
    site = write_module_plugin(
        tmp_path / "site", "vsb_hang", PLUGIN.format(url=hanging), entry_points
    )
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop("vsb_hang", None)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    write_suite([generate_story("counting", "easy", "c", seed=0)], tmp_path / "suite", seed=0)
    return tmp_path / "suite"


def _errors(run: Path) -> list[str]:
    rows = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    return [str(r["error"]) for r in rows]


def test_timeout_reaches_a_plug_in_that_takes_a_client(
    plugin: Path, suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--suite", str(suite), "--model", "hang-client", "--condition",
            "independent", "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c"),
            "--timeout", "0.5", "--max-attempts", "1"]  # fmt: skip
    assert main(argv) == 3  # incomplete: every image failed, none hung the run
    errors = _errors(tmp_path / "run")
    assert errors and all("timed out" in e for e in errors), errors
    assert _Hang.seen  # the requests reached the server
    assert "does not reach" not in capsys.readouterr().err


def test_a_plug_in_without_a_client_is_named_in_a_warning(
    plugin: Path, suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _Hang.release.set()  # answers at once: the run only shows what it was told
    argv = ["run", "--suite", str(suite), "--model", "hang-own,procedural-drift-mid",
            "--condition", "independent", "--out", str(tmp_path / "run"), "--cache",
            str(tmp_path / "c"), "--timeout", "5", "--dry-run"]  # fmt: skip
    assert main(argv) == 0
    warnings = [x for x in capsys.readouterr().err.splitlines() if x.startswith("warning:")]
    assert warnings == [
        "warning: --timeout does not reach hang-own: its factory takes no client= (an "
        "httpx.Client, docs/PLUGINS.md), so its requests wait as long as it lets them"
    ]
