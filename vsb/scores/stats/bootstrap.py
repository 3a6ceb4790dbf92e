"""Story-clustered percentile bootstrap with count weights (vectorised, no scipy needed).

A resample draws ``n`` stories with replacement; it is represented by how many times each
story was drawn (a ``(n_resamples, n)`` count matrix), so the mean of every metric of every
(model, condition) under every resample is one matrix product. The indices are drawn
exactly as ``scipy.stats.bootstrap`` draws them (``rng.integers(0, n, (n_resamples, n))``
in one batch), so for a fully observed metric the interval equals
``scipy.stats.bootstrap((x,), mean, method="percentile", vectorized=True, rng=rng)``
with a generator in the same state.

Metrics a story does not have (NaN) are left out of that metric's mean through the weights
(a ratio estimator); a resample that holds no story with the metric gives NaN and is left
out of the percentiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vsb.errors import InputError

FloatArray = NDArray[np.float64]

DEFAULT_RESAMPLES = 2000
DEFAULT_DRAWS = 1000


@dataclass(frozen=True)
class Resampling:
    """The settings of a report's story bootstrap (and of its rank-stability draws), passed
    as one value from the CLI through every statistic into the report's own fields."""

    seed: int = 0
    """Seed of the bootstrap (and weight-perturbation) generators."""
    n_resamples: int = DEFAULT_RESAMPLES
    """Bootstrap resamples."""
    confidence: float = 0.95
    """Confidence level of every interval."""
    n_draws: int = DEFAULT_DRAWS
    """Dirichlet weight draws of the rank-stability check (scores only)."""
    alpha: float = 1.0
    """Concentration of those Dirichlet draws (scores only)."""

    def check(self) -> None:
        """``InputError`` for settings that cannot give an interval."""
        if self.n_resamples < 1:
            raise InputError(f"--resamples must be ≥ 1, got {self.n_resamples}")
        if not 0 < self.confidence < 1:
            raise InputError(f"confidence must be in (0, 1), got {self.confidence}")

    def weights(self, n: int) -> FloatArray:
        """The bootstrap counts over ``n`` stories from ``numpy.random.default_rng(seed)``
        (``resample_counts``): the same counts for every statistic of one seed."""
        return resample_counts(np.random.default_rng(self.seed), n, self.n_resamples)

    def report_fields(self) -> dict[str, Any]:
        """``seed``, ``n_resamples`` and ``confidence``: the fields a report records
        (``vsb.scores.models.Resampled``)."""
        return {"seed": self.seed, "n_resamples": self.n_resamples, "confidence": self.confidence}


def resample_counts(rng: np.random.Generator, n: int, n_resamples: int) -> FloatArray:
    """``(n_resamples, n)`` matrix: how often each of ``n`` stories is drawn per resample."""
    if n < 1 or n_resamples < 1:
        raise ValueError("need at least one story and one resample")
    idx = rng.integers(0, n, (n_resamples, n))
    flat = idx + (np.arange(n_resamples) * n)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_resamples * n)
    return counts.reshape(n_resamples, n).astype(np.float64)


def weighted_means(weights: FloatArray, values: FloatArray) -> FloatArray:
    """Mean of each column of ``values`` (``(n, ...)``, NaN = absent) under each weight row.

    Returns ``(n_weights, ...)``; NaN where no story with a value has positive weight.
    """
    flat = values.reshape(values.shape[0], -1)
    mask = ~np.isnan(flat)
    out = weights @ np.where(mask, flat, 0.0)
    # The denominators, a block of columns at a time, each divided in place: never a second
    # resamples-sized array (~70 MB for the main job's paired comparisons). The weights are
    # whole counts, so every denominator is an exact sum whatever the blocks.
    for i in range(0, flat.shape[1], _DEN_BLOCK):
        den = weights @ mask[:, i : i + _DEN_BLOCK].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(out[:, i : i + _DEN_BLOCK], den, out=out[:, i : i + _DEN_BLOCK])
        out[:, i : i + _DEN_BLOCK][den == 0] = np.nan
    return out.reshape((weights.shape[0], *values.shape[1:]))


#: Columns of ``weighted_means``'s denominators computed at a time.
_DEN_BLOCK = 256


def nan_mean(values: FloatArray, axis: int) -> FloatArray:
    """Mean over ``axis`` ignoring NaN; NaN (no warning) where everything is NaN."""
    mask = ~np.isnan(values)
    num = np.where(mask, values, 0.0).sum(axis=axis)
    den = mask.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.where(den == 0, np.nan, out)


def percentile_interval(
    dist: FloatArray, confidence: float = 0.95
) -> tuple[FloatArray, FloatArray]:
    """Percentile interval over axis 0 of a bootstrap distribution, ignoring NaN resamples.

    Uses linear interpolation between order statistics (numpy's and scipy's default).
    Columns without any finite resample give NaN.
    """
    alpha = (1.0 - confidence) / 2.0
    flat = dist.reshape(dist.shape[0], -1)
    low = np.full(flat.shape[1], np.nan)
    high = np.full(flat.shape[1], np.nan)
    finite = ~np.isnan(flat)
    full = finite.all(axis=0)
    if full.any():
        low[full], high[full] = _sorted_quantiles(flat[:, full], (alpha, 1.0 - alpha))
    for j in np.flatnonzero(~full & finite.any(axis=0)):
        col = flat[finite[:, j], j]
        low[j], high[j] = np.quantile(col, [alpha, 1.0 - alpha])
    shape = dist.shape[1:]
    return low.reshape(shape), high.reshape(shape)


def _sorted_quantiles(x: FloatArray, qs: tuple[float, ...]) -> list[FloatArray]:
    """``np.quantile(x, q, axis=0)`` (linear method, same rounding) for each q, computed by
    sorting contiguous rows, which is several times faster than ``np.quantile`` on axis 0."""
    rows = np.ascontiguousarray(x.T)
    rows.sort(axis=1)
    n = rows.shape[1]
    out: list[FloatArray] = []
    for q in qs:
        h = (n - 1) * q
        lo = int(np.floor(h))
        hi = min(lo + 1, n - 1)
        t = h - lo
        a, b = rows[:, lo], rows[:, hi]
        diff = b - a
        out.append(a + diff * t if t < 0.5 else b - diff * (1 - t))
    return out


#: |Δ| at or below this is a tie: pass-rate differences are ratios of small integers, so
#: any real difference is far larger, and float noise of an exact tie far smaller.
TIE_TOLERANCE = 1e-12


def share_positive(dist: FloatArray) -> FloatArray:
    """Share of non-NaN resamples (axis 0) that are > 0 (beyond ``TIE_TOLERANCE``); NaN
    where none is finite."""
    return signed_shares(dist)[0]


def signed_shares(dist: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Shares of non-NaN resamples (axis 0) with Δ > 0, Δ = 0 (|Δ| ≤ ``TIE_TOLERANCE``) and
    Δ < 0; they sum to 1, NaN where no resample is finite."""
    finite = ~np.isnan(dist)
    d = np.where(finite, dist, 0.0)
    n = finite.sum(axis=0)
    pos = (d > TIE_TOLERANCE).sum(axis=0)
    neg = (d < -TIE_TOLERANCE).sum(axis=0)
    out = []
    for k in (pos, n - pos - neg, neg):
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(n == 0, np.nan, k / n))
    return out[0], out[1], out[2]


def nan_to_none(x: float) -> float | None:
    """``x`` as a float, or None for NaN (how an undefined statistic is written to JSON/CSV)."""
    return None if np.isnan(x) else float(x)
