"""What decoding and extracting each distinct image once saves in a release's evaluations.

Given a build folder of ``vsb release build`` (its ``run/``, ``run-paraphrase/`` and
``run-implicit/``), this runs the frames stage of each evaluation (main: rules + pairwise;
the variants: rules) in one process, two ways, side by side in the same run:

- ``plain``: every sequence decoded and extracted image by image (``evaluate_task``
  without a memo, as before the memo);
- ``memo``: one ``ExtractionMemo`` per story (``evaluate_group``) and one on-disk
  extraction cache (a temp folder) shared by the three evaluations, in build order.

It checks that both give the same rows and prints the seconds of each and what the memo
computed and found. Measured on the development container (2 CPUs shared with other jobs,
one process), default release v0.1.0:

    evaluation       images  plain s  memo s  ratio  decoded  extracted  disk hits
    run                8400     19.2    11.8   0.61     3858       3843          0
    run-paraphrase     1050      2.6     1.1   0.44      859          0        859
    run-implicit       1160      2.5     1.5   0.58      764         77        687

(times include loading each run's suite, about 0.5 s.)

Run: ``.venv/bin/python benchmarks/bench_extraction_memo.py BUILD/v0.1.0``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from vsb.evaluators.interface import FrameSequence, read_run
from vsb.evaluators.machinery import Outputs, evaluate_group, evaluate_task

EVALUATIONS = (("run", ("rules", "pairwise")), ("run-paraphrase", ("rules",)),
               ("run-implicit", ("rules",)))  # fmt: skip


def _plain(run_dir: Path, names: tuple[str, ...]) -> list[Outputs]:
    view = read_run(run_dir)
    return [evaluate_task(view.stories[s.story_id], names, s) for s in view.sequences]


def _memo(run_dir: Path, names: tuple[str, ...], cache: Path) -> tuple[list[Outputs], Counter[str]]:
    view = read_run(run_dir)
    by_story: dict[str, list[FrameSequence]] = {}
    for s in view.sequences:
        by_story.setdefault(s.story_id, []).append(s)
    done: dict[FrameSequence, Outputs] = {}
    stats: Counter[str] = Counter()
    for sid, seqs in by_story.items():
        outs, st = evaluate_group(view.stories[sid], names, seqs, None, str(cache))
        done.update(zip(seqs, outs, strict=True))
        stats.update(st)
    return [done[s] for s in view.sequences], stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", type=Path, help="A release build folder (BUILD/v0.1.0).")
    args = ap.parse_args()
    print(f"{'evaluation':16s} {'images':>6s} {'plain s':>8s} {'memo s':>7s} {'ratio':>6s} "
          f"{'decoded':>8s} {'extracted':>10s} {'disk hits':>10s}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="vsb-bench-memo-") as tmp:
        for name, names in EVALUATIONS:
            run_dir = args.build / name
            if not run_dir.is_dir():
                continue
            t = time.perf_counter()
            plain = _plain(run_dir, names)
            t_plain = time.perf_counter() - t
            t = time.perf_counter()
            memo, stats = _memo(run_dir, names, Path(tmp))
            t_memo = time.perf_counter() - t
            if [o.out for o in plain] != [o.out for o in memo]:
                raise SystemExit(f"{name}: the memo's rows differ from the plain ones")
            images = stats["decoded"] + stats["decode_hits"]
            print(f"{name:16s} {images:6d} {t_plain:8.1f} {t_memo:7.1f} "
                  f"{t_memo / t_plain:6.2f} {stats['decoded']:8d} {stats['extracted']:10d} "
                  f"{stats['disk_hits']:10d}")  # fmt: skip


if __name__ == "__main__":
    main()
