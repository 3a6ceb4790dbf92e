"""A literal reference judge on the whole family of drifting simulators (issue 34).

For each suite seed: generate the suite (``--per-cell`` or the default), run the drifting
simulators under each condition (independent and structured_memory by default), evaluate
with the rule checker, then ask a reference judge (default ``literal-drawn``: reads each
question as worded and the picture as the simulator drew it, never a fault's label) every
``vlm`` / ``vlm_xframe`` question through the real pipeline (plan -> OpenAI wire format ->
parse -> verdicts and knock-on labels), and validate both against the sealed oracle.

Prints, per seed and simulator (both conditions pooled), the strict recall and precision
of every taxonomy label, and marks with ``!`` each figure under ``--bound`` on a label with
at least ``--min-faults`` faults; the same bound is checked per simulator × condition. The
rule checker's all-label figures are printed beside (they must not fall). ``--verify``
checks that what the judge sees is what was drawn: each frame's drawn state, rendered
again, gives the image's bytes. Exit 1 when any bound is missed.

Run: ``.venv/bin/python scripts/literal_judge_family.py --seeds 0,7003,424242 [--out F]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vsb.cli.main import main as vsb
from vsb.evaluators.vlm.plan import EVALUATOR_NAME
from vsb.scores.inputs import load_requirements
from vsb.validation.hidden import hidden_checks
from vsb.validation.matching import detections, frames_of, load_faults, taxonomy_metrics
from vsb.validation.reference import judge_folder
from vsb.validation.reference_judges import REFERENCE_JUDGES

DRIFTING = ("procedural-drift-low", "procedural-drift-mid", "procedural-amnesiac",
            "procedural-sloppy")  # fmt: skip
CONDITIONS = ("independent", "structured_memory")


def _metrics(run: Path, evaluator: str, keep: Any) -> dict[str, dict[str, Any]]:
    """Strict figures per label of ``evaluator``'s rows on the frames ``keep(frame)``."""
    rows = load_requirements(run)
    rows = rows.view([e == evaluator and v != "not_applicable"
                      for e, v in zip(rows.evaluator, rows.verdict, strict=True)])  # fmt: skip
    frames = {fr for fr in frames_of(rows) if keep(fr)}
    units = [u for u in detections(rows) if u.frame in frames]
    faults = [f for f in load_faults(run) if f.frame in frames]
    # what no question of the judge can see is a knock-on of the faults that hid it
    hidden = hidden_checks(run) if evaluator == EVALUATOR_NAME else None
    return {
        t.taxonomy: {
            "faults": t.n_faults,
            "recall": t.recall,
            "detections": t.n_detections,
            "precision": t.precision,
        }
        for t in taxonomy_metrics(faults, units, frames, hidden)
    }


def _misses(labels: dict[str, dict[str, Any]], bound: float, min_faults: int) -> list[str]:
    out = []
    for label, m in labels.items():
        if label == "all" or m["faults"] < min_faults:
            continue
        for what in ("recall", "precision"):
            if m[what] is None or m[what] < bound:
                out.append(f"{label} {what} {m[what]}")
    return out


def verify_drawn(run: Path) -> int:
    """Frames whose drawn state, rendered again, differs from the image (0: all alike)."""
    from vsb.adapters.simulators import jitter_seed
    from vsb.render import render_png
    from vsb.validation.drawn import DrawnFrames

    drawn = DrawnFrames(run)
    seed = int(json.loads((run / "manifest.json").read_text()).get("seed", 0))
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    bad = 0
    for rec in records:
        if rec.get("error") is not None or not rec.get("path"):
            continue
        frame = (rec["model"], rec["condition"], rec["story_id"], int(rec["scene"]))
        png = render_png(drawn.state(frame), seed=jitter_seed(frame[2], frame[3], seed))
        bad += png != (run / rec["path"]).read_bytes()
    return bad


