"""``vsb compare --corrected``: a paired comparison a − b of corrected scores.

Both sides are corrected with the same measurement of the judge's error and resampled with
the same joint bootstrap (stories and the oracle frames they hold), so the difference's
interval carries the judge's uncertainty once, as it bears on both sides; each metric uses
the stories both sides have. A metric that is not correctable on either side is left out
and its reason returned.

Each side says what its correction rests on (``basis``: the judge's error measured on its
own verified frames, on the oracle frames, or assumed to be the simulator frames'), under
the key ``basis`` of the reasons returned. Where a side's correction is assumed and a
model's verified frames contradict the assumption, the probabilities of the sign of a − b
are not given (``P(Δ>0)`` says why): the interval around a difference that may be the
judge's is no evidence of either model's lead (issue 46).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vsb.errors import InputError
from vsb.scores.compare import choose_evaluator, parse_cell, split_side
from vsb.scores.compute import load_scoring_input
from vsb.scores.models import PRIMARY_CONDITION, Comparison
from vsb.scores.stats.aggregate import ALL_METRICS
from vsb.scores.stats.bootstrap import (
    Resampling,
    nan_to_none,
    percentile_interval,
    signed_shares,
)
from vsb.scores.stats.power import min_detectable, stories_needed
from vsb.scores.table import N_DIMS
from vsb.validation.correct.apply import (
    ASSUMED,
    Oracle,
    corrector_for,
    judged_evaluators,
    needs_pairs,
)
from vsb.validation.correct.estimate import N_BASE


def _se(dist: np.ndarray) -> float | None:
    x = dist[~np.isnan(dist)]
    return float(np.std(x, ddof=1)) if x.size >= 2 else None


def compare_corrected(
    run_dir: str | Path,
    a: str,
    b: str,
    *,
    evaluator: str | None = None,
    settings: Resampling = Resampling(),
) -> tuple[list[Comparison], dict[str, str]]:
    """Corrected a − b per metric (``vsb.scores.compare.compare_run``'s sides and evaluator
    choice), and the reason of each metric left out."""
    inp = load_scoring_input(run_dir)
    label = choose_evaluator(inp, evaluator)
    if not judged_evaluators(inp, [label]):
        raise InputError(
            f"--corrected: evaluator {label!r} has no judge model (the rule checker is not "
            "corrected); choose a judge with --evaluator"
        )
    oracle = Oracle.read(inp.root, set(inp.rows.model), needs_pairs(inp.evaluator_rows(label)))
    cor = corrector_for(inp, label, oracle, settings)
    table = inp.table(label)
    _, cond_a = split_side(a, table.models, table.conditions)
    _, cond_b = split_side(b, table.models, table.conditions)
    default = cond_a or cond_b
    if not default:
        default = PRIMARY_CONDITION if PRIMARY_CONDITION in table.conditions else ""
        default = default or table.conditions[0]
    ca, cb = parse_cell(table, a, default), parse_cell(table, b, default)
    if ca == cb:
        raise InputError(f"--a and --b are the same: {a!r}")
    kind = "model" if ca[1] == cb[1] else "condition"
    n = cor.corrector.counts.total
    both = (n[ca].sum(axis=-1) > 0) & (n[cb].sum(axis=-1) > 0)  # (stories, base metrics)
    ea = cor.estimate(*ca, keep=both)
    eb = cor.estimate(*cb, keep=both)
    diff = ea.dist - eb.dist
    low, high = percentile_interval(diff, settings.confidence)
    p_gt, p_eq, p_lt = signed_shares(diff)
    rows: list[Comparison] = []
    sides = (cor.basis(table.models[ca[0]]), cor.basis(table.models[cb[0]]))
    left_out: dict[str, str] = {"basis": f"a {sides[0]}; b {sides[1]}"}
    against = cor.contradicted()
    doubt = bool(against) and ASSUMED in sides
    if doubt:
        left_out["P(Δ>0)"] = (
            "not shown: a side is corrected by assuming the judge errs as on simulator frames, "
            f"and the verified frames of {', '.join(against)} contradict that"
        )
    for j, metric in enumerate(ALL_METRICS):
        why = ea.reason[j] or eb.reason[j]
        if why is not None:
            left_out[metric] = why
            continue
        if np.isnan(ea.score[j]) or np.isnan(eb.score[j]):
            continue
        sa, sb = ea.stories[:, j], eb.stories[:, j]
        shared = ~(np.isnan(sa) | np.isnan(sb))
        win = float(((sa > sb) + 0.5 * (sa == sb))[shared].mean()) if shared.any() else 0.0
        d = float(ea.score[j] - eb.score[j])
        se = _se(diff[:, j])
        mdd = min_detectable(se, settings.confidence)
        rows.append(
            Comparison(
                evaluator=label,
                kind=kind,
                a_model=table.models[ca[0]],
                a_condition=table.conditions[ca[1]],
                b_model=table.models[cb[0]],
                b_condition=table.conditions[cb[1]],
                metric_kind="dimension" if j < N_DIMS else "summary",
                metric="global" if j == N_BASE else metric,
                a_score=float(ea.score[j]),
                b_score=float(eb.score[j]),
                diff=d,
                ci_low=nan_to_none(low[j]),
                ci_high=nan_to_none(high[j]),
                p_greater=None if doubt else nan_to_none(p_gt[j]),
                p_equal=None if doubt else nan_to_none(p_eq[j]),
                p_less=None if doubt else nan_to_none(p_lt[j]),
                win_rate=win,
                n_stories=int(shared.sum()),
                se=se,
                mdd=mdd,
                stories_needed=stories_needed(d, mdd, int(shared.sum())),
            )
        )
    return rows, left_out
