"""Time the reference judges' judging step of the main job (``vsb.validation.reference.
judge_slices``: the six judges on the four drifting simulators under independent, 840 frames
of the default release) against a baseline commit's, in the same run, with the summed peak
memory of the judging process tree: the part of the validate stage that runs beside score.

Each tree judges in a child process of its own (its code first on PYTHONPATH, the suite
already loaded as in the build), into a fresh scratch folder; builds alternate (baseline,
this tree, baseline, …) and the medians are compared. Memory is the largest sum of the
resident set sizes of the child and its descendants (a forked judge counts its shared pages
again, as in ``bench_main_job.py``), sampled every 20 ms.

Measured (2026-12-06, load average 4-6 on the 2-core machine, medians of 3): see
docs/performance.md, "The main job against its baseline".

Run: ``.venv/bin/python benchmarks/bench_judge_slices.py --release build/v0.1.0/release
[--baseline REV] [--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_main_job import MIB, _Sampler, extract_commit  # noqa: E402

_DRIVER = """
import json, resource, sys, time
from pathlib import Path
import vsb
from vsb.story.io import load_suite
from vsb.validation.reference import judge_slices
rel, work = Path(sys.argv[1]), Path(sys.argv[2])
load_suite(rel / "suite")
w, c = time.perf_counter(), time.process_time()
judged = judge_slices(rel, work / "reference")
kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # a forked judge's CPU too
print("BENCH " + json.dumps({"vsb": vsb.__file__, "wall": time.perf_counter() - w,
    "cpu": time.process_time() - c + kids.ru_utime + kids.ru_stime,
    "frames": judged.n_frames, "judges": len(judged.folders)}))
"""


def _judge(tree: Path, release: Path, scratch: Path) -> dict[str, float]:
    """One judging run of ``tree``'s code: wall, CPU (its processes) and peak MiB."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    child = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(release), str(scratch)],
        cwd=tree, env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    sampler = _Sampler(child.pid)
    sampler.start()
    out, _ = child.communicate()
    sampler.stop.set()
    sampler.join()
    if child.returncode != 0:
        sys.exit(f"{tree}: judging failed (exit {child.returncode})")
    facts = json.loads(next(ln for ln in out.splitlines() if ln.startswith("BENCH "))[6:])
    if not Path(facts["vsb"]).resolve().is_relative_to(tree.resolve()):
        sys.exit(f"imported vsb from {facts['vsb']}, not from {tree}")
    shutil.rmtree(scratch, ignore_errors=True)
    return {"wall": facts["wall"], "cpu": facts["cpu"], "peak": sampler.peak / MIB}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", type=Path, required=True, help="A built release folder.")
    ap.add_argument("--baseline", default=None, help="Commit to compare with.")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="vsb-judge-slices-") as tmp:
        trees = {"this tree": REPO}
        if args.baseline:
            commit = extract_commit(args.baseline, Path(tmp) / "baseline-src")
            trees = {f"baseline {commit[:7]}": Path(tmp) / "baseline-src", **trees}
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
        for _ in range(args.repeat):
            for label, tree in trees.items():
                r = _judge(tree, args.release.resolve(), Path(tmp) / "work")
                runs[label].append(r)
                print(f"{label}: {r['wall']:5.1f} s wall, {r['cpu']:5.1f} s CPU, "
                      f"peak {r['peak']:4.0f} MiB")  # fmt: skip
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall", "cpu", "peak")}
           for k, v in runs.items()}  # fmt: skip
    print(f"medians of {args.repeat}:")
    for label, m in med.items():
        print(f"  {label}: {m['wall']:5.1f} s wall, {m['cpu']:5.1f} s CPU, {m['peak']:4.0f} MiB")
    if len(med) == 2:
        (a, b) = med.values()
        print(f"  ratio: wall {b['wall'] / a['wall']:.2f}x, CPU {b['cpu'] / a['cpu']:.2f}x, "
              f"peak {b['peak'] / a['peak']:.2f}x")  # fmt: skip
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