def one_seed(seed: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    base = work / f"seed-{seed}"
    suite, run = base / "suite", base / "run"
    t0 = time.perf_counter()
    argv = ["suite", "generate", "--out", str(suite), "--seed", str(seed)]
    argv += ["--per-cell", str(args.per_cell)] if args.per_cell else []
    if not suite.is_dir() and vsb(argv) != 0:
        raise SystemExit(f"suite generate failed for seed {seed}")
    if not run.is_dir():
        argv = ["run", "--suite", str(suite), "--model", ",".join(args.models),
                "--condition", ",".join(args.conditions), "--seed", str(seed),
                "--out", str(run), "--cache", str(work / "gen")]  # fmt: skip
        if vsb(argv) != 0 or vsb(["evaluate", str(run), "--evaluator", "rules"]) != 0:
            raise SystemExit(f"run or evaluate failed for seed {seed}")
    out: dict[str, Any] = {"seed": seed}
    if args.verify:
        out["frames_not_as_drawn"] = verify_drawn(run)
    judged = base / args.judge
    shutil.rmtree(judged, ignore_errors=True)
    shutil.copytree(run, judged, ignore=shutil.ignore_patterns("evaluations", "ledger.sqlite"))
    judge_folder(judged, args.judge, REFERENCE_JUDGES[args.judge](judged), served=False)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["judge"], out["rules"], out["cells"] = {}, {}, {}
    for m in args.models:
        out["judge"][m] = _metrics(judged, "vlm", lambda fr, m=m: fr[0] == m)
        out["rules"][m] = _metrics(run, "rules", lambda fr, m=m: fr[0] == m)["all"]
        for c in args.conditions:
            cell = _metrics(judged, "vlm", lambda fr, m=m, c=c: fr[:2] == (m, c))
            out["cells"][f"{m} x {c}"] = _misses(cell, args.bound, args.min_faults)
    if not args.keep:
        shutil.rmtree(judged, ignore_errors=True)
    return out


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def report(res: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """Print one seed's table; the bounds it misses."""
    missed = []
    note = (
        f", frames not as drawn: {res['frames_not_as_drawn']}"
        if "frames_not_as_drawn" in res
        else ""
    )
    print(f"\n== suite seed {res['seed']} ({res['seconds']} s{note}); judge {args.judge}")
    for m, labels in res["judge"].items():
        rules = res["rules"][m]
        print(f"-- {m}   (rule checker, all labels: recall {_fmt(rules['recall'])}, "
              f"precision {_fmt(rules['precision'])})")  # fmt: skip
        print(f"   {'label':24} {'faults':>6} {'recall':>7} {'detect':>6} {'precision':>9}")
        for label, x in labels.items():
            if not (x["faults"] or x["detections"]):
                continue
            counted = label == "all" or x["faults"] >= args.min_faults
            r = _fmt(x["recall"]) + ("!" if counted and (x["recall"] or 0) < args.bound else " ")
            p = _fmt(x["precision"])
            p += "!" if counted and (x["precision"] or 0) < args.bound else " "
            print(f"   {label:24} {x['faults']:6d} {r:>8} {x['detections']:6d} {p:>10}")
        missed += [f"seed {res['seed']} {m}: {x}" for x in _misses(labels, args.bound,
                                                                   args.min_faults)]  # fmt: skip
    for cell, xs in res["cells"].items():
        missed += [f"seed {res['seed']} {cell}: {x}" for x in xs]
    if res.get("frames_not_as_drawn"):
        missed.append(f"seed {res['seed']}: {res['frames_not_as_drawn']} frames not as drawn")
    return missed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0,7003,424242", help="Suite (and run) seeds.")
    ap.add_argument("--per-cell", type=int, default=0, help="Stories per cell (0: default).")
    ap.add_argument("--models", default=",".join(DRIFTING))
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--judge", default="literal-drawn", choices=sorted(REFERENCE_JUDGES))
    ap.add_argument("--bound", type=float, default=0.95)
    ap.add_argument("--min-faults", type=int, default=20, help="Labels held to the bound.")
    ap.add_argument("--work", type=Path, help="Work folder (kept; default: a temporary one).")
    ap.add_argument("--keep", action="store_true", help="Keep the judged runs under --work.")
    ap.add_argument("--verify", action="store_true", help="Re-render every drawn state.")
    ap.add_argument("--out", type=Path, help="Write the figures as JSON.")
    args = ap.parse_args()
    args.models = args.models.split(",")
    args.conditions = args.conditions.split(",")
    work = args.work or Path(tempfile.mkdtemp(prefix="vsb-family-"))
    results, missed = [], []
    try:
        for seed in (int(s) for s in args.seeds.split(",")):
            results.append(one_seed(seed, args, work))
            missed += report(results[-1], args)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    print(f"\n{len(missed)} bound(s) missed" + "".join(f"\n  {m}" for m in missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
