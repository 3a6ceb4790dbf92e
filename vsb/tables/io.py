"""Reading and writing the evaluation tables (RUN/evaluations/requirements and signals).

A run holds each table once, as Parquet (``requirements.parquet``, ``signals.parquet``);
runs evaluated before that hold JSON lines (``requirements.jsonl``, ``signals.jsonl``), and
every reader here takes either (``requirements_file`` / ``signals_file`` name whichever a
run holds). The Parquet files are written deterministically, so the same rows give the same
bytes and a release's root hash is reproducible: rows in the order given, one fixed row-group
size, zstd at a fixed level, dictionary-encoded columns, statistics, no Arrow schema blob
and no timestamps (the footer's ``created_by`` names the pyarrow version that wrote it).

pyarrow is imported inside the functions that need it (it costs ~0.2 s to import).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import is_not
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vsb.errors import InputError
from vsb.fsio import atomic_write_bytes, atomic_write_json, atomic_write_text, iter_jsonl
from vsb.tables.columns import (
    JSON_COLUMNS,
    REQUIREMENT_COLUMNS,
    REQUIREMENT_KEY,
    SIGNAL_COLUMNS,
    SIGNAL_KEY,
    UniqueKeys,
    column_type,
    schema,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

EVALUATIONS_DIR = "evaluations"
#: Rows per Parquet row group (fixed, so the bytes do not depend on a library default).
ROW_GROUP_ROWS = 65_536
#: zstd level: 57 MB of JSON lines (142k rows) become ~0.3 MB; higher levels gain ~5 %.
ZSTD_LEVEL = 3
#: Rows per batch when a Parquet file is read row by row.
_BATCH_ROWS = 16_384


def _pick(run_dir: str | Path, name: str) -> Path:
    folder = Path(run_dir) / EVALUATIONS_DIR
    parquet, jsonl = folder / f"{name}.parquet", folder / f"{name}.jsonl"
    return jsonl if jsonl.is_file() and not parquet.is_file() else parquet


def requirements_file(run_dir: str | Path) -> Path:
    """RUN/evaluations/requirements.parquet, or requirements.jsonl when an older run holds
    only that; the Parquet path (absent) when the run has neither."""
    return _pick(run_dir, "requirements")


def signals_file(run_dir: str | Path) -> Path:
    """RUN/evaluations/signals.parquet, or signals.jsonl when an older run holds only that;
    the Parquet path (absent) when the run has neither."""
    return _pick(run_dir, "signals")


def is_legacy(path: Path) -> bool:
    """Whether ``path`` is a JSON-lines table (written before Parquet)."""
    return path.suffix == ".jsonl"


def unit(path: Path) -> str:
    """What ``iter_rows`` counts in ``path``: "line" (JSON lines) or "row" (Parquet)."""
    return "line" if is_legacy(path) else "row"


def where(path: Path, n: int) -> str:
    """The error location of row ``n`` as ``iter_rows`` numbers it: "line n" or "row n"."""
    return f"{unit(path)} {n}"


def _open(path: Path) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"not a readable Parquet file ({err})", file=path) from err
    for field in pf.schema_arrow:
        want = column_type(field.name)
        got = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if got != want and not (pa.types.is_large_string(got) and pa.types.is_string(want)):
            raise InputError(f"column {field.name!r} is {got}; expected {want}", file=path)
    return pf


def iter_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(n, row) for every row of a table file, as ``vsb.fsio.iter_jsonl`` yields them: ``n``
    is the line (JSON lines) or the 1-based row (Parquet; every column present, null as
    None). Streams: one batch of rows is held at a time, its equal text cells one str."""
    if is_legacy(path):
        yield from iter_jsonl(path)
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = _open(path)
    text = [f.name for f in pf.schema_arrow if pa.types.is_string(column_type(f.name))]
    n = 0
    try:
        pf = pq.ParquetFile(path, read_dictionary=text)
        for batch in pf.iter_batches(batch_size=_BATCH_ROWS):
            names = batch.schema.names
            cols = [_array_list(batch.column(i)) for i in range(len(names))]
            for values in zip(*cols, strict=True):
                n += 1
                yield n, dict(zip(names, values, strict=True))
    except pa.ArrowException as err:
        raise InputError(
            f"unreadable Parquet data ({err})", file=path, location=f"row {n + 1}"
        ) from err


