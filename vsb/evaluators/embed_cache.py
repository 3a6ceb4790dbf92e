"""The embedding cache: ``CACHE/embeddings.sqlite`` beside the generation and judge caches.

A vector is stored under ``vector_key(model_ident, kind, sha256)``: sha256 over the canonical
JSON of the model's identity (``hub:NAME@COMMIT`` or ``dir:SHA256``, see
``vsb.evaluators.embed_models``), what was embedded (``image`` or ``text``) and the sha256 of
the image file's bytes or of the UTF-8 text. Vectors are unit-norm float32, stored as raw
little-endian bytes with their dimension, so a rerun computes nothing.

A model directory's digest (sha256 over its files' names and contents) is memoized by the
files' sizes and modification times, so a large checkpoint is hashed once.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from vsb.errors import CacheError
from vsb.fsio import canonical_json, sha256_file, sha256_hex

CACHE_NAME = "embeddings.sqlite"
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS vectors (
        key TEXT PRIMARY KEY, model TEXT NOT NULL, kind TEXT NOT NULL, dim INTEGER NOT NULL,
        data BLOB NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS dirs (
        path TEXT PRIMARY KEY, stat TEXT NOT NULL, digest TEXT NOT NULL)""",
)
_CHUNK = 500  # SQLite host parameters per query


def vector_key(model_ident: str, kind: str, sha256: str) -> str:
    """The cache key of one embedding."""
    return sha256_hex(canonical_json({"model": model_ident, "kind": kind, "sha256": sha256}))


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


class EmbeddingCache:
    """Embeddings by key, in SQLite (WAL); use as a context manager or call ``close``."""

    def __init__(self, root: str | Path) -> None:
        self.path = Path(root) / CACHE_NAME
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._db:
                for stmt in _SCHEMA:
                    self._db.execute(stmt)
        except (OSError, sqlite3.Error) as err:
            raise CacheError(f"cannot open the embedding cache: {err}", file=self.path) from None

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def get_many(self, keys: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """The cached vectors among ``keys`` (missing or damaged entries are left out)."""
        out: dict[str, NDArray[np.float32]] = {}
        try:
            for i in range(0, len(keys), _CHUNK):
                part = list(keys[i : i + _CHUNK])
                marks = ",".join("?" * len(part))
                q = f"SELECT key, dim, data FROM vectors WHERE key IN ({marks})"
                for key, dim, data in self._db.execute(q, part):
                    if isinstance(data, bytes) and len(data) == 4 * int(dim) > 0:
                        out[key] = np.frombuffer(data, dtype="<f4").astype(np.float32)
        except sqlite3.Error as err:
            raise CacheError(f"cannot read the embedding cache: {err}", file=self.path) from None
        return out

    def put_many(
        self, model_ident: str, kind: str, items: Iterable[tuple[str, NDArray[np.float32]]]
    ) -> None:
        """Store ``(key, vector)`` pairs (one transaction, committed before returning)."""
        rows = [
            (key, model_ident, kind, int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes())
            for key, v in items
        ]
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)
        except sqlite3.Error as err:
            raise CacheError(f"cannot write the embedding cache: {err}", file=self.path) from None

    def count(self, model_ident: str | None = None) -> int:
        """Vectors stored (for one model, or all)."""
        if model_ident is None:
            row = self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()
        else:
            q = "SELECT COUNT(*) FROM vectors WHERE model = ?"
            row = self._db.execute(q, (model_ident,)).fetchone()
        return int(row[0])

    def dir_digest(self, root: Path) -> str:
        """sha256 over a directory's file names and contents, memoized by size and mtime."""
        root = root.resolve()
        files = _files(root)
        stats = []
        for p in files:
            st = os.stat(p)
            stats.append([p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns])
        stat = sha256_hex(canonical_json(stats))
        try:
            row = self._db.execute(
                "SELECT digest FROM dirs WHERE path = ? AND stat = ?", (str(root), stat)
            ).fetchone()
            if row is not None:
                return str(row[0])
            listing = [[p.relative_to(root).as_posix(), sha256_file(p)] for p in files]
            digest = sha256_hex(canonical_json(listing))
            with self._db:
                self._db.execute(
                    "INSERT OR REPLACE INTO dirs VALUES (?, ?, ?)", (str(root), stat, digest)
                )
        except sqlite3.Error as err:
            raise CacheError(f"cannot use the embedding cache: {err}", file=self.path) from None
        return digest
