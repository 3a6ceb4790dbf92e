"""What crash safety costs per image: the cache claim and the ledger rows around each call.

A miss makes four small SQLite commits (claim the key; ledger row before the call; ledger
row after it; entry + claim release). This times ``GenerationCache.get`` on misses and hits
with a trivial ``compute`` (no rendering), alone and with the runner's ledger rows, in one
process and in two processes sharing the cache (and the ledger), as ``vsb run --workers 2``.

Measured on the development container (2 CPUs shared with other jobs at a load of about 5,
so even CPU times vary up to 2x between repeats; three repeats each):

    miss, cache only             0.92-1.00 ms CPU per image
    miss, cache + ledger rows    1.30-1.58 ms CPU per image
    same, each of 2 processes    0.70-1.49 ms CPU per image
    hit                          0.13-0.15 ms CPU per image

The cache before claims (index rows batched per task) measured 0.33-1.17 ms CPU per miss in
the same conditions. A whole cold ``vsb run`` of procedural-drift-mid under 6 conditions
(1,260 images, 2 workers) took 9.4-10.3 s CPU before and 10.2-10.6 s after (three runs
each): about +5 %. A provider call takes seconds.

Run: ``.venv/bin/python benchmarks/bench_cache_ledger.py [--n 2000]``
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

from vsb.adapters.base import GenerationResult
from vsb.store.cache import GenerationCache
from vsb.store.ledger import Ledger


def _png(i: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + i.to_bytes(8, "big") * 4


def _misses(root: str, ledger_path: str | None, start: int, n: int) -> tuple[float, float]:
    """Wall and CPU seconds per miss over keys start..start+n (with ledger rows when a path
    is given)."""
    cache = GenerationCache(root)
    led = Ledger(ledger_path) if ledger_path else None
    if led is not None:
        led.session = 1

    def compute(i: int) -> GenerationResult:
        if led is None:
            return GenerationResult(_png(i))
        row = led.begin(f"k{i}", "m", cost_usd=0.0)
        out = GenerationResult(_png(i))
        led.finish(row, latency_s=0.0, success=True, cost_usd=0.0)
        return out

    t, c = time.perf_counter(), time.process_time()
    for i in range(start, start + n):
        cache.get(f"k{i}", lambda i=i: compute(i))
    wall, cpu = (time.perf_counter() - t) / n, (time.process_time() - c) / n
    cache.close()
    if led is not None:
        led.close()
    return wall, cpu


def _show(what: str, wall: float, cpu: float) -> None:
    print(f"{what:<29}{wall * 1e3:6.3f} ms wall, {cpu * 1e3:6.3f} ms CPU per image")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    n = ap.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ledger = root / "ledger.sqlite"
        Ledger(ledger).start_session("bench")
        GenerationCache(root / "c1").open()
        GenerationCache(root / "c2").open()
        GenerationCache(root / "c3").open()
        _show("miss, cache only", *_misses(str(root / "c1"), None, 0, n))
        _show("miss, cache + ledger rows", *_misses(str(root / "c2"), str(ledger), 0, n))
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(2) as pool:
            per = pool.starmap(_misses, [(str(root / "c3"), str(ledger), s, n) for s in (0, n)])
        _show("same, each of 2 processes", max(w for w, _ in per), max(c for _, c in per))
        cache = GenerationCache(root / "c1")
        t, c = time.perf_counter(), time.process_time()
        for i in range(n):
            cache.get(f"k{i}", lambda: GenerationResult(b""))
        _show("hit", (time.perf_counter() - t) / n, (time.process_time() - c) / n)
        cache.close()


if __name__ == "__main__":
    main()
