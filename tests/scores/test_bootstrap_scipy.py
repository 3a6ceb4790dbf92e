"""The count-weight bootstrap reproduces scipy.stats.bootstrap (percentile, vectorised)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vsb.scores.stats.aggregate import GLOBAL, model_estimates, paired_comparisons
from vsb.scores.stats.bootstrap import (
    percentile_interval,
    resample_counts,
    share_positive,
    weighted_means,
)
from vsb.scores.table import BASE_METRICS, N_DIMS, StoryTable


def _scipy_ci(data: tuple[np.ndarray, ...], statistic, seed: int, n: int, paired: bool = False):
    res = stats.bootstrap(
        data,
        statistic,
        n_resamples=n,
        method="percentile",
        vectorized=True,
        paired=paired,
        rng=np.random.default_rng(seed),
    )
    return res.confidence_interval.low, res.confidence_interval.high


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


@pytest.mark.parametrize(("seed", "n_stories"), [(0, 40), (7, 13), (123, 5)])
def test_mean_ci_equals_scipy(seed: int, n_stories: int) -> None:
    x = np.random.default_rng(seed + 1).random(n_stories)
    w = resample_counts(np.random.default_rng(seed), n_stories, 2000)
    lo, hi = percentile_interval(weighted_means(w, x[:, None]))
    s_lo, s_hi = _scipy_ci((x,), _mean, seed, 2000)
    assert lo[0] == pytest.approx(s_lo, rel=1e-12)
    assert hi[0] == pytest.approx(s_hi, rel=1e-12)


def test_ratio_ci_with_missing_stories_equals_scipy_paired() -> None:
    """Stories without the metric are excluded through the weights: the ratio estimator."""
    rng = np.random.default_rng(3)
    x = rng.random(40)
    present = np.ones(40, dtype=bool)
    present[::4] = False
    w = resample_counts(np.random.default_rng(11), 40, 2000)
    lo, hi = percentile_interval(weighted_means(w, np.where(present, x, np.nan)[:, None]))

    def ratio(v: np.ndarray, m: np.ndarray, axis: int = -1) -> np.ndarray:
        return (v * m).sum(axis=axis) / m.sum(axis=axis)

    s_lo, s_hi = _scipy_ci((np.where(present, x, 0.0), present * 1.0), ratio, 11, 2000, True)
    assert lo[0] == pytest.approx(s_lo, rel=1e-12)
    assert hi[0] == pytest.approx(s_hi, rel=1e-12)


def _table(values: np.ndarray) -> StoryTable:
    m, c, s, _ = values.shape
    return StoryTable(
        models=tuple(f"m{i}" for i in range(m)),
        conditions=tuple(f"c{i}" for i in range(c)),
        stories=tuple(f"s{i}" for i in range(s)),
        values=values,
        n_images=np.ones((m, c, s), dtype=np.int64),
        n_requirements=np.ones((m, c, s), dtype=np.int64),
    )


def test_model_estimates_every_cell_equals_scipy() -> None:
    rng = np.random.default_rng(5)
    vals = rng.random((2, 3, 40, len(BASE_METRICS)))
    table = _table(vals)
    w = resample_counts(np.random.default_rng(9), 40, 2000)
    est = model_estimates(table, w)
    for m, c, j in [(0, 0, 0), (1, 2, 5), (0, 1, N_DIMS + 1)]:
        s_lo, s_hi = _scipy_ci((vals[m, c, :, j],), _mean, 9, 2000)
        assert est.low[m, c, j] == pytest.approx(s_lo, rel=1e-12)
        assert est.high[m, c, j] == pytest.approx(s_hi, rel=1e-12)
        assert est.score[m, c, j] == pytest.approx(vals[m, c, :, j].mean())
    # global: mean of the ten dimension means, its CI from the same resamples
    g = vals[1, 1, :, :N_DIMS].mean(axis=1)
    s_lo, s_hi = _scipy_ci((g,), _mean, 9, 2000)
    assert est.score[1, 1, GLOBAL] == pytest.approx(g.mean())
    assert est.low[1, 1, GLOBAL] == pytest.approx(s_lo, rel=1e-12)
    assert est.high[1, 1, GLOBAL] == pytest.approx(s_hi, rel=1e-12)
    assert (est.n_stories == 40).all()


def test_paired_difference_equals_scipy_paired() -> None:
    rng = np.random.default_rng(8)
    vals = rng.random((2, 1, 40, len(BASE_METRICS)))
    vals[1] = np.clip(vals[0] - 0.1 + 0.2 * rng.random((1, 40, len(BASE_METRICS))), 0, 1)
    table = _table(vals)
    w = resample_counts(np.random.default_rng(21), 40, 2000)
    res = paired_comparisons(table, [((0, 0), (1, 0))], w)
    a, b = vals[0, 0, :, 3], vals[1, 0, :, 3]

    def diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(x - y, axis=axis)

    s_lo, s_hi = _scipy_ci((a, b), diff, 21, 2000, paired=True)
    assert res.diff[0, 3] == pytest.approx((a - b).mean())
    assert res.low[0, 3] == pytest.approx(s_lo, rel=1e-12)
    assert res.high[0, 3] == pytest.approx(s_hi, rel=1e-12)
    dist = weighted_means(w, (a - b)[:, None])[:, 0]
    assert res.p_greater[0, 3] == pytest.approx((dist > 0).mean())
    assert res.win_rate[0, 3] == pytest.approx(((a > b) + 0.5 * (a == b)).mean())


def test_win_rate_counts_ties_half_and_identical_gives_zero_p() -> None:
    vals = np.zeros((2, 1, 4, len(BASE_METRICS)))
    vals[0, 0, :, 0] = [1.0, 0.5, 0.5, 0.0]
    vals[1, 0, :, 0] = [0.5, 0.5, 0.5, 0.5]
    table = _table(vals)
    w = resample_counts(np.random.default_rng(0), 4, 200)
    res = paired_comparisons(table, [((0, 0), (1, 0))], w)
    assert res.win_rate[0, 0] == pytest.approx((1 + 0.5 + 0.5 + 0) / 4)
    assert res.diff[0, 1] == 0.0 and res.p_greater[0, 1] == 0.0
    assert res.n_stories[0, 0] == 4


def test_resample_without_the_metric_is_dropped() -> None:
    dist = np.array([[0.1], [np.nan], [0.3], [0.2]])
    lo, hi = percentile_interval(dist, 0.5)
    assert lo[0] == pytest.approx(np.quantile([0.1, 0.3, 0.2], 0.25))
    assert hi[0] == pytest.approx(np.quantile([0.1, 0.3, 0.2], 0.75))
    assert share_positive(np.array([[np.nan], [1.0], [-1.0]]))[0] == 0.5
    lo, _ = percentile_interval(np.full((3, 1), np.nan))
    assert np.isnan(lo[0])


def test_resample_counts_match_index_draws() -> None:
    w = resample_counts(np.random.default_rng(4), 6, 50)
    idx = np.random.default_rng(4).integers(0, 6, (50, 6))
    assert w.shape == (50, 6) and (w.sum(axis=1) == 6).all()
    for r in range(50):
        assert (w[r] == np.bincount(idx[r], minlength=6)).all()


@pytest.mark.parametrize("n", [1, 2, 7, 2000])
def test_fast_quantiles_equal_numpy(n: int) -> None:
    d = np.random.default_rng(n).random((n, 9))
    d[:, 3] = 0.5  # constant column
    lo, hi = percentile_interval(d, 0.9)
    alpha = (1 - 0.9) / 2
    ref = np.quantile(d, [alpha, 1 - alpha], axis=0)
    assert np.array_equal(lo, ref[0]) and np.array_equal(hi, ref[1])
