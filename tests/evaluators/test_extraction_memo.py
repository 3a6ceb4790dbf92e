"""Each distinct image is decoded and extracted once (``vsb.evaluators.render.memo``)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.evaluators.test_evaluate import make_run
from vsb.evaluators import extractor
from vsb.evaluators.evaluate import evaluate_run
from vsb.evaluators.interface import FrameSequence
from vsb.evaluators.machinery import evaluate_group, evaluate_task
from vsb.evaluators.render import memo as memo_mod
from vsb.evaluators.render.decode import decode_render
from vsb.evaluators.render.detected import EntityVocabulary
from vsb.evaluators.render.memo import CACHE_NAME, ExtractionMemo, extractor_fingerprint
from vsb.fsio import sha256_hex
from vsb.story.models import Story
from vsb.tables import iter_rows

CONDITIONS = ("independent", "full_context", "summary")


def _run_with_repeats(root: Path, stories: list[Story]) -> Path:
    """A run whose images under every condition are the same bytes (as the oracle's are)."""
    make_run(root, stories)
    records = [json.loads(line) for line in (root / "records.jsonl").read_text().splitlines()]
    out = []
    for cond in CONDITIONS:
        for rec in records:
            rel = rec["path"].replace("/independent/", f"/{cond}/")
            if cond != "independent":
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(root / rec["path"], root / rel)
            out.append({**rec, "condition": cond, "path": rel, "key": rel})
    (root / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out))
    manifest = json.loads((root / "manifest.json").read_text())
    (root / "manifest.json").write_text(json.dumps({**manifest, "conditions": list(CONDITIONS)}))
    return root


