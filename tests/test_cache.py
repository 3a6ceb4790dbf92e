"""The generation cache: hits, corruption, batching, several processes."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from vsb.adapters.base import GenerationResult
from vsb.cache import INDEX_NAME, GenerationCache
from vsb.fsio import sha256_hex


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


def test_batch_commits_once_and_serves_pending(tmp_path: Path) -> None:
    cache, c = GenerationCache(tmp_path), Counter()
    with cache.batch():
        for i in range(5):
            cache.get(f"k{i}", lambda i=i: c.make(i))
        assert cache.get("k0", lambda: c.make(0))[1]  # pending rows are visible
        with sqlite3.connect(tmp_path / INDEX_NAME) as other:
            assert other.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 0
    assert len(cache) == 5 and c.calls == 5


def test_wal_mode(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    cache.get("k", lambda: Counter().make(1))
    with sqlite3.connect(tmp_path / INDEX_NAME) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _worker(root: str, start: int) -> int:
    cache, c = GenerationCache(root), Counter()
    for _rep in range(3):
        with cache.batch():
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
    # every key was generated at most once per process, and the index is complete
    assert all(n <= 40 for n in calls)
    assert len(cache) == 60
    for j in range(60):
        r, hit = cache.get(f"k{j}", lambda: pytest.fail("regenerated"))  # type: ignore[arg-type,return-value]
        assert hit and r.png == _png(j)
