"""What checking cached values against their keys costs (issue 35, item 7), measured on a
built release's cache (``vsb release build`` leaves it in ``OUT/NAME/cache``).

- Generation cache: a hit (index row, PNG read, sha256 of the bytes) with the row's seal
  checked, against the same hit on an unsealed row (what a hit cost before seals). Both on
  copies of the index in a temp folder (the PNGs are read where they are; nothing in CACHE
  is written).
- Extraction cache: reading a row with its seal and image checked, against parsing it alone;
  and the seal's hash, paid again when a row is stored.

CPU time (``time.process_time``), best of five, so that other work on the machine matters
less than it does to wall time. Prints one line per cache and the added milliseconds for all
of the cache's entries (what one build pays at most: each entry is read or written once).

Run: ``.venv/bin/python benchmarks/bench_cache_checks.py build/v0.1.0/cache``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from vsb.evaluators.render import memo
from vsb.store.cache import INDEX_NAME, GenerationCache, entry_seal


def _best(f: Callable[[], object], n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.process_time()
        f()
        times.append(time.process_time() - t)
    return min(times)


def generation(cache: Path) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        copies = {}
        for name in ("unsealed", "sealed"):
            d = Path(tmp) / name
            d.mkdir()
            shutil.copy(cache / INDEX_NAME, d / INDEX_NAME)
            (d / "objects").symlink_to((cache / "objects").resolve())
            c = GenerationCache(d)
            c.open()  # an index from before seals gets the column
            c.close()
            with sqlite3.connect(d / INDEX_NAME) as db:
                rows = db.execute("SELECT key, sha256, metadata, cost_usd FROM entries").fetchall()
                seals = [(entry_seal(tuple(r)) if name == "sealed" else None, r[0]) for r in rows]
                db.executemany("UPDATE entries SET seal = ? WHERE key = ?", seals)
            copies[name] = d
        keys = [r[0] for r in rows]
        if not keys:
            return f"generation cache: no entry in {cache / INDEX_NAME}"
        took: dict[str, float] = {}
        for name in ("unsealed", "sealed", "unsealed", "sealed"):  # alternate: drift shared
            c = GenerationCache(copies[name])
            t = _best(lambda c=c: [c.peek(k) for k in keys], 3)  # type: ignore[misc]
            c.close()
            took[name] = min(t, took.get(name, t))
    n, lo, hi = len(keys), took["unsealed"], took["sealed"]
    return (f"generation cache: {n} entries; a hit {lo / n * 1e6:.1f} us unsealed, "
            f"{hi / n * 1e6:.1f} us sealed ({hi / lo - 1:+.1%}); all entries "
            f"{(hi - lo) * 1e3:+.0f} ms")  # fmt: skip


def extraction(cache: Path) -> str:
    path = cache / memo.CACHE_NAME
    if not path.is_file():
        return f"extraction cache: none in {cache}"
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT key, data FROM extractions").fetchall()
    hexdigits = set(b"0123456789abcdef")
    rows = [(k, d) for k, d in rows if isinstance(d, bytes) and set(d[:64]) <= hexdigits]
    if not rows:
        return f"extraction cache: no sealed row in {path} (built before seals)"
    images = [json.loads(d[64:])["image"] for _, d in rows]

    def checked() -> None:
        for (k, d), image in zip(rows, images, strict=True):
            memo._state(memo._unsealed(k, image, d))

    def parsed() -> None:
        for _, d in rows:
            memo._state(json.loads(d[64:])["state"])

    n, t_new, t_old = len(rows), _best(checked), _best(parsed)
    t_seal = _best(lambda: [memo._seal(k, d[64:]) for k, d in rows])
    return (f"extraction cache: {n} rows; a read {t_old / n * 1e6:.1f} us parsed alone, "
            f"{t_new / n * 1e6:.1f} us checked; the seal {t_seal / n * 1e6:.1f} us again "
            f"on store; all rows {(t_new - t_old + t_seal) * 1e3:+.0f} ms")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", type=Path, help="a built release's cache (OUT/NAME/cache)")
    args = ap.parse_args()
    print(generation(args.cache))
    print(extraction(args.cache))


if __name__ == "__main__":
    main()
