"""Model-level estimates and paired comparisons from a ``StoryTable`` and bootstrap counts.

Metric columns of every result: the ``BASE_METRICS`` followed by ``global`` (the
unweighted mean of the dimensions that have a point estimate). The global score of a
resample is the mean of that resample's dimension means, so its interval is consistent
with the dimension intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vsb.scores.stats.bootstrap import (
    FloatArray,
    nan_mean,
    percentile_interval,
    signed_shares,
    weighted_means,
)
from vsb.scores.table import BASE_METRICS, N_DIMS, StoryTable

#: Every metric column of a result: the base metrics, then global.
ALL_METRICS: tuple[str, ...] = (*BASE_METRICS, "global")
GLOBAL = len(BASE_METRICS)

Cell = tuple[int, int]
"""(model index, condition index) into a StoryTable."""


def _with_global(dims_and_more: FloatArray, available: np.ndarray) -> FloatArray:
    """Append the global column: mean of the available dimension columns (NaN propagates)."""
    dims = dims_and_more[..., :N_DIMS]
    num = np.where(available, dims, 0.0).sum(axis=-1)
    den = available.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(den == 0, np.nan, num / den)
    return np.concatenate([dims_and_more, g[..., None]], axis=-1)


@dataclass(frozen=True)
class Estimates:
    """Model-level results, each ``(models, conditions, len(ALL_METRICS))``."""

    score: FloatArray
    low: FloatArray
    high: FloatArray
    n_stories: np.ndarray


def model_estimates(table: StoryTable, weights: FloatArray, confidence: float = 0.95) -> Estimates:
    """Macro-averages over stories and their bootstrap percentile intervals, all cells at once."""
    vals = np.moveaxis(table.values, 2, 0)  # (stories, models, conditions, base metrics)
    point = nan_mean(vals, axis=0)
    available = ~np.isnan(point[..., :N_DIMS])
    point = _with_global(point, available)
    dist = _with_global(weighted_means(weights, vals), available)
    low, high = percentile_interval(dist, confidence)
    n = (~np.isnan(vals)).sum(axis=0)
    n_global = (~np.isnan(table.story_global())).sum(axis=-1)
    n = np.concatenate([n, n_global[..., None]], axis=-1)
    return Estimates(point, low, high, n)


@dataclass(frozen=True)
class PairResults:
    """Paired comparisons a − b, each ``(pairs, len(ALL_METRICS))``."""

    a_score: FloatArray
    b_score: FloatArray
    diff: FloatArray
    low: FloatArray
    high: FloatArray
    p_greater: FloatArray
    p_equal: FloatArray
    p_less: FloatArray
    win_rate: FloatArray
    n_stories: np.ndarray
    se: FloatArray
    """Bootstrap standard error of the difference (std of the resampled Δ, ddof 1)."""


#: Pairs per block of what ``paired_comparisons`` computes from the resampled differences.
PAIR_CHUNK = 64


def _win_rate(a: FloatArray, b: FloatArray) -> tuple[FloatArray, np.ndarray]:
    """Share of stories (axis 0) where a > b, ties ½, over stories both have."""
    both = ~(np.isnan(a) | np.isnan(b))
    with np.errstate(invalid="ignore"):
        score = np.where(both, (a > b) + 0.5 * (a == b), 0.0)
    n = both.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n == 0, np.nan, score.sum(axis=0) / n)
    return rate, n


def paired_comparisons(
    table: StoryTable,
    pairs: Sequence[tuple[Cell, Cell]],
    weights: FloatArray,
    confidence: float = 0.95,
) -> PairResults:
    """Paired story-level bootstrap of a − b for every pair of cells, every metric.

    The resampled differences of all pairs come from one matrix product, as they always
    have (a product over fewer columns may round a last bit differently); what is computed
    from them (the global column, the interval, the shares, the standard error) is taken
    ``PAIR_CHUNK`` pairs at a time, each pair on its own, so the whole release's resamples ×
    pairs × metrics are held once, not in five copies (~150 MB)."""
    if not pairs:
        empty = np.zeros((0, len(ALL_METRICS)))
        return PairResults(*(empty,) * 9, empty.astype(np.int64), empty)
    ia = tuple(np.array(x) for x in zip(*(a for a, _ in pairs), strict=True))
    ib = tuple(np.array(x) for x in zip(*(b for _, b in pairs), strict=True))
    va = table.values[ia[0], ia[1]]  # (pairs, stories, base metrics)
    vb = table.values[ib[0], ib[1]]
    shared = ~(np.isnan(va) | np.isnan(vb))
    va = np.where(shared, va, np.nan)
    vb = np.where(shared, vb, np.nan)
    d = np.moveaxis(va - vb, 1, 0)  # (stories, pairs, base metrics)
    a_pt = nan_mean(np.moveaxis(va, 1, 0), axis=0)
    b_pt = nan_mean(np.moveaxis(vb, 1, 0), axis=0)
    d_pt = nan_mean(d, axis=0)
    available = ~np.isnan(d_pt[..., :N_DIMS])
    a_pt, b_pt, d_pt = (_with_global(x, available) for x in (a_pt, b_pt, d_pt))
    resampled = weighted_means(weights, d)  # (resamples, pairs, base metrics)
    blocks = []
    for i in range(0, len(pairs), PAIR_CHUNK):
        dist = _with_global(resampled[:, i : i + PAIR_CHUNK], available[i : i + PAIR_CHUNK])
        blocks.append((*percentile_interval(dist, confidence), *signed_shares(dist),
                       bootstrap_se(dist)))  # fmt: skip
    del resampled
    low, high, p_gt, p_eq, p_lt, se = (np.concatenate(x) for x in zip(*blocks, strict=True))
    ga = nan_mean(table.values[ia[0], ia[1], :, :N_DIMS], axis=-1)  # (pairs, stories)
    gb = nan_mean(table.values[ib[0], ib[1], :, :N_DIMS], axis=-1)
    win, n = _win_rate(np.moveaxis(va, 1, 0), np.moveaxis(vb, 1, 0))
    gwin, gn = _win_rate(ga.T, gb.T)
    win = np.concatenate([win, gwin[:, None]], axis=-1)
    n = np.concatenate([n, gn[:, None]], axis=-1)
    return PairResults(a_pt, b_pt, d_pt, low, high, p_gt, p_eq, p_lt, win, n, se)


def bootstrap_se(dist: FloatArray) -> FloatArray:
    """Standard deviation over axis 0 of a bootstrap distribution (ddof 1), ignoring NaN
    resamples; NaN where fewer than two are finite."""
    finite = ~np.isnan(dist)
    n = finite.sum(axis=0)
    x = np.where(finite, dist, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.sum(axis=0) / n
        ss = (np.where(finite, dist - mean, 0.0) ** 2).sum(axis=0)
        out = np.sqrt(ss / (n - 1))
    return np.where(n < 2, np.nan, out)
