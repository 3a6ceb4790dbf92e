"""``vsb run`` on small suites with transport-free fake adapters (no renderer needed)."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from PIL import Image

from vsb.adapters.base import (
    GenerationRequest,
    GenerationResult,
    ImageModelAdapter,
    require_env,
)
from vsb.cli.main import main
from vsb.errors import AdapterError, RunError, UnknownNameError
from vsb.fsio import sha256_hex
from vsb.generator.generate import generate_story, write_suite
from vsb.run.runner import RunConfig, RunResult, image_path, run
from vsb.store.ledger import Ledger
from vsb.store.locks import LOCK_NAME

CONDS = ["independent", "previous_text", "structured_memory", "previous_image"]


def _png(seed: bytes) -> bytes:
    im = Image.new("RGB", (8, 8), tuple(seed[:3]))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


class Echo(ImageModelAdapter):
    """Draws one colour from the request key; counts calls; remembers reference images."""

    name = "fake-echo"
    version = "1"
    accepts_reference_image = True
    calls: ClassVar[list[GenerationRequest]] = []

    def generate(self, request: GenerationRequest) -> GenerationResult:
        Echo.calls.append(request)
        return GenerationResult(
            _png(bytes.fromhex(request.key())), {"n": len(request.reference_images)}
        )


class FakeHttp(ImageModelAdapter):
    """A provider-shaped adapter: injected httpx client, credential read at call time."""

    name = "fake-http"
    version = "2024-01"

    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def preflight(self) -> None:
        require_env("VSB_FAKE_KEY", self.name)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        key = require_env("VSB_FAKE_KEY", self.name)
        resp = self.client.post(
            "https://api.example/v1/images",
            json={"prompt": request.full_prompt(), "seed": request.seed},
            headers={"Authorization": f"Bearer {key}"},
        )
        if resp.status_code != 200:
            raise AdapterError(f"HTTP {resp.status_code}")
        return GenerationResult(resp.content, {"id": resp.headers["x-id"]})


class Flaky(Echo):
    name = "fake-flaky"

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if request.context.condition == "previous_text" and request.context.text is not None:
            raise AdapterError("provider said no")
        return super().generate(request)


@pytest.fixture
def small_suite(tmp_path: Path) -> Path:
    stories = [
        generate_story("wardrobe", "easy", "wardrobe-easy", seed=1),
        generate_story("possession", "medium", "possession-medium", seed=2),
    ]
    out = tmp_path / "suite"
    write_suite(stories, out, seed=0)
    return out


def _cfg(suite: Path, tmp: Path, models: list[str], **kw: object) -> RunConfig:
    return RunConfig(
        suite_dir=suite, models=models, conditions=CONDS, out=tmp / "run",
        cache_dir=tmp / "cache", **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def _records(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]


def test_layout_records_manifest_and_resume(small_suite: Path, tmp_path: Path) -> None:
    Echo.calls.clear()
    seen: list[tuple[int, int]] = []
    res = run(_cfg(small_suite, tmp_path, ["fake-echo"]), lambda d, t: seen.append((d, t)),
              adapters={"fake-echo": Echo()})  # fmt: skip
    n = (3 + 5) * len(CONDS)
    unique = len({r["key"] for r in _records(tmp_path / "run")})
    # scene 1 is the same request under every condition: generated once
    assert unique < n and len(Echo.calls) == unique
    assert (res.images, res.calls, res.hits, res.failures) == (n, unique, n - unique, 0)
    assert seen[0] == (0, n) and seen[-1] == (n, n)
    rd = tmp_path / "run"
    man = json.loads((rd / "manifest.json").read_text())
    assert man == {
        "version": "1.0", "suite": "suite",
        "suite_sha256": sha256_hex((small_suite / "suite.json").read_bytes()),
        "models": ["fake-echo"], "conditions": CONDS, "seed": 0, "prompt_style": "plain",
        "images": n, "not_supported": {}, "oracle_models": [],
    }  # fmt: skip
    recs = _records(rd)
    assert len(recs) == n
    keys = [(r["model"], r["condition"], r["story_id"], r["scene"]) for r in recs]
    assert keys == sorted(keys)  # type: ignore[type-var]
    for r in recs:
        assert set(r) == {"model", "condition", "story_id", "scene", "key", "path", "sha256",
                          "cache_hit", "latency_s", "cost_usd", "error", "refused",
                          "prompt_unit", "prompt_length", "prompt_budget", "prompt_cut",
                          "prompt_encoded"}  # fmt: skip
        # an adapter that knows nothing of its budget: unknown, never a guess
        assert (r["prompt_unit"], r["prompt_length"], r["prompt_cut"]) == ("unknown", None, False)
        assert r["path"] == image_path("fake-echo", r["condition"], r["story_id"], r["scene"])  # type: ignore[arg-type]
        assert sha256_hex((rd / str(r["path"])).read_bytes()) == r["sha256"]
        # not in the price list: unknown, not zero (a cache hit costs nothing)
        assert r["cost_usd"] == (0.0 if r["cache_hit"] else None)
    assert (rd / "suite" / "suite.json").read_bytes() == (small_suite / "suite.json").read_bytes()
    assert sorted(p.name for p in (rd / "suite").iterdir()) == sorted(
        p.name for p in small_suite.iterdir()
    )
    assert not (rd / "oracle").exists()  # no simulator, no oracle
    # previous_image hands over the previous frame, other conditions do not
    for req in Echo.calls:
        assert len(req.reference_images) == int(req.context.reference_image)
    assert sum(len(req.reference_images) for req in Echo.calls) == 2 + 4
    # identical run: no adapter call, all hits in the ledger
    Echo.calls.clear()
    again = run(_cfg(small_suite, tmp_path, ["fake-echo"]), adapters={"fake-echo": Echo()})
    assert (again.calls, again.hits) == (0, n) and not Echo.calls
    assert [r["sha256"] for r in _records(rd)] == [r["sha256"] for r in recs]
    with Ledger.open_existing(rd / "ledger.sqlite") as led:
        (row,) = led.summary()
        assert (row.requests, row.hits, row.calls) == (n, n, 0)
        (row_all,) = led.summary(all_sessions=True)
        assert (row_all.requests, row_all.calls) == (2 * n, unique)


def test_interrupted_run_resumes_from_the_cache(small_suite: Path, tmp_path: Path) -> None:
    Echo.calls.clear()

    def stop(done: int, total: int) -> None:
        if done >= 12:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(_cfg(small_suite, tmp_path, ["fake-echo"]), stop, adapters={"fake-echo": Echo()})
    assert not (tmp_path / "run" / "manifest.json").exists()
    first = len(Echo.calls)
    assert 0 < first < 32
    res = run(_cfg(small_suite, tmp_path, ["fake-echo"]), adapters={"fake-echo": Echo()})
    unique = len({r["key"] for r in _records(tmp_path / "run")})
    assert res.calls == unique - first and len(Echo.calls) == unique
    assert res.hits == 32 - res.calls
    assert (tmp_path / "run" / "manifest.json").exists()


def test_missing_credential_skips_and_reports(
    small_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == "Bearer sk-test"
        served.append(json.loads(request.content))
        return httpx.Response(200, content=_png(b"\x10\x20\x30"), headers={"x-id": "img-1"})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    given = {"fake-echo": Echo(), "fake-http": FakeHttp(client)}
    monkeypatch.delenv("VSB_FAKE_KEY", raising=False)
    res = run(_cfg(small_suite, tmp_path, ["fake-echo", "fake-http"]), adapters=given)
    assert list(res.skipped) == ["fake-http"] and "VSB_FAKE_KEY" in res.skipped["fake-http"]
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["models"] == ["fake-echo"]
    assert not served
    monkeypatch.setenv("VSB_FAKE_KEY", "sk-test")
    res = run(_cfg(small_suite, tmp_path, ["fake-http"], workers=2), adapters=given)
    # no image input: previous_image is not run (not silently the independent request)
    assert res.not_supported == {"fake-http": ["previous_image"]}
    assert not res.skipped and res.images == 24 and len(served) == res.calls > 12
    assert any("State so far (JSON)" in str(s["prompt"]) for s in served)


def test_adapter_failure_is_recorded(small_suite: Path, tmp_path: Path) -> None:
    res = run(_cfg(small_suite, tmp_path, ["fake-flaky"]), adapters={"fake-flaky": Flaky()})
    recs = _records(tmp_path / "run")
    bad = [r for r in recs if r["error"]]
    assert res.failures == len(bad) > 0 and res.images == 32 - len(bad)
    assert all(r["path"] is None and r["sha256"] is None and r["cost_usd"] is None for r in bad)


def test_unknown_names(
    small_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UnknownNameError, match="procedural-oracle"):
        run(_cfg(small_suite, tmp_path, ["nope"]))
    args = ["run", "--suite", str(small_suite), "--out", str(tmp_path / "r")]
    assert main([*args, "--model", "procedural-orcale", "--condition", "all"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "did you mean 'procedural-oracle'" in err
    assert "procedural-drift-mid" in err
    assert main([*args, "--model", "procedural-oracle", "--condition", "memory"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown condition 'memory'") and "structured_memory" in err
    assert main(["run", "--suite", str(small_suite), "--out", "x", "--condition", "all"]) != 0


def test_cli_run_and_ledger(
    small_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rd = tmp_path / "cli-run"
    args = ["run", "--suite", str(small_suite), "--out", str(rd), "--cache", str(tmp_path / "c")]
    args += ["--model", "procedural-oracle,procedural-drift-mid", "--condition", "all"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "96 images (96 generated, 0 from cache, 0 failed)" in out
    # fork workers wrote the ledger and the cache index; nothing is left beside them
    # (no write-ahead log that a copy of ledger.sqlite alone would miss, no lock)
    assert sorted(p.name for p in rd.iterdir() if p.is_file()) == [
        "ledger.sqlite", "manifest.json", "records.jsonl"
    ]  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["index.sqlite", "objects"]
    assert (rd / "oracle" / "faults.jsonl").is_file()
    assert main([*args, "--workers", "1"]) == 0
    assert "(0 generated, 96 from cache" in capsys.readouterr().out
    assert main(["ledger", str(rd)]) == 0
    table = capsys.readouterr().out
    assert "procedural-drift-mid" in table and "$0.0000" in table and "48" in table
    assert main(["ledger", str(tmp_path / "nowhere")]) == 1
    assert "no ledger" in capsys.readouterr().err


class Held(Echo):
    """Blocks in its first call until released (the run holds its directory meanwhile)."""

    name = "fake-held"
    entered = threading.Event()
    release = threading.Event()

    def generate(self, request: GenerationRequest) -> GenerationResult:
        Held.entered.set()
        assert Held.release.wait(30)
        return super().generate(request)


def test_one_run_per_directory(small_suite: Path, tmp_path: Path) -> None:
    Held.entered.clear()
    Held.release.clear()
    done: list[RunResult] = []
    first = threading.Thread(
        target=lambda: done.append(
            run(_cfg(small_suite, tmp_path, ["fake-held"]), adapters={"fake-held": Held()})
        )
    )
    first.start()
    try:
        assert Held.entered.wait(30)
        assert (tmp_path / "run" / LOCK_NAME).read_text() == f"{os.getpid()}\n"
        with pytest.raises(RunError) as err:
            run(_cfg(small_suite, tmp_path, ["fake-echo"]), adapters={"fake-echo": Echo()})
        assert str(err.value) == (
            f"{tmp_path / 'run'}: run directory is in use by another vsb run "
            f"(pid {os.getpid()}); wait for it to finish or choose another directory"
        )
    finally:
        Held.release.set()
        first.join(30)
    assert done[0].images == 32 and not (tmp_path / "run" / LOCK_NAME).exists()
    # the directory is the first run's: nothing of the refused one got in
    assert {r["model"] for r in _records(tmp_path / "run")} == {"fake-held"}
    again = run(_cfg(small_suite, tmp_path, ["fake-echo"]), adapters={"fake-echo": Echo()})
    assert again.images == 32 and not (tmp_path / "run" / LOCK_NAME).exists()


def test_a_run_image_is_the_caches_copy_hard_linked_and_falls_back_to_a_write(
    tmp_path: Path,
) -> None:
    """Each generated image is written once, into the cache; the run's image is a hard link
    to it (issue #25: one file creation per image, not two). Without a cached copy the image
    is written; an image already holding the same bytes is left alone."""
    from vsb.run.tasks import _place_image

    data = b"\x89PNG fake bytes"
    cached = tmp_path / "cache" / "objects" / "ab" / "abcd.png"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(data)
    linked = tmp_path / "run" / "images" / "m" / "c" / "s" / "scene_01.png"
    _place_image(linked, data, cached)
    assert linked.read_bytes() == data and os.path.samefile(linked, cached)
    written = tmp_path / "run" / "images" / "m" / "c" / "s" / "scene_02.png"
    _place_image(written, data, tmp_path / "cache" / "missing.png")
    assert written.read_bytes() == data and os.stat(written).st_nlink == 1
    before = os.stat(written).st_ino
    _place_image(written, data, cached)  # a resumed run: same bytes, nothing replaced
    assert os.stat(written).st_ino == before
    stale = tmp_path / "run" / "images" / "m" / "c" / "s" / "scene_03.png"
    stale.write_bytes(b"old")
    _place_image(stale, data, cached)
    assert stale.read_bytes() == data and os.path.samefile(stale, cached)
