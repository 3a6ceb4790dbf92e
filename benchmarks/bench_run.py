"""Time ``vsb run`` on the default suite: render, encode, hash + write, and the whole grid.

The grid is 5 simulators × 6 conditions × 210 scenes = 6,300 images. Parts are timed on the
210 true states of the default suite (best of 3); the run is one cold call (empty cache,
two fork workers) followed by a warm one (every image from the cache, zero adapter calls).
Measured on the development container (2 CPUs):

    render (indices)                 ≈ 4,700 images/s   (0.21 ms)
    encode (indexed PNG)             ≈ 2,300 images/s   (0.44 ms)
    render + encode (render_png)     ≈ 1,500 images/s   (0.65 ms)
    sha256 of the PNG bytes          ≈ 350,000 images/s
    fault simulation (all chains)    ≈ 1,150 chains/s   (1,200 chains ≈ 1.0 s)
    vsb run, cold (2 workers)        ≈ 5.7 s for 6,300 images, ≈ 1,100 images/s (target ≤ 15 s)
    vsb run, warm (all cache hits)   ≈ 1.3 s, ≈ 4,900 images/s (zero adapter calls)

Creating a file costs ≈ 0.3 ms on this disk (mkstemp + rename), the largest cost after the
renderer; a resumed run compares bytes instead of rewriting identical images.

Run: ``.venv/bin/python benchmarks/bench_run.py [--workers N]``
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

from vsb.adapters.faults import simulate_story
from vsb.adapters.simulators import SIMULATORS, chain_rng, jitter_seed
from vsb.conditions import condition_names, get_condition
from vsb.generator.generate import generate_suite, write_suite
from vsb.run.runner import RunConfig, run


def _best(fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    import vsb.render as render

    stories = generate_suite(0)
    frames = [(s, sc) for s in stories for sc in s.scenes]
    n = len(frames)
    jobs = [(sc.state, jitter_seed(s.id, sc.index, 0)) for s, sc in frames]
    t_png = _best(lambda: [render.render_png(st, seed=j) for st, j in jobs])
    pngs = [render.render_png(st, seed=j) for st, j in jobs]
    t_sha = _best(lambda: [hashlib.sha256(p).hexdigest() for p in pngs])
    print(f"render + encode (render_png)   {n / t_png:8.0f} images/s  ({t_png / n * 1e3:.2f} ms)")
    if hasattr(render, "render_indices"):
        t_idx = _best(lambda: [render.render_indices(st, seed=j) for st, j in jobs])
        t_enc = max(t_png - t_idx, 1e-9)
        print(
            f"render (indices)               {n / t_idx:8.0f} images/s  ({t_idx / n * 1e3:.2f} ms)"
        )
        print(
            f"encode (indexed PNG)           {n / t_enc:8.0f} images/s  ({t_enc / n * 1e3:.2f} ms)"
        )
    print(f"sha256 of the PNG bytes        {n / t_sha:8.0f} images/s")
    chains = [(m, p, c) for m, p in SIMULATORS.items() for c in condition_names()]

    def sim() -> None:
        for m, p, c in chains:
            cond = get_condition(c)
            for s in stories:
                simulate_story(s, cond, p, chain_rng(m, s.id, c, 0))

    t_sim = _best(sim, 1)
    print(f"fault simulation               {len(chains) * len(stories) / t_sim:8.0f} chains/s")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_suite(stories, root / "suite", seed=0)
        cfg = RunConfig(
            suite_dir=root / "suite", models=list(SIMULATORS), conditions=condition_names(),
            out=root / "run", workers=args.workers, cache_dir=root / "cache",
        )  # fmt: skip
        cold = run(cfg)
        print(
            f"vsb run, cold ({args.workers} workers)        {cold.seconds:6.2f} s  "
            f"{cold.images} images, {cold.calls} generated  "
            f"({cold.images / cold.seconds:.0f} images/s)"
        )
        warm = run(cfg)
        print(
            f"vsb run, warm (cache hits)     {warm.seconds:6.2f} s  "
            f"{warm.hits} hits, {warm.calls} generated  ({warm.images / warm.seconds:.0f} images/s)"
        )


if __name__ == "__main__":
    main()
