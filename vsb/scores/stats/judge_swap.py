"""Judge-swap rank stability: do two evaluators rank the same models the same way?

For every condition and every pair of evaluators that both scored at least two of the same
models there: Kendall's τ-b between the two rankings by global score, and every pair of
models whose order flips. A flip is *separated* when, under each evaluator, the two models'
global-score CIs do not overlap (both evaluators are confident, and disagree).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vsb.scores.models import Estimate, JudgeSwap, JudgeSwapPair, ModelScore
from vsb.scores.stats.rank import kendall_tau_b


def _apart(x: Estimate, y: Estimate) -> bool:
    """Whether the two CIs do not overlap (False when either CI is unknown)."""
    if None in (x.ci_low, x.ci_high, y.ci_low, y.ci_high):
        return False
    return x.ci_low > y.ci_high or y.ci_low > x.ci_high  # type: ignore[operator]


def _globals(scores: Sequence[ModelScore], evaluator: str, condition: str) -> dict[str, Estimate]:
    return {
        r.model: r.global_score
        for r in scores
        if r.evaluator == evaluator and r.condition == condition and r.global_score is not None
    }


def judge_swap(
    scores: Sequence[ModelScore],
    evaluators: Sequence[str],
    conditions: Sequence[str],
    model_order: Sequence[str] = (),
) -> list[JudgeSwap]:
    """Every (condition, evaluator pair) with at least two shared ranked models (listed in
    ``model_order``, then by name)."""
    order = {m: i for i, m in enumerate(model_order)}
    out: list[JudgeSwap] = []
    for cond in conditions:
        for i, ea in enumerate(evaluators):
            ga = _globals(scores, ea, cond)
            for eb in evaluators[i + 1 :]:
                gb = _globals(scores, eb, cond)
                models = sorted((m for m in ga if m in gb), key=lambda m: (order.get(m, 1e9), m))
                if len(models) < 2:
                    continue
                out.append(_swap(cond, ea, eb, models, ga, gb))
    return out


def _swap(
    cond: str,
    ea: str,
    eb: str,
    models: list[str],
    ga: dict[str, Estimate],
    gb: dict[str, Estimate],
) -> JudgeSwap:
    sa = np.array([ga[m].score for m in models])
    sb = np.array([gb[m].score for m in models])
    tau = float(kendall_tau_b(sa, sb))
    pairs: list[JudgeSwapPair] = []
    for i, x in enumerate(models):
        for y in models[i + 1 :]:
            ax, ay, bx, by = ga[x].score, ga[y].score, gb[x].score, gb[y].score
            flipped = (ax - ay) * (bx - by) < 0
            pairs.append(
                JudgeSwapPair(
                    model_x=x,
                    model_y=y,
                    a_x=ax,
                    a_y=ay,
                    b_x=bx,
                    b_y=by,
                    flipped=flipped,
                    separated=flipped and _apart(ga[x], ga[y]) and _apart(gb[x], gb[y]),
                )
            )
    return JudgeSwap(
        condition=cond,
        evaluator_a=ea,
        evaluator_b=eb,
        models=models,
        kendall_tau=None if np.isnan(tau) else tau,
        n_flips=sum(p.flipped for p in pairs),
        n_separated_flips=sum(p.separated for p in pairs),
        pairs=pairs,
    )
