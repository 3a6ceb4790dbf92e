"""How many verified items a model needs (``vsb human verify --dry-run``, issue 46), and
how a sample spreads them over the strata.

The corrected global score of a cell is linear in the shares ``q_h`` of facts that hold per
stratum (``vsb.validation.correct.measured``): ``G = Σ_h c_h q_h``, with ``c_h`` the
stratum's weight in the cell's macro-average (its share of each story's checks, averaged
over the stories and the dimensions: a dimension with few rows weighs as much as one with
many). With ``n_h`` of the stratum's ``N_h`` rows verified, ``Var(G) = Σ_h c_h² S_h² (1/n_h −
1/N_h)``, ``S_h² = q_h (1 − q_h)``.

**Allocation** (``allocation``): ``n_h ∝ c̄_h`` (``c̄``: the weight averaged over the model's
cells), the Neyman allocation (Cochran, *Sampling Techniques*, 3rd ed., §5.5) when every
``S_h`` is the same, as it is in the plan without answers. Proportional allocation (``n_h ∝
N_h``) spends items on large strata of little weight and starves small dimensions.

**Size** (``sample_size``): the least ``m`` whose allocation puts the 95 % half-width of every
cell's global within ``w``. ``S_h`` is planned conservatively: before any item is answered
the judge's error on the model's own frames is unknown (the simulator frames measure it on
other pictures, and it may be larger on the model's: issue 46's sloppy copy, planned from the
simulator-measured error, was within 0.03 in 17 of 20 seeds), so every stratum takes the
worst case ``q = 1/2``; with answers (a pilot, imported), the 90th percentile of ``S_h`` over
its posterior draws. What the simulator-measured error would need is given beside it (the
size of a pilot worth answering first), and what the items cannot narrow, the sampling of
stories.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vsb.scores.inputs import NOT_APPLICABLE, RequirementRows
from vsb.scores.stats.bootstrap import FloatArray, Resampling, percentile_interval
from vsb.scores.table import N_DIMS
from vsb.validation.correct.errors import Labels
from vsb.validation.correct.estimate import GLOBAL
from vsb.validation.correct.measured import ModelError, measured_estimate, outcome_counts
from vsb.validation.correct.verified import OUTCOMES, population, stratum_key

Z95 = 1.959963984540054
#: Quantile of a stratum's posterior ``S_h`` planned with (after a pilot).
PLAN_QUANTILE = 0.9


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
    verified: int = 0
    """Items of the model answered already."""
    if_assumed: int | None = None
    """Items if the judge erred on the model's frames as on simulator frames (no answers)."""


def cell_weights(counts: FloatArray) -> FloatArray:
    """``(conditions, labels, outcomes)`` weights ``c_h`` of each stratum's share in each
    cell's global score from one model's ``(conditions, stories, N_BASE, labels, outcomes)``
    counts (0 in a cell without data)."""
    out = np.zeros((counts.shape[0], *counts.shape[-2:]))
    for c in range(counts.shape[0]):
        cell = counts[c, :, :N_DIMS]  # (stories, dims, labels, outcomes)
        n = cell.sum(axis=(-1, -2))
        has = n > 0
        if not has.any():
            continue
        share = np.where(has[..., None, None], cell / np.where(has, n, 1.0)[..., None, None], 0.0)
        per_dim = share.sum(axis=0) / np.maximum(has.sum(axis=0), 1)[:, None, None]
        out[c] = per_dim[has.any(axis=0)].mean(axis=0)
    return out


def _mean_weights(coef: FloatArray) -> FloatArray:
    """``c̄``: the weights averaged over the cells with data."""
    live = coef.reshape(len(coef), -1).sum(axis=1) > 0
    return coef[live].mean(axis=0) if live.any() else np.zeros(coef.shape[1:])


def allocation(rows: RequirementRows, model: str) -> dict[str, float]:
    """Per stratum key of ``model``'s judged single-frame rows: its allocation weight ``c̄_h``
    (``rows``: one evaluator's)."""
    rows = rows.view([m == model and v != NOT_APPLICABLE
                      for m, v in zip(rows.model, rows.verdict, strict=True)])  # fmt: skip
    labels = Labels.of(rows)
    conditions, stories = sorted(set(rows.condition)), sorted(set(rows.story_id))
    counts = outcome_counts(rows, [model], conditions, stories, labels)[0]
    mean = _mean_weights(cell_weights(counts))
    keys = population(rows, model)
    out = {}
    for k, (d, t) in enumerate(labels.names):
        for o, outcome in enumerate(OUTCOMES):
            key = stratum_key(d, t, outcome)
            if key in keys:
                out[key] = float(mean[k, o])
    return out


