"""Pairwise pixel consistency: colour-histogram intersection between consecutive frames.

Globally and on the figure band (the rows where figures stand). Model-agnostic and
deliberately weak: a continuous signal for judge validation, 1.0 = identical histograms.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vsb.evaluators.interface import EvaluatorOutput, Frame, StoryEvaluator, signal_row
from vsb.evaluators.render import style
from vsb.evaluators.render.decode import index_counts, load_indices
from vsb.story.models import Story


def _counts(plane: NDArray[np.uint8]) -> NDArray[np.intp]:
    return index_counts(plane)


def _norm(h: NDArray[np.intp]) -> NDArray[np.float64]:
    total = h.sum()
    return h / total if total else h.astype(np.float64)


def _hist(plane: NDArray[np.uint8]) -> NDArray[np.float64]:
    return _norm(_counts(plane))


def intersection(a: NDArray[np.uint8], b: NDArray[np.uint8]) -> float:
    """Histogram intersection of two index planes, in [0, 1]."""
    return float(np.minimum(_hist(a), _hist(b)).sum())


@dataclass(frozen=True)
class FrameHistograms:
    """A frame's normalised colour histograms, globally and on the figure band."""

    whole: NDArray[np.float64]
    band: NDArray[np.float64]

    @classmethod
    def of(
        cls,
        image: Any,
        counts: NDArray[np.intp] | None = None,
        band: NDArray[np.intp] | None = None,
    ) -> FrameHistograms:
        """One pass over the pixels: the band's counts plus the other rows' are the whole's
        (``counts`` and ``band``, the whole image's and the band's, when the decoder has
        them already: then no pass at all)."""
        if counts is None or band is None:
            plane = load_indices(image)
            r0, r1 = style.BAND
            band = _counts(plane[r0:r1])
            counts = band + _counts(plane[:r0]) + _counts(plane[r1:])
        return cls(whole=_norm(counts), band=_norm(band))


def histogram_scores(prev: FrameHistograms, cur: FrameHistograms) -> dict[str, float]:
    """``pairwise_global`` and ``pairwise_band`` from two frames' histograms."""
    return {
        "pairwise_global": float(np.minimum(prev.whole, cur.whole).sum()),
        "pairwise_band": float(np.minimum(prev.band, cur.band).sum()),
    }


def pairwise_scores(prev: Any, cur: Any) -> dict[str, float]:
    """``pairwise_global`` and ``pairwise_band`` between two frames (any image input)."""
    return histogram_scores(FrameHistograms.of(prev), FrameHistograms.of(cur))


class PairwiseEvaluator(StoryEvaluator):
    """Histogram intersection with the previous frame (from scene 2 on); a pair that is not
    two renders gets null values (not applicable)."""

    name = "pairwise"
    kind = "signals"
    reads = "renders"
    description = "colour-histogram intersection of consecutive frames (renders only)"

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        """Signal rows for the frames of one (model, condition, story)."""
        out = EvaluatorOutput()
        hists: dict[int, FrameHistograms] = {}  # by frame position: each frame read once

        def hist(i: int) -> FrameHistograms:
            if i not in hists:
                f = frames[i]
                made = partial(FrameHistograms.of, f.image, f.counts, f.band_counts)
                hists[i] = (
                    f.memo.keep("pairwise", f.sha256, made)
                    if f.memo is not None and f.sha256
                    else made()
                )
            return hists[i]

        for i, (prev, cur) in enumerate(itertools.pairwise(frames)):
            if cur.scene != prev.scene + 1:
                continue
            if prev.image is None or cur.image is None:
                if prev.path is not None and cur.path is not None:
                    for signal in ("pairwise_global", "pairwise_band"):
                        out.signals.append(signal_row(cur, signal, None, self.name))
                continue
            for signal, value in histogram_scores(hist(i), hist(i + 1)).items():
                out.signals.append(signal_row(cur, signal, value, self.name))
        return out
