"""The embedding cache: ``CACHE/embeddings.sqlite`` beside the generation and judge caches.

A vector is stored under ``vector_key(model_ident, kind, sha256)``: sha256 over the canonical
JSON of the model's identity (``hub:NAME@COMMIT`` or ``dir:SHA256``, see
``vsb.evaluators.embed.models``), what was embedded (``image`` or ``text``) and the sha256 of
the image file's bytes or of the UTF-8 text. Vectors are unit-norm float32, stored as raw
little-endian bytes with their dimension, so a rerun computes nothing. A row is sealed
(``vector_seal``: sha256 over its key, model, kind, dimension and bytes), so a well-formed
vector moved to another key fails its check on read: it is dropped, logged in
``failed_checks`` (``failed_checks`` counts this cache's drops) and computed again. Rows
stored before seals (``seal`` NULL) are sealed once, when the cache is first opened
(``vsb.store.seals``, recorded in its ``meta`` table); after it a row without a seal is
damaged: never served, dropped and computed again.

A model directory's digest (sha256 over its files' names and contents) is memoized by the
files' sizes and modification times, so a large checkpoint is hashed once.

``Embedder`` embeds distinct images and texts through the cache (the next batch decoded
while the model runs), counting what it computed.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from vsb.errors import CacheError, InputError
from vsb.fsio import canonical_json, sha256_file, sha256_hex
from vsb.store.seals import migrate_seals, report_damaged

CACHE_NAME = "embeddings.sqlite"
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS vectors (
        key TEXT PRIMARY KEY, model TEXT NOT NULL, kind TEXT NOT NULL, dim INTEGER NOT NULL,
        data BLOB NOT NULL, seal TEXT)""",
    """CREATE TABLE IF NOT EXISTS dirs (
        path TEXT PRIMARY KEY, stat TEXT NOT NULL, digest TEXT NOT NULL)""",
    "CREATE TABLE IF NOT EXISTS failed_checks (key TEXT NOT NULL, at REAL NOT NULL)",
)
_CHUNK = 500  # SQLite host parameters per query


def vector_key(model_ident: str, kind: str, sha256: str) -> str:
    """The cache key of one embedding."""
    return sha256_hex(canonical_json({"model": model_ident, "kind": kind, "sha256": sha256}))


def vector_seal(key: str, model_ident: str, kind: str, dim: int, data: bytes) -> str:
    """What binds a stored vector to its key (checked on every read)."""
    head = canonical_json([key, model_ident, kind, dim])
    return hashlib.sha256(head + b"\x00" + data).hexdigest()


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
                if "seal" not in {r[1] for r in self._db.execute("PRAGMA table_info(vectors)")}:
                    self._db.execute("ALTER TABLE vectors ADD COLUMN seal TEXT")
            migrate_seals(self._db, "vectors", ("key", "model", "kind", "dim", "data"), vector_seal)
            #: rows this instance dropped for failing their check
            self.failed_checks = 0
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
                q = f"SELECT key, model, kind, dim, data, seal FROM vectors WHERE key IN ({marks})"
                failed: list[tuple[str, str | None]] = []
                for key, model, kind, dim, data, seal in self._db.execute(q, part):
                    if not (isinstance(data, bytes) and len(data) == 4 * int(dim) > 0):
                        continue
                    if seal is None or seal != vector_seal(key, model, kind, dim, data):
                        failed.append((key, seal))  # no seal after the migration: damaged
                        continue
                    out[key] = np.frombuffer(data, dtype="<f4").astype(np.float32)
                self._drop(failed)
        except sqlite3.Error as err:
            raise CacheError(f"cannot read the embedding cache: {err}", file=self.path) from None
        return out

    def _drop(self, failed: list[tuple[str, str | None]]) -> None:
        """Delete rows that failed their check and log them."""
        if not failed:
            return
        with self._db:
            for key, seal in failed:
                report_damaged(self.path, key, seal, "computing again")
                q = "DELETE FROM vectors WHERE key = ? AND seal IS ?"
                if self._db.execute(q, (key, seal)).rowcount:
                    self._db.execute("INSERT INTO failed_checks VALUES (?, ?)", (key, time.time()))
                    self.failed_checks += 1

    def put_many(
        self, model_ident: str, kind: str, items: Iterable[tuple[str, NDArray[np.float32]]]
    ) -> None:
        """Store ``(key, vector)`` pairs (one transaction, committed before returning)."""
        rows = []
        for key, v in items:
            data = np.asarray(v, dtype="<f4").tobytes()
            dim = int(v.shape[0])
            rows.append((key, model_ident, kind, dim, data,
                         vector_seal(key, model_ident, kind, dim, data)))  # fmt: skip
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, model, kind, dim, data, seal) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
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


