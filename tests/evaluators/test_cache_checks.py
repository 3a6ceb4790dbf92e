"""Well-formed but wrong cache entries never change a score (issue 35, item 7).

Each cache is made by a clean pass, then its entries are swapped between keys the way a
user's tool (or a bad merge of two caches) would leave them — every value still well-formed
— and the pass is run again: the entries fail their check, are recomputed, the command's
summary line counts them, and the results are those of the clean pass. Three caches:

- the generation cache (``vsb run``): image hashes rotated between index rows;
- the extraction cache (``vsb evaluate --extraction-cache``): rows' data rotated;
- the judge cache (``vsb evaluate --evaluator vlm`` at a server on 127.0.0.1): YES and NO
  swapped in every stored answer.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from judge_http import JudgeHttpServer, say

from vsb.adapters.base import GenerationResult
from vsb.cli.main import main
from vsb.evaluators.render.memo import CACHE_NAME as EXTRACTIONS
from vsb.evaluators.vlm.store import CACHE_NAME as JUDGE
from vsb.generator.generate import write_suite
from vsb.release.build import BuildConfig, BuildResult
from vsb.store.cache import INDEX_NAME, GenerationCache, failed_checks_under
from vsb.story.models import Story
from vsb.tables import iter_rows

MODELS = "procedural-drift-mid,procedural-drift-low"
NOTE = re.compile(
    r"(\d+) cache entr(?:y|ies) failed (?:its|their) check and (?:was|were) recomputed"
)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    out = tmp_path_factory.mktemp("checks") / "suite"
    write_suite([s for s in default_suite if s.difficulty != "hard"][:3], out)
    return out


def _run(suite: Path, out: Path, cache: Path) -> list[str]:
    return ["run", "--suite", str(suite), "--model", MODELS, "--condition", "independent",
            "--out", str(out), "--cache", str(cache), "--workers", "1"]  # fmt: skip


def _images(run: Path) -> dict[str, bytes]:
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in sorted(run.rglob("*.png"))}


def _rows(run: Path, name: str = "requirements.parquet") -> list[dict[str, Any]]:
    return [r for _, r in iter_rows(run / "evaluations" / name)]


def _noted(out: str) -> int:
    found = NOTE.findall(out)
    return sum(int(n) for n in found)


def _rotate(db_path: Path, table: str, column: str) -> int:
    """Give each row the ``column`` value of the next row (by key); how many rows changed."""
    with sqlite3.connect(db_path) as db:
        rows = db.execute(f"SELECT key, {column} FROM {table} ORDER BY key").fetchall()
        assert len(rows) > 2
        moved = [(rows[(i + 1) % len(rows)][1], rows[i][0]) for i in range(len(rows))]
        db.executemany(f"UPDATE {table} SET {column} = ? WHERE key = ?", moved)
    return sum(new != rows[i][1] for i, (new, _) in enumerate(moved))


def test_generation_cache_hashes_shuffled_between_keys_are_regenerated(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    assert main(_run(suite, tmp_path / "clean", cache)) == 0
    clean = _images(tmp_path / "clean")
    assert main(_run(suite, tmp_path / "again", cache)) == 0
    assert _noted(capsys.readouterr().out) == 0  # an intact cache fails nothing
    changed = _rotate(cache / INDEX_NAME, "entries", "sha256")
    assert changed > 0
    assert main(_run(suite, tmp_path / "shuffled", cache)) == 0
    out = capsys.readouterr().out
    assert _images(tmp_path / "shuffled") == clean  # the clean run's images, not the swapped
    assert _noted(out) == changed, out
    assert failed_checks_under(cache) == changed
    assert main(_run(suite, tmp_path / "after", cache)) == 0  # recomputed entries are sound
    assert _noted(capsys.readouterr().out) == 0
    assert _images(tmp_path / "after") == clean


@pytest.fixture(scope="module")
def run(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("checks-run")
    assert main(_run(suite, root / "run", root / "g")) == 0
    return root / "run"


def test_extraction_rows_shuffled_between_keys_are_recomputed(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    work = tmp_path / "run"
    shutil.copytree(run, work)
    argv = ["evaluate", str(work), "--evaluator", "rules", "--cache", str(cache),
            "--extraction-cache", "--workers", "1"]  # fmt: skip
    assert main(argv) == 0
    clean = _rows(work)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "read from the extraction cache" in out and _noted(out) == 0
    changed = _rotate(cache / EXTRACTIONS, "extractions", "data")
    assert changed > 0
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert _rows(work) == clean
    assert _noted(out) == changed, out
    assert failed_checks_under(cache) == changed
    assert main(argv) == 0  # replaced by sound entries
    assert _noted(capsys.readouterr().out) == 0
    assert _rows(work) == clean


def test_judge_answers_with_yes_and_no_swapped_are_asked_again(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    work = tmp_path / "run"
    shutil.copytree(run, work)
    with JudgeHttpServer(say("YES")) as server:
        argv = ["evaluate", str(work), "--evaluator", "vlm", "--judge", "openai-compatible:sim",
                "--base-url", server.url, "--cache", str(cache)]  # fmt: skip
        assert main(argv) == 0
        clean = _rows(work)
        asked = server.requests
        assert main(argv) == 0
        assert server.requests == asked and _noted(capsys.readouterr().out) == 0
        with sqlite3.connect(cache / JUDGE) as db:
            n = db.execute("UPDATE answers SET text = replace(text, 'YES', 'NO')").rowcount
        assert n == asked
        assert main(argv) == 0
        out = capsys.readouterr().out
        rows = _rows(work)
        assert rows == clean and "passed" in {r["verdict"] for r in rows}
        assert server.requests == 2 * asked  # every swapped answer asked again
        assert _noted(out) == asked, out
        assert failed_checks_under(cache) == asked


def test_release_build_counts_what_failed_in_its_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vsb release build`'s summary line counts the entries its caches dropped during the
    build (a build whose generation index had its hashes shuffled, stages faked)."""
    import vsb.release.build as build_mod

    def build(config: BuildConfig, progress: Any = None) -> BuildResult:
        root = Path(config.out) / config.name
        cache = GenerationCache(root / "cache")
        pngs = {f"k{i}": bytes([137, 80, 78, 71, i]) for i in range(4)}

        def make(png: bytes) -> Callable[[], GenerationResult]:
            return lambda: GenerationResult(png, {}, None)

        for k, png in pngs.items():
            cache.get(k, make(png))
        cache.close()
        assert _rotate(root / "cache" / INDEX_NAME, "entries", "sha256") == 4
        for k, png in pngs.items():
            got, hit = cache.get(k, make(png))
            assert got.png == png and not hit
        cache.close()
        return BuildResult(root, root / "release", root / "site", images=4, generated=4)

    monkeypatch.setattr(build_mod, "build_release", build)
    assert main(["release", "build", "v9", "--out", str(tmp_path)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("4 images"))
    assert "4 cache entries failed their check and were recomputed" in line, line


def test_embedding_vectors_shuffled_between_keys_are_embedded_again(
    run: Path, suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from embed_helpers import save_tiny_clip, save_tiny_dino

    from vsb.evaluators.embed.cache import CACHE_NAME as EMBEDDINGS
    from vsb.story.io import load_suite

    texts = [sc.text for s in load_suite(suite) for sc in s.scenes]
    clip, dino = save_tiny_clip(tmp_path / "clip", texts), save_tiny_dino(tmp_path / "dino")
    cache, work = tmp_path / "cache", tmp_path / "run"
    shutil.copytree(run, work)
    argv = ["evaluate", str(work), "--evaluator", "clip,dino", "--clip-model", str(clip),
            "--dino-model", str(dino), "--cache", str(cache), "--batch-size", "8"]  # fmt: skip
    assert main(argv) == 0
    clean = _rows(work, "signals.parquet")
    capsys.readouterr()
    changed = 0
    with sqlite3.connect(cache / EMBEDDINGS) as db:  # rotate within each model and kind
        groups = db.execute("SELECT DISTINCT model, kind FROM vectors").fetchall()
        for model, kind in groups:
            rows = db.execute("SELECT key, data FROM vectors WHERE model = ? AND kind = ? "
                              "ORDER BY key", (model, kind)).fetchall()  # fmt: skip
            moved = [(rows[(i + 1) % len(rows)][1], rows[i][0]) for i in range(len(rows))]
            db.executemany("UPDATE vectors SET data = ? WHERE key = ?", moved)
            changed += sum(new != rows[i][1] for i, (new, _) in enumerate(moved))
    assert changed > 0
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert _rows(work, "signals.parquet") == clean
    assert _noted(out) == changed, out
    assert failed_checks_under(cache) == changed


# --- entries written before seals: sealed once on opening, checked from then on ----------


def _unseal(db_path: Path, table: str) -> int:
    """Make every row of ``table`` look written before seals (seal NULL, and no record of
    the migration that seals them once: after it a row without a seal is damaged); how many."""
    with sqlite3.connect(db_path) as db:
        n = db.execute(f"UPDATE {table} SET seal = NULL").rowcount
        db.execute("DELETE FROM meta WHERE name = ?", (f"seals:{table}",))
    assert n > 2
    return int(n)


def _still_unsealed(db_path: Path, table: str) -> int:
    db = sqlite3.connect(db_path)
    try:
        return int(db.execute(f"SELECT COUNT(*) FROM {table} WHERE seal IS NULL").fetchone()[0])
    finally:
        db.close()


def test_generation_entries_from_before_seals_are_served_then_sealed(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    assert main(_run(suite, tmp_path / "clean", cache)) == 0
    clean = _images(tmp_path / "clean")
    _unseal(cache / INDEX_NAME, "entries")
    capsys.readouterr()
    assert main(_run(suite, tmp_path / "old", cache)) == 0
    out = capsys.readouterr().out
    assert re.search(r"\(0 generated, \d+ from cache", out) and _noted(out) == 0, out
    assert _still_unsealed(cache / INDEX_NAME, "entries") == 0  # sealed once, on opening
    changed = _rotate(cache / INDEX_NAME, "entries", "sha256")  # a later change is caught
    assert main(_run(suite, tmp_path / "later", cache)) == 0
    assert _noted(capsys.readouterr().out) == changed
    assert _images(tmp_path / "later") == clean


def test_judge_answers_from_before_seals_are_served_then_sealed(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache, work = tmp_path / "cache", tmp_path / "run"
    shutil.copytree(run, work)
    with JudgeHttpServer(say("YES")) as server:
        argv = ["evaluate", str(work), "--evaluator", "vlm", "--judge", "openai-compatible:sim",
                "--base-url", server.url, "--cache", str(cache)]  # fmt: skip
        assert main(argv) == 0
        clean, asked = _rows(work), server.requests
        _unseal(cache / JUDGE, "answers")
        assert main(argv) == 0
        assert server.requests == asked and _rows(work) == clean  # served, nothing asked
        assert _still_unsealed(cache / JUDGE, "answers") == 0
        with sqlite3.connect(cache / JUDGE) as db:
            db.execute("UPDATE answers SET text = replace(text, 'YES', 'NO')")
        capsys.readouterr()
        assert main(argv) == 0
        assert server.requests == 2 * asked and _rows(work) == clean
        assert _noted(capsys.readouterr().out) == asked


def test_embedding_vectors_from_before_seals_are_served_then_sealed(
    run: Path, suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from embed_helpers import save_tiny_clip

    from vsb.evaluators.embed.cache import CACHE_NAME as EMBEDDINGS
    from vsb.story.io import load_suite

    clip = save_tiny_clip(
        tmp_path / "clip", [sc.text for s in load_suite(suite) for sc in s.scenes]
    )
    cache, work = tmp_path / "cache", tmp_path / "run"
    shutil.copytree(run, work)
    argv = ["evaluate", str(work), "--evaluator", "clip", "--clip-model", str(clip), "--cache",
            str(cache), "--batch-size", "8"]  # fmt: skip
    assert main(argv) == 0
    clean = _rows(work, "signals.parquet")
    _unseal(cache / EMBEDDINGS, "vectors")
    assert main(argv) == 0
    assert _rows(work, "signals.parquet") == clean
    assert _still_unsealed(cache / EMBEDDINGS, "vectors") == 0
    with sqlite3.connect(cache / EMBEDDINGS) as db:  # a later change is caught
        rows = db.execute("SELECT key, data FROM vectors WHERE kind = 'image' ORDER BY key")
        rows = rows.fetchall()
        moved = [(rows[(i + 1) % len(rows)][1], rows[i][0]) for i in range(len(rows))]
        db.executemany("UPDATE vectors SET data = ? WHERE key = ?", moved)
    changed = sum(new != rows[i][1] for i, (new, _) in enumerate(moved))
    capsys.readouterr()
    assert main(argv) == 0
    assert _noted(capsys.readouterr().out) == changed > 0
    assert _rows(work, "signals.parquet") == clean
