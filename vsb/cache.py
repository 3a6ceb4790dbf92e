"""The generation cache: identical requests are never regenerated.

``GenerationCache.get(key, compute) -> (result, hit)``: ``key`` is the request key
(``GenerationRequest.key()``: sha256 over the canonical JSON of model id, version, prompt,
context, seed, sorted parameters and reference-image hashes; simulators add story, scene and
condition). On a miss ``compute()`` runs and its result is stored.

Storage (the embedded default)::

    CACHE/objects/<aa>/<sha256>.png   content-addressed PNG bytes (atomic temp file + rename)
    CACHE/index.sqlite                WAL-mode index: key -> sha256, metadata JSON, cost

An object whose bytes no longer match its hash is detected on read, deleted and
regenerated — never served. Each process and thread opens its own SQLite connection (after
a fork the child opens a fresh one), so several workers may share one cache. Inside
``with cache.batch():`` index writes are collected and committed in one transaction.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vsb.adapters.base import GenerationResult
from vsb.errors import CacheError
from vsb.fsio import atomic_write_bytes, loads_json, sha256_hex

log = logging.getLogger(__name__)

DEFAULT_CACHE_DIR = ".vsb-cache"
INDEX_NAME = "index.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    metadata TEXT NOT NULL,
    cost_usd REAL
)
"""
_Row = tuple[str, str, str, float | None]


class GenerationCache:
    """A content-addressed PNG store with a SQLite index (see the module docstring)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._local = threading.local()

    @property
    def _pending(self) -> dict[str, _Row] | None:
        pending: dict[str, _Row] | None = getattr(self._local, "pending", None)
        return pending

    @_pending.setter
    def _pending(self, value: dict[str, _Row] | None) -> None:
        self._local.pending = value

    # --- storage -----------------------------------------------------------------------

    def object_path(self, sha256: str) -> Path:
        """Where the PNG with this hash lives."""
        return self.root / "objects" / sha256[:2] / f"{sha256}.png"

    def _db(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            # A connection inherited through fork belongs to the parent: leave it alone.
            conn = self._connect()
            self._local.conn, self._local.pid = conn, os.getpid()
            self._local.pending, self._local.depth = None, 0
        return conn

    def _connect(self) -> sqlite3.Connection:
        # Switching a new database to WAL needs a moment alone; workers starting together
        # may see "database is locked" (no busy handler there), so retry briefly.
        for attempt in range(50):
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.root / INDEX_NAME, timeout=60.0)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
                conn.commit()
                return conn
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == 49:
                    raise CacheError(f"cannot open the cache index: {err}", file=self.root) from err
                time.sleep(0.02 * (attempt + 1))
            except (OSError, sqlite3.Error) as err:
                raise CacheError(f"cannot open the cache index: {err}", file=self.root) from err
        raise AssertionError("unreachable")  # pragma: no cover

    def open(self) -> None:
        """Create/open the index now (before forking workers, so they find it ready)."""
        self._db()

    def _lookup(self, key: str) -> _Row | None:
        if self._pending is not None and key in self._pending:
            return self._pending[key]
        row = (
            self._db()
            .execute("SELECT key, sha256, metadata, cost_usd FROM entries WHERE key = ?", (key,))
            .fetchone()
        )
        return None if row is None else (row[0], row[1], row[2], row[3])

    def _read_object(self, sha256: str) -> bytes | None:
        path = self.object_path(sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if sha256_hex(data) != sha256:
            log.warning("corrupt cache object %s: regenerating", path)
            path.unlink(missing_ok=True)
            return None
        return data

    def _write_object(self, data: bytes) -> str:
        sha = sha256_hex(data)
        path = self.object_path(sha)
        if not path.is_file() or self._read_object(sha) is None:
            atomic_write_bytes(path, data)
        return sha

    def _store(self, row: _Row) -> None:
        if self._pending is not None:
            self._pending[row[0]] = row
            return
        db = self._db()
        with db:
            db.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)", row)

    # --- API ---------------------------------------------------------------------------

    def get(
        self, key: str, compute: Callable[[], GenerationResult]
    ) -> tuple[GenerationResult, bool]:
        """The cached result for ``key``, or ``compute()``'s, stored; plus whether it was a hit."""
        row = self._lookup(key)
        if row is not None:
            data = self._read_object(row[1])
            if data is not None:
                meta: dict[str, Any] = loads_json(row[2], file=self.root / INDEX_NAME)
                return GenerationResult(png=data, metadata=meta, cost_usd=row[3]), True
        result = compute()
        sha = self._write_object(result.png)
        meta_text = json.dumps(dict(result.metadata), sort_keys=True, ensure_ascii=False)
        self._store((key, sha, meta_text, result.cost_usd))
        return result, False

    def __contains__(self, key: str) -> bool:
        row = self._lookup(key)
        return row is not None and self.object_path(row[1]).is_file()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Collect index writes and commit them in one transaction at the end."""
        self._db()
        loc = self._local
        if loc.depth == 0:
            self._pending = {}
        loc.depth += 1
        try:
            yield
        finally:
            loc.depth -= 1
            if loc.depth == 0:
                rows, self._pending = list((self._pending or {}).values()), None
                if rows:
                    db = self._db()
                    with db:
                        db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)", rows)

    def __len__(self) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def close(self) -> None:
        """Close this process's connection (safe to call twice)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            conn.close()
        self._local.conn = None
