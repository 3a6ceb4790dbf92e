"""Runs that die or overlap (issue #10 items 7 and 8), on real ``vsb run`` subprocesses.

A driver script registers test-only adapters in the subprocess's adapter registry and then
calls ``vsb``'s CLI entry point. ``race-echo`` logs every call and SIGKILLs the ``vsb run``
process at the Nth call (deterministic kill points; the fork workers die with it, as after
a real kill); ``race-gate`` holds every run at its preflight until the test opens
the gate, so that two runs start generating at the same moment; ``race-block`` holds the
run inside its first call until the test lets it go.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter
from vsb.cli.main import main
from vsb.generator.generate import generate_story, write_suite
from vsb.run.runner import RunConfig, run
from vsb.store.cache import INDEX_NAME
from vsb.store.ledger import Ledger
from vsb.store.locks import LOCK_NAME

CONDITIONS = "independent,previous_image"
#: 3 stories of 3 + 5 + 5 scenes under 2 conditions
IMAGES = 2 * (3 + 5 + 5)

DRIVER = r"""
import fcntl, io, os, signal, sys, time
from pathlib import Path
from PIL import Image
from vsb.adapters.base import GenerationResult, ImageModelAdapter
from vsb.adapters.registry import register_adapter
from vsb.cli.main import main

MAIN_PID = os.getpid()
COORD = Path(os.environ["VSB_RACE_DIR"])
KILL_AT = int(os.environ.get("VSB_RACE_KILL_AT", "0"))


def png(key):
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), tuple(bytes.fromhex(key)[:3])).save(buf, "PNG")
    return buf.getvalue()


def wait_for(path):
    deadline = time.monotonic() + 60
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {path}")
        time.sleep(0.005)


class Echo(ImageModelAdapter):
    name, version, process_safe, accepts_reference_image = "race-echo", "1", True, True

    def generate(self, request):
        key = request.key()
        with open(COORD / "calls.log", "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(key + "\n")
            fh.flush()
            fh.seek(0)
            n = sum(1 for _ in fh)
        if n == KILL_AT:
            os.kill(MAIN_PID, signal.SIGKILL)  # the `vsb run` process; its workers go on
            while os.getppid() == MAIN_PID:  # a fork worker: until the kill has landed
                time.sleep(0.001)
        return GenerationResult(png(key), {})


class Gate(Echo):
    name = "race-gate"

    def preflight(self):
        (COORD / f"ready-{os.getpid()}").touch()
        wait_for(COORD / "go")

    def generate(self, request):
        time.sleep(0.005)
        return super().generate(request)


class Block(Echo):
    name = "race-block"

    def generate(self, request):
        (COORD / "started").touch()
        wait_for(COORD / "go")
        return super().generate(request)


for cls in (Echo, Gate, Block):
    register_adapter(cls.name)(cls)
sys.exit(main(sys.argv[1:]))
"""


class Echo(ImageModelAdapter):
    """The driver's ``race-echo`` in this process (same name and version: same keys)."""

    name, version, process_safe, accepts_reference_image = "race-echo", "1", True, True

    def generate(self, request: GenerationRequest) -> GenerationResult:
        key = request.key()
        buf = io.BytesIO()
        Image.new("RGB", (8, 8), tuple(bytes.fromhex(key)[:3])).save(buf, "PNG")
        return GenerationResult(buf.getvalue(), {})


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    stories = [
        generate_story("wardrobe", "easy", "wardrobe-easy", seed=1),
        generate_story("possession", "medium", "possession-medium", seed=2),
        generate_story("wardrobe", "medium", "wardrobe-medium", seed=3),
    ]
    out = tmp_path / "suite"
    write_suite(stories, out, seed=0)
    return out


def _vsb_run(
    suite: Path, out: Path, cache: Path, coord: Path, model: str, workers: int, kill_at: int = 0
) -> subprocess.Popen[str]:
    coord.mkdir(parents=True, exist_ok=True)
    args = ["run", "--suite", str(suite), "--model", model, "--condition", CONDITIONS]
    args += ["--out", str(out), "--cache", str(cache), "--workers", str(workers)]
    env = {**os.environ, "VSB_RACE_DIR": str(coord), "VSB_RACE_KILL_AT": str(kill_at)}
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the test waits for orphans
    )


