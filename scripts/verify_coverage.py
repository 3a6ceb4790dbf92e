"""Corrected scores from a verification sample of a model's own frames (issue 46): coverage
over judge seeds, with a judge that errs more on "real model" frames than on simulator ones.

The run: ``--stories`` stories of suite seed ``--suite-seed`` under structured_memory, the
five simulators (with their oracle) and ``stored:`` copies of drift-mid and sloppy (their
frames re-encoded with a ``copy`` PNG chunk: other bytes, the same pixels, no oracle), made
once. Per judge seed the literal judge (``LiteralJudge``: it reads the picture and the
question's words) flips YES→NO and NO→YES at ``--sim-flip`` on simulator frames and
``--copy-flip`` on the copies (``NoisyJudge(copy_flips=…)``), through the real pipeline;
then, for each copy:

* **assumed**: ``--corrected`` with no sample (the row's basis and the comparison say so);
* **sample**: ``vsb human verify`` draws ``--items`` items, a truthful person answers them
  (the fact's truth in the picture, ``true_rows``), ``vsb human verify-import`` imports
  them, ``--corrected`` corrects with them; the truth must lie in the interval;
* **dry-run**: ``vsb human verify --dry-run`` sizes a sample for ±``--half-width`` (first
  seed), a sample of that size is drawn and answered the same way; the corrected global
  must be within the half-width of the truth;

and with ``--uniform`` (a judge flipping YES→NO 15 %, NO→YES 10 % on every frame, no
sample) every per-dimension interval of every model is checked: its width and whether it
covers the dimension's truth. Prints one line per seed and a summary (``--out``: JSON).

Run: ``.venv/bin/python scripts/verify_coverage.py [--seeds 20] [--out F]`` (about 10 s a
seed on 2 cores at the defaults). Measured figures are in docs/validation.md.
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

COND = "structured_memory"
SIMS = ("procedural-oracle", "procedural-drift-low", "procedural-drift-mid",
        "procedural-amnesiac", "procedural-sloppy")  # fmt: skip
COPIES = ("stored:procedural-drift-mid", "stored:procedural-sloppy")


def make_run(root: Path, suite_seed: int, n_stories: int | None) -> Path:
    """The simulators and the re-encoded copies of two of them, in one run."""
    stories = generate_suite(suite_seed)
    write_suite(stories[:n_stories] if n_stories else stories, root / "suite", seed=suite_seed)
    common = ["--suite", str(root / "suite"), "--condition", COND, "--cache", str(root / "gen"),
              "--workers", "2"]  # fmt: skip
    assert vsb(["run", *common, "--model", ",".join(SIMS), "--out", str(root / "first")]) == 0
    src, samples = root / "first" / "images", root / "samples"
    for p in src.rglob("*.png"):
        q = samples / p.relative_to(src)
        q.parent.mkdir(parents=True, exist_ok=True)
        info = PngInfo()
        info.add_text("copy", "stored")  # other bytes, same pixels, the look of a "real model"
        Image.open(p).save(q, compress_level=9, pnginfo=info)
    run = root / "run"
    argv = ["run", *common, "--model", ",".join([*SIMS, *COPIES]), "--samples", str(samples),
            "--out", str(run)]  # fmt: skip
    assert vsb(argv) == 0
    return run


def judge(run: Path, inner: Any, flips: dict[str, float], copy: dict[str, float] | None,
          seed: int) -> None:  # fmt: skip
    """``run``'s vlm rows from the noisy judge (in process, one call at a time)."""
    from vsb.evaluators.evaluate import evaluate_run
    from vsb.evaluators.vlm.transports import build_transport
    from vsb.evaluators.vlm_judge import JudgeOptions
    from vsb.validation.correct.noisy import NoisyJudge
    from vsb.validation.sim_judge import JudgeEndpoint

    shutil.rmtree(run / "evaluations", ignore_errors=True)
    shutil.rmtree(run / "verification", ignore_errors=True)
    (run / "ledger.sqlite").unlink(missing_ok=True)
    noisy = NoisyJudge(inner, flips, seed, copy_flips=copy)
    with JudgeEndpoint(noisy) as endpoint, endpoint.client() as client:
        transport = build_transport("openai-compatible:noisy", base_url=endpoint.url, client=client)
        evaluate_run(run, evaluators=["vlm"], judge=transport,
                     judge_options=JudgeOptions(cache_dir=None, concurrency=1))  # fmt: skip


