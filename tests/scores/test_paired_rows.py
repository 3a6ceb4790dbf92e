"""The paired-difference rows (comparisons, effects, prompt sensitivity) share one set of
fields, ``PairedDiff``, behind their own key. Their CSV columns follow the model's field order:
the key first, then the difference, then what the row adds."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from vsb.scores.analysis import EFFECT_HEADER, Effect
from vsb.scores.models import Comparison, PairedDiff
from vsb.scores.sensitivity import SENSITIVITY_HEADER, SensitivityRow

DIFF = (
    "metric_kind", "metric", "a_score", "b_score", "diff", "ci_low", "ci_high", "p_greater",
)  # fmt: skip


@pytest.mark.parametrize(
    ("model", "key", "tail"),
    [
        (
            Comparison,
            ("evaluator", "kind", "a_model", "a_condition", "b_model", "b_condition"),
            ("p_equal", "p_less", "win_rate", "n_stories", "se", "mdd", "stories_needed"),
        ),
        (
            Effect,
            ("evaluator", "model", "effect", "condition_a", "condition_b"),
            ("p_less", "n_stories"),
        ),
        (SensitivityRow, ("evaluator", "model", "condition"), ("p_less", "n_stories")),
    ],
)
def test_key_columns_come_first_then_the_difference(
    model: type[BaseModel], key: tuple[str, ...], tail: tuple[str, ...]
) -> None:
    assert issubclass(model, PairedDiff)
    assert tuple(model.model_fields) == (*key, *DIFF, *tail)


def test_the_written_headers_follow_the_models() -> None:
    assert EFFECT_HEADER[:5] == ("evaluator", "model", "effect", "condition_a", "condition_b")
    assert SENSITIVITY_HEADER[3 : 3 + len(DIFF)] == DIFF


def test_rows_stay_strict_and_frozen() -> None:
    row = SensitivityRow(
        evaluator="rules", model="m", condition="c", metric_kind="summary", metric="global",
        a_score=0.5, b_score=0.25, diff=0.25, ci_low=0.1, ci_high=0.4, p_greater=1.0,
        p_less=0.0, n_stories=3,
    )  # fmt: skip
    with pytest.raises(ValidationError):
        SensitivityRow(**row.model_dump(), extra_field=1)
    with pytest.raises(ValidationError):
        row.diff = 0.0  # type: ignore[misc]
