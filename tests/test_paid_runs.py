"""Paid runs that never waste money or leak a key (issue #11), end to end.

Against a real local HTTP server speaking the OpenAI images API (tests/openai_images_server.py,
latency and seeded random 429s): ``vsb run`` SIGKILLed at random points and resumed; a canary
key that must appear nowhere; budget, dry run, per-provider concurrency, exit statuses; and
regression tests for every bug the issue found (written against the interfaces that existed
before the fix, so that they fail there for the reason named)."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter
from vsb.adapters.providers.imagen import ImagenModel
from vsb.adapters.providers.openai import OpenAIImages
from vsb.adapters.providers.replicate import ReplicateModel
from vsb.adapters.registry import get_adapter, resolve_models
from vsb.adapters.simulators import SIMULATORS, ProceduralSimulator
from vsb.cli.main import main
from vsb.conditions import ConditionContext
from vsb.errors import AdapterError, InputError
from vsb.generator.generate import generate_story, write_suite
from vsb.run.runner import RunConfig, run

SERVER = Path(__file__).parent / "openai_images_server.py"
CANARY = "sk-canary-5b1e0c77d2"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """Three stories of 3, 5 and 5 scenes."""
    out = tmp_path / "suite"
    write_suite(
        [
            generate_story("wardrobe", "easy", "w", seed=1),
            generate_story("possession", "medium", "p", seed=2),
            generate_story("counting", "medium", "c", seed=3),
        ],
        out,
        seed=0,
    )
    return out


@contextmanager
def images_server(log: Path, **opts: Any) -> Iterator[str]:
    """The local OpenAI images server; yields its base URL (``…/v1``)."""
    args = [sys.executable, str(SERVER), "--log", str(log)]
    for k, v in opts.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _events(log: Path) -> list[dict[str, Any]]:
    if not log.is_file():
        return []
    return [json.loads(x) for x in log.read_text().splitlines() if x.endswith("}")]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return {**env, "OPENAI_API_KEY": CANARY, "NO_PROXY": "*", **extra}


def _ledger(run_dir: Path) -> list[tuple[int, str, int, str | None]]:
    """(session, status, success, error) of every adapter attempt."""
    with sqlite3.connect(run_dir / "ledger.sqlite") as db:
        rows = db.execute(
            "SELECT session, status, success, error FROM requests WHERE cache_hit = 0 "
            "ORDER BY rowid"
        ).fetchall()
    return [(int(a), str(b), int(c), d) for a, b, c, d in rows]


# --- kill and resume against a real server -----------------------------------------------


def test_killed_and_resumed_runs_never_resend_a_finished_request(
    suite: Path, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    rng = np.random.default_rng(11)
    concurrency = 4
    with images_server(log, latency=0.08, p429=0.25, seed=5) as url:
        argv = [
            sys.executable, "-m", "vsb.cli.main", "run", "--suite", str(suite),
            "--model", "openai:test-model", "--base-url", url,
            "--condition", "independent,previous_text,structured_memory",
            "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache"),
            "--concurrency", str(concurrency), "--retry-delay", "0.01", "--max-attempts", "20",
        ]  # fmt: skip
        kills: list[float] = []
        for _ in range(3):
            before = sum(e["ev"] == "done" and e["status"] == 200 for e in _events(log))
            target = before + int(rng.integers(3, 9))
            proc = subprocess.Popen(argv, env=_env(), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)  # fmt: skip
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:
                done = sum(e["ev"] == "done" and e["status"] == 200 for e in _events(log))
                if done >= target:
                    time.sleep(float(rng.uniform(0, 0.08)))  # somewhere inside a request
                    os.kill(proc.pid, signal.SIGKILL)
                    break
                time.sleep(0.005)
            assert proc.wait(60) == -signal.SIGKILL, "the run finished before the kill"
            kills.append(time.time())
        final = subprocess.run(argv, env=_env(), capture_output=True, text=True, timeout=120)
        assert final.returncode == 0, final.stderr
        seen = len([e for e in _events(log) if e["ev"] == "recv"])
        rerun = subprocess.run(argv, env=_env(), capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        assert "(0 generated" in rerun.stdout
    events = _events(log)
    recv = [e for e in events if e["ev"] == "recv"]
    assert len(recv) == seen  # the final rerun sent nothing
    ledger = _ledger(tmp_path / "run")
    interrupted = [row for row in ledger if row[1] == "started"]
    # the ledger counts every attempt the server saw (and attempts killed before sending)
    assert len(recv) <= len(ledger) <= len(recv) + len(interrupted)
    assert sum(e["ev"] == "done" and e["status"] == 429 for e in events) > 0
    with sqlite3.connect(tmp_path / "run" / "ledger.sqlite") as db:
        keyed = db.execute(
            "SELECT session, key, status, success FROM requests WHERE cache_hit = 0"
        ).fetchall()
    for k, t_kill in enumerate(kills):
        finished = {e["sha"] for e in events if e["ev"] == "done" and e["status"] == 200
                    and e["t"] < t_kill}  # fmt: skip
        later = {e["sha"] for e in recv if e["t"] > t_kill}
        resent = finished & later
        # only requests in hand at the kill (answered, perhaps, but not yet in the cache; or
        # waiting to retry a 429) come again: at most the concurrency, each an attempt of
        # the killed session in the ledger
        in_flight = {key for s, key, _status, _ok in keyed if s == k + 1}
        redone = in_flight & {key for s, key, _st, _ok in keyed if s > k + 1}
        assert len(resent) <= len(redone) <= concurrency, (k, resent, redone)
    records = [json.loads(x) for x in (tmp_path / "run/records.jsonl").read_text().splitlines()]
    assert len(records) == 3 * 13 and all(r["error"] is None for r in records)


# --- the canary key -----------------------------------------------------------------------


def test_a_canary_key_appears_in_no_file_log_or_error(
    suite: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for k, v in _env().items():
        monkeypatch.setenv(k, v)
    for k in [k for k in os.environ if "proxy" in k.lower() and k != "NO_PROXY"]:
        monkeypatch.delenv(k)
    caplog.set_level(logging.DEBUG)
    log = tmp_path / "server.log"
    with images_server(log, echo_every=3, seed=1) as url:
        argv = ["run", "--suite", str(suite), "--model", "openai:test-model", "--base-url", url,
                "--condition", "independent", "--out", str(tmp_path / "run"), "--cache",
                str(tmp_path / "cache"), "--retry-delay", "0", "--max-attempts", "1"]  # fmt: skip
        code = main(argv)
        main([*argv, "--dry-run"])
        main(["ledger", str(tmp_path / "run")])
    out = capsys.readouterr()
    # the server saw the key, and echoed it back in its errors...
    assert any(CANARY in e.get("auth", "") for e in _events(log))
    recs = [json.loads(x) for x in (tmp_path / "run/records.jsonl").read_text().splitlines()]
    assert any(r["error"] and "HTTP 500" in r["error"] for r in recs) and code == 0
    errors = [row[3] for row in _ledger(tmp_path / "run") if row[3]]
    assert any("Bearer ***" in e for e in errors)  # the echo is kept, the key redacted
    # ...and it is nowhere: no file the run wrote, no log line, no output, no error
    for root in (tmp_path / "run", tmp_path / "cache"):
        for path in root.rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), path
    assert CANARY not in out.out + out.err
    assert CANARY not in caplog.text and "HTTP Request" in caplog.text


# --- budget, dry run, concurrency, exit statuses ------------------------------------------


def test_dry_run_then_budget_stops_and_a_rerun_completes(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for k, v in _env().items():
        monkeypatch.setenv(k, v)
    pricing = tmp_path / "pricing.json"
    pricing.write_text(json.dumps({"as_of": "2031-02-03", "models": {
        "openai/test-model": {"usd_per_image": 0.01, "as_of": "2031-02-03"}}}))  # fmt: skip
    log = tmp_path / "server.log"
    with images_server(log, seed=2) as url:
        argv = ["run", "--suite", str(suite), "--model", "openai:test-model", "--base-url", url,
                "--condition", "independent", "--out", str(tmp_path / "run"), "--cache",
                str(tmp_path / "cache"), "--pricing", str(pricing)]  # fmt: skip
        assert main([*argv, "--dry-run"]) == 0
        out = capsys.readouterr().out
        # 13 images, 12 distinct requests (two scenes of story p have the same text)
        assert "openai:test-model" in out and "2031-02-03" in out and " 12 " in out
        assert "0.1200" in out and not (tmp_path / "run").exists() and not _events(log)
        assert main([*argv, "--budget", "0.045", "--concurrency", "1"]) == 3
        err = capsys.readouterr().err
        assert "stopped: stopped before a call that could exceed --budget 0.045 USD" in err
        assert len(_events(log)) == 2 * 4  # four requests made (recv + done each)
        assert not (tmp_path / "run" / "manifest.json").exists()  # incomplete
        assert len((tmp_path / "run" / "records.jsonl").read_text().splitlines()) == 4
        assert main([*argv, "--dry-run"]) == 0
        assert " 8 " in capsys.readouterr().out  # what is left
        assert main([*argv, "--budget", "1"]) == 0
        assert len(_events(log)) == 2 * 12  # the first four were not sent again
        assert "(8 generated, 5 from cache" in capsys.readouterr().out


def test_concurrency_per_provider(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each HTTP provider gets its own 8 requests at a time (``--concurrency`` N: N)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    two = tmp_path / "two"  # stories w and c: 3 + 5 = 8 distinct requests a model
    write_suite([generate_story("wardrobe", "easy", "w", seed=1),
                 generate_story("counting", "medium", "c", seed=3)], two, seed=0)  # fmt: skip
    lock = threading.Lock()
    live: dict[str, int] = {}
    peak: dict[str, int] = {}
    gates: dict[str, threading.Barrier] = {}
    seen: dict[str, int] = {}

    def handler(r: httpx.Request) -> httpx.Response:
        model = json.loads(r.content)["model"]
        with lock:
            live[model] = live.get(model, 0) + 1
            peak[model] = max(peak.get(model, 0), live[model])
            seen[model] = seen.get(model, 0) + 1
            first = seen[model] <= gates[model].parties
        # the first N requests of a model all wait for each other: they must be in flight
        # together (a smaller pool would break the barrier after its timeout)
        if first:
            gates[model].wait(timeout=20)
        else:
            time.sleep(0.01)
        with lock:
            live[model] -= 1
        buf = io.BytesIO()
        Image.new("RGB", (4, 4), (len(r.content) % 256, 0, 0)).save(buf, "PNG")
        return httpx.Response(200, json={"data": [{"b64_json": base64.b64encode(
            buf.getvalue()).decode()}]})  # fmt: skip

    def go(n: int, concurrency: int | None) -> None:
        peak.clear()
        seen.clear()
        gates.update({m: threading.Barrier(n) for m in ("a", "b")})
        client = httpx.Client(transport=httpx.MockTransport(handler))
        adapters = {f"openai:{m}": OpenAIImages(m, client=client) for m in ("a", "b")}
        cfg = RunConfig(suite_dir=two, models=list(adapters), conditions=["independent"],
                        out=tmp_path / f"r{n}", cache_dir=tmp_path / f"c{n}",
                        concurrency=concurrency)  # fmt: skip
        res = run(cfg, adapters=adapters)
        assert res.images == 16 and not any(g.broken for g in gates.values())

    go(8, None)
    assert peak == {"a": 8, "b": 8}  # both providers at once, 8 each
    go(3, 3)
    assert peak == {"a": 3, "b": 3}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_no_network_every_request_failed_exits_non_zero(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: `vsb run --model openai:dall-e-3` with no network exited 0."""
    from vsb.store.calls import RetryPolicy

    monkeypatch.setattr(RetryPolicy, "delay", lambda self, *a, **k: 0.0)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{_closed_port()}")  # nowhere
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    argv = ["run", "--suite", str(suite), "--model", "openai:dall-e-3,procedural-oracle",
            "--condition", "independent", "--out", str(tmp_path / "run"), "--cache",
            str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "every request of openai:dall-e-3 failed" in err and "procedural-oracle" not in err


# --- regressions of the findings -------------------------------------------------


def _req(adapter: Any, **kw: Any) -> GenerationRequest:
    return GenerationRequest(
        "m", "1", "a kite", 7, ConditionContext("independent"), adapter.parameters(), (), **kw
    )


def test_replicate_never_sends_the_token_to_another_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLICATE_API_TOKEN", CANARY)
    seen: list[httpx.Request] = []

    def handler(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        return httpx.Response(201, json={"id": "p", "status": "processing",
                                         "urls": {"get": "https://evil.example/p"}})  # fmt: skip

    a = ReplicateModel("black-forest-labs/flux-schnell",
                       client=httpx.Client(transport=httpx.MockTransport(handler)),
                       sleep=lambda s: None, max_polls=2)  # fmt: skip
    with pytest.raises(AdapterError):
        a.generate(_req(a))
    assert all("authorization" not in r.headers for r in seen if r.url.host != "api.replicate.com")


def test_imagen_error_text_never_holds_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", CANARY)

    def echo(r: httpx.Request) -> httpx.Response:
        return httpx.Response(400, text=f"bad request to {r.url} with {dict(r.headers)}")

    a = ImagenModel("imagen-3.0-generate-002",
                    client=httpx.Client(transport=httpx.MockTransport(echo)))  # fmt: skip
    with pytest.raises(AdapterError) as info:
        a.generate(_req(a))
    assert "bad request" in str(info.value) and CANARY not in str(info.value)


def test_a_download_is_size_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def handler(r: httpx.Request) -> httpx.Response:
        if r.method == "POST":
            return httpx.Response(200, json={"data": [{"url": "https://files.example/x.png"}]})
        # declares 10 GB (and would stream junk): never read
        return httpx.Response(200, headers={"content-length": str(10**10)},
                              stream=httpx.ByteStream(b"\0" * 1024))  # fmt: skip

    a = OpenAIImages("dall-e-3", client=httpx.Client(transport=httpx.MockTransport(handler)))
    with pytest.raises(AdapterError, match="cap"):
        a.generate(_req(a))


def _png_header(width: int, height: int) -> bytes:
    """A PNG signature and IHDR declaring ``width``×``height`` (a decompression bomb)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk
            + struct.pack(">I", zlib.crc32(chunk)))  # fmt: skip


def _big_valid_png(side: int) -> bytes:
    """A real, valid ``side``×``side`` greyscale PNG of a few hundred KB (all black)."""
    z = zlib.compressobj(9)
    row = b"\0" * (side + 1)  # filter byte + pixels
    data = b"".join(z.compress(row) for _ in range(side)) + z.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    ihdr = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def test_stored_samples_bombs_giants_and_links_are_per_image_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: a 50000² sample aborted the run with no records, a 12000² one (a few
    hundred KB) was accepted, and a link out of the samples directory was served."""
    suite = tmp_path / "suite"
    story = generate_story("possession", "medium", "p", seed=2)  # 5 scenes
    write_suite([story], suite, seed=0)
    d = tmp_path / "samples" / "src" / "independent" / "p"
    d.mkdir(parents=True)
    (d / "scene_01.png").write_bytes(_png_header(50000, 50000))
    (d / "scene_02.png").write_bytes(_big_valid_png(12000))
    outside = tmp_path / "secret.png"
    Image.new("RGB", (4, 4), "white").save(outside)
    (d / "scene_03.png").symlink_to(outside)
    for k in (4, 5):
        Image.new("RGB", (4, 4), "black").save(d / f"scene_{k:02d}.png")
    argv = ["run", "--suite", str(suite), "--model", "stored", "--samples",
            str(tmp_path / "samples"), "--samples-source", "src", "--condition", "independent",
            "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == 0
    assert "Traceback" not in capsys.readouterr().err
    recs = [json.loads(x) for x in (tmp_path / "run/records.jsonl").read_text().splitlines()]
    errors = {r["scene"]: r["error"] or "" for r in recs}
    assert "bomb" in errors[1] or "cap" in errors[1]
    assert "12000×12000" in errors[2] and "cap" in errors[2]
    assert "out of the samples directory" in errors[3]
    assert errors[4] == errors[5] == ""


def test_two_stored_sources_side_by_side(tmp_path: Path, suite: Path) -> None:
    """Regression: stored samples were all labelled ``stored`` (one source per run) and got
    an empty oracle file."""
    cache = tmp_path / "cache"
    common = ["--suite", str(suite), "--condition", "independent", "--cache", str(cache)]
    for sim in ("procedural-oracle", "procedural-sloppy"):
        assert main(["run", *common, "--model", sim, "--out", str(tmp_path / sim)]) == 0
    samples = tmp_path / "samples"
    for sim in ("procedural-oracle", "procedural-sloppy"):
        shutil.copytree(tmp_path / sim / "images" / sim, samples / sim)
    served = tmp_path / "served"
    args = ["run", *common, "--out", str(served), "--samples", str(samples), "--model",
            "stored:procedural-oracle,stored:procedural-sloppy"]  # fmt: skip
    assert main(args) == 0
    recs = [json.loads(x) for x in (served / "records.jsonl").read_text().splitlines()]
    assert {r["model"] for r in recs} == {"stored:procedural-oracle", "stored:procedural-sloppy"}
    assert all(r["error"] is None for r in recs)
    man = json.loads((served / "manifest.json").read_text())
    assert man["models"] == ["stored:procedural-oracle", "stored:procedural-sloppy"]
    assert not (served / "oracle").exists()  # they were not simulated: no oracle file


def test_any_model_of_a_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: replicate:OWNER/NAME beyond three built-ins was an unknown model,
    Stability was fixed to sd3-large, OpenAI's base URL was fixed."""
    for var in ("OPENAI_API_KEY", "REPLICATE_API_TOKEN", "STABILITY_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.setenv(var, "sk-test")
    seen: list[httpx.Request] = []

    def handler(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        png = io.BytesIO()
        Image.new("RGB", (4, 4)).save(png, "PNG")
        if r.url.host == "api.stability.ai":
            return httpx.Response(
                200, content=png.getvalue(), headers={"content-type": "image/png"}
            )
        b64 = base64.b64encode(png.getvalue()).decode()
        if r.url.host == "api.replicate.com":
            return httpx.Response(
                201, json={"status": "succeeded", "output": "data:image/png;base64," + b64}
            )
        if "predict" in r.url.path:
            return httpx.Response(200, json={"predictions": [{"bytesBase64Encoded": b64}]})
        return httpx.Response(200, json={"data": [{"b64_json": b64}]})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    names = resolve_models(
        "replicate:someone/some-model:0123abcd,stability:sd3.5-medium,openai:my-model,"
        "imagen:imagen-4.0-generate-001"
    )
    for name in names:
        kw: dict[str, Any] = {"base_url": "http://localhost:8080/v1"} if "openai" in name else {}
        a = get_adapter(name, client=client, **kw)
        assert a.name == name
        a.generate(_req(a))
    posted = [(r.url.host, r.url.path) for r in seen]
    assert posted == [
        ("api.replicate.com", "/v1/predictions"),
        ("api.stability.ai", "/v2beta/stable-image/generate/sd3"),
        ("localhost", "/v1/images/generations"),
        ("generativelanguage.googleapis.com", "/v1beta/models/imagen-4.0-generate-001:predict"),
    ]
    assert json.loads(seen[0].content)["version"] == "0123abcd"
    assert b"sd3.5-medium" in seen[1].content
    with pytest.raises(InputError, match="unknown stable-image model"):
        get_adapter("stability:sd9")
    with pytest.raises(InputError, match="OWNER/NAME"):
        get_adapter("replicate:no-owner")


class NoImageInput(ImageModelAdapter):
    """A text-only model (no image input)."""

    name, version = "text-only", "1"

    def generate(self, request: GenerationRequest) -> GenerationResult:
        buf = io.BytesIO()
        Image.new("RGB", (4, 4), tuple(bytes.fromhex(request.key())[:3])).save(buf, "PNG")
        return GenerationResult(buf.getvalue())


def test_previous_image_is_not_silently_run_as_independent(suite: Path, tmp_path: Path) -> None:
    """Regression: for a model without image input, previous_image sent the independent
    request (a cache hit) with no word to the user."""
    cfg = RunConfig(suite_dir=suite, models=["text-only"],
                    conditions=["independent", "previous_image"], out=tmp_path / "run",
                    cache_dir=tmp_path / "cache")  # fmt: skip
    run(cfg, adapters={"text-only": NoImageInput()})
    recs = [json.loads(x) for x in (tmp_path / "run/records.jsonl").read_text().splitlines()]
    assert {r["condition"] for r in recs} == {"independent"}
    man = json.loads((tmp_path / "run/manifest.json").read_text())
    assert man["not_supported"] == {"text-only": ["previous_image"]}


class FailsSome(ProceduralSimulator):
    """A simulator whose scene 2 of story ``p`` never comes out."""

    def generate(self, request: GenerationRequest) -> GenerationResult:
        p = request.privileged
        if p is not None and p.story.id == "p" and p.scene == 2:
            raise AdapterError("provider said no")
        return super().generate(request)


def test_failures_count_in_the_scores(suite: Path, tmp_path: Path) -> None:
    """Regression: a failed generation disappeared from the scores (n_stories dropped and the
    model was not penalised)."""
    from vsb.evaluators.evaluate import evaluate_run
    from vsb.scores.compute import score_run

    name = "procedural-oracle"
    cfg = RunConfig(suite_dir=suite, models=[name], conditions=["independent"],
                    out=tmp_path / "run", cache_dir=tmp_path / "cache")  # fmt: skip
    res = run(cfg, adapters={name: FailsSome(name, SIMULATORS[name])})
    assert res.failures == 1 and res.images == 12
    evaluate_run(tmp_path / "run")
    (score,) = [s for s in score_run(tmp_path / "run").scores if s.evaluator == "rules"]
    assert score.n_stories == 3  # the story with the failed image still counts
    assert score.coherence is not None and score.coherence.score < 1.0  # penalised
    assert score.coverage == pytest.approx(12 / 13)


def test_models_lists_every_family_with_its_credential_and_prices(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REPLICATE_API_TOKEN", CANARY)
    monkeypatch.delenv("STABILITY_API_KEY", raising=False)
    assert main(["models", "--json"]) == 0
    out = capsys.readouterr().out
    assert CANARY not in out
    fams = {p["pattern"]: p for p in json.loads(out)["patterns"]}
    rep = fams["replicate:OWNER/NAME[:VERSION]"]
    assert rep["env_var"] == "REPLICATE_API_TOKEN" and rep["credential_present"] is True
    assert rep["prices"]["replicate/flux-schnell"] == [0.003, "2025-06-01"]
    assert "kontext" in rep["image_input"]
    stab = fams["stability:MODEL"]
    assert stab["credential_present"] is False and "sd3.5-large" in stab["description"]
    assert fams["openai:MODEL"]["image_input"].startswith("gpt-image")
    assert fams["stored:SOURCE"]["needs"] == "--samples DIR"
    assert main(["models"]) == 0
    text = capsys.readouterr().out
    assert "replicate:OWNER/NAME[:VERSION]" in text and CANARY not in text
