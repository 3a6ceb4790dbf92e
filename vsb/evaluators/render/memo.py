"""Decode and extract each distinct image once: the extractor is a pure function of the
image's bytes and the class names it is told (``EntityVocabulary``).

A release renders many byte-identical images — the procedural oracle draws the truth under
every condition, a model that ignores its context draws the same frames under several, and
the suite variants repeat the plain images — so the frames stage keys its work by content:

- ``ExtractionMemo.decode(data, sha256)``: the decoded image of these bytes, the last
  ``PLANES`` kept (a plane is 256 KiB; read-only, as frames of equal bytes share it);
- ``ExtractionMemo.extract(sha256, image, counts, vocab)``: the ``DetectedState`` of these
  bytes told this vocabulary, kept for the memo's life and, when the memo has a cache
  directory, in ``DIR/extractions.sqlite`` under ``extraction_key(sha256, vocab)``: sha256
  over the canonical JSON of the image's digest, the vocabulary's and
  ``extractor_fingerprint()`` (the source of every module the extraction runs and the
  versions of numpy, SciPy and Pillow), so changed extractor code never reads an old
  answer. New entries are written in one transaction by
  ``close()``; an entry that cannot be read back (not JSON, another shape) is recomputed
  and replaced, and a database that cannot be opened or read is left alone (everything is
  computed, nothing stored). An entry carries what it was computed from and is checked
  against its key before use: its data is a seal (sha256 of the key and the stored JSON,
  64 hex digits) then the JSON ``{"image": sha256, "vocab": digest, "state": …}``; one
  whose seal or image is not its key's (rows shuffled between keys, a value edited) counts
  as ``failed_check`` (and is logged in the database's ``failed_checks`` table, so a command
  running several evaluations can count them) and is recomputed and replaced;
- ``ExtractionMemo.keep(name, sha256, compute)``: any other value derived from the bytes
  alone (pairwise's histograms), for the memo's life.

The memo counts what it computed and what it found (``stats``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vsb.evaluators import extractor
from vsb.evaluators.render import decode, detected, objects, people, robust, style
from vsb.evaluators.render.decode import DecodedImage, decode_render
from vsb.evaluators.render.detected import (
    DetectedObject,
    DetectedPerson,
    DetectedState,
    EntityVocabulary,
)
from vsb.fsio import canonical_json, sha256_hex
from vsb.story import vocab as story_vocab

#: Decoded planes a memo keeps (the most recently used).
PLANES = 64
#: The extraction cache's file in its directory.
CACHE_NAME = "extractions.sqlite"
#: Bumped when the stored form of an entry changes.
FORMAT = 2
#: What ``ExtractionMemo.stats`` counts.
STATS = (
    "decoded", "decode_hits", "extracted", "extract_hits", "disk_hits", "corrupt", "failed_check"
)  # fmt: skip
#: The modules whose code decides an extraction (decoding included; the colours come from
#: the story vocabulary).
MODULES = (extractor, decode, detected, objects, people, robust, style, story_vocab)


@lru_cache(maxsize=1)
def extractor_fingerprint() -> str:
    """sha256 over the source of ``MODULES``, the versions of the libraries they call and
    the stored format."""
    import PIL
    import scipy

    libs = f"numpy {np.__version__} scipy {scipy.__version__} pillow {PIL.__version__}"
    h = hashlib.sha256(f"format {FORMAT}\n{libs}\n".encode())
    for mod in MODULES:
        h.update(mod.__name__.encode() + b"\n")
        h.update(Path(str(mod.__file__)).read_bytes())
    return h.hexdigest()


@lru_cache(maxsize=64)
def _vocab_digest(vocab: EntityVocabulary) -> str:
    return sha256_hex(canonical_json(dataclasses.asdict(vocab)))


def extraction_key(sha256: str, vocab: EntityVocabulary, fingerprint: str) -> str:
    """The cache key of one extraction."""
    parts = {"image": sha256, "vocab": _vocab_digest(vocab), "extractor": fingerprint}
    return sha256_hex(canonical_json(parts))


def _stored(key: str, sha256: str, vocab: EntityVocabulary, state: DetectedState) -> bytes:
    """The stored row of a ``DetectedState`` (``dataclasses.asdict`` is ten times slower):
    its seal, then the JSON of what it was computed from and the state."""
    body = canonical_json({"image": sha256, "vocab": _vocab_digest(vocab), "state": {
        "people": [vars(p) for p in state.people],
        "objects": [vars(o) for o in state.objects],
        "location": state.location, "time": state.time, "weather": state.weather,
    }})  # fmt: skip
    return _seal(key, body) + body


def _seal(key: str, body: bytes) -> bytes:
    return sha256_hex(key.encode() + b"\x00" + body).encode()


class FailedCheck(ValueError):
    """A well-formed entry that is not its key's."""


def _unsealed(key: str, sha256: str, data: bytes) -> Any:
    """The stored state JSON of a row, checked against its key (``FailedCheck``) and
    parsed (``ValueError``/``TypeError`` when it has another shape)."""
    if not isinstance(data, bytes):
        raise TypeError("not bytes")
    seal, body = data[:64], data[64:]
    obj = json.loads(body)
    if seal != _seal(key, body) or not isinstance(obj, dict) or obj.get("image") != sha256:
        raise FailedCheck(key)
    return obj["state"]


