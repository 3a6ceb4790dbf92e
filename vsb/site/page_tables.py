"""Tables the pages share (estimates, the long-horizon view, paired comparisons) and the
downloads of the stability and judge pages (their templates read scores.json and judge.json
directly)."""

from __future__ import annotations

from typing import Any

from vsb.scores.models import Comparison, Estimate
from vsb.site import svg
from vsb.site.data import SiteData
from vsb.site.downloads import DataTable
from vsb.validation.reference import ReferenceReport, worst_label

#: The fields of an estimate, as table columns ``METRIC_score``, ``METRIC_ci_low`` …
EST_FIELDS = ("score", "ci_low", "ci_high")


def interval(label: str, est: Estimate | None) -> svg.Interval | None:
    """A chart interval of an estimate (None when there is none)."""
    return None if est is None else svg.Interval(label, est.score, est.ci_low, est.ci_high)


def est_cells(e: Estimate | None) -> tuple[Any, ...]:
    """An estimate as the cells of ``EST_FIELDS``."""
    return (None, None, None) if e is None else (e.score, e.ci_low, e.ci_high)


def horizon_table(points: list[Any], title: str) -> DataTable:
    """Long-horizon points (by scene, difficulty or length) as a downloadable table."""
    cols = (
        "model",
        "condition",
        "axis",
        "group",
        "metric",
        "score",
        "ci_low",
        "ci_high",
        "n_stories",
        "n_checks",
    )
    return DataTable(cols, [tuple(getattr(p, c) for c in cols) for p in points], title)


#: The columns of a downloadable table of paired comparisons.
COMPARISON_COLUMNS = (
    "kind",
    "a_model",
    "a_condition",
    "b_model",
    "b_condition",
    "metric_kind",
    "metric",
    "a_score",
    "b_score",
    "diff",
    "ci_low",
    "ci_high",
    "p_greater",
    "p_equal",
    "p_less",
    "win_rate",
    "n_stories",
    "se",
    "mdd",
    "stories_needed",
)


def comparison_table(comps: list[Comparison], title: str) -> DataTable:
    """Comparison rows as a downloadable table."""
    return DataTable(
        COMPARISON_COLUMNS, [tuple(getattr(c, f) for f in COMPARISON_COLUMNS) for c in comps], title
    )


def stability_tables(data: SiteData) -> dict[str, Any]:
    """The stability page's downloads."""
    full = data.all_scores or data.scores
    rank = ("model", "rank", "keep_rank", "mean_rank", "rank_p05", "rank_p95")
    swap = ("model_x", "model_y", "a_x", "a_y", "b_x", "b_y", "flipped", "separated")
    return {
        "tables": {
            "rank_stability": nested_table(
                full.rank_stability, "models", ("evaluator", "condition"), rank,
                "Rank stability under Dirichlet-perturbed weights",
            ),
            "judge_swap": nested_table(
                full.judge_swap, "pairs", ("condition", "evaluator_a", "evaluator_b"), swap,
                "Judge swap: model pairs under two evaluators",
            ),
        }
    }  # fmt: skip


def nested_table(
    parents: list[Any], children: str, key: tuple[str, ...], cols: tuple[str, ...], title: str
) -> DataTable:
    """One row per item of each parent's ``children`` list: the parent's ``key`` fields, then
    the item's ``cols``."""
    rows = [
        (*(getattr(p, k) for k in key), *(getattr(c, f) for f in cols))
        for p in parents
        for c in getattr(p, children)
    ]
    return DataTable((*key, *cols), rows, title)


def reference_worst(ref: ReferenceReport) -> list[tuple[Any, ...]]:
    """Per reference judge and simulator: its worst label (``worst_label``), as rows."""
    rows = []
    for r in ref.judges:
        for m in ref.models:
            w = worst_label(r, m)
            rows.append(
                (r.judge, m, *(("", None, None, None) if w is None else
                               (w.taxonomy, w.n_faults, w.recall, w.precision))))  # fmt: skip
    return rows


