"""What the leaderboard adds to plain scores: honest ranks (bootstrap ranges and tie marks),
memory gain, the win-rate matrix and the long-horizon view, read from ``scores.json``.

* A model is **tied** with the next one down when the paired 95% CI of their global-score
  difference (``Comparison`` of kind ``model``, metric ``global``) includes 0: the data cannot
  tell them apart, whatever their point estimates.
* **Memory gain** is the paired difference of memory coherence, structured_memory −
  independent, for one model (the ``condition`` comparison the scorer already makes).
* The **win-rate matrix** holds, for every ordered pair (row, column), the share of shared
  stories where the row model's global score beats the column model's (ties count ½).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from vsb.scores.horizon import HorizonPoint
from vsb.scores.models import Comparison, ScoresReport
from vsb.site import svg

GAIN_A, GAIN_B = "structured_memory", "independent"
GAIN_METRIC = "coherence"


@dataclass(frozen=True)
class Tie:
    """The next model down cannot be told apart from this one."""

    other: str
    diff: float
    low: float
    high: float


@dataclass(frozen=True)
class Gain:
    """One model's memory gain (a − b of memory coherence) with its paired CI."""

    diff: float
    low: float | None
    high: float | None
    n_stories: int


def _pair(comps: Sequence[Comparison], kind: str, metric: str, a: tuple[str, str],
          b: tuple[str, str]) -> tuple[Comparison, float] | None:  # fmt: skip
    """The comparison of a − b (sign +1) or b − a (sign −1) on ``metric``."""
    for c in comps:
        if c.kind != kind or c.metric != metric or c.metric_kind != "summary":
            continue
        ca, cb = (c.a_model, c.a_condition), (c.b_model, c.b_condition)
        if (ca, cb) == (a, b):
            return c, 1.0
        if (ca, cb) == (b, a):
            return c, -1.0
    return None


def ties(scores: ScoresReport, condition: str) -> dict[str, Tie]:
    """For each model of ``condition`` (rank order): its tie with the next model down."""
    rows = sorted(
        (r for r in scores.scores if r.condition == condition), key=lambda r: (r.rank, r.model)
    )
    out: dict[str, Tie] = {}
    for x, y in itertools.pairwise(rows):
        hit = _pair(scores.comparisons, "model", "global", (x.model, condition),
                    (y.model, condition))  # fmt: skip
        if hit is None:
            continue
        c, sign = hit
        if c.ci_low is None or c.ci_high is None:
            continue
        lo, hi = sorted((sign * c.ci_low, sign * c.ci_high))
        if lo <= 0.0 <= hi:
            out[x.model] = Tie(y.model, sign * c.diff, lo, hi)
    return out


def memory_gain(scores: ScoresReport, b: str = GAIN_B) -> dict[str, Gain]:
    """Per model: structured_memory − ``b`` memory coherence with its paired CI (``b`` =
    random_context: the gain net of the placebo)."""
    out: dict[str, Gain] = {}
    for m in scores.models:
        hit = _pair(scores.comparisons, "condition", GAIN_METRIC, (m, GAIN_A), (m, b))
        if hit is None:
            continue
        c, sign = hit
        lo = hi = None
        if c.ci_low is not None and c.ci_high is not None:
            lo, hi = sorted((sign * c.ci_low, sign * c.ci_high))
        out[m] = Gain(sign * c.diff, lo, hi, c.n_stories)
    return out


def win_matrix(scores: ScoresReport, condition: str) -> tuple[list[str], list[list[float | None]]]:
    """(models in rank order, matrix[i][j] = win rate of model i over model j)."""
    models = [
        r.model
        for r in sorted(
            (r for r in scores.scores if r.condition == condition),
            key=lambda r: (r.rank, r.model),
        )
    ]
    matrix: list[list[float | None]] = []
    for x in models:
        row: list[float | None] = []
        for y in models:
            hit = None if x == y else _pair(
                scores.comparisons, "model", "global", (x, condition), (y, condition)
            )  # fmt: skip
            if hit is None:
                row.append(None)
            else:
                c, sign = hit
                row.append(c.win_rate if sign > 0 else 1.0 - c.win_rate)
        matrix.append(row)
    return models, matrix


def horizon_points(
    scores: ScoresReport, condition: str | None, axis: str, metric: str
) -> list[HorizonPoint]:
    """The long-horizon points of one axis and metric (every condition when None)."""
    return [
        p
        for p in scores.horizon
        if p.axis == axis and p.metric == metric and (condition is None or p.condition == condition)
    ]


def horizon_chart(
    points: Sequence[HorizonPoint], series: Sequence[str], title: str, by: str = "model"
) -> svg.Markup | None:
    """Memory coherence by scene position: one line per model (or condition), 95% CIs."""
    lines: list[svg.Series] = []
    for name in series:
        pts = sorted((p for p in points if getattr(p, by) == name), key=lambda p: int(p.group))
        if pts:
            lines.append(
                svg.Series(name, [svg.XY(int(p.group), p.score, p.ci_low, p.ci_high) for p in pts])
            )
    if not lines:
        return None
    return svg.line_chart(lines, title, "scene position", "memory coherence")