def _state(obj: Any) -> DetectedState:
    """A ``DetectedState`` from its stored JSON (``ValueError``/``TypeError``/``KeyError``
    when it has another shape)."""
    if not isinstance(obj, dict):
        raise TypeError("not an object")
    return DetectedState(
        people=tuple(DetectedPerson(**p) for p in obj["people"]),
        objects=tuple(DetectedObject(**o) for o in obj["objects"]),
        location=obj["location"],
        time=obj["time"],
        weather=obj["weather"],
    )


class ExtractionMemo:
    """Decodings and extractions by image content (see the module docstring); call
    ``close()`` to store new extractions (a context manager does)."""

    def __init__(self, cache_dir: str | Path | None = None, planes: int = PLANES) -> None:
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.planes = planes
        self.stats: Counter[str] = Counter(dict.fromkeys(STATS, 0))
        self._decoded: OrderedDict[str, DecodedImage] = OrderedDict()
        self._states: dict[tuple[str, EntityVocabulary], DetectedState] = {}
        self._kept: dict[tuple[str, str], Any] = {}
        self._db: sqlite3.Connection | None = None
        self._new: dict[str, bytes] = {}
        self._failed: list[str] = []

    def __enter__(self) -> ExtractionMemo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def decode(self, data: bytes, sha256: str) -> DecodedImage:
        """``decode_render(data)``, once per content while it is kept; an image that cannot
        be read raises ``InputError`` (each time: such images are rare)."""
        got = self._decoded.get(sha256)
        if got is not None:
            self._decoded.move_to_end(sha256)
            self.stats["decode_hits"] += 1
            return got
        got = decode_render(data)
        # shared by every frame of these bytes
        for arr in (got.indices, got.counts, got.band_counts):
            if arr is not None:
                arr.setflags(write=False)
        self.stats["decoded"] += 1
        self._decoded[sha256] = got
        if len(self._decoded) > self.planes:
            self._decoded.popitem(last=False)
        return got

    def extract(
        self,
        sha256: str,
        image: NDArray[np.uint8],
        counts: NDArray[np.intp] | None,
        vocab: EntityVocabulary,
    ) -> DetectedState:
        """``extractor.extract(image, vocab, counts)`` of the image whose bytes have this
        digest: from the memo, else the disk cache, else computed (and stored)."""
        got = self._states.get((sha256, vocab))
        if got is not None:
            self.stats["extract_hits"] += 1
            return got
        key = ""
        if self.cache_dir is not None:
            key = extraction_key(sha256, vocab, extractor_fingerprint())
        got = self._load(key, sha256) if key else None
        if got is not None:
            self.stats["disk_hits"] += 1
        else:
            got = extractor.extract(image, vocab, counts)
            self.stats["extracted"] += 1
            if key:
                self._new[key] = _stored(key, sha256, vocab, got)
        self._states[(sha256, vocab)] = got
        return got

    def keep(
        self, name: str, sha256: str, compute: Callable[[], Any], hit: str | None = None
    ) -> Any:
        """``compute()``, once per (``name``, content) for the memo's life; a repeat counts
        in ``stats[hit]`` when given (the rule checks of a repeated picture, made from its
        extraction: an ``extract_hits``)."""
        k = (name, sha256)
        if k not in self._kept:
            self._kept[k] = compute()
        elif hit is not None:
            self.stats[hit] += 1
        return self._kept[k]

    def close(self) -> None:
        """Store the new extractions (one transaction) and close the database."""
        db = self._connect() if self._new else self._db
        try:
            if db is not None and self._new:
                with db:
                    db.executemany(
                        "INSERT OR REPLACE INTO extractions (key, data) VALUES (?, ?)",
                        list(self._new.items()),
                    )
                    db.executemany(
                        "INSERT INTO failed_checks (key, at) VALUES (?, ?)",
                        [(k, time.time()) for k in self._failed],
                    )
        except sqlite3.Error:
            self.stats["corrupt"] += 1  # not stored: computed again next time
        finally:
            self._new.clear()
            self._failed.clear()
            if db is not None:
                db.close()
            self._db = None

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and self.cache_dir is not None:
            path = self.cache_dir / CACHE_NAME
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(path, timeout=60.0)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                with db:
                    db.execute(
                        "CREATE TABLE IF NOT EXISTS extractions "
                        "(key TEXT PRIMARY KEY, data BLOB NOT NULL)"
                    )
                    db.execute(
                        "CREATE TABLE IF NOT EXISTS failed_checks (key TEXT NOT NULL, at REAL)"
                    )
            except (OSError, sqlite3.Error):
                self.stats["corrupt"] += 1
                self.cache_dir = None  # a database that cannot be used: no disk cache
                return None
            self._db = db
        return self._db

    def _load(self, key: str, sha256: str) -> DetectedState | None:
        db = self._connect()
        if db is None:
            return None
        try:
            row = db.execute("SELECT data FROM extractions WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            self.stats["corrupt"] += 1
            return None
        if row is None:
            return None
        try:
            return _state(_unsealed(key, sha256, row[0]))
        except FailedCheck:
            self.stats["failed_check"] += 1  # another key's values: recomputed and replaced
            self._failed.append(key)
            return None
        except (ValueError, TypeError, KeyError):
            self.stats["corrupt"] += 1  # recomputed and replaced
            return None
