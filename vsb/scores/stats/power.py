"""Honest ranks and statistical power, from the same story bootstrap as every CI.

* **Rank ranges.** Each bootstrap resample ranks the models of a condition by their
  resampled global score (1 = best, ties share the best rank); a model's rank range is the
  central ``confidence`` interval of its ranks over resamples, with the lower bound rounded
  down and the upper rounded up (so "2–3" means the data cannot tell whether it is second or
  third).
* **Minimum detectable difference (MDD).** For a paired comparison with bootstrap standard
  error ``se`` (the standard deviation of the resampled Δ), the smallest true difference a
  two-sided test at level ``1 − confidence`` detects with probability ``power`` is
  ``(z_{1−α/2} + z_{power}) · se`` (normal approximation). Since ``se`` shrinks as
  ``1/√n`` with the number of stories ``n``, detecting an observed ``|Δ|`` at that power
  needs about ``n · (MDD / |Δ|)²`` stories.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from vsb.scores.stats.aggregate import GLOBAL, _with_global
from vsb.scores.stats.bootstrap import FloatArray, nan_mean, weighted_means
from vsb.scores.stats.rank import competition_ranks
from vsb.scores.table import N_DIMS, StoryTable

#: Power of the minimum detectable difference.
POWER = 0.8


def mdd_factor(confidence: float = 0.95, power: float = POWER) -> float:
    """``z_{1−α/2} + z_{power}`` with ``α = 1 − confidence`` (2.80 at 95 % and 80 %)."""
    z = NormalDist().inv_cdf
    return z(1.0 - (1.0 - confidence) / 2.0) + z(power)


def min_detectable(
    se: float | None, confidence: float = 0.95, power: float = POWER
) -> float | None:
    """The minimum detectable difference for a bootstrap standard error (None: no SE)."""
    if se is None or math.isnan(se):
        return None
    return mdd_factor(confidence, power) * se


def stories_needed(diff: float, mdd: float | None, n_stories: int) -> int | None:
    """Stories needed to detect ``|diff|`` at the MDD's power (None: Δ = 0 or no MDD)."""
    if mdd is None or n_stories < 1 or abs(diff) <= 1e-12:
        return None
    return max(1, math.ceil(n_stories * (mdd / abs(diff)) ** 2))


def global_distribution(table: StoryTable, weights: FloatArray) -> FloatArray:
    """``(resamples, models, conditions)``: the resampled global score of every cell (NaN
    where a cell has no data in a resample)."""
    vals = np.moveaxis(table.values, 2, 0)  # (stories, models, conditions, base metrics)
    point = nan_mean(vals, axis=0)
    available = ~np.isnan(point[..., :N_DIMS])
    dist = _with_global(weighted_means(weights, vals), available)
    return dist[..., GLOBAL]


def rank_ranges(
    table: StoryTable, weights: FloatArray, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``, each ``(models, conditions)`` integer ranks (0 where the model has
    no row in that condition): the central ``confidence`` interval of each model's rank
    among the models of its condition over bootstrap resamples."""
    dist = global_distribution(table, weights)
    n_m, n_c = len(table.models), len(table.conditions)
    low = np.zeros((n_m, n_c), dtype=np.int64)
    high = np.zeros((n_m, n_c), dtype=np.int64)
    alpha = (1.0 - confidence) / 2.0
    for c in range(n_c):
        ms = [m for m in range(n_m) if table.has_row(m, c)]
        if not ms:
            continue
        scores = np.where(np.isnan(dist[:, ms, c]), -np.inf, dist[:, ms, c])
        ranks = competition_ranks(scores).astype(np.float64)  # (resamples, models)
        lo = np.floor(np.quantile(ranks, alpha, axis=0, method="lower"))
        hi = np.ceil(np.quantile(ranks, 1.0 - alpha, axis=0, method="higher"))
        low[ms, c] = lo.astype(np.int64)
        high[ms, c] = hi.astype(np.int64)
    return low, high
