"""``RankCorrelation.between``: the story-level Spearman and Kendall rows of validation (against
the oracle and against humans) are built by one method, the key's columns first."""

from __future__ import annotations

import pytest

from vsb.validation.humans import HumanSignalCorrelation
from vsb.validation.models import RankCorrelation, SignalCorrelation


def test_between_fills_the_statistics_and_the_key() -> None:
    row = SignalCorrelation.between([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0],
                                    evaluator="rules", signal="clip")  # fmt: skip
    assert (row.evaluator, row.signal, row.n_units) == ("rules", "clip", 4)
    assert row.spearman == pytest.approx(1.0)
    assert row.kendall == pytest.approx(1.0)
    assert row.spearman_p is not None and row.kendall_p is not None


def test_reversed_order_gives_minus_one() -> None:
    row = HumanSignalCorrelation.between(
        [1.0, 2.0, 3.0], [3.0, 2.0, 1.0], evaluator="vlm", signal="global", dimension="overall"
    )
    assert row.spearman == pytest.approx(-1.0)
    assert row.kendall == pytest.approx(-1.0)


@pytest.mark.parametrize(("x", "y"), [([1.0, 2.0], [2.0, 1.0]), ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])])
def test_too_few_or_constant_gives_nulls(x: list[float], y: list[float]) -> None:
    row = SignalCorrelation.between(x, y, evaluator="rules", signal="s")
    assert (row.spearman, row.spearman_p, row.kendall, row.kendall_p) == (None,) * 4
    assert row.n_units == len(x)


def test_key_columns_come_first() -> None:
    stats = list(RankCorrelation.model_fields)
    assert list(SignalCorrelation.model_fields) == ["evaluator", "signal", *stats]
    assert list(HumanSignalCorrelation.model_fields) == [
        "evaluator", "signal", "dimension", *stats,
    ]  # fmt: skip
