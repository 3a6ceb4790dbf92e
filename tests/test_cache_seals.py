"""A cleared seal is a damaged row, never a row from before seals (issue 45, item 5).

Rows written before seals existed are sealed once, when the cache is first opened, and that is
recorded in its ``meta`` table; after it a row whose seal is NULL (a value edited or swapped and
its seal cleared) is not served: it is dropped, counted in ``failed_checks``, reported in one
line naming the cache and the key, and computed again. For the three sealed caches: the
generation index, the judge's answers and the embeddings."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from vsb.adapters.base import GenerationResult
from vsb.evaluators.embed.cache import CACHE_NAME as EMBEDDINGS
from vsb.evaluators.embed.cache import EmbeddingCache
from vsb.evaluators.vlm.store import CACHE_NAME as JUDGE
from vsb.evaluators.vlm.store import JudgeCache
from vsb.evaluators.vlm.transports import JudgeReply
from vsb.store.cache import INDEX_NAME, GenerationCache


def _png(i: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + i.to_bytes(4, "big") * 8


def _sql(db_path: Path, *stmts: str) -> None:
    db = sqlite3.connect(db_path)
    try:
        with db:
            for stmt in stmts:
                db.execute(stmt)
    finally:
        db.close()


def _one(db_path: Path, query: str) -> object:
    db = sqlite3.connect(db_path)
    try:
        return db.execute(query).fetchone()[0]
    finally:
        db.close()


def _reported(caplog: pytest.LogCaptureFixture, cache: Path, key: str) -> bool:
    return any(
        str(cache) in r.getMessage() and key in r.getMessage() and "no seal" in r.getMessage()
        for r in caplog.records
    )


def _generation(root: Path, key: str, i: int) -> tuple[bytes, bool]:
    cache = GenerationCache(root)
    try:
        got, hit = cache.get(key, lambda: GenerationResult(_png(i), {"i": i}))
        return got.png, hit
    finally:
        cache.close()


def test_a_cleared_generation_seal_is_not_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    index = tmp_path / INDEX_NAME
    assert _generation(tmp_path, "k", 1) == (_png(1), False)
    # another image moved under the key, its seal cleared: the seal check must not switch off
    _generation(tmp_path, "other", 2)
    other = _one(index, "SELECT sha256 FROM entries WHERE key = 'other'")
    _sql(index, f"UPDATE entries SET sha256 = '{other}', seal = NULL WHERE key = 'k'")
    with caplog.at_level(logging.DEBUG, logger="vsb"):
        assert _generation(tmp_path, "k", 1) == (_png(1), False)  # recomputed, not the other
    assert _reported(caplog, index, "k")
    assert _one(index, "SELECT COUNT(*) FROM failed_checks") == 1
    assert _one(index, "SELECT COUNT(*) FROM entries WHERE seal IS NULL") == 0
    assert _generation(tmp_path, "k", 9) == (_png(1), True)  # stored again, sealed


def test_generation_rows_from_before_seals_are_migrated_once(tmp_path: Path) -> None:
    index = tmp_path / INDEX_NAME
    _generation(tmp_path, "k", 1)
    # the index as a vsb without seals left it: no seal column, no record of a migration
    _sql(index, "ALTER TABLE entries DROP COLUMN seal", "DROP TABLE meta")
    assert _generation(tmp_path, "k", 9) == (_png(1), True)  # served: sealed on opening
    assert _one(index, "SELECT value FROM meta WHERE name = 'seals:entries'") == "1 rows sealed"
    assert _one(index, "SELECT COUNT(*) FROM failed_checks") == 0
    _sql(index, "UPDATE entries SET seal = NULL")  # after the migration: damaged
    assert _generation(tmp_path, "k", 2) == (_png(2), False)


def test_a_cleared_judge_seal_is_not_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = JudgeCache(tmp_path)
    cache.put("k", "sim", JudgeReply("1: NO", 10, 2))
    cache.close()
    _sql(tmp_path / JUDGE, "UPDATE answers SET text = '1: YES', seal = NULL")
    cache = JudgeCache(tmp_path)
    with caplog.at_level(logging.DEBUG, logger="vsb"):
        assert cache.lookup("k") is None
    assert cache.failed_checks() == 1
    cache.close()
    assert _reported(caplog, tmp_path / JUDGE, "k")
    # from before seals: migrated once, served
    cache = JudgeCache(tmp_path)
    cache.put("k", "sim", JudgeReply("1: NO", 10, 2))
    cache.close()
    _sql(tmp_path / JUDGE, "UPDATE answers SET seal = NULL", "DROP TABLE meta")
    cache = JudgeCache(tmp_path)
    assert cache.lookup("k") == JudgeReply("1: NO", 10, 2)
    cache.close()


def test_a_cleared_embedding_seal_is_not_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with EmbeddingCache(tmp_path) as cache:
        cache.put_many("m", "image", [("k", np.ones(4, dtype=np.float32))])
    _sql(tmp_path / EMBEDDINGS, "UPDATE vectors SET data = zeroblob(16), seal = NULL")
    with EmbeddingCache(tmp_path) as cache, caplog.at_level(logging.DEBUG, logger="vsb"):
        assert cache.get_many(["k"]) == {}
        assert cache.failed_checks == 1
    assert _reported(caplog, tmp_path / EMBEDDINGS, "k")
    with EmbeddingCache(tmp_path) as cache:  # from before seals: migrated once, served
        cache.put_many("m", "image", [("k", np.ones(4, dtype=np.float32))])
    _sql(tmp_path / EMBEDDINGS, "UPDATE vectors SET seal = NULL", "DROP TABLE meta")
    with EmbeddingCache(tmp_path) as cache:
        assert list(cache.get_many(["k"])["k"]) == [1.0] * 4
