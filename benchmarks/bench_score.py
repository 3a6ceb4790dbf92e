"""Time ``vsb score``'s statistics for all 30 (model, condition) pairs of the default suite.

A synthetic 5 models × 6 conditions × 40 stories table (causal on 6 stories only, like the
default suite) goes through ``score_table``: 2,000-resample story bootstrap CIs for every
cell and metric, all 135 paired comparisons × 14 metrics, 1,000-draw rank stability per
condition, and the typed report. Measured on the development container (2 CPUs, best of
5 for the parts, one cold call for the total; scipy is never imported):

    bootstrap CIs (30 cells × 14 metrics)           ≈ 0.02 s
    paired comparisons (135 pairs × 14 metrics)     ≈ 0.10 s  (incl. 1,890 pydantic rows)
    rank stability (6 conditions × 1,000 draws)     ≈ 0.004 s
    score_table total (everything, typed report)    ≈ 0.16 s   (target: < 1 s)
    import vsb.scores.compute                       ≈ 0.2 s

Reading a 125k-row requirements.jsonl (the 6,300-image run) adds ≈ 0.6 s.

Run: ``.venv/bin/python benchmarks/bench_score.py``
"""

from __future__ import annotations

import sys
import time

T0 = time.perf_counter()
import numpy as np  # noqa: E402

from vsb.scores.compute import Resampling, all_pairs, compare_cells, score_table  # noqa: E402
from vsb.scores.models import RunIdentity  # noqa: E402

T_IMPORT = time.perf_counter() - T0

from vsb.scores.stats.aggregate import model_estimates  # noqa: E402
from vsb.scores.stats.bootstrap import resample_counts  # noqa: E402
from vsb.scores.stats.rank import rank_stability  # noqa: E402
from vsb.scores.table import BASE_METRICS, N_DIMS, StoryTable  # noqa: E402

MODELS = ("oracle", "drift-low", "drift-mid", "amnesiac", "sloppy")
CONDITIONS = (
    "independent", "previous_text", "structured_memory", "previous_image", "summarized_state",
    "full_context",
)  # fmt: skip


def synthetic_table(seed: int = 0, n_stories: int = 40) -> StoryTable:
    """Random pass rates shaped like the default suite's (causal on 6 stories)."""
    rng = np.random.default_rng(seed)
    shape = (len(MODELS), len(CONDITIONS), n_stories, len(BASE_METRICS))
    values = rng.beta(8, 2, shape)
    values[:, :, 6:, 6] = np.nan  # causal
    return StoryTable(
        models=MODELS,
        conditions=CONDITIONS,
        stories=tuple(f"story-{i:02d}" for i in range(n_stories)),
        values=values,
        n_images=np.full(shape[:3], 5),
        n_requirements=np.full(shape[:3], 100),
    )


def _time(fn: object, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    table = synthetic_table()
    run = RunIdentity(run_dir="bench", release=None, requirements_sha256="0" * 64)
    w = resample_counts(np.random.default_rng(0), 40, 2000)
    pairs = all_pairs(table)
    est = model_estimates(table, w)
    t_ci = _time(lambda: model_estimates(table, w))
    t_cmp = _time(lambda: compare_cells(table, pairs, w))
    t_rank = _time(
        lambda: [
            rank_stability(est.score[:, c, :N_DIMS], np.random.default_rng(c), 1000)
            for c in range(len(CONDITIONS))
        ]
    )
    t0 = time.perf_counter()
    report = score_table(table, run, settings=Resampling(seed=0, n_resamples=2000))
    t_total = time.perf_counter() - t0
    print(f"cells: {len(report.scores)}  comparisons: {len(report.comparisons)} rows")
    print(f"import vsb.scores.compute         {T_IMPORT:.3f} s")
    print(f"bootstrap CIs (30 cells)          {t_ci:.3f} s")
    print(f"paired comparisons ({len(pairs)} pairs)    {t_cmp:.3f} s")
    print(f"rank stability (6 conditions)     {t_rank:.3f} s")
    print(f"score_table total (with pydantic) {t_total:.3f} s")
    print(f"scipy imported: {'scipy' in sys.modules}")


if __name__ == "__main__":
    main()
