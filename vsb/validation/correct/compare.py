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
from vsb.scores.cells import comparison_row
from vsb.scores.compare import choose_evaluator, compare_sides
from vsb.scores.compute import load_scoring_input
from vsb.scores.models import Comparison
from vsb.scores.stats.aggregate import ALL_METRICS
from vsb.scores.stats.bootstrap import (
    Resampling,
    percentile_interval,
    signed_shares,
)
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
    kind, ca, cb = compare_sides(table, a, b)
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
        metric_kind = "dimension" if j < N_DIMS else "summary"
        rows.append(
            comparison_row(
                label, kind, table, ca, cb, (metric_kind, "global" if j == N_BASE else metric),
                (float(ea.score[j]), float(eb.score[j]), d), (low[j], high[j]),
                (None, None, None) if doubt else (p_gt[j], p_eq[j], p_lt[j]),
                win, int(shared.sum()), _se(diff[:, j]), settings.confidence,
            )
        )  # fmt: skip
    return rows, left_out
