"""The Ray executor's overhead against the local pool on the full simulator grid.

The grid is 5 simulators × 6 conditions × 210 scenes = 6,300 images of the default suite.
Each executor runs it cold (empty cache) and then warm (every image from the cache), with
the same number of CPUs: the local executor as ``--workers N`` fork workers, Ray as a local
cluster started with ``num_cpus=N`` (its start-up is timed apart: a cluster is started once
and serves many runs). Both runs must give the same records (image hashes); the figure is
the ratio of wall times, Ray / local (1.0 = no overhead).

Measured on the development container (2 CPUs shared with other agents' jobs, load 1.5–3,
so the spread is mostly noise; Ray 2.60; 200 tasks shipped cold; same records every time),
four runs, two before and two after the runner moved to vsb.run.executors' finer tasks:

    Ray cluster start                ≈ 5–8 s (once per cluster)
    cold: local ≈ 22–33 s, ray ≈ 22–28 s     ray / local ≈ 0.84–1.18 (median ≈ 1.0)
    warm: local ≈ 4.7–7.6 s, ray ≈ 4.7–5.2 s  ray / local ≈ 0.64–1.08 (median ≈ 0.95)

The workers simulate and render; the driver alone walks the cache, stores the entries,
writes the ledger (one transaction per task) and the images, which the local pool spreads
over its workers — that serial share is the overhead, small next to the rendering.

Run: ``.venv/bin/python benchmarks/bench_ray.py [--cpus N]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from vsb.adapters.simulators import SIMULATORS
from vsb.conditions import condition_names
from vsb.generator.generate import generate_suite, write_suite
from vsb.run.runner import RunConfig, RunResult, run


def _timed(config: RunConfig) -> tuple[float, RunResult]:
    t = time.perf_counter()
    res = run(config)
    return time.perf_counter() - t, res


def _hashes(run_dir: Path) -> list[tuple[str, str, str, int, str]]:
    rows = [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]
    return [(r["model"], r["condition"], r["story_id"], r["scene"], r["sha256"]) for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpus", type=int, default=2, help="workers / Ray CPUs (default 2)")
    args = ap.parse_args()
    import ray

    from vsb.run.executors_ray import RayExecutor

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_suite(generate_suite(0), root / "suite", seed=0)

        def config(name: str, executor: RayExecutor | None = None) -> RunConfig:
            return RunConfig(
                suite_dir=root / "suite", models=list(SIMULATORS), conditions=condition_names(),
                out=root / name, workers=args.cpus, cache_dir=root / f"{name}-cache",
                executor=executor,
            )  # fmt: skip

        local_cold, res = _timed(config("local"))
        local_warm, _ = _timed(config("local"))
        t = time.perf_counter()
        ray.init(
            num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
            configure_logging=False,
        )  # fmt: skip
        start = time.perf_counter() - t
        try:
            executor = RayExecutor()
            ray_cold, res_ray = _timed(config("ray", executor))
            shipped = executor.stats["shipped"]
            ray_warm, _ = _timed(config("ray", executor))
        finally:
            ray.shutdown()
        same = _hashes(root / "local") == _hashes(root / "ray")
    n = res.images
    print(f"grid: {n} images ({len(SIMULATORS)} simulators × {len(condition_names())} conditions)")
    print(f"CPUs: {args.cpus}; Ray tasks shipped (cold): {shipped}; same records: {same}")
    print(f"Ray cluster start                {start:6.1f} s (once per cluster)")
    for label, lo, ra in (("cold", local_cold, ray_cold), ("warm", local_warm, ray_warm)):
        print(
            f"{label}: local {lo:6.1f} s ({n / lo:6.0f} images/s)   ray {ra:6.1f} s "
            f"({n / ra:6.0f} images/s)   ray / local = {ra / lo:4.2f}"
        )
    if res_ray.images != n or not same:
        raise SystemExit("the Ray run differs from the local run")


if __name__ == "__main__":
    main()
