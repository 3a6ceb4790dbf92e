"""A reference judge of known noise: another judge's answers, flipped at known rates per
answer label (issue 39's tests and ``benchmarks/bench_corrected.py``).

``NoisyJudge(LiteralJudge(), {"YES": 0.15, "NO": 0.10}, seed)`` reads each picture as the
literal judge does (``vsb.validation.reference_judges``: the picture as drawn, the question
as worded; no story, no oracle), then turns a YES into a NO with probability 0.15 and a NO
into a YES with probability 0.10. UNSURE and anything else are passed on unflipped.

``copy_flips`` sets other rates for pictures that look unlike a simulator's render, as a
VLM tuned on flat renders may err more on a real model's photographs (issue 46): here, a
picture whose PNG carries a ``copy`` text chunk (what the tests and
``scripts/verify_coverage.py`` write into the stored copies they serve as a "real model").
The judge tells them apart by the bytes it is shown, as a VLM tells them by their look.

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
from typing import Any

import numpy as np

from vsb.validation.sim_judge import Answerer

__all__ = ["NoisyJudge", "looks_copied", "true_rows", "true_scores"]


def _check(flips: Mapping[str, float]) -> dict[str, float]:
    for label, rate in flips.items():
        if label not in ("YES", "NO") or not 0.0 <= rate <= 1.0:
            raise ValueError(f"flip rate {label}={rate}: YES or NO, a rate in [0, 1]")
    return dict(flips)


def looks_copied(image: bytes) -> bool:
    """Whether a PNG carries a ``copy`` text chunk (the look of a "real model's" picture)."""
    import io

    from PIL import Image

    try:
        with Image.open(io.BytesIO(image)) as im:
            return "copy" in getattr(im, "text", {})
    except Exception:  # not a PNG: a simulator's look is the default
        return False


class NoisyJudge:
    """``inner``'s answers, each flipped with ``flips[answer]`` (YES <-> NO); on a picture
    that ``looks_copied``, with ``copy_flips[answer]`` when given."""

    def __init__(
        self,
        inner: Answerer,
        flips: Mapping[str, float],
        seed: int,
        copy_flips: Mapping[str, float] | None = None,
    ) -> None:
        self.inner = inner
        self.flips = _check(flips)
        self.copy_flips = None if copy_flips is None else _check(copy_flips)
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def _noisy(self, answers: list[str], *images: bytes) -> list[str]:
        flips = self.flips
        if self.copy_flips is not None and any(looks_copied(x) for x in images):
            flips = self.copy_flips
        out = []
        with self._lock:
            for a in answers:
                if a in ("YES", "NO") and self._rng.random() < flips.get(a, 0.0):
                    a = "NO" if a == "YES" else "YES"
                out.append(a)
        return out

    def answers(self, image: bytes, questions: list[str]) -> list[str]:
        """The inner judge's answers about one picture, flipped at the set rates."""
        return self._noisy(self.inner.answers(image, questions), image)

    def pair_answers(self, first: bytes, second: bytes, questions: list[str]) -> list[str]:
        """The inner judge's answers comparing two pictures, flipped at the set rates."""
        return self._noisy(self.inner.pair_answers(first, second, questions), first, second)


def _truth(run_dir: Path, evaluator: str, source_run: Path | None) -> tuple[Any, list[bool]]:
    """``evaluator``'s applicable rows and whether each fact holds (a stored copy's rows
    read against the oracle of the frame it copies)."""
    import copy

    from vsb.scores.compute import load_scoring_input
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
    return (inp, rows), [bool(t) for t in truth]


def true_rows(
    run_dir: Path, evaluator: str, source_run: Path | None = None
) -> dict[tuple[str, str, str, int, str, str], bool]:
    """Per (model, condition, story, scene, subject, attribute) of ``evaluator``'s rows:
    whether its fact holds in the picture (what a truthful person answers about it)."""
    (_inp, rows), truth = _truth(run_dir, evaluator, source_run)
    keys = zip(rows.model, rows.condition, rows.story_id, rows.scene, rows.subject,
               rows.attribute, strict=True)  # fmt: skip
    return dict(zip(keys, truth, strict=True))


def true_scores(
    run_dir: Path, evaluator: str, source_run: Path | None = None
) -> dict[tuple[str, str], dict[str, float]]:
    """What a perfect reader of the pictures scores under ``evaluator``'s questions, per
    (model, condition): ``global``, ``adherence``, ``coherence`` and each dimension. The
    rows of a stored copy (``stored:SOURCE``) are read against the oracle of SOURCE's frame
    (in ``source_run``, the run that made them, default ``run_dir``), so a copy of a
    simulator's frames has a known truth though it has no oracle of its own."""
    import copy

    from vsb.scores.stats.bootstrap import nan_mean
    from vsb.scores.table import ADHERENCE, COHERENCE, N_DIMS, build_story_table
    from vsb.story.models import DIMENSIONS

    (inp, rows), truth = _truth(run_dir, evaluator, source_run)
    read = copy.copy(rows)
    read.passed = truth
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
            } | {d: float(point[m, c, j]) for j, d in enumerate(DIMENSIONS)}
    return out
