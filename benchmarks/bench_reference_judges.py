"""Reference judges through ``vsb evaluate --evaluator vlm,vlm_xframe`` and ``vsb
validate-judge``: the literal judge and the useless ones (always-YES, always-NO,
always-UNSURE, garbage), each served over HTTP on 127.0.0.1 (vsb.validation.reference_judges).

For every suite seed: the default suite, ``procedural-drift-mid`` under all six conditions
(1,260 images), the rule checker, then each judge on a copy of the run. Prints, per judge,
strict recall and precision per label of the ``vlm`` section, the verdict rates, and the
error rate of the ``vlm`` and ``vlm_xframe`` answers against the oracle truth; writes the
figures as JSON with ``--out``.

Measured on the development container (2 CPUs, shared), suite seeds 7001 / 7002, 1,260
frames each, strict matching (same image, subject, label):

* literal: every label ≥ 0.95 in recall and precision at both seeds; all labels 0.994 /
  0.994 (7001) and 0.989 / 0.997 (7002); lowest: order_swap recall 0.980 and
  identity_drift precision 0.982 (7001), clothing_change recall 0.970 and pose_mismatch
  recall 0.978 (7002); error rate against the oracle 0.000 (vlm and vlm_xframe); unsure
  0.035 / 0.029 (questions about someone not there). 18-21 s a seed.
* always-YES: recall 0.012 / 0.011 (only the checks whose answer is NO: character_unexpected,
  object_resurrected, accessory "none"); error rate 0.116 / 0.114.
* always-NO: recall 0.255 / 0.247, precision 0.054 / 0.054 (each label's precision is its
  base rate: character_missing 0.058 / 0.050, wrong_location 0.029 / 0.037); error rate
  0.884 / 0.886.
* always-UNSURE: precision 0.055 / 0.055, unsure rate 1.000, no answers to score.
* garbage: parse-failure rate 1.000, recall 0.940 / 0.951 at precision 0.084 / 0.088.

Run: ``.venv/bin/python benchmarks/bench_reference_judges.py [--seeds 7001,7002] [--out F]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from vsb.cli.main import main as vsb
from vsb.validation.judge import validate_run
from vsb.validation.reference_judges import REFERENCE_JUDGES
from vsb.validation.sim_judge import JudgeServer


def judge_figures(run: Path, name: str, cache: Path, keep: bool = False) -> dict[str, Any]:
    """Judge ``run`` (a copy is judged) with reference judge ``name``; its figures."""
    judged = run.parent / f"{run.name}-{name}"
    shutil.copytree(run, judged)
    t0 = time.perf_counter()
    with JudgeServer(REFERENCE_JUDGES[name](judged)) as server:
        argv = ["evaluate", str(judged), "--evaluator", "vlm,vlm_xframe", "--judge",
                f"openai-compatible:{name}", "--base-url", server.url, "--cache", str(cache),
                "--judge-concurrency", "2"]  # fmt: skip
        code = vsb(argv)
    seconds = time.perf_counter() - t0
    report = validate_run(judged, evaluators=["vlm", "vlm_xframe"])
    vlm = report.section("vlm")
    out: dict[str, Any] = {
        "judge": name,
        "exit": code,
        "seconds": round(seconds, 1),
        "unsure_rate": vlm.verdicts.unsure_rate,
        "parse_failure_rate": vlm.verdicts.parse_failure_rate,
        "error_rate": vlm.agreement.error_rate,
        "labels": {
            t.taxonomy: {
                "faults": t.n_faults,
                "recall": t.recall,
                "detections": t.n_detections,
                "precision": t.precision,
            }
            for t in vlm.taxonomy
        },
    }
    try:
        out["xframe_error_rate"] = report.section("vlm_xframe").agreement.error_rate
    except KeyError:
        out["xframe_error_rate"] = None
    if not keep:
        shutil.rmtree(judged)
    return out


def seed_run(root: Path, seed: int) -> Path:
    """drift-mid, all six conditions, on the default suite at ``seed``, rule-checked."""
    suite, run = root / f"suite{seed}", root / f"run{seed}"
    assert vsb(["suite", "generate", "--out", str(suite), "--seed", str(seed)]) == 0
    argv = ["run", "--suite", str(suite), "--model", "procedural-drift-mid", "--condition",
            "all", "--out", str(run), "--cache", str(root / "gen")]  # fmt: skip
    assert vsb(argv) == 0
    assert vsb(["evaluate", str(run)]) == 0
    return run


def _f(x: float | None) -> str:
    return "   —  " if x is None else f"{x:6.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="7001,7002")
    ap.add_argument("--judges", default=",".join(REFERENCE_JUDGES))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--keep", type=Path, help="work here and keep the judged runs")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        for seed in (int(s) for s in args.seeds.split(",")):
            run = seed_run(root, seed)
            for name in args.judges.split(","):
                r = judge_figures(run, name, root / f"cache-{seed}-{name}", bool(args.keep))
                r["seed"] = seed
                results.append(r)
                print(
                    f"seed {seed} judge {name}: {r['seconds']} s, error rate "
                    f"{_f(r['error_rate'])}, xframe {_f(r['xframe_error_rate'])}, unsure "
                    f"{_f(r['unsure_rate'])}, parse failures {_f(r['parse_failure_rate'])}"
                )
                for label, t in r["labels"].items():
                    if t["faults"] or t["detections"]:
                        print(f"  {label:22s} {t['faults']:5d} R {_f(t['recall'])}  "
                              f"{t['detections']:5d} P {_f(t['precision'])}")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
