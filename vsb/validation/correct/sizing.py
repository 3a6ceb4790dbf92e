"""How many verified items a model needs (``vsb human verify --dry-run``, issue 46).

The corrected global score of a cell is linear in the shares ``q_h`` of facts that hold per
stratum (``vsb.validation.correct.measured``): ``G = Σ_h c_h q_h``, with ``c_h`` the
stratum's weight in the cell's macro-average (its share of each story's checks, averaged
over the stories and the dimensions). With ``m`` items allocated in proportion to the
strata's rows ``N_h`` (of ``N``), ``Var(G) ≈ (N / m) Σ_h c_h² q_h (1 − q_h) / N_h``, so a
half-width ``w`` at 95 % needs ``m = 1.96² N Σ_h c_h² q_h (1 − q_h) / N_h / w²`` items; the
figure is the largest over the model's cells. ``q_h`` is planned from the model's verified
answers when it has some (a pilot), else from the judge's error on the simulator frames and
the model's own verdicts (the assumption: a judge that errs more on the model's frames
needs more items than planned, so a pilot of a hundred items is the safer plan). What the
items cannot narrow, the sampling of stories, is given beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vsb.scores.stats.bootstrap import FloatArray, Resampling, percentile_interval
from vsb.scores.table import N_DIMS
from vsb.validation.correct.estimate import GLOBAL
from vsb.validation.correct.measured import ModelError, measured_estimate, outcome_counts
from vsb.validation.correct.verified import OUTCOMES

Z95 = 1.959963984540054


@dataclass(frozen=True)
class SampleSize:
    """What ``vsb human verify --dry-run`` says."""

    model: str
    items: int
    """Items for the half-width (at most every judged single-frame row)."""
    rows: int
    """The model's judged single-frame rows (the most a sample can hold)."""
    half_width: float
    planned_from: str
    story_half_width: float | None
    """Half-width from the sampling of stories alone (what no number of items narrows)."""
    cell: str
    """The (condition) whose global needs the most items."""


def _planned_q(cor: object, m: int, counts: FloatArray) -> FloatArray:
    """``(labels, outcomes)`` shares planned from the simulator-measured error and the
    model's verdicts: per label its prevalence by Rogan–Gladen, then Bayes' rule."""
    p = cor.corrector.point  # type: ignore[attr-defined]
    n = counts.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        obs = counts[:, 0] / n
        prev = np.clip((obs + p.sp - 1.0) / p.youden, 0.02, 0.98)
        se, sp = p.se, p.sp
        q_pass = prev * se / (prev * se + (1 - prev) * (1 - sp))
        q_fail = prev * (1 - se) / (prev * (1 - se) + (1 - prev) * sp)
    q = np.stack([q_pass] + [q_fail] * (len(OUTCOMES) - 1), axis=-1)
    return np.where(np.isfinite(q), q, 0.5)


def sample_size(
    run_dir: str | Path, model: str, half_width: float = 0.03, evaluator: str | None = None,
    settings: Resampling = Resampling(n_resamples=500),
) -> SampleSize:  # fmt: skip
    """The items ``model`` needs for a corrected global within ``half_width`` (95 %)."""
    from vsb.scores.compute import load_scoring_input
    from vsb.validation.correct.apply import Oracle, corrector_for, needs_pairs
    from vsb.validation.correct.verified import judged_evaluator, population

    inp = load_scoring_input(run_dir)
    label = judged_evaluator(inp, evaluator)
    rows = inp.evaluator_rows(label)
    oracle = Oracle.read(inp.root, set(inp.rows.model), needs_pairs(rows))
    cor = corrector_for(inp, label, oracle, settings)
    m = cor.models.index(model)
    rows = rows.view([v != "not_applicable" for v in rows.verdict])
    counts = cor.outcomes if cor.outcomes is not None else outcome_counts(
        rows, cor.models, cor.conditions, cor.stories, cor.corrector.labels)  # fmt: skip
    labels = cor.corrector.labels
    mine = counts[m, :, :, :N_DIMS].sum(axis=(0, 1, 2))  # (labels, outcomes)
    err = (cor.measured or {}).get(model)
    q = err.q if err is not None else _planned_q(cor, m, mine)
    planned = (f"{err.n_items} verified items" if err is not None
               else "the judge's error on simulator frames (no verified items yet)")  # fmt: skip
    pop = population(rows, model)
    index = {n: i for i, n in enumerate(labels.names)}
    n_h = np.zeros_like(q)
    for key, size in pop.items():
        d, t, o = key.split("|")
        n_h[index[(d, t)], OUTCOMES.index(o)] = size
    total = int(n_h.sum())
    best, worst, story_hw = 0.0, "", None
    for c, cond in enumerate(cor.conditions):
        cell = counts[m, c, :, :N_DIMS]  # (stories, dims, labels, outcomes)
        n = cell.sum(axis=(-1, -2))
        has = n > 0
        if not has.any():
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(has[..., None, None], cell / n[..., None, None], 0.0)
        per_dim = share.sum(axis=0) / np.maximum(has.sum(axis=0), 1)[:, None, None]
        coef = per_dim[has.any(axis=0)].mean(axis=0)  # (labels, outcomes)
        with np.errstate(invalid="ignore", divide="ignore"):
            terms = np.where(n_h > 0, coef**2 * q * (1 - q) / n_h, 0.0)
        need = Z95**2 * total * float(terms.sum()) / half_width**2
        if need >= best:
            best, worst = need, cond
            fixed = ModelError(0, q, np.broadcast_to(q, (len(cor.corrector.weights), *q.shape)))
            est = measured_estimate(counts[m, c], fixed, cor.corrector.weights)
            lo, hi = percentile_interval(est.dist, settings.confidence)
            story_hw = float((hi[GLOBAL] - lo[GLOBAL]) / 2)
    return SampleSize(model, min(total, math.ceil(best)), total, half_width, planned,
                      story_hw, worst)  # fmt: skip
