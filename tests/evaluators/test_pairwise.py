"""Pairwise histogram intersection between consecutive frames."""

from __future__ import annotations

from eval_helpers import character, first_state, with_char, world

from vsb.evaluators.pairwise import pairwise_scores
from vsb.render import render_indices, render_png


def test_identical_frames_score_one_and_changes_score_less() -> None:
    w = world([character("Ama"), character("Bo", skin="tone-5", top="green")])
    s = first_state(w)
    a = render_png(s, seed=1)
    same = pairwise_scores(a, a)
    assert same == {"pairwise_global": 1.0, "pairwise_band": 1.0}
    jittered = pairwise_scores(a, render_png(s, seed=2))
    changed = pairwise_scores(a, render_png(with_char(s, "Bo", top="purple"), seed=2))
    moved = pairwise_scores(a, render_png(s.model_copy(update={"location": "beach"}), seed=2))
    for scores in (jittered, changed, moved):
        assert set(scores) == {"pairwise_global", "pairwise_band"}
        assert all(0.0 <= v <= 1.0 for v in scores.values())
    assert changed["pairwise_band"] < jittered["pairwise_band"]
    assert moved["pairwise_global"] < changed["pairwise_global"]


def test_accepts_index_arrays() -> None:
    s = first_state(world([character("Ama")]))
    a = render_indices(s, seed=0)
    assert pairwise_scores(a, a)["pairwise_global"] == 1.0


def test_the_decoders_band_counts_are_the_bands_own() -> None:
    """The decoder counts the figure band's pixels as it counts the whole picture's (pairwise
    then reads no pixel again): both equal counts made from the plane itself, and the
    histograms built from them equal the ones pairwise builds from the picture alone."""
    import numpy as np

    from vsb.evaluators.pairwise import FrameHistograms
    from vsb.evaluators.render import style
    from vsb.evaluators.render.decode import decode_render

    w = world([character("Ama"), character("Bo", skin="tone-5", top="green")])
    png = render_png(first_state(w), seed=3)
    d = decode_render(png)
    assert d.is_render and d.indices is not None
    assert d.counts is not None and d.band_counts is not None
    r0, r1 = style.BAND
    plane = d.indices.astype(np.intp)
    assert np.array_equal(d.band_counts, np.bincount(plane[r0:r1].ravel(), minlength=256))
    assert np.array_equal(d.counts, np.bincount(plane.ravel(), minlength=256))
    assert 0 < d.band_counts.sum() < d.counts.sum()
    given = FrameHistograms.of(d.indices, d.counts, d.band_counts)
    alone = FrameHistograms.of(png)
    assert np.array_equal(given.whole, alone.whole) and np.array_equal(given.band, alone.band)
