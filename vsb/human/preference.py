"""Pairwise preferences: win-rate tables and Bradley-Terry strengths, both with percentile
CIs from one bootstrap over comparisons (a seeded ``numpy.random.Generator``).

Bradley-Terry is fitted with Hunter's (2004) MM algorithm: ``P(i beats j) = p_i / (p_i + p_j)``,
a tie counting half a win each way. Every pair of models also gets ``PRIOR_TIES`` virtual
ties, so a model that never lost still has a finite strength (the estimate is shrunk
slightly toward equality). Strengths are shown on lmarena's scale,
``rating = 1000 + 400 * log10(p_i)`` with the geometric mean of ``p`` fixed at 1 (mean rating
1000): a 400-point gap means 10:1 odds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vsb.scores.stats.bootstrap import percentile_interval, resample_counts

FloatArray = NDArray[np.float64]
PRIOR_TIES = 0.1
ELO_SCALE = 400.0
ELO_BASE_RATING = 1000.0


@dataclass(frozen=True)
class Comparison:
    """One preference: ``outcome`` 1 = a preferred, 0 = b preferred, 0.5 = tie."""

    model_a: str
    model_b: str
    outcome: float


@dataclass(frozen=True)
class PairTable:
    """Preferences between two models (``x`` < ``y`` by name)."""

    x: str
    y: str
    n: int
    wins_x: int
    wins_y: int
    ties: int
    win_rate_x: float
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class Strength:
    """A model's Bradley-Terry rating with its bootstrap CI and rank (1 = strongest)."""

    model: str
    rating: float
    ci_low: float | None
    ci_high: float | None
    rank: int
    n_comparisons: int


def bradley_terry(wins: FloatArray, n_iter: int = 2000, tol: float = 1e-10) -> FloatArray:
    """Log-strengths (mean 0) from win matrices ``wins[..., i, j]`` = wins of i over j, by MM
    with ``PRIOR_TIES`` virtual ties per pair; works on a stack of matrices at once."""
    m = wins.shape[-1]
    w = wins + (PRIOR_TIES / 2.0) * (1.0 - np.eye(m))
    games = w + np.swapaxes(w, -1, -2)
    total = w.sum(axis=-1)
    p = np.ones(wins.shape[:-1])
    for _ in range(n_iter):
        denom = (games / (p[..., :, None] + p[..., None, :])).sum(axis=-1)
        new = total / denom
        new /= np.exp(np.log(new).mean(axis=-1, keepdims=True))
        done = np.abs(new - p).max() < tol
        p = new
        if done:
            break
    logp: FloatArray = np.log(p)
    return logp - logp.mean(axis=-1, keepdims=True)


def to_rating(logp: FloatArray) -> FloatArray:
    """lmarena's scale: 1000 + 400 log10(p)."""
    return ELO_BASE_RATING + ELO_SCALE * logp / np.log(10.0)


def preference_stats(
    comparisons: Sequence[Comparison],
    rng: np.random.Generator,
    n_resamples: int,
    confidence: float = 0.95,
) -> tuple[list[PairTable], list[Strength]]:
    """Win tables of every compared pair and Bradley-Terry ratings of every compared model."""
    models = sorted({c.model_a for c in comparisons} | {c.model_b for c in comparisons})
    if not comparisons or len(models) < 2:
        return [], []
    m = len(models)
    ix = {name: i for i, name in enumerate(models)}
    contrib = np.zeros((len(comparisons), m * m))
    for k, c in enumerate(comparisons):
        a, b = ix[c.model_a], ix[c.model_b]
        contrib[k, a * m + b] += c.outcome
        contrib[k, b * m + a] += 1.0 - c.outcome
    wins = contrib.sum(axis=0).reshape(m, m)
    boot = (resample_counts(rng, len(comparisons), n_resamples) @ contrib).reshape(-1, m, m)
    rating = to_rating(bradley_terry(wins))
    r_low, r_high = percentile_interval(to_rating(bradley_terry(boot)), confidence)
    order = np.argsort(-rating, kind="stable")
    ranks = np.empty(m, dtype=int)
    ranks[order] = np.arange(1, m + 1)
    counts = {name: 0 for name in models}
    for c in comparisons:
        counts[c.model_a] += 1
        counts[c.model_b] += 1
    strengths = [
        Strength(models[i], float(rating[i]), _f(r_low[i]), _f(r_high[i]), int(ranks[i]),
                 counts[models[i]])
        for i in order
    ]  # fmt: skip
    tables = []
    for i in range(m):
        for j in range(i + 1, m):
            pair = [c for c in comparisons if {c.model_a, c.model_b} == {models[i], models[j]}]
            if not pair:
                continue
            ties = sum(c.outcome == 0.5 for c in pair)
            wx = sum(
                c.outcome != 0.5 and (c.outcome == 1.0) == (c.model_a == models[i]) for c in pair
            )
            games = boot[:, i, j] + boot[:, j, i]
            with np.errstate(invalid="ignore", divide="ignore"):
                dist = np.where(games > 0, boot[:, i, j] / games, np.nan)
            lo, hi = percentile_interval(dist, confidence)
            tables.append(
                PairTable(models[i], models[j], len(pair), wx, len(pair) - wx - ties, ties,
                          float(wins[i, j] / len(pair)), _f(lo), _f(hi))
            )  # fmt: skip
    return tables, strengths


def _f(x: object) -> float | None:
    v = float(x)  # type: ignore[arg-type]
    return None if np.isnan(v) else v
