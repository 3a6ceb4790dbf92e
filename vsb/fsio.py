"""Atomic file writes, canonical JSON hashing, the one JSON reader and the one CSV writer,
shared by every layer.

Every JSON document vsb reads from disk goes through ``load_json`` / ``loads_json`` /
``iter_jsonl``: a size cap and a nesting-depth scan run before parsing, and every way the text
can be wrong (not UTF-8, bad syntax, too deep, an absurd number) becomes one ``InputError``
carrying the file and the line and column. A missing file raises ``FileNotFoundError`` so that
each caller decides whether absence is an error. ``load_model`` reads one typed document
(``InputError`` at the first field that does not match); ``STRICT`` is the pydantic config of
every typed document (no unknown field, immutable). ``hf_hub_cache`` says where
downloaded model weights live (the image adapters and the embedding evaluators look there).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import itertools
import json
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from vsb.errors import InputError

M = TypeVar("M", bound=BaseModel)

#: The largest image any layer decodes, in pixels (anything larger is an error, not a
#: picture): the adapters refuse it from a provider or a samples folder, ``vsb evaluate``
#: reads it as unreadable. Checked from the image header, before decoding.
MAX_PIXELS = 4096 * 4096


def canonical_json(obj: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, no whitespace, UTF-8 (the basis of every hash)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder, then rename."""
    path = Path(path)
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new file ``.NAME.<random>.tmp`` beside ``path`` (its folder made when missing),
    open for writing, created exclusively with the usual mode (0666 less the umask): what
    ``tempfile.mkstemp`` and a ``chmod`` do, at a third of the cost (the main job writes
    ~30,000 files through here)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
    raise FileExistsError(f"no free temporary name beside {path}")


def link_or_copy(src: str | Path, dest: str | Path) -> None:
    """Make ``dest`` hold the bytes of ``src``: a hard link where the filesystem allows,
    else a copy (another device, no link support). Any file at ``dest`` is unlinked first,
    never written through, so a link already there cannot change the file it shares.

    Safe only for files that vsb writes once and never modifies in place (every write is
    temp-file-then-rename, which gives the path a new inode and leaves the linked one alone)."""
    import shutil

    for tries_left in (1, 0):
        try:
            os.link(src, dest)
            return
        except FileExistsError:
            if not tries_left:
                raise
            os.unlink(dest)  # the old file goes; what it shares stays as it was
        except OSError:
            break
    with contextlib.suppress(FileNotFoundError):  # cannot link here: copy, over nothing
        os.unlink(dest)
    shutil.copyfile(src, dest)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Atomically write UTF-8 text."""
    atomic_write_bytes(path, text.encode())


def atomic_write_json(path: str | Path, obj: Any, *, indent: int | None = 2) -> None:
    """Atomically write JSON (sorted keys, trailing newline) so equal objects give equal bytes."""
    text = json.dumps(obj, indent=indent, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write_text(path, text)


MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects accepted (vsb's own files nest about 8 deep)."""
MAX_JSON_BYTES = 256 * 1024 * 1024
"""Largest JSON file (or JSON-lines line) read, in bytes."""

# A JSON string (skipped whole, so brackets inside it do not count), an opener, a closer.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|([\[{])|([\]}])', re.DOTALL)
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_BARE_STRING = re.compile(rb'"[^"]*"')
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def json_max_depth(text: str | bytes) -> int:
    """Deepest nesting of arrays and objects in JSON text, brackets inside strings ignored
    (C-speed passes: drop escapes, keep only quotes and brackets, drop strings, accumulate)."""
    data = text.encode() if isinstance(text, str) else text
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    data = _BARE_STRING.sub(b"", data.translate(None, _NOT_STRUCTURE)).replace(b'"', b"")
    return max(accumulate(map(_STEP.__getitem__, data), initial=0))


def json_too_deep(text: str, max_depth: int = MAX_JSON_DEPTH) -> int | None:
    """Offset of the first ``[`` or ``{`` nested deeper than ``max_depth`` in ``text``
    (brackets inside strings ignored), or None. Linear; stops at the first offender."""
    if text.count("[") + text.count("{") <= max_depth or json_max_depth(text) <= max_depth:
        return None
    depth = 0
    for m in _TOKEN.finditer(text):
        kind = m.lastindex
        if kind == 1:
            depth += 1
            if depth > max_depth:
                return m.start()
        elif kind == 2:
            depth -= 1
    return None


def _line_col(text: str, pos: int) -> tuple[int, int]:
    return text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)


