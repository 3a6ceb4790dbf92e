"""Kill ``vsb run`` with SIGKILL part-way, rerun it, and compare the ledger with the cache.

Issue #10 item 7: ``vsb run --model procedural-drift-mid --condition all`` on the default suite
(1,260 requests) is SIGKILLed once ``--kill-at`` images have appeared in the cache, the fork
workers it leaves behind are allowed to finish, and the same command is run again. Then:

    calls     ledger rows that are adapter calls (not cache hits), over every session
    distinct  cache entries (images generated at least once)
    missing   cache keys with no call row in the ledger (must be 0: a call that produced
              a cached image is never missing from the ledger)

Measured on the development container, 2 fork workers (kill points 1,000 and 1,100 are not
shown: the run had ended before that many distinct images existed, so nothing was killed):

    kill at (images)          100   200   300   450   600   750   900
    before: calls (ledger)   1164  1164  1164  1182  1200  1140  1224   for 1260 distinct
    before: missing keys       96    96    96    78    60   120    36
    after:  calls (ledger)   1260  1260  1260  1260  1260  1260  1260   for 1260 distinct
    after:  missing keys        0     0     0     0     0     0     0

(After the fix no call was repeated either: the killed run's workers finished the task in
hand, and its images reached the cache with their ledger rows.)

Run: ``.venv/bin/python benchmarks/kill_rerun.py [--kill-at 100,300,...] [--workers N]``.
Set PYTHONPATH to a checkout to measure another version of vsb.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _objects(cache: Path) -> int:
    root = cache / "objects"
    return sum(1 for _ in root.rglob("*.png")) if root.is_dir() else 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _count(run_dir: Path, cache: Path) -> tuple[int, int, int]:
    with sqlite3.connect(run_dir / "ledger.sqlite") as led:
        calls = int(led.execute("SELECT COUNT(*) FROM requests WHERE cache_hit = 0").fetchone()[0])
        called = {k for (k,) in led.execute("SELECT key FROM requests WHERE cache_hit = 0")}
    with sqlite3.connect(cache / "index.sqlite") as idx:
        keys = {k for (k,) in idx.execute("SELECT key FROM entries")}
    return calls, len(keys), len(keys - called)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kill-at", default="100,200,300,450,600,750,900,1000,1100")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--model", default="procedural-drift-mid")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite = root / "suite"
        subprocess.run(
            [sys.executable, "-m", "vsb.cli.main", "suite", "generate", "--out", str(suite)],
            check=True,
            capture_output=True,
        )
        print(f"{'kill at':>8} {'calls':>6} {'distinct':>8} {'missing':>7}  rerun")
        for n, kill_at in enumerate(int(x) for x in args.kill_at.split(",")):
            run_dir, cache = root / f"run{n}", root / f"cache{n}"
            cmd = [
                sys.executable, "-m", "vsb.cli.main", "run", "--suite", str(suite),
                "--model", args.model, "--condition", "all", "--out", str(run_dir),
                "--cache", str(cache), "--workers", str(args.workers),
            ]  # fmt: skip
            proc = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
            )
            while _objects(cache) < kill_at and proc.poll() is None:
                time.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            deadline = time.monotonic() + 60
            while _group_alive(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.01)  # orphaned workers finish their tasks
            rerun = subprocess.run(cmd, capture_output=True, text=True, check=False)
            calls, distinct, missing = _count(run_dir, cache)
            print(
                f"{kill_at:>8} {calls:>6} {distinct:>8} {missing:>7}  "
                f"exit {rerun.returncode}: {rerun.stdout.strip() or rerun.stderr.strip()}"
            )


if __name__ == "__main__":
    main()
