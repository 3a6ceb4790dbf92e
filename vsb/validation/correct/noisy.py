"""A reference judge of known noise: another judge's answers, flipped at known rates per
answer label (issue 39's tests and ``benchmarks/bench_corrected.py``).

``NoisyJudge(LiteralJudge(), {"YES": 0.15, "NO": 0.10}, seed)`` reads each picture as the
literal judge does (``vsb.validation.reference_judges``: the picture as drawn, the question
as worded; no story, no oracle), then turns a YES into a NO with probability 0.15 and a NO
into a YES with probability 0.10. UNSURE and anything else are passed on unflipped.

Randomness: one ``numpy.random.default_rng(seed)`` draws one number per YES or NO answer,
in the order the answers are given (under a lock), as a judge whose mistakes are not tied
to the picture: two copies of one picture (a simulator's frame and its stored copy) get
independent flips. Asked one call at a time (judge concurrency 1) the flips are
reproducible.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from vsb.validation.sim_judge import Answerer

__all__ = ["NoisyJudge", "true_scores"]


class NoisyJudge:
    """``inner``'s answers, each flipped with ``flips[answer]`` (YES <-> NO)."""

    def __init__(self, inner: Answerer, flips: Mapping[str, float], seed: int) -> None:
        for label, rate in flips.items():
            if label not in ("YES", "NO") or not 0.0 <= rate <= 1.0:
                raise ValueError(f"flip rate {label}={rate}: YES or NO, a rate in [0, 1]")
        self.inner = inner
        self.flips = dict(flips)
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def _noisy(self, answers: list[str]) -> list[str]:
        out = []
        with self._lock:
            for a in answers:
                if a in ("YES", "NO") and self._rng.random() < self.flips.get(a, 0.0):
                    a = "NO" if a == "YES" else "YES"
                out.append(a)
        return out

    def answers(self, image: bytes, questions: list[str]) -> list[str]:
        """The inner judge's answers about one picture, flipped at the set rates."""
        return self._noisy(self.inner.answers(image, questions))

    def pair_answers(self, first: bytes, second: bytes, questions: list[str]) -> list[str]:
        """The inner judge's answers comparing two pictures, flipped at the set rates."""
        return self._noisy(self.inner.pair_answers(first, second, questions))


def true_scores(
    run_dir: Path, evaluator: str, source_run: Path | None = None
) -> dict[tuple[str, str], dict[str, float]]:
    """What a perfect reader of the pictures scores under ``evaluator``'s questions, per
    (model, condition): ``global``, ``adherence``, ``coherence``. The rows of a stored copy
    (``stored:SOURCE``) are read against the oracle of SOURCE's frame (in ``source_run``,
    the run that made them, default ``run_dir``), so a copy of a simulator's frames has a
    known truth though it has no oracle of its own."""
    import copy

    from vsb.scores.compute import load_scoring_input
    from vsb.scores.stats.bootstrap import nan_mean
    from vsb.scores.table import ADHERENCE, COHERENCE, N_DIMS, build_story_table
    from vsb.validation.correct.apply import Oracle, needs_pairs
    from vsb.validation.correct.errors import row_truth

    inp = load_scoring_input(run_dir)
    rows = inp.evaluator_rows(evaluator)
    rows = rows.view([v != "not_applicable" for v in rows.verdict])
    models = {m.removeprefix("stored:") for m in rows.model} | set(rows.model)
    oracle = Oracle.read(source_run or inp.root, models, needs_pairs(rows))
    renamed = copy.copy(rows)
    renamed.model = [m.removeprefix("stored:") for m in rows.model]
    truth = row_truth(renamed, oracle.faults, oracle.pairs)
    if any(t is None for t in truth) or not set(renamed.model) <= oracle.models:
        raise ValueError("every row's truth must be known (a simulator's frame or its copy)")
    read = copy.copy(rows)
    read.passed = [bool(t) for t in truth]
    read.verdict = ["passed" if t else "failed" for t in truth]
    # a perfect reader misses a subject exactly when the oracle left it out
    read.failure = ["" if t else f for t, f in zip(truth, rows.failure, strict=True)]
    table = build_story_table(read, inp.model_order, inp.condition_order)
    point = nan_mean(np.moveaxis(table.values, 2, 0), axis=0)
    out = {}
    for m, model in enumerate(table.models):
        for c, cond in enumerate(table.conditions):
            dims = point[m, c, :N_DIMS]
            out[(model, cond)] = {
                "global": float(np.nanmean(dims)) if (~np.isnan(dims)).any() else float("nan"),
                "adherence": float(point[m, c, ADHERENCE]),
                "coherence": float(point[m, c, COHERENCE]),
            }
    return out
