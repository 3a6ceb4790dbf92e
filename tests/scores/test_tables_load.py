"""``load_tables``: the evaluation tables read column by column, checked on whole columns,
with the first bad row still named by its line (the rules and messages of the row-by-row
reader it replaced)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vsb.errors import InputError
from vsb.scores.inputs import load_requirements, load_signals, load_tables


def _row(k: int, **over: Any) -> dict[str, Any]:
    row = {
        "model": "m", "condition": "c", "story_id": "s", "scene": 1 + k // 3,
        "req_id": f"r{k}", "dimension": "clothing", "source": "memory", "subject": "Ana",
        "attribute": "top", "taxonomy": "clothing_change", "expected": '"red"',
        "observed": '"red"', "passed": True, "failure": "", "verdict": "passed",
        "evaluator": "rules", "judge_model": "",
    }  # fmt: skip
    row.update(over)
    return {k: v for k, v in row.items() if v is not _DROP}


_DROP = object()


def _write(run: Path, rows: list[dict[str, Any]], name: str = "requirements.jsonl") -> Path:
    path = run / "evaluations" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" if r else "\n" for r in rows))
    return path


def test_columns_hold_what_each_row_says(tmp_path: Path) -> None:
    rows = [
        _row(0),
        _row(1, passed=False, verdict="failed", failure="identity_drift", source="prompt"),
        # an older row: no verdict, evaluator, judge model, subject or expected
        _row(
            2,
            passed=False,
            verdict=_DROP,
            evaluator=_DROP,
            judge_model=_DROP,
            subject=_DROP,
            expected=_DROP,
            failure=None,
        ),
        _row(
            3,
            passed=False,
            verdict="not_applicable",
            failure="",
            observed=json.dumps({"reason": "not a render"}),
        ),
        _row(4, passed=False, verdict="unsure", evaluator="vlm", judge_model="j", scene="2"),
    ]
    rows.insert(2, {})  # a blank line is skipped
    _write(tmp_path, rows)
    t = load_tables(tmp_path)
    req = t.requirements
    assert len(req) == 5 and t.root == tmp_path and len(t.signals) == 0
    assert req.verdict == ["passed", "failed", "failed", "not_applicable", "unsure"]
    assert req.passed == [True, False, False, False, False]
    assert req.failure == ["", "identity_drift", "", "", ""]
    assert req.evaluator == ["rules", "rules", "rules", "rules", "vlm"]
    assert req.judge_model == ["", "", "", "", "j"]
    assert req.subject == ["Ana", "Ana", "", "Ana", "Ana"]
    assert req.expected == ['"red"', '"red"', "null", '"red"', '"red"']
    assert req.reason == ["", "", "", "not a render", ""]
    assert req.scene == [1, 1, 1, 2, 2] and all(type(k) is int for k in req.scene)
    assert req.source == ["memory", "prompt", "memory", "memory", "memory"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"dimension": "colour"}, "unknown dimension 'colour'"),
        ({"source": None}, "unknown source None"),
        ({"passed": None}, "'passed' must be true or false"),
        ({"passed": 1}, "'passed' must be true or false"),
        ({"verdict": "maybe", "passed": False}, "unknown verdict 'maybe'"),
        ({"verdict": "failed"}, "'passed' must be true exactly when verdict is 'passed'"),
        ({"model": _DROP, "scene": _DROP}, "missing field(s) model, scene"),
        ({"dimension": ["clothing"]}, "unknown dimension ['clothing']"),
        ({"scene": None}, "'scene' must be a whole number"),
        ({"scene": "two"}, "'scene' must be a whole number"),
    ],
)
def test_the_first_bad_row_is_named_by_its_line(
    tmp_path: Path, bad: dict[str, Any], message: str
) -> None:
    """Two bad rows: the error names the first (line 4: a blank line before it counts)."""
    rows = [_row(0), _row(1), {}, _row(2, **bad), _row(3, dimension="nope"), _row(4, **bad)]
    path = _write(tmp_path, rows)
    with pytest.raises(InputError) as err:
        load_requirements(tmp_path)
    assert err.value.message.startswith(message)
    assert err.value.file == str(path) and err.value.location == "line 4"


def test_a_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, [_row(0), _row(1), {}, _row(0, passed=False, verdict="failed")])
    with pytest.raises(InputError, match="duplicate requirement row") as err:
        load_requirements(tmp_path)
    assert err.value.location == "line 4" and "line 1" in err.value.message
    assert err.value.file == str(path)


def _sig(k: int, **over: Any) -> dict[str, Any]:
    row = {"model": "m", "condition": "c", "story_id": "s", "scene": k, "signal": "clip_score",
           "value": 0.5 + k / 10, "evaluator": "clip"}  # fmt: skip
    row.update(over)
    return {k: v for k, v in row.items() if v is not _DROP}


def test_signals_skip_nulls_and_name_a_bad_value(tmp_path: Path) -> None:
    _write(tmp_path, [_sig(1), _sig(2, value=None), _sig(3, value=2, evaluator=_DROP,
                      signal="pairwise_band")], "signals.jsonl")  # fmt: skip
    sig = load_signals(tmp_path)
    assert sig.scene == [1, 3] and sig.value == [0.6, 2.0] and type(sig.value[1]) is float
    assert sig.evaluator == ["clip", "pairwise"] and sig.signal == ["clip_score", "pairwise_band"]
    for bad, message in (
        ({"value": "0.4"}, "'value' must be a number"),
        ({"value": True}, "'value' must be a number"),
        ({"value": _DROP}, "missing field(s) value"),
        ({"scene": 1}, "duplicate signal row"),
    ):
        path = _write(tmp_path, [_sig(1), _sig(2, **bad)], "signals.jsonl")
        with pytest.raises(InputError) as err:
            load_signals(tmp_path)
        assert err.value.message.startswith(message), (bad, err.value.message)
        assert err.value.file == str(path) and err.value.location == "line 2"