def answer_truthfully(run: Path, model: str, n_items: int, seed: int, work: Path) -> None:
    """Draw a sample of ``model``, answer every item with its truth, import the answers."""
    from vsb.human.verify.answers import import_answers
    from vsb.human.verify.sample import draw_sample
    from vsb.validation.correct.noisy import true_rows

    out = work / f"items-{model.replace(':', '_')}"
    shutil.rmtree(out, ignore_errors=True)
    sample = draw_sample(run, model, n_items, out, seed=seed)
    truth = true_rows(run, "vlm")
    lines = []
    for item in sample.items:
        _scene, subject, attribute = item.req_id.split(".", 2)
        holds = truth[(model, item.condition, item.story_id, item.scene, subject, attribute)]
        answer = item.expect if holds else ("NO" if item.expect == "YES" else "YES")
        lines.append(json.dumps({"item_id": item.item_id, "answer": answer}))
    path = out / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n")
    import_answers(run, [path])


def corrected(run: Path, resamples: int) -> dict[str, Any]:
    """Per model: its corrected row and the truth."""
    from vsb.scores.compute import Resampling, load_scoring_input, score_input
    from vsb.validation.correct.apply import correct_report
    from vsb.validation.correct.noisy import true_scores

    inp = load_scoring_input(run)
    settings = Resampling(seed=0, n_resamples=resamples)
    report, _ = correct_report(inp, score_input(inp, evaluators="vlm", settings=settings), settings)
    truth = true_scores(run, "vlm")
    return {r.model: (r, truth[(r.model, COND)]) for r in report.scores}


def _global(row: Any, truth: dict[str, float]) -> dict[str, Any]:
    g = row.corrected.global_score
    return {"truth": truth["global"], "raw": row.global_score.score, "corrected": g.score,
            "ci_low": g.ci_low, "ci_high": g.ci_high, "basis": row.corrected.basis,
            "test": row.corrected.assumption_test,
            "covered": g.ci_low <= truth["global"] <= g.ci_high}  # fmt: skip


