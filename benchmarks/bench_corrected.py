"""Coverage of the corrected scores' intervals (issue 39): a judge of known noise scores a
model whose truth is known but that has no oracle, again and again.

The run: the default suite under ``structured_memory``, ``procedural-drift-mid`` (with its
oracle) and ``stored:procedural-drift-mid`` (a copy of its frames, re-encoded so the judge
sees other bytes, with no oracle); ``--sources`` adds other simulators, each with its copy.
Each repetition judges every model with the literal judge
(``vsb.validation.reference_judges.LiteralJudge``) whose YES answers turn NO with
probability ``--yes-no`` and NO answers YES with ``--no-yes`` (``NoisyJudge``, a new seed
per repetition, through the real pipeline: plan, calls, parse, rows), scores the ``vlm``
rows with ``--corrected``'s correction, and compares the stored copy's raw and corrected
global scores with its truth (``true_scores``: the oracle of the frames it copies).

Prints and writes (``--out``) per repetition the raw and corrected global and whether the
truth lies in the corrected interval; at the end the coverage, the mean absolute error and
the largest. Measured figures are in docs/validation.md.

Run: ``.venv/bin/python benchmarks/bench_corrected.py [--reps 50] [--sources A,B] [--out F]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from PIL import Image
from PIL.PngImagePlugin import PngInfo

from vsb.cli.main import main as vsb
from vsb.generator.generate import generate_suite, write_suite

MODEL = "procedural-drift-mid"
CONDITION = "structured_memory"


def make_run(root: Path, suite_seed: int, n_stories: int | None, sources: list[str]) -> Path:
    """The simulators and their re-encoded stored copies in one run (not evaluated)."""
    stories = generate_suite(suite_seed)
    write_suite(stories[:n_stories] if n_stories else stories, root / "suite", seed=suite_seed)
    common = ["--suite", str(root / "suite"), "--condition", CONDITION, "--cache",
              str(root / "gen"), "--workers", "2"]  # fmt: skip
    assert vsb(["run", *common, "--model", ",".join(sources), "--out", str(root / "first")]) == 0
    src, samples = root / "first" / "images", root / "samples"
    for p in src.rglob("*.png"):
        q = samples / p.relative_to(src)
        q.parent.mkdir(parents=True, exist_ok=True)
        info = PngInfo()
        info.add_text("copy", "stored")  # other bytes, same pixels
        Image.open(p).save(q, compress_level=9, pnginfo=info)
    run = root / "run"
    models = ",".join([*sources, *(f"stored:{s}" for s in sources)])
    argv = ["run", *common, "--model", models, "--samples", str(samples), "--out", str(run)]
    assert vsb(argv) == 0
    return run


def judge(run: Path, inner: Any, flips: dict[str, float], seed: int) -> None:
    """``run``'s vlm rows from the noisy judge (in process, one call at a time)."""
    from vsb.evaluators.evaluate import evaluate_run
    from vsb.evaluators.vlm.transports import build_transport
    from vsb.evaluators.vlm_judge import JudgeOptions
    from vsb.validation.correct.noisy import NoisyJudge
    from vsb.validation.sim_judge import JudgeEndpoint

    shutil.rmtree(run / "evaluations", ignore_errors=True)
    (run / "ledger.sqlite").unlink(missing_ok=True)
    with JudgeEndpoint(NoisyJudge(inner, flips, seed)) as endpoint, endpoint.client() as client:
        transport = build_transport("openai-compatible:noisy", base_url=endpoint.url, client=client)
        evaluate_run(run, evaluators=["vlm"], judge=transport,
                     judge_options=JudgeOptions(cache_dir=None, concurrency=1))  # fmt: skip


def one(run: Path, resamples: int, copy: str) -> dict[str, Any]:
    """Raw and corrected global of the stored copy ``copy`` against its truth."""
    from vsb.scores.compute import Resampling, load_scoring_input, score_input
    from vsb.validation.correct.apply import correct_report
    from vsb.validation.correct.noisy import true_scores

    inp = load_scoring_input(run)
    settings = Resampling(seed=0, n_resamples=resamples)
    report, _ = correct_report(inp, score_input(inp, evaluators="vlm", settings=settings), settings)
    truth = true_scores(run, "vlm")[(copy, CONDITION)]["global"]
    row = next(r for r in report.scores if r.model == copy)
    assert row.global_score is not None and row.corrected is not None
    c = row.corrected.global_score
    assert c is not None and c.score is not None
    return {
        "model": copy, "truth": truth, "raw": row.global_score.score, "corrected": c.score,
        "ci_low": c.ci_low, "ci_high": c.ci_high,
        "covered": c.ci_low is not None and c.ci_high is not None
        and c.ci_low <= truth <= c.ci_high,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=50, help="Repetitions (a judge seed each).")
    ap.add_argument("--first-seed", type=int, default=1000, help="Judge seed of repetition 0.")
    ap.add_argument("--suite-seed", type=int, default=0)
    ap.add_argument("--stories", type=int, default=None, help="Only the first N stories.")
    ap.add_argument("--yes-no", type=float, default=0.15, help="P(YES turns NO).")
    ap.add_argument("--no-yes", type=float, default=0.10, help="P(NO turns YES).")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=None, help="Write the figures as JSON here.")
    ap.add_argument("--sources", default=MODEL, help="Simulators (comma-separated): each runs "
                    "with its oracle, and a stored copy of its frames without one.")  # fmt: skip
    args = ap.parse_args()
    from vsb.validation.reference_judges import LiteralJudge

    flips = {"YES": args.yes_no, "NO": args.no_yes}
    inner = LiteralJudge()  # its readings of the pictures are kept between repetitions
    reps: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        sources = [s.strip() for s in args.sources.split(",") if s.strip()]
        run = make_run(Path(tmp), args.suite_seed, args.stories, sources)
        for i in range(args.reps):
            t0 = time.perf_counter()
            judge(run, inner, flips, args.first_seed + i)
            for source in sources:
                r = one(run, args.resamples, f"stored:{source}") | {"seed": args.first_seed + i}
                reps.append(r)
                print(f"rep {i:3d} seed {r['seed']} {r['model']}: truth {r['truth']:.4f} raw "
                      f"{r['raw']:.4f} corrected {r['corrected']:.4f} [{r['ci_low']:.4f}, "
                      f"{r['ci_high']:.4f}] {'in' if r['covered'] else 'OUT'} "
                      f"({time.perf_counter() - t0:.1f} s)", flush=True)  # fmt: skip
    errs = [abs(r["corrected"] - r["truth"]) for r in reps]
    raw = [abs(r["raw"] - r["truth"]) for r in reps]
    summary = {
        "reps": len(reps), "flips": flips, "coverage": sum(r["covered"] for r in reps) / len(reps),
        "mean_abs_error": sum(errs) / len(errs), "max_abs_error": max(errs),
        "within_0.03": sum(e <= 0.03 for e in errs) / len(errs),
        "raw_mean_abs_error": sum(raw) / len(raw), "raw_min_abs_error": min(raw),
        "mean_width": sum(r["ci_high"] - r["ci_low"] for r in reps) / len(reps),
    }  # fmt: skip
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "reps": reps}, indent=1))


if __name__ == "__main__":
    main()