def _poll(what: str, cond: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def _record_keys(run_dir: Path) -> set[str]:
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    assert len(lines) == IMAGES
    return {json.loads(x)["key"] for x in lines}


def _cache_keys(cache: Path) -> set[str]:
    with sqlite3.connect(cache / INDEX_NAME) as db:
        keys = {k for (k,) in db.execute("SELECT key FROM entries")}
    db.close()
    return keys


@pytest.mark.parametrize(("workers", "kill_at"), [(2, 1), (2, 8), (1, 9)])
def test_killed_run_loses_no_call_from_the_ledger(
    suite: Path, tmp_path: Path, workers: int, kill_at: int, capsys: pytest.CaptureFixture[str]
) -> None:
    out, cache, coord = tmp_path / "run", tmp_path / "cache", tmp_path / "coord"
    proc = _vsb_run(suite, out, cache, coord, "race-echo", workers, kill_at)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    _poll("the killed run's workers", lambda: _group_gone(proc.pid))
    made = (coord / "calls.log").read_text().split()
    assert len(made) >= kill_at
    # every call whose image reached the cache is in the ledger, whenever the run died
    with Ledger.open_existing(out / "ledger.sqlite") as led:
        assert _cache_keys(cache) <= led.called_keys()
        (first,) = led.summary()
    # the calls in flight at the kill, at most one a worker (fork workers die with the run;
    # serial: the run was killed during its call)
    assert 1 <= first.interrupted <= workers
    assert main(["ledger", str(out)]) == 0
    (row,) = [x.split() for x in capsys.readouterr().out.splitlines() if "race-echo" in x]
    assert row[:6] == ["race-echo", *map(str, (first.requests, first.hits, first.calls, 0)),
                       str(first.interrupted)]  # fmt: skip
    with sqlite3.connect(out / "ledger.sqlite") as db:
        stories = {s for (s,) in db.execute("SELECT story_id FROM requests WHERE cache_hit = 0")}
    db.close()
    if kill_at == 1:  # the workers took no other task
        assert 1 <= len(stories) <= workers < 3
    # the rerun completes from the cache; the ledger counts every call that was made
    config = RunConfig(
        suite_dir=suite, models=["race-echo"], conditions=CONDITIONS.split(","), out=out,
        cache_dir=cache, workers=workers,
    )  # fmt: skip
    res = run(config, adapters={"race-echo": Echo()})
    assert res.images == res.calls + res.hits == IMAGES and res.failures == 0
    keys = _cache_keys(cache)
    assert keys == _record_keys(out) and set(made) <= keys
    with Ledger.open_existing(out / "ledger.sqlite") as led:
        assert keys <= led.called_keys()
        (total,) = led.summary(all_sessions=True)
    # (a worker killed between the ledger's row and its call log: a row, not in ``made``)
    assert len(made) + res.calls <= total.calls <= len(made) + res.calls + first.interrupted
    assert total.calls >= len(keys)
    assert not (out / LOCK_NAME).exists()


def test_second_run_on_one_directory_fails_at_once(suite: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    first = _vsb_run(suite, out, cache, tmp_path / "a", "race-block", 1)
    try:
        _poll("the first run to start generating", lambda: (tmp_path / "a" / "started").exists())
        second = _vsb_run(suite, out, tmp_path / "cache2", tmp_path / "b", "race-echo", 1)
        _, err = second.communicate(timeout=60)
        assert first.poll() is None  # the second did not wait for the first
        assert second.returncode == 1
        assert err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(f"error: {out}: run directory is in use by another vsb run")
        assert f"(pid {first.pid})" in err
        assert not (tmp_path / "b" / "calls.log").exists()
        (tmp_path / "a" / "go").touch()
        stdout, _ = first.communicate(timeout=60)
        keys = _record_keys(out)
        assert first.returncode == 0 and f"{IMAGES} images ({len(keys)} generated" in stdout
        assert not (out / LOCK_NAME).exists()
    finally:
        (tmp_path / "a").mkdir(exist_ok=True)
        (tmp_path / "a" / "go").touch()
        first.kill()
        first.communicate(timeout=60)


def test_lock_of_a_killed_run_does_not_block_the_next(suite: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    first = _vsb_run(suite, out, cache, tmp_path / "a", "race-block", 1)
    _poll("the first run to start generating", lambda: (tmp_path / "a" / "started").exists())
    assert (out / LOCK_NAME).read_text().strip() == str(first.pid)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    res = run(
        RunConfig(suite_dir=suite, models=["race-echo"], conditions=CONDITIONS.split(","),
                  out=out, cache_dir=cache),
        adapters={"race-echo": Echo()},
    )  # fmt: skip
    assert res.images == IMAGES and not (out / LOCK_NAME).exists()


def test_concurrent_runs_sharing_a_cache_generate_each_key_once(
    suite: Path, tmp_path: Path
) -> None:
    cache, coord = tmp_path / "cache", tmp_path / "coord"
    runs = [
        _vsb_run(suite, tmp_path / "run1", cache, coord, "race-gate", 2),
        _vsb_run(suite, tmp_path / "run2", cache, coord, "race-gate", 1),
    ]
    try:
        _poll("both runs at the gate", lambda: len(list(coord.glob("ready-*"))) == 2)
        (coord / "go").touch()  # both start generating now
        outs = [p.communicate(timeout=120) for p in runs]
    finally:
        (coord / "go").touch()
        for p in runs:
            p.kill()
            p.communicate(timeout=60)
    assert [p.returncode for p in runs] == [0, 0], outs
    made = (coord / "calls.log").read_text().split()
    keys = _record_keys(tmp_path / "run1")
    assert len(keys) > IMAGES // 2 and _record_keys(tmp_path / "run2") == keys
    assert sorted(made) == sorted(keys) == sorted(_cache_keys(cache))  # each key once
    calls = 0
    for rd in ("run1", "run2"):
        with Ledger.open_existing(tmp_path / rd / "ledger.sqlite") as led:
            (row,) = led.summary()
            calls += row.calls
    assert calls == len(keys)


class Boom(Echo):
    name = "race-boom"

    def generate(self, request: GenerationRequest) -> GenerationResult:
        raise RuntimeError("adapter bug")


def test_lock_is_released_on_error(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    config = RunConfig(
        suite_dir=suite, models=["race-boom"], conditions=["independent"], out=out,
        cache_dir=cache,
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="adapter bug"):
        run(config, adapters={"race-boom": Boom()})
    assert not (out / LOCK_NAME).exists()
    with Ledger.open_existing(out / "ledger.sqlite") as led:
        (row,) = led.summary()
    assert (row.calls, row.failures, row.interrupted) == (1, 1, 0)  # recorded as it failed
    bad = tmp_path / "pricing.json"
    bad.write_text("{")
    args = ["run", "--suite", str(suite), "--out", str(out), "--cache", str(cache)]
    assert main([*args, "--model", "procedural-oracle", "--condition", "independent",
                 "--pricing", str(bad)]) == 1  # fmt: skip
    assert "malformed pricing file" in capsys.readouterr().err
    assert not (out / LOCK_NAME).exists()
    assert main([*args, "--model", "procedural-oracle", "--condition", "independent"]) == 0
    assert not (out / LOCK_NAME).exists()
