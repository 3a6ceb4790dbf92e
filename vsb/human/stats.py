"""Reliability and means of Likert ratings: Krippendorff's alpha (``krippendorff``), the
Shrout & Fleiss (1979) ICC(2,1) and ICC(2,k) from a two-way ANOVA (numpy), the largest
complete raters x targets block for the ICC, and story-clustered bootstrap means.

A *target* is one model's version of one story in one condition; a rater's rating of a
target is the first (non-repeat) likert item they gave it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from vsb.scores.stats.bootstrap import percentile_interval, resample_counts, weighted_means

FloatArray = NDArray[np.float64]
Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval")
Target = tuple[str, str, str]
"""(story_id, condition, model)."""


def krippendorff_alpha(
    data: FloatArray, level: Level, value_domain: Sequence[float] | None = None
) -> float | None:
    """Krippendorff's alpha of a raters x units matrix (NaN = missing) at ``level``
    ("nominal", "ordinal", "interval"; ``value_domain``: the ordered scale, default the
    values present); None when no unit has two values or every pairable
    value is the same (alpha is undefined)."""
    import krippendorff

    if data.ndim != 2 or data.shape[0] < 2:
        return None
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    values = data[:, pairable]
    if not pairable.any() or np.unique(values[~np.isnan(values)]).size < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a = float(
            krippendorff.alpha(
                reliability_data=data,
                level_of_measurement=level,
                value_domain=value_domain,
            )
        )
    return None if np.isnan(a) else a


@dataclass(frozen=True)
class Icc:
    """ICC(2,1) and ICC(2,k): two-way random effects, absolute agreement (Shrout & Fleiss)."""

    icc2_1: float | None
    icc2_k: float | None
    n_targets: int
    k: int


def icc2(y: FloatArray) -> Icc:
    """ICC(2,1) and ICC(2,k) of a complete targets x raters matrix (Shrout & Fleiss 1979,
    Table 1: BMS, JMS, EMS from the two-way ANOVA); None where undefined."""
    n, k = y.shape
    if n < 2 or k < 2 or np.isnan(y).any():
        return Icc(None, None, n, k)
    gm = y.mean()
    ss_rows = k * ((y.mean(axis=1) - gm) ** 2).sum()
    ss_cols = n * ((y.mean(axis=0) - gm) ** 2).sum()
    ss_err = ((y - gm) ** 2).sum() - ss_rows - ss_cols
    bms = ss_rows / (n - 1)
    jms = ss_cols / (k - 1)
    ems = ss_err / ((n - 1) * (k - 1))
    den1 = bms + (k - 1) * ems + k * (jms - ems) / n
    denk = bms + (jms - ems) / n
    one = float((bms - ems) / den1) if den1 > 0 else None
    many = float((bms - ems) / denk) if denk > 0 else None
    return Icc(one, many, n, k)


def complete_block(
    rated: dict[Target, set[str]], min_raters: int = 2, min_targets: int = 2
) -> tuple[list[Target], list[str]]:
    """The largest complete block (targets x raters, every cell rated) whose rater set is
    one a target was actually rated by: most cells, then most raters, then names.
    ([], []) if none has ``min_raters`` raters and ``min_targets`` targets."""
    best: tuple[int, int, tuple[str, ...]] | None = None
    best_targets: list[Target] = []
    for cand in {frozenset(r) for r in rated.values() if len(r) >= min_raters}:
        targets = sorted(t for t, r in rated.items() if cand <= r)
        if len(targets) < min_targets:
            continue
        names = tuple(sorted(cand))
        key = (len(targets) * len(cand), len(cand), names)
        if best is None or key[:2] > best[:2] or (key[:2] == best[:2] and names < best[2]):
            best, best_targets = key, targets
    return (best_targets, list(best[2])) if best else ([], [])


@dataclass(frozen=True)
class MeanCi:
    """A macro-average over stories with its story-clustered percentile bootstrap CI."""

    mean: float
    ci_low: float | None
    ci_high: float | None
    n_stories: int


def clustered_means(
    story_values: FloatArray,
    rng: np.random.Generator,
    n_resamples: int,
    confidence: float = 0.95,
) -> list[MeanCi | None]:
    """Column means of a stories x columns matrix (NaN = the story lacks it), CIs from one
    story-clustered bootstrap shared by all columns; None for a column with no value."""
    n = story_values.shape[0]
    if n == 0:
        return [None] * story_values.shape[1]
    point = weighted_means(np.ones((1, n)), story_values)[0]
    dist = weighted_means(resample_counts(rng, n, n_resamples), story_values)
    low, high = percentile_interval(dist, confidence)
    out: list[MeanCi | None] = []
    for j in range(story_values.shape[1]):
        count = int((~np.isnan(story_values[:, j])).sum())
        if count == 0:
            out.append(None)
            continue
        lo, hi = float(low[j]), float(high[j])
        out.append(
            MeanCi(
                float(point[j]),
                None if np.isnan(lo) else lo,
                None if np.isnan(hi) else hi,
                count,
            )
        )
    return out


def median(values: Sequence[float]) -> float | None:
    """The median (None for no values)."""
    return float(np.median(values)) if len(values) else None