def loads_json(
    text: str | bytes,
    *,
    file: str | Path | None = None,
    line: int = 1,
    max_depth: int = MAX_JSON_DEPTH,
    max_bytes: int = MAX_JSON_BYTES,
    unique_keys: bool = False,
) -> Any:
    """Parse JSON text; any problem is an ``InputError`` naming ``file`` and the line and
    column (``line`` is the number of the text's first line in that file). Nesting deeper
    than ``max_depth`` is refused before parsing; ``unique_keys`` refuses an object that
    repeats a key (by default the last value wins, as in ``json.loads``)."""
    if len(text) > max_bytes:
        unit = "bytes" if isinstance(text, bytes) else "characters"
        raise InputError(
            f"JSON text of {len(text):,} {unit} exceeds the {max_bytes:,}-byte limit",
            file=file,
            location=f"line {line}",
        )
    if isinstance(text, bytes):
        data = text
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            n = line + data.count(b"\n", 0, err.start)
            raise InputError(
                f"not UTF-8 text (byte {err.start} cannot be decoded)",
                file=file,
                location=f"line {n}",
            ) from None
    pos = json_too_deep(text, max_depth)
    if pos is not None:
        ln, col = _line_col(text, pos)
        raise InputError(
            f"JSON nested deeper than {max_depth} levels",
            file=file,
            location=f"line {line + ln - 1} column {col}",
        )
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs if unique_keys else None)
    except json.JSONDecodeError as err:
        raise InputError(
            f"invalid JSON: {err.msg}",
            file=file,
            location=f"line {line + err.lineno - 1} column {err.colno}",
        ) from None
    except _DuplicateKey as err:
        raise InputError(
            f"invalid JSON: an object repeats the key {err.key!r}", file=file
        ) from None
    except ValueError as err:  # e.g. an integer longer than int_max_str_digits
        msg = str(err).split(":")[0]
        raise InputError(f"invalid JSON: {msg}", file=file) from None
    except RecursionError:  # only reachable with a max_depth above the interpreter's limit
        raise InputError("invalid JSON: nested too deeply to parse", file=file) from None


def read_limited(path: str | Path, max_bytes: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of a file, refusing one larger than ``max_bytes`` (read no further, so a
    device or an endless stream cannot exhaust memory). ``FileNotFoundError`` propagates;
    any other ``OSError`` becomes an ``InputError``."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", file=path) from None
    if len(data) > max_bytes:
        raise InputError(f"file exceeds the {max_bytes:,}-byte limit", file=path)
    return data


def load_json(
    path: str | Path,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    max_bytes: int = MAX_JSON_BYTES,
    unique_keys: bool = False,
) -> Any:
    """Read and parse one JSON file through ``read_limited`` and ``loads_json``."""
    data = read_limited(path, max_bytes)
    return loads_json(
        data, file=path, max_depth=max_depth, max_bytes=max_bytes, unique_keys=unique_keys
    )


def iter_jsonl(
    path: str | Path, *, max_depth: int = MAX_JSON_DEPTH, max_bytes: int = MAX_JSON_BYTES
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for every non-blank line; ``InputError`` naming the line on
    bad JSON, a line that is not an object, a line over ``max_bytes`` or nested too deep."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed by the with block below)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", file=path) from None
    with fh:
        n = 0
        while raw := fh.readline(max_bytes + 1):
            n += 1
            if len(raw) > max_bytes:
                raise InputError(
                    f"line exceeds the {max_bytes:,}-byte limit", file=path, location=f"line {n}"
                )
            raw = raw.rstrip()
            if not raw:
                continue
            try:  # fast path for the usual flat row; any doubt goes through loads_json
                if raw.count(b"[") + raw.count(b"{") > max_depth:
                    raise ValueError
                obj = json.loads(raw.decode())
            except ValueError:  # includes JSONDecodeError and UnicodeDecodeError
                obj = loads_json(raw, file=path, line=n, max_depth=max_depth, max_bytes=max_bytes)
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object", file=path, location=f"line {n}")
            yield n, obj


