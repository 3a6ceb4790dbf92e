"""What crash safety costs per image: the cache claim and the ledger rows around each call.

A miss now makes four small SQLite commits (claim the key; ledger row before the call; ledger
row after it; entry + claim release). This times ``GenerationCache.get`` on misses and hits
with a trivial ``compute`` (no rendering), alone and with the runner's ledger rows, in one
process and in two processes sharing the cache (and the ledger), as ``vsb run --workers 2``.

Measured on the development container (2 CPUs shared with other jobs, so noisy):

    miss, cache only             ≈ 0.3 ms per image
    miss, cache + ledger rows    ≈ 0.6 ms per image
    same, 2 processes            ≈ 0.6 ms per image per process
    hit                          ≈ 0.05 ms per image

For scale: rendering and encoding one simulator image takes ≈ 0.65 ms on an idle machine
(benchmarks/bench_run.py), a provider call seconds.

Run: ``.venv/bin/python benchmarks/bench_cache_ledger.py [--n 2000]``
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

from vsb.adapters.base import GenerationResult
from vsb.cache import GenerationCache
from vsb.ledger import Ledger


def _png(i: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + i.to_bytes(8, "big") * 4


def _misses(root: str, ledger_path: str | None, start: int, n: int) -> float:
    """Seconds per miss over keys start..start+n (with ledger rows when a path is given)."""
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

    t = time.perf_counter()
    for i in range(start, start + n):
        cache.get(f"k{i}", lambda i=i: compute(i))
    dt = (time.perf_counter() - t) / n
    cache.close()
    if led is not None:
        led.close()
    return dt


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
        alone = _misses(str(root / "c1"), None, 0, n)
        print(f"miss, cache only             {alone * 1e3:6.3f} ms per image")
        both = _misses(str(root / "c2"), str(ledger), 0, n)
        print(f"miss, cache + ledger rows    {both * 1e3:6.3f} ms per image")
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(2) as pool:
            per = pool.starmap(_misses, [(str(root / "c3"), str(ledger), s, n) for s in (0, n)])
        print(f"same, 2 processes            {max(per) * 1e3:6.3f} ms per image per process")
        cache = GenerationCache(root / "c1")
        t = time.perf_counter()
        for i in range(n):
            cache.get(f"k{i}", lambda: GenerationResult(b""))
        hit = (time.perf_counter() - t) / n
        print(f"hit                          {hit * 1e3:6.3f} ms per image")
        cache.close()


if __name__ == "__main__":
    main()
