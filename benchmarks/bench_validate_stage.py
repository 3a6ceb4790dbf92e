"""Time the score and validate stages of ``vsb release build`` on one built release: a
baseline commit's code against this working tree, and this tree's old path against its new
one, measured side by side in one run, printed as ratios.

Paths timed (each in a child process of its own, the tree under test first on PYTHONPATH,
on a hard-linked copy of the release so every run starts from the same files):

* ``baseline`` (``--baseline REV``, default ``main``): that commit's ``stages.score`` then
  ``stages.validate``, each reading the evaluation tables itself, as its build did;
* ``old path``: this tree with each stage reading the tables itself and the reference
  judges served over HTTP on 127.0.0.1 (``served=True``);
* ``new path``: this tree as the build runs it: the tables read once (``load_tables``),
  handed to both stages in memory, the reference judges answered in process.

The story cache is warmed first in every child (the build has loaded the suite by then), so
neither path pays schema validation. The outputs (``scores/``, ``validation/``) of every path
must be byte-identical to the first's; a difference is reported and exits non-zero. Repeats
are interleaved (baseline, old, new, baseline, …) and the median of each is shown; the ratios
mean most when nothing else runs on the machine.

Run: ``.venv/bin/python benchmarks/bench_validate_stage.py [--release DIR] [--baseline REV]
[--skip-baseline] [--repeat N]``. Without ``--release`` the default release is built first
with this tree (a few minutes).
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
from bench_main_job import extract_commit  # noqa: E402  (the one baseline extraction)

COMPARED = ("scores", "validation")

# Run in the child: time the stages the way ``mode`` asks, then print one JSON line.
_DRIVER = """
import json, sys, time
from pathlib import Path
from vsb.release import stages as st
from vsb.release.build import _Silent
from vsb.story.io import load_suite
rel, work, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
load_suite(rel / "suite")  # as in the build: the run stage loaded the suite already
prog, t, tables = _Silent(), {}, None

def part(name, fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    t[name] = (time.perf_counter() - w, time.process_time() - c)
    return out

if mode == "new":
    tables = part("load", lambda: st.load_tables(rel))
else:
    t["load"] = (0.0, 0.0)
if tables is not None:
    part("score", lambda: st.score(rel, prog, "bench", tables))
    part("validate", lambda: st.validate(rel, prog, "bench", work, tables))
else:
    part("score", lambda: st.score(rel, prog, "bench"))
    if mode == "old":
        part("validate", lambda: st.validate(rel, prog, "bench", work, served=True))
    else:
        part("validate", lambda: st.validate(rel, prog, "bench", work))
t["total"] = tuple(sum(v[i] for v in t.values()) for i in (0, 1))
print("BENCH " + json.dumps(t))
"""


def _build(out: Path) -> Path:
    """The default release built with this tree; its release folder."""
    code = (
        "import sys; from pathlib import Path; "
        "from vsb.release.build import BuildConfig, build_release; "
        "r = build_release(BuildConfig(name='bench', out=Path(sys.argv[1]))); "
        "print(r.release_dir)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip().splitlines()[-1])


def _link_copy(src: Path, dest: Path) -> None:
    """``src`` under ``dest`` with every file hard-linked (stages write by rename, so the
    originals are never changed); the stages' own outputs are left out."""
    shutil.copytree(
        src, dest, copy_function=os.link, ignore=lambda d, names: COMPARED if d == str(src) else ()
    )


def _outputs(release: Path) -> dict[str, bytes]:
    return {
        p.relative_to(release).as_posix(): p.read_bytes()
        for folder in COMPARED
        for p in sorted((release / folder).rglob("*"))
        if p.is_file()
    }


def _run(
    tree: Path, release: Path, tmp: Path, mode: str
) -> tuple[dict[str, list[float]], dict[str, bytes]]:
    rel, work = tmp / "release", tmp / "work"
    shutil.rmtree(tmp, ignore_errors=True)
    _link_copy(release, rel)
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(rel), str(work), mode],
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=False,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH ")), None)
    if done.returncode != 0 or line is None:
        sys.exit(f"{mode} ({tree}) failed:\n{done.stderr[-3000:]}")
    return json.loads(line[len("BENCH ") :]), _outputs(rel)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", type=Path, help="a built release folder (OUT/NAME/release)")
    ap.add_argument("--baseline", default="main", help="commit of the baseline (default main)")
    ap.add_argument("--skip-baseline", action="store_true", help="time this tree only")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each path (default 3)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp_name:
        tmp = Path(tmp_name)
        release = args.release or _build(tmp / "build")
        if not (release / "evaluations").is_dir():
            sys.exit(f"{release}: not a release folder with evaluations/ (OUT/NAME/release)")
        trees = []
        if not args.skip_baseline:
            commit = extract_commit(args.baseline, tmp / "baseline")
            trees.append(("baseline", tmp / "baseline", "own"))
            print(f"baseline: {args.baseline} = {commit[:10]}")
        trees += [("old path", REPO, "old"), ("new path", REPO, "new")]
        times: dict[str, list[dict[str, list[float]]]] = {label: [] for label, _, _ in trees}
        first: dict[str, bytes] | None = None
        for i in range(args.repeat):
            for label, tree, mode in trees:
                t, out = _run(tree, release, tmp / "copy", mode)
                times[label].append(t)
                shown = "  ".join(f"{k} {w:6.2f}s ({c:5.2f}s cpu)" for k, (w, c) in t.items())
                print(f"  run {i + 1} {label:9} {shown}", flush=True)
                if first is None:
                    first = out
                elif out != first:
                    diff = sorted(k for k in set(out) | set(first) if out.get(k) != first.get(k))
                    print(f"OUTPUTS DIFFER ({label}): {', '.join(diff)}")
                    return 1
        print(f"\nmedian of {args.repeat}; outputs byte-identical across paths")
        for j, kind in enumerate(("wall seconds", "CPU seconds (this process, all threads)")):
            med = {
                label: {k: statistics.median(t[k][j] for t in ts) for k in ts[0]}
                for label, ts in times.items()
            }
            print(f"\n{kind:40}{'load':>8}{'score':>8}{'validate':>10}{'total':>8}")
            for label, m in med.items():
                row = f"{m['load']:8.2f}{m['score']:8.2f}{m['validate']:10.2f}{m['total']:8.2f}"
                print(f"{label:40}{row}")
            new = med["new path"]
            for label in [x for x in med if x != "new path"]:
                ref = med[label]
                score_new = new["score"] + new["load"]  # its one load serves both stages
                print(
                    f"  new path / {label}: score (with the load) "
                    f"{score_new / ref['score']:.2f}×, validate "
                    f"{new['validate'] / ref['validate']:.2f}×, "
                    f"both {new['total'] / ref['total']:.2f}×"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