@pytest.fixture
def stories(default_suite: list[Story]) -> list[Story]:
    return [s for s in default_suite if s.difficulty != "hard"][:2]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Calls of the extractor (in this process)."""
    calls: list[int] = []
    real = extractor.extract

    def extract(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(extractor, "extract", extract)
    return calls


def _table(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in iter_rows(path)]


def test_identical_images_are_extracted_once(
    tmp_path: Path, stories: list[Story], counted: list[int]
) -> None:
    run = _run_with_repeats(tmp_path / "run", stories)
    distinct = sum(len(s.scenes) for s in stories)
    result = evaluate_run(run, evaluators=("rules",))
    assert len(counted) == distinct
    assert result.extraction["extracted"] == distinct
    assert result.extraction["extract_hits"] == distinct * (len(CONDITIONS) - 1)
    assert result.extraction["decode_hits"] == distinct * (len(CONDITIONS) - 1)


def test_memoised_rows_equal_the_unmemoised_ones(stories: list[Story], tmp_path: Path) -> None:
    run = _run_with_repeats(tmp_path / "run", stories)
    for story in stories:
        tasks = [
            FrameSequence("truth", c, story.id, tuple(
                (sc.index, str(run / f"images/truth/{c}/{story.id}/scene_{sc.index:02d}.png"))
                for sc in story.scenes
            ))
            for c in CONDITIONS
        ]  # fmt: skip
        names = ("rules", "pairwise")
        plain = [evaluate_task(story, names, t) for t in tasks]
        memoised, stats = evaluate_group(story, names, tasks)
        assert [o.out for o in memoised] == [o.out for o in plain]
        assert stats["extracted"] == len(story.scenes)


def test_the_pool_and_the_disk_cache_write_the_same_tables(
    tmp_path: Path, stories: list[Story]
) -> None:
    plain = _run_with_repeats(tmp_path / "plain", stories)
    pooled = _run_with_repeats(tmp_path / "pooled", stories)
    evaluate_run(plain)
    cache = tmp_path / "extractions"
    first = evaluate_run(pooled, workers=2, extraction_cache=cache)
    assert first.extraction["disk_hits"] == 0
    for name in ("requirements.parquet", "signals.parquet"):
        assert _table(pooled / "evaluations" / name) == _table(plain / "evaluations" / name)
    again = evaluate_run(pooled, workers=2, extraction_cache=cache)  # another evaluation
    assert again.extraction["extracted"] == 0
    assert again.extraction["disk_hits"] == sum(len(s.scenes) for s in stories)
    assert _table(pooled / "evaluations" / "requirements.parquet") == _table(
        plain / "evaluations" / "requirements.parquet"
    )


@pytest.fixture
def image(stories: list[Story], tmp_path: Path) -> tuple[bytes, EntityVocabulary]:
    run = make_run(tmp_path / "one", stories[:1])
    png = (run / f"images/truth/independent/{stories[0].id}/scene_01.png").read_bytes()
    return png, EntityVocabulary.from_world(stories[0].world)


def _extract(m: ExtractionMemo, png: bytes, voc: EntityVocabulary) -> Any:
    d = decode_render(png)
    assert d.indices is not None
    with m:
        return m.extract(sha256_hex(png), d.indices, d.counts, voc)


def test_the_disk_cache_answers_another_memo(
    tmp_path: Path, image: tuple[bytes, EntityVocabulary], counted: list[int]
) -> None:
    png, voc = image
    first = _extract(ExtractionMemo(tmp_path / "c"), png, voc)
    m = ExtractionMemo(tmp_path / "c")
    assert _extract(m, png, voc) == first
    assert m.stats["disk_hits"] == 1 and len(counted) == 1


def test_a_changed_extractor_fingerprint_misses_the_cache(
    tmp_path: Path,
    image: tuple[bytes, EntityVocabulary],
    counted: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    png, voc = image
    _extract(ExtractionMemo(tmp_path / "c"), png, voc)
    monkeypatch.setattr(memo_mod, "extractor_fingerprint", lambda: "another extractor")
    m = ExtractionMemo(tmp_path / "c")
    _extract(m, png, voc)
    assert m.stats["extracted"] == 1 and m.stats["disk_hits"] == 0 and len(counted) == 2


def test_the_fingerprint_follows_the_extractor_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "extractor_copy.py"
    src.write_text("x = 1\n")
    fake = SimpleNamespace(__name__="extractor_copy", __file__=str(src))
    monkeypatch.setattr(memo_mod, "MODULES", (fake,))
    before = extractor_fingerprint.__wrapped__()
    src.write_text("x = 2\n")
    assert extractor_fingerprint.__wrapped__() != before


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"[1, 2]", b'{"people": 3}'])
def test_a_corrupt_cache_entry_is_recomputed_and_replaced(
    tmp_path: Path, image: tuple[bytes, EntityVocabulary], garbage: bytes, counted: list[int]
) -> None:
    png, voc = image
    want = _extract(ExtractionMemo(tmp_path / "c"), png, voc)
    with sqlite3.connect(tmp_path / "c" / CACHE_NAME) as db:
        assert db.execute("UPDATE extractions SET data = ?", (garbage,)).rowcount == 1
    db.close()
    m = ExtractionMemo(tmp_path / "c")
    assert _extract(m, png, voc) == want
    assert m.stats["corrupt"] == 1 and m.stats["extracted"] == 1 and len(counted) == 2
    again = ExtractionMemo(tmp_path / "c")
    assert _extract(again, png, voc) == want and again.stats["disk_hits"] == 1


def test_a_cache_file_that_is_no_database_is_left_alone(
    tmp_path: Path, image: tuple[bytes, EntityVocabulary], counted: list[int]
) -> None:
    png, voc = image
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / CACHE_NAME).write_bytes(b"not a database" * 100)
    m = ExtractionMemo(tmp_path / "c")
    assert _extract(m, png, voc) == _extract(ExtractionMemo(), png, voc)
    assert m.stats["extracted"] == 1 and m.stats["corrupt"] >= 1
    assert (tmp_path / "c" / CACHE_NAME).read_bytes() == b"not a database" * 100


def test_pairwise_histograms_are_computed_once_per_content(
    tmp_path: Path, stories: list[Story], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vsb.evaluators import pairwise

    calls: list[int] = []
    real = pairwise.FrameHistograms.of

    def of(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pairwise.FrameHistograms, "of", staticmethod(of))
    run = _run_with_repeats(tmp_path / "run", stories)
    evaluate_run(run, evaluators=("pairwise",))
    assert len(calls) == sum(len(s.scenes) for s in stories)


def test_a_shared_plane_is_read_only(image: tuple[bytes, EntityVocabulary]) -> None:
    png, _voc = image
    d = ExtractionMemo().decode(png, sha256_hex(png))
    assert d.indices is not None
    with pytest.raises(ValueError, match="read-only"):
        d.indices[0, 0] = 1
