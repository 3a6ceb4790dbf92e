"""The assumed correction's bias on every simulator (issue 46, item 4): pooled specificity
against the correction stratified by the judge's answer.

The run: ``--stories`` stories of suite seed ``--suite-seed`` under ``--conditions``, the
five simulators with their oracle. Per judge seed a literal judge (``--inner drawn``:
``DrawnJudge``, perfect vision, so the flips are its only error; ``literal``:
``LiteralJudge``, whose own reading errs more on some simulators' frames than on others')
flips YES→NO at ``--yes-no`` and NO→YES at ``--no-yes`` on every frame alike (the judge errs
the same everywhere, so a correction by assumption should be unbiased); every simulator's
global is corrected twice from the same verdicts: with one specificity per label over every
false fact (``by_outcome=False``, before issue 46) and stratified by the judge's answer
(YES/NO rows by Rogan–Gladen on the oracle frames' YES/NO rows, the rest by the share of
their facts that hold; ``vsb.validation.correct.estimate.Corrector``). Prints, per
simulator and condition, the mean of corrected − truth over the seeds (its standard
error) for both, and the mean paired difference.

Run: ``.venv/bin/python scripts/assumed_bias.py [--seeds 10] [--out F]``. Measured figures
are in docs/validation.md.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

from vsb.cli.main import main as vsb
from vsb.generator.generate import generate_suite, write_suite

SIMS = ("procedural-oracle", "procedural-drift-low", "procedural-drift-mid",
        "procedural-amnesiac", "procedural-sloppy")  # fmt: skip


def make_run(root: Path, suite_seed: int, n_stories: int, conditions: str) -> Path:
    write_suite(generate_suite(suite_seed)[:n_stories], root / "suite", seed=suite_seed)
    run = root / "run"
    argv = ["run", "--suite", str(root / "suite"), "--condition", conditions, "--cache",
            str(root / "gen"), "--workers", "2", "--model", ",".join(SIMS),
            "--out", str(run)]  # fmt: skip
    assert vsb(argv) == 0
    return run


def judge(run: Path, flips: dict[str, float], seed: int, inner: str) -> None:
    from vsb.evaluators.evaluate import evaluate_run
    from vsb.evaluators.vlm.transports import build_transport
    from vsb.evaluators.vlm_judge import JudgeOptions
    from vsb.validation.correct.noisy import NoisyJudge
    from vsb.validation.reference_judges import DrawnJudge, LiteralJudge
    from vsb.validation.sim_judge import JudgeEndpoint

    shutil.rmtree(run / "evaluations", ignore_errors=True)
    (run / "ledger.sqlite").unlink(missing_ok=True)
    reader = DrawnJudge(run) if inner == "drawn" else LiteralJudge()
    with JudgeEndpoint(NoisyJudge(reader, flips, seed)) as endpoint, endpoint.client() as c:
        transport = build_transport("openai-compatible:noisy", base_url=endpoint.url, client=c)
        evaluate_run(run, evaluators=["vlm"], judge=transport,
                     judge_options=JudgeOptions(cache_dir=None, concurrency=1))  # fmt: skip


def corrected_globals(run: Path, by_outcome: bool) -> dict[tuple[str, str], float]:
    """Per (model, condition): the corrected global's point estimate."""
    from vsb.scores.compute import Resampling, load_scoring_input
    from vsb.validation.correct.apply import Oracle, corrector_for, needs_pairs
    from vsb.validation.correct.estimate import GLOBAL

    inp = load_scoring_input(run)
    rows = inp.evaluator_rows("vlm")
    oracle = Oracle.read(inp.root, set(inp.rows.model), needs_pairs(rows))
    cor = corrector_for(inp, "vlm", oracle, Resampling(seed=0, n_resamples=50),
                        by_outcome=by_outcome)  # fmt: skip
    return {(m, c): float(cor.corrector.estimate(i, j).score[GLOBAL])
            for i, m in enumerate(cor.models) for j, c in enumerate(cor.conditions)}  # fmt: skip


def _mean_se(xs: list[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    var = sum((x - m) ** 2 for x in xs) / max(1, len(xs) - 1)
    return m, math.sqrt(var / len(xs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=4700)
    ap.add_argument("--suite-seed", type=int, default=5150)
    ap.add_argument("--stories", type=int, default=16)
    ap.add_argument("--conditions", default="independent,structured_memory")
    ap.add_argument("--yes-no", type=float, default=0.15)
    ap.add_argument("--no-yes", type=float, default=0.10)
    ap.add_argument("--inner", choices=("drawn", "literal"), default="drawn",
                    help="drawn: perfect vision (only the flips err); literal: "
                    "the extractor.")  # fmt: skip
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from vsb.validation.correct.noisy import true_scores

    flips = {"YES": args.yes_no, "NO": args.no_yes}
    errs: dict[tuple[str, str], dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        run = make_run(Path(tmp), args.suite_seed, args.stories, args.conditions)
        truth: dict[tuple[str, str], float] = {}
        for i in range(args.seeds):
            judge(run, flips, args.first_seed + i, args.inner)
            truth = truth or {k: v["global"] for k, v in true_scores(run, "vlm").items()}
            pooled, split = corrected_globals(run, False), corrected_globals(run, True)
            for key, t in truth.items():
                e = errs.setdefault(key, {"pooled": [], "stratified": [], "paired": []})
                e["pooled"].append(pooled[key] - t)
                e["stratified"].append(split[key] - t)
                e["paired"].append(split[key] - pooled[key])
            print(f"seed {args.first_seed + i} done", flush=True)
    table: list[dict[str, Any]] = []
    print("| simulator | condition | truth | pooled: bias (se) | by answer: bias (se) | "
          "by answer − pooled |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    for (model, cond), e in sorted(errs.items()):
        (pb, ps), (sb, ss), (db, _ds) = (_mean_se(e[k]) for k in ("pooled", "stratified",
                                                                  "paired"))  # fmt: skip
        table.append({"model": model, "condition": cond, "truth": truth[(model, cond)],
                      "pooled": [pb, ps], "stratified": [sb, ss], "paired": db})  # fmt: skip
        print(f"| {model} | {cond} | {truth[(model, cond)]:.3f} | {pb:+.4f} ({ps:.4f}) | "
              f"{sb:+.4f} ({ss:.4f}) | {db:+.4f} |")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)},
                                        "table": table}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
