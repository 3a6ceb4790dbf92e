"""AUROC and rank correlations against brute-force references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from vsb.validation.metrics import auroc, rank_correlations, wilson_interval


def _brute_auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels], scores[~labels]
    wins = sum((p > n) + 0.5 * (p == n) for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


@pytest.mark.parametrize("seed", range(6))
def test_auroc_equals_pairwise_count_on_tied_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 5, 60).astype(float)  # heavy ties
    labels = rng.random(60) < 0.3
    assert auroc(scores, labels) == pytest.approx(_brute_auroc(scores, labels))


def test_auroc_edge_cases() -> None:
    assert auroc([1.0, 2.0], [True, True]) is None
    assert auroc([1.0, 2.0], [False, False]) is None
    assert auroc([0.0, 1.0], [False, True]) == 1.0
    assert auroc([3.0, 3.0, 3.0], [True, False, False]) == 0.5


def test_rank_correlations() -> None:
    x = [0.1, 0.4, 0.2, 0.9, 0.5]
    y = [1.0, 3.0, 2.0, 5.0, 3.0]
    rho, rho_p, tau, tau_p = rank_correlations(x, y)
    assert rho == pytest.approx(stats.spearmanr(x, y).statistic)
    assert tau == pytest.approx(stats.kendalltau(x, y).statistic)
    assert rho_p is not None and tau_p is not None
    assert rank_correlations([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == (None, None, None, None)
    assert rank_correlations([1.0, 2.0], [1.0, 2.0]) == (None, None, None, None)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (3, 10), (97, 100), (500, 1000), (0, 250)])
def test_wilson_interval_matches_scipy(k: int, n: int) -> None:
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(ref.low, abs=1e-12) and hi == pytest.approx(ref.high, abs=1e-12)


def test_wilson_interval_edges() -> None:
    assert wilson_interval(0, 0) == (None, None)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
