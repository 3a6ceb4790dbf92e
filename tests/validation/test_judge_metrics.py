"""AUROC and rank correlations against brute-force references."""

from __future__ import annotations

import itertools
import math

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


def test_average_ranks_equal_scipy_rankdata_and_auroc_imports_no_scipy() -> None:
    """Issue #25: ``auroc`` ranked with scipy.stats.rankdata, and importing scipy.stats cost
    about 1.5 s of the main job's validate stage; its own ranks are the same numbers."""
    import subprocess
    import sys

    from scipy.stats import rankdata

    from vsb.validation.metrics import auroc, average_ranks

    rng = np.random.default_rng(25)
    for n in (1, 2, 7, 500):
        x = rng.integers(0, 5, n).astype(np.float64)  # many ties
        assert np.array_equal(average_ranks(x), rankdata(x))
        y = rng.random(n) < 0.4
        if 0 < y.sum() < n:
            ranks = rankdata(x)
            pos = int(y.sum())
            want = (float(ranks[y].sum()) - pos * (pos + 1) / 2.0) / (pos * (n - pos))
            assert auroc(x.tolist(), y.tolist()) == want
    with_nan = auroc([0.1, float("nan"), 0.3], [True, False, False])
    assert with_nan is not None and math.isnan(with_nan)
    code = (
        "import sys; from vsb.validation.metrics import auroc;"
        "assert auroc([0.2, 0.9, 0.4], [False, True, False]) == 1.0;"
        "print('scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