def compare_line(run: Path, a: str, b: str, resamples: int) -> dict[str, Any]:
    from vsb.scores.compute import Resampling
    from vsb.validation.correct.compare import compare_corrected

    rows, notes = compare_corrected(run, a, b, evaluator="vlm",
                                    settings=Resampling(seed=0, n_resamples=resamples))  # fmt: skip
    g = next(r for r in rows if r.metric == "global")
    return {"diff": g.diff, "p_greater": g.p_greater, "notes": notes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20, help="Judge seeds (one repetition each).")
    ap.add_argument("--first-seed", type=int, default=4600)
    ap.add_argument("--suite-seed", type=int, default=5150)
    ap.add_argument("--stories", type=int, default=16)
    ap.add_argument("--sim-flip", type=float, default=0.05)
    ap.add_argument("--copy-flip", type=float, default=0.25)
    ap.add_argument("--items", type=int, default=600)
    ap.add_argument("--half-width", type=float, default=0.03)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--no-uniform", action="store_true", help="Skip the uniform-error check.")
    ap.add_argument("--uniform-only", action="store_true", help="Only the uniform-error check.")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from vsb.validation.correct.sizing import sample_size
    from vsb.validation.reference_judges import LiteralJudge

    inner = LiteralJudge()
    sim = {"YES": args.sim_flip, "NO": args.sim_flip}
    copy = {"YES": args.copy_flip, "NO": args.copy_flip}
    reps: list[dict[str, Any]] = []
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run = make_run(work, args.suite_seed, args.stories)
        if args.uniform_only:
            print(json.dumps(uniform_check(run, inner, args), indent=1))
            return
        for i in range(args.seeds):
            seed = args.first_seed + i
            t0 = time.perf_counter()
            judge(run, inner, sim, copy, seed)
            rep: dict[str, Any] = {"seed": seed}
            got = corrected(run, args.resamples)
            rep["assumed"] = {m: _global(*got[m]) for m in COPIES}
            rep["assumed_compare"] = compare_line(run, COPIES[0], COPIES[1], args.resamples)
            if not sizes:
                for m in COPIES:
                    sizes[m] = sample_size(run, m, args.half_width).items
            for name, n_items in (("sample", {m: args.items for m in COPIES}), ("dry_run", sizes)):
                shutil.rmtree(run / "verification", ignore_errors=True)
                for m in COPIES:
                    answer_truthfully(run, m, n_items[m], seed, work)
                got = corrected(run, args.resamples)
                rep[name] = {m: _global(*got[m]) for m in COPIES}
                if name == "sample":
                    rep["sample_compare"] = compare_line(run, "procedural-drift-mid", COPIES[0],
                                                         args.resamples)  # fmt: skip
            reps.append(rep)
            s = rep["sample"][COPIES[0]]
            print(f"seed {seed}: {COPIES[0]} truth {s['truth']:.3f} assumed "
                  f"{rep['assumed'][COPIES[0]]['corrected']:.3f}; 600 items {s['corrected']:.3f} "
                  f"[{s['ci_low']:.3f}, {s['ci_high']:.3f}] {'in' if s['covered'] else 'OUT'}; "
                  f"{sizes[COPIES[0]]} items off by "
                  f"{abs(rep['dry_run'][COPIES[0]]['corrected'] - s['truth']):.3f} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
        uniform = None if args.no_uniform else uniform_check(run, inner, args)
    summary = summarise(reps, sizes, args.half_width) | {"uniform": uniform}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "reps": reps}, indent=1, default=str))


def uniform_check(run: Path, inner: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Per-dimension intervals of every model under uniform error, no sample."""
    from vsb.story.models import DIMENSIONS

    n = zero = covered = 0
    for i in range(args.seeds):
        judge(run, inner, {"YES": 0.15, "NO": 0.10}, None, args.first_seed + 1000 + i)
        for row, truth in corrected(run, args.resamples).values():
            for d in DIMENSIONS:
                e = row.corrected.dimensions.get(d)
                if e is None or e.score is None:
                    continue
                n += 1
                zero += e.ci_high - e.ci_low <= 0
                covered += e.ci_low <= truth[d] <= e.ci_high
    return {"intervals": n, "zero_width": zero, "covered": covered, "coverage": covered / n}


def summarise(reps: list[dict[str, Any]], sizes: dict[str, int], hw: float) -> dict[str, Any]:
    out: dict[str, Any] = {"seeds": len(reps), "dry_run_items": sizes}
    for m in COPIES:
        a = [r["assumed"][m] for r in reps]
        s = [r["sample"][m] for r in reps]
        d = [r["dry_run"][m] for r in reps]
        out[m] = {
            "truth": a[0]["truth"],
            "assumed_covered": sum(x["covered"] for x in a),
            "assumed_mean": sum(x["corrected"] for x in a) / len(a),
            "assumed_basis": sorted({x["basis"] for x in a}),
            "sample_covered": sum(x["covered"] for x in s),
            "sample_mean_width": sum(x["ci_high"] - x["ci_low"] for x in s) / len(s),
            "sample_max_width": max(x["ci_high"] - x["ci_low"] for x in s),
            "sample_mean_abs_error": sum(abs(x["corrected"] - x["truth"]) for x in s) / len(s),
            "sample_basis": sorted({x["basis"] for x in s}),
            "sample_contradicted": sum(x["test"].startswith("contradicted") for x in s),
            "dry_run_within": sum(abs(x["corrected"] - x["truth"]) <= hw for x in d),
            "dry_run_max_error": max(abs(x["corrected"] - x["truth"]) for x in d),
        }
    out["assumed_compare_p_shown"] = sum(r["assumed_compare"]["p_greater"] is not None
                                         for r in reps)  # fmt: skip
    return out


if __name__ == "__main__":
    main()
