"""Throughput of ``vsb run`` against an HTTP provider, as a ratio of the concurrency bound.

A local OpenAI-compatible images server (tests/openai_images_server.py, in its own process)
answers every request after ``--latency`` seconds (default 0.2); ``vsb run --model
openai:bench --base-url … --concurrency N`` (default 8) generates the default suite under
``--conditions`` from a cold cache. With N requests at a time and a latency L no client can
do better than N / L requests per second (8 / 0.2 s = 40/s), so the figure is

    ratio = (adapter calls / seconds of generation) / (N / L)

where the seconds run from the runner's first progress call to its last (loading and
checking the suite, copying it and writing records are left out: they do not scale with
the provider). What remains per request is vsb's own work: building the request, the ledger
row before and after it, the cache claim and entry, the PNG check and the image file.

Measured on the development container (2 CPUs shared with other work), latency 0.2 s,
concurrency 8, three text conditions (630 images, 550 distinct requests), three runs:

    bound 40.0 requests/s; achieved 37.4–37.6 requests/s; ratio 0.934–0.940

(each request costs vsb ≈ 3–5 ms of CPU — httpx, two ledger commits, the cache claim and
entry, two file writes — and eight requests that come back together queue for the GIL;
with ``--latency 0.0001`` the same run does ≈ 190–200 requests/s.)

Run: ``.venv/bin/python benchmarks/bench_providers.py [--latency S] [--concurrency N]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vsb.adapters.registry import get_adapter
from vsb.generator.generate import generate_suite, write_suite
from vsb.run.runner import RunConfig, run

SERVER = Path(__file__).resolve().parents[1] / "tests" / "openai_images_server.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--conditions", default="independent,previous_text,structured_memory")
    ap.add_argument("--p429", type=float, default=0.0, help="share of 429 answers")
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    with tempfile.TemporaryDirectory(prefix="vsb-bench-providers-") as tmp:
        root = Path(tmp)
        write_suite(generate_suite(0), root / "suite", seed=0)
        cmd = [sys.executable, str(SERVER), "--log", str(root / "server.log"),
               "--latency", str(args.latency), "--p429", str(args.p429)]  # fmt: skip
        server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline().split()[1])
            adapter = get_adapter("openai:bench", base_url=f"http://127.0.0.1:{port}/v1")
            marks: list[float] = []

            def progress(done: int, total: int) -> None:
                marks.append(time.perf_counter())

            config = RunConfig(
                suite_dir=root / "suite", models=["openai:bench"],
                conditions=args.conditions.split(","), out=root / "run",
                cache_dir=root / "cache", concurrency=args.concurrency,
            )  # fmt: skip
            t0 = time.perf_counter()
            res = run(config, progress, adapters={"openai:bench": adapter})
            total = time.perf_counter() - t0
        finally:
            server.kill()
            server.wait()
            if server.stdout is not None:
                server.stdout.close()
        gen = marks[-1] - marks[0]
        bound = args.concurrency / args.latency
        rate = res.calls / gen
        print(f"images {res.images}, adapter calls {res.calls}, failures {res.failures}")
        print(f"generation {gen:.2f} s (whole run {total:.2f} s)")
        print(f"bound {bound:.1f} requests/s; achieved {rate:.1f} requests/s")
        print(f"ratio {rate / bound:.3f}")


if __name__ == "__main__":
    main()
