"""The generation cache: hits, corruption, several processes, in-flight claims."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from vsb.adapters.base import GenerationResult
from vsb.errors import AdapterError
from vsb.fsio import sha256_hex
from vsb.store.cache import INDEX_NAME, GenerationCache


def _png(i: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + i.to_bytes(4, "big") * 8


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def make(self, i: int) -> GenerationResult:
        self.calls += 1
        return GenerationResult(_png(i), {"i": i, "faults": [{"a": 1}]}, cost_usd=0.01)


def test_hit_after_miss_and_no_regeneration(tmp_path: Path) -> None:
    cache, c = GenerationCache(tmp_path), Counter()
    r1, hit1 = cache.get("k1", lambda: c.make(1))
    r2, hit2 = cache.get("k1", lambda: c.make(99))
    assert (hit1, hit2, c.calls) == (False, True, 1)
    assert r2.png == r1.png and r2.metadata == {"i": 1, "faults": [{"a": 1}]}
    assert r2.cost_usd == 0.01
    assert "k1" in cache and "k2" not in cache and len(cache) == 1
    obj = cache.object_path(sha256_hex(_png(1)))
    assert obj.read_bytes() == _png(1)
    assert obj.parent.name == sha256_hex(_png(1))[:2]
    # a fresh instance (another run) sees the same entry
    again = GenerationCache(tmp_path)
    assert again.get("k1", lambda: c.make(2))[1] and c.calls == 1
    assert not list(tmp_path.rglob("*.tmp"))
    cache.close()
    cache.close()


def test_content_addressed_dedup(tmp_path: Path) -> None:
    cache, c = GenerationCache(tmp_path), Counter()
    cache.get("a", lambda: c.make(7))
    cache.get("b", lambda: c.make(7))
    assert c.calls == 2 and len(list((tmp_path / "objects").rglob("*.png"))) == 1


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
def test_corrupt_object_is_regenerated_not_served(tmp_path: Path, damage: str) -> None:
    cache, c = GenerationCache(tmp_path), Counter()
    cache.get("k", lambda: c.make(3))
    obj = cache.object_path(sha256_hex(_png(3)))
    if damage == "flip":
        data = bytearray(obj.read_bytes())
        data[-1] ^= 0xFF
        obj.write_bytes(bytes(data))
    elif damage == "truncate":
        obj.write_bytes(obj.read_bytes()[:5])
    else:
        obj.unlink()
    r, hit = cache.get("k", lambda: c.make(3))
    assert not hit and c.calls == 2 and r.png == _png(3)
    assert obj.read_bytes() == _png(3)
    assert cache.get("k", lambda: c.make(3))[1]


def test_entry_is_visible_to_other_processes_at_once(tmp_path: Path) -> None:
    # (entries used to wait for the end of a batch; an in-flight claim must not outlive the
    # call, or two runs visiting shared keys in different orders would wait on each other)
    cache, c = GenerationCache(tmp_path), Counter()
    for i in range(3):
        cache.get(f"k{i}", lambda i=i: c.make(i))
        with sqlite3.connect(tmp_path / INDEX_NAME) as other:
            assert other.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == i + 1
            assert other.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0
    cache.close()


def test_wal_mode(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    cache.get("k", lambda: Counter().make(1))
    with sqlite3.connect(tmp_path / INDEX_NAME) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _worker(root: str, start: int) -> int:
    cache, c = GenerationCache(root), Counter()
    for _rep in range(3):
        for i in range(40):
            j = (start + i) % 60
            cache.get(f"k{j}", lambda j=j: c.make(j))
    cache.close()
    return c.calls


def test_several_processes_share_one_cache(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    cache.get("k0", lambda: Counter().make(0))  # the parent holds a connection across fork
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(3) as pool:
        calls = pool.starmap(_worker, [(str(tmp_path), s) for s in (0, 20, 40)])
    # every key was generated exactly once over all processes, and the index is complete
    assert sum(calls) == 59
    assert len(cache) == 60 and not cache.in_flight()
    for j in range(60):
        r, hit = cache.get(f"k{j}", lambda: pytest.fail("regenerated"))  # type: ignore[arg-type,return-value]
        assert hit and r.png == _png(j)


def _slow_owner(root: str, started: Any, go: Any) -> None:
    def compute() -> GenerationResult:
        started.set()
        assert go.wait(30)
        return GenerationResult(_png(5), {"by": "owner"})

    GenerationCache(root).get("k", compute)


def test_in_flight_key_is_waited_for_then_read(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    started, go = ctx.Event(), ctx.Event()
    owner = ctx.Process(target=_slow_owner, args=(str(tmp_path), started, go))
    owner.start()
    try:
        assert started.wait(30)
        cache = GenerationCache(tmp_path)
        assert cache.in_flight() == [("k", owner.pid)]
        got: list[tuple[GenerationResult, bool]] = []
        waiter = threading.Thread(
            target=lambda: got.append(cache.get("k", lambda: pytest.fail("generated twice")))  # type: ignore[arg-type,return-value]
        )
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive() and not got  # waiting for the owner, not generating
        go.set()
        waiter.join(30)
        owner.join(30)
        ((result, hit),) = got
        assert hit and result.png == _png(5) and result.metadata == {"by": "owner"}
        assert owner.exitcode == 0 and not cache.in_flight()
    finally:
        go.set()
        owner.join(30)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_claim_of_a_dead_or_recycled_owner_is_taken_over(tmp_path: Path) -> None:
    cache, c = GenerationCache(tmp_path), Counter()
    cache.open()
    with sqlite3.connect(tmp_path / INDEX_NAME) as db:
        db.execute("INSERT INTO claims VALUES ('dead', ?, '', 0)", (_dead_pid(),))
        # a live pid whose start time differs: the pid was recycled, the owner is gone
        db.execute("INSERT INTO claims VALUES ('recycled', ?, 'not-my-start', 0)", (os.getpid(),))
    assert len(cache.in_flight()) == 2
    assert cache.get("dead", lambda: c.make(1))[1] is False
    assert cache.get("recycled", lambda: c.make(2))[1] is False
    assert c.calls == 2 and not cache.in_flight() and len(cache) == 2


def test_failed_call_releases_its_claim(tmp_path: Path) -> None:
    cache, c = GenerationCache(tmp_path), Counter()

    def fail() -> GenerationResult:
        assert cache.in_flight() == [("k", os.getpid())]
        raise AdapterError("provider said no")

    with pytest.raises(AdapterError):
        cache.get("k", fail)
    assert not cache.in_flight() and "k" not in cache
    assert cache.get("k", lambda: c.make(1))[1] is False and c.calls == 1


def test_failed_checks_under_a_relative_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vsb release build v0.1.0 --out build` (a relative --out) counted the failed checks of
    build/v0.1.0/cache with Path.as_uri(), which refuses a relative path (ValueError)."""
    from vsb.store.cache import failed_checks_under

    (tmp_path / "build" / "cache").mkdir(parents=True)
    sqlite3.connect(tmp_path / "build" / "cache" / "index.sqlite").close()
    monkeypatch.chdir(tmp_path)
    assert failed_checks_under(Path("build") / "cache") == 0
