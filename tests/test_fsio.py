"""The one JSON reader (vsb.fsio): hostile text becomes one ``InputError`` naming file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.errors import InputError
from vsb.fsio import (
    MAX_JSON_DEPTH,
    iter_jsonl,
    json_max_depth,
    json_too_deep,
    load_json,
    loads_json,
    read_limited,
)


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


def _depth(obj: object) -> int:
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, list):
        return 1 + max(map(_depth, obj), default=0)
    return 0


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "]]"]', 1),  # brackets inside strings do not count
        ('["\\"[[[", [[]]]', 3),  # nor after an escaped quote
        ('["\\\\", [[]]]', 3),  # an escaped backslash ends before the closing quote
        ('{"k\\u005b": "}"}', 1),
        (_nest(200), 200),
    ],
)
def test_depth_scan_ignores_strings(text: str, depth: int) -> None:
    assert json_max_depth(text) == depth
    assert json_max_depth(text.encode()) == depth
    assert _depth(json.loads(text)) == depth  # the scan agrees with the parsed structure


def test_depth_scan_finds_the_first_offender() -> None:
    text = '{"a": "[[[[[[", "b":\n  ' + _nest(70) + "}"
    assert json_too_deep(text, 64) == text.index("\n") + 3 + 63  # '{' is level 1
    with pytest.raises(InputError, match=r"^line 2 column 66: JSON nested deeper"):
        loads_json(text)
    assert json_too_deep(_nest(64), 64) is None
    assert json_too_deep(_nest(65), 64) == 64


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 100_000])
def test_deep_nesting_is_one_input_error(depth: int) -> None:
    with pytest.raises(InputError) as exc:
        loads_json("[" * depth, file="deep.json")
    assert str(exc.value) == (
        f"deep.json: line 1 column {MAX_JSON_DEPTH + 1}: "
        f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    )


def test_depth_limit_is_configurable() -> None:
    assert loads_json(_nest(100), max_depth=100) == json.loads(_nest(100))
    with pytest.raises(InputError, match="deeper than 3 levels"):
        loads_json(_nest(4), max_depth=3)


def test_max_depth_above_the_interpreter_limit_still_gives_input_error() -> None:
    with pytest.raises(InputError, match="nested too deeply to parse"):
        loads_json("[" * 200_000, max_depth=10**9)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,\n "b": }', "x.json: line 2 column 7: invalid JSON: Expecting value"),
        (b'{"a": "\xff"}', "x.json: line 1: not UTF-8 text (byte 7 cannot be decoded)"),
        (b'{"a": 1}\n\n"\xc3', "x.json: line 3: not UTF-8 text (byte 11 cannot be decoded)"),
        ("1" * 5_000, "x.json: invalid JSON: Exceeds the limit (4300 digits)"),
        ("", "x.json: line 1 column 1: invalid JSON: Expecting value"),
    ],
)
def test_every_parse_failure_is_one_line(text: str | bytes, message: str) -> None:
    with pytest.raises(InputError) as exc:
        loads_json(text, file="x.json")
    assert str(exc.value).startswith(message)
    assert "\n" not in str(exc.value)


def test_duplicate_keys_refused_only_when_asked() -> None:
    assert loads_json('{"id": "a", "id": "b"}') == {"id": "b"}
    with pytest.raises(InputError, match="repeats the key 'id'"):
        loads_json('{"x": {"id": "a", "id": "b"}}', unique_keys=True)


def test_line_offset_and_size_cap() -> None:
    with pytest.raises(InputError) as exc:
        loads_json("{]", file="f.jsonl", line=7)
    assert str(exc.value).startswith("f.jsonl: line 7 column 2:")
    with pytest.raises(InputError, match="exceeds the 10-byte limit"):
        loads_json("[" + "1," * 10 + "1]", max_bytes=10)


def test_load_json_file(tmp_path: Path) -> None:
    p = tmp_path / "a.json"
    p.write_text('{"a": [1, 2]}')
    assert load_json(p) == {"a": [1, 2]}
    p.write_text("[" * 100_000)
    with pytest.raises(InputError) as exc:
        load_json(p)
    assert str(exc.value).startswith(f"{p}: line 1 column 65: JSON nested deeper")
    p.write_text("[1, 2, 3, 4, 5]")
    with pytest.raises(InputError, match="exceeds the 8-byte limit"):
        load_json(p, max_bytes=8)
    with pytest.raises(FileNotFoundError):  # absence is the caller's decision
        load_json(tmp_path / "missing.json")
    with pytest.raises(InputError, match="cannot read file"):
        load_json(tmp_path)


def test_read_limited_stops_at_the_cap() -> None:
    with pytest.raises(InputError, match="exceeds the 1,024-byte limit"):
        read_limited("/dev/zero", 1024)  # an endless stream is not read to the end


def test_iter_jsonl_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\n\n{"b": 2}\n')
    assert list(iter_jsonl(p)) == [(1, {"a": 1}), (3, {"b": 2})]
    cases = [
        ('{"a": 1}\n' + "[" * 100_000 + "\n", "line 2 column 65: JSON nested deeper than 64"),
        ('{"a": 1}\n{"a": \n', "line 2 column 6: invalid JSON: Expecting value"),
        ('{"a": 1}\n[1]\n', "line 2: expected a JSON object"),
    ]
    for text, message in cases:
        p.write_text(text)
        with pytest.raises(InputError) as exc:
            list(iter_jsonl(p))
        assert str(exc.value).startswith(f"{p}: {message}")
    p.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')  # used to escape as a UnicodeDecodeError
    with pytest.raises(InputError, match=r"line 2: not UTF-8 text"):
        list(iter_jsonl(p))
    p.write_text('{"a": 1}\n{"a": "' + "x" * 100 + '"}\n')
    with pytest.raises(InputError, match="line 2: line exceeds the 50-byte limit"):
        list(iter_jsonl(p, max_bytes=50))
