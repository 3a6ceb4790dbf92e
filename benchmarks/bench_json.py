"""What the guarded JSON reader (vsb.fsio) costs next to a bare ``json.loads``.

Times, on the default suite (seed 0) and on synthetic files:
  * one story file: bare ``json.loads`` vs ``load_json`` (size cap + depth scan + parse) and
    the whole ``load_story`` (schema, models, replay) for scale;
  * a large JSON document (many shallow brackets: the depth scan's worst legal case);
  * a requirements.jsonl of N rows: a bare line loop vs ``iter_jsonl``;
  * refusing a 100,000-deep file (it used to be a RecursionError traceback).

Measured on the development container (2 CPUs shared with other jobs, so noisy):

    story file (38 kB)      json.loads 0.5 ms   load_json 1.7-1.9 ms   load_story ≈ 100 ms
    56 MB document          json.loads 5.6-9.2 s   load_json 10.4-14.2 s (depth scan ≈ 1.5×)
    requirements.jsonl      iter_jsonl ≈ 0.8-1.0× the rows/s of a bare json.loads loop
    100,000-deep story      refused in ≈ 20-30 ms

The guard costs < 2 % of loading a story (schema, models and replay dominate).

Run: ``.venv/bin/python benchmarks/bench_json.py [--rows 200000]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from vsb.errors import InputError
from vsb.fsio import iter_jsonl, json_max_depth, load_json
from vsb.generator.generate import generate_suite, story_json, write_suite
from vsb.story.io import load_story


def _best(fn: Callable[[], object], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the synthetic JSONL")
    args = ap.parse_args()
    stories = generate_suite(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_suite(stories, root / "suite", seed=0)
        files = sorted((root / "suite").glob("*-*.json"))
        n = len(files)
        kb = sum(f.stat().st_size for f in files) / n / 1024
        bare = _best(lambda: [json.loads(f.read_bytes()) for f in files]) / n
        guarded = _best(lambda: [load_json(f, unique_keys=True) for f in files]) / n
        full = _best(lambda: [load_story(f) for f in files], repeat=2) / n
        print(f"story file ({n} files, mean {kb:.0f} kB):")
        print(f"  json.loads            {bare * 1e3:7.3f} ms")
        print(f"  load_json (guarded)   {guarded * 1e3:7.3f} ms")
        print(f"  load_story (complete) {full * 1e3:7.3f} ms")
        depth = max(json_max_depth(story_json(s)) for s in stories)
        print(f"  deepest story nesting: {depth} (limit 64)")

        big = root / "big.json"
        big.write_text(json.dumps([{"a": [i, [i]], "b": "x" * 20} for i in range(1_000_000)]))
        mb = big.stat().st_size / 1e6
        t_bare = _best(lambda: json.loads(big.read_bytes()), repeat=2)
        t_guard = _best(lambda: load_json(big), repeat=2)
        print(f"large document ({mb:.0f} MB, 3 million brackets):")
        print(f"  json.loads {t_bare:6.2f} s   load_json {t_guard:6.2f} s")

        rows = root / "requirements.jsonl"
        row = {"model": "m", "condition": "c", "story_id": "s", "scene": 1, "req_id": "r",
               "dimension": "identity", "expected": '["a", "b"]', "observed": "null",
               "passed": True, "verdict": "passed", "evaluator": "rules"}  # fmt: skip
        rows.write_text("".join(json.dumps({**row, "scene": i}) + "\n" for i in range(args.rows)))

        def bare_lines() -> int:
            with open(rows, encoding="utf-8") as fh:
                return sum(1 for line in fh if line.strip() and json.loads(line))

        t_bare = _best(bare_lines, repeat=3)
        t_guard = _best(lambda: sum(1 for _ in iter_jsonl(rows)), repeat=3)
        print(f"requirements.jsonl ({args.rows:,} rows):")
        print(f"  bare loop {args.rows / t_bare:10,.0f} rows/s   iter_jsonl "
              f"{args.rows / t_guard:10,.0f} rows/s")  # fmt: skip

        deep = root / "deep.json"
        deep.write_text("[" * 100_000)

        def refuse() -> None:
            with contextlib.suppress(InputError):
                load_story(deep)

        print(f"refusing a 100,000-deep story: {_best(refuse) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
