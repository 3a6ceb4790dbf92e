"""The bootstrap's edge cases, pinned: resample counts, sparse metrics, numpy's rounding at
t = 0.5, NaN columns and ties (each test states one rule the figures rely on)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vsb.scores.stats.bootstrap import (
    TIE_TOLERANCE,
    nan_mean,
    percentile_interval,
    resample_counts,
    signed_shares,
    weighted_means,
)

_MESSAGE = "need at least one story and one resample"


@pytest.mark.parametrize(("n", "n_resamples"), [(0, 5), (5, 0), (0, 0), (-1, 3), (3, -1)])
def test_no_story_or_no_resample_raises(n: int, n_resamples: int) -> None:
    with pytest.raises(ValueError, match=f"^{_MESSAGE}$"):
        resample_counts(np.random.default_rng(0), n, n_resamples)


def test_one_story_and_one_resample_are_enough() -> None:
    w = resample_counts(np.random.default_rng(0), 1, 1)
    assert w.shape == (1, 1) and w.dtype == np.float64 and w[0, 0] == 1.0
    w = resample_counts(np.random.default_rng(0), 1, 3)
    assert w.tolist() == [[1.0], [1.0], [1.0]]
    w = resample_counts(np.random.default_rng(0), 4, 1)
    assert w.shape == (1, 4) and w.sum() == 4.0


def test_a_resample_with_exactly_one_draw_of_the_metric_gives_that_value() -> None:
    # story 0 has the metric, story 1 not: drawn once, its value is the resample's mean
    values = np.array([[0.25], [np.nan]])
    weights = np.array([[1.0, 1.0], [0.0, 2.0], [2.0, 0.0], [1.0, 3.0]])
    out = weighted_means(weights, values)
    assert out.shape == (4, 1)
    assert out[0, 0] == 0.25 and out[2, 0] == 0.25 and out[3, 0] == 0.25
    assert np.isnan(out[1, 0])  # no story with the metric was drawn


def test_weighted_means_keep_the_trailing_shape() -> None:
    values = np.arange(12, dtype=np.float64).reshape(3, 2, 2)
    weights = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    out = weighted_means(weights, values)
    assert out.shape == (2, 2, 2)
    assert np.array_equal(out[0], values[0])
    assert np.array_equal(out[1], (values[1] + values[2]) / 2)


def test_nan_mean_ignores_nan_and_gives_nan_without_any_value() -> None:
    x = np.array([[1.0, np.nan, np.nan], [3.0, 4.0, np.nan]])
    out = nan_mean(x, axis=0)
    assert out[0] == 2.0 and out[1] == 4.0 and np.isnan(out[2])


def _lerp_paths_differ(rows: np.ndarray) -> bool:
    """Whether numpy's two interpolation formulas round differently at t = 0.5 somewhere."""
    s = np.sort(rows, axis=0)
    a, b = s[0], s[1]
    return bool(((a + (b - a) * 0.5) != (b - (b - a) * 0.5)).any())


def test_percentiles_round_as_numpy_does_at_exactly_half_way() -> None:
    # three resamples, confidence 0.5: the 25th percentile sits half-way between the two
    # lowest (t = 0.5), where numpy takes b - (b - a) * (1 - t), not a + (b - a) * t
    d = np.random.default_rng(7).random((3, 400)) * np.array([1.0, 1e3, 1e-3, 7.0] * 100)
    assert _lerp_paths_differ(d)  # otherwise this test could not tell the formulas apart
    lo, hi = percentile_interval(d, 0.5)
    ref = np.quantile(d, [0.25, 0.75], axis=0)
    assert np.array_equal(lo, ref[0]) and np.array_equal(hi, ref[1])


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    n=st.integers(1, 12),
    cols=st.integers(1, 4),
    confidence=st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.0, 1.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_percentiles_equal_numpy_quantiles_exactly(
    n: int, cols: int, confidence: float, seed: int
) -> None:
    d = np.random.default_rng(seed).normal(size=(n, cols))
    lo, hi = percentile_interval(d, confidence)
    alpha = (1 - confidence) / 2
    ref = np.quantile(d, [alpha, 1 - alpha], axis=0)
    assert np.array_equal(lo, ref[0]) and np.array_equal(hi, ref[1])


def test_a_column_without_finite_resamples_gives_nan_at_both_ends() -> None:
    d = np.array([[0.1, np.nan, 0.5], [0.2, np.nan, np.nan], [0.4, np.nan, 0.3]])
    lo, hi = percentile_interval(d, 0.5)
    assert lo.dtype == np.float64 and hi.dtype == np.float64
    assert np.isnan(lo[1]) and np.isnan(hi[1])
    assert lo[0] == np.quantile([0.1, 0.2, 0.4], 0.25)
    assert (lo[2], hi[2]) == tuple(np.quantile([0.5, 0.3], [0.25, 0.75]))


def test_percentile_interval_keeps_the_trailing_shape() -> None:
    d = np.random.default_rng(1).random((50, 2, 3))
    lo, hi = percentile_interval(d)  # default: 95 %
    assert lo.shape == (2, 3) and hi.shape == (2, 3)
    alpha = (1 - 0.95) / 2
    ref = np.quantile(d, [alpha, 1 - alpha], axis=0)
    assert np.array_equal(lo, ref[0]) and np.array_equal(hi, ref[1])


def test_differences_within_the_tolerance_are_ties() -> None:
    tol = TIE_TOLERANCE
    dist = np.array([[tol], [-tol], [0.0], [2 * tol], [-2 * tol], [np.nan]])
    pos, tie, neg = signed_shares(dist)
    assert (pos, tie, neg) == (0.2, 0.6, 0.2)


def test_one_finite_resample_gives_shares_and_none_gives_nan() -> None:
    dist = np.array([[np.nan, np.nan, 0.5], [-0.3, np.nan, 0.0]])
    pos, tie, neg = signed_shares(dist)
    assert (pos[0], tie[0], neg[0]) == (0.0, 0.0, 1.0)
    assert np.isnan(pos[1]) and np.isnan(tie[1]) and np.isnan(neg[1])
    assert (pos[2], tie[2], neg[2]) == (0.5, 0.5, 0.0)


def test_float_noise_is_a_tie_and_the_smallest_real_difference_is_not() -> None:
    # pass rates are ratios of counts: two rates over at most 10 000 requirements differ by
    # at least 1e-8 when they differ at all; an exact tie computed two ways differs by noise
    noise = (0.1 + 0.2) - 0.3
    assert noise != 0.0
    smallest = 1 / 9_999 - 1 / 10_000
    pos, tie, neg = signed_shares(np.array([[noise], [-noise], [smallest], [-smallest]]))
    assert (pos, tie, neg) == (0.25, 0.5, 0.25)
