"""Rank stability of the global score under Dirichlet-perturbed dimension weights.

Each draw replaces the equal dimension weights by ``w ~ Dirichlet(alpha · 1)``; a model's
weighted score renormalises ``w`` over the dimensions it has. Per draw the models are ranked
(1 = best, ties share the best rank) and compared with the equal-weight ranking by
Kendall τ-b; per model we report how often it keeps its equal-weight rank.
"""

from __future__ import annotations

import numpy as np

from vsb.scores.stats.bootstrap import FloatArray


def competition_ranks(scores: FloatArray) -> np.ndarray:
    """Ranks along the last axis, 1 = highest, ties share the best rank ("1224")."""
    return 1 + (scores[..., None, :] > scores[..., :, None]).sum(axis=-1)


def kendall_tau_b(x: FloatArray, y: FloatArray) -> FloatArray:
    """Kendall τ-b between the last axes of ``x`` and ``y`` (broadcast); NaN if undefined."""
    iu = np.triu_indices(x.shape[-1], k=1)
    dx = np.sign(x[..., :, None] - x[..., None, :])[..., iu[0], iu[1]]
    dy = np.sign(y[..., :, None] - y[..., None, :])[..., iu[0], iu[1]]
    dx, dy = np.broadcast_arrays(dx, dy)
    num = (dx * dy).sum(axis=-1)
    den = np.sqrt((dx != 0).sum(axis=-1) * (dy != 0).sum(axis=-1).astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den == 0, np.nan, num / den)


def weighted_scores(weights: FloatArray, dims: FloatArray) -> FloatArray:
    """``(draws, models)``: Σ w·score over each model's dimensions, weights renormalised."""
    mask = ~np.isnan(dims)
    num = weights @ np.where(mask, dims, 0.0).T
    den = weights @ mask.T.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den == 0, np.nan, num / den)


def rank_stability(
    dims: FloatArray, rng: np.random.Generator, n_draws: int = 1000, alpha: float = 1.0
) -> dict[str, FloatArray]:
    """Perturbation analysis for ``dims`` (``(models, n_dims)`` scores, NaN = absent).

    Returns arrays: ``rank`` (equal-weight ranks), ``keep_rank``, ``mean_rank``,
    ``rank_p05``, ``rank_p95`` (per model) and ``tau`` (per draw).
    """
    n_models, n_dims = dims.shape
    weights = rng.dirichlet(np.full(n_dims, alpha), size=n_draws)
    equal = weighted_scores(np.full((1, n_dims), 1.0 / n_dims), dims)[0]
    perturbed = weighted_scores(weights, dims)
    base = competition_ranks(equal)
    ranks = competition_ranks(perturbed)
    tau = kendall_tau_b(perturbed, equal[None, :]) if n_models > 1 else np.full(n_draws, np.nan)
    return {
        "rank": base,
        "keep_rank": (ranks == base[None, :]).mean(axis=0),
        "mean_rank": ranks.mean(axis=0),
        "rank_p05": np.percentile(ranks, 5, axis=0),
        "rank_p95": np.percentile(ranks, 95, axis=0),
        "tau": tau,
    }