def read_table(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """The table (or the named columns it has) as Arrow; text columns of a Parquet file come
    dictionary-encoded (each distinct value held once)."""
    import pyarrow as pa

    if is_legacy(path):
        rows = [row for _, row in iter_jsonl(path)]
        names = (
            list(columns)
            if columns is not None
            else list(dict.fromkeys(k for r in rows for k in r))
        )
        return to_arrow(rows, tuple(names), path)
    pf = _open(path)
    have = pf.schema_arrow.names
    names = [c for c in (columns if columns is not None else have) if c in have]
    text = [c for c in names if pa.types.is_string(column_type(c))]
    try:
        return pf.read(columns=names) if not text else _read_dict(path, names, text)
    except pa.ArrowException as err:
        raise InputError(f"unreadable Parquet data ({err})", file=path) from err


def _read_dict(path: Path, names: list[str], text: list[str]) -> pa.Table:
    import pyarrow.parquet as pq

    # ParquetFile, not pq.read_table: that one loads pyarrow.dataset and pandas (~0.2 s)
    return pq.ParquetFile(path, read_dictionary=text).read(columns=names)


def read_columns(path: Path, columns: Sequence[str]) -> dict[str, list[Any]]:
    """The named columns as Python lists, one entry per row in file order (a column the file
    lacks: all None). From Parquet no row is built and equal text cells share one str."""
    if is_legacy(path):
        out: dict[str, list[Any]] = {c: [] for c in columns}
        for _, row in iter_jsonl(path):
            for c in columns:
                out[c].append(row.get(c))
        return out
    table = read_table(path, columns)
    n = table.num_rows
    return {
        c: column_list(table.column(c)) if c in table.column_names else [None] * n for c in columns
    }


def column_list(column: pa.ChunkedArray) -> list[Any]:
    """A column as a Python list; a dictionary-encoded one converts each distinct value once
    (the list holds references to those, not a new object per cell)."""
    out: list[Any] = []
    for chunk in column.chunks:
        out.extend(_array_list(chunk))
    return out


def _array_list(array: pa.Array) -> list[Any]:
    import numpy as np
    import pyarrow as pa

    if not pa.types.is_dictionary(array.type):
        return list(array.to_pylist())
    values = np.empty(len(array.dictionary) + 1, dtype=object)
    values[:-1] = array.dictionary.to_pylist()  # the last slot (None) stands for null
    return list(values[_indices(array.indices, len(array.dictionary))].tolist())


def _indices(indices: pa.Array, null: int) -> np.ndarray:
    """A dictionary array's indices as numpy, ``null`` where a cell is null, read straight
    from the Arrow buffers: pyarrow's own conversions (``to_numpy``, ``fill_null``) import
    pandas on first use (~0.3 s and ~35 MiB in every process that reads a table)."""
    import numpy as np
    import pyarrow as pa

    n, off = len(indices), indices.offset
    sign = "i" if pa.types.is_signed_integer(indices.type) else "u"
    kind = np.dtype(f"<{sign}{indices.type.bit_width // 8}")
    out = np.frombuffer(indices.buffers()[1], dtype=kind, count=n + off)[off:].astype(np.int64)
    if indices.null_count:
        bits = np.frombuffer(indices.buffers()[0], dtype=np.uint8)
        valid = np.unpackbits(bits, bitorder="little", count=n + off)[off:].astype(bool)
        out[~valid] = null
    return out


def to_arrow(
    rows: Iterable[dict[str, Any]], columns: tuple[str, ...], path: Path, *, strict: bool = True
) -> pa.Table:
    """Rows as an Arrow table with ``columns`` (typed as the tables' schema); a cell of the
    wrong type, or (``strict``) a key outside them, raises ``InputError`` naming ``path``.
    A nested value (a list or an object, in an older row) is stored as JSON text."""
    import pyarrow as pa

    rows = rows if isinstance(rows, list) else list(rows)
    known = set(columns)
    if strict and not known.issuperset(set().union(*rows)):
        i, extra = next((i, r.keys() - known) for i, r in enumerate(rows, 1) if r.keys() - known)
        raise InputError(
            f"unknown column(s) {', '.join(sorted(extra))} (known: {', '.join(columns)})",
            file=path,
            location=f"row {i}",
        )
    table = _typed(rows, columns)
    if table is not None:
        return table
    try:  # an odd cell (an older row, a nested value): pyarrow's conversion (it loads pandas)
        return pa.Table.from_pylist(rows, schema=schema(columns))
    except (pa.ArrowException, OverflowError):
        pass  # a cell of another type: column by column, to coerce it or to name it
    return _by_column(rows, columns, path)


#: The Python type of every cell of a column of each Arrow type (None aside).
_CELL = {"string": str, "int64": int, "bool": bool, "double": float}


def _typed(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pa.Table | None:
    """Rows whose every cell is None or exactly its column's Python type, as Arrow arrays built
    from numpy buffers (None when a cell is not). pyarrow's own conversions of Python objects
    (``pa.array``, ``from_pylist``) import pandas on first use, ~0.2 s and ~45 MiB in every
    process that writes a table; ``Array.from_buffers`` does not, and the table is the same."""
    import numpy as np
    import pyarrow as pa

    n, arrays = len(rows), []
    for c, col in zip(columns, _cells(rows, columns), strict=True):
        kind = column_type(c)
        if not set(map(type, col)) <= {_CELL[str(kind)], type(None)}:
            return None
        nulls = col.count(None)
        valid = np.fromiter(map(is_not, col, repeat(None)), dtype=bool, count=n) if nulls else None
        bufs: list[Any] = [None if valid is None else np.packbits(valid, bitorder="little")]
        try:
            if kind == pa.string():  # ASCII text: its lengths in characters are in bytes
                text = [v or "" for v in col] if nulls else col
                data = "".join(text).encode()
                ends = np.cumsum(np.fromiter(map(len, text), dtype=np.int64, count=n))
                if n and ends[-1] != len(data):  # not ASCII: lengths in bytes
                    ends = np.cumsum(np.fromiter(map(len, map(str.encode, text)), np.int64, n))
                if n and ends[-1] >= 2**31:
                    return None
                bufs += [np.concatenate(([0], ends)).astype(np.int32), data]
            elif kind == pa.bool_():
                bufs.append(np.packbits(np.array(col, dtype=bool), bitorder="little"))
            else:
                dtype = np.int64 if kind == pa.int64() else np.float64
                bufs.append(np.array([0 if v is None else v for v in col], dtype=dtype))
        except (OverflowError, UnicodeEncodeError):
            return None
        bufs = [None if b is None else pa.py_buffer(b) for b in bufs]
        arrays.append(pa.Array.from_buffers(kind, n, bufs, null_count=nulls))
    return pa.Table.from_arrays(arrays, schema=schema(columns))


def _by_column(rows: list[dict[str, Any]], columns: tuple[str, ...], path: Path) -> pa.Table:
    """``to_arrow`` column by column: a cell of the wrong type is coerced (nested values to
    JSON text) or named in an ``InputError``."""
    import pyarrow as pa

    arrays = []
    for c, col in zip(columns, _cells(rows, columns), strict=True):
        kind = column_type(c)
        try:
            arrays.append(pa.array(col, type=kind))
        except (pa.ArrowException, OverflowError) as err:
            plain = _as_text(c, col) if kind == pa.string() else None
            if plain is None:
                raise InputError(f"column {c!r}: {err}", file=path) from err
            arrays.append(pa.array(plain, type=kind))
    return pa.Table.from_arrays(arrays, names=list(columns))


def _cells(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> list[list[Any]]:
    """The rows' cells column by column (None where a row lacks a column)."""
    return [list(map(dict.get, rows, repeat(c))) for c in columns]


def _as_text(column: str, cells: Sequence[Any]) -> list[Any] | None:
    """A text column's cells with nested values as JSON text (every non-text value, in a JSON
    column); None if a cell is still not text."""
    if column in JSON_COLUMNS:
        out = [v if v is None or isinstance(v, str) else _json_text(v) for v in cells]
    else:
        out = [_json_text(v) if isinstance(v, dict | list) else v for v in cells]
    return out if all(v is None or isinstance(v, str) for v in out) else None


def _json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def parquet_bytes(table: pa.Table) -> bytes:
    """The deterministic Parquet encoding of ``table`` (same table, same bytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(
        table,
        sink,
        row_group_size=ROW_GROUP_ROWS,
        version="2.6",
        compression="zstd",
        compression_level=ZSTD_LEVEL,
        use_dictionary=True,
        write_statistics=True,
        store_schema=False,
    )
    return bytes(sink.getvalue())


def write_rows(path: Path, rows: Iterable[dict[str, Any]], columns: tuple[str, ...]) -> None:
    """Write rows as a Parquet table at ``path`` (temp file, then rename)."""
    data = parquet_bytes(to_arrow(rows, columns, path))
    atomic_write_bytes(path, data)


def write_requirements(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write requirement (verdict) rows, in the order given, as ``path`` (Parquet)."""
    write_rows(path, rows, REQUIREMENT_COLUMNS)


def write_signals(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write signal rows, in the order given, as ``path`` (Parquet)."""
    write_rows(path, rows, SIGNAL_COLUMNS)


def row_evaluator(row: dict[str, Any]) -> str:
    """The evaluator of a row (a row of an older evaluation names none: a signal row's is the
    signal's prefix, a requirement row's the rule checker)."""
    if row.get("evaluator"):
        return str(row["evaluator"])
    sig = str(row.get("signal", ""))
    return sig.split("_", 1)[0] if sig else "rules"


@dataclass(frozen=True)
class Kept:
    """The rows an evaluation keeps from the earlier one in RUN/evaluations/."""

    requirements: list[dict[str, Any]]
    signals: list[dict[str, Any]]
    #: The earlier transcript's rows (JSON lines), when the evaluation writes one.
    calls: list[dict[str, Any]]


def kept_evaluation(
    run_dir: str | Path, evaluators: Collection[str], cells: Collection[tuple[str, str]],
    transcript: str | None = None,
) -> Kept:  # fmt: skip
    """What ``vsb evaluate`` keeps of the evaluation in ``run_dir``: the rows of both tables
    (and of the ``transcript`` file, JSON lines, when named) that are not of ``evaluators`` at
    ``cells`` (model, condition), each table read once, its keys checked (``kept_rows``)."""
    folder = Path(run_dir) / EVALUATIONS_DIR
    return Kept(
        kept_rows(requirements_file(run_dir), evaluators, cells, REQUIREMENT_KEY),
        kept_rows(signals_file(run_dir), evaluators, cells, SIGNAL_KEY),
        kept_rows(folder / transcript, evaluators, cells, None) if transcript else [],
    )


def kept_rows(
    path: Path, evaluators: Collection[str], cells: Collection[tuple[str, str]],
    key: tuple[str, ...] | None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The rows of an earlier evaluation's file (a table; JSON lines when ``key`` is None)
    that are not of ``evaluators`` at ``cells`` (model, condition), none where it is absent;
    an ``InputError`` names the first kept row whose ``key`` an earlier row has (issue #23: a
    duplicate verdict is never carried forward)."""
    if not path.is_file():
        return []
    kept = [
        (n, r) for n, r in (iter_rows(path) if key is not None else iter_jsonl(path))
        if not (row_evaluator(r) in evaluators and (r.get("model"), r.get("condition")) in cells)
    ]  # fmt: skip
    keys = [(tuple(_key_value(r, f) for f in key), n) for n, r in kept] if key else []
    unique = UniqueKeys(path, key or (), "row", unit(path))
    for k, n in keys:
        unique.add(k, n)
    return [r for _, r in kept]


def _key_value(row: dict[str, Any], name: str) -> Any:
    if name == "evaluator":
        return row_evaluator(row)
    if name == "judge_model":
        return str(row.get("judge_model") or "")
    return row.get(name)


#: The files an evaluation wrote before the tables were Parquet (replaced when it rewrites them).
LEGACY_FILES = ("requirements.jsonl", "requirements.csv", "signals.jsonl", "signals.csv")


def write_evaluation(
    out_dir: Path, requirements: list[dict[str, Any]], signals: list[dict[str, Any]],
    manifest: dict[str, Any], texts: dict[str, str],
) -> None:  # fmt: skip
    """An evaluation's files, each atomically: its two tables (an older evaluation's JSON lines
    or CSV removed: their rows are carried into them), ``texts`` (file name -> text: the judge's
    transcript), then ``manifest.json``, last."""
    tables = {name: parquet_bytes(to_arrow(rows, columns, out_dir / name)) for name, rows, columns
              in (("requirements.parquet", requirements, REQUIREMENT_COLUMNS),
                  ("signals.parquet", signals, SIGNAL_COLUMNS))}  # fmt: skip
    for name in LEGACY_FILES:
        (out_dir / name).unlink(missing_ok=True)
    for name, data in tables.items():
        atomic_write_bytes(out_dir / name, data)
    for name, text in texts.items():
        atomic_write_text(out_dir / name, text)
    atomic_write_json(out_dir / "manifest.json", manifest)