def judge_tables(data: SiteData) -> dict[str, Any]:
    """The judge page's downloads (none without judge.json)."""
    j = data.judge
    if j is None:
        return {"tables": {}}
    tax: list[tuple[Any, ...]] = []
    tax_cols: tuple[str, ...] = ()
    for e in j.evaluators:
        for t in e.taxonomy:
            d = t.model_dump()
            tax_cols = ("evaluator", *d)
            tax.append((e.evaluator, *d.values()))
    verdicts = [
        (
            e.evaluator,
            e.judge_model,
            e.verdicts.n_checks,
            e.verdicts.unsure_rate,
            e.verdicts.parse_failure_rate,
            e.verdicts.n_not_applicable,
            e.agreement.error_rate,
            e.agreement.error_rate_ci_low,
            e.agreement.error_rate_ci_high,
            e.taxonomy[-1].recall if e.taxonomy else None,
            e.taxonomy[-1].precision if e.taxonomy else None,
        )
        for e in j.evaluators
    ]
    auroc = [a.model_dump() for a in j.auroc]
    corr = [c.model_dump() for c in j.correlations]
    ref = data.reference
    reference = (
        [
            (
                r.judge,
                ", ".join(ref.models),
                ref.condition,
                r.section.verdicts.n_checks,
                r.section.verdicts.unsure_rate,
                r.section.verdicts.parse_failure_rate,
                r.section.agreement.error_rate,
                r.xframe_error_rate,
                r.section.taxonomy[-1].recall if r.section.taxonomy else None,
                r.section.taxonomy[-1].precision if r.section.taxonomy else None,
                r.section.pass_rate.auroc,
            )
            for r in ref.judges
        ]
        if ref is not None
        else []
    )
    extra = {}
    if reference:
        extra["reference"] = DataTable(
            ("judge", "models", "condition", "n_checks", "unsure_rate", "parse_failure_rate",
             "error_rate", "xframe_error_rate", "strict_recall", "strict_precision",
             "pass_rate_auroc"),
            reference,
            "Reference judges (local simulations)",
        )  # fmt: skip
        extra["reference_worst"] = DataTable(
            ("judge", "model", "worst_label", "n_faults", "strict_recall", "strict_precision"),
            reference_worst(ref) if ref is not None else [],
            "Reference judges: worst label per simulator",
        )
    worst: dict[str, list[tuple[Any, ...]]] = {}
    for row in extra["reference_worst"].rows if "reference_worst" in extra else []:
        worst.setdefault(row[0], []).append(row[1:])
    return {
        "reference_worst": worst,
        "tables": {
            **extra,
            "verdicts": DataTable(
                (
                    "evaluator",
                    "judge_model",
                    "n_checks",
                    "unsure_rate",
                    "parse_failure_rate",
                    "n_not_applicable",
                    "error_rate",
                    "error_rate_ci_low",
                    "error_rate_ci_high",
                    "strict_recall",
                    "strict_precision",
                ),
                verdicts,
                "Verdicts by evaluator",
            ),
            "taxonomy": DataTable(tax_cols, tax, "Recall and precision per taxonomy label"),
            "auroc": DataTable(
                tuple(auroc[0]) if auroc else ("signal",),
                [tuple(a.values()) for a in auroc],
                "AUROC per signal",
            ),
            "correlations": DataTable(
                tuple(corr[0]) if corr else ("signal",),
                [tuple(c.values()) for c in corr],
                "Story-level rank correlations with oracle coherence",
            ),
        },
    }


#: The metrics the raw-and-corrected tables show, with their display names.
CORRECTED_METRICS = (
    ("global_score", "global"),
    ("adherence", "prompt adherence"),
    ("coherence", "memory coherence"),
    ("conditional_coherence", "conditional coherence"),
)


def corrected_view(
    scores: Any, root: Any, model: str | None = None
) -> tuple[dict[str, Any], DataTable] | None:
    """Raw and corrected scores side by side for every row with a ``corrected`` object (of
    ``model`` only, when given), the judge's measured error and the assumption; None when
    no row was corrected (a release built without ``--judge``)."""
    from pathlib import Path

    from vsb.fsio import load_model
    from vsb.validation.correct.apply import ASSUMPTION, ERROR_FILE, CorrectionReport

    rows = [r for r in scores.scores if r.corrected is not None and model in (None, r.model)]
    if not rows:
        return None
    path = Path(root) / "scores" / f"{ERROR_FILE}.json"
    errors = (
        load_model(path, CorrectionReport, "not a judge-error report") if path.is_file() else None
    )
    shown = [
        {
            "evaluator": r.evaluator,
            "model": r.model,
            "condition": r.condition,
            "rank": r.corrected.rank,
            "rank_low": r.corrected.rank_low,
            "rank_high": r.corrected.rank_high,
            "basis": r.corrected.basis,
            "assumption_test": r.corrected.assumption_test,
            "cells": [
                (label, getattr(r, key), getattr(r.corrected, key))
                for key, label in CORRECTED_METRICS
            ],
        }
        for r in sorted(
            rows, key=lambda r: (r.evaluator, r.condition, r.corrected.rank or 10**6, r.model)
        )
    ]
    cols = ["evaluator", "condition", "model", "corrected_rank", "corrected_rank_low",
            "corrected_rank_high"]  # fmt: skip
    for key, _ in CORRECTED_METRICS:
        name = key.removesuffix("_score")
        cols += [f"{name}_raw{x}" for x in ("", "_ci_low", "_ci_high")]
        cols += [f"{name}_corrected{x}" for x in ("", "_ci_low", "_ci_high")]
        cols.append(f"{name}_reason")
    cols += ["basis", "assumption_test"]
    lines = []
    for s in shown:
        line: list[Any] = [s["evaluator"], s["condition"], s["model"], s["rank"], s["rank_low"],
                           s["rank_high"]]  # fmt: skip
        for _, raw, fixed in s["cells"]:
            line += [*est_cells(raw)]
            line += [None] * 4 if fixed is None else [fixed.score, fixed.ci_low, fixed.ci_high,
                                                      fixed.reason]  # fmt: skip
        line += [s["basis"], s["assumption_test"]]
        lines.append(tuple(line))
    view = {"rows": shown, "assumption": ASSUMPTION, "errors": errors}
    return view, DataTable(tuple(cols), lines, "Raw and corrected scores")
