"""One evaluator's statistics as typed rows: model scores, story scores, paired
comparisons and rank stability, all from one StoryTable and one bootstrap.

Randomness: the bootstrap counts come from ``numpy.random.default_rng(seed)`` (one batch of
``rng.integers(0, n_stories, (n_resamples, n_stories))``, shared by every model-level
interval and every paired comparison, so all of them are paired by construction); the rank
stability weights come from ``numpy.random.default_rng([seed, 1])``. Each evaluator gets
its own generators, so its numbers do not depend on which other evaluators were scored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vsb.scores.axis import VerdictCounts
from vsb.scores.horizon import HorizonPoint, StoryInfo, horizon
from vsb.scores.inputs import DEFAULT_EVALUATOR, RequirementRows
from vsb.scores.models import (
    PRIMARY_CONDITION,
    SUMMARIES,
    Comparison,
    Estimate,
    ModelScore,
    RankStability,
    RankStabilityModel,
    StoryScore,
)
from vsb.scores.stats.aggregate import ALL_METRICS, GLOBAL, Cell, Estimates, model_estimates
from vsb.scores.stats.aggregate import paired_comparisons as _paired
from vsb.scores.stats.bootstrap import Resampling, nan_to_none
from vsb.scores.stats.power import min_detectable, rank_ranges, stories_needed
from vsb.scores.stats.rank import rank_stability
from vsb.scores.table import (
    ADHERENCE,
    COHERENCE,
    CONDITIONAL_COHERENCE,
    N_DIMS,
    StoryTable,
)
from vsb.story.models import DIMENSIONS


def _metric_kind(j: int) -> tuple[str, str]:
    """(metric_kind, metric) of result column j."""
    if j < N_DIMS:
        return "dimension", ALL_METRICS[j]
    return "summary", SUMMARIES[j - N_DIMS]


def _estimate(est: Estimates, m: int, c: int, j: int) -> Estimate | None:
    score = float(est.score[m, c, j])
    if math.isnan(score):
        return None
    return Estimate(
        score=score,
        ci_low=nan_to_none(est.low[m, c, j]),
        ci_high=nan_to_none(est.high[m, c, j]),
        n_stories=int(est.n_stories[m, c, j]),
    )


def _model_scores(
    table: StoryTable,
    est: Estimates,
    evaluator: str,
    counts: VerdictCounts | None,
    ranges: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[ModelScore]:
    out: list[ModelScore] = []
    for c, cond in enumerate(table.conditions):
        cells = [m for m in range(len(table.models)) if table.has_row(m, c)]
        g = np.array([est.score[m, c, GLOBAL] for m in cells])
        g = np.where(np.isnan(g), -np.inf, g)
        ranks = 1 + (g[None, :] > g[:, None]).sum(axis=1)
        order = sorted(range(len(cells)), key=lambda i: (ranks[i], table.models[cells[i]]))
        for i in order:
            m = cells[i]
            key = (table.models[m], cond)
            lo = hi = None
            if ranges is not None:  # the range always holds the point estimate's rank
                lo = min(int(ranges[0][m, c]), int(ranks[i]))
                hi = max(int(ranges[1][m, c]), int(ranks[i]))
            out.append(
                ModelScore(
                    evaluator=evaluator,
                    model=table.models[m],
                    condition=cond,
                    dimensions={d: _estimate(est, m, c, j) for j, d in enumerate(DIMENSIONS)},
                    adherence=_estimate(est, m, c, ADHERENCE),
                    coherence=_estimate(est, m, c, COHERENCE),
                    conditional_coherence=_estimate(est, m, c, CONDITIONAL_COHERENCE),
                    global_score=_estimate(est, m, c, GLOBAL),
                    rank=int(ranks[i]),
                    rank_low=lo,
                    rank_high=hi,
                    n_stories=int((table.n_images[m, c] > 0).sum()),
                    n_images=int(table.n_images[m, c].sum()),
                    n_requirements=int(table.n_requirements[m, c].sum()),
                    n_unsure=counts.unsure[key] if counts else 0,
                    n_parse_failure=counts.parse_failure[key] if counts else 0,
                    n_not_applicable=counts.not_applicable[key] if counts else 0,
                    coverage=counts.coverage(key) if counts else None,
                )
            )
    return out


def _story_scores(table: StoryTable, evaluator: str) -> list[StoryScore]:
    g = table.story_global()
    out: list[StoryScore] = []
    for m, model in enumerate(table.models):
        for c, cond in enumerate(table.conditions):
            for s, story in enumerate(table.stories):
                if table.n_images[m, c, s] == 0:
                    continue
                v = table.values[m, c, s]
                out.append(
                    StoryScore(
                        evaluator=evaluator,
                        model=model,
                        condition=cond,
                        story_id=story,
                        dimensions={d: nan_to_none(v[j]) for j, d in enumerate(DIMENSIONS)},
                        adherence=nan_to_none(v[ADHERENCE]),
                        coherence=nan_to_none(v[COHERENCE]),
                        conditional_coherence=nan_to_none(v[CONDITIONAL_COHERENCE]),
                        global_score=nan_to_none(g[m, c, s]),
                        n_images=int(table.n_images[m, c, s]),
                        n_requirements=int(table.n_requirements[m, c, s]),
                    )
                )
    return out


def all_pairs(table: StoryTable) -> list[tuple[str, Cell, Cell]]:
    """Every model pair within each condition (manifest order), then every condition pair for
    each model (canonical order, except that the primary condition is always side a)."""
    out: list[tuple[str, Cell, Cell]] = []
    nm, nc = len(table.models), len(table.conditions)
    for c in range(nc):
        ms = [m for m in range(nm) if table.has_row(m, c)]
        out += [("model", (a, c), (b, c)) for i, a in enumerate(ms) for b in ms[i + 1 :]]
    primary = (
        table.conditions.index(PRIMARY_CONDITION) if PRIMARY_CONDITION in table.conditions else -1
    )
    for m in range(nm):
        cs = [c for c in range(nc) if table.has_row(m, c)]
        for i, a in enumerate(cs):
            for b in cs[i + 1 :]:
                first, second = (b, a) if b == primary else (a, b)
                out.append(("condition", (m, first), (m, second)))
    return out


def comparison_row(
    evaluator: str,
    kind: str,
    table: StoryTable,
    a: Cell,
    b: Cell,
    metric: tuple[str, str],
    scores: tuple[float, float, float],
    interval: tuple[float, float],
    shares: tuple[float | None, float | None, float | None],
    win_rate: float,
    n_stories: int,
    se: float | None,
    confidence: float,
) -> Comparison:
    """One metric of a paired comparison a − b: the scores (a, b, a − b), the difference's
    interval, the shares of its sign (None where not given), and the power figures (minimum
    detectable difference, stories needed) from its standard error."""
    diff = scores[2]
    mdd = min_detectable(se, confidence)
    return Comparison(
        evaluator=evaluator,
        kind=kind,
        a_model=table.models[a[0]],
        a_condition=table.conditions[a[1]],
        b_model=table.models[b[0]],
        b_condition=table.conditions[b[1]],
        metric_kind=metric[0],
        metric=metric[1],
        a_score=scores[0],
        b_score=scores[1],
        diff=diff,
        ci_low=nan_to_none(interval[0]),
        ci_high=nan_to_none(interval[1]),
        p_greater=None if shares[0] is None else nan_to_none(shares[0]),
        p_equal=None if shares[1] is None else nan_to_none(shares[1]),
        p_less=None if shares[2] is None else nan_to_none(shares[2]),
        win_rate=win_rate,
        n_stories=n_stories,
        se=se,
        mdd=mdd,
        stories_needed=stories_needed(diff, mdd, n_stories),
    )


def compare_cells(
    table: StoryTable,
    pairs: Sequence[tuple[str, Cell, Cell]],
    weights: np.ndarray,
    confidence: float = 0.95,
    evaluator: str = DEFAULT_EVALUATOR,
) -> list[Comparison]:
    """Paired comparisons of each (kind, a, b), one ``Comparison`` per metric with data."""
    res = _paired(table, [(a, b) for _, a, b in pairs], weights, confidence)
    out: list[Comparison] = []
    for p, (kind, a, b) in enumerate(pairs):
        for j in range(len(ALL_METRICS)):
            if math.isnan(res.diff[p, j]):
                continue
            metric_kind, metric = _metric_kind(j)
            out.append(
                comparison_row(
                    evaluator, kind, table, a, b, (metric_kind, metric),
                    (float(res.a_score[p, j]), float(res.b_score[p, j]), float(res.diff[p, j])),
                    (res.low[p, j], res.high[p, j]),
                    (res.p_greater[p, j], res.p_equal[p, j], res.p_less[p, j]),
                    float(res.win_rate[p, j]), int(res.n_stories[p, j]),
                    nan_to_none(res.se[p, j]), confidence,
                )
            )  # fmt: skip
    return out


def _rank_stability(
    table: StoryTable,
    est: Estimates,
    rng: np.random.Generator,
    n_draws: int,
    alpha: float,
    evaluator: str,
) -> list[RankStability]:
    out: list[RankStability] = []
    for c, cond in enumerate(table.conditions):
        ms = [m for m in range(len(table.models)) if table.has_row(m, c)]
        if not ms:
            continue
        r = rank_stability(est.score[ms, c, :N_DIMS], rng, n_draws=n_draws, alpha=alpha)
        tau = r["tau"][~np.isnan(r["tau"])]
        models = [
            RankStabilityModel(
                model=table.models[m],
                rank=int(r["rank"][i]),
                keep_rank=float(r["keep_rank"][i]),
                mean_rank=float(r["mean_rank"][i]),
                rank_p05=float(r["rank_p05"][i]),
                rank_p95=float(r["rank_p95"][i]),
            )
            for i, m in enumerate(ms)
        ]
        models.sort(key=lambda x: (x.rank, x.model))
        out.append(
            RankStability(
                evaluator=evaluator,
                condition=cond,
                primary=cond == PRIMARY_CONDITION,
                n_draws=n_draws,
                alpha=alpha,
                tau_mean=float(tau.mean()) if tau.size else None,
                tau_p05=float(np.percentile(tau, 5)) if tau.size else None,
                tau_p95=float(np.percentile(tau, 95)) if tau.size else None,
                models=models,
            )
        )
    return out


@dataclass(frozen=True)
class Part:
    """Everything one evaluator contributes to the report."""

    table: StoryTable
    scores: list[ModelScore]
    stories: list[StoryScore]
    comparisons: list[Comparison]
    stability: list[RankStability]
    horizon: list[HorizonPoint]


def score_one(
    table: StoryTable,
    evaluator: str,
    counts: VerdictCounts | None,
    cfg: Resampling,
    note: Callable[[str], None],
    rows: RequirementRows | None = None,
    stories: Mapping[str, StoryInfo] | None = None,
) -> Part:
    """One evaluator's statistics (its own generators, seeded as if it were alone); with
    its ``rows`` (those ``table`` was built from), the long-horizon view too."""
    weights = cfg.weights(len(table.stories))
    note(f"{evaluator}: model-level estimates")
    est = model_estimates(table, weights, cfg.confidence)
    note(f"{evaluator}: paired comparisons")
    comparisons = compare_cells(table, all_pairs(table), weights, cfg.confidence, evaluator)
    note(f"{evaluator}: rank stability")
    stab_rng = np.random.default_rng([cfg.seed, 1])
    stability = _rank_stability(table, est, stab_rng, cfg.n_draws, cfg.alpha, evaluator)
    ranges = rank_ranges(table, weights, cfg.confidence)
    long_view: list[HorizonPoint] = []
    if rows is not None:
        note(f"{evaluator}: long-horizon view")
        long_view = horizon(rows, table, weights, evaluator, stories, cfg.confidence)
    return Part(
        table,
        _model_scores(table, est, evaluator, counts, ranges),
        _story_scores(table, evaluator),
        comparisons,
        stability,
        long_view,
    )