#: First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
FORMULA_START = frozenset("=+-@\t\r")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """``value`` safe for a CSV cell: text that starts with ``= + - @``, a tab or a carriage
    return gets a leading single quote (OWASP's rule), so no spreadsheet runs it as a
    formula. Numbers (ints, floats) are written as they are, and so is text that is exactly
    a plain number (``-0.5``, ``+0.084``: no formula can hide in it); everything else is
    unchanged. JSON files are never escaped: only CSV cells go through here."""
    if (
        isinstance(value, str)
        and value
        and value[0] in FORMULA_START
        and not _NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


#: Where a cell that starts a formula could begin in CSV text (after a line break or a comma,
#: maybe inside quotes): text without a match has no such cell (false alarms only cost time).
_CELL_START = re.compile(r'[,\n]"?[=+\-@\t\r]')


def csv_text(
    header: Sequence[str],
    rows: Iterable[Sequence[Any]] | Iterable[Mapping[str, Any]],
) -> str:
    """CSV text: ``\\n`` line ends, None as an empty cell (pandas reads it as NaN), every text
    cell through ``csv_cell``, a cell holding a carriage return quoted (the ``csv`` module
    quotes only the line terminator's characters). ``rows`` are sequences in ``header``
    order, or mappings keyed by ``header`` (missing keys empty, others ignored). Every CSV
    vsb writes is made here."""
    table: list[Any] = list(rows)
    text = _write(header, table, escape=False)
    if "\r" in text or _CELL_START.search("\n" + text):  # a cell may need care: the slow way
        text = _write(header, table, escape=True)
    return text


def csv_columns_text(header: Sequence[str], columns: Sequence[Sequence[Any]]) -> str:
    """``csv_text`` of a table given column by column (one sequence per header name), with
    the same cells and bytes; each distinct text value goes through ``csv_cell`` once, so a
    large table with few distinct values is written at the csv module's speed."""
    buf = io.StringIO()
    _write_csv_columns(buf, header, columns)
    return buf.getvalue()


def atomic_write_csv_columns(
    path: str | Path, header: Sequence[str], columns: Sequence[Sequence[Any]]
) -> None:
    """``csv_columns_text(header, columns)`` written atomically to ``path`` as UTF-8, row by
    row into the temp file: never the whole text in memory (the site's requirements CSV is
    ~36 MB, and its text, buffer and bytes once held ~100 MB beside the pages)."""
    path = Path(path)
    fd, tmp = _temp_beside(path)
    try:
        with open(fd, "w", encoding="utf-8", newline="") as fh:
            _write_csv_columns(fh, header, columns)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_csv_columns(out: Any, header: Sequence[str], columns: Sequence[Sequence[Any]]) -> None:
    safe: list[Sequence[Any]] = []
    for col in columns:
        distinct = set(col)
        if any(isinstance(v, str) and "\r" in v for v in distinct):
            out.write(csv_text(header, zip(*columns, strict=True)))  # the careful way
            return
        changed = {v: c for v in distinct if isinstance(v, str) and (c := csv_cell(v)) is not v}
        safe.append([changed.get(v, v) for v in col] if changed else col)
    w = csv.writer(out, lineterminator="\n")
    w.writerow([csv_cell(h) for h in header])
    w.writerows(zip(*safe, strict=True))


def _write(header: Sequence[str], rows: list[Any], *, escape: bool) -> str:
    buf = io.StringIO()
    dicts = bool(rows) and isinstance(rows[0], Mapping)
    if not escape:
        if dicts:
            d = csv.DictWriter(buf, list(header), lineterminator="\n", extrasaction="ignore")
            d.writeheader()
            d.writerows(rows)
        else:
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(header)
            w.writerows(rows)
        return buf.getvalue()
    if dicts:
        rows = [[r.get(c, "") for c in header] for r in rows]
    w = csv.writer(buf, lineterminator="\n")
    side = io.StringIO()
    crlf = csv.writer(side, lineterminator="\r\n")  # quotes a cell holding \r (or \n)
    for row in itertools.chain([header], rows):
        cells = ["" if x is None else csv_cell(x) for x in row]
        if any("\r" in x for x in cells if isinstance(x, str)):
            side.seek(0)
            side.truncate()
            crlf.writerow(cells)
            buf.write(side.getvalue()[:-2] + "\n")
        else:
            w.writerow(cells)
    return buf.getvalue()


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache as huggingface_hub resolves it (read when called)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(xdg) / "huggingface" / "hub"


#: The config of every typed document vsb writes or reads back: no unknown field, immutable.
STRICT = ConfigDict(extra="forbid", frozen=True)


def load_model(path: str | Path, model: type[M], what: str) -> M:
    """``model`` from the JSON document at ``path``: ``FileNotFoundError`` when it is absent,
    ``InputError("WHAT: why")`` at the first field that does not match."""
    try:
        return model.model_validate(load_json(path))
    except ValidationError as err:
        first = err.errors()[0]
        loc = "/" + "/".join(str(x) for x in first["loc"])
        raise InputError(f"{what}: {first['msg']}", file=path, location=loc) from err
