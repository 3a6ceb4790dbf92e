"""Time the main job (``vsb release build``) cold and warm: wall time, peak memory, and the
share of each stage.

Cold: an empty build directory (no generation cache). Warm: the same command again (every
image from the cache, up-to-date stages skipped). Peak memory is the largest sum of the
resident set sizes of this process and all its descendants (fork workers included), sampled
every 20 ms from /proc, and the kernel's ru_maxrss of this process as a cross-check.

Targets (2 CPU cores): cold ≤ 45 s, warm ≤ 10% of cold, peak memory ≤ 2 GiB.

Run: ``.venv/bin/python benchmarks/bench_main_job.py [--workers N] [--out DIR] [--keep]``
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import threading
import time
from pathlib import Path

from vsb.release.build import STAGES, BuildConfig, BuildResult, build_release

GIB = 1024**3


def _tree_rss(root_pid: int) -> int:
    """Bytes resident in ``root_pid`` and every descendant (Linux /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
            with open(f"/proc/{entry}/statm") as fh:
                resident = int(fh.read().split()[1]) * page
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = resident
    total = 0
    for pid, size in rss.items():
        p = pid
        while p > 1 and p != root_pid:
            p = parents.get(p, 0)
        if p == root_pid:
            total += size
    return total


class _Sampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        pid = os.getpid()
        while not self.stop.is_set():
            self.peak = max(self.peak, _tree_rss(pid))
            self.stop.wait(0.02)


def _measure(config: BuildConfig) -> tuple[float, int, BuildResult]:
    sampler = _Sampler()
    sampler.start()
    t0 = time.perf_counter()
    result = build_release(config)
    wall = time.perf_counter() - t0
    sampler.stop.set()
    sampler.join()
    return wall, sampler.peak, result


def _report(label: str, wall: float, peak: int, result: BuildResult) -> None:
    print(f"{label}: {wall:6.2f} s wall, peak memory {peak / GIB:.2f} GiB ({peak >> 20} MiB)")
    for stage in STAGES:
        dt = result.seconds.get(stage, 0.0)
        skipped = " (skipped: up to date)" if stage in result.skipped else ""
        print(f"    {stage:<9} {dt:7.2f} s  {100 * dt / wall:5.1f}%{skipped}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="Build directory (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="Keep the build directory.")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="vsb-bench-"))
    config = BuildConfig(name="v0.1.0", out=out, workers=args.workers)
    if config.root.exists():
        shutil.rmtree(config.root)
    try:
        cold_wall, cold_peak, cold = _measure(config)
        _report(f"cold ({args.workers} workers, {cold.images} images)", cold_wall, cold_peak, cold)
        warm_wall, warm_peak, warm = _measure(config)
        _report(f"warm ({warm.cached} from cache)", warm_wall, warm_peak, warm)
        same = cold.manifest is not None and warm.manifest is not None
        same = same and cold.manifest.root_hash == warm.manifest.root_hash  # type: ignore[union-attr]
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
        kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss << 10
        print(f"warm / cold: {100 * warm_wall / cold_wall:.1f}%   (target ≤ 10%)")
        print(f"cold ≤ 45 s: {'yes' if cold_wall <= 45 else 'NO'}")
        peak = max(cold_peak, warm_peak)
        print(f"peak memory ≤ 2 GiB: {'yes' if peak <= 2 * GIB else 'NO'} "
              f"(ru_maxrss: main {maxrss >> 20} MiB, largest child {kids >> 20} MiB)")  # fmt: skip
        print(f"same root hash cold and warm: {'yes' if same else 'NO'}")
        print(f"site: {cold.index}")
    finally:
        if not args.keep and args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
