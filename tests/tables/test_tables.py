"""vsb.tables: the evaluation tables in Parquet, read back exactly, written deterministically,
and older runs' JSON lines still read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vsb.errors import InputError
from vsb.fsio import iter_jsonl
from vsb.tables import (
    REQUIREMENT_COLUMNS,
    iter_rows,
    parquet_bytes,
    read_columns,
    read_table,
    requirements_file,
    signals_file,
    to_arrow,
    where,
    write_requirements,
    write_signals,
)


def _req(i: int, **kw: Any) -> dict[str, Any]:
    passed = i % 3 != 0
    row = {
        "model": f"m{i % 2}", "condition": "full_context", "story_id": f"s{i % 5}",
        "scene": i % 4 + 1, "req_id": f"r{i}", "dimension": "identity",
        "taxonomy": "identity_drift", "source": "prompt", "subject": "Ana", "attribute": "hair",
        "expected": json.dumps(["blond", i]), "observed": json.dumps({"v": i}), "passed": passed,
        "failure": "" if passed else "identity_drift", "evaluator": "rules",
        "verdict": "passed" if passed else "failed", "judge_model": "" if i % 7 else None,
    }  # fmt: skip
    return row | kw


def _sig(i: int) -> dict[str, Any]:
    return {
        "model": "m", "condition": "c", "story_id": f"s{i}", "scene": 1,
        "signal": "clip_score", "value": None if i == 2 else i / 7, "evaluator": "clip",
    }  # fmt: skip


ROWS = [_req(i) for i in range(40)]


def test_rows_read_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "requirements.parquet"
    write_requirements(path, ROWS)
    assert [r for _, r in iter_rows(path)] == ROWS
    assert [n for n, _ in iter_rows(path)] == list(range(1, 41))
    assert pq.read_schema(path).names == list(REQUIREMENT_COLUMNS)
    sig = tmp_path / "signals.parquet"
    write_signals(sig, [_sig(i) for i in range(5)])
    assert [r for _, r in iter_rows(sig)] == [_sig(i) for i in range(5)]


def test_the_same_rows_give_the_same_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_requirements(a, ROWS)
    write_requirements(b, [dict(r) for r in ROWS])
    assert a.read_bytes() == b.read_bytes()
    assert parquet_bytes(to_arrow(ROWS, REQUIREMENT_COLUMNS, a)) == a.read_bytes()
    meta = pq.read_metadata(a)
    assert meta.metadata is None  # no schema blob, no pandas metadata, no timestamp
    write_requirements(b, [*ROWS[1:], ROWS[0]])  # the order of the rows is kept
    assert a.read_bytes() != b.read_bytes()


def test_columns_are_lists_and_equal_text_is_shared(tmp_path: Path) -> None:
    path = tmp_path / "requirements.parquet"
    write_requirements(path, ROWS)
    cols = read_columns(path, ["model", "scene", "passed", "judge_model", "no_such"])
    assert cols["model"] == [r["model"] for r in ROWS]
    assert cols["scene"] == [r["scene"] for r in ROWS]
    assert cols["passed"] == [r["passed"] for r in ROWS]
    assert cols["judge_model"] == [r["judge_model"] for r in ROWS]
    assert cols["no_such"] == [None] * len(ROWS)
    assert cols["model"][0] is cols["model"][2]  # one str per distinct value
    table = read_table(path, ["model", "scene"])
    assert pa.types.is_dictionary(table.schema.field("model").type)
    assert table.column("scene").to_pylist() == [r["scene"] for r in ROWS]


def test_an_older_run_s_json_lines_are_read(tmp_path: Path) -> None:
    ev = tmp_path / "evaluations"
    ev.mkdir()
    legacy = [{k: v for k, v in r.items() if k not in ("verdict", "judge_model")} for r in ROWS]
    (ev / "requirements.jsonl").write_text("".join(json.dumps(r) + "\n" for r in legacy))
    assert requirements_file(tmp_path) == ev / "requirements.jsonl"
    assert signals_file(tmp_path) == ev / "signals.parquet"  # neither: where it would be
    path = requirements_file(tmp_path)
    assert list(iter_rows(path)) == list(iter_jsonl(path))
    assert where(path, 3) == "line 3"
    assert read_columns(path, ["req_id", "verdict"]) == {
        "req_id": [r["req_id"] for r in ROWS],
        "verdict": [None] * len(ROWS),
    }
    assert read_table(path).num_rows == len(ROWS)
    write_requirements(ev / "requirements.parquet", legacy)  # a new evaluation: Parquet wins
    assert requirements_file(tmp_path) == ev / "requirements.parquet"
    assert where(requirements_file(tmp_path), 3) == "row 3"


def test_nested_values_of_older_rows_become_json_text(tmp_path: Path) -> None:
    path = tmp_path / "requirements.parquet"
    write_requirements(path, [_req(1, expected=["a", 1], observed={"b": None})])
    row = next(iter_rows(path))[1]
    assert (row["expected"], row["observed"]) == ('["a", 1]', '{"b": null}')


def test_bad_rows_and_files_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "requirements.parquet"
    with pytest.raises(InputError, match=r"unknown column\(s\) colour") as err:
        write_requirements(path, [ROWS[0], _req(1, colour="red")])
    assert err.value.file == str(path) and err.value.location == "row 2"
    with pytest.raises(InputError, match="'scene'"):
        write_requirements(path, [_req(1, scene="one")])
    assert not path.exists()  # nothing half-written
    pq.write_table(pa.table({"scene": ["1"]}), path)  # a file of the wrong type
    with pytest.raises(InputError, match="column 'scene' is string; expected int64"):
        list(iter_rows(path))
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        read_columns(path, ["model"])


def test_rows_missing_columns_or_of_one_column_are_written(tmp_path: Path) -> None:
    path = tmp_path / "requirements.parquet"
    short = [{k: v for k, v in r.items() if k != "judge_model"} for r in ROWS[:3]]
    write_requirements(path, [*short, ROWS[3]])
    got = [r["judge_model"] for _, r in iter_rows(path)]
    assert got == [None, None, None, ROWS[3]["judge_model"]]
    table = to_arrow([{"model": "a"}, {"model": "b"}], ("model",), path)
    assert table.column("model").to_pylist() == ["a", "b"]
