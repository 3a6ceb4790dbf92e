"""Decode and extract each distinct image once: the extractor is a pure function of the
image's bytes and the class names it is told (``EntityVocabulary``).

A release renders many byte-identical images — the procedural oracle draws the truth under
every condition, a model that ignores its context draws the same frames under several, and
the suite variants repeat the plain images — so the frames stage keys its work by content:

- ``ExtractionMemo.decode(data, sha256)``: the decoded image of these bytes, the last
  ``PLANES`` kept (a plane is 256 KiB);
- ``ExtractionMemo.extract(sha256, image, counts, vocab)``: the ``DetectedState`` of these
  bytes told this vocabulary, kept for the memo's life, and, when the memo has a cache
  directory, on disk under ``extraction_key(sha256, vocab)``: sha256 over the canonical
  JSON of the image's digest, the vocabulary and ``extractor_fingerprint()`` (the source of
  every module the extraction runs), so changed extractor code never reads an old answer.
  An entry that cannot be read back (truncated, not JSON, another shape) is recomputed and
  rewritten; writes go to a temp file and are renamed, so concurrent workers are safe.

The memo counts what it computed and what it found (``stats``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter, OrderedDict
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
from vsb.fsio import atomic_write_bytes, canonical_json, sha256_hex

#: Decoded planes a memo keeps (the most recently used).
PLANES = 64
#: Where a build's extraction cache lives under its cache directory.
CACHE_SUBDIR = "extractions"
#: Bumped when the stored form of an entry changes.
FORMAT = 1
#: The modules whose code decides an extraction (decoding included).
MODULES = (extractor, decode, detected, objects, people, robust, style)


@lru_cache(maxsize=1)
def extractor_fingerprint() -> str:
    """sha256 over the source of ``MODULES`` (and the stored format)."""
    h = hashlib.sha256(f"format {FORMAT}\n".encode())
    for mod in MODULES:
        h.update(mod.__name__.encode() + b"\n")
        h.update(Path(str(mod.__file__)).read_bytes())
    return h.hexdigest()


def extraction_key(sha256: str, vocab: EntityVocabulary, fingerprint: str) -> str:
    """The cache key of one extraction."""
    return sha256_hex(
        canonical_json(
            {"image": sha256, "vocab": dataclasses.asdict(vocab), "extractor": fingerprint}
        )
    )


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
    """Decodings and extractions by image content (see the module docstring)."""

    def __init__(self, cache_dir: str | Path | None = None, planes: int = PLANES) -> None:
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.planes = planes
        self.stats: Counter[str] = Counter()
        self._decoded: OrderedDict[str, DecodedImage] = OrderedDict()
        self._states: dict[tuple[str, EntityVocabulary], DetectedState] = {}

    def decode(self, data: bytes, sha256: str) -> DecodedImage:
        """``decode_render(data)``, once per content while it is kept; an image that cannot
        be read raises ``InputError`` (each time: such images are rare)."""
        got = self._decoded.get(sha256)
        if got is not None:
            self._decoded.move_to_end(sha256)
            self.stats["decode_hits"] += 1
            return got
        got = decode_render(data)
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
        path = self._path(sha256, vocab)
        got = self._load(path) if path is not None else None
        if got is not None:
            self.stats["disk_hits"] += 1
        else:
            got = extractor.extract(image, vocab, counts)
            self.stats["extracted"] += 1
            if path is not None:
                atomic_write_bytes(path, canonical_json(dataclasses.asdict(got)))
        self._states[(sha256, vocab)] = got
        return got

    def _path(self, sha256: str, vocab: EntityVocabulary) -> Path | None:
        if self.cache_dir is None:
            return None
        key = extraction_key(sha256, vocab, extractor_fingerprint())
        return self.cache_dir / key[:2] / f"{key}.json"

    def _load(self, path: Path) -> DetectedState | None:
        try:
            return _state(json.loads(path.read_bytes()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, KeyError):
            self.stats["corrupt"] += 1  # recomputed and rewritten by the caller
            return None
