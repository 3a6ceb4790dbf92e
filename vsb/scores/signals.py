"""Continuous signals as scores: the mean of each signal per (evaluator, model, condition).

A signal's value for one story run (story × model × condition) is the mean over its frames;
the score is the macro-average over stories with a story-clustered percentile bootstrap CI
(``vsb.scores.stats.bootstrap``), like every other score. Two means are mean reciprocal ranks:
``clip_rr`` (text side, vsb's own: a frame's scene text among negative texts) and
``clip_image_rr`` (image side, VinaBench's CLIP-T-MRR ranking: the generated image among the
reference renders nearest the text); see ``vsb.evaluators.embed.signals``.

Randomness: one generator per (evaluator, signal), ``numpy.random.default_rng([seed, 2,
key])`` with ``key`` from the sha256 of the names, so a signal's interval does not depend
on which other signals the run holds. Resamples draw from every story that has the signal
in some (model, condition); a cell without a story is left out through the weights.
A *set row* (``story_id`` empty: a statistic of a whole set of frames, such as
``vinabench_ref``'s FID) is no story's value and is left out here; its own table reads it
(``vsb.scores.peer.vinabench``).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from vsb.fsio import STRICT
from vsb.scores.inputs import SignalRows
from vsb.scores.stats.bootstrap import (
    Resampling,
    nan_to_none,
    percentile_interval,
    resample_counts,
    weighted_means,
)

#: The signal whose mean is the text-side mean reciprocal rank (vsb's own).
MRR_SIGNAL = "clip_rr"
#: The signal whose mean is the image-side mean reciprocal rank (VinaBench's ranking).
IMAGE_MRR_SIGNAL = "clip_image_rr"


class SignalScore(BaseModel):
    """One signal's mean in one (model, condition), with its story-bootstrap CI."""

    model_config = STRICT
    evaluator: str = Field(description="Evaluator that produced the signal (clip, dino…).")
    signal: str = Field(
        description="Signal name; the means of clip_rr (text side) and clip_image_rr (image "
        "side, VinaBench's ranking) are MRRs."
    )
    model: str
    condition: str
    score: float = Field(description="Macro-average over stories of the per-story frame mean.")
    ci_low: float | None = Field(description="Lower bound of the percentile bootstrap CI.")
    ci_high: float | None = Field(description="Upper bound of the percentile bootstrap CI.")
    n_stories: int = Field(ge=0, description="Stories with at least one value.")
    n_frames: int = Field(ge=0, description="Frames (rows with a value) behind the score.")


def _key(evaluator: str, signal: str) -> int:
    digest = hashlib.sha256(f"{evaluator}\0{signal}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _order(names: set[str], first: Sequence[str]) -> list[str]:
    head = [n for n in dict.fromkeys(first) if n in names]
    return head + sorted(names - set(head))


def signal_scores(
    rows: SignalRows,
    settings: Resampling = Resampling(),
    *,
    model_order: Sequence[str] = (),
    condition_order: Sequence[str] = (),
) -> list[SignalScore]:
    """Every signal's score per (model, condition), sorted by evaluator, signal, condition
    and model (manifest order first)."""
    # (evaluator, signal) -> (model, condition) -> story -> [sum, n]
    acc: dict[tuple[str, str], dict[tuple[str, str], dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for m, c, s, name, v, ev in zip(
        rows.model, rows.condition, rows.story_id, rows.signal, rows.value, rows.evaluator,
        strict=True,
    ):  # fmt: skip
        if math.isnan(v) or not s:  # not a value, or a set row
            continue
        cell = acc[(ev, name)][(m, c)].setdefault(s, [0.0, 0])
        cell[0] += v
        cell[1] += 1
    out: list[SignalScore] = []
    for ev, name in sorted(acc):
        cells_of = acc[(ev, name)]
        models = _order({m for m, _ in cells_of}, model_order)
        conditions = _order({c for _, c in cells_of}, condition_order)
        cells = [(m, c) for c in conditions for m in models if (m, c) in cells_of]
        stories = sorted({s for per in cells_of.values() for s in per})
        index = {s: i for i, s in enumerate(stories)}
        values = np.full((len(stories), len(cells)), np.nan)
        frames = np.zeros(len(cells), dtype=np.int64)
        for j, key in enumerate(cells):
            for s, (total, n) in cells_of[key].items():
                values[index[s], j] = total / n
                frames[j] += int(n)
        rng = np.random.default_rng([settings.seed, 2, _key(ev, name)])
        weights = resample_counts(rng, len(stories), settings.n_resamples)
        low, high = percentile_interval(weighted_means(weights, values), settings.confidence)
        present = ~np.isnan(values)
        for j, (m, c) in enumerate(cells):
            out.append(
                SignalScore(
                    evaluator=ev, signal=name, model=m, condition=c,
                    score=float(values[present[:, j], j].mean()), ci_low=nan_to_none(low[j]),
                    ci_high=nan_to_none(high[j]), n_stories=int(present[:, j].sum()),
                    n_frames=int(frames[j]),
                )
            )  # fmt: skip
    return out


SIGNAL_HEADER: tuple[str, ...] = tuple(SignalScore.model_fields)
