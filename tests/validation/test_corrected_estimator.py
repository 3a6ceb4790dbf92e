"""The corrected-score estimator on known counts (issue 39): Rogan–Gladen per label
recovers exact truths, the validation frames' uncertainty widens the interval, a judge below
the bound is not correctable, and the figures are clipped to [0, 1]."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vsb.validation.correct.errors import Labels
from vsb.validation.correct.estimate import BOUND, CellCounts, Corrector


def _counts(se: float, sp: float, n_true: float, n_false: float) -> np.ndarray:
    """``(1 story, 1 label, 4)`` validation counts with exactly these rates."""
    return np.array([[[n_true, se * n_true, n_false, sp * n_false]]])


class _Rows:
    """The two columns ``Labels.of`` reads."""

    dimension = ("identity",)
    taxonomy = ("identity_drift",)


def test_rogan_gladen_recovers_exact_counts() -> None:
    """Stories whose judged counts are exactly what Se 0.8, Sp 0.9 make of known truths
    are corrected to those truths exactly; a judge at J = 0.1 is not correctable."""
    labels = Labels.of(_Rows())  # type: ignore[arg-type]
    truth = np.array([0.9, 0.5, 1.0, 0.7])
    n = np.array([40.0, 10.0, 25.0, 30.0])
    k = 0.8 * truth * n + 0.1 * (1 - truth) * n
    shape = (1, 1, 4, 13, 1)
    passed, total = np.zeros(shape), np.zeros(shape)
    passed[0, 0, :, 0, 0], total[0, 0, :, 0, 0] = k, n
    weights = np.random.default_rng(5).multinomial(4, [0.25] * 4, size=300).astype(float)
    # the oracle frames of the four stories: rates 0.8 and 0.9 over all, not story by story
    val = np.concatenate([_counts(a, b, 125, 125) for a, b in
                          [(0.7, 0.85), (0.9, 0.95), (0.8, 0.9), (0.8, 0.9)]])  # fmt: skip
    est = Corrector(CellCounts(passed, total), val, labels, weights).estimate(0, 0)
    assert est.score[0] == pytest.approx(truth.mean())
    assert est.reason[0] is None
    # the validation frames' uncertainty widens the interval
    exact = np.repeat(_counts(0.8, 0.9, 500, 500), 4, axis=0) / 4  # no story varies
    sure = Corrector(CellCounts(passed, total), exact, labels, weights).estimate(0, 0)
    assert sure.score[0] == pytest.approx(truth.mean())
    assert np.nanstd(est.dist[:, 0]) > np.nanstd(sure.dist[:, 0])
    weak = np.repeat(_counts(0.55, 0.55, 500, 500), 4, axis=0) / 4
    bad = Corrector(CellCounts(passed, total), weak, labels, weights).estimate(0, 0)
    assert np.isnan(bad.score[0]) and bad.reason[0] is not None and "0.10" in bad.reason[0]


def _one_label(truth: np.ndarray, n: np.ndarray, se: float, sp: float) -> CellCounts:
    shape = (1, 1, len(truth), 13, 1)
    passed, total = np.zeros(shape), np.zeros(shape)
    passed[0, 0, :, 0, 0] = se * truth * n + (1 - sp) * (1 - truth) * n
    total[0, 0, :, 0, 0] = n
    return CellCounts(passed, total)


@settings(max_examples=60, deadline=None)
@given(
    truth=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8),
    se=st.floats(0.5, 1.0),
    sp=st.floats(0.5, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_judge_above_the_bound_is_corrected_exactly(
    truth: list[float], se: float, sp: float, seed: int
) -> None:
    """Whatever the stories' truths and the judge's rates (J ≥ the bound), judged counts that
    are exactly what the judge makes of them are corrected back to the truth; the
    resamples stay in [0, 1]."""
    assume(se + sp - 1 >= BOUND + 1e-9)
    t = np.array(truth)
    n = np.full(len(t), 20.0)
    labels = Labels.of(_Rows())  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(len(t), [1 / len(t)] * len(t), size=50).astype(float)
    val = np.repeat(_counts(se, sp, 400, 400), len(t), axis=0) / len(t)
    est = Corrector(_one_label(t, n, se, sp), val, labels, weights).estimate(0, 0)
    assert est.reason[0] is None
    assert est.score[0] == pytest.approx(t.mean(), abs=1e-9)
    finite = est.dist[:, 0][~np.isnan(est.dist[:, 0])]
    assert finite.size and np.all(finite >= -1e-9) and np.all(finite <= 1 + 1e-9)


def test_by_answer_does_not_mix_how_a_fact_is_false() -> None:
    """Issue 46: a judge that answers UNSURE for a missing subject (never passed) and NO for
    a wrong attribute (passed 10 %): pooled specificity (0.95 on frames half missing, half
    wrong) puts a model whose faults are all wrong attributes 0.012 too high; stratified by
    the judge's answer (Sp 0.9 on the answered rows) it is exact."""
    labels = Labels.of(_Rows())  # type: ignore[arg-type]
    shape = (1, 1, 1, 13, 1)
    passed, total = np.zeros(shape), np.zeros(shape)
    outcomes = np.zeros((*shape, 3))
    outcomes[0, 0, 0, 0, 0] = [720 + 20, 80 + 180, 0]  # 800 true, 200 wrong attributes
    passed[..., 0], total[..., 0] = outcomes[..., 0, 0], outcomes[..., 0, :].sum(axis=-1)
    # oracle frames: 500 true (450 passed), 250 missing (all UNSURE), 250 wrong (25 passed)
    val = np.array([[[500.0, 450.0, 500.0, 475.0]]])
    answered = np.array([[[500.0, 450.0, 250.0, 225.0]]])
    other = np.array([[[250.0, 0.0]]])
    weights = np.ones((50, 1))
    pooled = Corrector(CellCounts(passed, total), val, labels, weights).estimate(0, 0)
    split = Corrector(CellCounts(passed, total), val, labels, weights, outcomes=outcomes,
                      answered=answered, other=other).estimate(0, 0)  # fmt: skip
    assert pooled.score[0] == pytest.approx(0.8 + 0.0118, abs=1e-3)
    assert split.score[0] == pytest.approx(0.8)
    assert np.allclose(split.dist[:, 0], 0.8)
