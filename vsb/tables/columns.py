"""The columns of the two large evaluation tables and their Arrow types.

A requirement (verdict) row is one evaluated (image, requirement); a signal row one
continuous measurement of an image, each identified by its key (``UniqueKeys`` refuses a
second row with the same one). ``expected`` and ``observed`` hold JSON text. Every
column is nullable: a row written before a column existed reads it as None (what the
readers' defaults take, as for a key missing from an older JSON-lines row).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from vsb.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

#: The columns of RUN/evaluations/requirements.parquet, in file order.
REQUIREMENT_COLUMNS: tuple[str, ...] = (
    "model", "condition", "story_id", "scene", "req_id", "dimension", "taxonomy", "source",
    "subject", "attribute", "expected", "observed", "passed", "failure", "evaluator",
    "verdict", "judge_model",
)  # fmt: skip
#: The columns of RUN/evaluations/signals.parquet, in file order.
SIGNAL_COLUMNS: tuple[str, ...] = (
    "model", "condition", "story_id", "scene", "signal", "value", "evaluator",
)  # fmt: skip
#: The fields that identify a requirement row / a signal row (each key appears once in its file).
REQUIREMENT_KEY = (
    "model", "condition", "story_id", "scene", "req_id", "evaluator", "judge_model",
)  # fmt: skip
SIGNAL_KEY = ("model", "condition", "story_id", "scene", "signal", "evaluator")
#: The columns that are not text (every other column is a UTF-8 string).
_NOT_TEXT = {"scene": "int64", "passed": "bool", "value": "float64"}
#: Columns holding JSON text: a value that is not text yet (an older row) is written as JSON.
JSON_COLUMNS = frozenset({"expected", "observed"})


def column_type(name: str) -> pa.DataType:
    """The Arrow type of a column of either table."""
    import pyarrow as pa

    kind = _NOT_TEXT.get(name)
    if kind == "int64":
        return pa.int64()
    if kind == "bool":
        return pa.bool_()
    if kind == "float64":
        return pa.float64()
    return pa.string()


def schema(columns: tuple[str, ...]) -> pa.Schema:
    """The Arrow schema of a table with these columns (all nullable)."""
    import pyarrow as pa

    return pa.schema([pa.field(c, column_type(c)) for c in columns])


class UniqueKeys:
    """Refuses a second row with the same key in one file: ``add(key, line)`` raises
    ``InputError`` naming the key (``fields`` name its parts), the file and both lines
    (``unit``: what the numbers count, "line" of a JSON-lines file or "row" of a table)."""

    def __init__(
        self, path: str | Path, fields: tuple[str, ...], what: str = "row", unit: str = "line"
    ) -> None:
        self.path, self.fields, self.what, self.unit = path, fields, what, unit
        self.first: dict[tuple[Any, ...], int] = {}

    def add(self, key: tuple[Any, ...], line: int) -> None:
        """Record ``key`` at ``line``; ``InputError`` if an earlier line had it."""
        first = self.first.setdefault(key, line)
        if first != line:
            shown = ", ".join(f"{f} {v!r}" for f, v in zip(self.fields, key, strict=True))
            raise InputError(
                f"duplicate {self.what} ({shown}): the same key as {self.unit} {first}; each "
                "key must appear once",
                file=self.path,
                location=f"{self.unit} {line}",
            )