Vectors = NDArray[np.float32]


def sha_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_images(sequences: Sequence[Any]) -> dict[str, str]:
    """path -> sha256 of its bytes, for every image of the sequences."""
    out: dict[str, str] = {}
    for seq in sequences:
        for _, path in seq.images:
            if path is not None and path not in out:
                try:
                    out[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                except OSError as err:
                    raise InputError(f"cannot read image: {err.strerror}", file=path) from None
    return out


def _open_rgb(path: str) -> Image.Image:
    """The image at ``path`` as RGB (``vsb evaluate`` hands the embedding phase no
    unreadable image; ``InputError`` if one still comes, under the same pixel cap)."""
    from vsb.evaluators.render.decode import open_rgb  # scipy: only when embedding

    return open_rgb(path)


def _prefetched(
    chunks: list[list[str]], prepare: Callable[[list[str]], Any]
) -> Iterator[tuple[list[str], Any]]:
    """``(chunk, prepare(chunk))`` in order, preparing the next chunk while the caller works."""
    if not chunks:
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(prepare, chunks[0])
        for i, chunk in enumerate(chunks):
            ready = pending.result()
            if i + 1 < len(chunks):
                pending = pool.submit(prepare, chunks[i + 1])
            yield chunk, ready


@dataclass
class Embedder:
    """Embeds distinct images and texts through the cache, counting what it computed."""

    encoder: Any  # an Encoder (vsb.evaluators.embed.models) or a remote one
    cache: EmbeddingCache
    batch_size: int
    progress: Callable[[int], None] = lambda _n: None
    computed: int = 0
    cached: int = 0
    texts_seen: int = 0
    texts_computed: int = 0

    def images(self, by_path: dict[str, str]) -> dict[str, Vectors]:
        """sha256 -> unit vector of every image (``by_path``: path -> sha256)."""
        enc = self.encoder
        first_path: dict[str, str] = {}
        for path, sha in sorted(by_path.items()):
            first_path.setdefault(sha, path)
        keys = {sha: vector_key(enc.ident, "image", sha) for sha in first_path}
        hits = self.cache.get_many(list(keys.values()))
        out = {sha: hits[k] for sha, k in keys.items() if k in hits}
        self.cached += len(out)
        self.progress(len(out))
        todo = sorted(sha for sha in first_path if sha not in out)
        chunks = [todo[i : i + self.batch_size] for i in range(0, len(todo), self.batch_size)]

        def prepare(shas: list[str]) -> Any:
            return enc.image_arrays([_open_rgb(first_path[s]) for s in shas])

        for shas, pixels in _prefetched(chunks, prepare):
            new = dict(zip(shas, enc.image_vectors(enc.to_inputs(pixels)), strict=True))
            self.cache.put_many(enc.ident, "image", ((keys[s], v) for s, v in new.items()))
            out.update(new)
            self.computed += len(shas)
            self.progress(len(shas))
        return out

    def texts(self, texts: Sequence[str]) -> dict[str, Vectors]:
        """text -> unit vector of every distinct text."""
        enc = self.encoder
        keys = {t: vector_key(enc.ident, "text", sha_text(t)) for t in dict.fromkeys(texts)}
        hits = self.cache.get_many(list(keys.values()))
        out = {t: hits[k] for t, k in keys.items() if k in hits}
        self.texts_seen += len(keys)
        todo = [t for t in keys if t not in out]
        for i in range(0, len(todo), self.batch_size):
            part = todo[i : i + self.batch_size]
            new = dict(zip(part, enc.texts(part), strict=True))
            self.cache.put_many(enc.ident, "text", ((keys[t], v) for t, v in new.items()))
            out.update(new)
            self.texts_computed += len(part)
        return out
