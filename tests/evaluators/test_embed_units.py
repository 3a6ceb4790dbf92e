"""Pieces of the embedding evaluators that need no model: ranking, negatives, the cache,
finding weights, the declarations, and the signal scores (MRR) with their bootstrap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from vsb.errors import InputError
from vsb.evaluators.embed import cache as embed_cache
from vsb.evaluators.embed.cache import EmbeddingCache, vector_key
from vsb.evaluators.embed.models import locate_weights
from vsb.evaluators.embed.signals import (
    EmbedOptions,
    candidate_texts,
    check_embeddings,
    reciprocal_rank,
)
from vsb.evaluators.registry import evaluator_info
from vsb.scores.inputs import SignalRows
from vsb.scores.signals import _key, signal_scores
from vsb.scores.stats.bootstrap import Resampling
from vsb.story.models import Story


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_reciprocal_rank_counts_better_and_equal_negatives_above() -> None:
    img = _unit(1, 0)
    own = _unit(1, 1)  # cos 0.707
    better, worse = _unit(1, 0.1), _unit(0, 1)
    assert reciprocal_rank(img, np.stack([own, worse, worse])) == 1.0
    assert reciprocal_rank(img, np.stack([own, better, worse])) == 0.5
    assert reciprocal_rank(img, np.stack([own, better, own.copy(), worse])) == pytest.approx(1 / 3)
    assert reciprocal_rank(img, own[None, :]) == 1.0


def test_candidates_are_own_then_every_other_scene_then_drawn_others(
    default_suite: list[Story],
) -> None:
    stories = {s.id: s for s in default_suite}
    story = default_suite[3]
    k = 2
    pool = candidate_texts(stories, story.id, k, 100, 0)
    own = story.scenes[k - 1].text
    hard = [s.text for s in story.scenes if s.text != own]
    assert pool[0] == own and pool[1 : 1 + len(hard)] == list(dict.fromkeys(hard))
    assert len(pool) == 100 and len(set(pool)) == 100 and own not in pool[1:]
    others = pool[1 + len(hard) :]
    assert not set(others) & {s.text for s in story.scenes}
    # the draw depends on the suite, seed, story and scene only (not on dict order)
    shuffled = dict(reversed(list(stories.items())))
    assert candidate_texts(shuffled, story.id, k, 100, 0) == pool
    assert candidate_texts(stories, story.id, k, 100, 1) != pool
    assert candidate_texts(stories, story.id, k + 1, 100, 0)[1 + len(hard) :] != others
    # a pool smaller than the story keeps every hard negative
    small = candidate_texts(stories, story.id, k, 3, 0)
    assert small == [own, *dict.fromkeys(hard)]
    # one story alone: only its own scenes
    assert candidate_texts({story.id: story}, story.id, k, 100, 0) == small


def test_cache_round_trip_and_damaged_rows(tmp_path: Path) -> None:
    v = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    with EmbeddingCache(tmp_path) as cache:
        k1 = vector_key("dir:abc", "image", "00" * 32)
        k2 = vector_key("dir:abc", "text", "00" * 32)
        assert k1 != k2 and k1 != vector_key("dir:abd", "image", "00" * 32)
        cache.put_many("dir:abc", "image", [(k1, v)])
        got = cache.get_many([k1, k2])
        assert list(got) == [k1] and got[k1].dtype == np.float32
        assert np.array_equal(got[k1], v)
        cache._db.execute("UPDATE vectors SET dim = 4")
        assert cache.get_many([k1]) == {}  # a damaged row is recomputed, not trusted
        assert cache.count("dir:abc") == 1 and cache.count("other") == 0


def test_dir_digest_is_memoized_and_follows_the_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "w.bin").write_bytes(b"abc")
    hashed: list[Path] = []
    real = embed_cache.sha256_file

    def counting(path: Path) -> str:
        hashed.append(Path(path))
        return real(path)

    monkeypatch.setattr(embed_cache, "sha256_file", counting)
    with EmbeddingCache(tmp_path / "c") as cache:
        a = cache.dir_digest(model)
        assert len(hashed) == 2
        assert cache.dir_digest(model) == a and len(hashed) == 2  # memoized
        (model / "w.bin").write_bytes(b"abcd")
        assert cache.dir_digest(model) != a


def test_weights_from_a_hub_snapshot_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = tmp_path / "hub"
    snap = hub / "models--org--tiny" / "snapshots" / "c0ffee"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (hub / "models--org--tiny" / "refs").mkdir()
    (hub / "models--org--tiny" / "refs" / "main").write_text("c0ffee")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    w = locate_weights("dino", "org/tiny")
    assert w.path == snap and w.hub_ident == "hub:org/tiny@c0ffee"
    with pytest.raises(InputError) as err:
        locate_weights("clip", "org/other")
    msg = str(err.value)
    assert "hf download org/other" in msg and str(hub) in msg and "--clip-model DIR" in msg
    assert "tokenizer" in msg  # names the files a directory needs


def test_weights_errors(tmp_path: Path) -> None:
    f = tmp_path / "file.bin"
    f.write_bytes(b"x")
    with pytest.raises(InputError, match="must be a model directory"):
        locate_weights("clip", str(f))
    with pytest.raises(InputError, match="no model directory"):
        locate_weights("dino", str(tmp_path / "a" / "b" / "c"))


def test_check_embeddings_refuses_bad_options(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    ok = EmbedOptions(clip_model=str(tmp_path), dino_model=str(tmp_path))
    assert set(check_embeddings({"clip": ok, "dino": ok})) == {"clip", "dino"}
    with pytest.raises(InputError, match="batch-size"):
        check_embeddings({"dino": EmbedOptions(dino_model=str(tmp_path), batch_size=0)})
    with pytest.raises(InputError, match="not an embedding evaluator"):
        check_embeddings({"rules": ok})


def test_declarations() -> None:
    for name in ("clip", "dino"):
        info = evaluator_info(name)
        assert (info.kind, info.reads, info.paid) == ("signals", "any", False)
        assert info.load().name == name and "vsb[embed]" in info.needs


def _rows(data: list[tuple[str, str, str, int, str, float, str]]) -> SignalRows:
    rows = SignalRows()
    for m, c, s, k, sig, v, ev in data:
        rows.model.append(m)
        rows.condition.append(c)
        rows.story_id.append(s)
        rows.scene.append(k)
        rows.signal.append(sig)
        rows.value.append(v)
        rows.evaluator.append(ev)
    return rows


def test_signal_scores_are_macro_means_over_stories() -> None:
    rows = _rows([
        ("a", "x", "s1", 1, "clip_rr", 1.0, "clip"), ("a", "x", "s1", 2, "clip_rr", 0.0, "clip"),
        ("a", "x", "s2", 1, "clip_rr", 1.0, "clip"), ("b", "x", "s1", 1, "clip_rr", 0.25, "clip"),
        ("a", "x", "s1", 2, "dino_prev", 0.5, "dino"),
    ])  # fmt: skip
    out = signal_scores(rows, settings=Resampling(n_resamples=200), model_order=("b", "a"))
    got = {(s.signal, s.model): s for s in out}
    assert [(s.evaluator, s.signal, s.model) for s in out] == [
        ("clip", "clip_rr", "b"), ("clip", "clip_rr", "a"), ("dino", "dino_prev", "a"),
    ]  # fmt: skip
    a = got[("clip_rr", "a")]
    assert a.score == 0.75 and (a.n_stories, a.n_frames) == (2, 3)  # not the frame mean 2/3
    assert a.ci_low == 0.5 and a.ci_high == 1.0
    b = got[("clip_rr", "b")]
    assert b.score == 0.25 and b.n_stories == 1 and b.ci_low == b.ci_high == 0.25
    d = got[("dino_prev", "a")]
    assert d.score == d.ci_low == d.ci_high == 0.5


def test_signal_interval_equals_scipy_percentile_bootstrap() -> None:
    values = np.random.default_rng(7).uniform(0, 1, 15)
    data = [("m", "c", f"s{i:02d}", 1, "clip_rr", float(v), "clip") for i, v in enumerate(values)]
    other = [("m", "c", f"s{i:02d}", 2, "dino_prev", 0.1, "dino") for i in range(15)]
    (mine,) = signal_scores(_rows(data), settings=Resampling(seed=3, n_resamples=999))
    ref = scipy.stats.bootstrap(
        (values,), np.mean, n_resamples=999, method="percentile", vectorized=True,
        rng=np.random.default_rng([3, 2, _key("clip", "clip_rr")]),
    )  # fmt: skip
    assert mine.ci_low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert mine.ci_high == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    # another signal in the run does not move this one's interval
    both = signal_scores(_rows(data + other), settings=Resampling(seed=3, n_resamples=999))
    assert both[0] == mine
    assert (
        signal_scores(_rows(data), settings=Resampling(seed=4, n_resamples=999))[0].ci_low
        != mine.ci_low
    )
