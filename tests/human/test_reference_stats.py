"""The statistics against published reference values, typed in from the papers."""

from __future__ import annotations

import numpy as np
import pytest

from vsb.human.preference import Comparison, bradley_terry, preference_stats, to_rating
from vsb.human.stats import complete_block, icc2, krippendorff_alpha

NAN = np.nan

# Krippendorff, K. (2011). "Computing Krippendorff's Alpha-Reliability". Annenberg School
# for Communication, University of Pennsylvania (departmental paper 43). The reliability
# data matrix of 4 observers (A-D) x 12 units with missing values, used throughout the paper
# (first in the section on nominal data, any number of observers, missing data). The paper
# reports alpha = 0.743 (nominal), 0.815 (ordinal) and 0.849 (interval) for it.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],  # observer A
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],  # observer B
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],  # observer C
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],  # observer D
    ]
)

# Shrout, P. E. & Fleiss, J. L. (1979). "Intraclass correlations: uses in assessing rater
# reliability". Psychological Bulletin 86(2), 420-428. Table 2: six targets rated by four
# judges; Table 4 gives ICC(2,1) = .29 and ICC(2,4) = .62 for these data.
SHROUT_FLEISS_1979 = np.array(
    [
        [9, 2, 5, 8],
        [6, 1, 3, 2],
        [8, 4, 6, 8],
        [7, 1, 2, 6],
        [10, 5, 6, 9],
        [6, 2, 4, 7],
    ],
    dtype=np.float64,
)


@pytest.mark.parametrize(
    ("level", "expected"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_krippendorff_2011_reliability_data(level: str, expected: float) -> None:
    alpha = krippendorff_alpha(KRIPPENDORFF_2011, level)  # type: ignore[arg-type]
    assert alpha is not None
    assert round(alpha, 3) == expected


def test_alpha_undefined_without_pairable_variation() -> None:
    assert krippendorff_alpha(np.array([[1.0, NAN], [NAN, 2.0]]), "interval") is None
    assert krippendorff_alpha(np.array([[3.0, 3.0], [3.0, 3.0]]), "ordinal") is None
    assert krippendorff_alpha(np.array([[1.0, 2.0]]), "nominal") is None  # one rater


def test_shrout_fleiss_1979_icc() -> None:
    icc = icc2(SHROUT_FLEISS_1979)
    assert icc.icc2_1 is not None and icc.icc2_k is not None
    assert round(icc.icc2_1, 2) == 0.29
    assert round(icc.icc2_k, 2) == 0.62
    assert (icc.n_targets, icc.k) == (6, 4)


def test_icc_undefined_for_a_single_target_or_missing_cells() -> None:
    assert icc2(SHROUT_FLEISS_1979[:1]).icc2_1 is None
    holey = SHROUT_FLEISS_1979.copy()
    holey[0, 0] = NAN
    assert icc2(holey).icc2_k is None


def test_complete_block_takes_the_most_cells() -> None:
    rated = {
        ("s1", "c", "m1"): {"r1", "r2", "r3"},
        ("s1", "c", "m2"): {"r1", "r2", "r3"},
        ("s2", "c", "m1"): {"r1", "r2"},
        ("s2", "c", "m2"): {"r1", "r2"},
        ("s3", "c", "m1"): {"r1", "r2", "r4"},
        ("s3", "c", "m2"): {"r3"},
    }
    targets, raters = complete_block(rated)
    assert raters == ["r1", "r2"]  # 5 targets x 2 raters = 10 cells beats 2 x 3 = 6
    assert len(targets) == 5
    assert complete_block({("s", "c", "m"): {"r1"}}) == ([], [])


def test_win_table_counts_ties_on_either_side() -> None:
    # Regression: a tie where the alphabetically first model was shown on the right counted
    # as a win for it (and the tie was subtracted from its wins).
    cmp = [
        Comparison("x", "y", 1.0),  # x wins
        Comparison("y", "x", 0.0),  # x wins
        Comparison("y", "x", 1.0),  # y wins
        Comparison("y", "x", 0.5),  # tie, x on the right
        Comparison("x", "y", 0.5),  # tie, x on the left
    ]
    (table,), _ = preference_stats(cmp, np.random.default_rng(0), 50)
    assert (table.x, table.y) == ("x", "y")
    assert (table.n, table.wins_x, table.wins_y, table.ties) == (5, 2, 1, 2)
    assert table.win_rate_x == pytest.approx(3 / 5)


def test_bradley_terry_recovers_known_strengths() -> None:
    rng = np.random.default_rng(11)
    true = {"a": 1200.0, "b": 1000.0, "c": 800.0}
    names = list(true)
    cmp = []
    for _ in range(3000):
        i, j = rng.choice(3, size=2, replace=False)
        a, b = names[i], names[j]
        p_a = 1.0 / (1.0 + 10 ** ((true[b] - true[a]) / 400.0))
        cmp.append(Comparison(a, b, 1.0 if rng.random() < p_a else 0.0))
    tables, strengths = preference_stats(cmp, np.random.default_rng(1), 200)
    got = {s.model: s for s in strengths}
    assert [s.model for s in strengths] == ["a", "b", "c"]
    for m, r in true.items():
        assert got[m].rating == pytest.approx(r, abs=30.0)
        assert got[m].ci_low is not None and got[m].ci_high is not None
        assert got[m].ci_low <= got[m].rating <= got[m].ci_high
    assert len(tables) == 3


def test_bradley_terry_is_finite_for_an_unbeaten_model() -> None:
    wins = np.array([[0.0, 5.0], [0.0, 0.0]])
    r = to_rating(bradley_terry(wins))
    assert np.isfinite(r).all() and r[0] > r[1]