def allocate(sizes: FloatArray, n: int, weights: FloatArray | None = None) -> np.ndarray:
    """``n`` items over strata of ``sizes`` rows, in proportion to ``weights`` (default: the
    rows; largest remainders), never more than a stratum holds; what a capped stratum cannot
    take goes to the others by their weights, then by their rows."""
    sizes_a = np.asarray(sizes, dtype=np.float64)
    w = sizes_a if weights is None else np.asarray(weights, dtype=np.float64)
    n = int(min(n, sizes_a.sum()))
    out = np.zeros(len(sizes_a), dtype=np.int64)
    while out.sum() < n:
        room = sizes_a - out
        ww = np.where(room > 0, w, 0.0)
        if not ww.sum() > 0:
            ww = room
        share = (n - out.sum()) * ww / ww.sum()
        add = np.floor(share).astype(np.int64)
        if add.sum() == 0:
            add[np.argsort(-(share - add), kind="stable")[: n - out.sum()]] = 1
        out += np.minimum(add, room.astype(np.int64))
    return out


def _half_width(coef: FloatArray, s: FloatArray, n_h: FloatArray, got: np.ndarray) -> float:
    """The largest 95 % half-width over the cells (``coef``: ``(cells, strata)``) with ``got``
    items per stratum; a stratum with rows and no item counts as one item (it borrows its
    parent's share)."""
    live = n_h > 0
    n = np.maximum(got, 1).astype(np.float64)
    fpc = np.where(live, 1.0 / n - 1.0 / np.where(live, n_h, 1.0), 0.0)
    var = (coef**2 * s**2 * np.maximum(fpc, 0.0)).sum(axis=-1)
    return float(Z95 * math.sqrt(float(var.max()))) if len(var) else 0.0


def items_for(coef: FloatArray, s: FloatArray, n_h: FloatArray, weights: FloatArray,
              half_width: float) -> tuple[int, int]:  # fmt: skip
    """The least items whose ``allocate`` (by ``weights``) keeps every cell's global within
    ``half_width``, and the cell that needs the most (flat strata axes)."""
    total = int(n_h.sum())
    lo, hi = 0, total
    while lo < hi:
        mid = (lo + hi) // 2
        if _half_width(coef, s, n_h, allocate(n_h, mid, weights)) <= half_width:
            hi = mid
        else:
            lo = mid + 1
    got = allocate(n_h, lo, weights)
    live = n_h > 0
    fpc = np.where(live, 1.0 / np.maximum(got, 1) - 1.0 / np.where(live, n_h, 1.0), 0.0)
    per_cell = (coef**2 * s**2 * np.maximum(fpc, 0.0)).sum(axis=-1)
    return lo, int(np.argmax(per_cell)) if len(per_cell) else 0


def _planned_q(cor: object, counts: FloatArray) -> FloatArray:
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
    from vsb.validation.correct.verified import judged_evaluator

    inp = load_scoring_input(run_dir)
    label = judged_evaluator(inp, evaluator)
    rows = inp.evaluator_rows(label)
    oracle = Oracle.read(inp.root, set(inp.rows.model), needs_pairs(rows))
    cor = corrector_for(inp, label, oracle, settings)
    m = cor.models.index(model)
    rows = rows.view([v != NOT_APPLICABLE for v in rows.verdict])
    counts = cor.outcomes if cor.outcomes is not None else outcome_counts(
        rows, cor.models, cor.conditions, cor.stories, cor.corrector.labels)  # fmt: skip
    labels = cor.corrector.labels
    index = {n: i for i, n in enumerate(labels.names)}
    n_h = np.zeros((len(labels.names), len(OUTCOMES)))
    w_h = np.zeros_like(n_h)
    pop, weights = population(rows, model), allocation(rows, model)
    for key, size in pop.items():
        d, t, o = key.split("|")
        n_h[index[(d, t)], OUTCOMES.index(o)] = size
        w_h[index[(d, t)], OUTCOMES.index(o)] = weights.get(key, 0.0)
    coef = cell_weights(counts[m])
    flat = coef.reshape(len(coef), -1)
    q_assumed = _planned_q(cor, counts[m, :, :, :N_DIMS].sum(axis=(0, 1, 2)))
    err = (cor.measured or {}).get(model)
    if err is None:
        s = np.full(n_h.size, 0.5)
        q = q_assumed
        planned = "the worst case, q = 1/2 in every stratum (no verified items yet)"
    else:
        s = np.quantile(np.sqrt(err.draws * (1 - err.draws)), PLAN_QUANTILE, axis=0).ravel()
        q = err.q
        planned = f"{err.n_items} verified items"
    items, worst = items_for(flat, s, n_h.ravel(), w_h.ravel(), half_width)
    assumed = None
    if err is None:
        s_a = np.sqrt(q_assumed * (1 - q_assumed)).ravel()
        assumed = items_for(flat, s_a, n_h.ravel(), w_h.ravel(), half_width)[0]
    fixed = ModelError(0, q, np.broadcast_to(q, (len(cor.corrector.weights), *q.shape)))
    est = measured_estimate(counts[m, worst], fixed, cor.corrector.weights)
    lo, hi = percentile_interval(est.dist, settings.confidence)
    story_hw = float((hi[GLOBAL] - lo[GLOBAL]) / 2)
    return SampleSize(model, items, int(n_h.sum()), half_width, planned, story_hw,
                      cor.conditions[worst], 0 if err is None else err.n_items,
                      assumed)  # fmt: skip
