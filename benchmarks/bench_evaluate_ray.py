"""`vsb evaluate --executor ray` against the local pool: wall time, and the same rows.

A run of two simulators (procedural-drift-mid, procedural-sloppy) × the six main conditions on
the default suite (2,520 images) is made once; then the rule checker and pairwise consistency
evaluate it with the local executor (``workers`` fork workers) and with Ray (a local cluster
started with ``num_cpus`` = the same number; its start-up is timed apart). Ray ships every
image's bytes to its task (no shared filesystem), so the figure is the price of that
shipping: the ratio of wall times, Ray / local (1.0 = no overhead). The four output files
(requirements and signals, JSONL and CSV) must be byte-identical.

Measured on the development container (2 CPUs, Ray 2.60; two runs; identical files both
times; 48,612 requirement rows):

    Ray cluster start   ≈ 8.7–8.9 s (once per cluster)
    evaluate: local ≈ 10.8–11.7 s, ray ≈ 13.9–14.5 s   ray / local ≈ 1.19–1.34

Run: ``.venv/bin/python benchmarks/bench_evaluate_ray.py [--cpus N]``
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from vsb.conditions import condition_names
from vsb.evaluators.evaluate import evaluate_run
from vsb.generator.generate import generate_suite, write_suite
from vsb.run.runner import RunConfig, run

MODELS = ["procedural-drift-mid", "procedural-sloppy"]
FILES = ("requirements.parquet", "signals.parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpus", type=int, default=2, help="workers / Ray CPUs (default 2)")
    args = ap.parse_args()
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_suite(generate_suite(0), root / "suite", seed=0)
        out = root / "run"
        res = run(
            RunConfig(
                suite_dir=root / "suite", models=MODELS, conditions=condition_names(),
                out=out, workers=args.cpus, cache_dir=root / "cache",
            )
        )  # fmt: skip
        t = time.perf_counter()
        local = evaluate_run(out, workers=args.cpus)
        local_s = time.perf_counter() - t
        kept = root / "local-evaluations"
        shutil.copytree(out / "evaluations", kept)
        shutil.rmtree(out / "evaluations")
        t = time.perf_counter()
        ray.init(
            num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
            configure_logging=False,
        )  # fmt: skip
        start = time.perf_counter() - t
        try:
            t = time.perf_counter()
            remote = evaluate_run(out, workers=args.cpus, executor="ray")
            ray_s = time.perf_counter() - t
        finally:
            ray.shutdown()
        same = all((kept / f).read_bytes() == (out / "evaluations" / f).read_bytes() for f in FILES)
    n = res.images
    print(f"run: {n} images ({len(MODELS)} simulators × {len(condition_names())} conditions)")
    print(f"CPUs: {args.cpus}; requirement rows {local.requirements}; identical files: {same}")
    print(f"Ray cluster start   {start:6.1f} s (once per cluster)")
    print(
        f"evaluate: local {local_s:6.1f} s ({n / local_s:5.0f} images/s)   "
        f"ray {ray_s:6.1f} s ({n / ray_s:5.0f} images/s)   ray / local = {ray_s / local_s:4.2f}"
    )
    if not same or remote.requirements != local.requirements:
        raise SystemExit("the Ray evaluation differs from the local one")


if __name__ == "__main__":
    main()
